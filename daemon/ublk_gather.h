/* SPDX-License-Identifier: MIT */
#ifndef IOU_UBLK_GATHER_H
#define IOU_UBLK_GATHER_H

/*
 * stripe_io = gather: a request that puts several stripe units on one
 * member gathers them into a contiguous staging buffer and writes that
 * member with one request (reads: one read, then scattered back), instead
 * of one request per unit. The copy is IORING_OP_BPF (uring_bpf_memcpy()
 * between the staging buffer, FIXED, and the units, REG_VEC) on the bpf
 * engine, memcpy() on the uring engine. On zero copy the units are in the
 * request's own pages, a kernel buffer: the REG_VEC names it by index, its
 * iovecs are offsets into it, and only IORING_OP_BPF can reach it. Pure
 * functions: the queue submits.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ublk_map.h"

/* one IORING_OP_BPF request: bpf-ops/iou_ops.h's SQE convention */
struct ublk_shuffle {
	uint64_t desc_addr;	/* sqe->addr: descriptor pairs */
	uint32_t nr_pairs;	/* sqe->len */
	uint32_t expect;	/* sqe->off: bytes it must copy */
};

/* bytes of descriptors and iovecs one tag needs */
size_t ublk_gather_meta_size(int max_pieces);

/*
 * Rewrite the @n per-unit pieces of a request: every member with two or
 * more units becomes one staged piece; @units gets the per-unit pieces with
 * their place in staging (stage_off, UINT32_MAX when not gathered).
 * Returns the new number of pieces; *@staged: bytes that go through staging.
 */
int ublk_gather_merge(struct ublk_piece *pieces, int n, struct ublk_piece *units,
		      uint32_t *staged);

/*
 * The descriptors for the copy between the units in @buf, registered
 * buffer @buf_index (NULL on zero copy: the units' offsets in the kernel
 * buffer), and @stage in @stage_index (into staging for a write, out of it
 * for a read), in @meta. 0, or -E2BIG if @meta_len is too small.
 */
int ublk_gather_descs(const struct ublk_piece *units, int nr_units, char *buf,
		      uint16_t buf_index, char *stage, uint16_t stage_index, void *meta,
		      size_t meta_len, bool to_stage, struct ublk_shuffle *out);

/* the same copy with memcpy(); bytes copied */
uint32_t ublk_gather_memcpy(const struct ublk_piece *units, int nr_units, char *buf,
			    char *stage, bool to_stage);

#endif
