// SPDX-License-Identifier: MIT
/*
 * Sparse files stay sparse (sparse = yes, the default): the holes of a copy
 * or mirror's source (SEEK_DATA / SEEK_HOLE, once at setup) are neither read
 * nor written. Their range on each destination is punched (FALLOC_FL_PUNCH_HOLE)
 * before the first block moves, so it reads back as zeros whatever the file
 * held before, and a block that lies wholly in a hole is skipped by the
 * driver. The free-space check counts the data, not the length.
 *
 * Only where every byte maps 1:1: copy and mirror, a regular-file source,
 * regular-file destinations that can punch, and the uring and bpf engines
 * (the loop engine's program takes every block). Elsewhere every byte is
 * written, as with sparse = no.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <linux/falloc.h>

#include "log.h"
#include "pipeline_int.h"

/* a source with more holes than this is copied whole: the map stays small */
#define SPARSE_MAX_HOLES	65536

static int add_hole(struct sparse_map *m, uint64_t lo, uint64_t hi)
{
	struct sparse_hole *n;

	if (m->nr == m->cap) {
		if (m->cap >= SPARSE_MAX_HOLES)
			return -E2BIG;
		m->cap = m->cap ? m->cap * 2 : 64;
		n = realloc(m->holes, m->cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		m->holes = n;
	}
	m->holes[m->nr++] = (struct sparse_hole){ lo, hi };
	m->hole_bytes += hi - lo;
	return 0;
}

static bool eligible(const struct pipeline_run *pr, const char **why)
{
	const struct pipeline_config *pc = &pr->cfg;

	*why = NULL;
	if (!pc->s.sparse)
		return false;
	if (pc->transform != TRANSFORM_COPY && pc->transform != TRANSFORM_MIRROR)
		return false;
	if (engine_drives_itself(pr)) {
		*why = "the loop engine moves every block";
		return false;
	}
	if (pr->fs.src[0].is_bdev)
		return false;
	for (int d = 0; d < pr->fs.nr_dst; d++)
		if (pr->fs.dst[d].is_bdev)
			return false;
	return true;
}

/* the holes of source 0 in [offset + start, offset + length), logical */
int sparse_map_build(struct pipeline_run *pr)
{
	struct sparse_map *m = &pr->sparse;
	const struct plan_params *p = &pr->plan.p;
	uint64_t base = pr->cfg.offset, at = p->start, end = p->length;
	int fd = pr->fs.src[0].fd;
	const char *why;
	int ret = 0;

	sparse_map_free(m);
	if (!eligible(pr, &why)) {
		if (why)
			log_info("pipeline %s: sparse = yes, but %s: holes are written as zeros",
				 pr->cfg.name, why);
		return 0;
	}
	while (at < end) {
		off_t data = lseek(fd, base + at, SEEK_DATA), hole;

		if (data < 0 && errno == ENXIO)
			data = base + end;	/* a hole to the end */
		else if (data < 0)
			goto dense;		/* the file system cannot say: copy it all */
		if ((uint64_t)data > base + end)
			data = base + end;
		if ((uint64_t)data > base + at)
			ret = add_hole(m, at, data - base);
		if (ret)
			goto dense;
		at = data - base;
		if (at >= end)
			break;
		hole = lseek(fd, base + at, SEEK_HOLE);
		if (hole < 0)
			goto dense;
		at = (uint64_t)hole - base;
	}
	m->on = m->nr > 0;
	return 0;
dense:
	if (ret == -ENOMEM)
		return ret;
	sparse_map_free(m);
	return 0;
}

void sparse_map_free(struct sparse_map *m)
{
	free(m->holes);
	memset(m, 0, sizeof(*m));
}

/* is [lo, hi) wholly inside one hole? */
static bool in_hole(const struct sparse_map *m, uint64_t lo, uint64_t hi)
{
	size_t a = 0, b = m->nr;

	while (a < b) {
		size_t mid = (a + b) / 2;

		if (m->holes[mid].hi <= lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a < m->nr && m->holes[a].lo <= lo && hi <= m->holes[a].hi;
}

bool sparse_block_is_hole(const struct pipeline_run *pr, uint64_t block)
{
	const struct plan *pl = &pr->plan;
	uint64_t lo, hi;

	if (!pr->sparse.on)
		return false;
	lo = plan_block_start(pl, block);
	hi = lo + pl->p.block_size;
	if (hi > pl->p.length)
		hi = pl->p.length;
	return in_hole(&pr->sparse, lo, hi);
}

/*
 * Each hole's range on every destination reads as zeros before the copy
 * starts. A destination that cannot punch turns sparse off: every byte is
 * then written, as before.
 */
int sparse_punch_dests(struct pipeline_run *pr)
{
	struct sparse_map *m = &pr->sparse;

	for (int d = 0; m->on && d < pr->fs.nr_dst; d++) {
		const struct file_slot *f = &pr->fs.dst[d];

		for (size_t i = 0; i < m->nr; i++) {
			uint64_t lo = pr->cfg.dest_offset + m->holes[i].lo;
			uint64_t len = m->holes[i].hi - m->holes[i].lo;

			/* past the file's end there is nothing to punch */
			if (lo >= f->size)
				break;
			if (lo + len > f->size)
				len = f->size - lo;
			if (fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				      lo, len) == 0)
				continue;
			if (errno != EOPNOTSUPP && errno != ENOSYS)
				return pipeline_fail(pr, -errno, "cannot punch a hole in %s at "
						     "byte %" PRIu64 ": %s", f->path, lo,
						     strerror(errno));
			log_info("pipeline %s: %s cannot punch holes: holes are written as zeros",
				 pr->cfg.name, f->path);
			sparse_map_free(m);
			return 0;
		}
	}
	if (m->on)
		log_info("pipeline %s: sparse source: %zu hole(s), %" PRIu64 " bytes neither read "
			 "nor written", pr->cfg.name, m->nr, m->hole_bytes);
	return 0;
}

/*
 * A crash whose last checkpoint lies in a hole leaves the destinations
 * where their last data ends, short of it: nothing below the checkpoint is
 * missing there, since the copy writes nothing in a hole and the end of the
 * copy makes it zeros by setting the size. Asked of the source itself, not
 * of the map, which starts at the resume point; the source was seen
 * unchanged since the checkpoint (checkpoint_decide()).
 */
bool sparse_src_hole(const struct pipeline_run *pr, uint64_t lo, uint64_t hi)
{
	const char *why;
	off_t data;

	if (lo >= hi)
		return true;
	if (!eligible(pr, &why))
		return false;
	data = lseek(pr->fs.src[0].fd, pr->cfg.offset + lo, SEEK_DATA);
	if (data < 0)
		return errno == ENXIO;	/* no data from @lo to the end */
	return (uint64_t)data >= pr->cfg.offset + hi;
}

/*
 * A stop in a hole leaves the destinations short of the watermark its
 * record names: the hole's bytes were never written. They are extended to
 * it, as the end of the copy would (pipeline.c's finish()), so that the
 * stopped files, as the record holds them, reach it. Only when every write
 * has completed: one landing past @w would be cut off.
 */
void sparse_extend_dests(struct pipeline_run *pr, uint64_t w)
{
	for (int d = 0; pr->sparse.on && d < pr->fs.nr_dst; d++) {
		const struct file_slot *f = &pr->fs.dst[d];
		uint64_t end = pr->cfg.dest_offset + w;
		struct stat st;

		if (f->fd < 0 || fstat(f->fd, &st) || (uint64_t)st.st_size >= end)
			continue;
		if (ftruncate(f->fd, end) < 0)
			log_warning("pipeline %s: cannot extend %s over the hole below byte %"
				    PRIu64 ": %s", pr->cfg.name, f->path,
				    end, strerror(errno));
	}
}
