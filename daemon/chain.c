// SPDX-License-Identifier: MIT
/*
 * One block as a chain of requests: built from the block's plan, submitted
 * as linked groups (a userspace step of the uring engine splits a chain in
 * two), and judged when a group's CQEs are all in: a short read or write
 * breaks the link, and the rest of the group is resubmitted from the first
 * op not done; an error fails the pipeline with the file and offset.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "block_io.h"
#include "log.h"
#include "pipeline_int.h"

static void chain_add_io(struct chain *c, enum chain_op_kind kind, struct block_io io)
{
	c->ops[c->nr_ops++] = (struct chain_op){
		.kind = kind, .file = io.file, .buf_index = io.buf_index, .buf = io.buf,
		.file_off = io.off, .io_len = io.len, .expect = io.expect,
	};
}

int chain_build(struct pipeline_run *pr, struct chain *c, uint64_t block)
{
	const struct slot_bufs sb = {
		.rbuf = c->rbuf, .wbuf = c->wbuf,
		.rbuf_index = c->rbuf_index, .wbuf_index = c->wbuf_index,
	};
	bool from_read;
	int ret;

	ret = plan_block(&pr->plan, block, &c->bp);
	if (ret)
		return ret;
	from_read = pr->engine->elide_identity_shuffle && c->bp.from_read;
	c->nr_ops = 0;
	for (int i = 0; i < c->bp.nr_reads; i++)
		chain_add_io(c, CHAIN_OP_READ, block_read_io(&c->bp, &sb, i));
	/* checksum = crc32c in the kernel: the read bytes, summed before they go out */
	if (pr->sums_kernel) {
		ret = engine_build_sum(pr, c);
		if (ret)
			return ret;
	}
	if (!from_read) {
		ret = pr->engine->build_shuffle(pr, c);
		if (ret)
			return ret;
	}
	for (int i = 0; i < c->bp.nr_writes; i++) {
		if (c->nr_ops >= c->max_ops)
			return -E2BIG;
		chain_add_io(c, CHAIN_OP_WRITE,
			     block_write_io(&c->bp, &sb, pr->fs.nr_src, from_read, i));
	}
	c->next = 0;
	c->group_end = 0;
	c->inflight = 0;
	return 0;
}

static void prep_op(struct io_uring_sqe *sqe, const struct chain *c, int idx)
{
	const struct chain_op *op = &c->ops[idx];
	uint32_t left = op->io_len - op->done;

	switch (op->kind) {
	case CHAIN_OP_READ:
		io_uring_prep_read_fixed(sqe, op->file, op->buf + op->done, left,
					 op->file_off + op->done, op->buf_index);
		sqe->flags |= IOSQE_FIXED_FILE;
		break;
	case CHAIN_OP_WRITE:
		io_uring_prep_write_fixed(sqe, op->file, op->buf + op->done, left,
					  op->file_off + op->done, op->buf_index);
		sqe->flags |= IOSQE_FIXED_FILE;
		break;
	case CHAIN_OP_BPF:
		io_uring_prep_rw(IOU_OP_BPF, sqe, -1, (void *)(uintptr_t)op->desc_addr,
				 op->nr_pairs, op->sum ? op->sum_index : op->expect);
		iou_sqe_bpf_op_flags(sqe) = iou_bpf_op_flags(op->op_id, 0);
		break;
	case CHAIN_OP_USER_COPY:
		break;
	}
	io_uring_sqe_set_data64(sqe, iou_ud(IOU_TAG_CHAIN, c->slot, idx));
}

void chain_release(struct pipeline_run *pr, struct chain *c)
{
	c->busy = false;
	pr->inflight_chains--;
}

static void chain_done(struct pipeline_run *pr, struct chain *c)
{
	/* checksum = crc32c: the read area holds the bytes the writes took */
	sums_block_done(pr, c->bp.logical_off, c->rbuf, c->bp.len, c->slot);
	atomic_fetch_add(&pr->env->status->bytes_done, c->bp.len);
	chain_release(pr, c);
}

/*
 * Submit the next group of @c: from the first op not complete up to the
 * next userspace step. Userspace steps at the front run right here.
 */
int chain_submit(struct pipeline_run *pr, struct chain *c)
{
	int i, ret;

	for (;;) {
		while (c->next < c->nr_ops && c->ops[c->next].complete)
			c->next++;
		if (c->next == c->nr_ops) {
			chain_done(pr, c);
			return 0;
		}
		if (c->ops[c->next].kind != CHAIN_OP_USER_COPY)
			break;
		/* only engines that queue a userspace step have the hook */
		ret = engine_user_copy(pr, c);
		if (ret)
			return ret;
		c->ops[c->next].complete = true;
	}
	for (i = c->next; i < c->nr_ops && c->ops[i].kind != CHAIN_OP_USER_COPY; i++) {
		struct io_uring_sqe *sqe = ring_get_sqe(&pr->ring);

		if (!sqe)
			return -EBUSY;	/* the ring is sized so this cannot happen */
		prep_op(sqe, c, i);
		if (i + 1 < c->nr_ops && c->ops[i + 1].kind != CHAIN_OP_USER_COPY)
			sqe->flags |= IOSQE_IO_LINK | (c->skip_cqes ? IOSQE_CQE_SKIP_SUCCESS : 0);
		c->ops[i].res = 0;
	}
	c->group_end = i;
	c->inflight = c->skip_cqes ? 1 : i - c->next;
	return 0;
}

/*
 * With IOSQE_CQE_SKIP_SUCCESS on all but the last op of a group, a group
 * posts one CQE: the last op's, or that of the first op that fell short
 * or failed (the kernel then posts it, breaks the link and, as that op
 * asked to skip, skips the cancelled ops' CQEs too). A short transfer
 * counts as failed for the link (a read or write that returns less than it
 * was asked for; our IORING_OP_BPF program fails a short copy with -EIO).
 * So the ops before @idx did all they were asked, those after never ran.
 */
static void chain_fill_skipped(struct chain *c, int idx)
{
	for (int i = c->next; i < c->group_end; i++) {
		struct chain_op *op = &c->ops[i];

		op->res = iou_chain_skipped_res(op->kind, i, idx, op->expect, op->io_len,
						op->done, op->res);
	}
}

static const char *op_path(const struct pipeline_run *pr, const struct chain_op *op)
{
	if (op->kind == CHAIN_OP_READ)
		return pr->fs.src[op->file].path;
	if (op->kind == CHAIN_OP_WRITE)
		return pr->fs.dst[op->file - pr->fs.nr_src].path;
	return "-";
}

static int chain_fail(struct pipeline_run *pr, struct chain *c, const struct chain_op *op,
		      int err, const char *what)
{
	if (c->bp.logical_off < pr->failed_off)
		pr->failed_off = c->bp.logical_off;
	if (pr->error && c->bp.logical_off < pr->reported_off &&
	    pr->reported_off != UINT64_MAX) {
		/*
		 * The blocks in flight complete in any order (io-wq, several
		 * CPUs): the error shown names the lowest failing block, where
		 * the failure starts; the one reported before joins the fallout
		 */
		if (!pr->fallout_count++ || pr->reported_off < pr->fallout_lo)
			pr->fallout_lo = pr->reported_off;
		if (pr->reported_off > pr->fallout_hi)
			pr->fallout_hi = pr->reported_off;
		pr->error = 0;
	}
	if (pr->error) {
		/* fallout of the first error (a full disk fails every request in
		 * flight): one summary line at the end, not one line each */
		if (!pr->fallout_count++ || c->bp.logical_off < pr->fallout_lo)
			pr->fallout_lo = c->bp.logical_off;
		if (c->bp.logical_off > pr->fallout_hi)
			pr->fallout_hi = c->bp.logical_off;
		atomic_fetch_add(&pr->env->status->errors, 1);
		chain_release(pr, c);
		return err;
	}
	/* logged once the blocks in flight are in (driver.c), when it is final */
	pr->reported_off = c->bp.logical_off;
	pr->error = err;
	if (op->kind == CHAIN_OP_BPF)
		snprintf(pr->msg, sizeof(pr->msg), "IORING_OP_BPF (op id %u, %u pairs) for the "
			 "block at logical offset %" PRIu64 " failed: %s", op->op_id, op->nr_pairs,
			 c->bp.logical_off, what);
	else
		snprintf(pr->msg, sizeof(pr->msg), "%s %s at offset %" PRIu64 " (%u bytes) "
			 "failed: %s", op->kind == CHAIN_OP_READ ? "read from" : "write to",
			 op_path(pr, op), op->file_off + op->done, op->io_len - op->done, what);
	pipeline_status_set_error(pr->env->status, pr->msg);
	atomic_fetch_add(&pr->env->status->errors, 1);
	chain_release(pr, c);
	return err;
}

/* what failed request @op of @c is reported as: its errno is @err */
static int chain_fail_op(struct pipeline_run *pr, struct chain *c, const struct chain_op *op,
			 int err)
{
	char what[96];

	if (op->kind == CHAIN_OP_BPF && op->res >= 0)
		snprintf(what, sizeof(what), "copied %d of %u bytes", op->res, op->expect);
	else if (err == -ENODATA && op->res == 0)
		snprintf(what, sizeof(what), "unexpected end of file after %u of %u bytes "
			 "(was the source truncated?)", op->done, op->expect);
	else if (op->res == 0)
		snprintf(what, sizeof(what), "the write made no progress");
	else
		snprintf(what, sizeof(what), "%s", strerror(-err));
	return chain_fail(pr, c, op, err, what);
}

/* all CQEs of the group are in: judge it (iou_chain.h), then go on or resubmit */
static int chain_group_done(struct pipeline_run *pr, struct chain *c)
{
	const struct chain_op *cancelled_op = NULL;
	struct iou_group_verdict g;

	iou_group_begin(&g, c->group_end);
	for (int i = c->next; i < c->group_end; i++) {
		struct chain_op *op = &c->ops[i];
		__s32 err = 0;
		int r;

		if (op->kind == CHAIN_OP_USER_COPY)
			continue;
		r = iou_chain_judge(op->kind, op->res, op->io_len, op->expect, &op->done, &err);
		if (r == IOU_JUDGED_FAILED)
			return chain_fail_op(pr, c, op, err);
		iou_group_add(&g, i, r);
		if (r == IOU_JUDGED_CANCELLED && !cancelled_op)
			cancelled_op = op;
		if (r == IOU_JUDGED_DONE || r == IOU_JUDGED_DONE_CUT)
			op->complete = true;
		/* a sum moves no byte: counted as a request, not as bytes copied */
		if (r == IOU_JUDGED_DONE && op->kind == CHAIN_OP_BPF)
			atomic_fetch_add(&pr->env->status->bpf_ops, 1);
		if (r == IOU_JUDGED_DONE && op->kind == CHAIN_OP_BPF && !op->sum) {
			atomic_fetch_add(&pr->env->status->bpf_bytes, op->res);
			pr->bpf_bytes += op->res;
		}
	}
	if (iou_group_end(&g, c->group_end) == IOU_GROUP_CUT)
		return chain_fail(pr, c, cancelled_op, -ECANCELED,
				  "cancelled (the ring is going away?)");
	/* the rest of the chain: chain_submit() goes on from the first op not complete */
	return chain_submit(pr, c);
}

void chain_handle_cqe(struct pipeline_run *pr, uint64_t data, int res)
{
	int slot = iou_ud_slot(data), idx = iou_ud_op(data), ret;
	struct chain *c;

	if (slot >= pr->nr_chains)
		return;
	c = &pr->chains[slot];
	if (!c->busy || idx < c->next || idx >= c->group_end)
		return;
	c->ops[idx].res = res;
	if (c->skip_cqes)
		chain_fill_skipped(c, idx);
	if (--c->inflight > 0)
		return;
	ret = chain_group_done(pr, c);
	if (ret && c->busy) {
		pipeline_fail(pr, ret, "chain for the block at %" PRIu64 " could not continue: %s",
			      c->bp.logical_off, strerror(-ret));
		chain_release(pr, c);
	}
}
