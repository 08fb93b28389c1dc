/* SPDX-License-Identifier: MIT */
/*
 * The IORING_OP_BPF ABI of our patched 6.12 kernel, for userspace.
 *
 * The patched include/uapi/linux/io_uring.h is the one source of truth.
 * The daemon Makefile passes IOU_UAPI_IO_URING_H (the path of that header
 * after `make headers_install`) when it exists; otherwise we include the
 * system's stock header and supply the same values here, so the daemon
 * builds and its uring engine runs on stock systems. tests/unit/test_abi.c
 * checks that both agree whenever the patched headers are installed.
 *
 * Include this before <liburing.h>: liburing carries its own copy of the
 * uapi header under the same include guard, and whichever comes first wins.
 */
#ifndef IOU_ABI_H
#define IOU_ABI_H

#include <stddef.h>
#include <linux/types.h>

#if defined(IOU_UAPI_IO_URING_H) && !defined(IOU_FORCE_COMPAT)
#include IOU_UAPI_IO_URING_H
#else
#include <linux/io_uring.h>
#endif

/*
 * IORING_OP_BPF is an enum member, invisible to the preprocessor; the
 * patched header also adds the macro IORING_BPF_OP_SHIFT, which we use to
 * tell the two headers apart.
 */
#if defined(IORING_BPF_OP_SHIFT) && !defined(IOU_FORCE_COMPAT)
#define IOU_ABI_FROM_UAPI	1
#define IOU_OP_BPF		IORING_OP_BPF
#define IOU_SETUP_BPF_OP	IORING_SETUP_BPF_OP
#define IOU_REGISTER_MEM_REGION	IORING_REGISTER_MEM_REGION
#define IOU_FEAT_BPF		IORING_FEAT_BPF
#define iou_sqe_bpf_op_flags(sqe) ((sqe)->bpf_op_flags)
#else
#define IOU_ABI_FROM_UAPI	0
/*
 * Not merged upstream, so on numbers upstream has not assigned: opcode 127
 * (upstream's opcodes after 6.12 start at 58, IORING_OP_RECV_ZC) and the
 * top setup bit. IORING_FEAT_BPF is Ming Lei's V2 value.
 */
#define IOU_OP_BPF		127
#define IOU_SETUP_BPF_OP	(1U << 31)
#define IOU_FEAT_BPF		(1U << 18)
/* SQE field bpf_op_flags shares the rw_flags union slot */
#define iou_sqe_bpf_op_flags(sqe) (*(__u32 *)&(sqe)->rw_flags)

#ifndef IORING_SETUP_BPF_OP
#define IORING_SETUP_BPF_OP	(1U << 31)
#endif
/* upstream's number (bpf-ops, 7.1) */
#ifndef IORING_SETUP_SQ_REWIND
#define IORING_SETUP_SQ_REWIND	(1U << 20)
#endif
#define IORING_BPF_OP_BITS	8
#define IORING_BPF_OP_SHIFT	24

enum io_bpf_buf_type {
	IO_BPF_BUF_USER		= 0,	/* plain userspace buffer */
	IO_BPF_BUF_FIXED	= 1,	/* registered buffer (absolute address) */
	IO_BPF_BUF_VEC		= 2,	/* vectored buffer (iovec array) */
	IO_BPF_BUF_KFIXED	= 3,	/* a kernel buffer of the table (a ublk request), addr an offset */
	IO_BPF_BUF_REG_VEC	= 4,	/* registered vectored buffer */
};

struct io_bpf_buf_desc {
	__u8  type;		/* IO_BPF_BUF_* */
	__u8  reserved;
	__u16 buf_index;	/* registered buffer index (FIXED/KFIXED/REG_VEC) */
	__u32 len;		/* length (non-vec) or nr_vecs (vec types) */
	__u64 addr;		/* userspace address or iovec array pointer */
};

/*
 * The bpf-ops loop's parameter region: IORING_REGISTER_MEM_REGION (an enum
 * member in the patched header) on upstream's number, 34, with upstream's
 * structs, user memory only.
 */
#define IOU_REGISTER_MEM_REGION	34
#include <linux/version.h>
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 13, 0)	/* upstream has them since 6.13 */
#define IORING_MEM_REGION_TYPE_USER	1

struct io_uring_region_desc {
	__u64 user_addr;
	__u64 size;
	__u32 flags;
	__u32 id;
	__u64 mmap_offset;
	__u64 __resv[4];
};

struct io_uring_mem_region_reg {
	__u64 region_uptr;	/* struct io_uring_region_desc * */
	__u64 flags;
	__u64 __resv[2];
};
#endif
#endif

/* newer than the stock headers of the build host, all in 6.12 */
#ifndef IORING_SETUP_NO_SQARRAY
#define IORING_SETUP_NO_SQARRAY	(1U << 16)
#endif
#ifndef IORING_TIMEOUT_MULTISHOT
#define IORING_TIMEOUT_MULTISHOT	(1U << 6)
#endif

#ifndef IORING_SETUP_SQ_REWIND
#define IORING_SETUP_SQ_REWIND	(1U << 20)
#endif

/* IO_RING_MAX_BPF_OPS in the kernel: op ids 0..15 per ring */
#define IOU_BPF_MAX_OPS		16

static inline __u32 iou_bpf_op_flags(unsigned int op_id, __u32 prog_flags)
{
	return ((__u32)op_id << IORING_BPF_OP_SHIFT) |
	       (prog_flags & ((1U << IORING_BPF_OP_SHIFT) - 1));
}

_Static_assert(sizeof(struct io_bpf_buf_desc) == 16, "io_bpf_buf_desc is 16 bytes");
_Static_assert(offsetof(struct io_bpf_buf_desc, addr) == 8, "desc addr at 8");

#endif /* IOU_ABI_H */
