// SPDX-License-Identifier: MIT
/* ublk_gather.c: a stripe request's units gathered per member, and back */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "iou_abi.h"
#include "ublk_gather.h"
#include "testutil.h"

#define UNIT 4096

static struct ublk_layout stripe3(void)
{
	struct device_config dc;
	struct ublk_layout l;

	memset(&dc, 0, sizeof(dc));
	dc.target = TARGET_STRIPE;
	dc.nr_backing = 3;
	dc.size = 3 << 20;
	dc.stripe_unit = UNIT;
	dc.logical_block_size = 512;
	ublk_layout_init(&l, &dc);
	return l;
}

static void each_member_with_several_units_becomes_one_staged_piece(void **state)
{
	struct ublk_layout l = stripe3();
	struct ublk_piece p[16], u[16];
	uint32_t staged;
	int n, m;

	(void)state;
	/* 7 units from unit 1: member 1 gets 3, members 2 and 0 get 2 each */
	n = ublk_map(&l, true, 0, UNIT, 7 * UNIT, p, 16);
	assert_int_equal(n, 7);
	m = ublk_gather_merge(p, n, u, &staged);
	assert_int_equal(m, 3);
	assert_int_equal(staged, 7 * UNIT);
	for (int i = 0; i < m; i++) {
		assert_true(p[i].staged);
		/* one contiguous range of its member */
		assert_int_equal(p[i].len, (p[i].member == 1 ? 3 : 2) * UNIT);
	}
	assert_int_equal(p[0].member, 0);
	assert_int_equal(p[0].off, UNIT);	/* units 3 and 6 of the stripe */
}

static void a_member_with_one_unit_is_written_straight_from_the_tag_buffer(void **state)
{
	struct ublk_layout l = stripe3();
	struct ublk_piece p[16], u[16];
	uint32_t staged;
	int n, m;

	(void)state;
	n = ublk_map(&l, false, 0, 0, 4 * UNIT, p, 16);	/* member 0 twice, 1 and 2 once */
	m = ublk_gather_merge(p, n, u, &staged);
	assert_int_equal(m, 3);
	assert_int_equal(staged, 2 * UNIT);
	for (int i = 0; i < m; i++)
		assert_int_equal(p[i].staged, p[i].member == 0);
}

static void gather_then_scatter_by_memcpy_is_the_identity_and_matches_the_layout(void **state)
{
	struct ublk_layout l = stripe3();
	struct ublk_piece p[16], u[16];
	char *buf = malloc(8 * UNIT), *stage = calloc(1, 8 * UNIT), *back = calloc(1, 8 * UNIT);
	uint32_t staged;
	int n;

	(void)state;
	tu_fill(buf, 8 * UNIT, 19);
	n = ublk_map(&l, true, 0, 0, 8 * UNIT, p, 16);
	ublk_gather_merge(p, n, u, &staged);
	assert_int_equal(ublk_gather_memcpy(u, n, buf, stage, true), 8 * UNIT);
	/* member 0's run in staging: units 0, 3, 6 of the request, back to back */
	for (int i = 0; i < 3; i++)
		if (p[i].member == 0)
			for (int k = 0; k < 3; k++)
				assert_memory_equal(stage + p[i].buf_off + k * UNIT,
						    buf + 3 * k * UNIT, UNIT);
	assert_int_equal(ublk_gather_memcpy(u, n, back, stage, false), 8 * UNIT);
	assert_memory_equal(back, buf, 8 * UNIT);
	free(buf);
	free(stage);
	free(back);
}

static void the_bpf_descriptors_pair_staging_with_the_units(void **state)
{
	struct ublk_layout l = stripe3();
	struct ublk_piece p[16], u[16];
	static char buf[8 * UNIT], stage[8 * UNIT];
	size_t meta_len = ublk_gather_meta_size(16);
	struct io_bpf_buf_desc *d = calloc(1, meta_len);
	struct ublk_shuffle sh;
	uint32_t staged;
	int n;

	(void)state;
	n = ublk_map(&l, true, 0, 0, 8 * UNIT, p, 16);
	ublk_gather_merge(p, n, u, &staged);
	assert_int_equal(ublk_gather_descs(u, n, buf, 0, stage, 0, d, meta_len, true, &sh), 0);
	assert_int_equal(sh.nr_pairs, 3);
	assert_int_equal(sh.expect, 8 * UNIT);
	assert_ptr_equal((void *)(uintptr_t)sh.desc_addr, d);
	for (int k = 0; k < 3; k++) {
		/* a write: destination staging (FIXED), source the units (REG_VEC) */
		assert_int_equal(d[2 * k].type, IO_BPF_BUF_FIXED);
		assert_int_equal(d[2 * k + 1].type, IO_BPF_BUF_REG_VEC);
		assert_int_equal(d[2 * k + 1].len, k < 2 ? 3 : 2);
	}
	assert_int_equal(ublk_gather_descs(u, n, buf, 0, stage, 0, d, meta_len, false, &sh), 0);
	assert_int_equal(d[0].type, IO_BPF_BUF_REG_VEC);
	assert_int_equal(d[1].type, IO_BPF_BUF_FIXED);
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(each_member_with_several_units_becomes_one_staged_piece),
		cmocka_unit_test(a_member_with_one_unit_is_written_straight_from_the_tag_buffer),
		cmocka_unit_test(gather_then_scatter_by_memcpy_is_the_identity_and_matches_the_layout),
		cmocka_unit_test(the_bpf_descriptors_pair_staging_with_the_units),
	};

	return cmocka_run_group_tests_name("ublk gather", tests, NULL, NULL);
}
