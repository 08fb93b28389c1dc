/* SPDX-License-Identifier: MIT */
#ifndef IOU_ENGINE_BPF_H
#define IOU_ENGINE_BPF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "iou_abi.h"
#include "plan.h"

/* where one chain's areas are, for descriptors that point into them */
struct bpf_shuffle_layout {
	uint8_t *rbuf;
	uint16_t rbuf_index;
	uint8_t *wbuf;
	uint16_t wbuf_index;
	/* registered metadata area: descriptor pairs, then iovecs */
	struct io_bpf_buf_desc *descs;
	int max_pairs;
	struct iovec *iovs;
	int max_iovs;
};

/* one IORING_OP_BPF SQE's parameters */
struct bpf_shuffle_sqe {
	uint64_t desc_addr;	/* -> sqe->addr */
	uint32_t nr_pairs;	/* -> sqe->len */
	uint32_t expect;	/* -> sqe->off */
};

/* groups a block's copies fall into: one per destination, or per gather source */
int bpf_shuffle_groups(const struct plan *pl);
/* worst case for one block, to size the metadata area and the ring */
void bpf_shuffle_bounds(const struct plan *pl, int *max_pairs, int *max_iovs, int *max_sqes);
/*
 * Turn @bp's copies into descriptor pairs, FIXED where a side is contiguous
 * and REG_VEC where it is scattered, at most IOU_OPS_MAX_VECS iovecs per
 * descriptor and IOU_OPS_MAX_PAIRS pairs per SQE. Returns the number of
 * SQEs written to @sqes, or -E2BIG if the layout's capacity is too small.
 */
int bpf_build_shuffle(const struct plan *pl, const struct block_plan *bp,
		      const struct bpf_shuffle_layout *lay,
		      struct bpf_shuffle_sqe *sqes, int max_sqes);
unsigned int bpf_op_id_for(const struct plan *pl);
/*
 * Does a pipeline of @pl ever submit IORING_OP_BPF under an engine that
 * elides the identity shuffle? Not when every write goes out of the buffer
 * its data was read into (copy, mirror, concat, per-unit stripes:
 * plan.never_shuffles): the bpf and loop engines then link no
 * uring_bpf_ops, so their start-up loads no program for it.
 */
static inline bool bpf_plan_shuffles(const struct plan *pl)
{
	return !pl->never_shuffles;
}

#endif
