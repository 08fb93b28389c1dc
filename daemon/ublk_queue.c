// SPDX-License-Identifier: MIT
/*
 * One ublk queue: a thread with its own io_uring ring that carries both the
 * ublk I/O commands (FETCH_REQ, COMMIT_AND_FETCH_REQ on /dev/ublkcN) and
 * the backing requests. ublk wants every command of a queue from one task,
 * which SINGLE_ISSUER makes explicit.
 *
 * Copying: each tag's buffer is a slice of one registered area, and its
 * address is what FETCH_REQ names: the driver copies a write's data into it
 * before the fetch completes, and a read's data out of it after the commit.
 * Zero copy: the ring has a sparse buffer table, and the request's own
 * pages are buffer number tag there, put by the driver (AUTO_BUF_REG: the
 * index rides in the sqe->addr of each fetch) or by the queue
 * (REGISTER_IO_BUF, taken out again before the commit). Either way the
 * buffer goes to the members with READ_FIXED / WRITE_FIXED at offsets into
 * it, cut by the layout (ublk_map.c); a completion is judged by the chain
 * core's rules (iou_chain.h): a short transfer resubmits the rest, a read
 * that finds nothing (a member that shrank) fails the request, so a reader
 * never gets bytes no member gave it.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <poll.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bpf_desc.h"
#include "checksum.h"
#include "bpf_loader.h"
#include "log.h"
#include "ublk_gather.h"
#include "ublk_queue.h"
#include "ublk_sums.h"
#include "../bpf-ops/iou_chain.h"
#include "../bpf-ops/iou_ops.h"

struct ublk_tag {
	uint64_t off;		/* of the request on the device */
	bool busy;		/* between the fetch and the commit */
	bool deferred;		/* a write into the resync window, held back */
	bool counted;		/* a write the window waits for (q->win_busy) */
	int nr;			/* pieces */
	int pending;		/* of them in flight */
	int ok;			/* pieces done */
	int err;		/* first error, -errno */
	uint32_t len;
	uint8_t op;
	bool fua;		/* a write with UBLK_IO_F_FUA */
	int nr_units;		/* gather: per-unit pieces in q->units */
	uint32_t staged;	/* gather: bytes that go through staging */
	uint32_t expect;	/* the IORING_OP_BPF gather in flight must copy this */
	bool reg;		/* its pages registered by the queue: unregister at the end */
	uint64_t sum_first;	/* integrity: the first whole block the request covers */
	uint32_t nr_sums;	/* ... how many */
	uint32_t sums_pending;	/* their IORING_OP_BPF requests in flight */
	int sum_err;		/* the first that failed */
	bool marked;		/* integrity: a write its regions are dirty for */
	bool flushing;		/* integrity: a flush that made the sums durable (flush_gen) */
	uint32_t flush_gen;
	uint8_t rereads;	/* a read that disagreed while a write into it was in flight */
	int bad_leg;		/* mirror: the leg whose blocks disagreed, -1: none */
	uint32_t nr_bad;	/* ... how many (q->bad: which) */
};

/* writes and discards change what a member holds */
static bool q_changes(const struct ublk_tag *t)
{
	return t->op == UBLK_IO_OP_WRITE || t->op == UBLK_IO_OP_DISCARD;
}

/* copying: the tag buffer, at the start of its slot; zero copy has none */
static char *tag_buf(const struct ublk_queue *q, unsigned int tag)
{
	return (char *)q->mem.base + (size_t)tag * q->slot_size;
}

/* gather: the staging buffer after the tag buffer, then the descriptors */
static char *tag_stage(const struct ublk_queue *q, unsigned int tag)
{
	return tag_buf(q, tag) + (q->zc ? 0 : q->buf_size);
}

/* the gather's descriptors and iovecs, after staging */
static char *tag_meta(const struct ublk_queue *q, unsigned int tag, size_t *len)
{
	char *meta = tag_stage(q, tag) + q->buf_size;

	*len = tag_buf(q, tag) + q->slot_size - meta;
	return meta;
}

static struct io_uring_sqe *q_sqe(struct ublk_queue *q)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring.uring);

	if (!sqe) {
		/* the SQ is full: hand what is queued to the kernel */
		io_uring_submit(&q->ring.uring);
		sqe = io_uring_get_sqe(&q->ring.uring);
	}
	if (sqe)
		memset(sqe, 0, sizeof(*sqe));
	return sqe;
}

/* a uring_cmd on /dev/ublkcN for @tag: @addr in the command, @ud its CQE's */
static struct io_uring_sqe *q_uring_cmd(struct ublk_queue *q, unsigned int tag, uint32_t op,
					int result, uint64_t addr, uint64_t ud)
{
	struct io_uring_sqe *sqe = q_sqe(q);
	struct ublksrv_io_cmd *cmd;

	if (!sqe)
		return NULL;
	sqe->opcode = IORING_OP_URING_CMD;
	/*
	 * registered file 0: /dev/ublkcN, no fget per command; on zero copy too
	 * since the series' 0021 lets a kernel buffer go at its unregistration
	 * (each request holds its own reference), not when every older
	 * resource node is unpinned, which a waiting fetch never is
	 */
	sqe->fd = 0;
	sqe->flags = IOSQE_FIXED_FILE;
	sqe->cmd_op = op;
	cmd = (struct ublksrv_io_cmd *)sqe->cmd;
	cmd->q_id = q->q_id;
	cmd->tag = tag;
	cmd->result = result;
	cmd->addr = addr;
	io_uring_sqe_set_data64(sqe, ud);
	return sqe;
}

/* FETCH or COMMIT_AND_FETCH: the tag buffer's address, or none with zero copy */
static int q_cmd(struct ublk_queue *q, unsigned int tag, uint32_t op, int result)
{
	struct io_uring_sqe *sqe = q_uring_cmd(q, tag, op, result,
					       q->zc ? 0 : (uintptr_t)tag_buf(q, tag),
					       iou_ud(IOU_TAG_UBLK_CMD, tag, 0));

	if (!sqe)
		return -EBUSY;
	/*
	 * AUTO_BUF_REG: the next request of this tag goes to buffer @tag;
	 * should that fail, the request comes with UBLK_IO_F_NEED_REG_BUF
	 * and is registered by hand (q_request)
	 */
	if (q->zc == UBLK_ZC_AUTO)
		sqe->addr = tag | (uint64_t)UBLK_AUTO_BUF_REG_FALLBACK << 16;
	q->cmds++;
	return 0;
}

/* REGISTER_IO_BUF / UNREGISTER_IO_BUF: the request's pages as buffer @tag */
static int q_buf_cmd(struct ublk_queue *q, unsigned int tag, bool reg)
{
	if (!q_uring_cmd(q, tag, reg ? UBLK_U_IO_REGISTER_IO_BUF : UBLK_U_IO_UNREGISTER_IO_BUF,
			 0, tag, iou_ud(reg ? IOU_TAG_UBLK_REG : IOU_TAG_UBLK_UNREG, tag, 0)))
		return -EBUSY;
	q->backing++;
	return 0;
}

static void q_complete(struct ublk_queue *q, unsigned int tag, int res)
{
	struct ublk_stats *st = &q->dev->stats;
	struct ublk_tag *t = &q->tags[tag];

	if (t->counted && --q->win_busy == 0)
		atomic_store(&q->win_ack, q->win_seen);
	t->counted = t->busy = false;
	/* a write that failed leaves its blocks unknown, its regions dirty until the next start */
	if (t->marked)
		ublk_sums_write_end(q->dev, t->off, t->len, res >= 0);
	if (t->flushing && res >= 0)
		ublk_sums_flush_end(q->dev, t->flush_gen);
	t->marked = t->flushing = false;
	if (res < 0)
		atomic_fetch_add(&st->errors, 1);
	else if (t->op == UBLK_IO_OP_READ)
		atomic_fetch_add(&st->bytes_read, res);
	else if (t->op == UBLK_IO_OP_WRITE)
		atomic_fetch_add(&st->bytes_written, res);
	/* the driver copied a write in before the fetch, and copies a read out now */
	if (!q->zc && res > 0 && (t->op == UBLK_IO_OP_READ || t->op == UBLK_IO_OP_WRITE))
		atomic_fetch_add(&st->driver_copied, res);
	atomic_fetch_sub(&st->in_flight, 1);
	/* pages the queue registered are let go before the request completes */
	if (t->reg && q_buf_cmd(q, tag, false))
		log_err("device %s: queue %d: no SQE to unregister tag %u", q->dev->cfg.name,
			q->q_id, tag);
	t->reg = false;
	if (q_cmd(q, tag, UBLK_U_IO_COMMIT_AND_FETCH_REQ, res))
		log_err("device %s: queue %d: no SQE to commit tag %u", q->dev->cfg.name,
			q->q_id, tag);
}

static void q_piece_submit(struct ublk_queue *q, unsigned int tag, int i)
{
	struct ublk_piece *p = &q->pieces[tag * q->max_pieces + i];
	uint32_t done = q->done[tag * q->max_pieces + i];
	struct io_uring_sqe *sqe = q_sqe(q);
	int fi = p->member + 1;		/* registered files: 0 is /dev/ublkcN */
	/* zero copy: buffer @tag is the request's pages, addressed by offset */
	char *buf = p->staged ? tag_stage(q, tag) + p->buf_off + done :
		    q->zc ? (char *)(uintptr_t)(p->buf_off + done) :
		    tag_buf(q, tag) + p->buf_off + done;
	/* zero copy: the staging area is the slot after the requests' */
	int index = !q->zc ? 0 : p->staged ? (int)q->depth : (int)tag;

	switch (q->tags[tag].op) {
	case UBLK_IO_OP_READ:
		io_uring_prep_read_fixed(sqe, fi, buf, p->len - done, p->off + done, index);
		break;
	case UBLK_IO_OP_WRITE:
		io_uring_prep_write_fixed(sqe, fi, buf, p->len - done, p->off + done, index);
		/* FUA: durable when it completes, on every member it goes to */
		if (q->tags[tag].fua)
			sqe->rw_flags |= RWF_DSYNC;
		break;
	case UBLK_IO_OP_DISCARD:
		if (q->dev->member_bdev[p->member]) {
			sqe->opcode = IORING_OP_URING_CMD;
			sqe->fd = fi;
			sqe->cmd_op = BLOCK_URING_CMD_DISCARD;
			sqe->addr = p->off;
			sqe->addr3 = p->len;
		} else {
			io_uring_prep_fallocate(sqe, fi, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
						p->off, p->len);
		}
		break;
	default:	/* flush: each member's cache to stable storage */
		io_uring_prep_fsync(sqe, fi, IORING_FSYNC_DATASYNC);
		break;
	}
	sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data64(sqe, iou_ud(IOU_TAG_CHAIN, tag, i));
	q->backing++;
}

/* mirror: the member reads go to, by the read policy; -1 if none is healthy */
static void q_member_failed(struct ublk_queue *q, int m, int err)
{
	struct ublk_dev *d = q->dev;
	bool syncing = atomic_load(&d->mirror.syncing[m]);

	/* durably stale before this write, or any after it, is acknowledged */
	if (d->cfg.target == TARGET_MIRROR)
		ublk_mirror_member_failed(d, m);
	if (!atomic_exchange(&d->member_failed[m], true) || syncing)
		log_err("device %s: member %s failed (%s); %s", d->cfg.name, d->cfg.backing[m],
			strerror(-err), d->cfg.target == TARGET_MIRROR ?
			"serving from the others, degraded" : "requests on it fail");
}

/* the pieces of a request: the layout's, minus failed mirror members */
static int q_map(struct ublk_queue *q, unsigned int tag, uint64_t off)
{
	struct ublk_dev *d = q->dev;
	struct ublk_tag *t = &q->tags[tag];
	struct ublk_piece *p = &q->pieces[tag * q->max_pieces];
	bool mirror = d->layout.target == TARGET_MIRROR;
	int n, k = 0;

	if (t->op == UBLK_IO_OP_FLUSH) {
		/* a member being resynced too: it holds acknowledged writes */
		for (int m = 0; m < d->layout.nr; m++)
			if (!mirror || !atomic_load(&d->member_failed[m]) ||
			    atomic_load(&d->mirror.syncing[m]))
				p[k++] = (struct ublk_piece){ .member = m };
		return k;
	}
	if (t->len > q->buf_size)
		return -EINVAL;
	n = ublk_map(&d->layout, q_changes(t), mirror ? ublk_mirror_read_leg(d, &q->rr) : 0,
		     off, t->len, p, q->max_pieces);
	if (n <= 0 || !mirror || !q_changes(t))
		return n;
	/* a member being resynced takes the writes below the copy, which has passed them */
	for (int i = 0; i < n; i++)
		if (!atomic_load(&d->member_failed[p[i].member]) ||
		    (atomic_load(&d->mirror.syncing[p[i].member]) &&
		     off + t->len <= atomic_load(&d->mirror.sync_pos)))
			p[k++] = p[i];
	return k;
}

/*
 * The gather's copy between the units in the tag buffer (zero copy: the
 * request's pages) and staging: an IORING_OP_BPF request or memcpy() right
 * here. True when the request goes on elsewhere: the CQE, or failed here
 * (zero copy cannot copy in userspace).
 */
static bool q_shuffle(struct ublk_queue *q, unsigned int tag, bool to_stage)
{
	struct ublk_tag *t = &q->tags[tag];
	struct ublk_piece *u = &q->units[tag * q->max_pieces];
	struct ublk_stats *st = &q->dev->stats;
	struct ublk_shuffle sh;
	struct io_uring_sqe *sqe;
	size_t meta_len;
	char *meta = tag_meta(q, tag, &meta_len);

	if (q->bpf && !ublk_gather_descs(u, t->nr_units, q->zc ? NULL : tag_buf(q, tag),
					 q->zc ? tag : 0, tag_stage(q, tag),
					 q->zc ? q->depth : 0, meta, meta_len, to_stage, &sh) &&
	    (sqe = q_sqe(q))) {
		io_uring_prep_rw(IOU_OP_BPF, sqe, -1, (void *)(uintptr_t)sh.desc_addr,
				 sh.nr_pairs, sh.expect);
		iou_sqe_bpf_op_flags(sqe) = iou_bpf_op_flags(IOU_OP_ID_STRIPE, 0);
		io_uring_sqe_set_data64(sqe, iou_ud(IOU_TAG_UBLK_SHUFFLE, tag, 0));
		t->expect = sh.expect;
		q->backing++;
		return true;
	}
	if (q->zc) {
		log_err("device %s: queue %d tag %u: no IORING_OP_BPF for the gather",
			q->dev->cfg.name, q->q_id, tag);
		q_complete(q, tag, -EIO);
		return true;
	}
	atomic_fetch_add(&st->user_copied,
			 ublk_gather_memcpy(u, t->nr_units, tag_buf(q, tag), tag_stage(q, tag),
					    to_stage));
	return false;
}

static void q_submit_pieces(struct ublk_queue *q, unsigned int tag)
{
	for (int i = 0; i < q->tags[tag].nr; i++)
		q_piece_submit(q, tag, i);
}

/*
 * integrity = crc32c: one IORING_OP_BPF per 4 KiB block (the device's
 * logical block size), in the kernel: a write's from a KFIXED descriptor
 * (buffer <tag>: the request's pages, at the block's offset in them),
 * before the pieces go; a read's from staging (FIXED), where the members'
 * bytes came: a READ request's pages may only be written (io_uring's
 * imu->dir), so they get the bytes once these agree with the sums. True
 * if they went (the request goes on when they are back).
 */
static bool q_sums(struct ublk_queue *q, unsigned int tag)
{
	struct ublk_tag *t = &q->tags[tag];
	struct io_bpf_buf_desc *pairs = q->sum_descs;
	bool read = t->op == UBLK_IO_OP_READ;
	struct io_uring_sqe *sqe;
	uint64_t first;
	uint32_t nr;

	ublk_sums_span(t->off, t->len, &first, &nr);
	if ((!nr || nr > q->sums_per_tag) && read) {
		/* the bytes are in staging, unchecked: none go to the reader */
		q_complete(q, tag, -EIO);
		return true;
	}
	if (!nr || nr > q->sums_per_tag)
		return false;
	t->sum_first = first;
	t->nr_sums = nr;
	t->sums_pending = 0;
	t->sum_err = 0;
	for (uint32_t i = 0; i < nr; i++) {
		struct io_bpf_buf_desc *p = &pairs[2 * ((size_t)tag * q->sums_per_tag + i)];
		uint64_t at = (first + i) * UBLK_SUM_BLOCK - t->off;

		memset(&p[0], 0, sizeof(p[0]));	/* the sum op has no destination */
		if (read)
			bpf_desc_fixed(&p[1], q->depth, tag_stage(q, tag) + at, UBLK_SUM_BLOCK);
		else
			bpf_desc_kfixed(&p[1], tag, at, UBLK_SUM_BLOCK);
	}
	/* up to IOU_OPS_MAX_PAIRS blocks a request; sqe->off: the first one's sums[] entry */
	for (uint32_t c = 0; c * IOU_OPS_MAX_PAIRS < nr; c++) {
		uint32_t k = c * IOU_OPS_MAX_PAIRS, n = nr - k < IOU_OPS_MAX_PAIRS ?
							  nr - k : IOU_OPS_MAX_PAIRS;

		if (!(sqe = q_sqe(q))) {
			t->sum_err = -EBUSY;
			break;
		}
		io_uring_prep_rw(IOU_OP_BPF, sqe, -1,
				 &pairs[2 * ((size_t)tag * q->sums_per_tag + k)], n,
				 q->sums_base + tag * q->sums_per_tag + k);
		iou_sqe_bpf_op_flags(sqe) = iou_bpf_op_flags(IOU_OP_ID_SUM, 0);
		io_uring_sqe_set_data64(sqe, iou_ud(IOU_TAG_UBLK_SUM, tag, c));
		q->backing++;
		t->sums_pending++;
	}
	if (!t->sums_pending && !read) {
		ublk_sums_record(q->dev, first, NULL, nr, false);
		return false;
	}
	if (!t->sums_pending) {
		/* a read is never returned unchecked */
		q_complete(q, tag, -EIO);
	}
	return true;
}

static void q_read_check(struct ublk_queue *q, unsigned int tag);

/*
 * The copying path (no zero copy): the request's bytes are in its tag
 * buffer, in the daemon's memory, so ISA-L sums them right here (a write's
 * before its pieces go; a read's when they are back, before the driver
 * copies the buffer to the reader). 0, or -EIO when a FUA write's sums
 * could not be made durable.
 */
static int q_sums_user(struct ublk_queue *q, unsigned int tag)
{
	struct ublk_tag *t = &q->tags[tag];
	uint32_t crc[t->nr_sums ?: 1];

	for (uint32_t i = 0; i < t->nr_sums; i++)
		crc[i] = checksum_crc32c(0, tag_buf(q, tag) + (t->sum_first + i) * UBLK_SUM_BLOCK -
					 t->off, UBLK_SUM_BLOCK);
	atomic_fetch_add(&q->dev->stats.sums, t->nr_sums);
	ublk_sums_record(q->dev, t->sum_first, crc, t->nr_sums, true);
	return t->fua && ublk_sums_sync(q->dev) ? -EIO : 0;
}

/* block @i of a read as it came from the members: the kernel's sum, or ISA-L's */
static uint32_t q_read_sum(struct ublk_queue *q, unsigned int tag, uint32_t i)
{
	struct ublk_tag *t = &q->tags[tag];

	if (q->zc)
		return bpf_sums_get(q->sums_base + tag * q->sums_per_tag + i);
	atomic_fetch_add(&q->dev->stats.sums, 1);
	return checksum_crc32c(0, tag_buf(q, tag) + (t->sum_first + i) * UBLK_SUM_BLOCK - t->off,
			       UBLK_SUM_BLOCK);
}

/* a block's sum is back: once all are, they are kept and the write goes out */
static void q_sum_done(struct ublk_queue *q, unsigned int tag, unsigned int c, int res)
{
	struct ublk_tag *t = &q->tags[tag];
	struct ublk_dev *d = q->dev;
	uint32_t crc[t->nr_sums];
	/* request @c summed blocks c * IOU_OPS_MAX_PAIRS on, up to that many */
	uint32_t n = t->nr_sums - c * IOU_OPS_MAX_PAIRS;

	if (n > IOU_OPS_MAX_PAIRS)
		n = IOU_OPS_MAX_PAIRS;
	q->backing--;
	if (res == (int)(n * UBLK_SUM_BLOCK))
		atomic_fetch_add(&d->stats.sums, n);
	else if (!t->sum_err)
		t->sum_err = res < 0 ? res : -EIO;
	if (--t->sums_pending)
		return;
	if (t->sum_err)
		log_warning("device %s: queue %d tag %u: summing the %s at %" PRIu64 ": %s",
			    d->cfg.name, q->q_id, tag, t->op == UBLK_IO_OP_READ ? "read" : "write",
			    t->off, strerror(-t->sum_err));
	if (t->op == UBLK_IO_OP_READ) {
		q_read_check(q, tag);
		return;
	}
	for (uint32_t i = 0; i < t->nr_sums; i++)
		crc[i] = bpf_sums_get(q->sums_base + tag * q->sums_per_tag + i);
	ublk_sums_record(d, t->sum_first, crc, t->nr_sums, !t->sum_err);
	/* FUA: the sums durable with the data, as a flush would make them */
	if (t->fua && ublk_sums_sync(d)) {
		q_complete(q, tag, -EIO);
		return;
	}
	q_submit_pieces(q, tag);
}

/* a write's units are in staging: out they go; a read's are back: done */
static void q_shuffle_done(struct ublk_queue *q, unsigned int tag, int res)
{
	struct ublk_tag *t = &q->tags[tag];
	struct ublk_stats *st = &q->dev->stats;
	bool ok = res >= 0 && (uint32_t)res == t->expect;

	q->backing--;
	if (ok) {
		atomic_fetch_add(&st->bpf_ops, 1);
		atomic_fetch_add(&st->bpf_bytes, res);
	} else {
		log_err("device %s: queue %d tag %u: IORING_OP_BPF gather: %d of %u bytes",
			q->dev->cfg.name, q->q_id, tag, res, t->expect);
	}
	if (t->op == UBLK_IO_OP_WRITE && ok)
		q_submit_pieces(q, tag);
	else
		q_complete(q, tag, ok ? (int)t->len : -EIO);
}

static bool q_in_window(const struct ublk_queue *q, const struct ublk_tag *t)
{
	return q_changes(t) && q->win_lo < q->win_hi &&
	       t->off < q->win_hi && t->off + t->len > q->win_lo;
}

static void q_start(struct ublk_queue *q, unsigned int tag);

/*
 * The mirror's resync moved its window: count this queue's writes in it,
 * let the held-back ones that are out of it go, and say when none is left.
 */
static void q_window(struct ublk_queue *q)
{
	struct ublk_mirror *m = &q->dev->mirror;
	uint64_t seq = atomic_load(&m->win_seq);
	uint16_t held[q->nr_deferred + 1];
	int nr = q->nr_deferred;

	if (seq == q->win_seen)
		return;
	q->win_seen = seq;
	q->win_lo = atomic_load(&m->win_lo);
	q->win_hi = atomic_load(&m->win_hi);
	q->win_busy = 0;
	for (unsigned int tag = 0; tag < q->depth; tag++) {
		struct ublk_tag *t = &q->tags[tag];

		t->counted = t->busy && !t->deferred && q_in_window(q, t);
		q->win_busy += t->counted;
	}
	memcpy(held, q->deferred, nr * sizeof(*held));
	q->nr_deferred = 0;
	for (int i = 0; i < nr; i++) {
		q->tags[held[i]].deferred = false;
		q_start(q, held[i]);
	}
	if (!q->win_busy)
		atomic_store(&q->win_ack, seq);
}

static void q_request(struct ublk_queue *q, unsigned int tag)
{
	const struct ublksrv_io_desc *iod = &q->descs[tag];
	struct ublk_stats *st = &q->dev->stats;
	struct ublk_tag *t = &q->tags[tag];

	*t = (struct ublk_tag){ .op = ublksrv_get_op(iod), .len = iod->nr_sectors << 9,
				.off = iod->start_sector << 9, .busy = true,
				.fua = !!(iod->op_flags & UBLK_IO_F_FUA), .bad_leg = -1 };
	atomic_fetch_add(&st->in_flight, 1);
	switch (t->op) {
	case UBLK_IO_OP_READ:
		atomic_fetch_add(&st->reads, 1);
		break;
	case UBLK_IO_OP_WRITE:
		atomic_fetch_add(&st->writes, 1);
		break;
	case UBLK_IO_OP_FLUSH:
		atomic_fetch_add(&st->flushes, 1);
		break;
	case UBLK_IO_OP_DISCARD:
		atomic_fetch_add(&st->discards, 1);
		break;
	default:
		/* no write-zeroes limit is set (the kernel writes zeroes), so none should come */
		q_complete(q, tag, -EOPNOTSUPP);
		return;
	}
	/* zero copy by hand, or AUTO_BUF_REG that could not: the pages first */
	if ((t->op == UBLK_IO_OP_READ || t->op == UBLK_IO_OP_WRITE) &&
	    (q->zc == UBLK_ZC_MANUAL ||
	     (q->zc == UBLK_ZC_AUTO && (iod->op_flags & UBLK_IO_F_NEED_REG_BUF)))) {
		if (q_buf_cmd(q, tag, true))
			q_complete(q, tag, -EIO);
		return;		/* q_registered() starts it */
	}
	q_start(q, tag);
}

static void q_registered(struct ublk_queue *q, unsigned int tag, int res)
{
	q->backing--;
	if (res < 0) {
		log_err("device %s: queue %d tag %u: REGISTER_IO_BUF: %s", q->dev->cfg.name,
			q->q_id, tag, strerror(-res));
		q_complete(q, tag, res);
		return;
	}
	q->tags[tag].reg = true;
	q_start(q, tag);
}

static void q_unregistered(struct ublk_queue *q, unsigned int tag, int res)
{
	q->backing--;
	if (res < 0)
		log_warning("device %s: queue %d tag %u: UNREGISTER_IO_BUF: %s",
			    q->dev->cfg.name, q->q_id, tag, strerror(-res));
}

/*
 * integrity: a write's regions durably dirty before it goes out; a flush
 * makes the sums durable before the members' fdatasync; a read lands in
 * staging, to be checked there. True if the request was failed here.
 */
static bool q_integrity_start(struct ublk_queue *q, unsigned int tag, int n)
{
	struct ublk_tag *t = &q->tags[tag];
	struct ublk_dev *d = q->dev;

	ublk_sums_span(t->off, t->len, &t->sum_first, &t->nr_sums);
	if (t->op == UBLK_IO_OP_WRITE) {
		if (ublk_sums_write_begin(d, t->off, t->len)) {
			q_complete(q, tag, -EIO);
			return true;
		}
		t->marked = true;
	} else if (t->op == UBLK_IO_OP_FLUSH) {
		if (ublk_sums_flush_begin(d, &t->flush_gen)) {
			q_complete(q, tag, -EIO);
			return true;
		}
		t->flushing = true;
	} else if (t->op == UBLK_IO_OP_READ && q->zc) {
		for (int i = 0; i < n; i++)
			q->pieces[tag * q->max_pieces + i].staged = true;
	}
	return false;
}

/* map and submit a request; a write into the resync window waits for it to move */
static void q_start(struct ublk_queue *q, unsigned int tag)
{
	struct ublk_tag *t = &q->tags[tag];
	int n;

	if (q_in_window(q, t)) {
		t->deferred = true;
		q->deferred[q->nr_deferred++] = tag;
		return;
	}
	n = q_map(q, tag, t->off);
	if (n <= 0) {
		q_complete(q, tag, -EIO);
		return;
	}
	if (q->dev->sums && q_integrity_start(q, tag, n))
		return;
	if (q->gather && (t->op == UBLK_IO_OP_READ || t->op == UBLK_IO_OP_WRITE)) {
		t->nr_units = n;
		n = ublk_gather_merge(&q->pieces[tag * q->max_pieces], n,
				      &q->units[tag * q->max_pieces], &t->staged);
	}
	t->nr = t->pending = n;
	memset(&q->done[tag * q->max_pieces], 0, n * sizeof(*q->done));
	if (t->staged && t->op == UBLK_IO_OP_WRITE && q_shuffle(q, tag, true))
		return;		/* the pieces go when the gather completes */
	if (q->dev->sums && t->op == UBLK_IO_OP_WRITE && !q->zc && q_sums_user(q, tag)) {
		q_complete(q, tag, -EIO);
		return;
	}
	if (q->dev->sums && t->op == UBLK_IO_OP_WRITE && q->zc && q_sums(q, tag))
		return;		/* ... when the sums are taken */
	q_submit_pieces(q, tag);
}

/* a read's pieces again, from leg @leg (a mirror) or where they were (-1) */
static void q_reread(struct ublk_queue *q, unsigned int tag, int leg)
{
	struct ublk_tag *t = &q->tags[tag];

	for (int i = 0; leg >= 0 && i < t->nr; i++)
		q->pieces[tag * q->max_pieces + i].member = leg;
	t->pending = t->nr;
	t->ok = 0;
	t->err = 0;
	memset(&q->done[tag * q->max_pieces], 0, t->nr * sizeof(*q->done));
	q_submit_pieces(q, tag);
}

/* the checked bytes, staging -> the request's pages, by IORING_OP_BPF (KFIXED destination) */
static void q_fill(struct ublk_queue *q, unsigned int tag)
{
	struct ublk_tag *t = &q->tags[tag];
	struct io_bpf_buf_desc *p = (struct io_bpf_buf_desc *)q->sum_descs +
				    2 * (size_t)tag * q->sums_per_tag;
	struct io_uring_sqe *sqe;

	/* copying: the bytes are in the tag buffer, which the driver copies out */
	if (!q->zc) {
		q_complete(q, tag, t->len);
		return;
	}
	if (!(sqe = q_sqe(q))) {
		q_complete(q, tag, -EIO);
		return;
	}
	bpf_desc_kfixed(&p[0], tag, 0, t->len);
	bpf_desc_fixed(&p[1], q->depth, tag_stage(q, tag), t->len);
	io_uring_prep_rw(IOU_OP_BPF, sqe, -1, p, 1, t->len);
	iou_sqe_bpf_op_flags(sqe) = iou_bpf_op_flags(IOU_OP_ID_COPY, 0);
	io_uring_sqe_set_data64(sqe, iou_ud(IOU_TAG_UBLK_FILL, tag, 0));
	q->backing++;
}

static void q_fill_done(struct ublk_queue *q, unsigned int tag, int res)
{
	struct ublk_tag *t = &q->tags[tag];

	q->backing--;
	if (res == (int)t->len)
		atomic_fetch_add(&q->dev->stats.filled, res);
	else
		log_err("device %s: queue %d tag %u: IORING_OP_BPF fill of a read: %d of %u bytes",
			q->dev->cfg.name, q->q_id, tag, res, t->len);
	q_complete(q, tag, res == (int)t->len ? res : -EIO);
}

/* where block @i of the tag's read lies: the member and its offset, for the log */
static void q_log_mismatch(struct ublk_queue *q, unsigned int tag, uint32_t i, uint32_t want,
			   uint32_t got, const char *then)
{
	struct ublk_dev *d = q->dev;
	uint64_t off = (q->tags[tag].sum_first + i) * UBLK_SUM_BLOCK;
	struct ublk_piece p = { .member = q->pieces[tag * q->max_pieces].member, .off = off };

	if (d->layout.target != TARGET_MIRROR && ublk_map(&d->layout, false, 0, off,
							  UBLK_SUM_BLOCK, &p, 1) != 1)
		p = (struct ublk_piece){ .off = off };
	log_err("device %s: integrity: %s at %" PRIu64 " (device offset %" PRIu64 "): expected "
		"crc32c %08x, found %08x; %s", d->cfg.name, d->cfg.backing[p.member], p.off, off,
		want, got, then);
}

/* the bad leg's disagreeing blocks rewritten from staging, which the other leg's agree */
static void q_heal(struct ublk_queue *q, unsigned int tag)
{
	struct ublk_tag *t = &q->tags[tag];
	const uint8_t *bad = &q->bad[tag * q->sums_per_tag];
	struct io_uring_sqe *sqe;

	t->pending = 0;
	/* a write in flight there goes to both legs: a heal could land older bytes after it */
	if (ublk_sums_busy(q->dev, t->off, t->len)) {
		q_fill(q, tag);
		return;
	}
	for (uint32_t i = 0; i < t->nr_sums; i++) {
		uint64_t at = (t->sum_first + i) * UBLK_SUM_BLOCK - t->off;

		if (!bad[i] || !(sqe = q_sqe(q)))
			continue;
		/* from staging (zero copy) or the tag buffer (registered area, index 0) */
		io_uring_prep_write_fixed(sqe, t->bad_leg + 1,
					  (q->zc ? tag_stage(q, tag) : tag_buf(q, tag)) + at,
					  UBLK_SUM_BLOCK, t->off + at, q->zc ? q->depth : 0);
		sqe->flags |= IOSQE_FIXED_FILE;
		io_uring_sqe_set_data64(sqe, iou_ud(IOU_TAG_UBLK_HEAL, tag, i));
		q->backing++;
		t->pending++;
	}
	if (!t->pending)
		q_fill(q, tag);
}

static void q_heal_done(struct ublk_queue *q, unsigned int tag, unsigned int i, int res)
{
	struct ublk_tag *t = &q->tags[tag];
	struct ublk_dev *d = q->dev;

	q->backing--;
	if (res == (int)UBLK_SUM_BLOCK) {
		atomic_fetch_add(&d->stats.repairs, 1);
		log_notice("device %s: integrity: healed %s at %" PRIu64 " from the other leg",
			   d->cfg.name, d->cfg.backing[t->bad_leg],
			   (t->sum_first + i) * UBLK_SUM_BLOCK);
	} else {
		log_err("device %s: integrity: rewriting %s at %" PRIu64 ": %s", d->cfg.name,
			d->cfg.backing[t->bad_leg], (t->sum_first + i) * UBLK_SUM_BLOCK,
			res < 0 ? strerror(-res) : "short write");
	}
	if (!--t->pending)
		q_fill(q, tag);
}

/* another in-sync leg of a mirror than @leg, or -1 */
static int q_other_leg(const struct ublk_dev *d, int leg)
{
	for (int m = 0; m < d->layout.nr; m++)
		if (m != leg && !atomic_load(&d->member_failed[m]))
			return m;
	return -1;
}

/*
 * A read's sums are back: what agrees goes to the reader. A disagreement
 * is read again, twice, or while a write there is in flight (the read may
 * have seen either side of one); on a mirror the other leg is read, and if it agrees
 * its bytes are returned and the bad leg's blocks rewritten; otherwise the
 * read fails with EIO, each block named in the log.
 */
#define UBLK_REREADS	16	/* with a write in flight there; 2 without */
static void q_read_check(struct ublk_queue *q, unsigned int tag)
{
	struct ublk_tag *t = &q->tags[tag];
	struct ublk_dev *d = q->dev;
	uint8_t *bad = &q->bad[tag * q->sums_per_tag];
	uint32_t got[t->nr_sums], want[t->nr_sums], prev, nr = 0;
	bool mismatch[t->nr_sums], busy = ublk_sums_busy(d, t->off, t->len);
	int leg = q->pieces[tag * q->max_pieces].member, other;

	if (t->sum_err) {
		q_complete(q, tag, -EIO);
		return;
	}
	for (uint32_t i = 0; i < t->nr_sums; i++) {
		got[i] = q_read_sum(q, tag, i);
		mismatch[i] = ublk_sums_expected(d, t->sum_first + i, &want[i], &prev) &&
			      want[i] != got[i] && !(busy && prev == got[i]);
		nr += mismatch[i];
	}
	if (!nr) {
		if (t->bad_leg >= 0)
			q_heal(q, tag);
		else
			q_fill(q, tag);
		return;
	}
	/*
	 * A write into these blocks may have come and gone while the read ran
	 * (it saw some of the old bytes, the sums are the new ones): read again,
	 * a few times, and as long as a write there is in flight
	 */
	if (t->rereads < (busy ? UBLK_REREADS : 2)) {
		t->rereads++;
		q_reread(q, tag, -1);
		return;
	}
	atomic_fetch_add(&d->stats.mismatches, nr);
	if (d->layout.target == TARGET_MIRROR && t->bad_leg < 0 &&
	    (other = q_other_leg(d, leg)) >= 0) {
		for (uint32_t i = 0; i < t->nr_sums; i++) {
			bad[i] = mismatch[i];
			if (mismatch[i])
				q_log_mismatch(q, tag, i, want[i], got[i], "reading the other leg");
		}
		t->bad_leg = leg;
		t->nr_bad = nr;
		q_reread(q, tag, other);
		return;
	}
	for (uint32_t i = 0; i < t->nr_sums; i++)
		if (mismatch[i])
			q_log_mismatch(q, tag, i, want[i], got[i], "the read fails (EIO)");
	q_complete(q, tag, -EIO);
}

/* a piece failed: a mirror read tries another member; true if it did */
static bool q_piece_retry(struct ublk_queue *q, unsigned int tag, int i, int err)
{
	struct ublk_piece *p = &q->pieces[tag * q->max_pieces + i];
	int m;

	if (q->dev->layout.target != TARGET_MIRROR)
		return false;
	q_member_failed(q, p->member, err);
	if ((m = ublk_mirror_retry_leg(q->dev, q->tags[tag].op, &q->rr)) < 0)
		return false;
	p->member = m;
	q->done[tag * q->max_pieces + i] = 0;
	q_piece_submit(q, tag, i);
	return true;
}

static void q_piece_done(struct ublk_queue *q, unsigned int tag, int i, int res)
{
	struct ublk_tag *t = &q->tags[tag];
	struct ublk_piece *p = &q->pieces[tag * q->max_pieces + i];
	int judged, err = 0;

	q->backing--;
	if (t->op == UBLK_IO_OP_FLUSH || t->op == UBLK_IO_OP_DISCARD) {
		judged = res < 0 ? IOU_JUDGED_FAILED : IOU_JUDGED_DONE;
		err = res;
	} else {
		judged = iou_chain_judge(t->op == UBLK_IO_OP_WRITE ? IOU_CHAIN_WRITE :
					 IOU_CHAIN_READ, res, p->len, p->len,
					 &q->done[tag * q->max_pieces + i], &err);
	}
	if (judged == IOU_JUDGED_SHORT) {
		q_piece_submit(q, tag, i);
		return;
	}
	if (judged == IOU_JUDGED_DONE || judged == IOU_JUDGED_DONE_CUT) {
		t->ok++;
	} else {
		if (judged == IOU_JUDGED_CANCELLED)
			err = -ECANCELED;
		atomic_fetch_add(&q->dev->stats.member_errors[p->member], 1);
		if (q_piece_retry(q, tag, i, err))
			return;
		if (!t->err)
			t->err = err;
	}
	if (--t->pending)
		return;
	if (ublk_mirror_stands(q->dev, t->op, t->ok))
		t->err = 0;
	/* a gathered read: its units go back from staging to their places */
	if (!t->err && t->staged && t->op == UBLK_IO_OP_READ && q_shuffle(q, tag, false))
		return;
	/* integrity: a read's bytes are checked (in staging) before they reach the reader */
	if (!t->err && q->dev->sums && t->op == UBLK_IO_OP_READ && !q->zc) {
		q_read_check(q, tag);
		return;
	}
	if (!t->err && q->dev->sums && t->op == UBLK_IO_OP_READ && q_sums(q, tag))
		return;
	q_complete(q, tag, t->err ? t->err : t->op == UBLK_IO_OP_FLUSH ? 0 : (int)t->len);
}

static void q_cmd_done(struct ublk_queue *q, unsigned int tag, int res)
{
	q->cmds--;
	/* handing over: a new request stays the kernel's, reissued to the next daemon */
	if (res == UBLK_IO_RES_OK && q->leaving)
		return;
	if (res == UBLK_IO_RES_OK) {
		q_request(q, tag);
		return;
	}
	/* UBLK_IO_RES_ABORT: the device is stopping; the tag is not fetched again */
	if (res != UBLK_IO_RES_ABORT)
		log_err("device %s: queue %d tag %u: ublk command failed: %s",
			q->dev->cfg.name, q->q_id, tag, strerror(-res));
}

/* a CQE when ublk_dev_wake() writes the queue's eventfd */
static int q_arm_wake(struct ublk_queue *q)
{
	struct io_uring_sqe *sqe = q_sqe(q);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_add(sqe, q->wake_fd, POLLIN);
	io_uring_sqe_set_data64(sqe, iou_ud(IOU_TAG_UBLK_WAKE, 0, 0));
	return 0;
}

static void q_woken(struct ublk_queue *q)
{
	eventfd_t v;

	eventfd_read(q->wake_fd, &v);
	q->leaving = atomic_load(&q->dev->handover);
	if (!q->leaving && q_arm_wake(q))
		log_err("device %s: queue %d: no SQE to wait for a wake-up", q->dev->cfg.name,
			q->q_id);
}

static int q_setup(struct ublk_queue *q)
{
	struct ublk_dev *d = q->dev;
	size_t page = sysconf(_SC_PAGESIZE), area;
	int fds[CONFIG_MAX_FILES + 1], ret;
	unsigned int sq = ring_pow2(q->depth * 2 > 64 ? q->depth * 2 : 64);
	/* integrity on zero copy: a CQE per IOU_OPS_MAX_PAIRS blocks summed, and the fill */
	unsigned int per_tag = q->max_pieces + 1 +
			       (d->sums && q->zc ? q->buf_size / UBLK_SUM_BLOCK /
						   IOU_OPS_MAX_PAIRS + 2 : 0);
	unsigned int cq = ring_pow2(q->depth * per_tag);

	if (sq > 4096)
		sq = 4096;
	if (cq < 2 * sq)
		cq = 2 * sq;
	if (cq > 65536)
		cq = 65536;
	/*
	 * copying: the tag buffer; with gather also staging and the
	 * descriptors, page aligned; zero copy: only the gather's part
	 */
	q->slot_size = q->zc ? 0 : q->buf_size;
	if (q->gather)
		q->slot_size = (q->slot_size + q->buf_size + ublk_gather_meta_size(q->max_pieces) +
				page - 1) / page * page;
	/* integrity on zero copy: a read's staging, checked before its pages get the bytes */
	else if (d->sums && q->zc)
		q->slot_size += q->buf_size;
	q->staging = q->gather || (d->sums && q->zc);
	area = (size_t)q->depth * q->slot_size;
	q->tags = calloc(q->depth, sizeof(*q->tags));
	q->units = calloc((size_t)q->depth * q->max_pieces, sizeof(*q->units));
	q->pieces = calloc((size_t)q->depth * q->max_pieces, sizeof(*q->pieces));
	q->done = calloc((size_t)q->depth * q->max_pieces, sizeof(*q->done));
	q->deferred = calloc(q->depth, sizeof(*q->deferred));
	if (!q->tags || !q->pieces || !q->done || !q->units || !q->deferred)
		return -ENOMEM;
	ret = ring_init_sized(&q->ring, sq, cq, q->bpf ? IOU_SETUP_BPF_OP : 0);
	if (ret)
		return ret;
	if (q->bpf) {
		char err[256];

		ret = bpf_ops_attach(ring_fd(&q->ring), &q->ops, err, sizeof(err));
		if (ret) {
			log_err("device %s: queue %d: cannot attach the BPF ops: %s",
				q->dev->cfg.name, q->q_id, err);
			return ret;
		}
	}
	fds[0] = d->char_fd;
	for (int i = 0; i < d->layout.nr; i++)
		fds[i + 1] = d->member_fd[i];
	ret = ring_register_files(&q->ring, fds, d->layout.nr + 1);
	if (ret)
		return ret;
	if (d->sums) {
		q->sums_per_tag = q->buf_size / UBLK_SUM_BLOCK;
		q->bad = calloc((size_t)q->depth * q->sums_per_tag, 1);
		if (!q->bad)
			return -ENOMEM;
	}
	/* zero copy: the sums taken by IORING_OP_BPF, into the programs' sums[] */
	if (d->sums && q->zc) {
		q->sum_descs = calloc((size_t)q->depth * q->sums_per_tag * 2,
				      sizeof(struct io_bpf_buf_desc));
		q->sums_base = bpf_sums_alloc(q->depth * q->sums_per_tag, true);
		if (!q->sum_descs || !q->bad)
			return -ENOMEM;
		if (q->sums_base < 0) {
			log_err("device %s: queue %d: no room for %u sums (queue_depth x max_io_size "
				"/ 4K; %u for all devices): a smaller queue_depth or max_io_size",
				d->cfg.name, q->q_id, q->depth * q->sums_per_tag, IOU_SUMS_DEVICES);
			return q->sums_base;
		}
	}
	if (q->zc) {
		/* one empty slot per tag: its requests' pages come and go there */
		ret = io_uring_register_buffers_sparse(&q->ring.uring, q->depth + q->staging);
		/* the gather's (or integrity's) staging: the slot after them */
		if (!ret && q->staging && !(ret = ring_mem_alloc(&q->mem, &area, 1)))
			ret = io_uring_register_buffers_update_tag(&q->ring.uring, q->depth,
								   q->mem.iov, NULL, 1);
		if (ret > 0)
			ret = 0;
	} else {
		ret = ring_mem_alloc(&q->mem, &area, 1);
		if (!ret)
			ret = ring_register_buffers(&q->ring, &q->mem);
	}
	if (ret)
		return ret;
	q->descs_len = (q->depth * sizeof(struct ublksrv_io_desc) + page - 1) / page * page;
	q->descs = mmap(NULL, q->descs_len, PROT_READ, MAP_SHARED | MAP_POPULATE, d->char_fd,
			UBLKSRV_CMD_BUF_OFFSET + q->q_id * UBLK_QUEUE_DESC_STRIDE);
	if (q->descs == MAP_FAILED) {
		q->descs = NULL;
		return -errno;
	}
	for (unsigned int tag = 0; tag < q->depth; tag++)
		if ((ret = q_cmd(q, tag, UBLK_U_IO_FETCH_REQ, 0)))
			return ret;
	if ((ret = q_arm_wake(q)))
		return ret;
	ret = io_uring_submit(&q->ring.uring);
	return ret < 0 ? ret : 0;
}

static void q_teardown(struct ublk_queue *q)
{
	if (q->descs)
		munmap((void *)q->descs, q->descs_len);
	q->descs = NULL;
	if (q->ops)
		bpf_ops_detach(q->ops);
	q->ops = NULL;
	/*
	 * The members let go now, not when the kernel gets round to freeing
	 * the ring after it is closed: whoever takes them next (dm, mkfs, the
	 * next device) would meet EBUSY from the O_EXCL this ring still holds.
	 * Only with no command left: a fetch on a registered file (copying, and
	 * a hand-over leaves fetches) would hold the unregistration forever.
	 */
	if (q->ring.initialised && !q->cmds && !q->backing)
		io_uring_unregister_files(&q->ring.uring);
	/* the ring itself: ublk_queue_join(), once this thread has exited */
	if (q->sums_base >= 0)
		bpf_sums_free(q->sums_base, q->depth * q->sums_per_tag);
	q->sums_base = -1;
	free(q->sum_descs);
	q->sum_descs = NULL;
	free(q->bad);
	q->bad = NULL;
	free(q->tags);
	free(q->pieces);
	free(q->done);
	free(q->units);
	free(q->deferred);
	q->deferred = NULL;
	q->units = NULL;
	q->tags = NULL;
	q->pieces = NULL;
	q->done = NULL;
}

static void *queue_thread(void *arg)
{
	struct ublk_queue *q = arg;
	struct io_uring_cqe *cqe;
	unsigned int head, seen;
	char name[16];
	int ret;

	/* named for ps and top: the device's number and the queue's */
	snprintf(name, sizeof(name), "ublk%u:q%d", q->dev->info.dev_id, q->q_id);
	pthread_setname_np(pthread_self(), name);
	/* on the CPUs whose requests come to this queue: no hop to another CPU */
	if (CPU_COUNT(&q->cpus) &&
	    (ret = pthread_setaffinity_np(pthread_self(), sizeof(q->cpus), &q->cpus)))
		log_warning("device %s: queue %d: cannot run on its CPUs: %s", q->dev->cfg.name,
			    q->q_id, strerror(ret));
	ret = q_setup(q);
	if (ret) {
		log_err("device %s: queue %d: setup failed: %s", q->dev->cfg.name, q->q_id,
			strerror(-ret));
		q_teardown(q);
		atomic_store(&q->ready, ret);
		return NULL;
	}
	atomic_store(&q->ready, 1);
	/*
	 * Until STOP_DEV has aborted every tag and the members have answered;
	 * or, handing over, until the requests started are done and committed.
	 */
	while (q->leaving ? q->backing : q->cmds || q->backing) {
		ret = ring_submit_and_wait(&q->ring, 1, 0);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN) {
			log_err("device %s: queue %d: ring failed: %s", q->dev->cfg.name, q->q_id,
				strerror(-ret));
			break;
		}
		seen = 0;
		io_uring_for_each_cqe(&q->ring.uring, head, cqe) {
			uint64_t ud = cqe->user_data;

			if (iou_ud_tag(ud) == IOU_TAG_UBLK_CMD)
				q_cmd_done(q, iou_ud_slot(ud), cqe->res);
			else if (iou_ud_tag(ud) == IOU_TAG_UBLK_WAKE)
				q_woken(q);
			else if (iou_ud_tag(ud) == IOU_TAG_UBLK_SHUFFLE)
				q_shuffle_done(q, iou_ud_slot(ud), cqe->res);
			else if (iou_ud_tag(ud) == IOU_TAG_UBLK_REG)
				q_registered(q, iou_ud_slot(ud), cqe->res);
			else if (iou_ud_tag(ud) == IOU_TAG_UBLK_UNREG)
				q_unregistered(q, iou_ud_slot(ud), cqe->res);
			else if (iou_ud_tag(ud) == IOU_TAG_UBLK_SUM)
				q_sum_done(q, iou_ud_slot(ud), iou_ud_op(ud), cqe->res);
			else if (iou_ud_tag(ud) == IOU_TAG_UBLK_FILL)
				q_fill_done(q, iou_ud_slot(ud), cqe->res);
			else if (iou_ud_tag(ud) == IOU_TAG_UBLK_HEAL)
				q_heal_done(q, iou_ud_slot(ud), iou_ud_op(ud), cqe->res);
			else
				q_piece_done(q, iou_ud_slot(ud), iou_ud_op(ud), cqe->res);
			seen++;
		}
		io_uring_cq_advance(&q->ring.uring, seen);
		q_window(q);
	}
	/* the last commits; the fetches left are cancelled as this thread exits */
	if (q->leaving)
		io_uring_submit(&q->ring.uring);
	q_teardown(q);
	return NULL;
}

int ublk_queue_start(struct ublk_queue *q)
{
	int ret;

	atomic_store(&q->ready, 0);
	q->sums_base = -1;
	q->max_pieces = ublk_map_max_pieces(&q->dev->layout, q->buf_size);
	q->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (q->wake_fd < 0)
		return -errno;
	ret = pthread_create(&q->thread, NULL, queue_thread, q);
	if (ret) {
		close(q->wake_fd);
		q->wake_fd = -1;
		return -ret;
	}
	q->joinable = true;
	return 0;
}

void ublk_queue_join(struct ublk_queue *q)
{
	if (q->joinable)
		pthread_join(q->thread, NULL);
	q->joinable = false;
	/*
	 * Closed only now: the thread's exit has cancelled the fetches a
	 * hand-over leaves, as their submitter. Closed by the live thread,
	 * the ring's exit work would post their cancellations from a worker
	 * while the DEFER_TASKRUN ring's submitter still runs, which lockdep
	 * reports (io_lockdep_assert_cq_locked) on every one.
	 */
	ring_exit(&q->ring);
	ring_mem_free(&q->mem);
	if (q->wake_fd >= 0)
		close(q->wake_fd);
	q->wake_fd = -1;
}
