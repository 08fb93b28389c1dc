/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The IORING_OP_BPF kfuncs, for programs built against vmlinux.h: pahole
 * 1.24 emits no kfunc decl tags, so vmlinux.h does not declare them.
 */
#ifndef IOU_KFUNCS_H
#define IOU_KFUNCS_H

#include "iou_types.h"
#include <bpf/bpf_helpers.h>

extern void uring_bpf_set_result(struct uring_bpf_data *data, int res) __ksym;
extern ssize_t uring_bpf_memcpy(const struct uring_bpf_data *data,
				struct io_bpf_buf_desc *dst,
				struct io_bpf_buf_desc *src) __ksym;

/* this series' own (0019), weak: a kernel without it still loads the programs */
extern __s64 uring_bpf_crc32c(const struct uring_bpf_data *data,
			      struct io_bpf_buf_desc *desc, __u32 crc) __ksym __weak;

#endif /* IOU_KFUNCS_H */
