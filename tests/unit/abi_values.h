/* SPDX-License-Identifier: MIT */
#ifndef IOU_ABI_VALUES_H
#define IOU_ABI_VALUES_H

struct abi_values {
	const char *missing;	/* header path when absent */
	int from_uapi;
	unsigned long op_bpf, setup_bpf_op, setup_sq_rewind, bpf_op_bits, bpf_op_shift;
	unsigned long register_mem_region, feat_bpf, mem_region_type_user;
	unsigned long region_desc_size, mem_region_reg_size;
	unsigned long buf_user, buf_fixed, buf_vec, buf_kfixed, buf_reg_vec;
	unsigned long desc_size, off_type, off_reserved, off_buf_index, off_len, off_addr;
	unsigned long sqe_size, off_sqe_rw_flags, off_sqe_bpf_op_flags;
};

int abi_values_compat(struct abi_values *v);
int abi_values_uapi(struct abi_values *v);

#endif
