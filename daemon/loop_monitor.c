// SPDX-License-Identifier: MIT
/*
 * The loop engine's monitor thread: while the pipeline thread sits in the
 * loop (one io_uring_enter() for the whole pipeline), it writes block
 * templates ahead of the program and kicks it, records checkpoints as the
 * program's flushes complete (pipeline_checkpoint(), which locks), copies
 * progress and the program's heartbeat into the status, and turns a stop
 * request into cmd = DRAIN. The program wakes it with an eventfd write; it
 * also looks every LOOP_MONITOR_MS.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "engine_bpf.h"
#include "engine_loop_int.h"
#include "log.h"

#define LOOP_MONITOR_MS		250

/* two threads report liveness: the later stamp wins */
void loop_heartbeat(struct pipeline_status *st, uint64_t t)
{
	uint64_t cur = atomic_load(&st->heartbeat_ns);

	while (t > cur && !atomic_compare_exchange_weak(&st->heartbeat_ns, &cur, t))
		;
}

void loop_kick(struct loop_engine *le)
{
	uint64_t one = 1;

	if (write(le->kick_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_debug("pipeline %s: kick: %s", le->pr->cfg.name, strerror(errno));
}

static void drain_eventfd(int fd)
{
	uint64_t v;

	if (fd >= 0 && read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_debug("eventfd read: %s", strerror(errno));
}

void loop_mirror(struct loop_engine *le, bool checkpoint)
{
	struct pipeline_run *pr = le->pr;
	struct pipeline_status *st = pr->env->status;
	struct iou_loop_ctl *ctl = le->ctl;
	uint64_t durable;

	atomic_store(&st->bytes_done, block_bytes(pr, rd64(&ctl->watermark)));
	atomic_store(&st->bpf_ops, le->bpf_ops_base + rd64(&ctl->bpf_ops));
	atomic_store(&st->bpf_bytes, le->bpf_bytes_base + rd64(&ctl->bpf_bytes));
	/* the program reaps for the daemon: its CQEs are the pipeline's */
	atomic_store(&st->cqes, le->cqes_base + rd64(&ctl->cqes));
	atomic_store(&st->loop_steps, le->steps_base + rd64(&ctl->steps));
	atomic_store(&st->loop_blocks, le->blocks_base + rd64(&ctl->watermark));
	loop_heartbeat(st, rd64(&ctl->heartbeat_ns));
	if (!checkpoint)
		return;
	/* the program's fdatasyncs of every destination completed below this */
	durable = rd64(&ctl->durable);
	if (durable > le->ckpt_recorded && durable < pr->plan.nr_blocks) {
		if (!pipeline_checkpoint(pr, CKPT_RUNNING, block_bytes(pr, durable)))
			le->ckpt_recorded = durable;
	}
}

static void *loop_monitor(void *arg)
{
	struct loop_engine *le = arg;
	struct pipeline_run *pr = le->pr;
	struct iou_loop_ctl *ctl = le->ctl;
	struct pollfd pfd[2] = {
		{ .fd = le->mon_fd, .events = POLLIN },
		{ .fd = pr->env->wake_fd, .events = POLLIN },
	};
	int nfds = pr->env->wake_fd >= 0 ? 2 : 1;

	while (!atomic_load(&le->quit)) {
		int64_t n;

		/* a timeout reads nothing: the loop is there to save calls */
		if (poll(pfd, nfds, LOOP_MONITOR_MS) > 0) {
			if (pfd[0].revents & POLLIN)
				drain_eventfd(le->mon_fd);
			if (nfds == 2 && (pfd[1].revents & POLLIN))
				drain_eventfd(pr->env->wake_fd);
		}
		if (atomic_load(&le->quit))
			break;
		if (run_env_stop_requested(pr->env) && rd32(&ctl->cmd) != LOOP_CMD_DRAIN) {
			log_info("pipeline %s: stop requested: the loop drains its chains in flight",
				 pr->cfg.name);
			__atomic_store_n(&ctl->cmd, LOOP_CMD_DRAIN, __ATOMIC_RELEASE);
			loop_kick(le);
		}
		if (!atomic_load(&le->fill_err)) {
			n = loop_feed_fill(&le->feed, ctl);
			if (n < 0) {
				/* without templates the loop would starve: stop it */
				atomic_store(&le->fill_err, (int)n);
				__atomic_store_n(&ctl->cmd, LOOP_CMD_DRAIN, __ATOMIC_RELEASE);
				loop_kick(le);
			} else if (n > 0) {
				loop_kick(le);
			}
		}
		loop_mirror(le, true);
	}
	return NULL;
}

int monitor_start(struct loop_engine *le)
{
	int ret;

	atomic_store(&le->quit, false);
	ret = pthread_create(&le->monitor, NULL, loop_monitor, le);
	if (ret)
		return -ret;
	le->monitor_running = true;
	return 0;
}

void monitor_stop(struct loop_engine *le)
{
	uint64_t one = 1;

	if (!le->monitor_running)
		return;
	atomic_store(&le->quit, true);
	if (write(le->mon_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_debug("pipeline %s: monitor wake: %s", le->pr->cfg.name, strerror(errno));
	pthread_join(le->monitor, NULL);
	le->monitor_running = false;
}
