// SPDX-License-Identifier: MIT
/*
 * The device's layout: a request of the block device, cut into one backing
 * request per member range. Stripe pieces are one unit (or part of one)
 * each, at that unit's place in the tag buffer, so the bytes go straight
 * from the buffer ublk filled to the member, with no copy.
 */
#include <errno.h>
#include <string.h>

#include "ublk_map.h"

void ublk_layout_init(struct ublk_layout *l, const struct device_config *dc)
{
	memset(l, 0, sizeof(*l));
	l->target = dc->target;
	l->nr = dc->nr_backing;
	l->size = dc->size;
	l->unit = dc->stripe_unit;
	for (int i = 0; i < dc->nr_backing; i++)
		l->start[i + 1] = l->start[i] +
			(dc->target == TARGET_LINEAR ? device_member_share(dc, i) : 0);
}

int ublk_map_max_pieces(const struct ublk_layout *l, uint32_t max_io)
{
	if (l->target == TARGET_STRIPE)
		return max_io / l->unit + 2;	/* a misaligned start adds one */
	return l->nr;
}

static int map_stripe(const struct ublk_layout *l, uint64_t off, uint32_t len,
		      struct ublk_piece *out, int max)
{
	uint32_t done = 0;
	int n = 0;

	while (done < len) {
		uint64_t pos = off + done, k = pos / l->unit;
		uint32_t in = pos % l->unit, chunk = l->unit - in;

		if (chunk > len - done)
			chunk = len - done;
		if (n >= max)
			return -EINVAL;
		out[n++] = (struct ublk_piece){
			.member = k % l->nr,
			.buf_off = done,
			.off = (k / l->nr) * l->unit + in,
			.len = chunk,
		};
		done += chunk;
	}
	return n;
}

static int map_linear(const struct ublk_layout *l, uint64_t off, uint32_t len,
		      struct ublk_piece *out, int max)
{
	uint64_t end = off + len;
	int n = 0;

	for (int i = 0; i < l->nr; i++) {
		uint64_t a = off > l->start[i] ? off : l->start[i];
		uint64_t b = end < l->start[i + 1] ? end : l->start[i + 1];

		if (a >= b)
			continue;
		if (n >= max)
			return -EINVAL;
		out[n++] = (struct ublk_piece){
			.member = i, .buf_off = a - off, .off = a - l->start[i], .len = b - a,
		};
	}
	return n;
}

int ublk_map(const struct ublk_layout *l, bool write, int read_member, uint64_t off,
	     uint32_t len, struct ublk_piece *out, int max)
{
	if (!len || off > l->size || len > l->size - off)
		return -EINVAL;
	switch (l->target) {
	case TARGET_STRIPE:
		return map_stripe(l, off, len, out, max);
	case TARGET_LINEAR:
		return map_linear(l, off, len, out, max);
	case TARGET_MIRROR:
	default:
		if (!write) {
			if (max < 1 || read_member < 0 || read_member >= l->nr)
				return -EINVAL;
			out[0] = (struct ublk_piece){ .member = read_member, .off = off, .len = len };
			return 1;
		}
		if (max < l->nr)
			return -EINVAL;
		for (int i = 0; i < l->nr; i++)
			out[i] = (struct ublk_piece){ .member = i, .off = off, .len = len };
		return l->nr;
	}
}
