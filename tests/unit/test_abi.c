// SPDX-License-Identifier: MIT
/* The compat ABI values against the numbers we ship, and the patched kernel's header */
#include <stdio.h>
#include <stdlib.h>

#include "abi_values.h"
#include "iou_abi.h"
#include "testutil.h"

static void compat_values_are_the_patched_6_12_abi(void **state)
{
	struct abi_values v;

	(void)state;
	assert_int_equal(abi_values_compat(&v), 0);
	assert_int_equal(v.from_uapi, 0);
	/* not merged upstream: numbers upstream has not assigned */
	assert_int_equal(v.op_bpf, 127);
	assert_int_equal(v.setup_bpf_op, 1u << 31);
	/* Ming Lei's IORING_OP_BPF V2 */
	assert_int_equal(v.feat_bpf, 1u << 18);
	/* upstream's numbers (Pavel Begunkov's bpf-ops, merged for 7.1) */
	assert_int_equal(v.setup_sq_rewind, 1u << 20);
	assert_int_equal(v.register_mem_region, 34);
	assert_int_equal(v.mem_region_type_user, 1);
	assert_int_equal(v.region_desc_size, 64);
	assert_int_equal(v.mem_region_reg_size, 32);
	assert_int_equal(v.bpf_op_bits, 8);
	assert_int_equal(v.bpf_op_shift, 24);
	assert_int_equal(v.buf_user, 0);
	assert_int_equal(v.buf_fixed, 1);
	assert_int_equal(v.buf_vec, 2);
	assert_int_equal(v.buf_kfixed, 3);
	assert_int_equal(v.buf_reg_vec, 4);
	assert_int_equal(v.desc_size, 16);
	assert_int_equal(v.off_type, 0);
	assert_int_equal(v.off_reserved, 1);
	assert_int_equal(v.off_buf_index, 2);
	assert_int_equal(v.off_len, 4);
	assert_int_equal(v.off_addr, 8);
	assert_int_equal(v.off_sqe_bpf_op_flags, v.off_sqe_rw_flags);
}

static void op_id_goes_in_the_top_eight_bits(void **state)
{
	(void)state;
	assert_int_equal(iou_bpf_op_flags(3, 0), 3u << 24);
	assert_int_equal(iou_bpf_op_flags(15, 0x123456), (15u << 24) | 0x123456);
	/* program flags cannot spill into the op id */
	assert_int_equal(iou_bpf_op_flags(1, 0xFFFFFFFF), (1u << 24) | 0xFFFFFF);
	assert_true(IOU_BPF_MAX_OPS <= (1 << IORING_BPF_OP_BITS));
}

static void compat_values_match_the_patched_kernel_headers(void **state)
{
	struct abi_values c, u;

	(void)state;
	if (abi_values_uapi(&u)) {
		/* make test builds the kernel first: there a missing header is a failure */
		if (getenv("IOU_REQUIRE_UAPI"))
			fail_msg("patched kernel headers not installed (%s), but "
				 "IOU_REQUIRE_UAPI is set", u.missing);
		print_message("skipped: patched kernel headers not installed (%s); run make kernel\n",
			      u.missing);
		skip();
	}
	assert_int_equal(abi_values_compat(&c), 0);
	assert_int_equal(u.from_uapi, 1);
#define SAME(f) do {							\
		if (c.f != u.f)						\
			print_message(#f ": compat %lu, kernel %lu\n", c.f, u.f); \
		assert_int_equal(c.f, u.f);				\
	} while (0)
	SAME(op_bpf);
	SAME(setup_bpf_op);
	SAME(setup_sq_rewind);
	SAME(register_mem_region);
	SAME(feat_bpf);
	SAME(mem_region_type_user);
	SAME(region_desc_size);
	SAME(mem_region_reg_size);
	SAME(bpf_op_bits);
	SAME(bpf_op_shift);
	SAME(buf_user);
	SAME(buf_fixed);
	SAME(buf_vec);
	SAME(buf_kfixed);
	SAME(buf_reg_vec);
	SAME(desc_size);
	SAME(off_type);
	SAME(off_reserved);
	SAME(off_buf_index);
	SAME(off_len);
	SAME(off_addr);
	SAME(sqe_size);
	SAME(off_sqe_bpf_op_flags);
#undef SAME
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(compat_values_are_the_patched_6_12_abi),
		cmocka_unit_test(op_id_goes_in_the_top_eight_bits),
		cmocka_unit_test(compat_values_match_the_patched_kernel_headers),
	};

	return cmocka_run_group_tests_name("abi", tests, NULL, NULL);
}
