/* SPDX-License-Identifier: MIT */
#ifndef IOU_BLOCK_IO_H
#define IOU_BLOCK_IO_H

/*
 * Where each read and write of a block goes: the one rule for the
 * userspace chains (chain.c) and the loop program's templates
 * (loop_templates.c). A read lands in the slot's read area at its buf_off. A
 * write goes out of the read area at its rbuf_off when the block needs no
 * shuffle (block_plan.from_read and an engine that elides it), else out of
 * the write area at its buf_off. Registered files are the sources, then the
 * destinations.
 */
#include <stdbool.h>
#include <stdint.h>

#include "plan.h"

/* one slot's registered areas */
struct slot_bufs {
	uint8_t *rbuf, *wbuf;
	uint16_t rbuf_index, wbuf_index;
};

/* one request: registered file and buffer, where, how much */
struct block_io {
	uint16_t file;
	uint16_t buf_index;
	uint8_t *buf;
	uint64_t off;
	uint32_t len;		/* bytes submitted */
	uint32_t expect;	/* bytes a complete transfer returns */
};

static inline struct block_io block_read_io(const struct block_plan *bp,
					    const struct slot_bufs *sb, int i)
{
	const struct plan_io *io = &bp->reads[i];

	return (struct block_io){
		.file = io->file, .buf_index = sb->rbuf_index, .buf = sb->rbuf + io->buf_off,
		.off = io->file_off, .len = io->io_len, .expect = io->expect,
	};
}

static inline struct block_io block_write_io(const struct block_plan *bp,
					     const struct slot_bufs *sb, int nr_src,
					     bool from_read, int i)
{
	const struct plan_io *io = &bp->writes[i];

	return (struct block_io){
		.file = nr_src + io->file,
		.buf_index = from_read ? sb->rbuf_index : sb->wbuf_index,
		.buf = from_read ? sb->rbuf + io->rbuf_off : sb->wbuf + io->buf_off,
		.off = io->file_off, .len = io->io_len, .expect = io->expect,
	};
}

#endif
