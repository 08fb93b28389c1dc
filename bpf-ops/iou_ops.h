/* SPDX-License-Identifier: MIT */
/*
 * What the daemon and its uring_bpf_ops programs agree on, included by both.
 *
 * An IORING_OP_BPF SQE from iou-offloadd carries:
 *   sqe->bpf_op_flags  op id << IORING_BPF_OP_SHIFT (one id per transform)
 *   sqe->addr          user address of an array of descriptor pairs, in
 *                      registered (so pinned) memory
 *   sqe->len           number of pairs, 1..IOU_OPS_MAX_PAIRS
 *   sqe->off           bytes the whole request must copy
 * Pair k is descs[2k] = destination, descs[2k + 1] = source, the argument
 * order of uring_bpf_memcpy(). issue_fn copies each pair and completes with
 * the total, or -EIO when the total is not sqe->off, or the first -errno;
 * a negative result breaks the SQE link, so the writes after it never run.
 *
 * IOU_OP_ID_SUM (checksum = crc32c) copies nothing: pair k's source,
 * descs[2k + 1], is a block's bytes (a pipeline's read area: one pair; a
 * device's request: up to IOU_OPS_MAX_PAIRS blocks of it), and sqe->off + k
 * names the entry of the program's sums[] (.bss, which the daemon maps)
 * that receives their CRC32C (RFC 3720), computed by uring_bpf_crc32c().
 * It completes with the bytes summed, or -EOPNOTSUPP on a kernel without
 * that kfunc.
 */
#ifndef IOU_OPS_H
#define IOU_OPS_H

#include "iou_types.h"

/* op ids on the ring; 0 is left unused so a zeroed SQE reaches nothing */
enum iou_op_id {
	IOU_OP_ID_COPY = 1,
	IOU_OP_ID_MIRROR = 2,
	IOU_OP_ID_STRIPE = 3,
	IOU_OP_ID_GATHER = 4,
	IOU_OP_ID_SUM = 5,
	IOU_OP_ID_MAX = IOU_OP_ID_SUM,
};

/*
 * entries of sums[] (512 KiB of .bss), one per block in flight over every
 * ring of the daemon: the first IOU_SUMS_DEVICES for the integrity devices'
 * queues (their configuration is refused past it: on zero copy nothing
 * else can sum their requests), the rest for the pipelines' chains (which
 * sum in userspace when it is full), so no pipeline takes a device's
 */
#define IOU_SUMS_MAX		(1u << 17)
#define IOU_SUMS_DEVICES	(IOU_SUMS_MAX - 16384)

/* a zero-copy integrity queue's entries: a sum per 4 KiB of every tag's buffer */
static inline __u64 iou_sums_per_queue(__u32 depth, __u32 io_bytes)
{
	return (__u64)depth * (io_bytes / 4096);
}

/*
 * where the op id sits in sqe->bpf_op_flags: the patched uapi's
 * IORING_BPF_OP_SHIFT, which vmlinux.h (the program's view) does not carry
 * as a macro; the daemon checks the two agree at compile time (engine_bpf.c)
 */
#define IOU_BPF_OP_SHIFT	24

#define IOU_OPS_MAX_PAIRS	32	/* per SQE: bounds the BPF loop */
#define IOU_OPS_MAX_VECS	1024	/* iovecs per REG_VEC descriptor (UIO_MAXIOV) */

/* what prep_fn keeps in uring_bpf_data->pdu (40 bytes) for issue_fn */
struct iou_ops_pdu {
	__u64 descs;		/* sqe->addr */
	__u64 expect;		/* sqe->off */
	__u32 nr_pairs;		/* sqe->len */
	__u32 op_id;
};

#endif
