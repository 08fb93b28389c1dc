/* SPDX-License-Identifier: MIT */
#ifndef IOU_SPARSE_H
#define IOU_SPARSE_H

/* sparse = yes (sparse.c): the holes of a sparse source, skipped and punched */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pipeline_run;

/* logical [lo, hi), sorted */
struct sparse_hole {
	uint64_t lo, hi;
};

struct sparse_map {
	struct sparse_hole *holes;
	size_t nr, cap;
	uint64_t hole_bytes;
	bool on;		/* blocks in holes are skipped, their ranges punched */
};

int sparse_map_build(struct pipeline_run *pr);
void sparse_map_free(struct sparse_map *m);
int sparse_punch_dests(struct pipeline_run *pr);
bool sparse_block_is_hole(const struct pipeline_run *pr, uint64_t block);
/* every write completed: the destinations reach logical @w (a stop in a hole) */
void sparse_extend_dests(struct pipeline_run *pr, uint64_t w);
/* is the source's logical [@lo, @hi) all hole, in a pipeline that skips holes? */
bool sparse_src_hole(const struct pipeline_run *pr, uint64_t lo, uint64_t hi);

#endif
