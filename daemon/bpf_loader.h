/* SPDX-License-Identifier: MIT */
#ifndef IOU_BPF_LOADER_H
#define IOU_BPF_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bpf_ops_handle;

/* the kernel's BTF, which the probe and the loads read (bpf_btf.c) */
#define VMLINUX_BTF	"/sys/kernel/btf/vmlinux"

/* built with the bpf-ops skeleton (make BPF=1)? */
bool bpf_loader_available(void);
/*
 * Register the uring_bpf_ops programs (one prep/issue pair, under every id
 * of bpf-ops/iou_ops.h) on @ring_fd, each id with a struct_ops map and a
 * link of its own: the ops go away with the links. The programs are loaded
 * and verified at the first call only, and stay loaded for the daemon's
 * life. 0 or -errno, with @msg set. Thread-safe.
 */
int bpf_ops_attach(int ring_fd, struct bpf_ops_handle **out, char *msg, size_t len);
void bpf_ops_detach(struct bpf_ops_handle *h);
/*
 * What the programs themselves counted for @op_id (their .bss) since @h
 * was attached, over every ring: other rings running at once add theirs.
 */
int bpf_ops_counters(struct bpf_ops_handle *h, unsigned int op_id, uint64_t *completed,
		     uint64_t *failed, uint64_t *bytes);
/*
 * Which of the structs @names the kernel's BTF describes (the BTF libbpf's
 * loads then reuse): how many, or -errno (-EOPNOTSUPP without BPF ops).
 */
int bpf_loader_kernel_structs(const char *const *names, int n, bool *found);
/* does the running kernel have uring_bpf_crc32c() (IOU_OP_ID_SUM)? */
bool bpf_loader_has_crc32c(void);
/*
 * @n consecutive entries of the programs' sums[] for one ring's chains,
 * from the devices' part (@device) or the pipelines' (IOU_SUMS_DEVICES):
 * the first, or -ENOSPC; given back when the ring goes. bpf_sums_get():
 * an entry's CRC32C, once the IOU_OP_ID_SUM request that names it completed
 */
int bpf_sums_alloc(unsigned int n, bool device);
void bpf_sums_free(int base, unsigned int n);
uint32_t bpf_sums_get(unsigned int idx);
/* BPF objects loaded (so verified) by this daemon so far: at most 2 */
unsigned int bpf_loader_loads(void);
/*
 * Start loading the objects an attach will need (@ops: the uring_bpf_ops
 * programs, @loop: loop_step) on a thread of their own, while the caller
 * sets up its ring and buffers: parsing the kernel's BTF and the verifier
 * are most of a BPF engine's start-up. The attach waits for the load; a
 * failed one is reported by the next attach. Nothing where both are loaded.
 */
void bpf_loader_preload(bool ops, bool loop);


/* the loop_step program (bpf-ops/iou_loop.bpf.c) for one ring */
struct bpf_loop_handle;

/*
 * Link the loop_step program (loaded at the first call, kept for the
 * daemon's life) to @ring_fd: from then on io_uring_enter(GETEVENTS) on the
 * ring runs the loop. The program reads the ring's geometry from its
 * parameter region. 0 or -errno, with @msg set. Thread-safe.
 */
int bpf_loop_attach(int ring_fd, struct bpf_loop_handle **out, char *msg, size_t len);
void bpf_loop_detach(struct bpf_loop_handle *h);
/* steps that found a region missing or too small, on any ring (the program's .bss) */
uint64_t bpf_loop_null_regions(struct bpf_loop_handle *h);

#endif
