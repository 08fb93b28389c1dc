// SPDX-License-Identifier: MIT
/*
 * The loop engine: the bpf engine's chains (READ_FIXED -> IORING_OP_BPF ->
 * WRITE_FIXED per destination, linked), driven by a bpf-ops loop_step
 * program (bpf-ops/iou_loop.bpf.c) inside io_uring_enter() instead of by
 * this thread. A whole pipeline is one io_uring_enter() call, whatever its
 * size: the program reaps and refills by itself, resubmits after short
 * transfers, flushes the destinations with IORING_OP_FSYNC for checkpoints,
 * and returns when every block is written, on the first error, or once
 * drained after a stop request.
 *
 * The ring: IORING_SETUP_NO_SQARRAY | SQ_REWIND (the program refills SQE
 * 0.. each step), BPF_OP (its IORING_OP_BPF requests run the uring_bpf_ops
 * of iou_ops.bpf.c, attached as for the bpf engine), SUBMIT_ALL (a request
 * that fails its prep still posts a CQE, so the books balance), and the
 * usual SINGLE_ISSUER | DEFER_TASKRUN, which the loop requires.
 *
 * The parameter region (IORING_REGISTER_MEM_REGION) is a struct
 * iou_loop_ctl, then the descriptor area: see bpf-ops/iou_loop.h. While the
 * pipeline thread sits in the loop, a monitor thread
 *   - writes block templates ahead of the program (loop_feed_fill()) and
 *     kicks it (an eventfd the program polls) when it has,
 *   - records a checkpoint whenever the program reports a new durable
 *     watermark (its fdatasyncs completed),
 *   - copies progress, counters and the program's heartbeat into the
 *     pipeline's status (STATUS=, the watchdog, `iou-offloadd status`),
 *   - turns a stop request (the daemon's eventfd) into cmd = DRAIN.
 * The program wakes the monitor with a write to another eventfd; the
 * monitor also looks every 250 ms.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "engine_bpf.h"
#include "../bpf-ops/iou_ops.h"
#include "bpf_loader.h"
#include "clock.h"
#include "engine.h"
#include "log.h"
#include "engine_loop_int.h"

#define LOOP_META_MAX		(48ULL << 20)	/* descriptor area; the region stays < 64 MiB */
#define LOOP_TICK_NS		1000000000ULL	/* the loop turns at least this often */
#define LOOP_CKPT_NS		(5ULL * 1000000000ULL)	/* checkpoints at least this often */

/* ---- engine_ops: sizes ---- */

static int loop_max_shuffle_sqes(const struct pipeline_run *pr)
{
	int pairs, iovs, sqes;

	bpf_shuffle_bounds(&pr->plan, &pairs, &iovs, &sqes);
	return sqes;
}

/* the descriptors live in the region, next to each block's template */
static size_t loop_meta_size(const struct pipeline_run *pr)
{
	(void)pr;
	return 0;
}

static void loop_ring_size(const struct pipeline_run *pr, int ops, unsigned int *sq_entries,
			   unsigned int *cq_entries)
{
	/*
	 * The program refills from SQE 0 each step; CQEs: everything in flight,
	 * twice, rounded up to a size the program has a reap for.
	 */
	*sq_entries = LOOP_SQ_ENTRIES;
	*cq_entries = loop_cq_class(2 * ring_pow2(pr->nr_chains * ops + pr->fs.nr_dst + 16));
}

/* ---- attach: region, eventfds, templates, both BPF programs ---- */

/*
 * As many templates as the region holds, up to the pipeline's blocks: every
 * refill costs the monitor a wakeup and a kick (system calls the loop is
 * there to save), and a pipeline whose blocks all fit needs none.
 */
static uint32_t pick_nr_tmpl(const struct pipeline_run *pr, size_t stride)
{
	uint64_t want = LOOP_TMPL_MAX;

	while (want > 1 && want / 2 >= pr->plan.nr_blocks)
		want /= 2;
	while (want > 1 && want * stride > LOOP_META_MAX)
		want /= 2;
	return want;
}

static void loop_preload(const struct pipeline_run *pr)
{
	bpf_loader_preload(bpf_plan_shuffles(&pr->plan), true);
}

static int loop_attach(struct pipeline_run *pr)
{
	const struct pipeline_config *pc = &pr->cfg;
	struct loop_ctl_params cp;
	struct loop_engine *le;
	size_t page = sysconf(_SC_PAGESIZE), meta_size, ctl_len;
	char err[256];
	int ret;

	le = calloc(1, sizeof(*le));
	if (!le)
		return pipeline_fail(pr, -ENOMEM, "out of memory");
	le->pr = pr;
	le->mon_fd = le->kick_fd = -1;
	pr->engine_priv = le;

	loop_plan_bounds(&pr->plan, &le->max_ops, &meta_size);
	if (le->max_ops > LOOP_MAX_OPS)
		return pipeline_fail(pr, -E2BIG, "engine = loop: a block needs %d requests, the "
				     "loop program handles at most %d", le->max_ops, LOOP_MAX_OPS);
	if (pr->nr_chains > LOOP_MAX_SLOTS || pr->fs.nr_dst > LOOP_MAX_DESTS)
		return pipeline_fail(pr, -E2BIG, "engine = loop: at most %d chains and %d "
				     "destinations", LOOP_MAX_SLOTS, LOOP_MAX_DESTS);
	le->meta_stride = (meta_size + 63) / 64 * 64;
	le->nr_tmpl = pick_nr_tmpl(pr, le->meta_stride);
	if (le->nr_tmpl < 2 * (uint32_t)pr->nr_chains && le->nr_tmpl < pr->plan.nr_blocks)
		log_warning("pipeline %s: engine = loop keeps only %u block templates (%zu bytes "
			    "of descriptors per block) for %d chains: fewer blocks in flight",
			    pc->name, le->nr_tmpl, meta_size, pr->nr_chains);

	ctl_len = (sizeof(struct iou_loop_ctl) + page - 1) / page * page;
	le->region_len = ctl_len + ((size_t)le->nr_tmpl * le->meta_stride + page - 1) / page * page;
	/* populated, and pinned by the registration: the kernel reads it without faulting */
	le->region = mmap(NULL, le->region_len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (le->region == MAP_FAILED) {
		le->region = NULL;
		return pipeline_fail(pr, -ENOMEM, "engine = loop: cannot map a %zu KiB parameter "
				     "region", le->region_len >> 10);
	}
	le->ctl = (struct iou_loop_ctl *)le->region;
	le->meta = le->region + ctl_len;

	le->mon_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	le->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (le->mon_fd < 0 || le->kick_fd < 0)
		return pipeline_fail(pr, -errno, "engine = loop: eventfd: %s", strerror(errno));

	for (int i = 0; i < pr->nr_chains; i++)
		le->slots[i] = (struct slot_bufs){
			.rbuf = pr->chains[i].rbuf, .rbuf_index = pr->chains[i].rbuf_index,
			.wbuf = pr->chains[i].wbuf, .wbuf_index = pr->chains[i].wbuf_index,
		};
	ret = loop_feed_init(&le->feed, &pr->plan, pr->fs.nr_src, le->slots, pr->nr_chains,
			     le->nr_tmpl, le->meta, le->meta_stride);
	if (ret)
		return pipeline_fail(pr, ret, "engine = loop: cannot plan the block templates: %s",
				     strerror(-ret));
	le->feed_ok = true;

	cp = (struct loop_ctl_params){
		.nr_blocks = pr->plan.nr_blocks,
		.nr_slots = pr->nr_chains,
		.nr_tmpl = le->nr_tmpl,
		.nr_dests = pr->fs.nr_dst,
		.dest_file = pr->fs.nr_src,
		.mon_fd = le->mon_fd,
		.kick_fd = le->kick_fd,
		.ckpt_blocks = pc->s.checkpoint_interval / pc->s.block_size,
		.ckpt_ns = LOOP_CKPT_NS,
		.tick_ns = LOOP_TICK_NS,
		.now_ns = clock_mono_ns(),
		.cq_entries = pr->ring.params.cq_entries,
		.cq_head_off = pr->ring.params.cq_off.head,
		.cq_tail_off = pr->ring.params.cq_off.tail,
		.cqes_off = pr->ring.params.cq_off.cqes,
		.skip_cqes = pr->ring.params.features & IORING_FEAT_CQE_SKIP,
	};
	cp.wait_batch = loop_wait_batch(pr->nr_chains, le->max_ops, cp.skip_cqes);
	/* the program reads the CQ through a pointer of a size fixed at load */
	if (cp.cq_entries != loop_cq_class(cp.cq_entries) || cp.cqes_off != LOOP_CQES_OFF ||
	    cp.cq_head_off >= LOOP_CQES_OFF || cp.cq_tail_off >= LOOP_CQES_OFF)
		return pipeline_fail(pr, -EPROTO, "engine = loop: the kernel's CQ ring (%u entries, "
				     "CQEs at %u) is not laid out as the loop program reads it",
				     cp.cq_entries, cp.cqes_off);
	loop_ctl_setup(le->ctl, &cp);

	ret = ring_register_mem_region(&pr->ring, le->region, le->region_len);
	if (ret)
		return pipeline_fail(pr, ret, "engine = loop: IORING_REGISTER_MEM_REGION of %zu KiB "
				     "failed: %s", le->region_len >> 10, strerror(-ret));
	/* the IORING_OP_BPF handlers, as for the bpf engine, where a block shuffles */
	if (bpf_plan_shuffles(&pr->plan)) {
		ret = bpf_ops_attach(ring_fd(&pr->ring), &le->ops, err, sizeof(err));
		if (ret)
			return pipeline_fail(pr, ret, "cannot attach the BPF ops to the ring: %s",
					     err);
	}
	ret = bpf_loop_attach(ring_fd(&pr->ring), &le->loop, err, sizeof(err));
	if (ret)
		return pipeline_fail(pr, ret, "cannot attach the loop_step program to the ring: %s",
				     err);
	log_info("pipeline %s: loop engine: %u block templates ahead, %zu KiB parameter region, "
		 "ring %u SQEs / %u CQEs, %s, steps wait for up to %u CQEs, fdatasync every %"
		 PRIu64 " blocks or %llu s",
		 pc->name, le->nr_tmpl, le->region_len >> 10, pr->ring.params.sq_entries,
		 pr->ring.params.cq_entries,
		 le->ctl->skip_cqes ? "one CQE per block" : "one CQE per request",
		 le->ctl->wait_batch, (uint64_t)le->ctl->ckpt_blocks,
		 LOOP_CKPT_NS / 1000000000ULL);
	return 0;
}

static void loop_detach(struct pipeline_run *pr)
{
	struct loop_engine *le = pr->engine_priv;
	uint64_t done, failed, bytes;

	if (!le)
		return;
	/*
	 * The programs' own count, next to the loop program's; they serve every
	 * ring, so other pipelines may add to theirs, never take away.
	 */
	if (le->ops && le->ctl &&
	    !bpf_ops_counters(le->ops, bpf_op_id_for(&pr->plan), &done, &failed, &bytes)) {
		if (bytes < le->ctl->bpf_bytes)
			log_warning("pipeline %s: the uring_bpf_ops program counted %" PRIu64
				    " bytes, the loop program %" PRIu64, pr->cfg.name, bytes,
				    (uint64_t)le->ctl->bpf_bytes);
		log_info("pipeline %s: BPF op %u counted %" PRIu64 " completions, %" PRIu64
			 " failures, %" PRIu64 " bytes copied in the kernel (every ring's); the loop "
			 "took %" PRIu64 " steps (%" PRIu64 " without a wait, %.3f s inside them), %"
			 PRIu64 " SQEs, %" PRIu64 " CQEs, %" PRIu64 " resubmissions, %" PRIu64
			 " checkpoint flushes, %" PRIu64 " kicks", pr->cfg.name,
			 bpf_op_id_for(&pr->plan), done, failed, bytes,
			 (uint64_t)le->ctl->steps, (uint64_t)le->ctl->busy_steps,
			 le->ctl->step_ns / 1e9, (uint64_t)le->ctl->sqes, (uint64_t)le->ctl->cqes,
			 (uint64_t)le->ctl->retries, (uint64_t)le->ctl->fsync_rounds,
			 (uint64_t)le->ctl->kicks);
	}
	/* the links go first: no step runs once they are gone */
	bpf_loop_detach(le->loop);
	bpf_ops_detach(le->ops);
	if (le->feed_ok)
		loop_feed_free(&le->feed);
	/* the region stays pinned by the ring until ring_exit() frees it */
	if (le->region)
		munmap(le->region, le->region_len);
	if (le->mon_fd >= 0)
		close(le->mon_fd);
	if (le->kick_fd >= 0)
		close(le->kick_fd);
	free(le);
	pr->engine_priv = NULL;
}

/* ---- drive ---- */

static const char *file_path(const struct pipeline_run *pr, unsigned int file)
{
	if (file < (unsigned int)pr->fs.nr_src)
		return pr->fs.src[file].path;
	if (file < (unsigned int)(pr->fs.nr_src + pr->fs.nr_dst))
		return pr->fs.dst[file - pr->fs.nr_src].path;
	return "?";
}

/* the program's record of its first failure, as the generic driver would say it */
static int loop_failure(struct loop_engine *le)
{
	struct pipeline_run *pr = le->pr;
	struct iou_loop_ctl *ctl = le->ctl;
	uint64_t block = ctl->err_block, logical = block_bytes(pr, block);
	int res = ctl->err_res < 0 ? ctl->err_res : -EIO;
	const struct iou_loop_op *op;
	char what[128];

	if (ctl->err_kind == LOOP_OP_FSYNC) {
		/* nothing past the last complete flush may be recorded */
		uint64_t at = block_bytes(pr, ctl->durable);

		if (at < pr->failed_off)
			pr->failed_off = at;
		return pipeline_fail(pr, res, "fdatasync of destination %s failed: %s; the "
				     "checkpoint stays at %" PRIu64,
				     ctl->err_file < (unsigned int)pr->fs.nr_dst ?
				     pr->fs.dst[ctl->err_file].path : "?", strerror(-res), at);
	}
	if (logical < pr->failed_off)
		pr->failed_off = logical;
	switch (ctl->err_kind) {
	case LOOP_OP_READ:
	case LOOP_OP_WRITE:
		if (res == -ENODATA)
			snprintf(what, sizeof(what), "unexpected end of file after %u of %u bytes "
				 "(was the source truncated?)", ctl->err_done,
				 ctl->err_done + ctl->err_len);
		else if (res == -EIO && ctl->err_kind == LOOP_OP_WRITE)
			snprintf(what, sizeof(what), "%s", "the write made no progress or failed");
		else if (res == -ECANCELED)
			snprintf(what, sizeof(what), "%s", "cancelled (the ring is going away?)");
		else
			snprintf(what, sizeof(what), "%s", strerror(-res));
		return pipeline_fail(pr, res, "%s %s at offset %" PRIu64 " (%u bytes) failed: %s",
				     ctl->err_kind == LOOP_OP_READ ? "read from" : "write to",
				     file_path(pr, ctl->err_file), (uint64_t)ctl->err_off,
				     ctl->err_len, what);
	case LOOP_OP_BPF:
		op = &ctl->tmpl[block & ctl->tmpl_mask].ops[ctl->err_op & (LOOP_MAX_OPS - 1)];
		return pipeline_fail(pr, res, "IORING_OP_BPF (op id %u, %u pairs) for the block at "
				     "logical offset %" PRIu64 " failed: copied %d of %u bytes",
				     op->op_flags >> IORING_BPF_OP_SHIFT, op->len, logical,
				     (int)ctl->err_done, ctl->err_len);
	case LOOP_OP_SUBMIT:
		return pipeline_fail(pr, res, "the loop program's submission of %u SQEs (block "
				     "%" PRIu64 ") took %u: %s", ctl->err_op, block, ctl->err_len,
				     strerror(-res));
	default:
		return pipeline_fail(pr, res, "the loop program found no template for block %"
				     PRIu64 " (kind %u, found %" PRIu64 "): %s", block,
				     ctl->err_kind, (uint64_t)ctl->err_off, strerror(-res));
	}
}

static int loop_drive(struct pipeline_run *pr)
{
	struct loop_engine *le = pr->engine_priv;
	struct pipeline_status *st = pr->env->status;
	struct iou_loop_ctl *ctl = le->ctl;
	uint32_t state = LOOP_RUNNING;
	int64_t n;
	int ret, err = 0;

	le->bpf_ops_base = atomic_load(&st->bpf_ops);
	le->bpf_bytes_base = atomic_load(&st->bpf_bytes);
	le->cqes_base = atomic_load(&st->cqes);
	le->steps_base = atomic_load(&st->loop_steps);
	le->blocks_base = atomic_load(&st->loop_blocks);
	n = loop_feed_fill(&le->feed, ctl);
	if (n < 0)
		return pipeline_fail(pr, (int)n, "engine = loop: cannot write block templates: %s",
				     strerror((int)-n));
	ret = monitor_start(le);
	if (ret)
		return pipeline_fail(pr, ret, "engine = loop: cannot start the monitor thread: %s",
				     strerror(-ret));
	for (;;) {
		uint64_t t0 = clock_mono_ns();

		loop_heartbeat(st, t0);
		/* counted before: the call lasts the whole pipeline */
		atomic_store(&st->enters, pr->ring.enters + 1);
		ret = ring_enter_loop(&pr->ring);
		atomic_store(&st->enters, pr->ring.enters);
		state = rd32(&ctl->state);
		log_debug("pipeline %s: io_uring_enter returned %d after %.3f s, loop state %u, "
			  "%" PRIu64 " steps", pr->cfg.name, ret, (clock_mono_ns() - t0) / 1e9, state,
			  (uint64_t)ctl->steps);
		if (state != LOOP_RUNNING)
			break;
		/*
		 * Signals end the call with -EINTR, and so does task work queued
		 * with TWA_SIGNAL (io-wq asking for a new worker): the loop goes
		 * on where it was.
		 */
		if (ret == -EINTR || ret == -EAGAIN || ret == -EBUSY)
			continue;
		if (ret < 0) {
			err = pipeline_fail(pr, ret, "io_uring_enter failed: %s", strerror(-ret));
			break;
		}
		err = pipeline_fail(pr, -EIO, "the loop_step program returned without finishing "
				    "(%" PRIu64 " steps, %" PRIu64 " with a region missing)",
				    (uint64_t)ctl->steps, bpf_loop_null_regions(le->loop));
		break;
	}
	monitor_stop(le);
	loop_mirror(le, false);
	pr->next_block = rd64(&ctl->watermark);
	pr->bpf_bytes = ctl->bpf_bytes;
	if (ctl->strays)
		log_warning("pipeline %s: the loop program saw %" PRIu64 " CQEs it could not place",
			    pr->cfg.name, (uint64_t)ctl->strays);
	if (err)
		return err;
	switch (state) {
	case LOOP_DONE:
		atomic_store(&st->bytes_done, pr->plan.p.length);
		return 0;
	case LOOP_DRAINED:
		if (atomic_load(&le->fill_err))
			return pipeline_fail(pr, atomic_load(&le->fill_err),
					     "engine = loop: cannot write block templates: %s",
					     strerror(-atomic_load(&le->fill_err)));
		return pr->next_block < pr->plan.nr_blocks ? -EINTR : 0;
	default:
		return loop_failure(le);
	}
}

/* ---- never called: drive() runs the whole pipeline ---- */

static int loop_build_shuffle(struct pipeline_run *pr, struct chain *c)
{
	(void)pr;
	(void)c;
	return -EINVAL;
}

const struct engine_ops engine_loop_ops = {
	.name = "loop",
	.kind = ENGINE_LOOP,
	.setup_flags = IOU_SETUP_BPF_OP | IORING_SETUP_NO_SQARRAY | IORING_SETUP_SQ_REWIND |
		       IORING_SETUP_SUBMIT_ALL,
	.elide_identity_shuffle = true,
	.max_chain_ops = LOOP_MAX_OPS,
	.max_shuffle_sqes = loop_max_shuffle_sqes,
	.meta_size = loop_meta_size,
	.preload = loop_preload,
	.attach = loop_attach,
	.detach = loop_detach,
	.build_shuffle = loop_build_shuffle,
	.drive = loop_drive,
	.ring_size = loop_ring_size,
};
