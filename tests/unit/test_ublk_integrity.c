// SPDX-License-Identifier: MIT
/*
 * integrity = crc32c's pure parts: the dirty-region map's rules
 * (ublk_dirty.c) and the metadata file's layout and header (ublk_meta.c).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ublk_dirty.h"
#include "ublk_meta.h"
#include "ublk_sums.h"
#include "testutil.h"

#define MiB	(1ull << 20)
#define QUIET	UBLK_CLEAN_DELAY_MS

static void a_first_write_into_a_clean_region_needs_a_durable_mark(void **state)
{
	struct ublk_dirty m;

	(void)state;
	assert_int_equal(ublk_dirty_init(&m, 8 * MiB), 0);
	assert_int_equal(m.nr, 8);
	assert_true(ublk_dirty_start(&m, 0, 4096, 0));
	/* the same region again: already dirty, no mark to wait for */
	assert_false(ublk_dirty_start(&m, 8192, 4096, 0));
	/* a write across a boundary marks both regions, one of them new */
	assert_true(ublk_dirty_start(&m, MiB - 4096, 8192, 0));
	assert_int_equal(m.map[0], 1);
	assert_int_equal(m.map[1], 1);
	assert_int_equal(m.map[2], 0);
	assert_int_equal(ublk_dirty_count(&m), 2);
	assert_true(ublk_dirty_busy(&m, 0, 4096));
	assert_false(ublk_dirty_busy(&m, 2 * MiB, 4096));
	ublk_dirty_free(&m);
}

static void a_flush_clears_only_regions_quiet_and_complete_before_it_began(void **state)
{
	struct ublk_dirty m;
	uint32_t gen;

	(void)state;
	assert_int_equal(ublk_dirty_init(&m, 4 * MiB), 0);
	/* region 0: written and completed long before the flush */
	ublk_dirty_start(&m, 0, 4096, 0);
	ublk_dirty_end(&m, 0, 4096, true);
	/* region 1: completed, but written just before the flush (hot) */
	ublk_dirty_start(&m, MiB, 4096, QUIET);
	ublk_dirty_end(&m, MiB, 4096, true);
	/* region 2: still in flight when the flush begins */
	ublk_dirty_start(&m, 2 * MiB, 4096, 0);
	/* region 3: completed before the flush, written again while it runs */
	ublk_dirty_start(&m, 3 * MiB, 4096, 0);
	ublk_dirty_end(&m, 3 * MiB, 4096, true);
	gen = ublk_dirty_flush_begin(&m, QUIET + 1);
	ublk_dirty_end(&m, 2 * MiB, 4096, true);
	ublk_dirty_start(&m, 3 * MiB, 4096, QUIET + 2);
	ublk_dirty_end(&m, 3 * MiB, 4096, true);
	assert_int_equal(ublk_dirty_flush_end(&m, gen), 1);
	assert_int_equal(m.map[0], 0);
	assert_int_equal(m.map[1], 1);
	assert_int_equal(m.map[2], 1);	/* its write may not be under the flush's fdatasync */
	assert_int_equal(m.map[3], 1);
	/* a later flush, once they are quiet, clears them all */
	gen = ublk_dirty_flush_begin(&m, 3 * QUIET);
	assert_int_equal(ublk_dirty_flush_end(&m, gen), 3);
	assert_int_equal(ublk_dirty_count(&m), 0);
	ublk_dirty_free(&m);
}

static void only_the_last_flush_begun_clears_what_both_saw(void **state)
{
	struct ublk_dirty m;
	uint32_t a, b;

	(void)state;
	assert_int_equal(ublk_dirty_init(&m, MiB), 0);
	ublk_dirty_start(&m, 0, 4096, 0);
	ublk_dirty_end(&m, 0, 4096, true);
	a = ublk_dirty_flush_begin(&m, QUIET);
	b = ublk_dirty_flush_begin(&m, QUIET);
	assert_int_not_equal(a, b);
	assert_int_equal(ublk_dirty_flush_end(&m, a), 0);
	assert_int_equal(ublk_dirty_flush_end(&m, b), 1);
	ublk_dirty_free(&m);
}

static void a_failed_write_keeps_its_region_dirty_for_the_next_start(void **state)
{
	struct ublk_dirty m;
	uint32_t gen;

	(void)state;
	assert_int_equal(ublk_dirty_init(&m, 2 * MiB), 0);
	ublk_dirty_start(&m, MiB, 4096, 0);
	ublk_dirty_end(&m, MiB, 4096, false);
	/* a later good write into it does not make it clearable */
	ublk_dirty_start(&m, MiB, 4096, 0);
	ublk_dirty_end(&m, MiB, 4096, true);
	gen = ublk_dirty_flush_begin(&m, 10 * QUIET);
	assert_int_equal(ublk_dirty_flush_end(&m, gen), 0);
	assert_int_equal(m.map[1], 1);
	ublk_dirty_free(&m);
}

static void the_metadata_file_is_a_header_a_byte_per_region_and_4_bytes_per_block(void **state)
{
	struct ublk_meta_layout l;

	(void)state;
	ublk_meta_layout(1024 * MiB, &l);
	assert_int_equal(l.nr_blocks, 262144);
	assert_int_equal(l.nr_regions, 1024);
	assert_int_equal(l.map_off, 4096);
	assert_int_equal(l.map_len, 4096);
	assert_int_equal(l.sums_off, 8192);
	assert_int_equal(l.sums_len, 1024 * 1024);
	assert_int_equal(ublk_meta_size(1024 * MiB), 8192 + 1024 * 1024);
	/* a last region in part, the sums rounded up to a page */
	ublk_meta_layout(MiB + 4096, &l);
	assert_int_equal(l.nr_regions, 2);
	assert_int_equal(l.nr_blocks, 257);
	assert_int_equal(l.sums_len, 4096);
	assert_int_equal(l.size, 3 * 4096);
}

static void the_header_reads_back_and_a_foreign_one_is_refused(void **state)
{
	struct ublk_meta_head h = { .size = 32 * MiB, .fingerprint = 0x0123456789abcdefull,
				    .block_size = UBLK_SUM_BLOCK, .region_size = UBLK_REGION_SIZE };
	struct ublk_meta_head got;
	char page[UBLK_META_PAGE], why[160];

	(void)state;
	ublk_meta_head_format(&h, page);
	assert_int_equal(ublk_meta_head_parse(page, sizeof(page), &got, why, sizeof(why)), 0);
	assert_int_equal(got.size, h.size);
	assert_true(got.fingerprint == h.fingerprint);
	assert_int_equal(got.block_size, 4096);
	assert_int_equal(got.region_size, UBLK_REGION_SIZE);
	/* zeros (a file cut short, a new one): not ours */
	memset(page, 0, sizeof(page));
	assert_int_equal(ublk_meta_head_parse(page, sizeof(page), &got, why, sizeof(why)),
			 -EINVAL);
	/* another region size: its map means other ranges */
	h.region_size = 2 * UBLK_REGION_SIZE;
	ublk_meta_head_format(&h, page);
	assert_int_equal(ublk_meta_head_parse(page, sizeof(page), &got, why, sizeof(why)),
			 -EINVAL);
	assert_non_null(strstr(why, "another format"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_first_write_into_a_clean_region_needs_a_durable_mark),
		cmocka_unit_test(a_flush_clears_only_regions_quiet_and_complete_before_it_began),
		cmocka_unit_test(only_the_last_flush_begun_clears_what_both_saw),
		cmocka_unit_test(a_failed_write_keeps_its_region_dirty_for_the_next_start),
		cmocka_unit_test(the_metadata_file_is_a_header_a_byte_per_region_and_4_bytes_per_block),
		cmocka_unit_test(the_header_reads_back_and_a_foreign_one_is_refused),
	};

	return cmocka_run_group_tests_name("ublk integrity", tests, NULL, NULL);
}
