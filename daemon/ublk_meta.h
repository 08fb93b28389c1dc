/* SPDX-License-Identifier: MIT */
#ifndef IOU_UBLK_META_H
#define IOU_UBLK_META_H

/*
 * integrity = crc32c: the device's metadata file, STATE_DIR/device-NAME.integrity,
 * apart from the members (they stay plain copies of the data a tool can
 * read without the daemon). Three parts, each page aligned:
 *
 *   [0, 4K)             header, text: "iou-offloadd-integrity 1", then
 *                       algorithm=crc32c block_size= region_size= size= fingerprint=
 *                       one per line, NUL padded
 *   [4K, 4K + M)        the dirty-region map: one byte per region (1: dirty),
 *                       M = regions rounded up to 4K
 *   [4K + M, end)       the sums: CRC32C (RFC 3720), little endian, 4 bytes per
 *                       4 KiB block of the device, rounded up to 4K
 *
 * A header that does not match the device (another size or layout) or no
 * file at all: every region is dirty, the sums are taken from the members.
 * Its size is ublk_meta_size(): about 0.1% of the device (--check-config
 * says it).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UBLK_META_PAGE	4096u

struct ublk_meta_layout {
	uint64_t nr_blocks, nr_regions;
	uint64_t map_off, map_len;
	uint64_t sums_off, sums_len;
	uint64_t size;			/* of the file */
};

struct ublk_meta_head {
	uint64_t size;			/* of the device */
	uint64_t fingerprint;		/* of its layout */
	uint32_t block_size, region_size;
};

void ublk_meta_layout(uint64_t dev_size, struct ublk_meta_layout *l);
/* the file's bytes for a device of @dev_size */
uint64_t ublk_meta_size(uint64_t dev_size);
/* the header page, NUL padded */
void ublk_meta_head_format(const struct ublk_meta_head *h, char page[UBLK_META_PAGE]);
/* 0, or -EINVAL for a page that is no header of ours (@why) */
int ublk_meta_head_parse(const char *page, size_t len, struct ublk_meta_head *h,
			 char *why, size_t why_len);

#endif
