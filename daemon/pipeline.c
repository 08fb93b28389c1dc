// SPDX-License-Identifier: MIT
/*
 * One pipeline, run by one thread on its own ring:
 *
 *   prepare   open and check files, decide where to resume, build the plan,
 *             set up the ring, register buffers and files, attach the engine
 *             (pipeline_setup.c)
 *   execute   keep queue_depth chains in flight, one block each; one
 *             io_uring_enter() per batch; checkpoint as blocks become durable
 *   finish    cut destinations to size, fsync, verify, record "finished"
 *
 * A chain is the block's ops in order (reads, shuffle, writes). Runs of
 * kernel ops are submitted as one linked group; a userspace step (the uring
 * engine's memcpy) splits the chain in two groups. A short transfer breaks
 * the link (the kernel cancels the rest with -ECANCELED): the rest of the
 * group is then resubmitted from the first op not done, so a short read or
 * write costs a round trip, never correctness.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "files.h"
#include "log.h"
#include "pipeline_int.h"
#include "status.h"

/* ---- the end: durable, the right size, and only then "finished" ---- */

/* is @f shorter than @end (a trailing hole not written)? */
static bool sparse_short(const struct file_slot *f, uint64_t end)
{
	struct stat st;

	return fstat(f->fd, &st) == 0 && (uint64_t)st.st_size < end;
}

static int finish(struct pipeline_run *pr)
{
	const struct pipeline_config *pc = &pr->cfg;
	uint64_t t0 = clock_mono_ns(), t1;
	int ret;

	for (int d = 0; d < pr->fs.nr_dst; d++) {
		struct file_slot *f = &pr->fs.dst[d];
		uint64_t end = pc->dest_offset + plan_dest_bytes(&pr->plan, d);

		if (f->is_bdev)
			continue;
		/*
		 * truncate = no: keep what lies beyond; the writes reached end
		 * already, but for a sparse source's last hole, never written
		 */
		if ((pc->s.truncate || (pr->sparse.on && sparse_short(f, end))) &&
		    ftruncate(f->fd, end) < 0) {
			ret = -errno;
			return pipeline_fail(pr, ret, "cannot set the size of %s to %" PRIu64
					     ": %s", f->path, end, strerror(-ret));
		}
	}
	ret = ckpt_sync_dests(pr, true);
	if (ret)
		return ret;
	ret = files_check_unchanged(&pr->fs);
	if (ret)
		return pipeline_files_failed(pr, ret);
	for (int d = 0; d < pr->fs.nr_dst; d++) {
		struct file_slot *f = &pr->fs.dst[d];
		uint64_t end = pc->dest_offset + plan_dest_bytes(&pr->plan, d);

		ret = file_identify(f);
		if (ret)
			return pipeline_fail(pr, ret, "cannot stat %s: %s", f->path, strerror(-ret));
		if (!f->is_bdev && f->size < end)
			return pipeline_fail(pr, -EIO, "destination %s is %" PRIu64 " bytes after "
					     "the copy, expected %" PRIu64, f->path, f->size, end);
	}
	t1 = clock_mono_ns();
	ret = ckpt_write(pr, CKPT_FINISHED, pr->plan.p.length);
	if (ret)
		return pipeline_fail(pr, ret, "cannot record completion in %s: %s",
				     pr->env->state_dir, strerror(-ret));
	log_info("pipeline %s: finish in %.3f s (flush and checks %.3f, last record %.3f)",
		 pc->name, (clock_mono_ns() - t0) / 1e9, (t1 - t0) / 1e9,
		 (clock_mono_ns() - t1) / 1e9);
	return 0;
}

static double tv_s(struct timeval tv)
{
	return tv.tv_sec + tv.tv_usec / 1e6;
}

int pipeline_execute(struct pipeline_run *pr)
{
	struct pipeline_status *st = pr->env->status;
	struct rusage t0, t1, p0, p1;
	uint64_t moved;
	char steps[64], resumed[96];
	double secs;
	int ret;

	atomic_store(&st->state, PIPELINE_RUNNING);
	atomic_store(&st->start_ns, clock_mono_ns());
	getrusage(RUSAGE_THREAD, &t0);
	getrusage(RUSAGE_SELF, &p0);
	if (pr->plan.nr_blocks)
		ret = engine_drives_itself(pr) ? pr->engine->drive(pr) : pipeline_drive_chains(pr);
	else
		ret = 0;
	atomic_store(&st->end_ns, clock_mono_ns());
	getrusage(RUSAGE_THREAD, &t1);
	getrusage(RUSAGE_SELF, &p1);
	/* the process includes io-wq workers (and other pipelines' threads) */
	log_info("pipeline %s: %.3f s; CPU of its thread %.3f s user, %.3f s system; of the "
		 "process %.3f s user, %.3f s system", pr->cfg.name,
		 (atomic_load(&st->end_ns) - atomic_load(&st->start_ns)) / 1e9,
		 tv_s(t1.ru_utime) - tv_s(t0.ru_utime), tv_s(t1.ru_stime) - tv_s(t0.ru_stime),
		 tv_s(p1.ru_utime) - tv_s(p0.ru_utime), tv_s(p1.ru_stime) - tv_s(p0.ru_stime));
	if (ret == 0)
		ret = finish(pr);
	if (ret == -EINTR) {
		if (ckpt_wind_down(pr, CKPT_STOPPED) == 0)
			log_notice("pipeline %s: stopped at byte %" PRIu64 " of %" PRIu64
				   " (checkpointed)", pr->cfg.name, pr->dur.durable,
				   pr->plan.p.length);
		else
			log_warning("pipeline %s: stopped, not checkpointed: a restart resumes "
				    "at the last checkpoint written (byte %" PRIu64 " of %" PRIu64
				    ", if it is still there)", pr->cfg.name, pr->dur.durable,
				    pr->plan.p.length);
		return -EINTR;
	}
	if (ret) {
		ckpt_wind_down(pr, CKPT_FAILED);
		return ret;
	}
	moved = pr->plan.p.length - pr->plan.p.start;
	/* engine = loop: how often its program ran for each block it moved */
	steps[0] = '\0';
	if (atomic_load(&st->loop_blocks))
		snprintf(steps, sizeof(steps), ", %.2f loop_step runs per block",
			 (double)atomic_load(&st->loop_steps) / atomic_load(&st->loop_blocks));
	secs = (atomic_load(&st->end_ns) - atomic_load(&st->start_ns)) / 1e9;
	/* after a resume: this run's bytes, then the whole copy's */
	resumed[0] = '\0';
	if (pr->plan.p.start)
		snprintf(resumed, sizeof(resumed), " (resumed at byte %" PRIu64 " of %" PRIu64 ")",
			 pr->plan.p.start, pr->plan.p.length);
	log_notice("pipeline %s: finished, %" PRIu64 " bytes in %.3f s at %.1f MiB/s%s, %s "
		   "engine, %" PRIu64 " io_uring_enter calls, %" PRIu64 " CQEs, %" PRIu64
		   " IORING_OP_BPF completions, %.2f bytes memcpy'd per byte moved%s", pr->cfg.name,
		   moved, secs, secs > 0 ? moved / secs / (1 << 20) : 0.0, resumed,
		   pr->engine->name, pr->ring.enters, atomic_load(&st->cqes),
		   atomic_load(&st->bpf_ops),
		   status_copied_per_byte(atomic_load(&st->bpf_bytes),
					  atomic_load(&st->user_copied), moved), steps);
	return 0;
}

static bool sleep_or_stop(const struct run_env *env, unsigned int seconds)
{
	uint64_t until = clock_mono_ns() + seconds * 1000000000ULL, t;

	while ((t = clock_mono_ns()) < until) {
		struct pollfd pfd = { .fd = env->wake_fd, .events = POLLIN };
		int ms = (until - t) / 1000000 + 1;

		if (run_env_stop_requested(env))
			return true;
		if (env->wake_fd >= 0)
			poll(&pfd, 1, ms > 200 ? 200 : ms);
		else
			usleep((ms > 200 ? 200 : ms) * 1000);
	}
	return run_env_stop_requested(env);
}

int pipeline_run(const struct pipeline_config *pc, const struct run_env *env)
{
	struct pipeline_status *st = env->status;
	struct pipeline_run *pr;
	int ret = 0;

	pr = calloc(1, sizeof(*pr));
	if (!pr)
		return -ENOMEM;
	for (uint32_t attempt = 0; attempt <= pc->s.retries; attempt++) {
		if (attempt) {
			atomic_store(&st->state, PIPELINE_RETRYING);
			log_notice("pipeline %s: retry %u of %u in %u s", pc->name, attempt,
				   pc->s.retries, pc->s.retry_delay);
			if (sleep_or_stop(env, pc->s.retry_delay)) {
				ret = -EINTR;
				break;
			}
		}
		ret = pipeline_prepare(pr, pc, env);
		atomic_store(&st->setup_done, true);
		run_env_wake_main(env);
		if (ret == 1) {
			atomic_store(&st->bytes_total, pr->plan.p.length);
			atomic_store(&st->bytes_done, pr->plan.p.length);
			atomic_store(&st->bytes_durable, pr->plan.p.length);
			pipeline_cleanup(pr);
			ret = 0;
			break;
		}
		if (!ret)
			ret = pipeline_execute(pr);
		pipeline_cleanup(pr);
		if (ret == 0 || ret == -EINTR)
			break;
		if (run_env_stop_requested(pr->env))
			break;
	}
	atomic_store(&st->state, ret == 0 ? PIPELINE_FINISHED :
				 ret == -EINTR ? PIPELINE_STOPPED : PIPELINE_FAILED);
	free(pr);
	return ret;
}
