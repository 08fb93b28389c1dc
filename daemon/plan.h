/* SPDX-License-Identifier: MIT */
/*
 * Pure layout math: which bytes of which file each block reads and writes,
 * and how the bytes move between the read and the write area on the way.
 * No I/O here, so all of it is unit-tested on the host.
 *
 * The logical stream is what the pipeline moves: for copy, mirror and
 * stripe the source range [offset, offset + length); for gather the sources
 * concatenated (concat) or interleaved in stripe units (destripe). It is cut
 * into blocks of block_size, each handled by one chain.
 */
#ifndef IOU_PLAN_H
#define IOU_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

/* start of every per-file region in a buffer area: page, and O_DIRECT, aligned */
#define PLAN_BUF_ALIGN	4096u

/* where a region of the buffers may start: the page, or O_DIRECT's alignment */
static inline uint32_t plan_region_align(uint32_t io_align)
{
	return io_align > PLAN_BUF_ALIGN ? io_align : PLAN_BUF_ALIGN;
}

struct plan_params {
	enum transform transform;
	enum gather_layout gather;
	bool per_unit;			/* stripe_io = per-unit */
	int nr_sources;
	int nr_dests;
	uint64_t offset;		/* into each source */
	uint64_t dest_offset;		/* into each destination */
	uint64_t length;		/* logical bytes moved */
	uint64_t start;			/* logical offset of block 0 (resume point) */
	uint32_t block_size;
	uint32_t stripe_unit;
	uint32_t io_align;		/* 1, or O_DIRECT alignment (power of 2) */
	/*
	 * 0, or the largest request the devices take without a split (a
	 * multiple of io_align and PLAN_BUF_ALIGN): longer reads and writes
	 * are cut to it
	 */
	uint32_t max_io;
	/* bytes each source has after offset: concat sizes, EOF expectations */
	uint64_t src_avail[CONFIG_MAX_FILES];
};

struct plan {
	struct plan_params p;
	uint64_t nr_blocks;
	uint64_t concat_start[CONFIG_MAX_FILES + 1];	/* prefix sums of src_avail */
	uint32_t region_align;		/* max(PLAN_BUF_ALIGN, io_align) */
	uint32_t r_size;		/* read area bytes per chain */
	uint32_t w_size;		/* write area bytes per chain */
	uint32_t w_stride;		/* mirror: distance between destination copies */
	int max_reads;
	int max_writes;
	int max_copies;
	/* copy, mirror, concat: every write's bytes lie contiguous in the read area */
	bool write_from_read;
	/*
	 * no block needs a copy: write_from_read, or stripe_io = per-unit with
	 * every unit's offset in a block keeping O_DIRECT alignment
	 */
	bool never_shuffles;
};

struct plan_io {
	uint16_t file;		/* source index (reads), destination index (writes) */
	uint32_t buf_off;	/* in the read area (reads) or write area (writes) */
	uint64_t file_off;
	uint32_t len;		/* payload bytes */
	uint32_t io_len;	/* submitted: len, rounded up to io_align at tails */
	uint32_t expect;	/* what a complete transfer returns */
	int64_t rbuf_off;	/* writes: the same bytes in the read area, or -1 */
};

struct plan_copy {
	uint32_t src_off;	/* in the read area */
	uint32_t dst_off;	/* in the write area */
	uint32_t len;
	uint16_t group;		/* destination (mirror/stripe) or source (gather) */
};

struct block_plan {
	uint64_t index;
	uint64_t logical_off;
	uint32_t len;
	int nr_reads;
	int nr_writes;
	int nr_copies;
	/*
	 * every write's bytes lie contiguous in the read area (rbuf_off):
	 * always for copy, mirror and concat, and for stripe and destripe
	 * blocks that hold one stripe unit per member at aligned offsets
	 */
	bool from_read;
	struct plan_io *reads;
	struct plan_io *writes;
	struct plan_copy *copies;
};

/* -EINVAL: parameters inconsistent (a bug or unchecked config), -ERANGE: sources too short */
int plan_init(struct plan *pl, const struct plan_params *p);
int block_plan_alloc(const struct plan *pl, struct block_plan *bp);
void block_plan_free(struct block_plan *bp);
/* fill @bp for block @index (0 .. nr_blocks-1); 0 or -EINVAL */
int plan_block(const struct plan *pl, uint64_t index, struct block_plan *bp);

/* bytes of a RAID-0 stream of @len that land on member @i of @n */
uint64_t plan_stripe_share(uint64_t len, int n, uint32_t stripe_unit, int i);
/* bytes destination @d holds when the pipeline is done (from dest_offset) */
uint64_t plan_dest_bytes(const struct plan *pl, int d);
/* bytes destination @d holds of the logical stream's first @at (from dest_offset) */
uint64_t plan_dest_bytes_at(const struct plan_params *p, int d, uint64_t at);
/* bytes read from source @s (from offset) over the whole pipeline */
uint64_t plan_src_bytes(const struct plan_params *p, int s);
/* logical stream length when the config leaves it open: to the sources' ends */
uint64_t plan_default_length(const struct plan_params *p);
/* logical offset where block @index starts */
static inline uint64_t plan_block_start(const struct plan *pl, uint64_t index)
{
	return pl->p.start + index * pl->p.block_size;
}

#endif
