/* SPDX-License-Identifier: MIT */
#ifndef IOU_SUMS_H
#define IOU_SUMS_H

/* checksum = crc32c (sums.c): each block's CRC32C into the manifest */
#include <stdbool.h>
#include <stdint.h>

struct pipeline_run;
struct plan_params;

int sums_setup(struct pipeline_run *pr);
/* the manifest's header for this run: does the one on disk match it? */
bool sums_manifest_matches(const struct pipeline_run *pr, const struct plan_params *pp);
/* the block size of a manifest of this run's layout and source on disk; 0: none */
uint32_t sums_manifest_block_size(const struct pipeline_run *pr, const struct plan_params *pp);
/*
 * the block at @logical_off, @len bytes of @buf (NULL: a hole, zeros), is
 * done: its sum into the manifest, from the kernel's sums[] when chain @slot
 * summed it there (-1: no chain)
 */
int sums_block_done(struct pipeline_run *pr, uint64_t logical_off, const void *buf, uint32_t len,
		    int slot);
void sums_close(struct pipeline_run *pr);

#endif
