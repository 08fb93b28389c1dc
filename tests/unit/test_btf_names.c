// SPDX-License-Identifier: MIT
/*
 * btf_find_strings(): the engine probe's look into the kernel's BTF, on
 * made-up BTF files (names across its 64 KiB reads, suffixes that must not
 * match, a bad header) and on this machine's own /sys/kernel/btf/vmlinux
 * (reading it loads nothing).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "btf_names.h"
#include "testutil.h"

/* a BTF file: header, no types, the strings "\0" + @names, NUL-separated, after @pad bytes */
static char *write_btf(const char *dir, size_t pad, const char *const *names, int n)
{
	struct {
		uint16_t magic;
		uint8_t version, flags;
		uint32_t hdr_len, type_off, type_len, str_off, str_len;
	} h = { .magic = 0xeb9f, .version = 1, .hdr_len = sizeof(h) };
	size_t len = sizeof(h) + 1 + pad + 1;
	char *buf, *p, *path = tu_path(dir, "btf");

	for (int i = 0; i < n; i++)
		len += strlen(names[i]) + 1;
	buf = calloc(1, len);
	assert_non_null(buf);
	p = buf + sizeof(h) + 1;
	memset(p, 'x', pad);	/* one long string before the names */
	p += pad + 1;
	for (int i = 0; i < n; i++) {
		strcpy(p, names[i]);
		p += strlen(names[i]) + 1;
	}
	h.str_len = p - (buf + sizeof(h));
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(tu_write_file(path, buf, p - buf), 0);
	free(buf);
	return path;
}

static void whole_names_are_found_wherever_the_reads_cut_them(void **state)
{
	const char *in[] = { "io_uring_bpf_ops", "uring_bpf_ops_extra", "iou_loop_params" };
	const char *ask[] = { "io_uring_bpf_ops", "uring_bpf_ops", "iou_loop_params", "absent" };
	char *dir = tu_mkdtemp("btf");
	bool found[4];

	(void)state;
	/* the names around the 64 KiB boundary of the reads, at every offset near it */
	for (size_t pad = (64 << 10) - 80; pad < (64 << 10) + 8; pad++) {
		char *path = write_btf(dir, pad, in, 3);

		assert_int_equal(btf_find_strings(path, ask, 4, found), 2);
		assert_true(found[0]);
		/* only a suffix of "io_uring_bpf_ops" and a prefix of another name */
		assert_false(found[1]);
		assert_true(found[2]);
		assert_false(found[3]);
		free(path);
	}
	tu_rmrf(dir);
	free(dir);
}

static void a_file_that_is_not_btf_is_an_error(void **state)
{
	const char *ask[] = { "x" };
	char *dir = tu_mkdtemp("btf"), *path = tu_path(dir, "not-btf");
	bool found[1];

	(void)state;
	assert_int_equal(tu_write_file(path, "hello, this is not BTF at all", 29), 0);
	assert_int_equal(btf_find_strings(path, ask, 1, found), -EPROTO);
	assert_int_equal(btf_find_strings("/nonexistent/btf", ask, 1, found), -ENOENT);
	tu_rmrf(dir);
	free(dir);
	free(path);
}

static void this_kernels_btf_has_task_struct(void **state)
{
	const char *ask[] = { "task_struct", "io_ring_ctx", "no_such_type_in_any_kernel" };
	bool found[3];
	int n;

	(void)state;
	if (access("/sys/kernel/btf/vmlinux", R_OK))
		skip();
	n = btf_find_strings("/sys/kernel/btf/vmlinux", ask, 3, found);
	assert_int_equal(n, 2);
	assert_true(found[0] && found[1] && !found[2]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(whole_names_are_found_wherever_the_reads_cut_them),
		cmocka_unit_test(a_file_that_is_not_btf_is_an_error),
		cmocka_unit_test(this_kernels_btf_has_task_struct),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
