// SPDX-License-Identifier: MIT
/* ublk_recover.c: what lets a restarted daemon find and trust its device */
#include <stdio.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ublk_recover.h"
#include "testutil.h"

static struct device_config dev(void)
{
	static char a[] = "/srv/a", b[] = "/srv/b";
	struct device_config dc;

	memset(&dc, 0, sizeof(dc));
	snprintf(dc.name, sizeof(dc.name), "d0");
	dc.target = TARGET_STRIPE;
	dc.nr_backing = 2;
	dc.backing[0] = a;
	dc.backing[1] = b;
	dc.size = 1 << 20;
	dc.nr_queues = 1;
	dc.queue_depth = 64;
	dc.max_io_size = 512 << 10;
	dc.logical_block_size = 512;
	dc.stripe_unit = 65536;
	return dc;
}

static void the_fingerprint_follows_the_layout_and_the_name(void **state)
{
	struct device_config a = dev(), b = dev();
	uint64_t fp = ublk_fingerprint(&a);

	(void)state;
	assert_true(fp == ublk_fingerprint(&b));
	b.stripe_unit = 4096;
	assert_false(fp == ublk_fingerprint(&b));
	b = dev();
	b.size += 4096;
	assert_false(fp == ublk_fingerprint(&b));
	b = dev();
	snprintf(b.name, sizeof(b.name), "d1");
	assert_false(fp == ublk_fingerprint(&b));
	/* the marker that says the device is this daemon's */
	assert_true((fp >> 48) == (ublk_fingerprint(&b) >> 48));
}

static void a_saved_id_is_found_again_and_forgotten(void **state)
{
	char *dir = tu_mkdtemp("ublkid");
	uint32_t id = 0;

	(void)state;
	assert_int_equal(ublk_id_load(dir, "d0", &id), -ENOENT);
	assert_int_equal(ublk_id_save(dir, "d0", 7), 0);
	assert_int_equal(ublk_id_load(dir, "d0", &id), 0);
	assert_int_equal(id, 7);
	assert_int_equal(ublk_id_load(dir, "d1", &id), -ENOENT);
	ublk_id_forget(dir, "d0");
	assert_int_equal(ublk_id_load(dir, "d0", &id), -ENOENT);
	tu_rmrf(dir);
	free(dir);
}

/* a take-over after an upgrade reads the id a daemon before the kv format wrote */
static void an_id_in_the_old_one_line_format_is_still_read(void **state)
{
	char *dir = tu_mkdtemp("ublkid"), *path = tu_path(dir, "device-d0.ublk");
	uint32_t id = 0;

	(void)state;
	assert_int_equal(tu_write_file(path, "dev_id=42\n", 10), 0);
	assert_int_equal(ublk_id_load(dir, "d0", &id), 0);
	assert_int_equal(id, 42);
	/* a torn or foreign file is not an id */
	assert_int_equal(tu_write_file(path, "iou-offload-ublk 1\ndev_id=x\nend\n", 32), 0);
	assert_int_equal(ublk_id_load(dir, "d0", &id), -EINVAL);
	tu_rmrf(dir);
	free(path);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_fingerprint_follows_the_layout_and_the_name),
		cmocka_unit_test(a_saved_id_is_found_again_and_forgotten),
		cmocka_unit_test(an_id_in_the_old_one_line_format_is_still_read),
	};

	return cmocka_run_group_tests_name("ublk recover", tests, NULL, NULL);
}
