// SPDX-License-Identifier: MIT
/*
 * The generic ring loop of the uring and bpf engines: keep queue_depth chains
 * in flight within the checkpoint window, submit and wait in one
 * io_uring_enter() per batch, hand each CQE to its chain, checkpoint, and
 * notice stop requests (the daemon's eventfd, polled on the ring).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "pipeline_int.h"

static void wake_arm(struct pipeline_run *pr)
{
	struct io_uring_sqe *sqe;

	if (pr->env->wake_fd < 0 || pr->wake_armed)
		return;
	sqe = ring_get_sqe(&pr->ring);
	if (!sqe)
		return;
	io_uring_prep_poll_multishot(sqe, pr->env->wake_fd, POLLIN);
	io_uring_sqe_set_data64(sqe, iou_ud(IOU_TAG_WAKE, 0, 0));
	pr->wake_armed = true;
}

static void handle_wake_cqe(struct pipeline_run *pr, const struct io_uring_cqe *cqe)
{
	uint64_t v;

	if (cqe->res > 0 && read(pr->env->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_debug("pipeline %s: wake read: %s", pr->cfg.name, strerror(errno));
	if (!(cqe->flags & IORING_CQE_F_MORE))
		pr->wake_armed = false;
}

/*
 * What a crash may cost is bounded (iou-offloadd(8): about queue_depth
 * blocks plus checkpoint_interval): a block is only started when it ends
 * within that window past the last checkpoint recorded (or flushed, when
 * its record could not be written). Without this, the writes run ahead of
 * a slow fdatasync by far more than a queue depth.
 */
static bool within_ckpt_window(const struct pipeline_run *pr)
{
	uint64_t base = pr->dur.synced > pr->dur.durable ? pr->dur.synced : pr->dur.durable;
	uint64_t window = pr->cfg.s.checkpoint_interval +
			  (uint64_t)pr->nr_chains * pr->plan.p.block_size;

	return plan_block_start(&pr->plan, pr->next_block) + pr->plan.p.block_size <=
	       base + window;
}

/* blocks of holes skipped between looks at the clock (ckpt_hole_yield()) */
#define HOLE_BATCH	1024

/* @in_hole: it stopped in a run of holes, for a checkpoint there */
static int fill_chains(struct pipeline_run *pr, bool *in_hole)
{
	uint64_t skipped = 0;
	int ret;

	*in_hole = false;
	for (int i = 0; i < pr->nr_chains && pr->next_block < pr->plan.nr_blocks; i++) {
		struct chain *c = &pr->chains[i];

		if (c->busy)
			continue;
		/*
		 * a sparse source's holes: nothing to read, nothing to write;
		 * a stop ends a long run of them (terabytes summed) at once, a
		 * checkpoint through them (ckpt_hole_yield()) for a while
		 */
		while (pr->next_block < pr->plan.nr_blocks &&
		       sparse_block_is_hole(pr, pr->next_block)) {
			if (run_env_stop_requested(pr->env))
				return 0;
			uint64_t lo = plan_block_start(&pr->plan, pr->next_block);
			uint64_t len = pr->plan.p.length - lo < pr->plan.p.block_size ?
				       pr->plan.p.length - lo : pr->plan.p.block_size;

			sums_block_done(pr, lo, NULL, len, -1);
			atomic_fetch_add(&pr->env->status->bytes_done, len);
			pr->next_block++;
			if (++skipped % HOLE_BATCH == 0 && ckpt_hole_yield(pr)) {
				*in_hole = true;
				return 0;
			}
		}
		if (pr->next_block >= pr->plan.nr_blocks || !within_ckpt_window(pr))
			break;
		ret = chain_build(pr, c, pr->next_block);
		if (ret)
			return pipeline_fail(pr, ret, "cannot build the chain for block %" PRIu64
					     ": %s", pr->next_block, strerror(-ret));
		c->busy = true;
		pr->inflight_chains++;
		pr->next_block++;
		ret = chain_submit(pr, c);
		if (ret && c->busy) {
			chain_release(pr, c);
			return pipeline_fail(pr, ret, "cannot submit block %" PRIu64 ": %s",
					     c->bp.index, strerror(-ret));
		}
	}
	return 0;
}

/* the block failures chain.c recorded: the lowest in full, the rest as one line */
static void log_chain_failures(const struct pipeline_run *pr)
{
	if (pr->reported_off != UINT64_MAX)
		log_err("pipeline %s: %s", pr->cfg.name, pr->msg);
	if (pr->fallout_count)
		log_err("pipeline %s: %" PRIu64 " more request(s) failed beside that, for blocks "
			"at logical offsets %" PRIu64 " to %" PRIu64, pr->cfg.name,
			pr->fallout_count, pr->fallout_lo, pr->fallout_hi);
}

int pipeline_drive_chains(struct pipeline_run *pr)
{
	struct pipeline_status *st = pr->env->status;
	bool stopping = false;
	int ret;

	pr->dur.last_ns = clock_mono_ns();
	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned int head, seen = 0;
		bool in_hole = false;
		uint64_t w;

		atomic_store(&st->heartbeat_ns, clock_mono_ns());
		stopping = stopping || run_env_stop_requested(pr->env);
		if (!stopping && !pr->error)
			fill_chains(pr, &in_hole);
		/* what has completed: both the writeback start and the flush go up to it */
		w = ckpt_watermark_now(pr);
		ckpt_start_writeback(pr, w);
		/*
		 * in a long hole, one due by time; past it nothing is in
		 * flight: the window moves by a checkpoint
		 */
		if (in_hole) {
			if (ckpt_hole_due(pr))
				ckpt_begin(pr, w, true);
		} else {
			ckpt_begin(pr, w, !stopping && !pr->inflight_chains &&
				   pr->next_block < pr->plan.nr_blocks);
		}
		wake_arm(pr);
		if (!pr->inflight_chains && !pr->dur.fsyncs && !pr->dur.rec.inflight &&
		    !pr->dur.wb_inflight)
			break;

		ret = ring_submit_and_wait(&pr->ring, 1, WAIT_TIMEOUT_MS);
		atomic_store(&st->enters, pr->ring.enters);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
			/* the ring itself is broken: nothing in flight can be trusted */
			log_chain_failures(pr);
			return pipeline_fail(pr, ret, "io_uring_enter failed: %s", strerror(-ret));
		}
		io_uring_for_each_cqe(&pr->ring.uring, head, cqe) {
			uint64_t data = io_uring_cqe_get_data64(cqe);

			switch (iou_ud_tag(data)) {
			case IOU_TAG_CHAIN:
				chain_handle_cqe(pr, data, cqe->res);
				break;
			case IOU_TAG_FSYNC:
				ckpt_handle_fsync_cqe(pr, data, cqe->res);
				break;
			case IOU_TAG_WRITEBACK:
				ckpt_handle_writeback_cqe(pr, data, cqe->res);
				break;
			case IOU_TAG_RECORD:
				ckpt_handle_record_cqe(pr, data, cqe->res);
				break;
			case IOU_TAG_WAKE:
				handle_wake_cqe(pr, cqe);
				break;
			}
			seen++;
		}
		io_uring_cq_advance(&pr->ring.uring, seen);
		atomic_fetch_add(&st->cqes, seen);
	}
	atomic_store(&st->enters, pr->ring.enters);
	log_chain_failures(pr);
	if (pr->error)
		return pr->error;
	if (stopping && pr->next_block < pr->plan.nr_blocks)
		return -EINTR;
	/* never "finished" with blocks not even submitted */
	if (pr->next_block < pr->plan.nr_blocks)
		return pipeline_fail(pr, -EIO, "stalled at block %" PRIu64 " of %" PRIu64
				     " with nothing in flight", pr->next_block, pr->plan.nr_blocks);
	return 0;
}
