// SPDX-License-Identifier: MIT
/*
 * What a blk-mq device takes in one request without a split: the smaller
 * of max_sectors_kb and one 4 KiB page per segment, where the daemon's
 * scattered buffer pages make every page a segment.
 */
#include "files.h"
#include "testutil.h"

static void a_device_takes_the_smaller_of_its_size_and_segment_limits(void **state)
{
	(void)state;
	/* null_blk and most disks: 128 segments of a page, 1280 KiB */
	assert_int_equal(unsplit_bytes(1280, 128, 4096), 512 << 10);
	/* this host's virtio disk: 254 segments, 4 MiB */
	assert_int_equal(unsplit_bytes(4096, 254, 4096), 254 * 4096);
	assert_int_equal(unsplit_bytes(128, 128, 4096), 128 << 10);
}

static void an_unknown_limit_leaves_the_other(void **state)
{
	(void)state;
	assert_int_equal(unsplit_bytes(1280, 0, 4096), 1280 << 10);
	assert_int_equal(unsplit_bytes(0, 128, 4096), 512 << 10);
	assert_int_equal(unsplit_bytes(0, 0, 4096), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_device_takes_the_smaller_of_its_size_and_segment_limits),
		cmocka_unit_test(an_unknown_limit_leaves_the_other),
	};

	return cmocka_run_group_tests_name("files_limits", tests, NULL, NULL);
}
