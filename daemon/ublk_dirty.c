// SPDX-License-Identifier: MIT
/*
 * The dirty-region map's rules (see ublk_dirty.h): when a region becomes
 * dirty and when a flush may clear it.
 */
#include <errno.h>
#include <stdlib.h>

#include "ublk_dirty.h"

int ublk_dirty_init(struct ublk_dirty *m, uint64_t size)
{
	m->nr = (size + UBLK_REGION_SIZE - 1) >> UBLK_REGION_SHIFT;
	m->gen = 0;
	m->map = calloc(m->nr ?: 1, sizeof(*m->map));
	m->inflight = calloc(m->nr ?: 1, sizeof(*m->inflight));
	m->cand = calloc(m->nr ?: 1, sizeof(*m->cand));
	m->last = calloc(m->nr ?: 1, sizeof(*m->last));
	if (!m->map || !m->inflight || !m->cand || !m->last) {
		ublk_dirty_free(m);
		return -ENOMEM;
	}
	return 0;
}

void ublk_dirty_free(struct ublk_dirty *m)
{
	free(m->map);
	free(m->inflight);
	free(m->cand);
	free(m->last);
	m->map = NULL;
	m->inflight = m->cand = NULL;
	m->last = NULL;
}

void ublk_dirty_span(uint64_t off, uint64_t len, uint64_t *lo, uint64_t *hi)
{
	*lo = off >> UBLK_REGION_SHIFT;
	*hi = len ? ((off + len - 1) >> UBLK_REGION_SHIFT) + 1 : *lo;
}

bool ublk_dirty_start(struct ublk_dirty *m, uint64_t off, uint64_t len, uint64_t now)
{
	uint64_t lo, hi;
	bool marked = false;

	ublk_dirty_span(off, len, &lo, &hi);
	for (uint64_t r = lo; r < hi && r < m->nr; r++) {
		m->inflight[r]++;
		m->cand[r] = 0;		/* written after the flush looked: not its to clear */
		if (m->last[r] != UINT64_MAX)
			m->last[r] = now;
		if (!m->map[r]) {
			m->map[r] = 1;
			marked = true;
		}
	}
	return marked;
}

void ublk_dirty_end(struct ublk_dirty *m, uint64_t off, uint64_t len, bool ok)
{
	uint64_t lo, hi;

	ublk_dirty_span(off, len, &lo, &hi);
	for (uint64_t r = lo; r < hi && r < m->nr; r++) {
		if (m->inflight[r])
			m->inflight[r]--;
		if (!ok)
			m->last[r] = UINT64_MAX;
	}
}

bool ublk_dirty_busy(const struct ublk_dirty *m, uint64_t off, uint64_t len)
{
	uint64_t lo, hi;

	ublk_dirty_span(off, len, &lo, &hi);
	for (uint64_t r = lo; r < hi && r < m->nr; r++)
		if (m->inflight[r])
			return true;
	return false;
}

uint32_t ublk_dirty_flush_begin(struct ublk_dirty *m, uint64_t now)
{
	if (!++m->gen)
		m->gen = 1;
	/*
	 * Only a region whose writes all completed before the flush began: the
	 * flush's fdatasync of the members then covers every one of them.
	 */
	for (uint64_t r = 0; r < m->nr; r++)
		if (m->map[r] && !m->inflight[r] && m->last[r] != UINT64_MAX &&
		    now - m->last[r] >= UBLK_CLEAN_DELAY_MS)
			m->cand[r] = m->gen;
	return m->gen;
}

uint64_t ublk_dirty_flush_end(struct ublk_dirty *m, uint32_t gen)
{
	uint64_t n = 0;

	for (uint64_t r = 0; r < m->nr; r++)
		if (m->cand[r] == gen && m->map[r] && !m->inflight[r]) {
			m->map[r] = 0;
			m->cand[r] = 0;
			n++;
		}
	return n;
}

uint64_t ublk_dirty_count(const struct ublk_dirty *m)
{
	uint64_t n = 0;

	for (uint64_t r = 0; r < m->nr; r++)
		n += m->map[r];
	return n;
}
