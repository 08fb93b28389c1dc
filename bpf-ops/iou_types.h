/* SPDX-License-Identifier: MIT */
/*
 * The types the shared headers are written in (__u32, __u64, struct
 * io_uring_sqe, ...): vmlinux.h's in a BPF program (clang -target bpf
 * defines __bpf__); in the daemon and the host tests the io_uring uapi as
 * the daemon sees it (iou_abi.h: the patched header, or its values), with
 * <linux/types.h>. Every header of bpf-ops/ includes it first, so each
 * stands alone in either compiler.
 */
#ifndef IOU_TYPES_H
#define IOU_TYPES_H

#ifdef __bpf__
#include "vmlinux.h"
#else
#include "../daemon/iou_abi.h"
#endif

#endif
