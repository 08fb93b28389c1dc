// SPDX-License-Identifier: MIT
/*
 * The bpf engine: each block is READ_FIXED -> IORING_OP_BPF -> WRITE_FIXED,
 * one linked chain, and the shuffle between the read and the write area is
 * done in the kernel by our uring_bpf_ops program calling
 * uring_bpf_memcpy() once per descriptor pair (bpf-ops/iou_ops.h has the
 * SQE convention). Contiguous sides are FIXED descriptors; the scattered
 * side of stripe (source) and destripe (destination) is REG_VEC, so the
 * registered-vector path is used for real.
 *
 * Descriptors and iovecs live in a registered metadata area per chain:
 * registered means pinned, so the program can read the pairs with
 * bpf_probe_read_user() from a non-sleepable context without faulting.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "engine_bpf.h"
#include "bpf_desc.h"
#include "../bpf-ops/iou_ops.h"
#include "bpf_loader.h"
#include "engine.h"
#include "log.h"
#include "pipeline_run.h"

/* the program reads the op id where the daemon puts it */
_Static_assert(IOU_BPF_OP_SHIFT == IORING_BPF_OP_SHIFT,
	       "bpf-ops/iou_ops.h's IOU_BPF_OP_SHIFT is the uapi's IORING_BPF_OP_SHIFT");

int bpf_shuffle_groups(const struct plan *pl)
{
	return pl->p.transform == TRANSFORM_GATHER ? pl->p.nr_sources : pl->p.nr_dests;
}

void bpf_shuffle_bounds(const struct plan *pl, int *max_pairs, int *max_iovs, int *max_sqes)
{
	int pairs = bpf_shuffle_groups(pl) + (pl->max_copies + IOU_OPS_MAX_VECS - 1) /
		    IOU_OPS_MAX_VECS;

	*max_pairs = pairs;
	*max_iovs = 2 * pl->max_copies;
	*max_sqes = (pairs + IOU_OPS_MAX_PAIRS - 1) / IOU_OPS_MAX_PAIRS;
}

unsigned int bpf_op_id_for(const struct plan *pl)
{
	switch (pl->p.transform) {
	case TRANSFORM_COPY:
		return IOU_OP_ID_COPY;
	case TRANSFORM_MIRROR:
		return IOU_OP_ID_MIRROR;
	case TRANSFORM_STRIPE:
		return IOU_OP_ID_STRIPE;
	case TRANSFORM_GATHER:
	default:
		return IOU_OP_ID_GATHER;
	}
}

struct desc_builder {
	const struct bpf_shuffle_layout *lay;
	struct bpf_shuffle_sqe *sqes;
	int max_sqes;
	int nr_sqes;
	int nr_pairs;
	int nr_iovs;
};

static int add_pair(struct desc_builder *b, uint32_t bytes, struct io_bpf_buf_desc **dst,
		    struct io_bpf_buf_desc **src)
{
	struct bpf_shuffle_sqe *sqe;

	if (b->nr_pairs >= b->lay->max_pairs)
		return -E2BIG;
	if (!b->nr_sqes || b->sqes[b->nr_sqes - 1].nr_pairs >= IOU_OPS_MAX_PAIRS) {
		if (b->nr_sqes >= b->max_sqes)
			return -E2BIG;
		sqe = &b->sqes[b->nr_sqes++];
		sqe->desc_addr = (uint64_t)(uintptr_t)&b->lay->descs[2 * b->nr_pairs];
		sqe->nr_pairs = 0;
		sqe->expect = 0;
	}
	sqe = &b->sqes[b->nr_sqes - 1];
	sqe->nr_pairs++;
	sqe->expect += bytes;
	*dst = &b->lay->descs[2 * b->nr_pairs];
	*src = &b->lay->descs[2 * b->nr_pairs + 1];
	b->nr_pairs++;
	return 0;
}

/* one group (one destination, or one gather source) of a block's copies */
static int build_group(struct desc_builder *b, const struct block_plan *bp, int group)
{
	const struct bpf_shuffle_layout *lay = b->lay;
	struct io_bpf_buf_desc *dst, *src;
	const struct plan_copy *first = NULL, *prev = NULL;
	bool src_contig = true, dst_contig = true;
	uint64_t total = 0;
	int k = 0, ret;

	for (int i = 0; i < bp->nr_copies; i++) {
		const struct plan_copy *cp = &bp->copies[i];

		if (cp->group != group)
			continue;
		if (!first)
			first = cp;
		if (prev && cp->src_off != prev->src_off + prev->len)
			src_contig = false;
		if (prev && cp->dst_off != prev->dst_off + prev->len)
			dst_contig = false;
		prev = cp;
		total += cp->len;
		k++;
	}
	if (!k || !total)
		return 0;
	if (src_contig && dst_contig) {
		ret = add_pair(b, total, &dst, &src);
		if (ret)
			return ret;
		bpf_desc_fixed(dst, lay->wbuf_index, lay->wbuf + first->dst_off, total);
		bpf_desc_fixed(src, lay->rbuf_index, lay->rbuf + first->src_off, total);
		return 0;
	}

	/* scattered side(s): REG_VEC, in chunks the kernel accepts */
	int need = (!src_contig) + (!dst_contig);
	int i = 0;

	while (i < bp->nr_copies) {
		struct iovec *src_iov = NULL, *dst_iov = NULL;
		const struct plan_copy *chunk_first = NULL;
		uint32_t bytes = 0;
		int n = 0;

		/* how many of this group's copies go into this chunk */
		int j = i;
		for (; j < bp->nr_copies && n < IOU_OPS_MAX_VECS; j++) {
			if (bp->copies[j].group != group)
				continue;
			if (!chunk_first)
				chunk_first = &bp->copies[j];
			n++;
			bytes += bp->copies[j].len;
		}
		if (!n)
			break;
		if (b->nr_iovs + n * need > lay->max_iovs)
			return -E2BIG;
		/* the chunk's iovecs: source ones first, then destination ones */
		if (!src_contig)
			src_iov = &lay->iovs[b->nr_iovs];
		if (!dst_contig)
			dst_iov = &lay->iovs[b->nr_iovs + (src_iov ? n : 0)];
		for (int k2 = 0; i < j; i++) {
			const struct plan_copy *cp = &bp->copies[i];

			if (cp->group != group)
				continue;
			if (src_iov) {
				src_iov[k2].iov_base = lay->rbuf + cp->src_off;
				src_iov[k2].iov_len = cp->len;
			}
			if (dst_iov) {
				dst_iov[k2].iov_base = lay->wbuf + cp->dst_off;
				dst_iov[k2].iov_len = cp->len;
			}
			k2++;
		}
		b->nr_iovs += n * need;
		ret = add_pair(b, bytes, &dst, &src);
		if (ret)
			return ret;
		if (dst_iov)
			bpf_desc_reg_vec(dst, lay->wbuf_index, dst_iov, n);
		else
			bpf_desc_fixed(dst, lay->wbuf_index, lay->wbuf + chunk_first->dst_off, bytes);
		if (src_iov)
			bpf_desc_reg_vec(src, lay->rbuf_index, src_iov, n);
		else
			bpf_desc_fixed(src, lay->rbuf_index, lay->rbuf + chunk_first->src_off, bytes);
	}
	return 0;
}

int bpf_build_shuffle(const struct plan *pl, const struct block_plan *bp,
		      const struct bpf_shuffle_layout *lay,
		      struct bpf_shuffle_sqe *sqes, int max_sqes)
{
	struct desc_builder b = { .lay = lay, .sqes = sqes, .max_sqes = max_sqes };
	int groups = bpf_shuffle_groups(pl), ret;

	for (int g = 0; g < groups; g++) {
		ret = build_group(&b, bp, g);
		if (ret)
			return ret;
	}
	return b.nr_sqes;
}

/* ---- engine_ops ---- */

/* checksum = crc32c, and the kernel sums: one IOU_OP_ID_SUM request a block */
static bool bpf_sums_wanted(const struct pipeline_run *pr)
{
	return pr->cfg.s.checksum != CHECKSUM_NONE && bpf_loader_has_crc32c();
}

static int bpf_max_shuffle_sqes(const struct pipeline_run *pr)
{
	int pairs, iovs, sqes;

	bpf_shuffle_bounds(&pr->plan, &pairs, &iovs, &sqes);
	return sqes + (pr->cfg.s.checksum != CHECKSUM_NONE);
}

/* the shuffle's descriptor pairs and iovecs, then the sum's one pair */
static size_t bpf_shuffle_meta(const struct pipeline_run *pr)
{
	int pairs, iovs, sqes;

	bpf_shuffle_bounds(&pr->plan, &pairs, &iovs, &sqes);
	return (size_t)pairs * 2 * sizeof(struct io_bpf_buf_desc) +
	       (size_t)iovs * sizeof(struct iovec);
}

static size_t bpf_meta_size(const struct pipeline_run *pr)
{
	return bpf_shuffle_meta(pr) + (pr->cfg.s.checksum != CHECKSUM_NONE ?
				       2 * sizeof(struct io_bpf_buf_desc) : 0);
}

static void bpf_preload(const struct pipeline_run *pr)
{
	if (bpf_plan_shuffles(&pr->plan) || pr->cfg.s.checksum != CHECKSUM_NONE)
		bpf_loader_preload(true, false);
}

static int bpf_attach(struct pipeline_run *pr)
{
	bool sums = pr->sums_fd >= 0 && bpf_sums_wanted(pr);
	struct bpf_ops_handle *h;
	char err[256];
	int ret;

	if (!bpf_plan_shuffles(&pr->plan) && !sums) {
		log_info("pipeline %s: every write goes out of its read buffer: no IORING_OP_BPF, "
			 "no program to load", pr->cfg.name);
		return 0;
	}
	ret = bpf_ops_attach(ring_fd(&pr->ring), &h, err, sizeof(err));
	if (ret)
		return pipeline_fail(pr, ret, "cannot attach the BPF ops to the ring: %s", err);
	pr->engine_priv = h;
	if (sums) {
		pr->sums_base = bpf_sums_alloc(pr->nr_chains, false);
		pr->sums_kernel = pr->sums_base >= 0;
		if (!pr->sums_kernel)
			log_warning("pipeline %s: no room in the programs' sums[] for %d chains: "
				    "the blocks are summed in userspace", pr->cfg.name,
				    pr->nr_chains);
	} else if (pr->sums_fd >= 0) {
		log_info("pipeline %s: checksum = crc32c: this kernel has no uring_bpf_crc32c(): "
			 "the blocks are summed in userspace", pr->cfg.name);
	}
	return 0;
}

static int bpf_build_sum(struct pipeline_run *pr, struct chain *c)
{
	struct io_bpf_buf_desc *d = (struct io_bpf_buf_desc *)(c->meta + bpf_shuffle_meta(pr));
	struct chain_op *op;

	if (c->nr_ops >= c->max_ops)
		return -E2BIG;
	/* pair[0] is not used; pair[1] the block's bytes in the read area */
	memset(d, 0, 2 * sizeof(*d));
	bpf_desc_fixed(&d[1], c->rbuf_index, c->rbuf, c->bp.len);
	op = &c->ops[c->nr_ops++];
	memset(op, 0, sizeof(*op));
	op->kind = CHAIN_OP_BPF;
	op->desc_addr = (uint64_t)(uintptr_t)d;
	op->nr_pairs = 1;
	op->expect = op->io_len = c->bp.len;
	op->op_id = IOU_OP_ID_SUM;
	op->sum = true;
	op->sum_index = pr->sums_base + c->slot;
	return 0;
}

static void bpf_detach(struct pipeline_run *pr)
{
	uint64_t done, failed, bytes;

	/*
	 * The programs' own count, next to ours from the CQEs. The programs
	 * serve every ring, so other pipelines' requests may add to theirs:
	 * fewer bytes than our CQEs say is what would be wrong.
	 */
	if (pr->engine_priv &&
	    !bpf_ops_counters(pr->engine_priv, bpf_op_id_for(&pr->plan), &done, &failed, &bytes)) {
		if (bytes < pr->bpf_bytes)
			log_warning("pipeline %s: the BPF program counted %" PRIu64 " bytes, the "
				    "completions %" PRIu64, pr->cfg.name, bytes, pr->bpf_bytes);
		log_info("pipeline %s: BPF op %u counted %" PRIu64 " completions, %" PRIu64
			 " failures, %" PRIu64 " bytes copied in the kernel while it ran (every "
			 "ring's)", pr->cfg.name, bpf_op_id_for(&pr->plan), done, failed, bytes);
	}
	if (pr->sums_kernel)
		bpf_sums_free(pr->sums_base, pr->nr_chains);
	pr->sums_kernel = false;
	if (pr->engine_priv)
		bpf_ops_detach(pr->engine_priv);
	pr->engine_priv = NULL;
}

static int bpf_build_chain_shuffle(struct pipeline_run *pr, struct chain *c)
{
	struct bpf_shuffle_sqe sqes[64];
	struct bpf_shuffle_layout lay;
	int pairs, iovs, max_sqes, n;

	bpf_shuffle_bounds(&pr->plan, &pairs, &iovs, &max_sqes);
	lay = (struct bpf_shuffle_layout){
		.rbuf = c->rbuf, .rbuf_index = c->rbuf_index,
		.wbuf = c->wbuf, .wbuf_index = c->wbuf_index,
		.descs = (struct io_bpf_buf_desc *)c->meta, .max_pairs = pairs,
		.iovs = (struct iovec *)(c->meta + (size_t)pairs * 2 *
					 sizeof(struct io_bpf_buf_desc)),
		.max_iovs = iovs,
	};
	n = bpf_build_shuffle(&pr->plan, &c->bp, &lay, sqes,
			      max_sqes < 64 ? max_sqes : 64);
	if (n < 0)
		return n;
	if (c->nr_ops + n > c->max_ops)
		return -E2BIG;
	for (int i = 0; i < n; i++) {
		struct chain_op *op = &c->ops[c->nr_ops++];

		memset(op, 0, sizeof(*op));
		op->kind = CHAIN_OP_BPF;
		op->desc_addr = sqes[i].desc_addr;
		op->nr_pairs = sqes[i].nr_pairs;
		op->expect = sqes[i].expect;
		op->io_len = sqes[i].expect;
		op->op_id = bpf_op_id_for(&pr->plan);
	}
	return 0;
}

const struct engine_ops engine_bpf_ops = {
	.name = "bpf",
	.kind = ENGINE_BPF,
	.setup_flags = IOU_SETUP_BPF_OP,
	.elide_identity_shuffle = true,
	.max_shuffle_sqes = bpf_max_shuffle_sqes,
	.meta_size = bpf_meta_size,
	.preload = bpf_preload,
	.attach = bpf_attach,
	.detach = bpf_detach,
	.build_shuffle = bpf_build_chain_shuffle,
	.build_sum = bpf_build_sum,
};
