/* SPDX-License-Identifier: MIT */
#ifndef IOU_BUFPOOL_H
#define IOU_BUFPOOL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "ring.h"

/*
 * Fixed-buffer memory that outlives the pipeline run that used it. A run
 * that ends hands its buffers back; they are zeroed there, so no byte of
 * one pipeline's data can reach another's destination (a short last read
 * leaves the O_DIRECT padding of its block as the buffer held it). The next
 * run with the same layout (a retry, a restart, a pipeline added by reload)
 * takes them instead of mapping and faulting in new ones. Idle memory is
 * capped by [daemon] buffer_cache; the oldest idle set goes first.
 */
struct bufpool_set;

struct bufpool {
	pthread_mutex_t lock;
	struct bufpool_set *idle;	/* most recently returned first */
	size_t idle_bytes;
	size_t limit;
	uint64_t reused, mapped;	/* sets handed out from the cache / newly mapped */
};

void bufpool_init(struct bufpool *bp, size_t limit);
/* a new cap: idle sets over it are unmapped now */
void bufpool_set_limit(struct bufpool *bp, size_t limit);
void bufpool_destroy(struct bufpool *bp);

/*
 * ring_mem_alloc(@m, @sizes, @nr), from an idle set of exactly that layout
 * when there is one. @bp NULL: always new. 1 reused, 0 new, or -errno.
 */
int bufpool_get(struct bufpool *bp, struct ring_mem *m, const size_t *sizes, unsigned int nr);
/* @m's memory back to @bp, zeroed (NULL or over the cap: unmapped); @m is left empty */
void bufpool_put(struct bufpool *bp, struct ring_mem *m);

#endif
