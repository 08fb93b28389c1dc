/* SPDX-License-Identifier: MIT */
/*
 * The logic of iou-offloadd's loop_step program, in C that clang -target
 * bpf and the host compiler both take: the step's pieces are
 * iou_loop_core.c, the small helpers and the step's frame are here;
 * iou_loop.bpf.c wraps them in the struct_ops program,
 * tests/unit/test_loop_core.c drives them against a model of the kernel on
 * the host (no BPF is ever loaded there).
 *
 * One step:
 *   begin     loop_step_begin(): the header is ours, the loop still runs
 *   reap      up to LOOP_REAP_MAX CQEs, consuming them (cq.head moves):
 *             a chain's CQE records its result; the last CQE of a group
 *             queues the chain for judging
 *   judge     like the daemon's generic driver: an error fails the
 *             pipeline, a short transfer resubmits the rest of the chain
 *             from where it stopped, all done frees the slot
 *   advance   the watermark over finished blocks
 *   keep      the 1 s timer and the kick poll armed; fdatasync the
 *             destinations (IORING_OP_FSYNC) every ckpt_blocks blocks or
 *             ckpt_ns; wake the daemon's monitor (a write to an eventfd)
 *             when it has templates to write or a checkpoint to record
 *   start     new blocks from their templates, up to LOOP_START_MAX
 * then the caller submits ctl->sq_k SQEs (indexes 0.., IORING_SETUP_SQ_REWIND)
 * and waits for loop_wait_nr() more CQEs: a batch (wait_batch, a quarter of
 * what the queue keeps in flight) or all that are still to come, whichever
 * is fewer; none while work is left.
 *
 * The pieces are global functions in BPF (LOOP_FN): the verifier checks
 * each once, with its pointer arguments as memory of the struct's size.
 * Loops are open-coded iterators (LOOP_FOR: bpf_for), which the verifier
 * walks until their state repeats instead of once per iteration, so the
 * bounds cost nothing to verify. Every index is masked by a power-of-two
 * constant, and what a loop carries from one turn to the next lives in
 * memory (LOOP_READ), so that its state does repeat. Nothing depends on
 * the ring's geometry at load time: one loaded program serves every ring.
 */
#ifndef IOU_LOOP_CORE_H
#define IOU_LOOP_CORE_H

#include "iou_loop.h"
#ifdef __bpf__
#include <bpf/bpf_helpers.h>	/* bpf_for(): LOOP_FOR */
#endif

#ifndef LOOP_FN
#define LOOP_FN __attribute__((noinline))	/* a global function in BPF */
#endif
#define LOOP_INLINE static inline __attribute__((always_inline))
#define LOOP_READ(x)		(*(volatile __typeof__(x) *)&(x))
#define LOOP_WRITE(x, v)	(*(volatile __typeof__(x) *)&(x) = (v))
#define LOOP_BARRIER()		__asm__ __volatile__("" ::: "memory")
#ifdef bpf_for
#define LOOP_FOR(i, start, end)	bpf_for(i, start, end)
#else
#define LOOP_FOR(i, start, end)	for ((i) = (start); (i) < (__typeof__(i))(end); (i)++)
#endif

/* uapi values (macros do not reach vmlinux.h); checked by the daemon's build */
#define LOOP_OPC_FSYNC		3
#define LOOP_OPC_READ_FIXED	4
#define LOOP_OPC_WRITE_FIXED	5
#define LOOP_OPC_POLL_ADD	6
#define LOOP_OPC_TIMEOUT	11
#define LOOP_OPC_WRITE		23
#define LOOP_OPC_BPF		127	/* IORING_OP_BPF: unmerged, off upstream's numbers */
#define LOOP_SQE_FIXED_FILE	(1U << 0)
#define LOOP_SQE_IO_LINK	(1U << 2)
#define LOOP_SQE_CQE_SKIP	(1U << 6)	/* IOSQE_CQE_SKIP_SUCCESS */
#define LOOP_FSYNC_DATASYNC	(1U << 0)
#define LOOP_TIMEOUT_MULTISHOT	(1U << 6)
#define LOOP_POLL_ADD_MULTI	(1U << 0)
#define LOOP_POLLIN		0x0001
#define LOOP_CQE_F_MORE		(1U << 1)

#define LOOP_SLOT_MASK		(LOOP_MAX_SLOTS - 1)
#define LOOP_OP_MASK		(LOOP_MAX_OPS - 1)
#define LOOP_TMPL_MASK		(LOOP_TMPL_MAX - 1)
#define LOOP_SQ_MASK		(LOOP_SQ_ENTRIES - 1)

/* the next SQE of this step, zeroed; NULL when the SQ is full */
LOOP_INLINE struct io_uring_sqe *loop_sqe(struct iou_loop_ctl *ctl, struct iou_loop_sq *sq)
{
	__u32 k = LOOP_READ(ctl->sq_k);
	struct io_uring_sqe *sqe;

	if (k >= LOOP_SQ_ENTRIES)
		return (void *)0;
	sqe = &sq->sqes[k & LOOP_SQ_MASK];
	__builtin_memset(sqe, 0, sizeof(*sqe));
	LOOP_WRITE(ctl->sq_k, k + 1);
	return sqe;
}

LOOP_INLINE __u32 loop_sq_room(struct iou_loop_ctl *ctl)
{
	__u32 k = LOOP_READ(ctl->sq_k);

	return k >= LOOP_SQ_ENTRIES ? 0 : LOOP_SQ_ENTRIES - k;
}

LOOP_INLINE struct iou_loop_tmpl *loop_tmpl_of(struct iou_loop_ctl *ctl, __u64 block)
{
	__u32 mask = LOOP_READ(ctl->tmpl_mask);

	return &ctl->tmpl[(__u32)block & mask & LOOP_TMPL_MASK];
}

LOOP_INLINE __u32 loop_slot_of(struct iou_loop_ctl *ctl, __u64 block)
{
	__u32 n = LOOP_READ(ctl->nr_slots);

	if (!n)
		return 0;
	return (__u32)(block % n) & LOOP_SLOT_MASK;
}

/* the first failure wins; later ones are fallout */
LOOP_INLINE void loop_fail(struct iou_loop_ctl *ctl, __u32 kind, __s32 res, __u64 block,
			   __u32 op, __u32 file, __u64 off, __u32 len, __u32 done)
{
	if (LOOP_READ(ctl->state) == LOOP_FAILED)
		return;
	ctl->err_kind = kind;
	ctl->err_res = res;
	ctl->err_block = block;
	ctl->err_op = op;
	ctl->err_file = file;
	ctl->err_off = off;
	ctl->err_len = len;
	ctl->err_done = done;
	LOOP_WRITE(ctl->state, LOOP_FAILED);
}

/*
 * The pieces of a step (iou_loop_core.c): global functions in BPF, each
 * verified once; the judge and the queue of chains to judge; the advance of
 * the watermark; the keeping of the timer, the kick poll, fsyncs and wakeups;
 * the start of new blocks.
 */
LOOP_FN int loop_put_op(struct iou_loop_ctl *ctl, struct iou_loop_sq *sq, __u32 s, __u32 o,
			__u32 link);
LOOP_FN int loop_put_group(struct iou_loop_ctl *ctl, struct iou_loop_sq *sq, __u32 s);
LOOP_FN int loop_on_cqe(struct iou_loop_ctl *ctl, __u64 ud, __u64 res_flags);
LOOP_FN int loop_judge(struct iou_loop_ctl *ctl, __u32 s, __u32 o);
LOOP_FN int loop_eval(struct iou_loop_ctl *ctl, struct iou_loop_sq *sq);
LOOP_FN int loop_advance(struct iou_loop_ctl *ctl);
LOOP_FN int loop_keep(struct iou_loop_ctl *ctl, struct iou_loop_sq *sq, __u64 now);
LOOP_FN int loop_start(struct iou_loop_ctl *ctl, struct iou_loop_sq *sq);

/* ---- one step, up to the submission ---- */

/* the header is ours and the loop still runs: 0, or -1 to stop */
LOOP_INLINE int loop_step_begin(struct iou_loop_ctl *ctl, __u64 now)
{
	LOOP_WRITE(ctl->sq_k, 0);
	LOOP_WRITE(ctl->more, 0);
	ctl->steps++;
	ctl->heartbeat_ns = now;
	if (ctl->magic != IOU_LOOP_MAGIC) {
		loop_fail(ctl, LOOP_OP_PLAN, -IOU_EINVAL, 0, 0, 0, 0, 0, 0);
		return -1;
	}
	return LOOP_READ(ctl->state) == LOOP_RUNNING ? 0 : -1;
}

/*
 * Consume up to LOOP_REAP_MAX CQEs from @cq, the CQ region (struct
 * io_rings) of @size bytes, a constant in BPF: the geometry comes from the
 * header (cq_*), so every ring's program is the same. The new head is
 * left in ctl->cq_head.
 */
LOOP_INLINE void loop_reap(struct iou_loop_ctl *ctl, __u8 *cq, __u64 size)
{
	__u32 hoff = LOOP_READ(ctl->cq_head_off) & 0x3f;
	__u32 toff = LOOP_READ(ctl->cq_tail_off) & 0x3f;
	__u32 head, tail;
	int i;

	LOOP_WRITE(ctl->cq_head, *(volatile __u32 *)(cq + hoff));
	tail = *(volatile __u32 *)(cq + toff);
	LOOP_BARRIER();		/* the CQEs are read after the tail */
	LOOP_FOR(i, 0, LOOP_REAP_MAX) {
		struct io_uring_cqe *cqe;
		__u64 off;

		head = LOOP_READ(ctl->cq_head);
		if (head == tail)
			break;
		off = LOOP_READ(ctl->cqes_off) +
		      (__u64)(head & LOOP_READ(ctl->cq_mask)) * sizeof(struct io_uring_cqe);
		if (off > size - sizeof(struct io_uring_cqe))
			break;
		cqe = (struct io_uring_cqe *)(cq + off);
		loop_on_cqe(ctl, cqe->user_data,
			    (__u64)(__u32)cqe->res | ((__u64)cqe->flags << 32));
		LOOP_WRITE(ctl->cq_head, head + 1);
	}
	LOOP_BARRIER();		/* done with the CQEs before handing them back */
	head = LOOP_READ(ctl->cq_head);
	*(volatile __u32 *)(cq + hoff) = head;
	if (head != tail)
		LOOP_WRITE(ctl->more, 1);
}

/*
 * After the reap: judge, advance, keep and start. Returns -1 when the
 * loop must stop (state set: DONE, FAILED or DRAINED), else 0; ctl->sq_k
 * SQEs are then ready at indexes 0.., and ctl->more says whether to come
 * back at once rather than wait.
 */
LOOP_FN int loop_step_body(struct iou_loop_ctl *ctl, struct iou_loop_sq *sq, __u64 now);

/*
 * How many more CQEs to wait for before the next step: none while work
 * is left; else a batch, but never more than the requests in flight will
 * post (the last blocks of a pipeline must not wait for the timer); one
 * when none are in flight (a kick or the timer).
 */
LOOP_INLINE __u32 loop_wait_nr(struct iou_loop_ctl *ctl)
{
	__u64 pending = LOOP_READ(ctl->cqes_pending);
	__u32 batch = LOOP_READ(ctl->wait_batch);

	if (LOOP_READ(ctl->more))
		return 0;
	if (!batch)
		batch = 1;
	if (!pending)
		return 1;
	return pending < batch ? (__u32)pending : batch;
}

/* after bpf_io_uring_submit_sqes(@n) returned @ret: -1 to stop */
LOOP_INLINE int loop_submitted(struct iou_loop_ctl *ctl, __u32 n, int ret)
{
	ctl->sqes += ret > 0 ? ret : 0;
	if (ret != (int)n) {
		/* requests not taken would never complete: the books are wrong now */
		loop_fail(ctl, LOOP_OP_SUBMIT, ret < 0 ? ret : -IOU_EAGAIN,
			  LOOP_READ(ctl->next_block), n, 0, 0, ret < 0 ? 0 : ret, 0);
		return -1;
	}
	return 0;
}

#endif
