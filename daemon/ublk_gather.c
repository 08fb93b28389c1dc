// SPDX-License-Identifier: MIT
/*
 * stripe_io = gather (see ublk_gather.h). Units of one member in one
 * request are contiguous on the member (unit k, k + n, ... of the stripe),
 * so once gathered they go out as a single WRITE_FIXED; in the tag buffer
 * they sit n units apart, which is what the REG_VEC side describes.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "bpf_desc.h"
#include "ublk_gather.h"
#include "iou_abi.h"
#include "../bpf-ops/iou_ops.h"

#define MAX_MEMBERS	16

size_t ublk_gather_meta_size(int max_pieces)
{
	size_t sz = 2 * MAX_MEMBERS * sizeof(struct io_bpf_buf_desc) +
		    (size_t)max_pieces * sizeof(struct iovec);

	return (sz + 63) & ~(size_t)63;
}

/* can member @m's units be gathered: two or more, back to back on the member */
static int gatherable(const struct ublk_piece *p, int n, int m, uint32_t *bytes)
{
	uint64_t next = 0;
	int k = 0;

	*bytes = 0;
	for (int i = 0; i < n; i++) {
		if (p[i].member != m)
			continue;
		if (k && p[i].off != next)
			return 0;
		next = p[i].off + p[i].len;
		*bytes += p[i].len;
		k++;
	}
	return k >= 2 && k <= IOU_OPS_MAX_VECS ? k : 0;
}

int ublk_gather_merge(struct ublk_piece *pieces, int n, struct ublk_piece *units,
		      uint32_t *staged)
{
	bool gather[MAX_MEMBERS] = { false };
	uint32_t pos = 0, bytes;
	int out = 0;

	memcpy(units, pieces, n * sizeof(*units));
	for (int i = 0; i < n; i++)
		units[i].stage_off = UINT32_MAX;
	for (int m = 0; m < MAX_MEMBERS; m++)
		gather[m] = gatherable(units, n, m, &bytes) > 0;
	for (int m = 0; m < MAX_MEMBERS; m++) {
		uint32_t start = pos;
		int first = -1;

		for (int i = 0; i < n; i++) {
			if (units[i].member != m)
				continue;
			if (!gather[m]) {
				pieces[out++] = units[i];
				continue;
			}
			if (first < 0)
				first = i;
			units[i].stage_off = pos;
			pos += units[i].len;
		}
		if (first >= 0)
			pieces[out++] = (struct ublk_piece){
				.member = m, .staged = true, .buf_off = start,
				.off = units[first].off, .len = pos - start,
				.stage_off = UINT32_MAX,
			};
	}
	*staged = pos;
	return out;
}

int ublk_gather_descs(const struct ublk_piece *units, int nr_units, char *buf,
		      uint16_t buf_index, char *stage, uint16_t stage_index, void *meta,
		      size_t meta_len, bool to_stage, struct ublk_shuffle *out)
{
	struct io_bpf_buf_desc *d = meta;
	struct iovec *iov = (struct iovec *)(d + 2 * MAX_MEMBERS);
	size_t max_iov = (meta_len - 2 * MAX_MEMBERS * sizeof(*d)) / sizeof(*iov);
	int pairs = 0, nv = 0;

	if (meta_len < 2 * MAX_MEMBERS * sizeof(*d))
		return -E2BIG;
	memset(out, 0, sizeof(*out));
	out->desc_addr = (uint64_t)(uintptr_t)d;
	for (int m = 0; m < MAX_MEMBERS; m++) {
		struct io_bpf_buf_desc *dst = &d[2 * pairs], *src = &d[2 * pairs + 1];
		struct io_bpf_buf_desc *vec = to_stage ? src : dst, *flat = to_stage ? dst : src;
		uint32_t start = UINT32_MAX, bytes = 0;
		int first = nv;

		for (int i = 0; i < nr_units; i++) {
			if (units[i].member != m || units[i].stage_off == UINT32_MAX)
				continue;
			if ((size_t)nv >= max_iov)
				return -E2BIG;
			if (start == UINT32_MAX)
				start = units[i].stage_off;
			iov[nv].iov_base = buf + units[i].buf_off;
			iov[nv++].iov_len = units[i].len;
			bytes += units[i].len;
		}
		if (!bytes)
			continue;
		bpf_desc_fixed(flat, stage_index, stage + start, bytes);
		bpf_desc_reg_vec(vec, buf_index, &iov[first], nv - first);
		out->expect += bytes;
		pairs++;
	}
	out->nr_pairs = pairs;
	return 0;
}

uint32_t ublk_gather_memcpy(const struct ublk_piece *units, int nr_units, char *buf,
			    char *stage, bool to_stage)
{
	uint32_t bytes = 0;

	for (int i = 0; i < nr_units; i++) {
		const struct ublk_piece *u = &units[i];

		if (u->stage_off == UINT32_MAX)
			continue;
		if (to_stage)
			memcpy(stage + u->stage_off, buf + u->buf_off, u->len);
		else
			memcpy(buf + u->buf_off, stage + u->stage_off, u->len);
		bytes += u->len;
	}
	return bytes;
}
