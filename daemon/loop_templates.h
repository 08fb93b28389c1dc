/* SPDX-License-Identifier: MIT */
/*
 * Block templates for the loop engine: each block's chain (READ_FIXED ->
 * IORING_OP_BPF -> WRITE_FIXED per destination) written into the loop
 * program's parameter region, from the same plan and descriptor builder as
 * the bpf engine, so both move exactly the same bytes. No I/O here.
 */
#ifndef IOU_LOOP_TEMPLATES_H
#define IOU_LOOP_TEMPLATES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iou_abi.h"
#include "../bpf-ops/iou_loop.h"
#include "block_io.h"
#include "plan.h"

/* one chain slot's registered buffers */
struct loop_feed {
	const struct plan *pl;
	int nr_src;			/* registered file index of destination 0 */
	unsigned int op_id;		/* uring_bpf_ops id for the transform */
	const struct slot_bufs *slots;
	int nr_slots;
	uint32_t nr_tmpl;		/* templates in the region, a power of two */
	uint8_t *meta;			/* descriptors: nr_tmpl * meta_stride bytes, pinned */
	size_t meta_stride;
	int max_pairs, max_iovs, max_sqes;
	struct block_plan bp;		/* scratch */
};

/* what the daemon tells the program before the first io_uring_enter() */
struct loop_ctl_params {
	uint64_t nr_blocks;
	uint32_t nr_slots;
	uint32_t nr_tmpl;		/* power of two, <= LOOP_TMPL_MAX */
	uint32_t nr_dests;
	uint32_t dest_file;		/* registered file index of destination 0 */
	int mon_fd, kick_fd;		/* eventfds, or -1 */
	uint64_t ckpt_blocks;		/* fdatasync every this many blocks (>= 1) */
	uint64_t ckpt_ns;		/* ... or this often */
	uint64_t tick_ns;		/* the loop's timer */
	uint64_t now_ns;		/* CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns() */
	/* the CQ ring, from io_uring_params */
	uint32_t cq_entries;		/* one of LOOP_CQ_CLASS* */
	uint32_t cq_head_off, cq_tail_off, cqes_off;
	uint32_t wait_batch;		/* CQEs a step waits for at most (>= 1) */
	bool skip_cqes;			/* the ring has IORING_FEAT_CQE_SKIP */
};

/* the CQ size for a loop ring that needs @want entries: the next LOOP_CQ_CLASS* */
uint32_t loop_cq_class(uint32_t want);
/*
 * A quarter of the CQEs @nr_slots chains of @max_ops requests post,
 * 1..LOOP_WAIT_MAX: one per chain when they skip (@skip_cqes)
 */
uint32_t loop_wait_batch(int nr_slots, int max_ops, bool skip_cqes);

/* zero @ctl and fill in its header */
void loop_ctl_setup(struct iou_loop_ctl *ctl, const struct loop_ctl_params *p);

/* requests per block and descriptor bytes per block, at most */
void loop_plan_bounds(const struct plan *pl, int *max_ops, size_t *meta_size);

int loop_feed_init(struct loop_feed *f, const struct plan *pl, int nr_src,
		   const struct slot_bufs *slots, int nr_slots, uint32_t nr_tmpl,
		   uint8_t *meta, size_t meta_stride);
void loop_feed_free(struct loop_feed *f);

/* block @block's template, with descriptors in its meta area; 0 or -errno */
int loop_tmpl_build(struct loop_feed *f, uint64_t block, struct iou_loop_tmpl *t);

/*
 * Write templates for every block below min(nr_blocks, watermark +
 * nr_tmpl) not written yet, then publish ctl->filled. Returns how many,
 * or -errno. Safe while the program runs: a template is only rewritten
 * once its block (nr_tmpl blocks earlier) has finished.
 */
int64_t loop_feed_fill(struct loop_feed *f, struct iou_loop_ctl *ctl);

#endif
