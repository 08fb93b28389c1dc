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
 * The logic is iou_loop_core.{h,c}, shared with a host model of it; the
 * .c is compiled into this unit (bpf-ops/Makefile says why), and this file
 * only binds it to the kfuncs. The program has no load-time constants (the
 * ring's geometry is in the parameter region), so the daemon loads it once
 * and links it to each loop ring through a struct_ops map of its own. (BPF_PROG() names its context ctx: the ring
 * is "ring" here.) The ring is an opaque struct iou_ctx, as upstream has it
 * since "io_uring/bpf-ops: restrict ctx access to BPF": the program only
 * passes it to the kfuncs.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "iou_loop_core.h"
#include "iou_loop_core.c"

char LICENSE[] SEC("license") = "GPL";

/* pahole 1.24 emits no kfunc decl tags: declare them ourselves */
extern int bpf_io_uring_submit_sqes(struct iou_ctx *ctx, __u32 nr) __ksym;
extern __u8 *bpf_io_uring_get_region(struct iou_ctx *ctx, __u32 region_id,
				     const __u64 rdwr_buf_size) __ksym;

/*
 * The kernel's value of an io_uring_bpf_ops map as this kernel's vmlinux.h
 * lays it out: the daemon makes each ring's map from it without parsing the
 * kernel's BTF, once the size agrees with the kernel's (bpf_loader.c).
 */
const volatile __u32 st_value_size = sizeof(struct bpf_struct_ops_io_uring_bpf_ops);
const volatile __u32 st_off_ring_fd = __builtin_offsetof(struct bpf_struct_ops_io_uring_bpf_ops,
							  data.ring_fd);
const volatile __u32 st_off_loop_step =
	__builtin_offsetof(struct bpf_struct_ops_io_uring_bpf_ops, data.loop_step);

/* for the daemon's log: a region missing or too small (every ring's steps) */
__u64 null_regions;

/*
 * One reap per CQ size (LOOP_CQ_CLASS*): a global function verified once
 * with @cq as memory of exactly that size.
 */
#define LOOP_REAP_CLASS(n)							\
struct iou_loop_cq##n {								\
	__u8 b[LOOP_CQ_BYTES(LOOP_CQ_CLASS##n)];				\
};										\
__noinline int loop_reap##n(struct iou_loop_ctl *ctl, struct iou_loop_cq##n *cq) \
{										\
	if (!ctl || !cq)							\
		return -1;							\
	loop_reap(ctl, cq->b, sizeof(cq->b));					\
	return 0;								\
}

LOOP_REAP_CLASS(0)
LOOP_REAP_CLASS(1)
LOOP_REAP_CLASS(2)
LOOP_REAP_CLASS(3)

/* the region's size must be a constant for the verifier: one call per class */
#define LOOP_GET_CQ(n)								\
	bpf_io_uring_get_region(ring, IOU_REGION_CQ, LOOP_CQ_BYTES(LOOP_CQ_CLASS##n))

static __always_inline int loop_reap_ring(struct iou_ctx *ring, struct iou_loop_ctl *ctl)
{
	__u32 n = LOOP_READ(ctl->cq_entries);
	void *cq;

	if (n == LOOP_CQ_CLASS0) {
		cq = LOOP_GET_CQ(0);
		return cq ? loop_reap0(ctl, cq) : -1;
	}
	if (n == LOOP_CQ_CLASS1) {
		cq = LOOP_GET_CQ(1);
		return cq ? loop_reap1(ctl, cq) : -1;
	}
	if (n == LOOP_CQ_CLASS2) {
		cq = LOOP_GET_CQ(2);
		return cq ? loop_reap2(ctl, cq) : -1;
	}
	if (n == LOOP_CQ_CLASS3) {
		cq = LOOP_GET_CQ(3);
		return cq ? loop_reap3(ctl, cq) : -1;
	}
	return -1;
}

SEC("struct_ops.s/loop_step")
int BPF_PROG(loop_step, struct iou_ctx *ring, struct iou_loop_params *lp)
{
	struct iou_loop_ctl *ctl;
	struct iou_loop_sq *sq;
	__u64 t0 = bpf_ktime_get_ns();
	__u32 n;
	int ret;

	ctl = (struct iou_loop_ctl *)bpf_io_uring_get_region(ring, IOU_REGION_MEM,
							 sizeof(struct iou_loop_ctl));
	sq = (struct iou_loop_sq *)bpf_io_uring_get_region(ring, IOU_REGION_SQ,
						       sizeof(struct iou_loop_sq));
	if (!ctl || !sq) {
		null_regions++;
		return IOU_LOOP_STOP;
	}
	if (loop_step_begin(ctl, t0))
		goto stop;
	if (loop_reap_ring(ring, ctl)) {
		null_regions++;
		goto stop;
	}
	if (loop_step_body(ctl, sq, t0))
		goto stop;

	n = LOOP_READ(ctl->sq_k);
	if (n > LOOP_SQ_ENTRIES)
		n = LOOP_SQ_ENTRIES;
	if (n) {
		ret = bpf_io_uring_submit_sqes(ring, n);
		if (loop_submitted(ctl, n, ret))
			goto stop;
	}
	n = loop_wait_nr(ctl);
	if (!n)
		ctl->busy_steps++;
	lp->cq_wait_idx = LOOP_READ(ctl->cq_head) + n;
	ctl->step_ns += bpf_ktime_get_ns() - t0;
	return IOU_LOOP_CONTINUE;
stop:
	ctl->step_ns += bpf_ktime_get_ns() - t0;
	return IOU_LOOP_STOP;
}

SEC(".struct_ops.link")
struct io_uring_bpf_ops iou_loop = {
	.loop_step	= (void *)loop_step,
};
