/* SPDX-License-Identifier: MIT */
#ifndef IOU_BPF_DESC_H
#define IOU_BPF_DESC_H

/*
 * IORING_OP_BPF buffer descriptors (the uapi's struct io_bpf_buf_desc),
 * filled one way wherever the daemon builds them: the bpf engine's shuffle
 * and sum (engine_bpf.c, whose descriptors the loop templates reuse), the
 * stripe gather (ublk_gather.c) and a device's sums (ublk_queue.c). The
 * reserved byte stays 0: the kernel refuses anything else (-EINVAL).
 */
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "iou_abi.h"

/* @len bytes at @addr, inside registered buffer @index */
static inline void bpf_desc_fixed(struct io_bpf_buf_desc *d, uint16_t index, const void *addr,
				  uint32_t len)
{
	memset(d, 0, sizeof(*d));
	d->type = IO_BPF_BUF_FIXED;
	d->buf_index = index;
	d->addr = (uint64_t)(uintptr_t)addr;
	d->len = len;
}

/* @nr iovecs at @iov, each inside registered buffer @index */
static inline void bpf_desc_reg_vec(struct io_bpf_buf_desc *d, uint16_t index,
				    const struct iovec *iov, uint32_t nr)
{
	memset(d, 0, sizeof(*d));
	d->type = IO_BPF_BUF_REG_VEC;
	d->buf_index = index;
	d->addr = (uint64_t)(uintptr_t)iov;
	d->len = nr;
}

/* @len bytes at @off into the kernel buffer at table index @index (a ublk request's pages) */
static inline void bpf_desc_kfixed(struct io_bpf_buf_desc *d, uint16_t index, uint64_t off,
				   uint32_t len)
{
	memset(d, 0, sizeof(*d));
	d->type = IO_BPF_BUF_KFIXED;
	d->buf_index = index;
	d->addr = off;
	d->len = len;
}

#endif
