// SPDX-License-Identifier: GPL-2.0
/*
 * uring_bpf_ops program of the kfunc micro-benchmark.
 *
 * An IORING_OP_BPF SQE carries sqe->addr = user address of
 * struct io_bpf_buf_desc[2] = { source, destination } and sqe->len = how
 * many times to repeat the copy (1..KB_MAX_REPS). Repeating inside one
 * request separates the cost of uring_bpf_memcpy() itself from the cost
 * of an io_uring request around it. The CQE carries the bytes copied by
 * all repetitions, or the first negative errno.
 *
 * kb_crc_ops (op id 1) takes the same SQE and computes, reps times,
 * uring_bpf_crc32c() of the source descriptor from ~0: the CQE carries the
 * bytes checksummed, last_crc the CRC.
 */
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "kfunc_bench.h"

char LICENSE[] SEC("license") = "GPL";

#define EFAULT	14
#define EINVAL	22

#include "iou_kfuncs.h"

/* this kernel's own kfunc (not upstream's): the CRC32C of a descriptor */
extern __s64 uring_bpf_crc32c(const struct uring_bpf_data *data,
			      struct io_bpf_buf_desc *desc, __u32 crc) __ksym;

/* the last CRC an issue_fn of kb_crc_ops computed, for the driver to check */
__u32 last_crc;

/* what prep keeps in uring_bpf_data->pdu (40 bytes) for issue */
struct kb_pdu {
	struct io_bpf_buf_desc desc[2];	/* source, destination */
	__u32 reps;
	__u32 pad;
};

static __always_inline int kb_prep_pdu(struct uring_bpf_data *data,
				       const struct io_uring_sqe *sqe)
{
	struct kb_pdu *pdu = (struct kb_pdu *)data->pdu;
	struct io_bpf_buf_desc desc[2];
	__u32 reps = sqe->len;

	if (reps < 1 || reps > KB_MAX_REPS)
		return -EINVAL;
	/* helpers may not write into the pdu (a trusted pointer): via the stack */
	if (bpf_probe_read_user(desc, sizeof(desc), (void *)sqe->addr))
		return -EFAULT;
	__builtin_memcpy(pdu->desc, desc, sizeof(desc));
	pdu->reps = reps;
	return 0;
}

SEC("struct_ops/kb_prep")
int BPF_PROG(kb_prep, struct uring_bpf_data *data, const struct io_uring_sqe *sqe)
{
	return kb_prep_pdu(data, sqe);
}

SEC("struct_ops/kb_issue")
int BPF_PROG(kb_issue, struct uring_bpf_data *data)
{
	struct kb_pdu *pdu = (struct kb_pdu *)data->pdu;
	struct io_bpf_buf_desc desc[2];
	__u32 reps = pdu->reps, i;
	ssize_t ret;
	int total = 0;

	for (i = 0; i < KB_MAX_REPS && i < reps; i++) {
		/* the kfunc takes the descriptors by pointer: hand it fresh copies */
		__builtin_memcpy(desc, pdu->desc, sizeof(desc));
		ret = uring_bpf_memcpy(data, &desc[1], &desc[0]);
		if (ret < 0) {
			total = ret;
			break;
		}
		total += ret;
	}
	uring_bpf_set_result(data, total);
	return 0;
}

SEC(".struct_ops.link")
struct uring_bpf_ops kb_ops = {
	.prep_fn	= (void *)kb_prep,
	.issue_fn	= (void *)kb_issue,
};

SEC("struct_ops/kb_crc_issue")
int BPF_PROG(kb_crc_issue, struct uring_bpf_data *data)
{
	struct kb_pdu *pdu = (struct kb_pdu *)data->pdu;
	struct io_bpf_buf_desc desc;
	__u32 reps = pdu->reps, i;
	__s64 crc = 0;
	int total = 0;

	for (i = 0; i < KB_MAX_REPS && i < reps; i++) {
		__builtin_memcpy(&desc, &pdu->desc[0], sizeof(desc));
		crc = uring_bpf_crc32c(data, &desc, ~0U);
		if (crc < 0) {
			total = crc;
			break;
		}
		total += desc.len;
	}
	if (crc >= 0)
		last_crc = crc;
	uring_bpf_set_result(data, total);
	return 0;
}

SEC("struct_ops/kb_crc_prep")
int BPF_PROG(kb_crc_prep, struct uring_bpf_data *data, const struct io_uring_sqe *sqe)
{
	return kb_prep_pdu(data, sqe);
}

SEC(".struct_ops.link")
struct uring_bpf_ops kb_crc_ops = {
	.prep_fn	= (void *)kb_crc_prep,
	.issue_fn	= (void *)kb_crc_issue,
};
