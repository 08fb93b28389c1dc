// SPDX-License-Identifier: MIT
/* [device NAME] sections: keys, the target's rules, member sizes, shared backing */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "testutil.h"

static char *dir;

struct parsed {
	struct daemon_config cfg;
	struct config_errors errs;
	int ret;
};

/* @D in @text stands for a fresh directory with files a, b (1 MiB), small (8K) */
static void parse(struct parsed *p, const char *text)
{
	char buf[8192];

	tu_subst_dir(buf, sizeof(buf), text, dir);
	memset(p, 0, sizeof(*p));
	p->ret = config_parse_buffer("test.conf", buf, strlen(buf), &p->cfg, &p->errs);
}

static void done(struct parsed *p)
{
	config_free(&p->cfg);
	config_errors_free(&p->errs);
}

/* an error starting with @prefix and containing @needle (@D: the directory) */
static void expect_error(const char *text, const char *prefix, const char *needle)
{
	struct parsed p;
	char want[4200];
	bool found = false;

	parse(&p, text);
	snprintf(want, sizeof(want), "%s", needle);
	if (!strncmp(needle, "@D", 2))
		snprintf(want, sizeof(want), "%s%s", dir, needle + 2);
	for (int i = 0; i < p.errs.nr; i++)
		found |= !strncmp(p.errs.msgs[i], prefix, strlen(prefix)) &&
			 strstr(p.errs.msgs[i], want);
	if (p.ret != -EINVAL || !found) {
		print_message("expected: %s ... %s\n", prefix, want);
		for (int i = 0; i < p.errs.nr; i++)
			print_message("  got: %s\n", p.errs.msgs[i]);
	}
	assert_int_equal(p.ret, -EINVAL);
	assert_true(found);
	done(&p);
}

static int setup(void **state)
{
	char *buf = calloc(1, 1 << 20), *path;

	(void)state;
	dir = tu_mkdtemp("devcfg");
	for (int i = 0; i < 3; i++) {
		static const char *const names[] = { "a", "b", "small" };

		path = tu_path(dir, names[i]);
		if (tu_write_file(path, buf, i == 2 ? 8192 : 1 << 20))
			return -1;
		free(path);
	}
	free(buf);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tu_rmrf(dir);
	free(dir);
	return 0;
}

static void a_stripe_device_gets_its_defaults_and_its_size_from_the_members(void **state)
{
	struct parsed p;
	const struct device_config *dc;

	(void)state;
	parse(&p, "[device d0]\ntarget = stripe\nbacking = @D/a\nbacking = @D/b\n");
	assert_int_equal(p.ret, 0);
	assert_int_equal(p.cfg.nr_devices, 1);
	dc = config_find_device(&p.cfg, "d0");
	assert_non_null(dc);
	assert_int_equal(dc->target, TARGET_STRIPE);
	assert_int_equal(dc->nr_backing, 2);
	assert_int_equal(dc->nr_queues, 1);
	assert_int_equal(dc->queue_depth, 64);
	assert_int_equal(dc->max_io_size, 512 << 10);
	assert_int_equal(dc->logical_block_size, 512);
	assert_int_equal(dc->stripe_unit, 64 << 10);
	assert_int_equal(dc->engine, ENGINE_AUTO);
	assert_int_equal(dc->stripe_io, STRIPE_IO_PER_UNIT);
	assert_int_equal(dc->size, 2 << 20);
	assert_int_equal(device_member_share(dc, 1), 1 << 20);
	done(&p);
}

static void a_linear_device_is_the_sum_of_its_members(void **state)
{
	struct parsed p;

	(void)state;
	parse(&p, "[device l]\ntarget = linear\nbacking = @D/a\nbacking = @D/small\n");
	assert_int_equal(p.ret, 0);
	assert_int_equal(p.cfg.devices[0].size, (1 << 20) + 8192);
	assert_int_equal(device_member_share(&p.cfg.devices[0], 1), 8192);
	done(&p);
}

static void a_mirror_device_is_as_large_as_its_smallest_member(void **state)
{
	struct parsed p;

	(void)state;
	parse(&p, "[device m]\ntarget = mirror\nbacking = @D/a\nbacking = @D/small\n"
	      "read_policy = primary\n");
	assert_int_equal(p.ret, 0);
	assert_int_equal(p.cfg.devices[0].size, 8192);
	assert_int_equal(p.cfg.devices[0].read_policy, READ_PRIMARY);
	done(&p);
}

static void a_device_without_backing_is_rejected(void **state)
{
	(void)state;
	expect_error("[device d]\ntarget = linear\n", "test.conf:1: [device d]: ",
		     "missing required key 'backing'");
}

static void a_device_without_target_is_rejected(void **state)
{
	(void)state;
	expect_error("[device d]\nbacking = @D/a\n", "test.conf:1: [device d]: ",
		     "missing required key 'target'");
}

static void a_backing_that_does_not_exist_is_rejected(void **state)
{
	(void)state;
	expect_error("[device d]\ntarget = linear\nbacking = @D/nope\n",
		     "test.conf:3: [device d]: backing = ", "does not exist");
}

static void a_stripe_unit_that_is_not_a_power_of_two_is_rejected(void **state)
{
	(void)state;
	expect_error("[device d]\ntarget = stripe\nbacking = @D/a\nbacking = @D/b\n"
		     "stripe_unit = 96K\n", "test.conf:5: [device d]: ",
		     "stripe_unit = '96K': expected a power of two");
}

static void a_stripe_unit_below_the_logical_block_size_is_rejected(void **state)
{
	(void)state;
	expect_error("[device d]\ntarget = stripe\nbacking = @D/a\nbacking = @D/b\n"
		     "stripe_unit = 1K\nlogical_block_size = 4096\n", "test.conf:5: [device d]: ",
		     "stripe_unit = 1024 is not a multiple of logical_block_size = 4096");
}

static void a_member_too_small_for_the_size_is_rejected(void **state)
{
	(void)state;
	expect_error("[device d]\ntarget = mirror\nbacking = @D/a\nbacking = @D/small\n"
		     "size = 64K\n", "test.conf:4: [device d]: ",
		     "8192 bytes, too small: the device needs 65536 bytes of it");
}

static void a_stripe_member_smaller_than_its_share_is_rejected(void **state)
{
	(void)state;
	expect_error("[device d]\ntarget = stripe\nbacking = @D/a\nbacking = @D/small\n"
		     "stripe_unit = 4K\nsize = 64K\n", "test.conf:4: [device d]: ",
		     "8192 bytes, too small: the device needs 32768 bytes of it");
}

static void a_linear_size_beyond_the_members_is_rejected(void **state)
{
	(void)state;
	expect_error("[device d]\ntarget = linear\nbacking = @D/small\nsize = 1M\n",
		     "test.conf:4: [device d]: ",
		     "size = 1048576: the backing files hold only 8192 bytes");
}

static void a_backing_shared_with_another_device_is_rejected(void **state)
{
	(void)state;
	expect_error("[device d]\ntarget = linear\nbacking = @D/a\n"
		     "[device e]\ntarget = linear\nbacking = @D/./a\n",
		     "test.conf:6: [device e]: ", "the same file as device d's backing");
}

static void a_backing_that_is_a_pipelines_destination_is_rejected(void **state)
{
	(void)state;
	expect_error("[pipeline p]\ntransform = copy\nsource = @D/b\ndestination = @D/a\n"
		     "[device d]\ntarget = linear\nbacking = @D/a\n",
		     "test.conf:7: [device d]: ", "the same file as pipeline p's destination");
}

static void a_backing_listed_twice_is_rejected(void **state)
{
	(void)state;
	expect_error("[device d]\ntarget = mirror\nbacking = @D/a\nbacking = @D/a\n",
		     "test.conf:4: [device d]: ", "is listed twice (first at line 3)");
}

static void stripe_and_mirror_need_two_members(void **state)
{
	(void)state;
	expect_error("[device d]\ntarget = stripe\nbacking = @D/a\n", "test.conf:1: [device d]: ",
		     "target = stripe needs at least 2 backing files, got 1");
	expect_error("[device d]\ntarget = mirror\nbacking = @D/a\n", "test.conf:1: [device d]: ",
		     "target = mirror needs at least 2 backing files, got 1");
}

static void keys_of_another_target_are_rejected(void **state)
{
	(void)state;
	expect_error("[device d]\ntarget = linear\nbacking = @D/a\nread_policy = primary\n",
		     "test.conf:4: [device d]: ",
		     "key 'read_policy' is only valid with target = mirror");
	expect_error("[device d]\ntarget = mirror\nbacking = @D/a\nbacking = @D/b\n"
		     "stripe_unit = 4K\n", "test.conf:5: [device d]: ",
		     "key 'stripe_unit' is only valid with target = stripe");
	expect_error("[device d]\ntarget = linear\nbacking = @D/a\nstripe_io = gather\n",
		     "test.conf:4: [device d]: ",
		     "key 'stripe_io' is only valid with target = stripe");
}

static void bad_values_name_the_key_and_what_was_expected(void **state)
{
	(void)state;
	expect_error("[device d]\ntarget = raid5\n", "test.conf:2: [device d]: ",
		     "target = 'raid5': expected linear, stripe or mirror");
	expect_error("[device d]\nlogical_block_size = 3000\n", "test.conf:2: [device d]: ",
		     "logical_block_size = '3000': expected 512, 1024, 2048 or 4096");
	expect_error("[device d]\nmax_io_size = 6000\n", "test.conf:2: [device d]: ",
		     "max_io_size = '6000': expected a multiple of 4K");
	expect_error("[device d]\nnr_queues = 0\n", "test.conf:2: [device d]: ",
		     "nr_queues = '0': expected an integer from 1 to 64");
	expect_error("[device d]\nengine = loop\n", "test.conf:2: [device d]: ",
		     "engine = loop: not available for devices");
	expect_error("[device d]\nstripe_io = bulk\n", "test.conf:2: [device d]: ",
		     "stripe_io = 'bulk': expected per-unit or gather");
	expect_error("[device d]\nbacking = relative\n", "test.conf:2: [device d]: ",
		     "backing = 'relative': expected an absolute path");
}

static void data_path_defaults_to_auto_and_takes_copy_and_zero_copy(void **state)
{
	struct parsed p;

	(void)state;
	parse(&p, "[device a]\ntarget = linear\nbacking = @D/a\n"
	      "[device c]\ntarget = linear\nbacking = @D/b\ndata_path = copy\n"
	      "[device z]\ntarget = linear\nbacking = @D/small\ndata_path = zero-copy\n");
	assert_int_equal(p.ret, 0);
	assert_int_equal(p.cfg.devices[0].data_path, DATA_PATH_AUTO);
	assert_int_equal(p.cfg.devices[1].data_path, DATA_PATH_COPY);
	assert_int_equal(p.cfg.devices[2].data_path, DATA_PATH_ZERO_COPY);
	assert_string_equal(data_path_to_string(DATA_PATH_ZERO_COPY), "zero-copy");
	done(&p);
	expect_error("[device d]\ntarget = linear\nbacking = @D/a\ndata_path = nocopy\n",
		     "test.conf:4: [device d]: ",
		     "data_path = 'nocopy': expected auto, copy or zero-copy");
}

static void zero_copy_is_refused_with_a_gather_by_memcpy_which_cannot_reach_the_pages(
	void **state)
{
	struct parsed p;

	(void)state;
	expect_error("[device d]\ntarget = stripe\nbacking = @D/a\nbacking = @D/b\n"
		     "stripe_io = gather\nengine = uring\ndata_path = zero-copy\n",
		     "test.conf:7: [device d]: ",
		     "data_path = zero-copy: not with stripe_io = gather on engine = uring");
	parse(&p, "[device d]\ntarget = stripe\nbacking = @D/a\nbacking = @D/b\n"
	      "stripe_io = gather\nengine = bpf\ndata_path = zero-copy\n");
	assert_int_equal(p.ret, 0);
	done(&p);
}

static void integrity_on_a_device_needs_the_requests_pages_and_iouring_op_bpf(void **state)
{
	struct parsed p;

	(void)state;
	parse(&p, "[device d]\ntarget = linear\nbacking = @D/a\nintegrity = crc32c\n");
	assert_int_equal(p.ret, 0);
	assert_int_equal(p.cfg.devices[0].integrity, CHECKSUM_CRC32C);
	/* a sum per 4 KiB: no request covers part of one */
	assert_int_equal(p.cfg.devices[0].logical_block_size, 4096);
	done(&p);
	/* the copying path: ISA-L on the tag buffers, any engine */
	parse(&p, "[device d]\ntarget = linear\nbacking = @D/a\ndata_path = copy\n"
	      "engine = uring\nintegrity = crc32c\n");
	assert_int_equal(p.ret, 0);
	done(&p);
	expect_error("[device d]\ntarget = linear\nbacking = @D/a\nengine = uring\n"
		     "integrity = crc32c\n", "test.conf:5: [device d]: ",
		     "integrity = crc32c: on zero copy summed by IORING_OP_BPF, which engine = "
		     "uring does not use (expected engine = auto or bpf, or data_path = copy");
	expect_error("[device d]\ntarget = stripe\nbacking = @D/a\nbacking = @D/b\n"
		     "stripe_io = gather\nintegrity = crc32c\n", "test.conf:6: [device d]: ",
		     "integrity = crc32c: not with stripe_io = gather (the two are not combined)");
	expect_error("[device d]\ntarget = mirror\nbacking = @D/a\nbacking = @D/b\n"
		     "logical_block_size = 512\nintegrity = crc32c\n", "test.conf:5: [device d]: ",
		     "logical_block_size = 512: integrity = crc32c sums 4 KiB blocks (expected 4096");
	/* zero copy: eight queues of 64 x 1M need 131072 of the devices' 114688 sums */
	expect_error("[device d]\ntarget = linear\nbacking = @D/a\nintegrity = crc32c\n"
		     "queue_depth = 64\nmax_io_size = 1M\nnr_queues = 8\n", "test.conf:7: [device d]: ",
		     "integrity = crc32c: nr_queues x queue_depth x max_io_size / 4K = 131072 sums in "
		     "flight (131072 with the integrity devices before it), where the BPF program "
		     "holds 114688 for devices");
	parse(&p, "[device d]\ntarget = linear\nbacking = @D/a\nintegrity = crc32c\n"
	      "queue_depth = 64\nmax_io_size = 1M\nnr_queues = 7\n");
	assert_int_equal(p.ret, 0);
	done(&p);
	/* ...and all devices together: the program is one per daemon */
	expect_error("[device d]\ntarget = linear\nbacking = @D/a\nintegrity = crc32c\n"
		     "queue_depth = 64\nmax_io_size = 1M\nnr_queues = 4\n[device e]\n"
		     "target = linear\nbacking = @D/b\nintegrity = crc32c\nqueue_depth = 64\n"
		     "max_io_size = 1M\nnr_queues = 4\n",
		     "test.conf:14: [device e]: ", "integrity = crc32c: nr_queues x queue_depth x "
		     "max_io_size / 4K = 65536 sums in flight (131072 with the integrity devices "
		     "before it), where the BPF program holds 114688 for devices");
	/* the pipelines' key, named for what a device takes instead */
	expect_error("[device d]\ntarget = linear\nbacking = @D/a\nchecksum = crc32c\n",
		     "test.conf:4: [device d]: ", "key 'checksum' is not valid in [device NAME] "
		     "sections (a device's sums: integrity = crc32c)");
}

static void scrub_rate_is_a_mirrors_and_a_rate_in_bytes(void **state)
{
	struct parsed p;

	(void)state;
	parse(&p, "[device d]\ntarget = mirror\nbacking = @D/a\nbacking = @D/b\n");
	assert_int_equal(p.ret, 0);
	assert_true(p.cfg.devices[0].scrub_rate == 100ull << 20);	/* the default */
	done(&p);
	parse(&p, "[device d]\ntarget = mirror\nbacking = @D/a\nbacking = @D/b\n"
	      "scrub_rate = 4M\n");
	assert_int_equal(p.ret, 0);
	assert_true(p.cfg.devices[0].scrub_rate == 4ull << 20);
	done(&p);
	expect_error("[device d]\ntarget = linear\nbacking = @D/a\nscrub_rate = 4M\n",
		     "test.conf:4: [device d]: ", "key 'scrub_rate' is only valid with target = "
		     "mirror");
	expect_error("[device d]\ntarget = mirror\nbacking = @D/a\nbacking = @D/b\n"
		     "scrub_rate = fast\n", "test.conf:5: ", "scrub_rate");
}

static void keys_are_checked_against_their_section(void **state)
{
	(void)state;
	expect_error("[device d]\ntarget = linear\nbacking = @D/a\nblock_size = 4K\n",
		     "test.conf:4: [device d]: ",
		     "key 'block_size' is not valid in [device NAME] sections");
	expect_error("[daemon]\nbacking = @D/a\n", "test.conf:2: [daemon]: ",
		     "key 'backing' is only valid in [device NAME] sections");
	expect_error("[pipeline p]\nnr_queues = 2\n", "test.conf:2: [pipeline p]: ",
		     "key 'nr_queues' is only valid in [device NAME] sections");
}

static void device_names_are_checked_and_unique(void **state)
{
	(void)state;
	expect_error("[device -x]\n", "test.conf:1: ", "invalid device name '-x'");
	expect_error("[device d]\ntarget = linear\nbacking = @D/a\n[device d]\n",
		     "test.conf:4: ", "duplicate section [device d] (first at line 1)");
}

/* reload compares every key a [device] takes, by the key table: a change to any is seen */
static void every_device_key_is_compared_by_reload(void **state)
{
	static const char *const stripe = "[device d]\ntarget = stripe\nbacking = @D/a\n"
					  "backing = @D/b\n";
	static const char *const mirror = "[device d]\ntarget = mirror\nbacking = @D/a\n"
					  "backing = @D/b\n";
	static const struct { const char *base, *extra; } change[] = {
		{ stripe, "engine = uring\n" }, { stripe, "queue_depth = 32\n" },
		{ stripe, "stripe_unit = 256K\n" }, { stripe, "integrity = crc32c\n" },
		{ stripe, "nr_queues = 2\n" }, { stripe, "max_io_size = 256K\n" },
		{ stripe, "logical_block_size = 4096\n" }, { stripe, "size = 1M\n" },
		{ stripe, "stripe_io = gather\n" }, { stripe, "data_path = copy\n" },
		{ mirror, "read_policy = primary\n" }, { mirror, "scrub_rate = 4M\n" },
		{ "[device d]\ntarget = linear\nbacking = @D/a\n", "backing = @D/b\n" },
	};
	struct parsed ab, ba;
	char text[512];

	(void)state;
	for (size_t i = 0; i < sizeof(change) / sizeof(change[0]); i++) {
		struct parsed a, b;

		parse(&a, change[i].base);
		snprintf(text, sizeof(text), "%s%s", change[i].base, change[i].extra);
		parse(&b, text);
		if (a.ret || b.ret)
			fail_msg("cannot parse (%d, %d): %s", a.ret, b.ret, change[i].extra);
		if (device_config_same(&a.cfg.devices[0], &b.cfg.devices[0]))
			fail_msg("reload does not see: %s", change[i].extra);
		assert_true(device_config_same(&a.cfg.devices[0], &a.cfg.devices[0]));
		done(&a);
		done(&b);
	}
	/* the same members in another order: another device */
	parse(&ab, stripe);
	parse(&ba, "[device d]\ntarget = stripe\nbacking = @D/b\nbacking = @D/a\n");
	assert_int_equal(ab.ret, 0);
	assert_int_equal(ba.ret, 0);
	assert_false(device_config_same(&ab.cfg.devices[0], &ba.cfg.devices[0]));
	done(&ab);
	done(&ba);
}

static void a_config_change_is_seen_by_device_config_same(void **state)
{
	struct parsed a, b, c;
	struct device_config copy;

	(void)state;
	parse(&a, "[device d]\ntarget = mirror\nbacking = @D/a\nbacking = @D/b\n");
	parse(&b, "[device d]\ntarget = mirror\nbacking = @D/a\nbacking = @D/b\n"
	      "read_policy = primary\n");
	parse(&c, "[device d]\ntarget = mirror\nbacking = @D/a\nbacking = @D/b\n"
	      "data_path = copy\n");
	assert_int_equal(a.ret, 0);
	assert_int_equal(b.ret, 0);
	assert_int_equal(device_config_dup(&a.cfg.devices[0], &copy), 0);
	assert_true(device_config_same(&copy, &a.cfg.devices[0]));
	assert_false(device_config_same(&copy, &b.cfg.devices[0]));
	assert_int_equal(c.ret, 0);
	assert_false(device_config_same(&copy, &c.cfg.devices[0]));
	device_config_free(&copy);
	done(&a);
	done(&b);
	done(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_stripe_device_gets_its_defaults_and_its_size_from_the_members),
		cmocka_unit_test(a_linear_device_is_the_sum_of_its_members),
		cmocka_unit_test(a_mirror_device_is_as_large_as_its_smallest_member),
		cmocka_unit_test(a_device_without_backing_is_rejected),
		cmocka_unit_test(a_device_without_target_is_rejected),
		cmocka_unit_test(a_backing_that_does_not_exist_is_rejected),
		cmocka_unit_test(a_stripe_unit_that_is_not_a_power_of_two_is_rejected),
		cmocka_unit_test(a_stripe_unit_below_the_logical_block_size_is_rejected),
		cmocka_unit_test(a_member_too_small_for_the_size_is_rejected),
		cmocka_unit_test(a_stripe_member_smaller_than_its_share_is_rejected),
		cmocka_unit_test(a_linear_size_beyond_the_members_is_rejected),
		cmocka_unit_test(a_backing_shared_with_another_device_is_rejected),
		cmocka_unit_test(a_backing_that_is_a_pipelines_destination_is_rejected),
		cmocka_unit_test(a_backing_listed_twice_is_rejected),
		cmocka_unit_test(stripe_and_mirror_need_two_members),
		cmocka_unit_test(keys_of_another_target_are_rejected),
		cmocka_unit_test(bad_values_name_the_key_and_what_was_expected),
		cmocka_unit_test(data_path_defaults_to_auto_and_takes_copy_and_zero_copy),
		cmocka_unit_test(zero_copy_is_refused_with_a_gather_by_memcpy_which_cannot_reach_the_pages),
		cmocka_unit_test(integrity_on_a_device_needs_the_requests_pages_and_iouring_op_bpf),
		cmocka_unit_test(scrub_rate_is_a_mirrors_and_a_rate_in_bytes),
		cmocka_unit_test(keys_are_checked_against_their_section),
		cmocka_unit_test(device_names_are_checked_and_unique),
		cmocka_unit_test(every_device_key_is_compared_by_reload),
		cmocka_unit_test(a_config_change_is_seen_by_device_config_same),
	};

	return cmocka_run_group_tests_name("device config", tests, setup, teardown);
}
