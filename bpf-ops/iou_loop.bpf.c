// SPDX-License-Identifier: GPL-2.0
/*
 * iou-offloadd's loop_step program (bpf-ops, Pavel Begunkov's design): it
 * runs a whole pipeline from inside one io_uring_enter(). Each step reaps
 * completions from the CQ region and consumes them, judges finished
 * chains, starts new ones from the block templates the daemon keeps in the
 * parameter region, and submits from SQE index 0 (IORING_SETUP_SQ_REWIND).
 * The IORING_OP_BPF requests it submits are served by the uring_bpf_ops
 * programs of iou_ops.bpf.c, attached to the same ring.
 *
 * The logic is iou_loop_core.h, shared with a host model of it; this file
 * only binds it to the kfuncs. (BPF_PROG() names its context ctx: the ring
 * is "ring" here.) The ring is an opaque struct iou_ctx, as upstream has it
 * since "io_uring/bpf-ops: restrict ctx access to BPF": the program only
 * passes it to the kfuncs.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "iou_loop_core.h"

char LICENSE[] SEC("license") = "GPL";

/* pahole 1.24 emits no kfunc decl tags: declare them ourselves */
extern int bpf_io_uring_submit_sqes(struct iou_ctx *ctx, __u32 nr) __ksym;
extern __u8 *bpf_io_uring_get_region(struct iou_ctx *ctx, __u32 region_id,
				     const __u64 rdwr_buf_size) __ksym;

/* the CQ ring's geometry, from io_uring_params: load-time constants */
const volatile __u64 cq_size = 4096;
const volatile __u32 cq_head_off;
const volatile __u32 cq_tail_off;
const volatile __u32 cqes_off;
const volatile __u32 cq_mask;

/* for the daemon's log: a region missing or too small */
__u64 null_regions;

SEC("struct_ops.s/loop_step")
int BPF_PROG(loop_step, struct iou_ctx *ring, struct iou_loop_params *lp)
{
	struct iou_loop_cq_geom g = {
		.size = cq_size, .head_off = cq_head_off, .tail_off = cq_tail_off,
		.cqes_off = cqes_off, .mask = cq_mask,
	};
	struct iou_loop_ctl *ctl;
	struct iou_loop_sq *sq;
	__u32 head = 0, n;
	__u64 t0 = bpf_ktime_get_ns();
	__u8 *cq;
	int ret;

	ctl = (struct iou_loop_ctl *)bpf_io_uring_get_region(ring, IOU_REGION_MEM,
							 sizeof(struct iou_loop_ctl));
	sq = (struct iou_loop_sq *)bpf_io_uring_get_region(ring, IOU_REGION_SQ,
						       sizeof(struct iou_loop_sq));
	cq = bpf_io_uring_get_region(ring, IOU_REGION_CQ, cq_size);
	if (!ctl || !sq || !cq) {
		null_regions++;
		return IOU_LOOP_STOP;
	}
	if (loop_step_body(ctl, sq, cq, &g, t0, &head)) {
		ctl->step_ns += bpf_ktime_get_ns() - t0;
		return IOU_LOOP_STOP;
	}

	n = LOOP_READ(ctl->sq_k);
	if (n > LOOP_SQ_ENTRIES)
		n = LOOP_SQ_ENTRIES;
	if (n) {
		ret = bpf_io_uring_submit_sqes(ring, n);
		if (loop_submitted(ctl, n, ret))
			return IOU_LOOP_STOP;
	}
	/* wait for one more CQE than consumed, or come back at once */
	if (LOOP_READ(ctl->more)) {
		ctl->busy_steps++;
		lp->cq_wait_idx = head;
	} else {
		lp->cq_wait_idx = head + 1;
	}
	ctl->step_ns += bpf_ktime_get_ns() - t0;
	return IOU_LOOP_CONTINUE;
}

SEC(".struct_ops.link")
struct io_uring_bpf_ops iou_loop = {
	.loop_step	= (void *)loop_step,
};
