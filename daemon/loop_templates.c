// SPDX-License-Identifier: MIT
/*
 * Block templates for the loop engine (see loop_templates.h and
 * bpf-ops/iou_loop.h). The chain is the bpf engine's: reads into the
 * slot's read area, IORING_OP_BPF requests whose descriptor pairs (FIXED,
 * or REG_VEC for scattered sides) bpf_build_shuffle() makes, and writes
 * from the slot's write area, all linked; a block whose writes all lie in
 * the read area (copy, mirror, concat, one stripe unit per member) skips
 * the shuffle and writes from there.
 */
#include <errno.h>
#include <string.h>

#include "engine_bpf.h"
#include "loop_templates.h"

void loop_plan_bounds(const struct plan *pl, int *max_ops, size_t *meta_size)
{
	int pairs, iovs, sqes;

	bpf_shuffle_bounds(pl, &pairs, &iovs, &sqes);
	*max_ops = pl->max_reads + sqes + pl->max_writes;
	*meta_size = (size_t)pairs * 2 * sizeof(struct io_bpf_buf_desc) +
		     (size_t)iovs * sizeof(struct iovec);
}

void loop_ctl_setup(struct iou_loop_ctl *ctl, const struct loop_ctl_params *p)
{
	memset(ctl, 0, sizeof(*ctl));
	ctl->magic = IOU_LOOP_MAGIC;
	ctl->nr_blocks = p->nr_blocks;
	ctl->nr_slots = p->nr_slots;
	ctl->tmpl_mask = p->nr_tmpl - 1;
	ctl->nr_dests = p->nr_dests;
	ctl->dest_file = p->dest_file;
	ctl->mon_fd = p->mon_fd;
	ctl->kick_fd = p->kick_fd;
	ctl->ckpt_blocks = p->ckpt_blocks ? p->ckpt_blocks : 1;
	ctl->ckpt_ns = p->ckpt_ns;
	/*
	 * A quarter of the templates consumed: time to write more; none when
	 * they were all written before the loop started.
	 */
	ctl->notify_blocks = p->nr_tmpl >= p->nr_blocks ? UINT64_MAX :
			     p->nr_tmpl / 4 ? p->nr_tmpl / 4 : 1;
	ctl->one = 1;
	ctl->tick_sec = p->tick_ns / 1000000000ULL;
	ctl->tick_nsec = p->tick_ns % 1000000000ULL;
	ctl->tick_addr = (uintptr_t)&ctl->tick_sec;
	ctl->one_addr = (uintptr_t)&ctl->one;
	ctl->last_fsync_ns = p->now_ns;
	ctl->cq_entries = p->cq_entries;
	ctl->cq_mask = p->cq_entries - 1;
	ctl->cq_head_off = p->cq_head_off;
	ctl->cq_tail_off = p->cq_tail_off;
	ctl->cqes_off = p->cqes_off;
	ctl->wait_batch = p->wait_batch ? p->wait_batch : 1;
	ctl->skip_cqes = p->skip_cqes;
}

uint32_t loop_cq_class(uint32_t want)
{
	static const uint32_t classes[] = {
		LOOP_CQ_CLASS0, LOOP_CQ_CLASS1, LOOP_CQ_CLASS2, LOOP_CQ_CLASS3,
	};

	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (want <= classes[i])
			return classes[i];
	return LOOP_CQ_CLASS3;
}

uint32_t loop_wait_batch(int nr_slots, int max_ops, bool skip_cqes)
{
	if (skip_cqes)
		max_ops = 1;
	/* a quarter of the queue: the rest keeps the device busy while we refill */
	uint64_t b = (uint64_t)nr_slots * (max_ops > 0 ? max_ops : 1) / 4;

	if (b < 1)
		b = 1;
	return b > LOOP_WAIT_MAX ? LOOP_WAIT_MAX : (uint32_t)b;
}

int loop_feed_init(struct loop_feed *f, const struct plan *pl, int nr_src,
		   const struct slot_bufs *slots, int nr_slots, uint32_t nr_tmpl,
		   uint8_t *meta, size_t meta_stride)
{
	int max_ops;
	size_t need;

	memset(f, 0, sizeof(*f));
	if (!nr_slots || nr_slots > LOOP_MAX_SLOTS || !nr_tmpl || nr_tmpl > LOOP_TMPL_MAX ||
	    (nr_tmpl & (nr_tmpl - 1)))
		return -EINVAL;
	loop_plan_bounds(pl, &max_ops, &need);
	if (max_ops > LOOP_MAX_OPS)
		return -E2BIG;
	if (need > meta_stride)
		return -EINVAL;
	f->pl = pl;
	f->nr_src = nr_src;
	f->op_id = bpf_op_id_for(pl);
	f->slots = slots;
	f->nr_slots = nr_slots;
	f->nr_tmpl = nr_tmpl;
	f->meta = meta;
	f->meta_stride = meta_stride;
	bpf_shuffle_bounds(pl, &f->max_pairs, &f->max_iovs, &f->max_sqes);
	return block_plan_alloc(pl, &f->bp);
}

void loop_feed_free(struct loop_feed *f)
{
	block_plan_free(&f->bp);
}

static struct iou_loop_op *add_op(struct iou_loop_tmpl *t)
{
	struct iou_loop_op *op;

	if (t->nr_ops >= LOOP_MAX_OPS)
		return NULL;
	op = &t->ops[t->nr_ops++];
	memset(op, 0, sizeof(*op));
	return op;
}

static int tmpl_add_io(struct iou_loop_tmpl *t, uint32_t kind, struct block_io io)
{
	struct iou_loop_op *op = add_op(t);

	if (!op)
		return -E2BIG;
	op->kind = kind;
	op->file = io.file;
	op->buf_index = io.buf_index;
	op->addr = (uintptr_t)io.buf;
	op->off = io.off;
	op->len = io.len;
	op->expect = io.expect;
	return 0;
}

int loop_tmpl_build(struct loop_feed *f, uint64_t block, struct iou_loop_tmpl *t)
{
	const struct slot_bufs *sb = &f->slots[block % f->nr_slots];
	uint8_t *meta = f->meta + (block & (f->nr_tmpl - 1)) * f->meta_stride;
	struct bpf_shuffle_sqe sqes[64];
	struct bpf_shuffle_layout lay;
	struct block_plan *bp = &f->bp;
	struct iou_loop_op *op;
	int ret, n;

	ret = plan_block(f->pl, block, bp);
	if (ret)
		return ret;
	t->block = block;
	t->nr_ops = 0;
	t->len = bp->len;
	for (int i = 0; i < bp->nr_reads; i++) {
		ret = tmpl_add_io(t, LOOP_OP_READ, block_read_io(bp, sb, i));
		if (ret)
			return ret;
	}

	if (bp->from_read)	/* every write goes out of the read area: no shuffle */
		goto writes;
	lay = (struct bpf_shuffle_layout){
		.rbuf = sb->rbuf, .rbuf_index = sb->rbuf_index,
		.wbuf = sb->wbuf, .wbuf_index = sb->wbuf_index,
		.descs = (struct io_bpf_buf_desc *)meta, .max_pairs = f->max_pairs,
		.iovs = (struct iovec *)(meta + (size_t)f->max_pairs * 2 *
					 sizeof(struct io_bpf_buf_desc)),
		.max_iovs = f->max_iovs,
	};
	n = bpf_build_shuffle(f->pl, bp, &lay, sqes, f->max_sqes < 64 ? f->max_sqes : 64);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		op = add_op(t);
		if (!op)
			return -E2BIG;
		op->kind = LOOP_OP_BPF;
		op->addr = sqes[i].desc_addr;
		op->len = sqes[i].nr_pairs;
		op->off = sqes[i].expect;
		op->expect = sqes[i].expect;
		op->op_flags = iou_bpf_op_flags(f->op_id, 0);
	}
writes:
	for (int i = 0; i < bp->nr_writes; i++) {
		ret = tmpl_add_io(t, LOOP_OP_WRITE,
				  block_write_io(bp, sb, f->nr_src, bp->from_read, i));
		if (ret)
			return ret;
	}
	return 0;
}

int64_t loop_feed_fill(struct loop_feed *f, struct iou_loop_ctl *ctl)
{
	uint64_t w = __atomic_load_n(&ctl->watermark, __ATOMIC_ACQUIRE);
	uint64_t filled = __atomic_load_n(&ctl->filled, __ATOMIC_RELAXED);
	uint64_t limit = w + f->nr_tmpl;
	int64_t n = 0;
	int ret;

	if (limit > ctl->nr_blocks)
		limit = ctl->nr_blocks;
	for (; filled < limit; filled++, n++) {
		ret = loop_tmpl_build(f, filled, &ctl->tmpl[filled & (f->nr_tmpl - 1)]);
		if (ret)
			return ret;
	}
	/* the templates, then filled: the program reads them in that order */
	if (n)
		__atomic_store_n(&ctl->filled, filled, __ATOMIC_RELEASE);
	return n;
}
