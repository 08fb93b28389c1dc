// SPDX-License-Identifier: MIT
/*
 * Descriptor building for IORING_OP_BPF. The descriptors are executed by
 * a userspace model of uring_bpf_memcpy() (copy min(src, dst) bytes between
 * the two iterators a FIXED or REG_VEC descriptor describes, checking that
 * every address lies in the registered buffer it names), and the result
 * must equal what the uring engine's memcpy of the plan produces.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_bpf.h"
#include "../../bpf-ops/iou_ops.h"
#include "testutil.h"

struct area {
	uint8_t *base;
	size_t len;
	uint16_t index;
};

struct seg {
	uint8_t *p;
	size_t len;
};

/* a descriptor as the kernel would import it; fails the test on a bad one */
static int import(const struct io_bpf_buf_desc *d, const struct area *areas, int nr_areas,
		  struct seg *segs, int max)
{
	const struct area *a = NULL;

	for (int i = 0; i < nr_areas; i++)
		if (areas[i].index == d->buf_index)
			a = &areas[i];
	assert_non_null(a);
	assert_int_equal(d->reserved, 0);
	if (d->type == IO_BPF_BUF_FIXED) {
		uint8_t *p = (uint8_t *)(uintptr_t)d->addr;

		assert_true(p >= a->base && p + d->len <= a->base + a->len);
		segs[0] = (struct seg){ p, d->len };
		return 1;
	}
	assert_int_equal(d->type, IO_BPF_BUF_REG_VEC);
	assert_true(d->len >= 1 && d->len <= IOU_OPS_MAX_VECS && (int)d->len <= max);
	const struct iovec *iov = (const struct iovec *)(uintptr_t)d->addr;

	for (uint32_t i = 0; i < d->len; i++) {
		uint8_t *p = iov[i].iov_base;

		/* REG_VEC: every entry inside registered buffer buf_index */
		assert_true(p >= a->base && p + iov[i].iov_len <= a->base + a->len);
		segs[i] = (struct seg){ p, iov[i].iov_len };
	}
	return d->len;
}

/* the kfunc's semantics: copy min of both sides, return bytes copied */
static size_t model_memcpy(const struct io_bpf_buf_desc *dst, const struct io_bpf_buf_desc *src,
			   const struct area *areas, int nr_areas)
{
	static struct seg s[IOU_OPS_MAX_VECS], d[IOU_OPS_MAX_VECS];
	int ns = import(src, areas, nr_areas, s, IOU_OPS_MAX_VECS);
	int nd = import(dst, areas, nr_areas, d, IOU_OPS_MAX_VECS);
	size_t total = 0, si = 0, so = 0, di = 0, dof = 0;

	while ((int)si < ns && (int)di < nd) {
		size_t n = s[si].len - so < d[di].len - dof ? s[si].len - so : d[di].len - dof;

		memcpy(d[di].p + dof, s[si].p + so, n);
		total += n;
		so += n;
		dof += n;
		if (so == s[si].len) {
			si++;
			so = 0;
		}
		if (dof == d[di].len) {
			di++;
			dof = 0;
		}
	}
	return total;
}

struct fixture {
	struct plan pl;
	struct block_plan bp;
	uint8_t *r, *w_bpf, *w_ref, *meta;
	struct bpf_shuffle_layout lay;
	struct bpf_shuffle_sqe sqes[64];
	int max_pairs, max_iovs, max_sqes;
};

static void fixture_init(struct fixture *f, const struct plan_params *p)
{
	memset(f, 0, sizeof(*f));
	assert_int_equal(plan_init(&f->pl, p), 0);
	assert_int_equal(block_plan_alloc(&f->pl, &f->bp), 0);
	bpf_shuffle_bounds(&f->pl, &f->max_pairs, &f->max_iovs, &f->max_sqes);
	assert_true(f->max_sqes <= 64);
	f->r = malloc(f->pl.r_size);
	f->w_bpf = malloc(f->pl.w_size);
	f->w_ref = malloc(f->pl.w_size);
	f->meta = malloc((size_t)f->max_pairs * 32 + (size_t)f->max_iovs * sizeof(struct iovec));
	f->lay = (struct bpf_shuffle_layout){
		.rbuf = f->r, .rbuf_index = 6, .wbuf = f->w_bpf, .wbuf_index = 7,
		.descs = (struct io_bpf_buf_desc *)f->meta, .max_pairs = f->max_pairs,
		.iovs = (struct iovec *)(f->meta + (size_t)f->max_pairs * 32),
		.max_iovs = f->max_iovs,
	};
}

static void fixture_free(struct fixture *f)
{
	block_plan_free(&f->bp);
	free(f->r);
	free(f->w_bpf);
	free(f->w_ref);
	free(f->meta);
}

/* build block @b's descriptors, run them through the model, compare */
static int run_block(struct fixture *f, uint64_t b)
{
	const struct area areas[] = {
		{ f->r, f->pl.r_size, 6 }, { f->w_bpf, f->pl.w_size, 7 },
	};
	int n;

	assert_int_equal(plan_block(&f->pl, b, &f->bp), 0);
	tu_fill(f->r, f->pl.r_size, b + 1);
	memset(f->w_bpf, 0, f->pl.w_size);
	memset(f->w_ref, 0, f->pl.w_size);
	for (int i = 0; i < f->bp.nr_copies; i++) {
		const struct plan_copy *c = &f->bp.copies[i];

		memcpy(f->w_ref + c->dst_off, f->r + c->src_off, c->len);
	}
	n = bpf_build_shuffle(&f->pl, &f->bp, &f->lay, f->sqes, f->max_sqes);
	assert_true(n >= 1 && n <= f->max_sqes);
	for (int i = 0; i < n; i++) {
		const struct bpf_shuffle_sqe *sq = &f->sqes[i];
		const struct io_bpf_buf_desc *pairs = (void *)(uintptr_t)sq->desc_addr;
		size_t total = 0;

		assert_true(sq->nr_pairs >= 1 && sq->nr_pairs <= IOU_OPS_MAX_PAIRS);
		for (uint32_t k = 0; k < sq->nr_pairs; k++)
			total += model_memcpy(&pairs[2 * k], &pairs[2 * k + 1], areas, 2);
		/* what the program compares cqe->res against */
		assert_true(total == sq->expect);
	}
	assert_memory_equal(f->w_bpf, f->w_ref, f->pl.w_size);
	return n;
}

static void copy_is_one_fixed_to_fixed_pair(void **state)
{
	struct plan_params p = {
		.transform = TRANSFORM_COPY, .nr_sources = 1, .nr_dests = 1,
		.block_size = 65536, .io_align = 1, .length = 100000, .src_avail = { 100000 },
	};
	struct fixture f;

	(void)state;
	fixture_init(&f, &p);
	assert_int_equal(run_block(&f, 1), 1);
	assert_int_equal(f.sqes[0].nr_pairs, 1);
	assert_int_equal(f.sqes[0].expect, 100000 - 65536);
	const struct io_bpf_buf_desc *d = f.lay.descs;
	assert_int_equal(d[0].type, IO_BPF_BUF_FIXED);
	assert_int_equal(d[0].buf_index, 7);
	assert_true(d[0].addr == (uintptr_t)f.w_bpf);
	assert_int_equal(d[0].len, 100000 - 65536);
	assert_int_equal(d[1].type, IO_BPF_BUF_FIXED);
	assert_int_equal(d[1].buf_index, 6);
	assert_true(d[1].addr == (uintptr_t)f.r);
	assert_true(f.sqes[0].desc_addr == (uintptr_t)d);
	assert_int_equal(bpf_op_id_for(&f.pl), IOU_OP_ID_COPY);
	fixture_free(&f);
}

static void mirror_is_one_pair_per_destination(void **state)
{
	struct plan_params p = {
		.transform = TRANSFORM_MIRROR, .nr_sources = 1, .nr_dests = 4,
		.block_size = 8192, .io_align = 1, .length = 8192, .src_avail = { 8192 },
	};
	struct fixture f;

	(void)state;
	fixture_init(&f, &p);
	assert_int_equal(run_block(&f, 0), 1);
	assert_int_equal(f.sqes[0].nr_pairs, 4);
	assert_int_equal(f.sqes[0].expect, 4 * 8192);
	for (int d = 0; d < 4; d++) {
		assert_int_equal(f.lay.descs[2 * d].type, IO_BPF_BUF_FIXED);
		assert_true(f.lay.descs[2 * d].addr == (uintptr_t)(f.w_bpf + d * f.pl.w_stride));
	}
	assert_int_equal(bpf_op_id_for(&f.pl), IOU_OP_ID_MIRROR);
	fixture_free(&f);
}

static void stripe_gathers_each_member_with_a_reg_vec_source(void **state)
{
	struct plan_params p = {
		.transform = TRANSFORM_STRIPE, .nr_sources = 1, .nr_dests = 3,
		.block_size = 65536, .stripe_unit = 3000, .io_align = 1, .length = 1 << 20,
		.src_avail = { 1 << 20 },
	};
	struct fixture f;

	(void)state;
	fixture_init(&f, &p);
	for (uint64_t b = 0; b < f.pl.nr_blocks; b++) {
		assert_int_equal(run_block(&f, b), 1);
		assert_int_equal(f.sqes[0].nr_pairs, 3);
		for (int d = 0; d < 3; d++) {
			assert_int_equal(f.lay.descs[2 * d].type, IO_BPF_BUF_FIXED);
			assert_int_equal(f.lay.descs[2 * d + 1].type, IO_BPF_BUF_REG_VEC);
			assert_int_equal(f.lay.descs[2 * d + 1].buf_index, 6);
		}
	}
	assert_int_equal(bpf_op_id_for(&f.pl), IOU_OP_ID_STRIPE);
	fixture_free(&f);
}

static void destripe_scatters_each_source_with_a_reg_vec_destination(void **state)
{
	struct plan_params p = {
		.transform = TRANSFORM_GATHER, .gather = GATHER_DESTRIPE, .nr_sources = 2,
		.nr_dests = 1, .block_size = 65536, .stripe_unit = 4096, .io_align = 1,
		.length = 200000,
	};
	struct fixture f;

	(void)state;
	p.src_avail[0] = plan_stripe_share(200000, 2, 4096, 0);
	p.src_avail[1] = plan_stripe_share(200000, 2, 4096, 1);
	fixture_init(&f, &p);
	for (uint64_t b = 0; b < f.pl.nr_blocks; b++) {
		run_block(&f, b);
		if (b == f.pl.nr_blocks - 1)
			break;	/* the tail lies in one unit: contiguous, FIXED both sides */
		for (uint32_t k = 0; k < f.sqes[0].nr_pairs; k++) {
			assert_int_equal(f.lay.descs[2 * k].type, IO_BPF_BUF_REG_VEC);
			assert_int_equal(f.lay.descs[2 * k].buf_index, 7);
			assert_int_equal(f.lay.descs[2 * k + 1].type, IO_BPF_BUF_FIXED);
		}
	}
	assert_int_equal(bpf_op_id_for(&f.pl), IOU_OP_ID_GATHER);
	fixture_free(&f);
}

static void concat_is_fixed_to_fixed_per_source(void **state)
{
	struct plan_params p = {
		.transform = TRANSFORM_GATHER, .gather = GATHER_CONCAT, .nr_sources = 3,
		.nr_dests = 1, .block_size = 65536, .io_align = 1, .length = 3000 + 70000 + 5,
		.src_avail = { 3000, 70000, 5 },
	};
	struct fixture f;

	(void)state;
	fixture_init(&f, &p);
	/* block 0 holds all of source 0 and the start of source 1 */
	assert_int_equal(run_block(&f, 0), 1);
	assert_int_equal(f.sqes[0].nr_pairs, 2);
	assert_int_equal(f.lay.descs[1].len, 3000);
	assert_int_equal(f.lay.descs[3].len, 65536 - 3000);
	assert_int_equal(run_block(&f, 1), 1);
	assert_int_equal(f.sqes[0].nr_pairs, 2);
	fixture_free(&f);
}

static void many_stripe_units_split_into_vec_chunks_and_sqes(void **state)
{
	/* 4096 units per block over 2 members: 2048 iovecs each, in chunks of 1024 */
	struct plan_params p = {
		.transform = TRANSFORM_STRIPE, .nr_sources = 1, .nr_dests = 2,
		.block_size = 2 << 20, .stripe_unit = 512, .io_align = 1, .length = 2 << 20,
		.src_avail = { 2 << 20 },
	};
	struct fixture f;

	(void)state;
	fixture_init(&f, &p);
	run_block(&f, 0);
	assert_int_equal(f.sqes[0].nr_pairs, 4);
	for (int k = 0; k < 4; k++)
		assert_int_equal(f.lay.descs[2 * k + 1].len, 1024);
	fixture_free(&f);

	/* 16 members x 3 chunks = 48 pairs: more than one SQE */
	struct plan_params q = p;
	q.nr_dests = 16;
	q.block_size = 24 << 20;
	q.stripe_unit = 512;
	q.length = 24 << 20;
	q.src_avail[0] = 24 << 20;
	fixture_init(&f, &q);
	int n = run_block(&f, 0);
	assert_true(n >= 2);
	assert_int_equal(f.sqes[0].nr_pairs, IOU_OPS_MAX_PAIRS);
	fixture_free(&f);
}

static void too_little_descriptor_room_is_an_error(void **state)
{
	struct plan_params p = {
		.transform = TRANSFORM_STRIPE, .nr_sources = 1, .nr_dests = 2,
		.block_size = 65536, .stripe_unit = 4096, .io_align = 1, .length = 65536,
		.src_avail = { 65536 },
	};
	struct fixture f;

	(void)state;
	fixture_init(&f, &p);
	assert_int_equal(plan_block(&f.pl, 0, &f.bp), 0);
	f.lay.max_iovs = 3;
	assert_int_equal(bpf_build_shuffle(&f.pl, &f.bp, &f.lay, f.sqes, f.max_sqes), -E2BIG);
	f.lay.max_iovs = f.max_iovs;
	f.lay.max_pairs = 1;
	assert_int_equal(bpf_build_shuffle(&f.pl, &f.bp, &f.lay, f.sqes, f.max_sqes), -E2BIG);
	fixture_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(copy_is_one_fixed_to_fixed_pair),
		cmocka_unit_test(mirror_is_one_pair_per_destination),
		cmocka_unit_test(stripe_gathers_each_member_with_a_reg_vec_source),
		cmocka_unit_test(destripe_scatters_each_source_with_a_reg_vec_destination),
		cmocka_unit_test(concat_is_fixed_to_fixed_per_source),
		cmocka_unit_test(many_stripe_units_split_into_vec_chunks_and_sqes),
		cmocka_unit_test(too_little_descriptor_room_is_an_error),
	};

	return cmocka_run_group_tests_name("bpf descriptors", tests, NULL, NULL);
}
