// SPDX-License-Identifier: MIT
/*
 * One pipeline, run by one thread on its own ring:
 *
 *   prepare   open and check files, decide where to resume, build the plan,
 *             set up the ring, register buffers and files, attach the engine
 *   execute   keep queue_depth chains in flight, one block each; one
 *             io_uring_enter() per batch; checkpoint as blocks become durable
 *   finish    cut destinations to size, fsync, verify, record "finished"
 *
 * A chain is the block's ops in order (reads, shuffle, writes). Runs of
 * kernel ops are submitted as one linked group; a userspace step (the uring
 * engine's memcpy) splits the chain in two groups. A short transfer breaks
 * the link (the kernel cancels the rest with -ECANCELED): the rest of the
 * group is then resubmitted from the first op not done, so a short read or
 * write costs a round trip, never correctness.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "files.h"
#include "log.h"
#include "pipeline.h"

/* user_data: what a CQE belongs to */
#define TAG_SHIFT	56
#define TAG_CHAIN	1ULL
#define TAG_FSYNC	2ULL
#define TAG_WAKE	3ULL

#define WAIT_TIMEOUT_MS	1000	/* heartbeat for the watchdog while I/O is slow */
#define CKPT_MAX_NS	(5ULL * 1000000000ULL)	/* also checkpoint at least this often */
#define MAX_RING_ENTRIES 32768

const char *pipeline_state_to_string(enum pipeline_state s)
{
	static const char *const names[] = {
		"pending", "running", "finished", "stopped", "failed", "retrying",
	};

	return (unsigned int)s < 6 ? names[s] : "?";
}

void pipeline_status_init(struct pipeline_status *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_init(&st->lock, NULL);
	snprintf(st->engine, sizeof(st->engine), "-");
}

void pipeline_status_set_error(struct pipeline_status *st, const char *msg)
{
	pthread_mutex_lock(&st->lock);
	snprintf(st->last_error, sizeof(st->last_error), "%s", msg);
	pthread_mutex_unlock(&st->lock);
}

void pipeline_status_get_error(struct pipeline_status *st, char *buf, size_t len)
{
	pthread_mutex_lock(&st->lock);
	snprintf(buf, len, "%s", st->last_error);
	pthread_mutex_unlock(&st->lock);
}

void pipeline_status_set_note(struct pipeline_status *st, const char *msg)
{
	pthread_mutex_lock(&st->lock);
	snprintf(st->note, sizeof(st->note), "%s", msg);
	pthread_mutex_unlock(&st->lock);
}

void pipeline_status_get_note(struct pipeline_status *st, char *buf, size_t len)
{
	pthread_mutex_lock(&st->lock);
	snprintf(buf, len, "%s", st->note);
	pthread_mutex_unlock(&st->lock);
}

void pipeline_status_set_engine(struct pipeline_status *st, const char *name)
{
	pthread_mutex_lock(&st->lock);
	snprintf(st->engine, sizeof(st->engine), "%s", name);
	pthread_mutex_unlock(&st->lock);
}

void pipeline_status_get_engine(struct pipeline_status *st, char *buf, size_t len)
{
	pthread_mutex_lock(&st->lock);
	snprintf(buf, len, "%s", st->engine);
	pthread_mutex_unlock(&st->lock);
}

int pipeline_fail(struct pipeline_run *pr, int err, const char *fmt, ...)
{
	char body[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(body, sizeof(body), fmt, ap);
	va_end(ap);
	/* the first error is the one that matters; later ones are fallout */
	if (!pr->error) {
		pr->error = err;
		snprintf(pr->msg, sizeof(pr->msg), "%s", body);
		pipeline_status_set_error(pr->env->status, body);
	}
	atomic_fetch_add(&pr->env->status->errors, 1);
	log_err("pipeline %s: %s", pr->cfg.name, body);
	return err;
}

/* ---- resume ---- */

static void idents(const struct file_slot *f, int n, struct file_ident *out)
{
	for (int i = 0; i < n; i++)
		out[i] = f[i].ident;
}

/* bytes destination @d must already hold for a resume at logical @at */
static uint64_t dest_bytes_at(const struct plan_params *p, int d, uint64_t at)
{
	if (p->transform == TRANSFORM_STRIPE)
		return plan_stripe_share(at, p->nr_dests, p->stripe_unit, d);
	return at;
}

/* 1: nothing to do, 0: pr->plan.p.start is where to begin */
static int decide_resume(struct pipeline_run *pr, struct plan_params *pp)
{
	struct file_ident src[CONFIG_MAX_FILES], dst[CONFIG_MAX_FILES];
	struct checkpoint ck;
	enum resume_action act;
	char why[256];
	int ret;

	idents(pr->src, pr->nr_src, src);
	idents(pr->dst, pr->nr_dst, dst);
	ret = checkpoint_load(pr->env->state_dir, pr->cfg.name, &ck);
	if (ret == -EINVAL)
		log_warning("pipeline %s: checkpoint in %s is unreadable; ignoring it",
			    pr->cfg.name, pr->env->state_dir);
	act = checkpoint_decide(ret ? NULL : &ck, pipeline_config_fingerprint(&pr->cfg),
				src, pr->nr_src, dst, pr->nr_dst, pr->cfg.s.repeat,
				why, sizeof(why));
	if (act == RESUME_CONTINUE && ck.total != pp->length) {
		snprintf(why, sizeof(why), "checkpoint was for %" PRIu64 " bytes, now %" PRIu64
			 ": starting at 0", ck.total, pp->length);
		act = RESUME_FRESH;
	}
	if (act == RESUME_CONTINUE) {
		uint64_t at = ck.done - ck.done % pp->io_align;

		/* a destination cut short behind our back would leave a hole */
		for (int d = 0; d < pr->nr_dst && act == RESUME_CONTINUE; d++) {
			if (!pr->dst[d].is_bdev &&
			    pr->dst[d].size < pr->cfg.dest_offset + dest_bytes_at(pp, d, at)) {
				snprintf(why, sizeof(why), "destination %s is shorter than the "
					 "checkpoint says: starting at 0", pr->dst[d].path);
				act = RESUME_FRESH;
			}
		}
		if (act == RESUME_CONTINUE) {
			pp->start = at;
			pr->resumed = true;
		}
	}
	if (act == RESUME_SKIP) {
		log_notice("pipeline %s: %s", pr->cfg.name, why);
		return 1;
	}
	if (act == RESUME_FRESH)
		pp->start = 0;
	log_notice("pipeline %s: %s", pr->cfg.name, why);
	return 0;
}

static void ckpt_fill(struct pipeline_run *pr, enum ckpt_state state, uint64_t done)
{
	struct checkpoint *c = &pr->ckpt;

	c->fingerprint = pipeline_config_fingerprint(&pr->cfg);
	c->state = state;
	c->done = done;
	c->total = pr->plan.p.length;
	c->nr_sources = pr->nr_src;
	c->nr_dests = pr->nr_dst;
	idents(pr->src, pr->nr_src, c->src);
	for (int i = 0; i < pr->nr_dst; i++) {
		c->dst[i] = pr->dst[i].ident;
		if (state != CKPT_FINISHED)
			c->dst[i].size = c->dst[i].mtime_ns = 0;
	}
	c->updated = time(NULL);
}

static int ckpt_write(struct pipeline_run *pr, enum ckpt_state state, uint64_t done)
{
	int ret;

	ckpt_fill(pr, state, done);
	ret = checkpoint_save(pr->env->state_dir, pr->cfg.name, &pr->ckpt);
	if (ret) {
		/* progress is safe on disk, just not recorded: loud, not fatal */
		log_warning("pipeline %s: cannot write checkpoint in %s: %s",
			    pr->cfg.name, pr->env->state_dir, strerror(-ret));
		atomic_fetch_add(&pr->env->status->errors, 1);
		return ret;
	}
	pr->durable = done;
	pr->last_ckpt_ns = clock_mono_ns();
	atomic_store(&pr->env->status->bytes_durable, done);
	log_debug("pipeline %s: checkpoint: durable up to byte %" PRIu64 " of %" PRIu64,
		  pr->cfg.name, done, pr->plan.p.length);
	return 0;
}

int pipeline_checkpoint(struct pipeline_run *pr, enum ckpt_state state, uint64_t done)
{
	return ckpt_write(pr, state, done);
}

/* ---- setup ---- */

static int setup_plan(struct pipeline_run *pr)
{
	const struct pipeline_config *pc = &pr->cfg;
	struct plan_params pp = {
		.transform = pc->transform,
		.gather = pc->gather,
		.nr_sources = pr->nr_src,
		.nr_dests = pr->nr_dst,
		.offset = pc->offset,
		.dest_offset = pc->dest_offset,
		.block_size = pc->s.block_size,
		.stripe_unit = pc->s.stripe_unit,
		.io_align = files_io_align(pr),
	};
	int ret;

	for (int i = 0; i < pr->nr_src; i++)
		pp.src_avail[i] = pr->src[i].size - pc->offset;
	pp.length = pc->length == UINT64_MAX ? plan_default_length(&pp) : pc->length;
	if (pc->transform != TRANSFORM_GATHER && pp.length > pp.src_avail[0])
		return pipeline_fail(pr, -EINVAL,
				     "length %" PRIu64 " is more than source %s holds after "
				     "offset %" PRIu64 " (%" PRIu64 " bytes)",
				     pp.length, pr->src[0].path, pc->offset, pp.src_avail[0]);
	ret = plan_init(&pr->plan, &pp);
	if (ret == -ERANGE) {
		if (pc->gather == GATHER_CONCAT)
			return pipeline_fail(pr, ret, "length %" PRIu64 " is more than the "
					     "sources hold after offset", pp.length);
		for (int s = 0; s < pr->nr_src; s++) {
			uint64_t need = plan_src_bytes(&pp, s);

			if (need > pp.src_avail[s])
				return pipeline_fail(pr, ret,
						     "gather = destripe: source %s holds %" PRIu64
						     " bytes after offset, but a %" PRIu64 "-byte "
						     "stream striped over %d sources in units of %u "
						     "needs %" PRIu64 " from it",
						     pr->src[s].path, pp.src_avail[s], pp.length,
						     pr->nr_src, pp.stripe_unit, need);
		}
	}
	if (ret)
		return pipeline_fail(pr, ret, "inconsistent pipeline layout (%s)", strerror(-ret));
	ret = files_check_plan(pr);
	if (ret)
		return ret;
	ret = decide_resume(pr, &pp);
	if (ret)
		return ret;
	/* again, now with the resume point */
	return plan_init(&pr->plan, &pp);
}

static int setup_chains(struct pipeline_run *pr)
{
	const struct plan *pl = &pr->plan;
	bool from_read = pr->engine->elide_identity_shuffle && pl->write_from_read;
	size_t meta = pr->engine->meta_size(pr), sizes[3 * 1024];
	int per_area = meta ? 3 : 2, ops, ret;
	uint64_t n;

	n = pl->nr_blocks < pr->cfg.s.queue_depth ? pl->nr_blocks : pr->cfg.s.queue_depth;
	pr->nr_chains = n ? n : 1;
	ops = pl->max_reads + pr->engine->max_shuffle_sqes(pr) + 1 + pl->max_writes;

	for (int i = 0; i < pr->nr_chains; i++) {
		sizes[per_area * i] = pl->r_size;
		/* writing straight from the read area: the write area is unused */
		sizes[per_area * i + 1] = from_read ? 4096 : pl->w_size;
		if (meta)
			sizes[per_area * i + 2] = meta;
	}
	ret = ring_mem_alloc(&pr->mem, sizes, per_area * pr->nr_chains);
	if (ret)
		return pipeline_fail(pr, ret, "cannot allocate %d chain buffers: %s",
				     pr->nr_chains, strerror(-ret));
	pr->chains = calloc(pr->nr_chains, sizeof(*pr->chains));
	if (!pr->chains)
		return pipeline_fail(pr, -ENOMEM, "out of memory");
	for (int i = 0; i < pr->nr_chains; i++) {
		struct chain *c = &pr->chains[i];

		c->slot = i;
		c->max_ops = ops;
		c->ops = calloc(ops, sizeof(*c->ops));
		if (!c->ops || block_plan_alloc(pl, &c->bp))
			return pipeline_fail(pr, -ENOMEM, "out of memory");
		c->rbuf_index = per_area * i;
		c->wbuf_index = per_area * i + 1;
		c->meta_index = per_area * i + 2;
		c->rbuf = pr->mem.iov[c->rbuf_index].iov_base;
		c->wbuf = pr->mem.iov[c->wbuf_index].iov_base;
		if (meta) {
			c->meta = pr->mem.iov[c->meta_index].iov_base;
			c->meta_len = meta;
		}
	}
	return ops;
}

static int setup_ring(struct pipeline_run *pr)
{
	int fds[2 * CONFIG_MAX_FILES], nfds = 0, ops, ret;
	unsigned int entries, cq_entries;
	struct rlimit rl;

	ops = setup_chains(pr);
	if (ops < 0)
		return ops;
	entries = ring_pow2(pr->nr_chains * ops + pr->nr_dst + 1);
	cq_entries = 2 * entries;
	if (pr->engine->ring_size)
		pr->engine->ring_size(pr, ops, &entries, &cq_entries);
	if (entries > MAX_RING_ENTRIES || cq_entries > 2 * MAX_RING_ENTRIES)
		return pipeline_fail(pr, -EINVAL,
				     "queue_depth %u with %d ops per block needs %u ring entries; "
				     "at most %d: lower queue_depth",
				     pr->cfg.s.queue_depth, ops,
				     entries > MAX_RING_ENTRIES ? entries : cq_entries / 2,
				     MAX_RING_ENTRIES);
	ret = ring_init_sized(&pr->ring, entries, cq_entries, pr->engine->setup_flags);
	if (ret)
		return pipeline_fail(pr, ret, "io_uring setup (%u entries, %s engine) failed: %s",
				     entries, pr->engine->name, strerror(-ret));
	ret = ring_register_buffers(&pr->ring, &pr->mem);
	if (ret) {
		getrlimit(RLIMIT_MEMLOCK, &rl);
		return pipeline_fail(pr, ret,
				     "registering %zu MiB of fixed buffers failed: %s "
				     "(RLIMIT_MEMLOCK is %llu KiB: raise it with `ulimit -l` in a "
				     "shell or LimitMEMLOCK= in the unit, or lower queue_depth or "
				     "block_size)",
				     pr->mem.len >> 20, strerror(-ret),
				     rl.rlim_cur == RLIM_INFINITY ? 0ULL :
				     (unsigned long long)rl.rlim_cur >> 10);
	}
	for (int i = 0; i < pr->nr_src; i++)
		fds[nfds++] = pr->src[i].fd;
	for (int i = 0; i < pr->nr_dst; i++)
		fds[nfds++] = pr->dst[i].fd;
	ret = ring_register_files(&pr->ring, fds, nfds);
	if (ret)
		return pipeline_fail(pr, ret, "registering files failed: %s", strerror(-ret));
	return 0;
}

static void teardown_ring(struct pipeline_run *pr)
{
	if (pr->engine && pr->engine_priv)
		pr->engine->detach(pr);
	ring_exit(&pr->ring);
	if (pr->chains) {
		for (int i = 0; i < pr->nr_chains; i++) {
			free(pr->chains[i].ops);
			block_plan_free(&pr->chains[i].bp);
		}
		free(pr->chains);
		pr->chains = NULL;
	}
	ring_mem_free(&pr->mem);
}

int pipeline_prepare(struct pipeline_run *pr, const struct pipeline_config *pc,
		     const struct run_env *env)
{
	struct pipeline_status *st = env->status;
	char note[600];
	int ret;

	memset(pr, 0, sizeof(*pr));
	pr->env = env;
	pr->failed_off = UINT64_MAX;
	for (int i = 0; i < CONFIG_MAX_FILES; i++)
		pr->src[i].fd = pr->dst[i].fd = -1;
	ret = pipeline_config_dup(pc, &pr->cfg);
	if (ret)
		return ret;

	ret = engine_select(pc->s.engine, env->probe, &pr->engine, note, sizeof(note));
	if (ret)
		return pipeline_fail(pr, ret, "%s", note);
	if (note[0]) {
		log_warning("pipeline %s: %s", pc->name, note);
		pipeline_status_set_note(st, note);
	}
	pipeline_status_set_engine(st, pr->engine->name);

	ret = files_open(pr);
	if (ret)
		return ret;
	ret = setup_plan(pr);
	if (ret)
		return ret;	/* 1: finished before, nothing to do */
	ret = files_check_space(pr);
	if (ret)
		return ret;
	/* every check passed: only now may a destination come into being */
	ret = files_create_missing(pr);
	if (!ret && files_io_align(pr) != pr->plan.p.io_align)
		ret = setup_plan(pr);	/* the new file's O_DIRECT alignment */
	if (ret) {
		files_remove_created(pr);
		return ret < 0 ? ret : 0;
	}
	atomic_store(&st->bytes_total, pr->plan.p.length);
	atomic_store(&st->bytes_resumed, pr->plan.p.start);
	atomic_store(&st->bytes_done, pr->plan.p.start);
	atomic_store(&st->bytes_durable, pr->plan.p.start);
	pr->durable = pr->synced = pr->plan.p.start;
	pr->next_block = 0;

	if (pr->plan.nr_blocks) {
		ret = setup_ring(pr);
		if (!ret)
			ret = pr->engine->attach(pr);
		if (ret && pc->s.engine == ENGINE_AUTO && pr->engine != &engine_uring_ops) {
			/* auto never fails for want of the bpf engine: say so and fall back */
			log_warning("pipeline %s: engine = auto: %s; falling back to the uring "
				    "engine", pc->name, pr->msg);
			snprintf(note, sizeof(note), "engine = auto fell back to uring: %s", pr->msg);
			pipeline_status_set_note(st, note);
			pipeline_status_set_error(st, "");
			pr->error = 0;
			pr->msg[0] = '\0';
			teardown_ring(pr);
			pr->engine = &engine_uring_ops;
			pipeline_status_set_engine(st, pr->engine->name);
			ret = setup_ring(pr);
			if (!ret)
				ret = pr->engine->attach(pr);
		}
		if (ret) {
			files_remove_created(pr);
			return ret;
		}
	}
	/* a record from the start: the destinations' identities are in it */
	ckpt_write(pr, CKPT_RUNNING, pr->plan.p.start);
	log_info("pipeline %s: %s %" PRIu64 " bytes in %" PRIu64 " blocks of %u, "
		 "%d chains, %s engine%s", pc->name, transform_to_string(pc->transform),
		 pr->plan.p.length - pr->plan.p.start, pr->plan.nr_blocks,
		 pr->plan.p.block_size, pr->nr_chains, pr->engine->name,
		 pr->plan.p.io_align > 1 ? ", O_DIRECT" : "");
	return 0;
}

int pipeline_check_open(struct pipeline_run *pr, const struct pipeline_config *pc,
			const struct run_env *env)
{
	int ret;

	memset(pr, 0, sizeof(*pr));
	pr->env = env;
	pr->failed_off = UINT64_MAX;
	pr->check_only = true;
	for (int i = 0; i < CONFIG_MAX_FILES; i++)
		pr->src[i].fd = pr->dst[i].fd = -1;
	ret = pipeline_config_dup(pc, &pr->cfg);
	if (ret)
		return ret;
	ret = files_open(pr);
	if (!ret)
		ret = setup_plan(pr);
	if (!ret)
		ret = files_check_space(pr);
	return ret < 0 ? ret : 0;	/* 1: finished before, which is fine */
}

void pipeline_cleanup(struct pipeline_run *pr)
{
	teardown_ring(pr);
	files_close(pr);
	pipeline_config_free(&pr->cfg);
}

/* ---- chains ---- */

static int chain_build(struct pipeline_run *pr, struct chain *c, uint64_t block)
{
	const struct plan *pl = &pr->plan;
	bool from_read = pr->engine->elide_identity_shuffle && pl->write_from_read;
	int ret;

	ret = plan_block(pl, block, &c->bp);
	if (ret)
		return ret;
	c->nr_ops = 0;
	for (int i = 0; i < c->bp.nr_reads; i++) {
		const struct plan_io *io = &c->bp.reads[i];
		struct chain_op *op = &c->ops[c->nr_ops++];

		*op = (struct chain_op){
			.kind = CHAIN_OP_READ, .file = io->file, .buf_index = c->rbuf_index,
			.buf = c->rbuf + io->buf_off, .file_off = io->file_off,
			.io_len = io->io_len, .expect = io->expect,
		};
	}
	if (!from_read) {
		ret = pr->engine->build_shuffle(pr, c);
		if (ret)
			return ret;
	}
	for (int i = 0; i < c->bp.nr_writes; i++) {
		const struct plan_io *io = &c->bp.writes[i];
		struct chain_op *op;

		if (c->nr_ops >= c->max_ops)
			return -E2BIG;
		op = &c->ops[c->nr_ops++];
		*op = (struct chain_op){
			.kind = CHAIN_OP_WRITE, .file = pr->nr_src + io->file,
			.file_off = io->file_off, .io_len = io->io_len, .expect = io->expect,
		};
		if (from_read) {
			op->buf_index = c->rbuf_index;
			op->buf = c->rbuf + io->rbuf_off;
		} else {
			op->buf_index = c->wbuf_index;
			op->buf = c->wbuf + io->buf_off;
		}
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
				 op->nr_pairs, op->expect);
		iou_sqe_bpf_op_flags(sqe) = iou_bpf_op_flags(op->op_id, 0);
		break;
	case CHAIN_OP_USER_COPY:
		break;
	}
	io_uring_sqe_set_data64(sqe, (TAG_CHAIN << TAG_SHIFT) | ((uint64_t)c->slot << 16) | idx);
}

static void chain_release(struct pipeline_run *pr, struct chain *c)
{
	c->busy = false;
	pr->inflight_chains--;
}

static void chain_done(struct pipeline_run *pr, struct chain *c)
{
	atomic_fetch_add(&pr->env->status->bytes_done, c->bp.len);
	chain_release(pr, c);
}

/*
 * Submit the next group of @c: from the first op not complete up to the
 * next userspace step. Userspace steps at the front run right here.
 */
static int chain_submit(struct pipeline_run *pr, struct chain *c)
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
		ret = pr->engine->user_copy(pr, c);
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
			sqe->flags |= IOSQE_IO_LINK;
		c->ops[i].res = 0;
	}
	c->group_end = i;
	c->inflight = i - c->next;
	return 0;
}

static const char *op_path(const struct pipeline_run *pr, const struct chain_op *op)
{
	if (op->kind == CHAIN_OP_READ)
		return pr->src[op->file].path;
	if (op->kind == CHAIN_OP_WRITE)
		return pr->dst[op->file - pr->nr_src].path;
	return "-";
}

static int chain_fail(struct pipeline_run *pr, struct chain *c, const struct chain_op *op,
		      int err, const char *what)
{
	if (c->bp.logical_off < pr->failed_off)
		pr->failed_off = c->bp.logical_off;
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
	if (op->kind == CHAIN_OP_BPF)
		pipeline_fail(pr, err, "IORING_OP_BPF (op id %u, %u pairs) for the block at "
			      "logical offset %" PRIu64 " failed: %s", op->op_id, op->nr_pairs,
			      c->bp.logical_off, what);
	else
		pipeline_fail(pr, err, "%s %s at offset %" PRIu64 " (%u bytes) failed: %s",
			      op->kind == CHAIN_OP_READ ? "read from" : "write to",
			      op_path(pr, op), op->file_off + op->done, op->io_len - op->done,
			      what);
	chain_release(pr, c);
	return err;
}

/* all CQEs of the group are in: judge it, then go on or resubmit */
static int chain_group_done(struct pipeline_run *pr, struct chain *c)
{
	bool short_seen = false, cancelled = false;
	const struct chain_op *cancelled_op = NULL;
	char what[96];

	for (int i = c->next; i < c->group_end; i++) {
		struct chain_op *op = &c->ops[i];
		int res = op->res;

		if (res == -ECANCELED) {
			cancelled = true;
			if (!cancelled_op)
				cancelled_op = op;
			continue;
		}
		if (res < 0)
			return chain_fail(pr, c, op, res, strerror(-res));
		/*
		 * Less than asked for cuts the link, also when it is all there
		 * is: an O_DIRECT read of a source's unaligned tail
		 */
		if ((op->kind == CHAIN_OP_READ || op->kind == CHAIN_OP_WRITE) &&
		    (uint32_t)res < op->io_len - op->done)
			short_seen = true;
		switch (op->kind) {
		case CHAIN_OP_READ:
			op->done += res;
			if (op->done >= op->expect) {
				op->complete = true;
			} else if (res == 0) {
				snprintf(what, sizeof(what), "unexpected end of file after %u of "
					 "%u bytes (was the source truncated?)", op->done, op->expect);
				return chain_fail(pr, c, op, -ENODATA, what);
			} else {
				short_seen = true;
			}
			break;
		case CHAIN_OP_WRITE:
			op->done += res;
			if (op->done >= op->io_len) {
				op->complete = true;
			} else if (res == 0) {
				return chain_fail(pr, c, op, -EIO, "the write made no progress");
			} else {
				short_seen = true;
			}
			break;
		case CHAIN_OP_BPF:
			if ((uint32_t)res != op->expect) {
				snprintf(what, sizeof(what), "copied %d of %u bytes", res, op->expect);
				return chain_fail(pr, c, op, -EIO, what);
			}
			op->complete = true;
			atomic_fetch_add(&pr->env->status->bpf_ops, 1);
			atomic_fetch_add(&pr->env->status->bpf_bytes, res);
			pr->bpf_bytes += res;
			break;
		case CHAIN_OP_USER_COPY:
			break;
		}
	}
	/* the link was cut: fine after a short transfer, an error otherwise */
	if (cancelled && !short_seen)
		return chain_fail(pr, c, cancelled_op, -ECANCELED,
				  "cancelled (the ring is going away?)");
	return chain_submit(pr, c);
}

static void handle_chain_cqe(struct pipeline_run *pr, uint64_t data, int res)
{
	int slot = (data >> 16) & 0xffff, idx = data & 0xffff, ret;
	struct chain *c;

	if (slot >= pr->nr_chains)
		return;
	c = &pr->chains[slot];
	if (!c->busy || idx < c->next || idx >= c->group_end)
		return;
	c->ops[idx].res = res;
	if (--c->inflight > 0)
		return;
	ret = chain_group_done(pr, c);
	if (ret && c->busy) {
		pipeline_fail(pr, ret, "chain for the block at %" PRIu64 " could not continue: %s",
			      c->bp.logical_off, strerror(-ret));
		chain_release(pr, c);
	}
}

/* ---- checkpoints while running ---- */

static uint64_t watermark(const struct pipeline_run *pr)
{
	uint64_t m;

	m = pr->next_block < pr->plan.nr_blocks ?
		plan_block_start(&pr->plan, pr->next_block) : pr->plan.p.length;
	for (int i = 0; i < pr->nr_chains; i++)
		if (pr->chains[i].busy && pr->chains[i].bp.logical_off < m)
			m = pr->chains[i].bp.logical_off;
	return m < pr->failed_off ? m : pr->failed_off;
}

static void ckpt_begin(struct pipeline_run *pr, bool force)
{
	uint64_t w = watermark(pr), interval = pr->cfg.s.checkpoint_interval;

	if (pr->ckpt_fsyncs || pr->error || w <= pr->durable)
		return;
	if (!force && w - pr->durable < interval && clock_mono_ns() - pr->last_ckpt_ns < CKPT_MAX_NS)
		return;
	/* everything below w has completed; flush it, then record w */
	for (int d = 0; d < pr->nr_dst; d++) {
		struct io_uring_sqe *sqe = ring_get_sqe(&pr->ring);

		if (!sqe)
			break;
		io_uring_prep_fsync(sqe, pr->nr_src + d, IORING_FSYNC_DATASYNC);
		sqe->flags |= IOSQE_FIXED_FILE;
		io_uring_sqe_set_data64(sqe, (TAG_FSYNC << TAG_SHIFT) | d);
		pr->ckpt_fsyncs++;
	}
	pr->ckpt_watermark = w;
}

static void handle_fsync_cqe(struct pipeline_run *pr, uint64_t data, int res)
{
	int d = data & 0xffff;

	if (res < 0) {
		pr->sync_failed = true;
		pipeline_fail(pr, res, "fdatasync of destination %s failed: %s; the checkpoint "
			      "stays at %" PRIu64, d < pr->nr_dst ? pr->dst[d].path : "?",
			      strerror(-res), pr->durable);
	}
	if (--pr->ckpt_fsyncs == 0 && !pr->error) {
		pr->synced = pr->ckpt_watermark;
		ckpt_write(pr, CKPT_RUNNING, pr->ckpt_watermark);
	}
}

/* ---- wake-ups from the daemon (stop requests) ---- */

static void wake_arm(struct pipeline_run *pr)
{
	struct io_uring_sqe *sqe;

	if (pr->env->wake_fd < 0 || pr->wake_armed)
		return;
	sqe = ring_get_sqe(&pr->ring);
	if (!sqe)
		return;
	io_uring_prep_poll_multishot(sqe, pr->env->wake_fd, POLLIN);
	io_uring_sqe_set_data64(sqe, TAG_WAKE << TAG_SHIFT);
	pr->wake_armed = true;
}

static void handle_wake_cqe(struct pipeline_run *pr, const struct io_uring_cqe *cqe)
{
	uint64_t v;

	if (cqe->res > 0 && read(pr->env->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_debug("pipeline %s: wake read: %s", pr->cfg.name, strerror(errno));
	if (!(cqe->flags & IORING_CQE_F_MORE))
		pr->wake_armed = false;
}

/* ---- the generic chain driver ---- */

static bool stop_requested(const struct pipeline_run *pr)
{
	return pr->env->stop && atomic_load(pr->env->stop);
}

bool pipeline_stop_requested(const struct pipeline_run *pr)
{
	return stop_requested(pr);
}

/*
 * What a crash may cost is bounded (iou-offloadd(8): about queue_depth
 * blocks plus checkpoint_interval): a block is only started when it ends
 * within that window past the last flushed checkpoint. Without this, the
 * writes run ahead of a slow fdatasync by far more than a queue depth.
 */
static bool within_ckpt_window(const struct pipeline_run *pr)
{
	uint64_t base = pr->synced > pr->durable ? pr->synced : pr->durable;
	uint64_t window = pr->cfg.s.checkpoint_interval +
			  (uint64_t)pr->nr_chains * pr->plan.p.block_size;

	return plan_block_start(&pr->plan, pr->next_block) + pr->plan.p.block_size <=
	       base + window;
}

static int fill_chains(struct pipeline_run *pr)
{
	int ret;

	for (int i = 0; i < pr->nr_chains && pr->next_block < pr->plan.nr_blocks; i++) {
		struct chain *c = &pr->chains[i];

		if (c->busy)
			continue;
		if (!within_ckpt_window(pr))
			break;
		ret = chain_build(pr, c, pr->next_block);
		if (ret)
			return pipeline_fail(pr, ret, "cannot build the chain for block %" PRIu64
					     ": %s", pr->next_block, strerror(-ret));
		c->busy = true;
		pr->inflight_chains++;
		pr->next_block++;
		ret = chain_submit(pr, c);
		if (ret && c->busy) {
			chain_release(pr, c);
			return pipeline_fail(pr, ret, "cannot submit block %" PRIu64 ": %s",
					     c->bp.index, strerror(-ret));
		}
	}
	return 0;
}

static int drive_chains(struct pipeline_run *pr)
{
	struct pipeline_status *st = pr->env->status;
	bool stopping = false;
	int ret;

	pr->last_ckpt_ns = clock_mono_ns();
	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned int head, seen = 0;

		atomic_store(&st->heartbeat_ns, clock_mono_ns());
		stopping = stopping || stop_requested(pr);
		if (!stopping && !pr->error)
			fill_chains(pr);
		ckpt_begin(pr, false);
		wake_arm(pr);
		if (!pr->inflight_chains && !pr->ckpt_fsyncs)
			break;

		ret = ring_submit_and_wait(&pr->ring, 1, WAIT_TIMEOUT_MS);
		atomic_store(&st->enters, pr->ring.enters);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
			/* the ring itself is broken: nothing in flight can be trusted */
			return pipeline_fail(pr, ret, "io_uring_enter failed: %s", strerror(-ret));
		}
		io_uring_for_each_cqe(&pr->ring.uring, head, cqe) {
			uint64_t data = io_uring_cqe_get_data64(cqe);

			switch (data >> TAG_SHIFT) {
			case TAG_CHAIN:
				handle_chain_cqe(pr, data, cqe->res);
				break;
			case TAG_FSYNC:
				handle_fsync_cqe(pr, data, cqe->res);
				break;
			case TAG_WAKE:
				handle_wake_cqe(pr, cqe);
				break;
			}
			seen++;
		}
		io_uring_cq_advance(&pr->ring.uring, seen);
	}
	atomic_store(&st->enters, pr->ring.enters);
	if (pr->fallout_count)
		log_err("pipeline %s: %" PRIu64 " more request(s) failed after that, for blocks "
			"at logical offsets %" PRIu64 " to %" PRIu64, pr->cfg.name,
			pr->fallout_count, pr->fallout_lo, pr->fallout_hi);
	if (pr->error)
		return pr->error;
	if (stopping && pr->next_block < pr->plan.nr_blocks)
		return -EINTR;
	/* never "finished" with blocks not even submitted */
	if (pr->next_block < pr->plan.nr_blocks)
		return pipeline_fail(pr, -EIO, "stalled at block %" PRIu64 " of %" PRIu64
				     " with nothing in flight", pr->next_block, pr->plan.nr_blocks);
	return 0;
}

/* ---- the end: durable, the right size, and only then "finished" ---- */

static int sync_dests(struct pipeline_run *pr, bool full)
{
	int ret = 0;

	for (int d = 0; d < pr->nr_dst; d++) {
		if ((full ? fsync(pr->dst[d].fd) : fdatasync(pr->dst[d].fd)) < 0 && !ret) {
			ret = -errno;
			pr->sync_failed = true;
			pipeline_fail(pr, ret, "%s of destination %s failed: %s",
				      full ? "fsync" : "fdatasync", pr->dst[d].path,
				      strerror(-ret));
		}
	}
	return ret;
}

static int finish(struct pipeline_run *pr)
{
	const struct pipeline_config *pc = &pr->cfg;
	int ret;

	for (int d = 0; d < pr->nr_dst; d++) {
		struct file_slot *f = &pr->dst[d];
		uint64_t end = pc->dest_offset + plan_dest_bytes(&pr->plan, d);

		if (f->is_bdev)
			continue;
		/* truncate = no: keep what lies beyond; the writes reached end already */
		if (pc->s.truncate && ftruncate(f->fd, end) < 0) {
			ret = -errno;
			return pipeline_fail(pr, ret, "cannot set the size of %s to %" PRIu64
					     ": %s", f->path, end, strerror(-ret));
		}
	}
	ret = sync_dests(pr, true);
	if (ret)
		return ret;
	ret = files_check_unchanged(pr);
	if (ret)
		return ret;
	for (int d = 0; d < pr->nr_dst; d++) {
		struct file_slot *f = &pr->dst[d];
		uint64_t end = pc->dest_offset + plan_dest_bytes(&pr->plan, d);

		ret = file_identify(f);
		if (ret)
			return pipeline_fail(pr, ret, "cannot stat %s: %s", f->path, strerror(-ret));
		if (!f->is_bdev && f->size < end)
			return pipeline_fail(pr, -EIO, "destination %s is %" PRIu64 " bytes after "
					     "the copy, expected %" PRIu64, f->path, f->size, end);
	}
	ret = ckpt_write(pr, CKPT_FINISHED, pr->plan.p.length);
	if (ret)
		return pipeline_fail(pr, ret, "cannot record completion in %s: %s",
				     pr->env->state_dir, strerror(-ret));
	return 0;
}

/*
 * Stopped or failed: record what is durable, never more. Once an fsync has
 * failed, a later one proves nothing: the kernel reports a writeback error
 * to each open file once, and the pages it lost are clean by then. So after
 * a failed fsync the checkpoint stays where the last good one put it.
 */
static void wind_down(struct pipeline_run *pr, enum ckpt_state state)
{
	uint64_t w = watermark(pr);

	if (!pr->sync_failed && sync_dests(pr, false) == 0 && w > pr->durable)
		ckpt_write(pr, state, w);
	else
		ckpt_write(pr, state, pr->durable);
}

static double tv_s(struct timeval tv)
{
	return tv.tv_sec + tv.tv_usec / 1e6;
}

int pipeline_execute(struct pipeline_run *pr)
{
	struct pipeline_status *st = pr->env->status;
	struct rusage t0, t1, p0, p1;
	int ret;

	atomic_store(&st->state, PIPELINE_RUNNING);
	atomic_store(&st->start_ns, clock_mono_ns());
	getrusage(RUSAGE_THREAD, &t0);
	getrusage(RUSAGE_SELF, &p0);
	if (pr->plan.nr_blocks)
		ret = pr->engine->drive ? pr->engine->drive(pr) : drive_chains(pr);
	else
		ret = 0;
	atomic_store(&st->end_ns, clock_mono_ns());
	getrusage(RUSAGE_THREAD, &t1);
	getrusage(RUSAGE_SELF, &p1);
	/* the process includes io-wq workers (and other pipelines' threads) */
	log_info("pipeline %s: %.3f s; CPU of its thread %.3f s user, %.3f s system; of the "
		 "process %.3f s user, %.3f s system", pr->cfg.name,
		 (atomic_load(&st->end_ns) - atomic_load(&st->start_ns)) / 1e9,
		 tv_s(t1.ru_utime) - tv_s(t0.ru_utime), tv_s(t1.ru_stime) - tv_s(t0.ru_stime),
		 tv_s(p1.ru_utime) - tv_s(p0.ru_utime), tv_s(p1.ru_stime) - tv_s(p0.ru_stime));
	if (ret == 0)
		ret = finish(pr);
	if (ret == -EINTR) {
		wind_down(pr, CKPT_STOPPED);
		log_notice("pipeline %s: stopped at byte %" PRIu64 " of %" PRIu64
			   " (checkpointed)", pr->cfg.name, pr->durable, pr->plan.p.length);
		return -EINTR;
	}
	if (ret) {
		wind_down(pr, CKPT_FAILED);
		return ret;
	}
	log_notice("pipeline %s: finished, %" PRIu64 " bytes, %s engine, %" PRIu64
		   " io_uring_enter calls, %" PRIu64 " IORING_OP_BPF completions",
		   pr->cfg.name, pr->plan.p.length - pr->plan.p.start, pr->engine->name,
		   pr->ring.enters, atomic_load(&st->bpf_ops));
	return 0;
}

static bool sleep_or_stop(const struct run_env *env, unsigned int seconds)
{
	uint64_t until = clock_mono_ns() + seconds * 1000000000ULL, t;

	while ((t = clock_mono_ns()) < until) {
		struct pollfd pfd = { .fd = env->wake_fd, .events = POLLIN };
		int ms = (until - t) / 1000000 + 1;

		if (env->stop && atomic_load(env->stop))
			return true;
		if (env->wake_fd >= 0)
			poll(&pfd, 1, ms > 200 ? 200 : ms);
		else
			usleep((ms > 200 ? 200 : ms) * 1000);
	}
	return env->stop && atomic_load(env->stop);
}

void run_env_wake_main(const struct run_env *env)
{
	uint64_t one = 1;

	/* EAGAIN: the counter is full, so the main thread is awake anyway */
	if (env->main_fd >= 0 && write(env->main_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_debug("wake main thread: %s", strerror(errno));
}

int pipeline_run(const struct pipeline_config *pc, const struct run_env *env)
{
	struct pipeline_status *st = env->status;
	struct pipeline_run *pr;
	int ret = 0;

	pr = calloc(1, sizeof(*pr));
	if (!pr)
		return -ENOMEM;
	for (uint32_t attempt = 0; attempt <= pc->s.retries; attempt++) {
		if (attempt) {
			atomic_store(&st->state, PIPELINE_RETRYING);
			log_notice("pipeline %s: retry %u of %u in %u s", pc->name, attempt,
				   pc->s.retries, pc->s.retry_delay);
			if (sleep_or_stop(env, pc->s.retry_delay)) {
				ret = -EINTR;
				break;
			}
		}
		ret = pipeline_prepare(pr, pc, env);
		atomic_store(&st->setup_done, true);
		run_env_wake_main(env);
		if (ret == 1) {
			atomic_store(&st->bytes_total, pr->plan.p.length);
			atomic_store(&st->bytes_done, pr->plan.p.length);
			atomic_store(&st->bytes_durable, pr->plan.p.length);
			pipeline_cleanup(pr);
			ret = 0;
			break;
		}
		if (!ret)
			ret = pipeline_execute(pr);
		pipeline_cleanup(pr);
		if (ret == 0 || ret == -EINTR)
			break;
		if (stop_requested(pr))
			break;
	}
	atomic_store(&st->state, ret == 0 ? PIPELINE_FINISHED :
				 ret == -EINTR ? PIPELINE_STOPPED : PIPELINE_FAILED);
	free(pr);
	return ret;
}
