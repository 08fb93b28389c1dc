// SPDX-License-Identifier: GPL-2.0
/*
 * iou-offloadd's IORING_OP_BPF programs: one prep_fn and one issue_fn for
 * every transform, the op id taken from the SQE. The uring_bpf_ops map
 * below is the template: the daemon loads the programs once and makes a
 * map of its own per ring and id of iou_ops.h from it (they differ only in
 * id and ring_fd), all sharing the two programs.
 *
 * prep_fn keeps the SQE's parameters in the pdu (the only part of
 * uring_bpf_data a program may write); issue_fn reads each descriptor pair
 * from the daemon's registered (pinned, so always resident) metadata area
 * and hands it to uring_bpf_memcpy(). The request completes with the bytes
 * copied, or -EIO if that is not what the daemon asked for, or the first
 * -errno: a negative result fails the request and so cancels the writes
 * linked after it. Nothing here sleeps: issue_fn runs non-sleepable.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "iou_ops.h"

char LICENSE[] SEC("license") = "GPL";

#define EIO	5
#define EFAULT	14
#define EINVAL	22
#define EOPNOTSUPP 95

#include "iou_kfuncs.h"

/*
 * The kernel's value of a uring_bpf_ops map as this kernel's vmlinux.h lays
 * it out: the daemon makes each ring's maps from it without parsing the
 * kernel's BTF, once the size agrees with the kernel's (bpf_loader.c).
 */
const volatile __u32 st_value_size = sizeof(struct bpf_struct_ops_uring_bpf_ops);
const volatile __u32 st_off_id = __builtin_offsetof(struct bpf_struct_ops_uring_bpf_ops, data.id);
const volatile __u32 st_off_ring_fd = __builtin_offsetof(struct bpf_struct_ops_uring_bpf_ops,
							  data.ring_fd);
const volatile __u32 st_off_prep = __builtin_offsetof(struct bpf_struct_ops_uring_bpf_ops,
						       data.prep_fn);
const volatile __u32 st_off_issue = __builtin_offsetof(struct bpf_struct_ops_uring_bpf_ops,
							data.issue_fn);

/* IOU_OP_ID_SUM's results: the CRC32C of a block, at the entry its SQE names */
__u32 sums[IOU_SUMS_MAX];

/* what the programs did, by op id, over every ring: the daemon's counters */
__u64 nr_completed[IOU_OP_ID_MAX + 1];
__u64 nr_failed[IOU_OP_ID_MAX + 1];
__u64 bytes_copied[IOU_OP_ID_MAX + 1];


SEC("struct_ops/iou_prep")
int BPF_PROG(iou_prep, struct uring_bpf_data *data, const struct io_uring_sqe *sqe)
{
	struct iou_ops_pdu *pdu = (void *)data->pdu;
	__u32 nr = sqe->len;
	__u64 expect = sqe->off;

	if (nr == 0 || nr > IOU_OPS_MAX_PAIRS || expect > 0x7fffffff)
		return -EINVAL;
	pdu->descs = sqe->addr;
	pdu->expect = expect;
	pdu->nr_pairs = nr;
	pdu->op_id = sqe->bpf_op_flags >> IOU_BPF_OP_SHIFT;
	return 0;
}

SEC("struct_ops/iou_issue")
int BPF_PROG(iou_issue, struct uring_bpf_data *data)
{
	struct iou_ops_pdu *pdu = (void *)data->pdu;
	struct io_bpf_buf_desc pair[2];
	__u64 descs = pdu->descs, expect = pdu->expect, total = 0;
	__u32 nr = pdu->nr_pairs, id = pdu->op_id;
	int i, res;

	if (id == IOU_OP_ID_SUM && !bpf_ksym_exists(uring_bpf_crc32c)) {
		res = -EOPNOTSUPP;
		goto out;
	}
	bpf_for(i, 0, IOU_OPS_MAX_PAIRS) {
		__s64 n;

		if (i >= nr)
			break;
		if (bpf_probe_read_user(pair, sizeof(pair),
					(void *)(descs + (__u64)i * sizeof(pair)))) {
			res = -EFAULT;
			goto out;
		}
		/* the kfunc named again: without it the verifier must see the call is dead */
		if (id == IOU_OP_ID_SUM && bpf_ksym_exists(uring_bpf_crc32c)) {
			/* pair k's source (pair[1], as for a copy): its CRC32C to sums[off + k] */
			n = uring_bpf_crc32c(data, &pair[1], ~0U);
			if (n >= 0) {
				sums[(expect + i) & (IOU_SUMS_MAX - 1)] = ~(__u32)n;
				n = pair[1].len;
			}
		} else {
			/* pair[0] is the destination, pair[1] the source */
			n = uring_bpf_memcpy(data, &pair[0], &pair[1]);
		}
		if (n < 0) {
			res = n;
			goto out;
		}
		total += n;
	}
	/* a sum completes with the bytes summed; a short copy fails: the writes after it must not run */
	res = id == IOU_OP_ID_SUM || total == expect ? (int)total : -EIO;
out:
	if (id <= IOU_OP_ID_MAX) {
		if (res < 0) {
			__sync_fetch_and_add(&nr_failed[id], 1);
		} else {
			__sync_fetch_and_add(&nr_completed[id], 1);
			__sync_fetch_and_add(&bytes_copied[id], total);
		}
	}
	uring_bpf_set_result(data, res);
	return 0;
}

/*
 * The template of the daemon's maps: it registers the same two programs
 * under every id, on every ring (bpf_loader.c sets id and ring_fd). One
 * map, not one per id: libbpf looks each struct_ops map's types up in the
 * kernel's BTF, two linear searches of it per map.
 */
SEC(".struct_ops.link")
struct uring_bpf_ops iou_ops = {
	.id		= IOU_OP_ID_COPY,
	.ring_fd	= -1,
	.prep_fn	= (void *)iou_prep,
	.issue_fn	= (void *)iou_issue,
};
