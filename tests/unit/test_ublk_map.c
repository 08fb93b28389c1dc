// SPDX-License-Identifier: MIT
/* ublk_map.c: a device request cut into member ranges, checked against a byte model */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ublk_map.h"
#include "ublk_sums.h"
#include "testutil.h"

static struct ublk_layout layout(enum device_target t, int nr, uint64_t size, uint32_t unit,
				 const uint64_t *members)
{
	struct device_config dc;
	struct ublk_layout l;

	memset(&dc, 0, sizeof(dc));
	dc.target = t;
	dc.nr_backing = nr;
	dc.size = size;
	dc.stripe_unit = unit;
	dc.logical_block_size = 512;
	for (int i = 0; i < nr; i++)
		dc.member_size[i] = members ? members[i] : size;
	ublk_layout_init(&l, &dc);
	return l;
}

/* where RAID-0 puts device byte @b: the model the pieces must agree with */
static void stripe_model(uint64_t b, int n, uint32_t unit, int *m, uint64_t *off)
{
	uint64_t k = b / unit;

	*m = k % n;
	*off = (k / n) * unit + b % unit;
}

static void stripe_pieces_follow_the_raid0_model_byte_for_byte(void **state)
{
	struct ublk_layout l = layout(TARGET_STRIPE, 3, 3 << 20, 4096, NULL);
	struct ublk_piece p[64];
	static const uint32_t lens[] = { 512, 4096, 8192, 12288, 65536, 131072 };
	static const uint64_t offs[] = { 0, 512, 3584, 4096, 12288, 1 << 20 };

	(void)state;
	for (size_t a = 0; a < sizeof(offs) / sizeof(offs[0]); a++) {
		for (size_t b = 0; b < sizeof(lens) / sizeof(lens[0]); b++) {
			int n = ublk_map(&l, true, 0, offs[a], lens[b], p, 64);
			uint32_t covered = 0;

			assert_true(n > 0);
			assert_true(n <= ublk_map_max_pieces(&l, 131072));
			for (int i = 0; i < n; i++) {
				/* every byte of the piece lands where the model says */
				for (uint32_t x = 0; x < p[i].len; x += 256) {
					int m;
					uint64_t off;

					stripe_model(offs[a] + p[i].buf_off + x, 3, 4096, &m, &off);
					assert_int_equal(p[i].member, m);
					assert_int_equal(p[i].off + x, off);
				}
				assert_int_equal(p[i].buf_off, covered);
				covered += p[i].len;
			}
			assert_int_equal(covered, lens[b]);
		}
	}
}

static void a_request_within_one_unit_is_one_piece(void **state)
{
	struct ublk_layout l = layout(TARGET_STRIPE, 2, 1 << 20, 65536, NULL);
	struct ublk_piece p[8];

	(void)state;
	assert_int_equal(ublk_map(&l, false, 0, 65536 + 4096, 8192, p, 8), 1);
	assert_int_equal(p[0].member, 1);
	assert_int_equal(p[0].off, 4096);
}

static void linear_requests_split_at_member_boundaries(void **state)
{
	static const uint64_t sizes[] = { 8192, 4096, 1 << 20 };
	struct ublk_layout l = layout(TARGET_LINEAR, 3, 8192 + 4096 + 65536, 0, sizes);
	struct ublk_piece p[8];

	(void)state;
	assert_int_equal(ublk_map(&l, true, 0, 4096, 12288, p, 8), 3);
	assert_int_equal(p[0].member, 0);
	assert_int_equal(p[0].off, 4096);
	assert_int_equal(p[0].len, 4096);
	assert_int_equal(p[1].member, 1);
	assert_int_equal(p[1].off, 0);
	assert_int_equal(p[1].buf_off, 4096);
	assert_int_equal(p[2].member, 2);
	assert_int_equal(p[2].off, 0);
	assert_int_equal(p[2].len, 4096);
	assert_int_equal(p[2].buf_off, 8192);
}

static void mirror_writes_go_to_every_member_and_reads_to_one(void **state)
{
	struct ublk_layout l = layout(TARGET_MIRROR, 3, 1 << 20, 0, NULL);
	struct ublk_piece p[8];

	(void)state;
	assert_int_equal(ublk_map(&l, true, 0, 8192, 4096, p, 8), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(p[i].member, i);
		assert_int_equal(p[i].off, 8192);
		assert_int_equal(p[i].buf_off, 0);
	}
	assert_int_equal(ublk_map(&l, false, 2, 8192, 4096, p, 8), 1);
	assert_int_equal(p[0].member, 2);
}

static void a_request_past_the_end_is_refused(void **state)
{
	struct ublk_layout l = layout(TARGET_STRIPE, 2, 1 << 20, 65536, NULL);
	struct ublk_piece p[8];

	(void)state;
	assert_int_equal(ublk_map(&l, false, 0, (1 << 20) - 4096, 8192, p, 8), -EINVAL);
	assert_int_equal(ublk_map(&l, false, 0, 0, 0, p, 8), -EINVAL);
}

/* checksum = crc32c: a partly written block's sum would be of bytes the write did not carry */
static void a_write_is_summed_only_over_the_4k_blocks_it_covers_whole(void **state)
{
	uint64_t first;
	uint32_t nr;

	(void)state;
	ublk_sums_span(0, 8192, &first, &nr);
	assert_int_equal(first, 0);
	assert_int_equal(nr, 2);
	ublk_sums_span(4096 * 5, 4096, &first, &nr);
	assert_int_equal(first, 5);
	assert_int_equal(nr, 1);
	/* 512 bytes into block 0 up to 512 into block 3: blocks 1 and 2 whole */
	ublk_sums_span(512, 3 * 4096, &first, &nr);
	assert_int_equal(first, 1);
	assert_int_equal(nr, 2);
	/* inside one block: none */
	ublk_sums_span(1024, 2048, &first, &nr);
	assert_int_equal(nr, 0);
	ublk_sums_span(4096 - 512, 1024, &first, &nr);
	assert_int_equal(nr, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stripe_pieces_follow_the_raid0_model_byte_for_byte),
		cmocka_unit_test(a_request_within_one_unit_is_one_piece),
		cmocka_unit_test(linear_requests_split_at_member_boundaries),
		cmocka_unit_test(mirror_writes_go_to_every_member_and_reads_to_one),
		cmocka_unit_test(a_request_past_the_end_is_refused),
		cmocka_unit_test(a_write_is_summed_only_over_the_4k_blocks_it_covers_whole),
	};

	return cmocka_run_group_tests_name("ublk map", tests, NULL, NULL);
}
