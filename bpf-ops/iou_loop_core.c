// SPDX-License-Identifier: MIT
/*
 * The pieces of a loop step (iou_loop_core.h says what a step is): built by
 * clang -target bpf into the loop_step program (iou_loop.bpf.c includes
 * it) and by the host compiler into tests/unit's model.
 */
#include "iou_loop_core.h"

/*
 * Request @o of the chain in slot @s, from where it stopped, linked to the
 * next one if @link. 0, or -1 when the SQ is full. (The caller says @link:
 * computed here from @o, 6.12's verifier can lose the bounds of @o through
 * the compare of o + 1.)
 */
LOOP_FN int loop_put_op(struct iou_loop_ctl *ctl, struct iou_loop_sq *sq, __u32 s, __u32 o,
			__u32 link)
{
	struct iou_loop_slot *sl;
	struct iou_loop_tmpl *t;
	struct iou_loop_op *op;
	struct io_uring_sqe *sqe;
	__u32 done;
	__u8 kind;

	if (!ctl || !sq)
		return -1;
	s &= LOOP_SLOT_MASK;
	o &= LOOP_OP_MASK;
	sl = &ctl->slots[s];
	t = loop_tmpl_of(ctl, LOOP_READ(sl->block));
	op = &t->ops[o];
	done = sl->ops[o].done;
	kind = op->kind;
	sqe = loop_sqe(ctl, sq);
	if (!sqe)
		return -1;
	sqe->user_data = iou_ud(IOU_TAG_CHAIN, s, o);
	sqe->flags = link ? LOOP_SQE_IO_LINK : 0;
	if (link && LOOP_READ(ctl->skip_cqes))
		sqe->flags |= LOOP_SQE_CQE_SKIP;
	if (kind == LOOP_OP_BPF) {
		sqe->opcode = LOOP_OPC_BPF;
		sqe->fd = -1;
		sqe->addr = op->addr;
		sqe->len = op->len;
		sqe->off = op->off;
		sqe->rw_flags = op->op_flags;
	} else {
		sqe->opcode = kind == LOOP_OP_READ ? LOOP_OPC_READ_FIXED : LOOP_OPC_WRITE_FIXED;
		sqe->flags |= LOOP_SQE_FIXED_FILE;
		sqe->fd = op->file;
		sqe->addr = op->addr + done;
		sqe->len = op->len - done;
		sqe->off = op->off + done;
		sqe->buf_index = op->buf_index;
	}
	sl->ops[o].res = 0;
	return 0;
}

/* submit requests next..nr_ops-1 of slot @s as one linked group; 0 or -1 */
LOOP_FN int loop_put_group(struct iou_loop_ctl *ctl, struct iou_loop_sq *sq, __u32 s)
{
	struct iou_loop_slot *sl;
	__u32 next, n;
	int o;

	if (!ctl || !sq)
		return -1;
	sl = &ctl->slots[s & LOOP_SLOT_MASK];
	next = LOOP_READ(sl->next);
	n = LOOP_READ(sl->nr_ops);
	if (n > LOOP_MAX_OPS || next >= n)
		return -1;
	LOOP_FOR(o, next, n) {
		if (loop_put_op(ctl, sq, s, o, o + 1 < n))
			return -1;
	}
	/*
	 * each request posts one CQE, also when it fails or is cancelled; with
	 * CQE skipping the group posts one (see loop_fill_skipped())
	 */
	n = LOOP_READ(ctl->skip_cqes) ? 1 : n - next;
	LOOP_WRITE(sl->inflight, n);
	LOOP_WRITE(ctl->cqes_pending, LOOP_READ(ctl->cqes_pending) + n);
	return 0;
}

/* ---- reap ---- */

/* a CQE the books expected has come: one fewer to wait for */
LOOP_INLINE void loop_cqe_came(struct iou_loop_ctl *ctl)
{
	__u64 p = LOOP_READ(ctl->cqes_pending);

	LOOP_WRITE(ctl->cqes_pending, p ? p - 1 : 0);
}

/*
 * The group of slot @s posted one CQE, for request @o (CQE skipping): what
 * the others' would have said, by iou_chain_skipped_res(), the rule the
 * daemon's chain_fill_skipped() uses too.
 */
LOOP_INLINE void loop_fill_skipped(struct iou_loop_ctl *ctl, __u32 s, __u32 o)
{
	struct iou_loop_slot *sl = &ctl->slots[s & LOOP_SLOT_MASK];
	struct iou_loop_tmpl *t = loop_tmpl_of(ctl, LOOP_READ(sl->block));
	__u32 n = LOOP_READ(sl->nr_ops);
	int i;

	if (n > LOOP_MAX_OPS)
		return;
	LOOP_FOR(i, LOOP_READ(sl->next), n) {
		struct iou_loop_slot_op *so = &sl->ops[i & LOOP_OP_MASK];
		struct iou_loop_op *op = &t->ops[i & LOOP_OP_MASK];

		so->res = iou_chain_skipped_res(op->kind, i, o, op->expect, op->len, so->done,
						so->res);
	}
}

/* one CQE: ud, and res | flags << 32 */
LOOP_FN int loop_on_cqe(struct iou_loop_ctl *ctl, __u64 ud, __u64 res_flags)
{
	__s32 res = (__s32)(__u32)res_flags;
	__u32 flags = res_flags >> 32;
	__u32 tag = iou_ud_tag(ud);

	if (!ctl)
		return 0;
	ctl->cqes++;
	if (tag == IOU_TAG_CHAIN) {
		__u32 s = iou_ud_slot(ud) & LOOP_SLOT_MASK, o = iou_ud_op(ud) & LOOP_OP_MASK;
		struct iou_loop_slot *sl = &ctl->slots[s];
		__u32 left = LOOP_READ(sl->inflight);

		if (!LOOP_READ(sl->busy) || !left || o < LOOP_READ(sl->next) ||
		    o >= LOOP_READ(sl->nr_ops)) {
			ctl->strays++;
			return 0;
		}
		loop_cqe_came(ctl);
		sl->ops[o].res = res;
		if (LOOP_READ(ctl->skip_cqes))
			loop_fill_skipped(ctl, s, o);
		LOOP_WRITE(sl->inflight, left - 1);
		if (left == 1) {
			__u32 tail = LOOP_READ(ctl->evalq_tail);

			ctl->evalq[tail & LOOP_SLOT_MASK] = s;
			LOOP_WRITE(ctl->evalq_tail, tail + 1);
		}
		return 0;
	}
	if (tag == IOU_TAG_TIMER) {
		ctl->ticks++;
		if (!(flags & LOOP_CQE_F_MORE))
			LOOP_WRITE(ctl->timer_armed, 0);
		return 0;
	}
	if (tag == IOU_TAG_KICK) {
		ctl->kicks++;
		if (!(flags & LOOP_CQE_F_MORE))
			LOOP_WRITE(ctl->kick_armed, 0);
		return 0;
	}
	if (tag == IOU_TAG_FSYNC) {
		__u32 left = LOOP_READ(ctl->fsyncs);

		if (!left) {
			ctl->strays++;
			return 0;
		}
		loop_cqe_came(ctl);
		if (res < 0)
			loop_fail(ctl, LOOP_OP_FSYNC, res, LOOP_READ(ctl->fsync_at), 0,
				  iou_ud_op(ud), 0, 0, 0);
		LOOP_WRITE(ctl->fsyncs, left - 1);
		if (left == 1 && LOOP_READ(ctl->state) != LOOP_FAILED) {
			LOOP_WRITE(ctl->durable, LOOP_READ(ctl->fsync_at));
			LOOP_WRITE(ctl->durable_seq, LOOP_READ(ctl->durable_seq) + 1);
		}
		return 0;
	}
	if (tag == IOU_TAG_NOTIFY) {
		if (LOOP_READ(ctl->notify_inflight))
			loop_cqe_came(ctl);
		LOOP_WRITE(ctl->notify_inflight, 0);
		return 0;
	}
	ctl->strays++;
	return 0;
}

/* ---- judge ---- */

/* request @o of slot @s has its CQE: IOU_JUDGED_*, or -1 (failure recorded) */
LOOP_FN int loop_judge(struct iou_loop_ctl *ctl, __u32 s, __u32 o)
{
	struct iou_loop_slot_op *so;
	struct iou_loop_slot *sl;
	struct iou_loop_tmpl *t;
	struct iou_loop_op *op;
	__u64 block;
	__s32 res, err = 0;
	int r;

	if (!ctl)
		return -1;
	s &= LOOP_SLOT_MASK;
	o &= LOOP_OP_MASK;
	sl = &ctl->slots[s];
	block = LOOP_READ(sl->block);
	t = loop_tmpl_of(ctl, block);
	op = &t->ops[o];
	so = &sl->ops[o];
	res = so->res;
	r = iou_chain_judge(op->kind, res, op->len, op->expect, &so->done, &err);
	if (r == IOU_JUDGED_FAILED) {
		if (op->kind == LOOP_OP_BPF && res >= 0)	/* copied too little */
			loop_fail(ctl, LOOP_OP_BPF, err, block, o, 0, 0, op->expect,
				  (__u32)res);
		else
			loop_fail(ctl, op->kind, err, block, o, op->file, op->off + so->done,
				  op->len - so->done, so->done);
		return -1;
	}
	if (op->kind == LOOP_OP_BPF && r == IOU_JUDGED_DONE) {
		ctl->bpf_ops++;
		ctl->bpf_bytes += res;
	}
	return r;
}

/*
 * Judge the next chain whose group has completed, like the daemon's
 * generic driver: an error fails the pipeline, a short transfer resubmits
 * the rest of the chain from where it stopped, all done frees the slot.
 * 1: judged, 0: none left (or no SQ room for a resubmission: it stays
 * queued), -1: failed.
 */
LOOP_FN int loop_eval(struct iou_loop_ctl *ctl, struct iou_loop_sq *sq)
{
	__u32 head, s, next, n, first;
	struct iou_loop_slot *sl;
	int o, r;

	if (!ctl || !sq)
		return 0;
	head = LOOP_READ(ctl->evalq_head);
	if (head == LOOP_READ(ctl->evalq_tail))
		return 0;
	s = ctl->evalq[head & LOOP_SLOT_MASK] & LOOP_SLOT_MASK;
	sl = &ctl->slots[s];
	next = LOOP_READ(sl->next);
	n = LOOP_READ(sl->nr_ops);
	/* a resubmission needs room; judge it next step otherwise */
	if (n > LOOP_MAX_OPS || next >= n)
		return 0;
	if (n - next + LOOP_SQ_RESERVE > loop_sq_room(ctl))
		return 0;
	LOOP_WRITE(ctl->evalq_head, head + 1);
	iou_group_begin(&ctl->ev, n);

	LOOP_FOR(o, next, n) {
		r = loop_judge(ctl, s, o);
		if (r < 0)
			return -1;
		iou_group_add(&ctl->ev, o, r);
	}
	first = LOOP_READ(ctl->ev.first);
	/* the link was cut: fine after a short transfer, an error otherwise */
	if (iou_group_end(&ctl->ev, n) == IOU_GROUP_CUT) {
		struct iou_loop_op *op;

		op = &loop_tmpl_of(ctl, LOOP_READ(sl->block))->ops[first & LOOP_OP_MASK];
		loop_fail(ctl, op->kind, -IOU_ECANCELED, LOOP_READ(sl->block), first, op->file,
			  op->off, op->len, 0);
		return -1;
	}
	if (first >= n) {
		/* every request done: the block is finished */
		LOOP_WRITE(sl->busy, 0);
		return 1;
	}
	/* the rest of the chain, from the first request not done */
	ctl->retries++;
	LOOP_WRITE(sl->next, first);
	if (loop_put_group(ctl, sq, s)) {
		loop_fail(ctl, LOOP_OP_SUBMIT, -IOU_EAGAIN, LOOP_READ(sl->block), first, 0, 0, 0, 0);
		return -1;
	}
	return 1;
}

/* ---- advance ---- */

LOOP_FN int loop_advance(struct iou_loop_ctl *ctl)
{
	int i;

	if (!ctl)
		return 0;
	LOOP_FOR(i, 0, LOOP_ADVANCE_MAX) {
		__u64 w = LOOP_READ(ctl->watermark);
		struct iou_loop_slot *sl;

		if (w >= LOOP_READ(ctl->next_block))
			break;
		sl = &ctl->slots[loop_slot_of(ctl, w)];
		if (LOOP_READ(sl->busy) && LOOP_READ(sl->block) == w)
			break;
		LOOP_WRITE(ctl->watermark, w + 1);
	}
	return 0;
}

/* ---- keep: timer, kick poll, checkpoint fsyncs, monitor wakeups ---- */

LOOP_FN int loop_keep(struct iou_loop_ctl *ctl, struct iou_loop_sq *sq, __u64 now)
{
	struct io_uring_sqe *sqe;
	__u64 w;
	__u32 nd;
	int d;

	if (!ctl || !sq)
		return 0;
	if (!LOOP_READ(ctl->timer_armed)) {
		sqe = loop_sqe(ctl, sq);
		if (sqe) {
			sqe->opcode = LOOP_OPC_TIMEOUT;
			sqe->fd = -1;
			sqe->addr = ctl->tick_addr;
			sqe->len = 1;
			sqe->off = 0;		/* fire forever */
			sqe->rw_flags = LOOP_TIMEOUT_MULTISHOT;
			sqe->user_data = iou_ud(IOU_TAG_TIMER, 0, 0);
			LOOP_WRITE(ctl->timer_armed, 1);
		}
	}
	if (!LOOP_READ(ctl->kick_armed) && ctl->kick_fd >= 0) {
		sqe = loop_sqe(ctl, sq);
		if (sqe) {
			sqe->opcode = LOOP_OPC_POLL_ADD;
			sqe->fd = ctl->kick_fd;
			sqe->len = LOOP_POLL_ADD_MULTI;
			sqe->rw_flags = LOOP_POLLIN;
			sqe->user_data = iou_ud(IOU_TAG_KICK, 0, 0);
			LOOP_WRITE(ctl->kick_armed, 1);
		}
	}

	/* a checkpoint: everything below w has completed, flush it */
	w = LOOP_READ(ctl->watermark);
	nd = LOOP_READ(ctl->nr_dests);
	if (!LOOP_READ(ctl->fsyncs) && LOOP_READ(ctl->cmd) == LOOP_CMD_RUN &&
	    w > LOOP_READ(ctl->fsync_at) && w < LOOP_READ(ctl->nr_blocks) &&
	    nd && nd <= LOOP_MAX_DESTS && loop_sq_room(ctl) >= nd &&
	    (w - LOOP_READ(ctl->fsync_at) >= ctl->ckpt_blocks ||
	     now - LOOP_READ(ctl->last_fsync_ns) >= ctl->ckpt_ns)) {
		/* none in flight (checked above): count those put */
		LOOP_FOR(d, 0, nd) {
			sqe = loop_sqe(ctl, sq);
			if (!sqe)
				break;
			sqe->opcode = LOOP_OPC_FSYNC;
			sqe->flags = LOOP_SQE_FIXED_FILE;
			sqe->fd = ctl->dest_file + d;
			sqe->rw_flags = LOOP_FSYNC_DATASYNC;
			sqe->user_data = iou_ud(IOU_TAG_FSYNC, 0, d);
			LOOP_WRITE(ctl->fsyncs, LOOP_READ(ctl->fsyncs) + 1);
			LOOP_WRITE(ctl->cqes_pending, LOOP_READ(ctl->cqes_pending) + 1);
		}
		LOOP_WRITE(ctl->fsync_at, w);
		LOOP_WRITE(ctl->last_fsync_ns, now);
		ctl->fsync_rounds++;
	}

	/* the monitor: templates to write, or a checkpoint to record */
	if (!LOOP_READ(ctl->notify_inflight) && ctl->mon_fd >= 0 &&
	    (w - LOOP_READ(ctl->notified) >= ctl->notify_blocks ||
	     LOOP_READ(ctl->durable_seq) != LOOP_READ(ctl->notified_seq) ||
	     (LOOP_READ(ctl->starved) && !LOOP_READ(ctl->starve_notified)))) {
		sqe = loop_sqe(ctl, sq);
		if (sqe) {
			sqe->opcode = LOOP_OPC_WRITE;
			sqe->fd = ctl->mon_fd;
			sqe->addr = ctl->one_addr;
			sqe->len = 8;
			sqe->user_data = iou_ud(IOU_TAG_NOTIFY, 0, 0);
			LOOP_WRITE(ctl->notify_inflight, 1);
			LOOP_WRITE(ctl->cqes_pending, LOOP_READ(ctl->cqes_pending) + 1);
			LOOP_WRITE(ctl->notified, w);
			LOOP_WRITE(ctl->notified_seq, LOOP_READ(ctl->durable_seq));
			LOOP_WRITE(ctl->starve_notified, LOOP_READ(ctl->starved));
		}
	}
	return 0;
}

/* ---- start ---- */

/* start the next block: 1 started, 0 not now (slot busy, no template, no room), -1 failed */
LOOP_FN int loop_start(struct iou_loop_ctl *ctl, struct iou_loop_sq *sq)
{
	__u64 b, filled;
	struct iou_loop_slot *sl;
	struct iou_loop_tmpl *t;
	__u32 s, n;

	if (!ctl || !sq)
		return 0;
	b = LOOP_READ(ctl->next_block);
	if (b >= LOOP_READ(ctl->nr_blocks))
		return 0;
	filled = LOOP_READ(ctl->filled);
	LOOP_BARRIER();		/* the template is read after filled */
	if (b >= filled) {
		LOOP_WRITE(ctl->starved, 1);
		return 0;
	}
	LOOP_WRITE(ctl->starved, 0);
	LOOP_WRITE(ctl->starve_notified, 0);
	/*
	 * What a crash may cost is bounded, as for the other engines: about a
	 * queue depth of blocks plus checkpoint_interval past the last flush.
	 * The flush that moves durable is a CQE away, and wakes us.
	 */
	if (b + 1 > LOOP_READ(ctl->durable) + ctl->ckpt_blocks + LOOP_READ(ctl->nr_slots))
		return 0;
	s = loop_slot_of(ctl, b);
	sl = &ctl->slots[s];
	if (LOOP_READ(sl->busy))
		return 0;
	t = loop_tmpl_of(ctl, b);
	n = LOOP_READ(t->nr_ops);
	if (LOOP_READ(t->block) != b || !n || n > LOOP_MAX_OPS) {
		loop_fail(ctl, LOOP_OP_PLAN, -IOU_EPROTO, b, n, 0, t->block, 0, 0);
		return -1;
	}
	if (n + LOOP_SQ_RESERVE > loop_sq_room(ctl))
		return 0;
	LOOP_WRITE(sl->block, b);
	LOOP_WRITE(sl->nr_ops, n);
	LOOP_WRITE(sl->next, 0);
	__builtin_memset(sl->ops, 0, sizeof(sl->ops));
	LOOP_WRITE(sl->busy, 1);
	if (loop_put_group(ctl, sq, s)) {
		loop_fail(ctl, LOOP_OP_SUBMIT, -IOU_EAGAIN, b, 0, 0, 0, 0, 0);
		return -1;
	}
	LOOP_WRITE(ctl->next_block, b + 1);
	return 1;
}

LOOP_FN int loop_step_body(struct iou_loop_ctl *ctl, struct iou_loop_sq *sq, __u64 now)
{
	int i, r;

	if (!ctl || !sq)
		return -1;
	LOOP_FOR(i, 0, LOOP_EVAL_MAX) {
		r = loop_eval(ctl, sq);
		if (r < 0)
			return -1;
		if (r == 0)
			break;
	}
	if (LOOP_READ(ctl->evalq_head) != LOOP_READ(ctl->evalq_tail))
		LOOP_WRITE(ctl->more, 1);
	loop_advance(ctl);
	if (LOOP_READ(ctl->watermark) >= LOOP_READ(ctl->nr_blocks)) {
		LOOP_WRITE(ctl->state, LOOP_DONE);
		return -1;
	}
	if (LOOP_READ(ctl->cmd) == LOOP_CMD_DRAIN &&
	    LOOP_READ(ctl->watermark) == LOOP_READ(ctl->next_block) &&
	    LOOP_READ(ctl->evalq_head) == LOOP_READ(ctl->evalq_tail)) {
		LOOP_WRITE(ctl->state, LOOP_DRAINED);
		return -1;
	}
	loop_keep(ctl, sq, now);
	if (LOOP_READ(ctl->cmd) == LOOP_CMD_RUN) {
		/* as many new blocks as there are free slots and SQEs: the refill is one step */
		LOOP_WRITE(ctl->started, 0);
		LOOP_FOR(i, 0, LOOP_START_MAX) {
			r = loop_start(ctl, sq);
			if (r < 0)
				return -1;
			if (r == 0)
				break;
			LOOP_WRITE(ctl->started, LOOP_READ(ctl->started) + 1);
		}
		if (LOOP_READ(ctl->started) == LOOP_START_MAX)
			LOOP_WRITE(ctl->more, 1);
	}
	return 0;
}
