// SPDX-License-Identifier: MIT
/*
 * The loop engine's program logic (bpf-ops/iou_loop_core.h, the same C the
 * BPF program is built from) and its block templates (daemon/loop_templates.c),
 * driven on the host against a model of the kernel side: no BPF is loaded.
 *
 * The model takes the SQEs a step prepared (indexes 0.., like
 * IORING_SETUP_SQ_REWIND), runs each linked chain with pread/pwrite and a
 * userspace uring_bpf_memcpy() (FIXED and REG_VEC descriptors, checked
 * against the registered buffers), and posts the CQEs later, a few at a
 * time and chains interleaved at random, as the kernel may. A link is cut
 * by a short transfer or an error, the rest of the chain completing with
 * -ECANCELED; IOSQE_CQE_SKIP_SUCCESS is honoured as 6.12 does (a request
 * that asked to skip posts only when it falls short or fails, and then the
 * requests it cancels post nothing). Faults are injected by the nth read or write. The monitor
 * thread of the daemon is modelled by refilling templates only when the
 * program has asked for it (the notify write), so the notify/kick protocol
 * is what keeps the pipeline moving.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "iou_abi.h"
#include "../bpf-ops/iou_loop_core.h"	/* its pieces: iou_loop_core.o */
#include "../bpf-ops/iou_ops.h"
#include "engine_bpf.h"
#include "loop_templates.h"
#include "testutil.h"

#define MAX_FILES	32
#define MAX_STEPS	2000000

struct pend_cqe {
	uint64_t ud;
	int32_t res;
	uint32_t flags;
};

/* a chain's CQEs, posted in order */
struct pend_chain {
	struct pend_cqe cqe[LOOP_MAX_OPS];
	int nr, pos;
};

struct model {
	struct iou_loop_ctl *ctl;
	struct iou_loop_sq sq;
	uint8_t cq[LOOP_CQ_BYTES(LOOP_CQ_CLASS1)];
	uint32_t cq_tail;		/* what the "kernel" posted */
	int fds[MAX_FILES];
	struct iovec bufs[2 * LOOP_MAX_SLOTS];
	int nr_bufs;
	struct pend_chain *pend;
	int npend, cap;
	uint64_t rng;
	/* faults: the nth read or write (1-based; 0 = none) */
	int reads, writes, bpfs;
	int short_read_nth, short_write_nth, fail_write_nth, fail_write_errno;
	int short_write_every;		/* every nth write is short */
	int max_release;		/* CQEs posted per wait at most (0: random) */
	/* what happened */
	int notifies, kicks_posted, ticks_posted, fsyncs, idle;
	uint64_t steps;
	/* the daemon side */
	struct loop_feed *feed;
	bool lazy_fill;			/* refill only when notified */
	bool want_fill;
	uint64_t chain_cqes;		/* CQEs of chain requests posted */
};

static uint64_t rnd(struct model *m)
{
	m->rng ^= m->rng << 13;
	m->rng ^= m->rng >> 7;
	m->rng ^= m->rng << 17;
	return m->rng;
}

static struct pend_chain *pend_new(struct model *m)
{
	if (m->npend == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 64;
		m->pend = realloc(m->pend, m->cap * sizeof(*m->pend));
		assert_non_null(m->pend);
	}
	memset(&m->pend[m->npend], 0, sizeof(m->pend[0]));
	return &m->pend[m->npend++];
}

static void pend_add(struct pend_chain *c, uint64_t ud, int32_t res, uint32_t flags)
{
	assert_true(c->nr < LOOP_MAX_OPS);
	c->cqe[c->nr++] = (struct pend_cqe){ .ud = ud, .res = res, .flags = flags };
}

/* is [addr, addr + len) inside registered buffer @idx? */
static bool in_buf(struct model *m, unsigned int idx, uint64_t addr, uint64_t len)
{
	uint64_t b;

	if (idx >= (unsigned int)m->nr_bufs)
		return false;
	b = (uintptr_t)m->bufs[idx].iov_base;
	return addr >= b && addr + len <= b + m->bufs[idx].iov_len;
}

/* one side of uring_bpf_memcpy(): its segments */
struct side {
	struct iovec seg[LOOP_TMPL_MAX];
	int nr;
	uint64_t total;
};

static int import(struct model *m, const struct io_bpf_buf_desc *d, struct side *s)
{
	s->nr = 0;
	s->total = 0;
	if (d->reserved)
		return -EINVAL;
	if (d->type == IO_BPF_BUF_FIXED) {
		if (!in_buf(m, d->buf_index, d->addr, d->len))
			return -EFAULT;
		s->seg[0] = (struct iovec){ (void *)(uintptr_t)d->addr, d->len };
		s->nr = 1;
		s->total = d->len;
		return 0;
	}
	if (d->type == IO_BPF_BUF_REG_VEC) {
		const struct iovec *iov = (const struct iovec *)(uintptr_t)d->addr;

		if (d->len > 1024)
			return -EINVAL;
		for (unsigned int i = 0; i < d->len; i++) {
			if (!in_buf(m, d->buf_index, (uintptr_t)iov[i].iov_base, iov[i].iov_len))
				return -EFAULT;
			s->seg[s->nr++] = iov[i];
			s->total += iov[i].iov_len;
		}
		return 0;
	}
	return -EINVAL;	/* the daemon uses FIXED and REG_VEC only */
}

static ssize_t model_memcpy(struct model *m, const struct io_bpf_buf_desc *dst,
			    const struct io_bpf_buf_desc *src)
{
	static struct side s, d;
	uint64_t len, done = 0;
	int si = 0, di = 0;
	size_t so = 0, dof = 0;
	int ret;

	ret = import(m, src, &s);
	if (!ret)
		ret = import(m, dst, &d);
	if (ret)
		return ret;
	len = s.total < d.total ? s.total : d.total;
	while (done < len) {
		size_t a = s.seg[si].iov_len - so, b = d.seg[di].iov_len - dof;
		size_t n = a < b ? a : b;

		if (n > len - done)
			n = len - done;
		memcpy((char *)d.seg[di].iov_base + dof, (char *)s.seg[si].iov_base + so, n);
		done += n;
		so += n;
		dof += n;
		if (so == s.seg[si].iov_len) {
			si++;
			so = 0;
		}
		if (dof == d.seg[di].iov_len) {
			di++;
			dof = 0;
		}
	}
	return done;
}

/* iou_ops.bpf.c's issue_fn: every pair, and the total must be sqe->off */
static int model_bpf(struct model *m, const struct io_uring_sqe *sqe)
{
	const struct io_bpf_buf_desc *pairs = (const void *)(uintptr_t)sqe->addr;
	uint64_t total = 0;

	if ((sqe->rw_flags >> IORING_BPF_OP_SHIFT) != bpf_op_id_for(m->feed->pl))
		return -EINVAL;
	if (!sqe->len || sqe->len > IOU_OPS_MAX_PAIRS)
		return -EINVAL;
	for (unsigned int i = 0; i < sqe->len; i++) {
		ssize_t n = model_memcpy(m, &pairs[2 * i], &pairs[2 * i + 1]);

		if (n < 0)
			return n;
		total += n;
	}
	m->bpfs++;
	return total == sqe->off ? (int)total : -EIO;
}

static int model_rw(struct model *m, const struct io_uring_sqe *sqe, bool write)
{
	uint32_t len = sqe->len;
	ssize_t n;

	if (!(sqe->flags & IOSQE_FIXED_FILE) || sqe->fd < 0 || sqe->fd >= MAX_FILES ||
	    m->fds[sqe->fd] < 0)
		return -EBADF;
	if (!in_buf(m, sqe->buf_index, sqe->addr, len))
		return -EFAULT;
	if (write) {
		m->writes++;
		if (m->fail_write_nth && m->writes == m->fail_write_nth)
			return -m->fail_write_errno;
		if ((m->short_write_nth && m->writes == m->short_write_nth) ||
		    (m->short_write_every && m->writes % m->short_write_every == 0))
			len = len > 1 ? len / 2 + 1 : len;
		n = pwrite(m->fds[sqe->fd], (void *)(uintptr_t)sqe->addr, len, sqe->off);
	} else {
		m->reads++;
		if (m->short_read_nth && m->reads == m->short_read_nth)
			len = len > 1 ? len / 3 + 1 : len;
		n = pread(m->fds[sqe->fd], (void *)(uintptr_t)sqe->addr, len, sqe->off);
	}
	return n < 0 ? -errno : (int)n;
}

/* run the @n SQEs of a step, chain by chain */
static int model_submit(struct model *m, uint32_t n)
{
	struct pend_chain *c = NULL;
	bool failed = false, skip_cancelled = false;

	for (uint32_t i = 0; i < n; i++) {
		const struct io_uring_sqe *sqe = &m->sq.sqes[i];
		int res = 0;
		uint32_t flags = 0;

		bool skip = sqe->flags & IOSQE_CQE_SKIP_SUCCESS, fell = false;

		if (!c) {
			c = pend_new(m);
			failed = false;
			skip_cancelled = false;
		}
		if (failed) {
			res = -ECANCELED;
			skip = skip_cancelled;
		} else {
			switch (sqe->opcode) {
			case IORING_OP_READ_FIXED:
				res = model_rw(m, sqe, false);
				fell = res < 0 || (uint32_t)res != sqe->len;
				break;
			case IORING_OP_WRITE_FIXED:
				res = model_rw(m, sqe, true);
				fell = res < 0 || (uint32_t)res != sqe->len;
				break;
			case IOU_OP_BPF:
				res = model_bpf(m, sqe);
				fell = res < 0;
				break;
			case IORING_OP_FSYNC:
				assert_true(sqe->flags & IOSQE_FIXED_FILE);
				assert_int_equal(sqe->rw_flags, IORING_FSYNC_DATASYNC);
				res = fdatasync(m->fds[sqe->fd]) ? -errno : 0;
				m->fsyncs++;
				break;
			case IORING_OP_TIMEOUT:
				assert_int_equal(sqe->rw_flags, IORING_TIMEOUT_MULTISHOT);
				assert_int_equal(sqe->len, 1);
				c->nr = 0;	/* fires later, from the wait */
				break;
			case IORING_OP_POLL_ADD:
				assert_int_equal(sqe->len, IORING_POLL_ADD_MULTI);
				c->nr = 0;	/* fires on kicks */
				break;
			case IORING_OP_WRITE:
				assert_int_equal(sqe->len, 8);
				assert_int_equal(*(uint64_t *)(uintptr_t)sqe->addr, 1);
				m->notifies++;
				m->want_fill = true;
				res = 8;
				break;
			default:
				fail_msg("unexpected opcode %u", sqe->opcode);
			}
			if (sqe->opcode == IORING_OP_TIMEOUT || sqe->opcode == IORING_OP_POLL_ADD) {
				/* multishot: no CQE now; keep a chain of its own out of the way */
				m->npend--;
				c = NULL;
				continue;
			}
			if (fell) {
				/* it posts after all; those it cancels skip if it asked to */
				failed = true;
				skip_cancelled = skip;
				skip = false;
			}
		}
		/* the program never asks the last request of a group to skip */
		assert_true(!(sqe->flags & IOSQE_CQE_SKIP_SUCCESS) || (sqe->flags & IOSQE_IO_LINK));
		if (!skip)
			pend_add(c, sqe->user_data, res, flags);
		if (!(sqe->flags & IOSQE_IO_LINK)) {
			assert_true(c->nr > 0);		/* a group always posts */
			c = NULL;
		}
	}
	assert_null(c);		/* a step never leaves a link open */
	return n;
}

static void post(struct model *m, uint64_t ud, int32_t res, uint32_t flags)
{
	uint32_t head = *(uint32_t *)(m->cq + m->ctl->cq_head_off);
	struct io_uring_cqe *cqe;

	/* the CQ must never overflow: the ring is sized for everything in flight */
	assert_true(m->cq_tail - head <= m->ctl->cq_mask);
	cqe = (struct io_uring_cqe *)(m->cq + m->ctl->cqes_off +
				      (m->cq_tail & m->ctl->cq_mask) * sizeof(*cqe));
	cqe->user_data = ud;
	cqe->res = res;
	cqe->flags = flags;
	m->cq_tail++;
	*(uint32_t *)(m->cq + m->ctl->cq_tail_off) = m->cq_tail;
}

/* one loop_step up to the submission, as iou_loop.bpf.c runs it: -1 to stop */
static int model_step(struct model *m, uint64_t now)
{
	if (loop_step_begin(m->ctl, now))
		return -1;
	loop_reap(m->ctl, m->cq, sizeof(m->cq));
	return loop_step_body(m->ctl, &m->sq, now);
}

/*
 * The wait the program asks for must be one that ends without the timer:
 * it counts every CQE its requests in flight will post (no fewer, or the
 * books drift; no more, or it waits for CQEs that never come).
 */
static void check_wait(struct model *m)
{
	uint32_t head = *(uint32_t *)(m->cq + m->ctl->cq_head_off);
	uint64_t coming = 0, nr = loop_wait_nr(m->ctl);

	assert_int_equal(head, m->ctl->cq_head);
	for (int i = 0; i < m->npend; i++)
		coming += m->pend[i].nr - m->pend[i].pos;
	/* CQEs posted but not reaped yet may include the timer's and kicks */
	assert_true(m->ctl->cqes_pending >= coming);
	assert_true(m->ctl->cqes_pending <= coming + (m->cq_tail - head));
	assert_true(nr <= m->ctl->wait_batch || nr == 1);
	if (!m->ctl->more)
		assert_true(nr >= 1 && nr <= (coming + (m->cq_tail - head) ? coming + (m->cq_tail - head) : 1));
	else
		assert_int_equal(nr, 0);
}

/* the wait between steps: some CQEs arrive, chains interleaved */
static void model_wait(struct model *m)
{
	int k;

	if (m->want_fill) {
		int64_t n = loop_feed_fill(m->feed, m->ctl);

		assert_true(n >= 0);
		m->want_fill = false;
		if (n > 0 && m->ctl->kick_armed) {
			post(m, iou_ud(IOU_TAG_KICK, 0, 0), 1, IORING_CQE_F_MORE);
			m->kicks_posted++;
		}
	}
	if (!m->npend) {
		/* nothing in flight: only the timer fires */
		assert_true(m->ctl->timer_armed);
		post(m, iou_ud(IOU_TAG_TIMER, 0, 0), -ETIME, IORING_CQE_F_MORE);
		m->ticks_posted++;
		m->idle++;
		return;
	}
	k = m->max_release ? m->max_release : 1 + (int)(rnd(m) % (3 * m->npend + 1));
	while (k-- > 0 && m->npend) {
		int i = rnd(m) % m->npend;
		struct pend_chain *c = &m->pend[i];

		post(m, c->cqe[c->pos].ud, c->cqe[c->pos].res, c->cqe[c->pos].flags);
		m->chain_cqes += iou_ud_tag(c->cqe[c->pos].ud) == IOU_TAG_CHAIN;
		if (++c->pos == c->nr)
			m->pend[i] = m->pend[--m->npend];
	}
}

/* steps until the program stops; returns its state */
static uint32_t model_run(struct model *m)
{
	for (m->steps = 0; m->steps < MAX_STEPS; m->steps++) {
		if (model_step(m, m->steps * 1000))
			return m->ctl->state;
		if (m->ctl->sq_k) {
			uint32_t n = m->ctl->sq_k;

			assert_false(loop_submitted(m->ctl, n, model_submit(m, n)));
		}
		check_wait(m);
		/* invariants the daemon's checkpoints rely on */
		assert_true(m->ctl->durable <= m->ctl->watermark);
		assert_true(m->ctl->watermark <= m->ctl->next_block);
		assert_true(m->ctl->next_block - m->ctl->watermark <= m->ctl->nr_slots);
		assert_true(m->ctl->next_block <= m->ctl->filled);
		/* a crash re-copies at most a queue depth plus ckpt_blocks */
		assert_true(m->ctl->next_block <=
			    m->ctl->durable + m->ctl->ckpt_blocks + m->ctl->nr_slots);
		assert_int_equal(m->ctl->strays, 0);
		/* no wait while work is left, but completions may still come in */
		if (!m->ctl->more || rnd(m) % 4 == 0)
			model_wait(m);
		assert_true(m->idle < 1000);	/* stuck: the notify/kick protocol failed */
	}
	fail_msg("no end after %d steps", MAX_STEPS);
	return 0;
}

/* ---- a pipeline: files, plan, slot buffers, templates ---- */

struct pipe {
	char *dir;
	struct plan pl;
	struct plan_params pp;
	struct slot_bufs slots[LOOP_MAX_SLOTS];
	int nr_slots;
	uint8_t *bufmem;
	uint8_t *meta;
	struct loop_feed feed;
	struct model m;
	bool one_cqe_per_request;	/* a kernel without IORING_FEAT_CQE_SKIP */
	int src_fd[CONFIG_MAX_FILES], dst_fd[CONFIG_MAX_FILES];
	char *src_path[CONFIG_MAX_FILES], *dst_path[CONFIG_MAX_FILES];
};

static void pipe_files(struct pipe *p, int nsrc, const size_t *src_len, int ndst, uint64_t seed)
{
	p->dir = tu_mkdtemp("loopcore");
	for (int i = 0; i < nsrc; i++) {
		char name[32];

		snprintf(name, sizeof(name), "src%d", i);
		p->src_path[i] = tu_path(p->dir, name);
		if (src_len) {
			uint8_t *b = malloc(src_len[i] + 1);

			tu_fill(b, src_len[i], seed + i);
			assert_int_equal(tu_write_file(p->src_path[i], b, src_len[i]), 0);
			free(b);
		}
	}
	for (int i = 0; i < ndst; i++) {
		char name[32];

		snprintf(name, sizeof(name), "dst%d", i);
		p->dst_path[i] = tu_path(p->dir, name);
	}
}

/* set up plan, buffers, model for a run starting at logical @start */
static void pipe_start(struct pipe *p, const struct plan_params *pp, int qd, uint64_t start,
		       uint32_t nr_tmpl, int lazy)
{
	size_t meta_size, off = 0;
	int max_ops;
	struct model *m = &p->m;
	struct loop_ctl_params cp;

	p->pp = *pp;
	p->pp.start = start;
	for (int s = 0; s < pp->nr_sources; s++) {
		struct stat st;

		p->src_fd[s] = open(p->src_path[s], O_RDONLY);
		assert_true(p->src_fd[s] >= 0);
		assert_int_equal(fstat(p->src_fd[s], &st), 0);
		p->pp.src_avail[s] = st.st_size - pp->offset;
	}
	if (!p->pp.length)
		p->pp.length = plan_default_length(&p->pp);
	for (int d = 0; d < pp->nr_dests; d++) {
		p->dst_fd[d] = open(p->dst_path[d], O_RDWR | O_CREAT, 0644);
		assert_true(p->dst_fd[d] >= 0);
	}
	assert_int_equal(plan_init(&p->pl, &p->pp), 0);
	loop_plan_bounds(&p->pl, &max_ops, &meta_size);
	assert_true(max_ops <= LOOP_MAX_OPS);

	memset(m, 0, sizeof(*m));
	m->rng = 0x9e3779b97f4a7c15ULL ^ (start + 1);
	p->nr_slots = p->pl.nr_blocks < (uint64_t)qd ? (int)p->pl.nr_blocks : qd;
	p->bufmem = aligned_alloc(4096, (size_t)p->nr_slots * (p->pl.r_size + p->pl.w_size));
	assert_non_null(p->bufmem);
	for (int i = 0; i < p->nr_slots; i++) {
		p->slots[i] = (struct slot_bufs){
			.rbuf = p->bufmem + off, .rbuf_index = 2 * i,
			.wbuf = p->bufmem + off + p->pl.r_size, .wbuf_index = 2 * i + 1,
		};
		m->bufs[2 * i] = (struct iovec){ p->slots[i].rbuf, p->pl.r_size };
		m->bufs[2 * i + 1] = (struct iovec){ p->slots[i].wbuf, p->pl.w_size };
		off += p->pl.r_size + p->pl.w_size;
	}
	m->nr_bufs = 2 * p->nr_slots;
	for (int i = 0; i < MAX_FILES; i++)
		m->fds[i] = -1;
	for (int s = 0; s < pp->nr_sources; s++)
		m->fds[s] = p->src_fd[s];
	for (int d = 0; d < pp->nr_dests; d++)
		m->fds[pp->nr_sources + d] = p->dst_fd[d];

	meta_size = (meta_size + 63) / 64 * 64;
	p->meta = calloc(nr_tmpl, meta_size);
	assert_non_null(p->meta);
	assert_int_equal(loop_feed_init(&p->feed, &p->pl, pp->nr_sources, p->slots, p->nr_slots,
					nr_tmpl, p->meta, meta_size), 0);
	m->feed = &p->feed;
	m->lazy_fill = lazy;
	m->ctl = calloc(1, sizeof(*m->ctl));
	assert_non_null(m->ctl);
	cp = (struct loop_ctl_params){
		.nr_blocks = p->pl.nr_blocks, .nr_slots = p->nr_slots, .nr_tmpl = nr_tmpl,
		.nr_dests = pp->nr_dests, .dest_file = pp->nr_sources,
		.mon_fd = 100, .kick_fd = 101,
		.ckpt_blocks = 3, .ckpt_ns = 1000000000ULL, .tick_ns = 1000000000ULL,
		.now_ns = 0,
		/* the CQ as the kernel lays it out: head, tail, then the CQEs at 64 */
		.cq_entries = LOOP_CQ_CLASS1, .cq_head_off = 8, .cq_tail_off = 12,
		.cqes_off = LOOP_CQES_OFF,
		.skip_cqes = !p->one_cqe_per_request,
	};
	cp.wait_batch = loop_wait_batch(qd, max_ops, cp.skip_cqes);
	loop_ctl_setup(m->ctl, &cp);
	/* the first templates, before the first enter */
	assert_true(loop_feed_fill(&p->feed, m->ctl) > 0 || !p->pl.nr_blocks);
}

static void pipe_stop(struct pipe *p)
{
	loop_feed_free(&p->feed);
	free(p->m.ctl);
	free(p->m.pend);
	free(p->meta);
	free(p->bufmem);
	for (int s = 0; s < p->pp.nr_sources; s++)
		close(p->src_fd[s]);
	for (int d = 0; d < p->pp.nr_dests; d++)
		close(p->dst_fd[d]);
	p->m.ctl = NULL;
}

static void pipe_free(struct pipe *p)
{
	for (int i = 0; i < CONFIG_MAX_FILES; i++) {
		free(p->src_path[i]);
		free(p->dst_path[i]);
	}
	tu_rmrf(p->dir);
	free(p->dir);
}

static uint8_t *file_bytes(const char *path, size_t *len)
{
	uint8_t *b = tu_read_file(path, len);

	assert_non_null(b);
	return b;
}

/* what destination @d of a stripe over @n in units of @su must hold */
static uint8_t *stripe_member(const uint8_t *src, size_t len, int n, uint32_t su, int d,
			      size_t *out_len)
{
	uint8_t *o = malloc(len + 1);
	size_t k = 0;

	for (size_t x = (size_t)d * su; x < len; x += (size_t)n * su) {
		size_t c = len - x < su ? len - x : su;

		memcpy(o + k, src + x, c);
		k += c;
	}
	*out_len = k;
	return o;
}

static void assert_file_equals(const char *path, const uint8_t *want, size_t len)
{
	size_t got_len;
	uint8_t *got = file_bytes(path, &got_len);

	assert_int_equal(got_len, len);
	assert_memory_equal(got, want, len);
	free(got);
}

static void run_to_done(struct pipe *p)
{
	uint32_t st = model_run(&p->m);

	if (st != LOOP_DONE)
		fail_msg("state %u, err kind %u res %d block %llu", st, p->m.ctl->err_kind,
			 p->m.ctl->err_res, (unsigned long long)p->m.ctl->err_block);
	assert_int_equal(p->m.ctl->watermark, p->pl.nr_blocks);
	assert_int_equal(p->m.ctl->next_block, p->pl.nr_blocks);
}

/* ---- tests ---- */

static struct plan_params params(enum transform t, int ns, int nd, uint32_t bs, uint32_t su)
{
	return (struct plan_params){
		.transform = t, .nr_sources = ns, .nr_dests = nd, .block_size = bs,
		.stripe_unit = su, .io_align = 1,
	};
}

static void copy_is_byte_exact(void **state)
{
	size_t len = (5 << 20) + 12345, got;
	struct plan_params pp = params(TRANSFORM_COPY, 1, 1, 256 << 10, 0);
	struct pipe p = { 0 };
	uint8_t *src;

	(void)state;
	pipe_files(&p, 1, &len, 1, 1);
	pipe_start(&p, &pp, 8, 0, 16, true);
	run_to_done(&p);
	print_message("copy: %llu steps, %llu CQEs, %d notifies, %d kicks, %llu fsync rounds, "
		      "durable %llu/%llu\n", (unsigned long long)p.m.steps,
		      (unsigned long long)p.m.ctl->cqes, p.m.notifies, p.m.kicks_posted,
		      (unsigned long long)p.m.ctl->fsync_rounds,
		      (unsigned long long)p.m.ctl->durable, (unsigned long long)p.pl.nr_blocks);
	/* written straight from the read area: nothing for IORING_OP_BPF to copy */
	assert_int_equal(p.m.ctl->bpf_ops, 0);
	assert_int_equal(p.m.ctl->bpf_bytes, 0);
	assert_true(p.m.ctl->fsync_rounds > 0);
	assert_true(p.m.kicks_posted > 0);	/* 16 templates for 21 blocks: refilled */
	pipe_stop(&p);
	src = file_bytes(p.src_path[0], &got);
	assert_file_equals(p.dst_path[0], src, len);
	free(src);
	pipe_free(&p);
}

/* every template written before the loop: nothing to wake the monitor for */
static void templates_that_all_fit_wake_the_monitor_for_nothing_more(void **state)
{
	size_t len = (5 << 20) + 12345;
	struct plan_params pp = params(TRANSFORM_COPY, 1, 1, 256 << 10, 0);
	struct pipe p = { 0 };

	(void)state;
	pipe_files(&p, 1, &len, 1, 2);
	pipe_start(&p, &pp, 8, 0, 32, true);	/* 32 templates for 21 blocks */
	/* and no checkpoint, the other reason to wake it */
	p.m.ctl->ckpt_blocks = 1000;
	p.m.ctl->ckpt_ns = 1ULL << 50;
	run_to_done(&p);
	assert_int_equal(p.m.notifies, 0);
	assert_int_equal(p.m.kicks_posted, 0);
	pipe_stop(&p);
	pipe_free(&p);
}

static void mirror_writes_every_destination(void **state)
{
	size_t len = (3 << 20) + 777, got;
	struct plan_params pp = params(TRANSFORM_MIRROR, 1, 3, 128 << 10, 0);
	struct pipe p = { 0 };
	uint8_t *src;

	(void)state;
	pipe_files(&p, 1, &len, 3, 2);
	pipe_start(&p, &pp, 5, 0, 64, false);
	run_to_done(&p);
	assert_int_equal(p.m.ctl->bpf_bytes, 0);	/* three writes of one read area */
	pipe_stop(&p);
	src = file_bytes(p.src_path[0], &got);
	for (int d = 0; d < 3; d++)
		assert_file_equals(p.dst_path[d], src, len);
	free(src);
	pipe_free(&p);
}

static void stripe_then_destripe_round_trips(void **state)
{
	size_t len = (4 << 20) + 4097, got, ml;
	/* 96K does not divide 256K: every block lays out differently */
	struct plan_params sp = params(TRANSFORM_STRIPE, 1, 3, 256 << 10, 96 << 10);
	struct plan_params gp = params(TRANSFORM_GATHER, 3, 1, 256 << 10, 96 << 10);
	struct pipe p = { 0 }, q = { 0 };
	uint8_t *src, *want;

	(void)state;
	pipe_files(&p, 1, &len, 3, 3);
	pipe_start(&p, &sp, 7, 0, 32, true);
	run_to_done(&p);
	pipe_stop(&p);
	src = file_bytes(p.src_path[0], &got);
	for (int d = 0; d < 3; d++) {
		want = stripe_member(src, len, 3, 96 << 10, d, &ml);
		assert_file_equals(p.dst_path[d], want, ml);
		free(want);
	}

	/* and back: the members are the sources now */
	pipe_files(&q, 3, NULL, 1, 0);
	for (int s = 0; s < 3; s++) {
		free(q.src_path[s]);
		q.src_path[s] = strdup(p.dst_path[s]);
	}
	gp.gather = GATHER_DESTRIPE;
	pipe_start(&q, &gp, 4, 0, 8, true);
	run_to_done(&q);
	pipe_stop(&q);
	assert_file_equals(q.dst_path[0], src, len);
	free(src);
	pipe_free(&q);
	pipe_free(&p);
}

static void concat_joins_the_sources(void **state)
{
	size_t lens[3] = { (1 << 20) + 3, 5000, (2 << 20) + 111 }, total = 0, got;
	struct plan_params pp = params(TRANSFORM_GATHER, 3, 1, 192 << 10, 0);
	struct pipe p = { 0 };
	uint8_t *want, *b;

	(void)state;
	pipe_files(&p, 3, lens, 1, 4);
	pp.gather = GATHER_CONCAT;
	pipe_start(&p, &pp, 3, 0, 16, false);
	run_to_done(&p);
	pipe_stop(&p);
	want = malloc(lens[0] + lens[1] + lens[2]);
	for (int s = 0; s < 3; s++) {
		b = file_bytes(p.src_path[s], &got);
		memcpy(want + total, b, got);
		total += got;
		free(b);
	}
	assert_file_equals(p.dst_path[0], want, total);
	free(want);
	pipe_free(&p);
}

/* stop a two-way mirror of @len bytes: both destinations hold the source */
static void mirror_stop_and_compare(struct pipe *p, size_t len)
{
	size_t got;
	uint8_t *src;

	pipe_stop(p);
	src = file_bytes(p->src_path[0], &got);
	assert_file_equals(p->dst_path[0], src, len);
	assert_file_equals(p->dst_path[1], src, len);
	free(src);
	pipe_free(p);
}

static const char *cqe_mode(int per_request)
{
	return per_request ? "one CQE per request" : "one CQE per group";
}

static void short_transfers_resubmit_the_rest(void **state)
{
	size_t len = (2 << 20) + 999;
	struct plan_params pp = params(TRANSFORM_MIRROR, 1, 2, 64 << 10, 0);

	(void)state;
	/* with CQE skipping the short request's CQE is the group's only one */
	for (int per_request = 0; per_request < 2; per_request++) {
		struct pipe p = { .one_cqe_per_request = per_request };

		pipe_files(&p, 1, &len, 2, 5);
		pipe_start(&p, &pp, 4, 0, 32, false);
		p.m.short_read_nth = 3;
		p.m.short_write_every = 7;
		run_to_done(&p);
		print_message("%s: %llu groups resubmitted\n", cqe_mode(per_request),
			      (unsigned long long)p.m.ctl->retries);
		assert_true(p.m.ctl->retries >= 5);
		mirror_stop_and_compare(&p, len);
	}
}

/*
 * IOSQE_CQE_SKIP_SUCCESS on every request of a chain but the last: a
 * mirror block (READ, WRITE, WRITE) posts one CQE, not three
 */
static void a_block_posts_one_cqe_when_the_ring_skips(void **state)
{
	size_t len = 1 << 20;
	struct plan_params pp = params(TRANSFORM_MIRROR, 1, 2, 64 << 10, 0);

	(void)state;
	for (int per_request = 0; per_request < 2; per_request++) {
		struct pipe p = { .one_cqe_per_request = per_request };

		pipe_files(&p, 1, &len, 2, 11);
		pipe_start(&p, &pp, 8, 0, 32, false);
		run_to_done(&p);
		print_message("%s: %llu chain CQEs for %llu blocks\n", cqe_mode(per_request),
			      (unsigned long long)p.m.chain_cqes,
			      (unsigned long long)p.pl.nr_blocks);
		assert_int_equal(p.m.chain_cqes, (per_request ? 3 : 1) * p.pl.nr_blocks);
		assert_int_equal(p.m.ctl->retries, 0);
		mirror_stop_and_compare(&p, len);
	}
}

static void write_error_stops_with_block_and_errno(void **state)
{
	size_t len = 3 << 20;
	struct plan_params pp = params(TRANSFORM_COPY, 1, 1, 128 << 10, 0);
	struct pipe p = { 0 };
	uint32_t st;

	(void)state;
	pipe_files(&p, 1, &len, 1, 6);
	pipe_start(&p, &pp, 4, 0, 32, false);
	p.m.fail_write_nth = 9;
	p.m.fail_write_errno = ENOSPC;
	p.m.max_release = 1;	/* in order: the 9th write is block 8's */
	st = model_run(&p.m);
	assert_int_equal(st, LOOP_FAILED);
	assert_int_equal(p.m.ctl->err_kind, LOOP_OP_WRITE);
	assert_int_equal(p.m.ctl->err_res, -ENOSPC);
	assert_int_equal(p.m.ctl->err_block, 8);
	assert_int_equal(p.m.ctl->err_op, 1);		/* READ, WRITE from the read area */
	assert_int_equal(p.m.ctl->err_file, 1);		/* the destination */
	assert_int_equal(p.m.ctl->err_off, 8 * (128 << 10));
	/* nothing at or past the failed block counts as done */
	assert_true(p.m.ctl->watermark <= 8);
	assert_true(p.m.ctl->durable <= p.m.ctl->watermark);
	pipe_stop(&p);
	pipe_free(&p);
}

static void drain_stops_idle_and_resume_ends_identical(void **state)
{
	size_t len = (4 << 20) + 5, got;
	struct plan_params pp = params(TRANSFORM_STRIPE, 1, 2, 64 << 10, 16 << 10);
	struct pipe p = { 0 };
	uint64_t steps = 0, at;
	uint8_t *src, *want;
	size_t ml;
	uint32_t st;

	(void)state;
	pipe_files(&p, 1, &len, 2, 7);
	pipe_start(&p, &pp, 6, 0, 16, true);
	/* some steps, then the daemon asks to stop */
	for (; p.m.ctl->watermark < 10; steps++) {
		if (model_step(&p.m, steps))
			fail_msg("step %llu: state %u, err kind %u res %d block %llu op %u",
				 (unsigned long long)steps, p.m.ctl->state, p.m.ctl->err_kind,
				 p.m.ctl->err_res, (unsigned long long)p.m.ctl->err_block,
				 p.m.ctl->err_op);
		if (p.m.ctl->sq_k)
			loop_submitted(p.m.ctl, p.m.ctl->sq_k, model_submit(&p.m, p.m.ctl->sq_k));
		model_wait(&p.m);
	}
	assert_true(p.m.ctl->next_block > p.m.ctl->watermark);	/* chains in flight */
	p.m.ctl->cmd = LOOP_CMD_DRAIN;
	st = model_run(&p.m);
	assert_int_equal(st, LOOP_DRAINED);
	assert_int_equal(p.m.ctl->watermark, p.m.ctl->next_block);
	assert_true(p.m.ctl->watermark < p.pl.nr_blocks);
	at = plan_block_start(&p.pl, p.m.ctl->watermark);
	print_message("drained at block %llu of %llu (byte %llu)\n",
		      (unsigned long long)p.m.ctl->watermark,
		      (unsigned long long)p.pl.nr_blocks, (unsigned long long)at);
	pipe_stop(&p);

	/* the next run starts where the watermark was */
	pipe_start(&p, &pp, 6, at, 16, true);
	run_to_done(&p);
	pipe_stop(&p);
	src = file_bytes(p.src_path[0], &got);
	for (int d = 0; d < 2; d++) {
		want = stripe_member(src, len, 2, 16 << 10, d, &ml);
		assert_file_equals(p.dst_path[d], want, ml);
		free(want);
	}
	free(src);
	pipe_free(&p);
}

/* many completion orders, short writes and small template windows: always byte-exact */
static void random_orders_and_short_writes_stay_exact(void **state)
{
	size_t len = (1 << 20) + 333, got, ml;
	struct plan_params pp = params(TRANSFORM_STRIPE, 1, 3, 32 << 10, 12 << 10);
	uint8_t *src = NULL, *want;

	(void)state;
	for (int seed = 1; seed <= 24; seed++) {
		struct pipe p = { .one_cqe_per_request = seed % 3 == 1 };

		pipe_files(&p, 1, &len, 3, 100 + seed);
		pipe_start(&p, &pp, 1 + seed % 9, 0, 1u << (seed % 5), seed % 2);
		p.m.rng ^= (uint64_t)seed * 0x2545f4914f6cdd1dULL;
		p.m.max_release = seed % 3 == 0 ? 1 : 0;
		p.m.short_write_every = seed % 4 == 0 ? 5 : 0;
		run_to_done(&p);
		pipe_stop(&p);
		src = file_bytes(p.src_path[0], &got);
		for (int d = 0; d < 3; d++) {
			want = stripe_member(src, len, 3, 12 << 10, d, &ml);
			assert_file_equals(p.dst_path[d], want, ml);
			free(want);
		}
		free(src);
		pipe_free(&p);
	}
}

/*
 * O_DIRECT alignment: the source's tail is read with a rounded-up length and
 * comes back short, which cuts the link although nothing is missing
 */
static void aligned_reads_of_an_unaligned_tail_go_on(void **state)
{
	size_t len = (2 << 20) + 1000, got;
	struct plan_params pp = params(TRANSFORM_MIRROR, 1, 2, 256 << 10, 0);
	struct pipe p = { 0 };
	uint8_t *src, *out;

	(void)state;
	pp.io_align = 4096;
	pipe_files(&p, 1, &len, 2, 10);
	pipe_start(&p, &pp, 4, 0, 16, false);
	run_to_done(&p);
	assert_true(p.m.ctl->retries >= 1);	/* the writes of the last block, again */
	pipe_stop(&p);
	src = file_bytes(p.src_path[0], &got);
	for (int d = 0; d < 2; d++) {
		/* written padded to 4096; the daemon cuts it back when it finishes */
		out = file_bytes(p.dst_path[d], &got);
		assert_int_equal(got, (len + 4095) / 4096 * 4096);
		assert_memory_equal(out, src, len);
		free(out);
	}
	free(src);
	pipe_free(&p);
}

static void one_slot_and_one_block(void **state)
{
	size_t len = 1000, got;
	struct plan_params pp = params(TRANSFORM_COPY, 1, 1, 1 << 20, 0);
	struct pipe p = { 0 };
	uint8_t *src;

	(void)state;
	pipe_files(&p, 1, &len, 1, 8);
	pipe_start(&p, &pp, 16, 0, 4, true);
	assert_int_equal(p.nr_slots, 1);
	run_to_done(&p);
	assert_int_equal(p.m.ctl->fsync_rounds, 0);	/* the end is the daemon's fsync */
	pipe_stop(&p);
	src = file_bytes(p.src_path[0], &got);
	assert_file_equals(p.dst_path[0], src, len);
	free(src);
	pipe_free(&p);
}

static void template_addresses_stay_in_the_slot_buffers(void **state)
{
	size_t len = 3 << 20;
	struct plan_params pp = params(TRANSFORM_STRIPE, 1, 4, 256 << 10, 48 << 10);
	struct pipe p = { 0 };

	(void)state;
	pipe_files(&p, 1, &len, 4, 9);
	pipe_start(&p, &pp, 3, 0, 8, false);
	for (uint64_t b = 0; b < p.pl.nr_blocks && b < 8; b++) {
		const struct iou_loop_tmpl *t = &p.m.ctl->tmpl[b & 7];
		int s = b % p.nr_slots;

		assert_int_equal(t->block, b);
		assert_true(t->nr_ops >= 3 && t->nr_ops <= LOOP_MAX_OPS);
		assert_int_equal(t->ops[0].kind, LOOP_OP_READ);
		assert_int_equal(t->ops[0].buf_index, 2 * s);
		for (uint32_t o = 0; o < t->nr_ops; o++) {
			const struct iou_loop_op *op = &t->ops[o];

			if (op->kind == LOOP_OP_WRITE) {
				assert_int_equal(op->buf_index, 2 * s + 1);
				assert_true(in_buf(&p.m, op->buf_index, op->addr, op->len));
				assert_true(op->file >= 1 && op->file <= 4);
			}
			if (op->kind == LOOP_OP_BPF) {
				/* descriptors in this template's own meta area */
				uintptr_t m0 = (uintptr_t)p.meta + (b & 7) * p.feed.meta_stride;

				assert_true(op->addr >= m0 && op->addr < m0 + p.feed.meta_stride);
				assert_int_equal(op->op_flags >> IORING_BPF_OP_SHIFT, IOU_OP_ID_STRIPE);
			}
		}
	}
	pipe_stop(&p);
	pipe_free(&p);
}

static void program_constants_match_the_uapi(void **state)
{
	(void)state;
	assert_int_equal(LOOP_OPC_FSYNC, IORING_OP_FSYNC);
	assert_int_equal(LOOP_OPC_READ_FIXED, IORING_OP_READ_FIXED);
	assert_int_equal(LOOP_OPC_WRITE_FIXED, IORING_OP_WRITE_FIXED);
	assert_int_equal(LOOP_OPC_POLL_ADD, IORING_OP_POLL_ADD);
	assert_int_equal(LOOP_OPC_TIMEOUT, IORING_OP_TIMEOUT);
	assert_int_equal(LOOP_OPC_WRITE, IORING_OP_WRITE);
	assert_int_equal(LOOP_OPC_BPF, IOU_OP_BPF);
	assert_int_equal(LOOP_SQE_FIXED_FILE, IOSQE_FIXED_FILE);
	assert_int_equal(LOOP_SQE_IO_LINK, IOSQE_IO_LINK);
	assert_int_equal(LOOP_SQE_CQE_SKIP, IOSQE_CQE_SKIP_SUCCESS);
	assert_int_equal(LOOP_FSYNC_DATASYNC, IORING_FSYNC_DATASYNC);
	assert_int_equal(LOOP_TIMEOUT_MULTISHOT, IORING_TIMEOUT_MULTISHOT);
	assert_int_equal(LOOP_POLL_ADD_MULTI, IORING_POLL_ADD_MULTI);
	assert_int_equal(LOOP_CQE_F_MORE, IORING_CQE_F_MORE);
	assert_int_equal(IOU_EIO, EIO);
	assert_int_equal(IOU_EAGAIN, EAGAIN);
	assert_int_equal(IOU_EINVAL, EINVAL);
	assert_int_equal(IOU_ECANCELED, ECANCELED);
	assert_int_equal(IOU_ENODATA, ENODATA);
	assert_int_equal(IOU_EPROTO, EPROTO);
	assert_int_equal(sizeof(struct iou_loop_op), 32);
	assert_int_equal(sizeof(struct iou_loop_sq), LOOP_SQ_ENTRIES * 64);
	/* the verifier proves accesses against these */
	assert_true(sizeof(struct iou_loop_ctl) < (8u << 20));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(program_constants_match_the_uapi),
		cmocka_unit_test(template_addresses_stay_in_the_slot_buffers),
		cmocka_unit_test(copy_is_byte_exact),
		cmocka_unit_test(templates_that_all_fit_wake_the_monitor_for_nothing_more),
		cmocka_unit_test(mirror_writes_every_destination),
		cmocka_unit_test(stripe_then_destripe_round_trips),
		cmocka_unit_test(concat_joins_the_sources),
		cmocka_unit_test(short_transfers_resubmit_the_rest),
		cmocka_unit_test(a_block_posts_one_cqe_when_the_ring_skips),
		cmocka_unit_test(write_error_stops_with_block_and_errno),
		cmocka_unit_test(drain_stops_idle_and_resume_ends_identical),
		cmocka_unit_test(random_orders_and_short_writes_stay_exact),
		cmocka_unit_test(aligned_reads_of_an_unaligned_tail_go_on),
		cmocka_unit_test(one_slot_and_one_block),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
