// SPDX-License-Identifier: MIT
/*
 * Fixed buffers kept between pipeline runs (bufpool.h). The lock covers the
 * idle list only: zeroing and unmapping run outside it.
 */
#include <stdlib.h>
#include <string.h>

#include "bufpool.h"

struct bufpool_set {
	struct bufpool_set *next;
	struct ring_mem mem;
};

void bufpool_init(struct bufpool *bp, size_t limit)
{
	memset(bp, 0, sizeof(*bp));
	pthread_mutex_init(&bp->lock, NULL);
	bp->limit = limit;
}

/* unlink and return the idle sets past what @bp->limit allows; lock held */
static struct bufpool_set *over_limit(struct bufpool *bp)
{
	struct bufpool_set **pp = &bp->idle, *cut;
	size_t kept = 0;

	while (*pp && kept + (*pp)->mem.len <= bp->limit) {
		kept += (*pp)->mem.len;
		pp = &(*pp)->next;
	}
	cut = *pp;
	*pp = NULL;
	bp->idle_bytes = kept;
	return cut;
}

static void free_sets(struct bufpool_set *s)
{
	while (s) {
		struct bufpool_set *next = s->next;

		ring_mem_free(&s->mem);
		free(s);
		s = next;
	}
}

void bufpool_set_limit(struct bufpool *bp, size_t limit)
{
	struct bufpool_set *cut;

	pthread_mutex_lock(&bp->lock);
	bp->limit = limit;
	cut = over_limit(bp);
	pthread_mutex_unlock(&bp->lock);
	free_sets(cut);
}

void bufpool_destroy(struct bufpool *bp)
{
	bufpool_set_limit(bp, 0);
	pthread_mutex_destroy(&bp->lock);
}

static bool same_layout(const struct ring_mem *m, const size_t *sizes, unsigned int nr)
{
	if (m->nr != nr)
		return false;
	for (unsigned int i = 0; i < nr; i++)
		if (m->iov[i].iov_len != sizes[i])
			return false;
	return true;
}

int bufpool_get(struct bufpool *bp, struct ring_mem *m, const size_t *sizes, unsigned int nr)
{
	struct bufpool_set **pp, *s = NULL;
	int ret;

	if (bp) {
		pthread_mutex_lock(&bp->lock);
		for (pp = &bp->idle; *pp; pp = &(*pp)->next) {
			if (same_layout(&(*pp)->mem, sizes, nr)) {
				s = *pp;
				*pp = s->next;
				bp->idle_bytes -= s->mem.len;
				bp->reused++;
				break;
			}
		}
		pthread_mutex_unlock(&bp->lock);
	}
	if (s) {
		*m = s->mem;
		free(s);
		return 1;
	}
	ret = ring_mem_alloc(m, sizes, nr);
	if (!ret && bp) {
		pthread_mutex_lock(&bp->lock);
		bp->mapped++;
		pthread_mutex_unlock(&bp->lock);
	}
	return ret;
}

void bufpool_put(struct bufpool *bp, struct ring_mem *m)
{
	struct bufpool_set *s, *cut;
	size_t limit = 0;

	if (!m->base)
		return;
	if (bp) {
		pthread_mutex_lock(&bp->lock);
		limit = bp->limit;
		pthread_mutex_unlock(&bp->lock);
	}
	if (m->len > limit || !(s = calloc(1, sizeof(*s)))) {
		ring_mem_free(m);
		return;
	}
	/* resident already: no faults, and nothing of this run's data stays */
	memset(m->base, 0, m->len);
	s->mem = *m;
	memset(m, 0, sizeof(*m));
	pthread_mutex_lock(&bp->lock);
	s->next = bp->idle;
	bp->idle = s;
	bp->idle_bytes += s->mem.len;
	cut = over_limit(bp);
	pthread_mutex_unlock(&bp->lock);
	free_sets(cut);
}
