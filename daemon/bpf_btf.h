/* SPDX-License-Identifier: MIT */
#ifndef IOU_BPF_BTF_H
#define IOU_BPF_BTF_H

#include <stdbool.h>

/*
 * Which of @names the kernel's BTF has as strings (the names of its types
 * and members): how many, or -errno. The BTF is read once per daemon, and
 * libbpf's loads share one parse of it (btf__load_vmlinux_btf() in
 * bpf_btf.c).
 */
int bpf_kernel_btf_structs(const char *const *names, int n, bool *found);

#endif
