// SPDX-License-Identifier: MIT
/*
 * Block layout math. The core check runs every block of a plan through an
 * in-memory model of the data path (read into the read area, copy, write
 * from the write area) and compares the result with a byte-by-byte
 * reference of each transform, over a grid of odd sizes, tails, offsets,
 * resume points and stripe units that do not divide the block size.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "testutil.h"

struct sim {
	struct plan_params p;
	uint8_t *src[CONFIG_MAX_FILES];
	uint64_t src_size[CONFIG_MAX_FILES];
	uint8_t *dst[CONFIG_MAX_FILES];
	uint8_t *written[CONFIG_MAX_FILES];	/* times each byte was written */
	uint64_t dst_size;
};

static void sim_init(struct sim *s, const struct plan_params *p, const uint64_t *src_sizes,
		     uint64_t seed)
{
	memset(s, 0, sizeof(*s));
	s->p = *p;
	for (int i = 0; i < p->nr_sources; i++) {
		s->src_size[i] = src_sizes[i];
		s->src[i] = malloc(src_sizes[i] + 1);
		tu_fill(s->src[i], src_sizes[i], seed + i);
		s->p.src_avail[i] = src_sizes[i] - p->offset;
	}
	s->dst_size = p->dest_offset + p->length + 1;
	for (int d = 0; d < p->nr_dests; d++) {
		s->dst[d] = calloc(1, s->dst_size);
		s->written[d] = calloc(1, s->dst_size);
	}
}

static void sim_free(struct sim *s)
{
	for (int i = 0; i < CONFIG_MAX_FILES; i++) {
		free(s->src[i]);
		free(s->dst[i]);
		free(s->written[i]);
	}
}

/* run every block through the model; writes come from the read area if asked */
static void sim_run(struct sim *s, const struct plan *pl, bool from_read)
{
	struct block_plan bp;
	uint8_t *r = malloc(pl->r_size), *w = malloc(pl->w_size);
	uint64_t covered = 0;

	assert_int_equal(block_plan_alloc(pl, &bp), 0);
	for (uint64_t b = 0; b < pl->nr_blocks; b++) {
		assert_int_equal(plan_block(pl, b, &bp), 0);
		assert_true(bp.len > 0 && bp.len <= s->p.block_size);
		assert_true(bp.logical_off == s->p.start + b * s->p.block_size);
		assert_true(bp.nr_reads <= pl->max_reads);
		assert_true(bp.nr_writes <= pl->max_writes);
		assert_true(bp.nr_copies <= pl->max_copies);
		/* a plan that promises no copy keeps it in every block */
		if (pl->never_shuffles)
			assert_true(bp.from_read);
		covered += bp.len;
		memset(r, 0xA5, pl->r_size);
		memset(w, 0x5A, pl->w_size);
		for (int i = 0; i < bp.nr_reads; i++) {
			const struct plan_io *io = &bp.reads[i];

			assert_true(io->file < s->p.nr_sources);
			assert_true((uint64_t)io->buf_off + io->io_len <= pl->r_size);
			assert_true(io->file_off + io->len <= s->src_size[io->file]);
			assert_true(io->len <= io->expect && io->expect <= io->io_len);
			assert_int_equal(io->buf_off % pl->region_align == 0 ||
					 s->p.transform == TRANSFORM_GATHER, 1);
			/* all a read returns lands, also an O_DIRECT tail past len */
			memcpy(r + io->buf_off, s->src[io->file] + io->file_off, io->expect);
		}
		uint64_t copied = 0;
		for (int i = 0; i < bp.nr_copies; i++) {
			const struct plan_copy *c = &bp.copies[i];

			assert_true((uint64_t)c->src_off + c->len <= pl->r_size);
			assert_true((uint64_t)c->dst_off + c->len <= pl->w_size);
			memcpy(w + c->dst_off, r + c->src_off, c->len);
			copied += c->len;
		}
		/* every transform but mirror moves each byte of the block once */
		if (s->p.transform == TRANSFORM_MIRROR)
			assert_true(copied == (uint64_t)bp.len * s->p.nr_dests);
		else
			assert_true(copied == bp.len);
		for (int i = 0; i < bp.nr_writes; i++) {
			const struct plan_io *io = &bp.writes[i];
			const uint8_t *from;

			assert_true(io->file < s->p.nr_dests);
			assert_true(io->len > 0);
			assert_true(io->io_len == io->expect);
			assert_true(io->file_off + io->len < s->dst_size);
			if (from_read && bp.from_read) {
				assert_true(io->rbuf_off >= 0);
				from = r + io->rbuf_off;
			} else {
				assert_true((uint64_t)io->buf_off + io->io_len <= pl->w_size);
				from = w + io->buf_off;
			}
			memcpy(s->dst[io->file] + io->file_off, from, io->len);
			for (uint32_t k = 0; k < io->len; k++)
				s->written[io->file][io->file_off + k]++;
		}
	}
	assert_true(covered == s->p.length - s->p.start);
	block_plan_free(&bp);
	free(r);
	free(w);
}

/* the reference: where logical byte x comes from and goes to */
static void sim_check(const struct sim *s)
{
	const struct plan_params *p = &s->p;
	uint64_t n = p->nr_sources, m = p->nr_dests, su = p->stripe_unit;

	for (uint64_t x = p->start; x < p->length; x++) {
		uint8_t want;
		uint64_t u = su ? x / su : 0;

		switch (p->transform) {
		case TRANSFORM_COPY:
		case TRANSFORM_MIRROR:
			want = s->src[0][p->offset + x];
			for (uint64_t d = 0; d < m; d++) {
				assert_int_equal(s->dst[d][p->dest_offset + x], want);
				assert_int_equal(s->written[d][p->dest_offset + x], 1);
			}
			break;
		case TRANSFORM_STRIPE: {
			uint64_t d = u % m, off = (u / m) * su + x % su;

			want = s->src[0][p->offset + x];
			assert_int_equal(s->dst[d][p->dest_offset + off], want);
			assert_int_equal(s->written[d][p->dest_offset + off], 1);
			break;
		}
		case TRANSFORM_GATHER:
			if (p->gather == GATHER_DESTRIPE) {
				uint64_t src = u % n, off = (u / n) * su + x % su;

				want = s->src[src][p->offset + off];
			} else {
				uint64_t rest = x, i = 0;

				while (rest >= p->src_avail[i])
					rest -= p->src_avail[i++];
				want = s->src[i][p->offset + rest];
			}
			assert_int_equal(s->dst[0][p->dest_offset + x], want);
			assert_int_equal(s->written[0][p->dest_offset + x], 1);
			break;
		}
	}
	/* and nothing outside: total bytes written per destination */
	for (uint64_t d = 0; d < m; d++) {
		uint64_t total = 0;

		for (uint64_t i = 0; i < s->dst_size; i++)
			total += s->written[d][i];
		uint64_t want = p->transform == TRANSFORM_STRIPE ?
			plan_stripe_share(p->length, m, su, d) -
			plan_stripe_share(p->start, m, su, d) : p->length - p->start;
		assert_true(total == want);
	}
}

static uint64_t count_from_read(const struct plan *pl)
{
	struct block_plan bp;
	uint64_t n = 0;

	assert_int_equal(block_plan_alloc(pl, &bp), 0);
	for (uint64_t b = 0; b < pl->nr_blocks; b++) {
		assert_int_equal(plan_block(pl, b, &bp), 0);
		n += bp.from_read;
	}
	block_plan_free(&bp);
	return n;
}

/* one point of the grid: plan it, run it, check it; blocks planned from_read */
/* requests cut to this (plan_params.max_io) in every layout checked, or 0 */
static uint32_t sim_max_io;
/* stripe_io = per-unit in every layout checked */
static bool sim_per_unit;

static uint64_t check_layout_aligned(enum transform t, enum gather_layout g, int n, uint32_t bs,
				     uint32_t su, uint64_t len, uint64_t offset,
				     uint64_t dest_offset, uint64_t start, uint32_t io_align)
{
	struct plan_params p = {
		.transform = t, .gather = g, .block_size = bs, .stripe_unit = su,
		.offset = offset, .dest_offset = dest_offset, .length = len, .start = start,
		.io_align = io_align, .max_io = sim_max_io, .per_unit = sim_per_unit,
	};
	uint64_t sizes[CONFIG_MAX_FILES];
	struct sim s;
	struct plan pl;

	p.nr_sources = t == TRANSFORM_GATHER ? n : 1;
	p.nr_dests = t == TRANSFORM_GATHER ? 1 : (t == TRANSFORM_COPY ? 1 : n);
	for (int i = 0; i < p.nr_sources; i++) {
		if (t != TRANSFORM_GATHER)
			sizes[i] = offset + len + 3;	/* longer than needed: a tail */
		else if (g == GATHER_DESTRIPE)
			sizes[i] = offset + plan_stripe_share(len, n, su, i);
		else
			sizes[i] = offset + len / n + (i == n - 1 ? len % n : 0);
	}
	sim_init(&s, &p, sizes, len * 31 + bs + su + n);
	if (plan_init(&pl, &s.p)) {
		print_message("plan_init failed: t=%d g=%d n=%d bs=%u su=%u len=%lu\n", t, g, n,
			      bs, su, (unsigned long)len);
		fail();
	}
	s.p = pl.p;
	sim_run(&s, &pl, false);
	sim_check(&s);
	{
		/* the zero-copy path (every block that allows it) must see the same bytes */
		sim_free(&s);
		sim_init(&s, &p, sizes, len * 31 + bs + su + n);
		s.p = pl.p;
		sim_run(&s, &pl, true);
		sim_check(&s);
	}
	sim_free(&s);
	return count_from_read(&pl);
}

static void check_layout(enum transform t, enum gather_layout g, int n, uint32_t bs,
			 uint32_t su, uint64_t len, uint64_t offset, uint64_t dest_offset,
			 uint64_t start)
{
	check_layout_aligned(t, g, n, bs, su, len, offset, dest_offset, start, 1);
}

static const uint32_t block_sizes[] = { 512, 1000, 4096, 12288, 65536 };
static const uint32_t stripe_units[] = { 512, 1536, 3000, 4096, 70000 };

static void lengths_for(uint32_t bs, uint64_t *out, int *nr)
{
	uint64_t l[] = { 0, 1, bs - 1, bs, bs + 1, 3ULL * bs + 17, 7ULL * bs };

	memcpy(out, l, sizeof(l));
	*nr = sizeof(l) / sizeof(l[0]);
}

static void grid(enum transform t, enum gather_layout g, const int *ns, int nn, bool striped)
{
	for (size_t b = 0; b < sizeof(block_sizes) / sizeof(block_sizes[0]); b++) {
		uint64_t lens[8];
		int nl;

		lengths_for(block_sizes[b], lens, &nl);
		for (int li = 0; li < nl; li++) {
			for (int ni = 0; ni < nn; ni++) {
				for (size_t si = 0; si < (striped ? 5u : 1u); si++) {
					uint32_t su = striped ? stripe_units[si] : 0;
					uint64_t len = lens[li];

					check_layout(t, g, ns[ni], block_sizes[b], su, len, 0, 0, 0);
					check_layout(t, g, ns[ni], block_sizes[b], su, len, 777, 4099, 0);
					/* resume from a block boundary partway */
					if (len > 2ULL * block_sizes[b])
						check_layout(t, g, ns[ni], block_sizes[b], su, len, 5,
							     0, 2ULL * block_sizes[b]);
				}
			}
		}
	}
}

static void copy_moves_every_byte_once_for_all_sizes(void **state)
{
	static const int one[] = { 1 };

	(void)state;
	grid(TRANSFORM_COPY, GATHER_CONCAT, one, 1, false);
}

static void mirror_writes_every_byte_to_every_destination(void **state)
{
	static const int ns[] = { 2, 3, 16 };

	(void)state;
	grid(TRANSFORM_MIRROR, GATHER_CONCAT, ns, 3, false);
}

static void stripe_matches_raid0_for_units_that_do_not_divide_the_block(void **state)
{
	static const int ns[] = { 2, 3, 5 };

	(void)state;
	grid(TRANSFORM_STRIPE, GATHER_CONCAT, ns, 3, true);
}

static void gather_destripe_inverts_stripe(void **state)
{
	static const int ns[] = { 2, 3, 5 };

	(void)state;
	grid(TRANSFORM_GATHER, GATHER_DESTRIPE, ns, 3, true);
}

static void gather_concat_joins_sources_across_block_boundaries(void **state)
{
	static const int ns[] = { 2, 3, 7 };

	(void)state;
	grid(TRANSFORM_GATHER, GATHER_CONCAT, ns, 3, false);
}

/* every layout again with requests cut to 4 KiB: the same bytes land, once */
static void requests_cut_to_max_io_move_the_same_bytes(void **state)
{
	static const int one[] = { 1 }, ns[] = { 2, 3 };

	(void)state;
	sim_max_io = 4096;
	grid(TRANSFORM_COPY, GATHER_CONCAT, one, 1, false);
	grid(TRANSFORM_MIRROR, GATHER_CONCAT, ns, 2, false);
	grid(TRANSFORM_STRIPE, GATHER_CONCAT, ns, 2, true);
	grid(TRANSFORM_GATHER, GATHER_DESTRIPE, ns, 2, true);
	grid(TRANSFORM_GATHER, GATHER_CONCAT, ns, 2, false);
	/* O_DIRECT: the last piece of a tail is rounded up and expects EOF */
	for (uint64_t len = 65536 - 512; len <= 3 * 65536 + 1000; len += 65536 + 488) {
		check_layout_aligned(TRANSFORM_COPY, GATHER_CONCAT, 1, 65536, 0, len, 0, 0, 0, 512);
		check_layout_aligned(TRANSFORM_STRIPE, GATHER_CONCAT, 2, 65536, 8192, len, 0, 0, 0,
				     512);
	}
	sim_max_io = 0;
}

/*
 * Per-unit stripes and destripes, where units keep the alignment, never
 * copy (sim_run checks every block against never_shuffles), so the bpf and
 * loop engines load no program for them; where a unit breaks O_DIRECT
 * alignment the plan says it may copy.
 */
static void per_unit_stripes_that_keep_alignment_never_shuffle(void **state)
{
	static const int ns[] = { 2, 3 };
	struct plan_params p = {
		.transform = TRANSFORM_STRIPE, .nr_sources = 1, .nr_dests = 2, .per_unit = true,
		.block_size = 65536, .stripe_unit = 4096, .length = 1 << 20, .io_align = 512,
		.src_avail = { 1 << 20 },
	};
	struct plan pl;

	(void)state;
	sim_per_unit = true;
	grid(TRANSFORM_STRIPE, GATHER_CONCAT, ns, 2, true);
	grid(TRANSFORM_GATHER, GATHER_DESTRIPE, ns, 2, true);
	for (uint64_t len = 4096; len <= 5 * 65536; len += 65536 + 512) {
		assert_true(check_layout_aligned(TRANSFORM_STRIPE, GATHER_CONCAT, 3, 65536, 4096,
						 len, 0, 0, 0, 512) > 0);
		check_layout_aligned(TRANSFORM_GATHER, GATHER_DESTRIPE, 3, 65536, 4096, len, 0, 0,
				     0, 512);
	}
	sim_per_unit = false;
	assert_int_equal(plan_init(&pl, &p), 0);
	assert_true(pl.never_shuffles);
	p.stripe_unit = 3000;		/* a unit boundary off the 512-byte alignment */
	assert_int_equal(plan_init(&pl, &p), 0);
	assert_false(pl.never_shuffles);
	p.io_align = 1;
	assert_int_equal(plan_init(&pl, &p), 0);
	assert_true(pl.never_shuffles);
	p.per_unit = false;
	assert_int_equal(plan_init(&pl, &p), 0);
	assert_false(pl.never_shuffles);
}

static void a_block_is_cut_in_order_into_pieces_of_max_io(void **state)
{
	struct plan_params p = {
		.transform = TRANSFORM_MIRROR, .nr_sources = 1, .nr_dests = 2,
		.block_size = 1 << 20, .length = 1 << 20, .io_align = 4096, .max_io = 256 << 10,
		.src_avail = { 1 << 20 },
	};
	struct block_plan bp;
	struct plan pl;

	(void)state;
	assert_int_equal(plan_init(&pl, &p), 0);
	assert_int_equal(block_plan_alloc(&pl, &bp), 0);
	assert_int_equal(plan_block(&pl, 0, &bp), 0);
	assert_int_equal(bp.nr_reads, 4);
	assert_int_equal(bp.nr_writes, 8);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(bp.reads[i].file_off, (uint64_t)i << 18);
		assert_int_equal(bp.reads[i].buf_off, i << 18);
		assert_int_equal(bp.reads[i].io_len, 256 << 10);
		for (int d = 0; d < 2; d++) {
			const struct plan_io *w = &bp.writes[4 * d + i];

			assert_int_equal(w->file, d);
			assert_int_equal(w->file_off, (uint64_t)i << 18);
			assert_int_equal(w->rbuf_off, i << 18);
			assert_int_equal(w->len, 256 << 10);
		}
	}
	block_plan_free(&bp);
	/* pieces must start where a region may */
	p.max_io = 6144;
	assert_int_equal(plan_init(&pl, &p), -EINVAL);
}

static void zero_bytes_plan_no_blocks(void **state)
{
	struct plan_params p = {
		.transform = TRANSFORM_COPY, .nr_sources = 1, .nr_dests = 1,
		.block_size = 4096, .io_align = 1,
	};
	struct plan pl;

	(void)state;
	assert_int_equal(plan_init(&pl, &p), 0);
	assert_int_equal(pl.nr_blocks, 0);
}

static void tail_block_holds_the_remainder(void **state)
{
	struct plan_params p = {
		.transform = TRANSFORM_COPY, .nr_sources = 1, .nr_dests = 1,
		.block_size = 4096, .io_align = 1, .length = 3 * 4096 + 1,
		.src_avail = { 3 * 4096 + 1 },
	};
	struct block_plan bp;
	struct plan pl;

	(void)state;
	assert_int_equal(plan_init(&pl, &p), 0);
	assert_int_equal(pl.nr_blocks, 4);
	assert_int_equal(block_plan_alloc(&pl, &bp), 0);
	assert_int_equal(plan_block(&pl, 3, &bp), 0);
	assert_int_equal(bp.len, 1);
	assert_int_equal(bp.reads[0].file_off, 3 * 4096);
	assert_int_equal(bp.writes[0].len, 1);
	assert_int_equal(plan_block(&pl, 4, &bp), -EINVAL);
	block_plan_free(&bp);
}

/*
 * Stripe and destripe with one unit per member per block need no shuffle:
 * every block is planned from the read area (and the sim still gets the
 * right bytes, O_DIRECT tails included); with two units per member only a
 * short last block is.
 */
static void one_unit_per_member_stripes_plan_zero_copy(void **state)
{
	static const enum gather_layout gl[] = { GATHER_CONCAT, GATHER_DESTRIPE };
	const uint32_t su = 4096;

	(void)state;
	for (int k = 0; k < 2; k++) {
		enum transform t = k ? TRANSFORM_GATHER : TRANSFORM_STRIPE;

		for (int n = 2; n <= 3; n++) {
			uint64_t lens[] = { n * su * 5ULL, n * su * 5ULL + 700, n * su * 3ULL - 100 };

			for (int i = 0; i < 3; i++) {
				uint64_t blocks = (lens[i] + n * su - 1) / (n * su), tail;

				assert_int_equal(check_layout_aligned(t, gl[k], n, n * su, su, lens[i],
								      0, 0, 0, 512), blocks);
				assert_int_equal(check_layout_aligned(t, gl[k], n, n * su, su, lens[i],
								      0, 0, 0, 1), blocks);
				/* only a short last block of one unit each qualifies */
				tail = lens[i] % (2 * n * su);
				assert_int_equal(check_layout_aligned(t, gl[k], n, 2 * n * su, su,
								      lens[i], 0, 0, 0, 512),
						 tail && tail <= n * su);
			}
		}
	}
}

static void direct_io_rounds_tails_up_and_expects_eof(void **state)
{
	/* 10000 bytes in 8K blocks with 4K O_DIRECT alignment */
	struct plan_params p = {
		.transform = TRANSFORM_COPY, .nr_sources = 1, .nr_dests = 1,
		.block_size = 8192, .io_align = 4096, .length = 10000,
		.src_avail = { 10000 },
	};
	struct block_plan bp;
	struct plan pl;

	(void)state;
	assert_int_equal(plan_init(&pl, &p), 0);
	assert_int_equal(block_plan_alloc(&pl, &bp), 0);
	assert_int_equal(plan_block(&pl, 1, &bp), 0);
	assert_int_equal(bp.len, 1808);
	assert_int_equal(bp.reads[0].io_len, 4096);
	assert_int_equal(bp.reads[0].expect, 1808);	/* the file ends there */
	assert_int_equal(bp.writes[0].io_len, 4096);	/* padded, cut back later */
	assert_int_equal(bp.writes[0].expect, 4096);
	block_plan_free(&bp);

	/* a source longer than the copied range: the rounded read is whole */
	p.src_avail[0] = 1 << 20;
	assert_int_equal(plan_init(&pl, &p), 0);
	assert_int_equal(block_plan_alloc(&pl, &bp), 0);
	assert_int_equal(plan_block(&pl, 1, &bp), 0);
	assert_int_equal(bp.reads[0].expect, 4096);
	block_plan_free(&bp);
}

static void stripe_member_regions_start_aligned(void **state)
{
	struct plan_params p = {
		.transform = TRANSFORM_STRIPE, .nr_sources = 1, .nr_dests = 3,
		.block_size = 65536, .stripe_unit = 3000, .io_align = 1, .length = 1 << 20,
		.src_avail = { 1 << 20 },
	};
	struct block_plan bp;
	struct plan pl;

	(void)state;
	assert_int_equal(plan_init(&pl, &p), 0);
	assert_int_equal(block_plan_alloc(&pl, &bp), 0);
	for (uint64_t b = 0; b < pl.nr_blocks; b++) {
		assert_int_equal(plan_block(&pl, b, &bp), 0);
		assert_int_equal(bp.nr_writes, 3);
		for (int i = 0; i < bp.nr_writes; i++)
			assert_int_equal(bp.writes[i].buf_off % PLAN_BUF_ALIGN, 0);
	}
	block_plan_free(&bp);
}

static void stripe_shares_sum_to_the_stream(void **state)
{
	(void)state;
	for (uint64_t len = 0; len < 50000; len += 997) {
		for (int n = 2; n <= 5; n++) {
			uint64_t sum = 0;

			for (int i = 0; i < n; i++)
				sum += plan_stripe_share(len, n, 4096, i);
			assert_true(sum == len);
		}
	}
	assert_int_equal(plan_stripe_share(10000, 2, 4096, 0), 4096 + 1808);
	assert_int_equal(plan_stripe_share(10000, 2, 4096, 1), 4096);
}

static void inconsistent_destripe_sources_are_rejected(void **state)
{
	/* 13 bytes in units of 4 over 2 sources need 8 + 5; source 1 has 3 */
	struct plan_params p = {
		.transform = TRANSFORM_GATHER, .gather = GATHER_DESTRIPE, .nr_sources = 2,
		.nr_dests = 1, .block_size = 4096, .stripe_unit = 4, .io_align = 1,
		.src_avail = { 10, 3 },
	};
	struct plan pl;

	(void)state;
	p.length = plan_default_length(&p);
	assert_int_equal(p.length, 13);
	assert_int_equal(plan_init(&pl, &p), -ERANGE);
	p.src_avail[0] = 8;
	p.src_avail[1] = 5;
	assert_int_equal(plan_init(&pl, &p), 0);
}

static void concat_longer_than_its_sources_is_rejected(void **state)
{
	struct plan_params p = {
		.transform = TRANSFORM_GATHER, .gather = GATHER_CONCAT, .nr_sources = 2,
		.nr_dests = 1, .block_size = 4096, .io_align = 1, .length = 101,
		.src_avail = { 50, 50 },
	};
	struct plan pl;

	(void)state;
	assert_int_equal(plan_init(&pl, &p), -ERANGE);
	p.length = 100;
	assert_int_equal(plan_init(&pl, &p), 0);
}

static void wrong_file_counts_are_rejected(void **state)
{
	struct plan_params p = {
		.transform = TRANSFORM_COPY, .nr_sources = 1, .nr_dests = 2,
		.block_size = 4096, .io_align = 1,
	};
	struct plan pl;

	(void)state;
	assert_int_equal(plan_init(&pl, &p), -EINVAL);
	p.transform = TRANSFORM_STRIPE;		/* and stripe without a unit */
	assert_int_equal(plan_init(&pl, &p), -EINVAL);
	p.stripe_unit = 4096;
	assert_int_equal(plan_init(&pl, &p), 0);
	p.io_align = 3000;			/* not a power of two */
	assert_int_equal(plan_init(&pl, &p), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(copy_moves_every_byte_once_for_all_sizes),
		cmocka_unit_test(mirror_writes_every_byte_to_every_destination),
		cmocka_unit_test(stripe_matches_raid0_for_units_that_do_not_divide_the_block),
		cmocka_unit_test(gather_destripe_inverts_stripe),
		cmocka_unit_test(gather_concat_joins_sources_across_block_boundaries),
		cmocka_unit_test(requests_cut_to_max_io_move_the_same_bytes),
		cmocka_unit_test(a_block_is_cut_in_order_into_pieces_of_max_io),
		cmocka_unit_test(per_unit_stripes_that_keep_alignment_never_shuffle),
		cmocka_unit_test(zero_bytes_plan_no_blocks),
		cmocka_unit_test(tail_block_holds_the_remainder),
		cmocka_unit_test(direct_io_rounds_tails_up_and_expects_eof),
		cmocka_unit_test(stripe_member_regions_start_aligned),
		cmocka_unit_test(one_unit_per_member_stripes_plan_zero_copy),
		cmocka_unit_test(stripe_shares_sum_to_the_stream),
		cmocka_unit_test(inconsistent_destripe_sources_are_rejected),
		cmocka_unit_test(concat_longer_than_its_sources_is_rejected),
		cmocka_unit_test(wrong_file_counts_are_rejected),
	};

	return cmocka_run_group_tests_name("plan", tests, NULL, NULL);
}
