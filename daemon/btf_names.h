/* SPDX-License-Identifier: MIT */
#ifndef IOU_BTF_NAMES_H
#define IOU_BTF_NAMES_H

#include <stdbool.h>

/* a name longer than this is never found */
#define BTF_NAME_MAX	32

/*
 * Which of @names (each shorter than BTF_NAME_MAX) the BTF at @path has as
 * whole strings: found[i] set for each. Sysfs hands the file out 4 KiB per
 * read() (1339 reads for a 5 MiB vmlinux BTF), so only the string section
 * is read, once for every name, and no further than the last name found.
 * Returns how many were found, or -errno. No libbpf needed.
 */
int btf_find_strings(const char *path, const char *const *names, int n, bool *found);

#endif
