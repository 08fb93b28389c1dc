// SPDX-License-Identifier: MIT
/*
 * Built twice: with IOU_FORCE_COMPAT (our compat values), and against the
 * patched kernel's installed io_uring.h when it exists (else ABI_UAPI_ABSENT).
 * Each build exports the same table, which test_abi.c compares.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "iou_abi.h"
#include "abi_values.h"

#ifdef ABI_UAPI_ABSENT
int ABI_FN(struct abi_values *v)
{
	memset(v, 0, sizeof(*v));
	v->missing = ABI_UAPI_ABSENT;
	return -1;
}
#else
int ABI_FN(struct abi_values *v)
{
	memset(v, 0, sizeof(*v));
	v->from_uapi = IOU_ABI_FROM_UAPI;
	v->op_bpf = IOU_OP_BPF;
	v->setup_bpf_op = IOU_SETUP_BPF_OP;
	v->setup_sq_rewind = IORING_SETUP_SQ_REWIND;
	v->bpf_op_bits = IORING_BPF_OP_BITS;
	v->bpf_op_shift = IORING_BPF_OP_SHIFT;
	v->register_mem_region = IOU_REGISTER_MEM_REGION;
	v->feat_bpf = IOU_FEAT_BPF;
	v->mem_region_type_user = IORING_MEM_REGION_TYPE_USER;
	v->region_desc_size = sizeof(struct io_uring_region_desc);
	v->mem_region_reg_size = sizeof(struct io_uring_mem_region_reg);
	v->buf_user = IO_BPF_BUF_USER;
	v->buf_fixed = IO_BPF_BUF_FIXED;
	v->buf_vec = IO_BPF_BUF_VEC;
	v->buf_kfixed = IO_BPF_BUF_KFIXED;
	v->buf_reg_vec = IO_BPF_BUF_REG_VEC;
	v->desc_size = sizeof(struct io_bpf_buf_desc);
	v->off_type = offsetof(struct io_bpf_buf_desc, type);
	v->off_reserved = offsetof(struct io_bpf_buf_desc, reserved);
	v->off_buf_index = offsetof(struct io_bpf_buf_desc, buf_index);
	v->off_len = offsetof(struct io_bpf_buf_desc, len);
	v->off_addr = offsetof(struct io_bpf_buf_desc, addr);
	v->sqe_size = sizeof(struct io_uring_sqe);
	v->off_sqe_rw_flags = offsetof(struct io_uring_sqe, rw_flags);
	{
		struct io_uring_sqe sqe;

		/* where bpf_op_flags lands, through the accessor the daemon uses */
		memset(&sqe, 0, sizeof(sqe));
		iou_sqe_bpf_op_flags(&sqe) = 0xA5A5A5A5u;
		for (size_t i = 0; i < sizeof(sqe); i++)
			if (((unsigned char *)&sqe)[i]) {
				v->off_sqe_bpf_op_flags = i;
				break;
			}
	}
	return 0;
}
#endif
