/* SPDX-License-Identifier: MIT */
#ifndef IOU_CHECKSUM_H
#define IOU_CHECKSUM_H

/*
 * checksum = crc32c: a CRC32C for every block of a pipeline's logical
 * stream, in a manifest beside its checkpoint (state_dir/NAME.sums):
 *
 *   iou-offload-checksums 1 / algorithm=crc32c / block_size= / length= /
 *   fingerprint= / source=dev:ino:size:mtime_ns / end     (text, padded)
 *   then a little-endian u32 per block, block i at CHECKSUM_HEADER + 4 i
 *
 * A checkpoint vouches only for blocks whose sums are on disk: the manifest
 * is flushed with the destinations. `iou-offloadd verify` reads it back.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "files.h"

#define CHECKSUM_HEADER	4096

/* CRC32C (Castagnoli) of @len bytes, continuing @crc (0 to start) */
uint32_t checksum_crc32c(uint32_t crc, const void *buf, size_t len);
/* CRC32C of @len zero bytes (a hole's): the run's and verify's one rule */
uint32_t checksum_zeros(uint32_t len);

struct checksum_head {
	uint32_t block_size;
	uint64_t length;
	uint64_t fingerprint;
	struct file_ident source;
};

/* path of NAME's manifest in @dir */
int checksum_path(const char *dir, const char *name, char *buf, size_t len);
/*
 * open (create) the manifest for @h: an existing one is kept when its header
 * is @h (*@kept true: a resume continues it), else started anew. fd or -errno
 */
int checksum_open(const char *path, const struct checksum_head *h, bool *kept);
/* read the header of an existing manifest: 0, -ENOENT, -EINVAL */
int checksum_read_head(int fd, struct checksum_head *h);
/* block @i's sum: write */
int checksum_put(int fd, uint64_t i, uint32_t crc);
/* the sums of up to @n blocks from @first: how many the manifest holds, or -errno */
ssize_t checksum_get(int fd, uint64_t first, uint32_t *crc, size_t n);

#endif
