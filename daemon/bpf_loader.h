/* SPDX-License-Identifier: MIT */
#ifndef IOU_BPF_LOADER_H
#define IOU_BPF_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bpf_ops_handle;

/* built with the bpf-ops skeleton (make BPF=1)? */
bool bpf_loader_available(void);
/*
 * Load the uring_bpf_ops programs (one per transform, ids in
 * bpf-ops/iou_ops.h) with ring_fd set, and attach each with a link: the ops
 * go away with the links, i.e. with the daemon. 0 or -errno, with @err set.
 */
int bpf_ops_attach(int ring_fd, struct bpf_ops_handle **out, char *err, size_t err_len);
void bpf_ops_detach(struct bpf_ops_handle *h);
/* what the programs themselves counted for @op_id (their .bss) */
int bpf_ops_counters(struct bpf_ops_handle *h, unsigned int op_id, uint64_t *completed,
		     uint64_t *failed, uint64_t *bytes);

#endif
