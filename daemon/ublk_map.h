/* SPDX-License-Identifier: MIT */
#ifndef IOU_UBLK_MAP_H
#define IOU_UBLK_MAP_H

/*
 * A device's layout: which bytes of which member a request of the block
 * device touches. Pure math, unit-tested on the host (test_ublk_map.c).
 *
 *   linear   the members one after the other (each its share of the size)
 *   stripe   RAID-0: unit k of the device is on member k % n at (k / n) * unit
 *   mirror   every member holds the whole device
 */
#include <stdbool.h>
#include <stdint.h>

#include "config.h"

struct ublk_layout {
	enum device_target target;
	int nr;				/* members */
	uint64_t size;			/* of the device, bytes */
	uint32_t unit;			/* stripe */
	uint64_t start[CONFIG_MAX_FILES + 1];	/* linear: where member i begins */
};

/* one backing request: @len bytes at @off of @member, at @buf_off of the tag's buffer */
struct ublk_piece {
	uint16_t member;
	bool staged;		/* buf_off is in the tag's staging buffer (ublk_gather.c) */
	uint32_t buf_off;
	uint64_t off;
	uint32_t len;
	uint32_t stage_off;	/* a unit of a gathered member: its place in staging */
};

void ublk_layout_init(struct ublk_layout *l, const struct device_config *dc);
/* the most pieces one request of up to @max_io bytes can need */
int ublk_map_max_pieces(const struct ublk_layout *l, uint32_t max_io);
/*
 * The pieces of the device range [@off, @off + @len): reads of linear and
 * stripe go where the bytes are; mirror reads go to @read_member, mirror
 * writes to every member. Returns the number of pieces, or -EINVAL for a
 * range outside the device or more than @max pieces.
 */
int ublk_map(const struct ublk_layout *l, bool write, int read_member, uint64_t off,
	     uint32_t len, struct ublk_piece *out, int max);

#endif
