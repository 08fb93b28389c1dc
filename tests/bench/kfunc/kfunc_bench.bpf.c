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
 */
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "kfunc_bench.h"

char LICENSE[] SEC("license") = "GPL";

#define EFAULT	14
#define EINVAL	22

#include "iou_kfuncs.h"

/* what prep keeps in uring_bpf_data->pdu (40 bytes) for issue */
struct kb_pdu {
	struct io_bpf_buf_desc desc[2];	/* source, destination */
	__u32 reps;
	__u32 pad;
};

SEC("struct_ops/kb_prep")
int BPF_PROG(kb_prep, struct uring_bpf_data *data, const struct io_uring_sqe *sqe)
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
