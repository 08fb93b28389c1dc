// SPDX-License-Identifier: MIT
/*
 * A pipeline's setup and teardown: open and check its files, decide where
 * to resume, build the plan and the chains, set up the ring (buffers and
 * files registered) and attach the engine; and undo it all. pipeline.c
 * runs what this prepared.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bufpool.h"
#include "clock.h"
#include "files.h"
#include "log.h"
#include "pipeline_int.h"
#include "status.h"

#define MAX_RING_ENTRIES 32768

static int setup_plan(struct pipeline_run *pr)
{
	const struct pipeline_config *pc = &pr->cfg;
	struct plan_params pp = {
		.transform = pc->transform,
		.gather = pc->gather,
		.per_unit = pc->stripe_io == STRIPE_IO_PER_UNIT,
		.nr_sources = pr->fs.nr_src,
		.nr_dests = pr->fs.nr_dst,
		.offset = pc->offset,
		.dest_offset = pc->dest_offset,
		.block_size = pc->s.block_size,
		.stripe_unit = pc->s.stripe_unit,
		.io_align = files_io_align(&pr->fs),
	};
	const struct file_slot *why;
	int ret;

	for (int i = 0; i < pr->fs.nr_src; i++)
		pp.src_avail[i] = pr->fs.src[i].size - pc->offset;
	pp.length = pc->length == UINT64_MAX ? plan_default_length(&pp) : pc->length;
	/*
	 * buffers sized to the work: no block larger than the whole copy (a
	 * 1-byte file with block_size = 256M pins a page, not 256 MiB); a
	 * stripe's block stays whole units
	 */
	if (pp.length < pp.block_size) {
		bool units = pp.transform == TRANSFORM_STRIPE ||
			     (pp.transform == TRANSFORM_GATHER && pp.gather == GATHER_DESTRIPE);
		uint64_t g = units ? pp.stripe_unit : 4096, b;

		if (g < pp.io_align)
			g = pp.io_align;
		b = (pp.length + g - 1) / g * g;
		if (b && b < pp.block_size)
			pp.block_size = b;
	}
	pp.max_io = files_max_io(&pr->fs, plan_region_align(pp.io_align), &why);
	/* nothing to cut where a whole block fits */
	if (pp.max_io >= (pp.block_size + pp.io_align - 1) / pp.io_align * pp.io_align)
		pp.max_io = 0;
	if (pc->transform != TRANSFORM_GATHER && pp.length > pp.src_avail[0])
		return pipeline_fail(pr, -EINVAL,
				     "length %" PRIu64 " is more than source %s holds after "
				     "offset %" PRIu64 " (%" PRIu64 " bytes)",
				     pp.length, pr->fs.src[0].path, pc->offset, pp.src_avail[0]);
	ret = plan_init(&pr->plan, &pp);
	if (ret == -ERANGE) {
		if (pc->gather == GATHER_CONCAT)
			return pipeline_fail(pr, ret, "length %" PRIu64 " is more than the "
					     "sources hold after offset", pp.length);
		for (int s = 0; s < pr->fs.nr_src; s++) {
			uint64_t need = plan_src_bytes(&pp, s);

			if (need > pp.src_avail[s])
				return pipeline_fail(pr, ret,
						     "gather = destripe: source %s holds %" PRIu64
						     " bytes after offset, but a %" PRIu64 "-byte "
						     "stream striped over %d sources in units of %u "
						     "needs %" PRIu64 " from it",
						     pr->fs.src[s].path, pp.src_avail[s], pp.length,
						     pr->fs.nr_src, pp.stripe_unit, need);
		}
	}
	if (ret)
		return pipeline_fail(pr, ret, "inconsistent pipeline layout (%s)", strerror(-ret));
	ret = files_check_plan(&pr->fs, &pr->plan);
	if (ret)
		return pipeline_files_failed(pr, ret);
	ret = ckpt_decide_resume(pr, &pp);
	if (ret)
		return ret;
	/* again, now with the resume point */
	ret = plan_init(&pr->plan, &pp);
	/* cut requests the engine's chains cannot hold: the device splits them */
	if (!ret && pp.max_io && pr->engine->max_chain_ops &&
	    pr->plan.max_reads + pr->plan.max_writes +
	    engine_max_shuffle_sqes(pr) >
	    pr->engine->max_chain_ops) {
		log_info("pipeline %s: requests not cut to %u KiB: engine = %s holds at most %d "
			 "per block", pc->name, pp.max_io >> 10, pr->engine->name,
			 pr->engine->max_chain_ops);
		pp.max_io = 0;
		ret = plan_init(&pr->plan, &pp);
	}
	if (!ret && pp.max_io)
		log_info("pipeline %s: requests cut to %u KiB: %s takes at most that whole "
			 "(max_sectors_kb %u, max_segments %u of scattered pages), and a request "
			 "the block layer splits goes to an io-wq worker", pc->name,
			 pp.max_io >> 10, why->path, why->max_kb, why->max_segs);
	return ret;
}

/* chains in flight, and the read and write area of each: the one rule */
static int chain_areas(const struct pipeline_run *pr, bool from_read, size_t *r, size_t *w)
{
	const struct plan *pl = &pr->plan;
	uint64_t n = pl->nr_blocks < pr->cfg.s.queue_depth ? pl->nr_blocks :
							    pr->cfg.s.queue_depth;

	*r = pl->r_size;
	/* writing straight from the read area: the write area is unused */
	*w = from_read ? 4096 : pl->w_size;
	return n ? n : 1;
}

uint64_t pipeline_buffer_bytes(const struct pipeline_run *pr)
{
	size_t r, w;
	int n;

	if (!pr->plan.nr_blocks)
		return 0;
	/* every engine writes from the read area where the plan allows it */
	n = chain_areas(pr, pr->plan.write_from_read, &r, &w);
	return (uint64_t)n * (r + w);
}

static int setup_chains(struct pipeline_run *pr)
{
	const struct plan *pl = &pr->plan;
	bool from_read = pr->engine->elide_identity_shuffle && pl->write_from_read;
	size_t meta = engine_meta_size(pr), sizes[3 * 1024];
	int per_area = meta ? 3 : 2, ops, ret;
	size_t r, w;

	pr->nr_chains = chain_areas(pr, from_read, &r, &w);
	ops = pl->max_reads + 1 + pl->max_writes + engine_max_shuffle_sqes(pr);

	for (int i = 0; i < pr->nr_chains; i++) {
		sizes[per_area * i] = r;
		sizes[per_area * i + 1] = w;
		if (meta)
			sizes[per_area * i + 2] = meta;
	}
	ret = bufpool_get(pr->env->pool, &pr->mem, sizes, per_area * pr->nr_chains);
	pr->buffers_reused = ret == 1;
	if (ret < 0)
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
	/* every chain's ops, a checkpoint's fsync and a writeback start per destination, the wake poll */
	entries = ring_pow2(pr->nr_chains * ops + 2 * pr->fs.nr_dst + 1);
	cq_entries = 2 * entries;
	engine_ring_size(pr, ops, &entries, &cq_entries);
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
	/* one CQE per group of linked requests, where the kernel can (5.17+) */
	for (int i = 0; i < pr->nr_chains; i++)
		pr->chains[i].skip_cqes = pr->ring.params.features & IORING_FEAT_CQE_SKIP;
	ret = ring_register_buffers(&pr->ring, &pr->mem);
	if (ret) {
		getrlimit(RLIMIT_MEMLOCK, &rl);
		return pipeline_fail(pr, ret,
				     "registering %zu MiB of fixed buffers failed: %s "
				     "(RLIMIT_MEMLOCK is %llu KiB: raise it with `ulimit -l` in a "
				     "shell%s)", pr->mem.len >> 20, strerror(-ret),
				     rl.rlim_cur == RLIM_INFINITY ? 0ULL :
				     (unsigned long long)rl.rlim_cur >> 10, pr->env->oneshot ?
				     ", or lower --queue-depth or --block-size" :
				     " or LimitMEMLOCK= in the unit, or lower queue_depth or "
				     "block_size");
	}
	for (int i = 0; i < pr->fs.nr_src; i++)
		fds[nfds++] = pr->fs.src[i].fd;
	for (int i = 0; i < pr->fs.nr_dst; i++)
		fds[nfds++] = pr->fs.dst[i].fd;
	ret = ring_register_files(&pr->ring, fds, nfds);
	if (ret)
		return pipeline_fail(pr, ret, "registering files failed: %s", strerror(-ret));
	return 0;
}

static void teardown_ring(struct pipeline_run *pr)
{
	engine_detach(pr);
	ring_exit(&pr->ring);
	/* a record cut off with the ring (it broke): its tmp file goes */
	ckpt_record_drop(pr);
	if (pr->chains) {
		for (int i = 0; i < pr->nr_chains; i++) {
			free(pr->chains[i].ops);
			block_plan_free(&pr->chains[i].bp);
		}
		free(pr->chains);
		pr->chains = NULL;
	}
	bufpool_put(pr->env->pool, &pr->mem);
}

/* @pr zeroed, with no file open and its own copy of @pc */
static int run_init(struct pipeline_run *pr, const struct pipeline_config *pc,
		    const struct run_env *env, bool check_only)
{
	memset(pr, 0, sizeof(*pr));
	pthread_mutex_init(&pr->dur.lock, NULL);
	pr->env = env;
	pr->failed_off = pr->reported_off = UINT64_MAX;
	pr->fs.check_only = check_only;
	for (int i = 0; i < CONFIG_MAX_FILES; i++)
		pr->fs.src[i].fd = pr->fs.dst[i].fd = -1;
	pr->fs.cfg = &pr->cfg;
	pr->fs.stop = env->stop;
	pr->sums_fd = -1;
	pr->fs.private_dirs[0] = env->private_dirs ? env->private_dirs[0] : env->state_dir;
	pr->fs.private_dirs[1] = env->private_dirs ? env->private_dirs[1] : env->runtime_dir;
	return pipeline_config_dup(pc, &pr->cfg);
}

int pipeline_prepare(struct pipeline_run *pr, const struct pipeline_config *pc,
		     const struct run_env *env)
{
	struct pipeline_status *st = env->status;
	/* start-up by phase, for the log: files, plan, ring, engine, record */
	uint64_t t[6] = { clock_mono_ns() };
	char note[600];
	int ret;

	ret = run_init(pr, pc, env, false);
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

	ret = files_open(&pr->fs);
	if (ret)
		return pipeline_files_failed(pr, ret);
	t[1] = clock_mono_ns();
	ret = setup_plan(pr);
	if (ret)
		return ret;	/* 1: finished before, nothing to do */
	ret = sparse_map_build(pr);
	if (ret)
		return pipeline_fail(pr, ret, "cannot map the holes of %s: %s", pr->fs.src[0].path,
				     strerror(-ret));
	pr->fs.hole_bytes = pr->sparse.hole_bytes;
	ret = files_check_space(&pr->fs, &pr->plan);
	if (ret)
		return pipeline_files_failed(pr, ret);
	/* every check passed: only now may a destination come into being */
	ret = files_create_missing(&pr->fs);
	if (ret)
		pipeline_files_failed(pr, ret);
	else if (files_io_align(&pr->fs) != pr->plan.p.io_align)
		ret = setup_plan(pr);	/* the new file's O_DIRECT alignment */
	if (!ret)
		ret = sparse_punch_dests(pr);
	if (!ret)
		ret = sums_setup(pr);
	if (ret) {
		files_remove_created(&pr->fs);
		return ret < 0 ? ret : 0;
	}
	atomic_store(&st->bytes_total, pr->plan.p.length);
	atomic_store(&st->bytes_resumed, pr->plan.p.start);
	atomic_store(&st->bytes_done, pr->plan.p.start);
	atomic_store(&st->bytes_durable, pr->plan.p.start);
	pr->dur.durable = pr->dur.synced = pr->plan.p.start;
	pr->next_block = 0;
	t[2] = t[3] = clock_mono_ns();

	if (pr->plan.nr_blocks) {
		/* the programs load on another thread while the buffers fault in */
		engine_preload(pr);
		ret = setup_ring(pr);
		t[3] = clock_mono_ns();
		if (!ret)
			ret = engine_attach(pr);
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
			t[3] = clock_mono_ns();
			if (!ret)
				ret = engine_attach(pr);
		}
		if (ret) {
			files_remove_created(&pr->fs);
			return ret;
		}
	}
	t[4] = clock_mono_ns();
	/*
	 * a record from the start: the destinations' identities are in it. A
	 * pipeline that cannot record its progress would copy with nothing to
	 * resume from and fail at the end: refuse it before it copies
	 */
	ret = ckpt_write(pr, CKPT_RUNNING, pr->plan.p.start);
	if (ret) {
		files_remove_created(&pr->fs);
		return pipeline_fail(pr, ret, "cannot write its checkpoint in state_dir %s: %s; "
				     "nothing was copied", env->state_dir, strerror(-ret));
	}
	t[5] = clock_mono_ns();
	log_info("pipeline %s: %s %" PRIu64 " bytes in %" PRIu64 " blocks of %u, "
		 "%d chains, %s engine%s; ready in %.3f s (files %.3f, plan %.3f, ring and "
		 "buffers %.3f%s, engine %.3f, first record %.3f)", pc->name,
		 transform_to_string(pc->transform),
		 pr->plan.p.length - pr->plan.p.start, pr->plan.nr_blocks,
		 pr->plan.p.block_size, pr->nr_chains, pr->engine->name,
		 pr->plan.p.io_align > 1 ? ", O_DIRECT" : "", (t[5] - t[0]) / 1e9,
		 (t[1] - t[0]) / 1e9, (t[2] - t[1]) / 1e9, (t[3] - t[2]) / 1e9,
		 pr->buffers_reused ? " with buffers reused" : "", (t[4] - t[3]) / 1e9, (t[5] - t[4]) / 1e9);
	return 0;
}

int pipeline_check_open(struct pipeline_run *pr, const struct pipeline_config *pc,
			const struct run_env *env)
{
	int ret;

	ret = run_init(pr, pc, env, true);
	if (ret)
		return ret;
	ret = files_open(&pr->fs);
	if (ret)
		return pipeline_files_failed(pr, ret);
	ret = setup_plan(pr);
	if (!ret)
		ret = sparse_map_build(pr);
	if (!ret)
		ret = sums_setup(pr);
	if (!ret) {
		pr->fs.hole_bytes = pr->sparse.hole_bytes;
		ret = files_check_space(&pr->fs, &pr->plan);
		if (ret)
			pipeline_files_failed(pr, ret);
	}
	return ret < 0 ? ret : 0;	/* 1: finished before, which is fine */
}

void pipeline_cleanup(struct pipeline_run *pr)
{
	teardown_ring(pr);
	files_close(&pr->fs);
	sums_close(pr);
	sparse_map_free(&pr->sparse);
	pipeline_config_free(&pr->cfg);
	pthread_mutex_destroy(&pr->dur.lock);
}

int pipeline_check(const struct pipeline_config *pc, const struct run_env *env,
		   uint64_t *buffer_bytes, char *msg, size_t len)
{
	struct pipeline_run *pr = calloc(1, sizeof(*pr));
	int ret;

	if (!pr) {
		snprintf(msg, len, "out of memory");
		return -ENOMEM;
	}
	ret = pipeline_check_open(pr, pc, env);
	if (ret)
		snprintf(msg, len, "%s%s%s", pr->msg[0] ? pr->msg : "cannot be checked",
			 pr->fs.more[0] ? "\n" : "", pr->fs.more);
	else
		*buffer_bytes = pipeline_buffer_bytes(pr);
	pipeline_cleanup(pr);
	free(pr);
	return ret;
}
