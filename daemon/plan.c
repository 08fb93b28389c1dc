// SPDX-License-Identifier: MIT
/*
 * Block layout for copy, mirror, stripe (RAID-0) and gather (concat or
 * destripe). See plan.h for the model.
 *
 * Stripe: logical byte x lies in stripe unit u = x / su, on member
 * u % N at member offset (u / N) * su + x % su. Within any logical range the
 * bytes of one member form one contiguous member range, so a block is one
 * read and at most one write per member (and the inverse for destripe).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

static inline uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

uint64_t plan_stripe_share(uint64_t len, int n, uint32_t su, int i)
{
	uint64_t row = (uint64_t)n * su;
	uint64_t full = len / row, rem = len % row;
	uint64_t extra = rem > (uint64_t)i * su ? min_u64(su, rem - (uint64_t)i * su) : 0;

	return full * su + extra;
}

static bool is_destripe(const struct plan_params *p)
{
	return p->transform == TRANSFORM_GATHER && p->gather == GATHER_DESTRIPE;
}

uint64_t plan_src_bytes(const struct plan_params *p, int s)
{
	uint64_t used;

	if (p->transform != TRANSFORM_GATHER)
		return p->length;
	if (is_destripe(p))
		return plan_stripe_share(p->length, p->nr_sources, p->stripe_unit, s);
	/* concat: sources fill the stream in order */
	used = 0;
	for (int i = 0; i < s; i++)
		used += p->src_avail[i];
	if (used >= p->length)
		return 0;
	return min_u64(p->src_avail[s], p->length - used);
}

uint64_t plan_default_length(const struct plan_params *p)
{
	uint64_t sum = 0;

	if (p->transform != TRANSFORM_GATHER)
		return p->src_avail[0];
	/*
	 * gather: everything the sources hold. For destripe, sizes that are
	 * not the stripe shares of one stream are caught by plan_init().
	 */
	for (int i = 0; i < p->nr_sources; i++)
		sum += p->src_avail[i];
	return sum;
}

uint64_t plan_dest_bytes_at(const struct plan_params *p, int d, uint64_t at)
{
	if (p->transform == TRANSFORM_STRIPE)
		return plan_stripe_share(at, p->nr_dests, p->stripe_unit, d);
	return at;
}

uint64_t plan_dest_bytes(const struct plan *pl, int d)
{
	return plan_dest_bytes_at(&pl->p, d, pl->p.length);
}

int plan_init(struct plan *pl, const struct plan_params *p)
{
	uint64_t ra, units;
	int n;

	memset(pl, 0, sizeof(*pl));
	if (p->block_size == 0 || p->nr_sources < 1 || p->nr_dests < 1 ||
	    p->nr_sources > CONFIG_MAX_FILES || p->nr_dests > CONFIG_MAX_FILES ||
	    p->io_align == 0 || (p->io_align & (p->io_align - 1)) ||
	    p->start > p->length)
		return -EINVAL;
	switch (p->transform) {
	case TRANSFORM_COPY:
		if (p->nr_sources != 1 || p->nr_dests != 1)
			return -EINVAL;
		break;
	case TRANSFORM_MIRROR:
	case TRANSFORM_STRIPE:
		if (p->nr_sources != 1)
			return -EINVAL;
		break;
	case TRANSFORM_GATHER:
		if (p->nr_dests != 1)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	if ((p->transform == TRANSFORM_STRIPE || is_destripe(p)) && !p->stripe_unit)
		return -EINVAL;
	/* pieces start where a region may: aligned for O_DIRECT and the page */
	if (p->max_io && p->max_io % plan_region_align(p->io_align))
		return -EINVAL;

	pl->p = *p;
	for (int s = 0; s < p->nr_sources; s++)
		if (plan_src_bytes(p, s) > p->src_avail[s])
			return -ERANGE;
	if (p->transform == TRANSFORM_GATHER && !is_destripe(p)) {
		uint64_t sum = 0;

		for (int s = 0; s < p->nr_sources; s++) {
			pl->concat_start[s] = sum;
			sum += p->src_avail[s];
		}
		pl->concat_start[p->nr_sources] = sum;
		if (p->length > sum)
			return -ERANGE;
	}

	pl->nr_blocks = (p->length - p->start + p->block_size - 1) / p->block_size;
	pl->region_align = plan_region_align(p->io_align);
	ra = pl->region_align;
	units = p->stripe_unit ? p->block_size / p->stripe_unit + 2 : 1;
	n = p->transform == TRANSFORM_GATHER ? p->nr_sources : p->nr_dests;

	switch (p->transform) {
	case TRANSFORM_COPY:
	case TRANSFORM_MIRROR:
		pl->r_size = round_up(p->block_size, ra);
		pl->w_stride = pl->r_size;
		pl->w_size = pl->w_stride * p->nr_dests;
		pl->max_reads = 1;
		pl->max_writes = p->nr_dests;
		pl->max_copies = p->nr_dests;
		pl->write_from_read = true;
		break;
	case TRANSFORM_STRIPE:
		pl->r_size = round_up(p->block_size, ra);
		/* each member's share starts aligned: at most one pad per member */
		pl->w_size = round_up(p->block_size, ra) + n * ra;
		pl->max_reads = 1;
		pl->max_writes = p->per_unit ? (int)units : n;
		pl->max_copies = units;
		break;
	case TRANSFORM_GATHER:
		pl->w_size = round_up(p->block_size, ra);
		pl->max_writes = 1;
		pl->max_reads = is_destripe(p) && p->per_unit ? (int)units : n;
		if (is_destripe(p)) {
			pl->r_size = round_up(p->block_size, ra) + n * ra;
			pl->max_copies = units;
		} else {
			pl->r_size = round_up(p->block_size, ra);
			pl->max_copies = n;
			pl->write_from_read = true;
		}
		break;
	}
	/*
	 * Per-unit: one_unit_each() or per_unit_ios() take every block in
	 * place where block starts and unit boundaries keep the alignment
	 * (a block spans at most units requests, the bound above).
	 */
	pl->never_shuffles = pl->write_from_read ||
		((p->transform == TRANSFORM_STRIPE || is_destripe(p)) && p->per_unit &&
		 !(p->start % p->io_align) && !(p->block_size % p->io_align) &&
		 !(p->stripe_unit % p->io_align));
	/* cut to max_io: a request of L bytes in at most L / max_io + 1 pieces */
	if (p->max_io) {
		pl->max_reads += pl->r_size / p->max_io + 1;
		pl->max_writes += pl->w_size / p->max_io + 1;
	}
	return 0;
}

int block_plan_alloc(const struct plan *pl, struct block_plan *bp)
{
	memset(bp, 0, sizeof(*bp));
	bp->reads = calloc(pl->max_reads, sizeof(*bp->reads));
	bp->writes = calloc(pl->max_writes, sizeof(*bp->writes));
	bp->copies = calloc(pl->max_copies, sizeof(*bp->copies));
	if (!bp->reads || !bp->writes || !bp->copies) {
		block_plan_free(bp);
		return -ENOMEM;
	}
	return 0;
}

void block_plan_free(struct block_plan *bp)
{
	free(bp->reads);
	free(bp->writes);
	free(bp->copies);
	memset(bp, 0, sizeof(*bp));
}

static void set_read(const struct plan *pl, struct plan_io *io, int file,
		     uint32_t buf_off, uint64_t file_off, uint32_t len)
{
	const struct plan_params *p = &pl->p;
	uint64_t io_len = round_up(len, p->io_align);
	/* where a rounded-up O_DIRECT read meets EOF it returns the rest only */
	uint64_t avail = p->src_avail[file] + p->offset - file_off;

	io->file = file;
	io->buf_off = buf_off;
	io->file_off = file_off;
	io->len = len;
	io->io_len = io_len;
	io->expect = p->io_align > 1 ? min_u64(io_len, avail) : len;
	io->rbuf_off = -1;
}

static void set_write(const struct plan *pl, struct plan_io *io, int file,
		      uint32_t buf_off, uint64_t file_off, uint32_t len, int64_t rbuf_off)
{
	io->file = file;
	io->buf_off = buf_off;
	io->file_off = file_off;
	io->len = len;
	io->io_len = round_up(len, pl->p.io_align);
	io->expect = io->io_len;
	io->rbuf_off = rbuf_off;
}

/* one pass over the stripe units of [lo, hi): per member first offset and bytes */
struct member_span {
	uint64_t first;
	uint32_t bytes;
	uint32_t base;		/* region start in the area, aligned */
	uint32_t fill;		/* bytes placed so far */
};

static void stripe_spans(const struct plan *pl, uint64_t lo, uint64_t hi, int n,
			 struct member_span *m)
{
	uint64_t su = pl->p.stripe_unit, x = lo;
	uint32_t base = 0;

	memset(m, 0, n * sizeof(*m));
	while (x < hi) {
		uint64_t u = x / su, end = min_u64(hi, (u + 1) * su);
		int d = u % n;

		if (!m[d].bytes)
			m[d].first = (u / n) * su + (x - u * su);
		m[d].bytes += end - x;
		x = end;
	}
	for (int d = 0; d < n; d++) {
		m[d].base = base;
		base += round_up(m[d].bytes, pl->region_align);
	}
}

/* the read or write of member @file (there is one: see one_unit_each()) */
static struct plan_io *io_of(struct plan_io *ios, int nr, int file)
{
	for (int i = 0; i < nr; i++)
		if (ios[i].file == file)
			return &ios[i];
	return &ios[0];
}

/*
 * A stripe or destripe block where each member holds one stripe unit (or
 * part of one): the members' ranges are the block's own sub-ranges, in
 * member order, so writes (stripe) or reads (destripe) can use the read
 * area in place (as many copies as members: every member with bytes has
 * one). Offsets must keep O_DIRECT alignment, and only the
 * block's last unit may be rounded up (its padding runs past the block).
 * Sets bp->from_read.
 */
static bool one_unit_each(const struct plan *pl, struct block_plan *bp)
{
	int members = pl->p.transform == TRANSFORM_STRIPE ? bp->nr_writes : bp->nr_reads;
	uint32_t align = pl->p.io_align;

	if (bp->nr_copies != members)
		return false;
	for (int i = 0; i < bp->nr_copies; i++) {
		const struct plan_copy *c = &bp->copies[i];
		uint32_t at = pl->p.transform == TRANSFORM_STRIPE ? c->src_off : c->dst_off;

		if (at % align || (c->len % align && at + c->len != bp->len))
			return false;
	}
	bp->from_read = true;
	return true;
}

/*
 * stripe_io = per-unit, where members hold several units of a block: one
 * write per unit straight from the read area (stripe), or one read per unit
 * straight into its place in the block (destripe), instead of one request
 * per member through a gather; same alignment rule as one_unit_each().
 */
static bool per_unit_ios(const struct plan *pl, struct block_plan *bp,
			 const struct member_span *m)
{
	const struct plan_params *p = &pl->p;
	bool stripe = p->transform == TRANSFORM_STRIPE;

	if (!p->per_unit || bp->nr_copies > (stripe ? pl->max_writes : pl->max_reads))
		return false;
	for (int i = 0; i < bp->nr_copies; i++) {
		const struct plan_copy *c = &bp->copies[i];
		uint32_t at = stripe ? c->src_off : c->dst_off;

		if (at % p->io_align || (c->len % p->io_align && at + c->len != bp->len))
			return false;
	}
	for (int i = 0; i < bp->nr_copies; i++) {
		struct plan_copy *c = &bp->copies[i];
		const struct member_span *s = &m[c->group];

		if (stripe) {
			set_write(pl, &bp->writes[i], c->group, c->dst_off,
				  p->dest_offset + s->first + (c->dst_off - s->base), c->len,
				  c->src_off);
		} else {
			set_read(pl, &bp->reads[i], c->group, c->dst_off,
				 p->offset + s->first + (c->src_off - s->base), c->len);
			c->src_off = c->dst_off;
		}
	}
	if (stripe) {
		bp->nr_writes = bp->nr_copies;
	} else {
		bp->nr_reads = bp->nr_copies;
		bp->writes[0].rbuf_off = 0;
	}
	bp->from_read = true;
	return true;
}

/*
 * Every request longer than max_io in pieces of max_io, in order: a request
 * the device would split fails io_uring's non-blocking attempt and goes to
 * an io-wq worker (files_limits.c). From the back, so the array grows in
 * place; plan_init() sized it.
 */
static void cut_to_max_io(const struct plan *pl, struct plan_io *io, int *nr, bool reads)
{
	uint32_t m = pl->p.max_io;
	int total = 0, pos;

	for (int i = 0; i < *nr; i++)
		total += io[i].len ? (io[i].len + m - 1) / m : 1;
	if (total == *nr)
		return;
	pos = total;
	for (int i = *nr - 1; i >= 0; i--) {
		const struct plan_io o = io[i];
		int n = o.len ? (o.len + m - 1) / m : 1;

		pos -= n;
		if (n == 1) {
			io[pos] = o;
			continue;
		}
		for (int k = 0; k < n; k++) {
			uint32_t off = k * m, len = o.len - off < m ? o.len - off : m;

			if (reads)
				set_read(pl, &io[pos + k], o.file, o.buf_off + off, o.file_off + off,
					 len);
			else
				set_write(pl, &io[pos + k], o.file, o.buf_off + off, o.file_off + off,
					  len, o.rbuf_off < 0 ? -1 : o.rbuf_off + off);
		}
	}
	*nr = total;
}

int plan_block(const struct plan *pl, uint64_t index, struct block_plan *bp)
{
	const struct plan_params *p = &pl->p;
	struct member_span m[CONFIG_MAX_FILES];
	uint64_t lo, hi, x, su = p->stripe_unit;
	uint32_t len;

	if (index >= pl->nr_blocks)
		return -EINVAL;
	lo = plan_block_start(pl, index);
	hi = min_u64(lo + p->block_size, p->length);
	len = hi - lo;
	bp->index = index;
	bp->logical_off = lo;
	bp->len = len;
	bp->nr_reads = bp->nr_writes = bp->nr_copies = 0;
	bp->from_read = pl->write_from_read;

	switch (p->transform) {
	case TRANSFORM_COPY:
	case TRANSFORM_MIRROR:
		set_read(pl, &bp->reads[bp->nr_reads++], 0, 0, p->offset + lo, len);
		for (int d = 0; d < p->nr_dests; d++) {
			set_write(pl, &bp->writes[bp->nr_writes++], d, d * pl->w_stride,
				  p->dest_offset + lo, len, 0);
			bp->copies[bp->nr_copies++] = (struct plan_copy){
				.src_off = 0, .dst_off = d * pl->w_stride, .len = len, .group = d,
			};
		}
		break;

	case TRANSFORM_STRIPE:
		set_read(pl, &bp->reads[bp->nr_reads++], 0, 0, p->offset + lo, len);
		stripe_spans(pl, lo, hi, p->nr_dests, m);
		for (x = lo; x < hi;) {
			uint64_t u = x / su, end = min_u64(hi, (u + 1) * su);
			int d = u % p->nr_dests;

			bp->copies[bp->nr_copies++] = (struct plan_copy){
				.src_off = x - lo, .dst_off = m[d].base + m[d].fill,
				.len = end - x, .group = d,
			};
			m[d].fill += end - x;
			x = end;
		}
		for (int d = 0; d < p->nr_dests; d++)
			if (m[d].bytes)
				set_write(pl, &bp->writes[bp->nr_writes++], d, m[d].base,
					  p->dest_offset + m[d].first, m[d].bytes, -1);
		if (one_unit_each(pl, bp))
			for (int i = 0; i < bp->nr_copies; i++)
				io_of(bp->writes, bp->nr_writes, bp->copies[i].group)->rbuf_off =
					bp->copies[i].src_off;
		else
			per_unit_ios(pl, bp, m);
		break;

	case TRANSFORM_GATHER:
		if (p->gather == GATHER_DESTRIPE) {
			stripe_spans(pl, lo, hi, p->nr_sources, m);
			for (int s = 0; s < p->nr_sources; s++)
				if (m[s].bytes)
					set_read(pl, &bp->reads[bp->nr_reads++], s, m[s].base,
						 p->offset + m[s].first, m[s].bytes);
			for (x = lo; x < hi;) {
				uint64_t u = x / su, end = min_u64(hi, (u + 1) * su);
				int s = u % p->nr_sources;

				bp->copies[bp->nr_copies++] = (struct plan_copy){
					.src_off = m[s].base + m[s].fill, .dst_off = x - lo,
					.len = end - x, .group = s,
				};
				m[s].fill += end - x;
				x = end;
			}
			set_write(pl, &bp->writes[bp->nr_writes++], 0, 0,
				  p->dest_offset + lo, len, -1);
			if (one_unit_each(pl, bp)) {
				/* each source reads straight into its place in the block */
				for (int i = 0; i < bp->nr_copies; i++) {
					struct plan_copy *c = &bp->copies[i];

					io_of(bp->reads, bp->nr_reads, c->group)->buf_off = c->dst_off;
					c->src_off = c->dst_off;
				}
				bp->writes[0].rbuf_off = 0;
			} else {
				per_unit_ios(pl, bp, m);
			}
		} else {
			for (int s = 0; s < p->nr_sources && lo < hi; s++) {
				uint64_t a = pl->concat_start[s], b = pl->concat_start[s + 1];
				uint64_t from, to;

				if (b <= lo || a >= hi)
					continue;
				from = lo > a ? lo : a;
				to = min_u64(hi, b);
				set_read(pl, &bp->reads[bp->nr_reads++], s, from - lo,
					 p->offset + (from - a), to - from);
				bp->copies[bp->nr_copies++] = (struct plan_copy){
					.src_off = from - lo, .dst_off = from - lo,
					.len = to - from, .group = s,
				};
			}
			set_write(pl, &bp->writes[bp->nr_writes++], 0, 0,
				  p->dest_offset + lo, len, 0);
		}
		break;
	}
	if (p->max_io) {
		cut_to_max_io(pl, bp->reads, &bp->nr_reads, true);
		cut_to_max_io(pl, bp->writes, &bp->nr_writes, false);
	}
	return 0;
}
