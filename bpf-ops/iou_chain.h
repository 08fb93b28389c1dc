/* SPDX-License-Identifier: MIT */
/*
 * The rules of a block's chain of requests, written once for both drivers
 * that run chains: the daemon's userspace driver (daemon/chain.c) and the
 * loop_step program (iou_loop_core.h, built by clang -target bpf and, for
 * tests/unit/test_loop_core.c, by the host compiler). Plain C on the uapi
 * fixed-width types and no libc, so both compilers take it.
 *
 *   user_data   tag << 56 | chain slot << 16 | request index
 *   kinds       what a request of a chain is
 *   judging     what one completion means for its request (done, short:
 *               resubmit the rest, cut off by its link, or failed with
 *               which errno), what a group of them means (the verdict),
 *               and what a skipped CQE stood for
 */
#ifndef IOU_CHAIN_H
#define IOU_CHAIN_H

#include "iou_types.h"

#define IOU_UD_TAG_SHIFT	56

/* what a CQE belongs to */
enum iou_ud_tag {
	IOU_TAG_CHAIN = 1,	/* a request of a block's chain */
	IOU_TAG_TIMER = 2,	/* loop: the 1 s multishot timeout */
	IOU_TAG_KICK = 3,	/* loop: multishot poll on the kick eventfd */
	IOU_TAG_FSYNC = 4,	/* a checkpoint's fdatasync of one destination */
	IOU_TAG_NOTIFY = 5,	/* loop: the write that wakes the daemon's monitor */
	IOU_TAG_WAKE = 6,	/* daemon: poll on the pipeline's wake eventfd */
	IOU_TAG_WRITEBACK = 7,	/* daemon: sync_file_range starting one destination's writeback */
	IOU_TAG_RECORD = 8,	/* daemon: a step of writing a flushed checkpoint's record */
	/* a ublk queue's ring (daemon/ublk_queue.c); IOU_TAG_CHAIN is a backing request */
	IOU_TAG_UBLK_CMD = 16,		/* FETCH_REQ / COMMIT_AND_FETCH_REQ of a tag */
	IOU_TAG_UBLK_SHUFFLE = 17,	/* the stripe gather: IORING_OP_BPF or staged copy */
	IOU_TAG_UBLK_WAKE = 18,		/* the device's eventfd: look at dev->handover */
	IOU_TAG_UBLK_REG = 19,		/* REGISTER_IO_BUF of a tag's request */
	IOU_TAG_UBLK_UNREG = 20,	/* UNREGISTER_IO_BUF before its commit */
	IOU_TAG_UBLK_SUM = 21,		/* IORING_OP_BPF: the CRC32C of up to 32 blocks of a request */
	IOU_TAG_UBLK_FILL = 22,		/* IORING_OP_BPF: a checked read, staging -> its pages */
	IOU_TAG_UBLK_HEAL = 23,		/* a mirror leg's bad block rewritten from staging */
};

static inline __u64 iou_ud(__u64 tag, __u32 slot, __u32 op)
{
	return (tag << IOU_UD_TAG_SHIFT) | ((__u64)(slot & 0xffff) << 16) | (op & 0xffff);
}

static inline __u32 iou_ud_tag(__u64 ud)
{
	return ud >> IOU_UD_TAG_SHIFT;
}

static inline __u32 iou_ud_slot(__u64 ud)
{
	return (ud >> 16) & 0xffff;
}

static inline __u32 iou_ud_op(__u64 ud)
{
	return ud & 0xffff;
}

/* the requests a chain is made of */
enum iou_chain_kind {
	IOU_CHAIN_READ = 1,	/* IORING_OP_READ_FIXED into the read area */
	IOU_CHAIN_BPF = 2,	/* IORING_OP_BPF: the shuffle, in the kernel */
	IOU_CHAIN_WRITE = 3,	/* IORING_OP_WRITE_FIXED from the read or write area */
};

/* errno values (BPF has no errno.h); tests/unit checks them against libc's */
#define IOU_EIO		5
#define IOU_EAGAIN	11
#define IOU_EINVAL	22
#define IOU_ENODATA	61
#define IOU_EPROTO	71
#define IOU_ECANCELED	125

enum iou_judged {
	IOU_JUDGED_FAILED = -1,		/* *err says why */
	IOU_JUDGED_DONE = 0,		/* the request moved everything it had to */
	IOU_JUDGED_CANCELLED = 1,	/* cut off by an earlier one in its link */
	IOU_JUDGED_SHORT = 2,		/* moved some: the rest goes again */
	/*
	 * done, but with less than it asked for (an O_DIRECT read of the
	 * source's unaligned tail), which cut the link all the same
	 */
	IOU_JUDGED_DONE_CUT = 3,
};

/*
 * One completion @res of a request of @kind that asked for @len - *@done
 * bytes and is complete at @expect: IOU_JUDGED_*. *@done grows by what
 * moved; on IOU_JUDGED_FAILED, *@err is the -errno to report.
 */
static inline int iou_chain_judge(__u32 kind, __s32 res, __u32 len, __u32 expect,
				  __u32 *done, __s32 *err)
{
	int cut;

	if (res == -IOU_ECANCELED)
		return IOU_JUDGED_CANCELLED;
	if (res < 0) {
		*err = res;
		return IOU_JUDGED_FAILED;
	}
	if (kind == IOU_CHAIN_BPF) {
		/* a shuffle copies all of its pairs or the block is wrong */
		if ((__u32)res != expect) {
			*err = -IOU_EIO;
			return IOU_JUDGED_FAILED;
		}
		*done = res;
		return IOU_JUDGED_DONE;
	}
	/* less than asked for cuts the link, also when it is all there is */
	cut = (__u32)res < len - *done;
	*done += res;
	if (*done >= expect)
		return cut ? IOU_JUDGED_DONE_CUT : IOU_JUDGED_DONE;
	if (res == 0) {
		/* no progress: a read at EOF (the source shrank), a stuck write */
		*err = kind == IOU_CHAIN_READ ? -IOU_ENODATA : -IOU_EIO;
		return IOU_JUDGED_FAILED;
	}
	return IOU_JUDGED_SHORT;
}

/*
 * A group in which requests were cancelled by their link: fine after a
 * short transfer (the rest is resubmitted), an error otherwise (the ring is
 * going away, or a request failed without posting its own error).
 */
static inline int iou_chain_cut_is_error(int cancelled, int shorts)
{
	return cancelled && !shorts;
}

/*
 * What a group's judgments add up to, request by request in order: the
 * first request not done (where the rest of the chain resumes), whether a
 * link was cut by a cancel, and whether one fell short. Accessed as
 * volatile: the loop program keeps it in its control block, in memory, so
 * the verifier need not track it along every path.
 */
struct iou_group_verdict {
	__u32 first;
	__u32 cancelled;
	__u32 shorts;
};

enum iou_group_end {
	IOU_GROUP_DONE = 0,	/* every request did all it was asked */
	IOU_GROUP_RESUBMIT = 1,	/* the chain goes on from .first */
	IOU_GROUP_CUT = 2,	/* cancelled with nothing short: an error */
};

static inline void iou_group_begin(volatile struct iou_group_verdict *g, __u32 nr_ops)
{
	g->first = nr_ops;
	g->cancelled = 0;
	g->shorts = 0;
}

/* request @o was judged @r (iou_chain_judge(), not IOU_JUDGED_FAILED) */
static inline void iou_group_add(volatile struct iou_group_verdict *g, __u32 o, int r)
{
	if (r == IOU_JUDGED_DONE)
		return;
	if (r == IOU_JUDGED_DONE_CUT) {
		g->shorts = 1;		/* done itself, but the link after it was cut */
		return;
	}
	if (r == IOU_JUDGED_CANCELLED)
		g->cancelled = 1;
	else
		g->shorts = 1;
	if (g->first > o)
		g->first = o;
}

static inline int iou_group_end(const volatile struct iou_group_verdict *g, __u32 nr_ops)
{
	if (iou_chain_cut_is_error(g->cancelled, g->shorts))
		return IOU_GROUP_CUT;
	return g->first >= nr_ops ? IOU_GROUP_DONE : IOU_GROUP_RESUBMIT;
}

/*
 * With IOSQE_CQE_SKIP_SUCCESS on all but the last request of a group, the
 * group posts one CQE: the last request's, or that of the first one that
 * fell short or failed (the kernel breaks the link there and, as that
 * request asked to skip, skips the cancelled ones' CQEs too). So request
 * @i, when the CQE came for @o, did all it was asked (@i < @o: a shuffle
 * its @expect, a transfer the @len - @done left), never ran (@i > @o), or
 * is the one that posted @res.
 */
static inline __s32 iou_chain_skipped_res(__u32 kind, __u32 i, __u32 o, __u32 expect,
					  __u32 len, __u32 done, __s32 res)
{
	if (i < o)
		return kind == IOU_CHAIN_BPF ? (__s32)expect : (__s32)(len - done);
	if (i > o)
		return -IOU_ECANCELED;
	return res;
}

#endif
