/* SPDX-License-Identifier: MIT */
#ifndef IOU_FNV_H
#define IOU_FNV_H

/*
 * FNV-1a, 64 bits: stable across builds and hosts, good enough to tell one
 * layout from another. The layout fingerprints (checkpoints, ublk devices)
 * are kept on disk and in the kernel: the function must never change.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FNV1A_START	0xcbf29ce484222325ULL

static inline uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

/* @s with its terminating NUL, so "ab","c" and "a","bc" differ */
static inline uint64_t fnv1a_str(uint64_t h, const char *s)
{
	return fnv1a(h, s, strlen(s) + 1);
}

#endif
