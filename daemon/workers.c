// SPDX-License-Identifier: MIT
/*
 * One thread per pipeline, as the main thread sees them (workers.h): start
 * and stop, find, the conflicts a reload must refuse, reaping, and what
 * the status file shows of each (rates are the main thread's own).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "claims.h"
#include "clock.h"
#include "log.h"
#include "workers.h"

static void *worker_thread(void *arg)
{
	struct worker *w = arg;

	w->result = pipeline_run(&w->cfg, &w->env);
	atomic_store(&w->status.setup_done, true);
	atomic_store(&w->exited, true);
	/* --once and exit_when_done end now, not at the next tick */
	run_env_wake_main(&w->env);
	return NULL;
}

int worker_start(struct workers *ws, const struct pipeline_config *pc, const struct run_env *base)
{
	struct worker *w;
	int ret;

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	pipeline_status_init(&w->status);
	ret = pipeline_config_dup(pc, &w->cfg);
	if (ret)
		goto fail_free;
	w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->wake_fd < 0) {
		ret = -errno;
		goto fail_cfg;
	}
	w->env = *base;
	w->env.stop = &w->stop;
	w->env.wake_fd = w->wake_fd;
	w->env.status = &w->status;
	w->rate_ns = clock_mono_ns();
	ret = pthread_create(&w->thread, NULL, worker_thread, w);
	if (ret) {
		ret = -ret;
		goto fail_fd;
	}
	w->joinable = true;
	w->next = ws->list;
	ws->list = w;
	log_info("pipeline %s: started", pc->name);
	return 0;

fail_fd:
	close(w->wake_fd);
fail_cfg:
	pipeline_config_free(&w->cfg);
fail_free:
	free(w);
	log_err("pipeline %s: cannot start its thread: %s", pc->name, strerror(-ret));
	return ret;
}

void worker_stop(struct worker *w)
{
	uint64_t one = 1;

	atomic_store(&w->stop, true);
	/* the pipeline waits in io_uring_enter(); its ring polls this eventfd */
	if (write(w->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_debug("pipeline %s: wake: %s", w->cfg.name, strerror(errno));
}

void worker_free(struct worker *w)
{
	if (w->joinable)
		pthread_join(w->thread, NULL);
	close(w->wake_fd);
	pipeline_config_free(&w->cfg);
	pthread_mutex_destroy(&w->status.lock);
	free(w);
}

struct worker *worker_find(struct workers *ws, const char *name)
{
	for (struct worker *w = ws->list; w; w = w->next)
		if (!strcmp(w->cfg.name, name))
			return w;
	return NULL;
}

void worker_unlink(struct workers *ws, struct worker *w)
{
	for (struct worker **pp = &ws->list; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			return;
		}
	}
}

int worker_conflict(struct workers *ws, const struct pipeline_config *pc, char *msg,
		    size_t len)
{
	struct pipeline_claims mine, theirs;
	int line, found = 0;

	if (claims_of(pc, &mine))
		return 0;
	for (struct worker *w = ws->list; w && !found; w = w->next) {
		if (atomic_load(&w->exited) || !strcmp(w->cfg.name, pc->name))
			continue;
		if (claims_of(&w->cfg, &theirs))
			continue;
		found = claims_conflict(&mine, &theirs, &line, msg, len);
		claims_free(&theirs);
	}
	claims_free(&mine);
	return found;
}

void workers_reap(struct workers *ws)
{
	for (struct worker *w = ws->list; w; w = w->next) {
		if (!atomic_load(&w->exited) || w->reaped)
			continue;
		pthread_join(w->thread, NULL);
		w->joinable = false;
		w->reaped = true;
		if (w->result == -EINTR)
			ws->stopped++;
		else if (w->result)
			ws->failed++;
	}
}

bool workers_all_exited(const struct workers *ws)
{
	for (const struct worker *w = ws->list; w; w = w->next)
		if (!atomic_load(&w->exited))
			return false;
	return true;
}

bool workers_all_set_up(const struct workers *ws)
{
	for (const struct worker *w = ws->list; w; w = w->next)
		if (!atomic_load(&w->status.setup_done))
			return false;
	return true;
}

void workers_update_rates(struct workers *ws)
{
	uint64_t now = clock_mono_ns();

	for (struct worker *w = ws->list; w; w = w->next) {
		uint64_t b = atomic_load(&w->status.bytes_done);
		uint64_t resumed = atomic_load(&w->status.bytes_resumed);
		double dt = (now - w->rate_ns) / 1e9;

		/* a resumed run starts counting at its resume point, not at 0 */
		if (w->rate_bytes < resumed)
			w->rate_bytes = resumed;
		if (dt < 0.9)
			continue;
		/* a smoothed rate: a second's sample is noisy at small block counts */
		double inst = b >= w->rate_bytes ? (b - w->rate_bytes) / dt : 0;

		w->rate_bps = w->rate_bps ? 0.5 * w->rate_bps + 0.5 * inst : inst;
		if (atomic_load(&w->status.state) != PIPELINE_RUNNING)
			w->rate_bps = 0;
		w->rate_bytes = b;
		w->rate_ns = now;
	}
}

void worker_status_entry(struct worker *w, struct status_entry *e)
{
	struct pipeline_status *st = &w->status;
	uint64_t start = atomic_load(&st->start_ns), end = atomic_load(&st->end_ns);
	enum pipeline_state s = atomic_load(&st->state);

	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", w->cfg.name);
	snprintf(e->state, sizeof(e->state), "%s", pipeline_state_to_string(s));
	pipeline_status_get_engine(st, e->engine, sizeof(e->engine));
	snprintf(e->transform, sizeof(e->transform), "%s", transform_to_string(w->cfg.transform));
	e->bytes_done = atomic_load(&st->bytes_done);
	e->bytes_total = atomic_load(&st->bytes_total);
	e->bytes_durable = atomic_load(&st->bytes_durable);
	e->bytes_resumed = atomic_load(&st->bytes_resumed);
	e->enters = atomic_load(&st->enters);
	e->cqes = atomic_load(&st->cqes);
	e->bpf_ops = atomic_load(&st->bpf_ops);
	e->bpf_bytes = atomic_load(&st->bpf_bytes);
	e->user_copied = atomic_load(&st->user_copied);
	e->loop_steps = atomic_load(&st->loop_steps);
	e->loop_blocks = atomic_load(&st->loop_blocks);
	e->errors = atomic_load(&st->errors);
	e->rate_bps = w->rate_bps;
	if (start)
		e->elapsed = ((end ? end : clock_mono_ns()) - start) / 1e9;
	/* over a finished run, the average rate is the honest figure */
	if (s == PIPELINE_FINISHED && e->elapsed > 0)
		e->rate_bps = (e->bytes_done - e->bytes_resumed) / e->elapsed;
	pipeline_status_get_error(st, e->error, sizeof(e->error));
	pipeline_status_get_note(st, e->note, sizeof(e->note));
}

