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


/* the loop_step program (bpf-ops/iou_loop.bpf.c) for one ring */
struct bpf_loop_handle;

/* the CQ ring's geometry, from io_uring_params: the program's load-time constants */
struct bpf_loop_params {
	uint64_t cq_size;		/* bytes: cq_off.cqes + cq_entries CQEs */
	uint32_t cq_head_off;
	uint32_t cq_tail_off;
	uint32_t cqes_off;
	uint32_t cq_mask;
};

/*
 * Load iou_loop.bpf.c with @p and attach its io_uring_bpf_ops to @ring_fd
 * with a link: from then on io_uring_enter(GETEVENTS) on the ring runs the
 * loop. 0 or -errno, with @err set.
 */
int bpf_loop_attach(int ring_fd, const struct bpf_loop_params *p, struct bpf_loop_handle **out,
		    char *err, size_t err_len);
void bpf_loop_detach(struct bpf_loop_handle *h);
/* steps that found a region missing or too small (the program's .bss) */
uint64_t bpf_loop_null_regions(struct bpf_loop_handle *h);

#endif
