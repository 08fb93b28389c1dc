// SPDX-License-Identifier: MIT
/* devices in the status file: written after the pipelines, read back, printed */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "status.h"
#include "testutil.h"

static void devices_survive_a_write_and_a_read_beside_a_pipeline(void **state)
{
	char *dir = tu_mkdtemp("stdev"), *path = tu_path(dir, "status");
	struct status_entry pe = { .name = "p", .state = "running", .bytes_done = 5 };
	struct status_device dv[2] = {
		{ .name = "d0", .state = "degraded", .path = "/dev/ublkb0", .target = "mirror",
		  .engine = "uring", .data_path = "zero-copy", .size = 1 << 20, .reads = 3, .writes = 4, .errors = 0,
		  .in_flight = 2, .iops = 7, .rate_bps = 1 << 20, .members = 2, .degraded = 1,
		  .error = "failed member /dev/loop1" },
		{ .name = "d1", .state = "running", .path = "/dev/ublkb1", .target = "stripe",
		  .engine = "bpf", .bpf_ops = 9, .bpf_bytes = 65536, .members = 3,
		  .data_path = "copy", .driver_copied = 1 << 20 },
	};
	struct status_report w = { .pid = getpid(), .entries = &pe, .nr = 1, .devices = dv,
				   .nr_devices = 2 }, r;

	(void)state;
	assert_int_equal(status_write(path, &w), 0);
	assert_int_equal(status_read(path, &r), 0);
	assert_int_equal(r.nr, 1);
	assert_int_equal(r.entries[0].bytes_done, 5);
	assert_int_equal(r.nr_devices, 2);
	assert_string_equal(r.devices[0].state, "degraded");
	assert_string_equal(r.devices[0].path, "/dev/ublkb0");
	assert_int_equal(r.devices[0].degraded, 1);
	assert_int_equal(r.devices[0].in_flight, 2);
	assert_string_equal(r.devices[0].error, "failed member /dev/loop1");
	assert_string_equal(r.devices[1].engine, "bpf");
	assert_int_equal(r.devices[1].bpf_bytes, 65536);
	assert_string_equal(r.devices[0].data_path, "zero-copy");
	assert_string_equal(r.devices[1].data_path, "copy");
	assert_int_equal(r.devices[1].driver_copied, 1 << 20);
	/* the pipeline's keys stay the pipeline's */
	assert_string_equal(r.entries[0].state, "running");
	status_report_free(&r);
	unlink(path);
	tu_rmrf(dir);
	free(path);
	free(dir);
}

/* this test process is no iou-offloadd: the table shows its devices as gone */
static void the_status_table_lists_each_device_and_a_dead_daemons_as_gone(void **state)
{
	struct status_device dv = { .name = "d0", .state = "running", .path = "/dev/ublkb0",
				    .target = "linear", .engine = "uring", .data_path = "zero-copy",
				    .size = 1 << 30,
				    .iops = 1234, .rate_bps = 5 << 20, .members = 2 };
	struct status_report r = { .pid = getpid(), .devices = &dv, .nr_devices = 1 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	status_print(f, &r, r.started);
	fclose(f);
	assert_non_null(strstr(buf, "DEVICE"));
	assert_non_null(strstr(buf, "/dev/ublkb0"));
	assert_non_null(strstr(buf, "zero-copy"));
	assert_non_null(strstr(buf, "gone"));
	assert_null(strstr(buf, "1234"));	/* no rate for a daemon that is not there */
	assert_null(strstr(buf, "no pipelines configured"));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(devices_survive_a_write_and_a_read_beside_a_pipeline),
		cmocka_unit_test(the_status_table_lists_each_device_and_a_dead_daemons_as_gone),
	};

	return cmocka_run_group_tests_name("status devices", tests, NULL, NULL);
}
