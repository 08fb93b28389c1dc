// SPDX-License-Identifier: MIT
/*
 * Built instead of bpf_loader.c when the daemon is built without the
 * bpf-ops skeleton (no patched kernel's vmlinux.h yet, or BPF=0): the bpf
 * engine then reports itself unavailable and `auto` uses uring.
 */
#include <errno.h>
#include <stdio.h>

#include "bpf_loader.h"

bool bpf_loader_available(void)
{
	return false;
}

int bpf_ops_attach(int ring_fd, struct bpf_ops_handle **out, char *msg, size_t len)
{
	(void)ring_fd;
	*out = NULL;
	snprintf(msg, len, "this iou-offloadd was built without BPF ops (make BPF=1)");
	return -EOPNOTSUPP;
}

void bpf_ops_detach(struct bpf_ops_handle *h)
{
	(void)h;
}

int bpf_ops_counters(struct bpf_ops_handle *h, unsigned int op_id, uint64_t *completed,
		     uint64_t *failed, uint64_t *bytes)
{
	(void)h;
	(void)op_id;
	*completed = *failed = *bytes = 0;
	return -EOPNOTSUPP;
}

int bpf_loader_kernel_structs(const char *const *names, int n, bool *found)
{
	(void)names;
	for (int i = 0; i < n; i++)
		found[i] = false;
	return -EOPNOTSUPP;
}

unsigned int bpf_loader_loads(void)
{
	return 0;
}

int bpf_loop_attach(int ring_fd, struct bpf_loop_handle **out, char *msg, size_t len)
{
	(void)ring_fd;
	*out = NULL;
	snprintf(msg, len, "this iou-offloadd was built without BPF ops (make BPF=1)");
	return -EOPNOTSUPP;
}

void bpf_loop_detach(struct bpf_loop_handle *h)
{
	(void)h;
}

uint64_t bpf_loop_null_regions(struct bpf_loop_handle *h)
{
	(void)h;
	return 0;
}

void bpf_loader_preload(bool ops, bool loop)
{
	(void)ops;
	(void)loop;
}

bool bpf_loader_has_crc32c(void)
{
	return false;
}

int bpf_sums_alloc(unsigned int n, bool device)
{
	(void)n;
	(void)device;
	return -EOPNOTSUPP;
}

void bpf_sums_free(int base, unsigned int n)
{
	(void)base;
	(void)n;
}

uint32_t bpf_sums_get(unsigned int idx)
{
	(void)idx;
	return 0;
}
