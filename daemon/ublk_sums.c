// SPDX-License-Identifier: MIT
/*
 * integrity = crc32c on a device (see ublk_sums.h): the sums in memory and
 * in their file, the dirty regions, and the start that takes the dirty
 * regions' sums again from the data. The queues take and check the sums
 * (ublk_queue.c); this keeps them.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf_loader.h"
#include "checksum.h"
#include "clock.h"
#include "full_io.h"
#include "log.h"
#include "ublk_dev.h"
#include "ublk_recover.h"
#include "ublk_sums.h"

#define SUMS_PER_PAGE	(UBLK_META_PAGE / 4)

void ublk_sums_span(uint64_t off, uint32_t len, uint64_t *first, uint32_t *nr)
{
	uint64_t lo = (off + UBLK_SUM_BLOCK - 1) / UBLK_SUM_BLOCK;
	uint64_t hi = (off + len) / UBLK_SUM_BLOCK;

	*first = lo;
	*nr = hi > lo ? (uint32_t)(hi - lo) : 0;
}

static uint64_t now_ms(void)
{
	return clock_mono_ns() / 1000000;
}

/* the map's bytes for regions [@lo, @hi) into the file (not synced) */
static int map_write(struct ublk_sums *s, uint64_t lo, uint64_t hi)
{
	if (s->fd < 0 || lo >= hi)
		return 0;
	return full_pwrite(s->fd, s->dirty.map + lo, hi - lo, s->l.map_off + lo);
}

/* the sums' pages changed since they were last written (not synced) */
static int sums_write_pages(struct ublk_sums *s, bool all)
{
	uint32_t page[SUMS_PER_PAGE];
	uint64_t pages = s->l.sums_len / UBLK_META_PAGE;
	int ret;

	if (s->fd < 0)
		return 0;
	for (uint64_t p = 0; p < pages; p++) {
		if (!all && !s->page_dirty[p])
			continue;
		for (uint32_t i = 0; i < SUMS_PER_PAGE; i++) {
			uint64_t b = p * SUMS_PER_PAGE + i;

			page[i] = htole32(b < s->l.nr_blocks ? s->crc[b] : 0);
		}
		if ((ret = full_pwrite(s->fd, page, sizeof(page),
				       s->l.sums_off + p * UBLK_META_PAGE)))
			return ret;
		s->page_dirty[p] = 0;
	}
	return 0;
}

static int meta_sync(struct ublk_sums *s)
{
	return s->fd >= 0 && fdatasync(s->fd) ? -errno : 0;
}

/* a fresh file: header, every region dirty (the sums are not taken yet) */
static int meta_create(struct ublk_dev *d, struct ublk_sums *s)
{
	struct ublk_meta_head h = { .size = d->cfg.size, .block_size = UBLK_SUM_BLOCK,
				    .region_size = UBLK_REGION_SIZE,
				    .fingerprint = ublk_fingerprint(&d->cfg) };
	char page[UBLK_META_PAGE];
	int ret;

	memset(s->dirty.map, 1, s->dirty.nr);
	if (s->fd < 0)
		return 0;
	if (ftruncate(s->fd, 0) || ftruncate(s->fd, s->l.size))
		return -errno;
	ublk_meta_head_format(&h, page);
	if ((ret = full_pwrite(s->fd, page, sizeof(page), 0)) ||
	    (ret = map_write(s, 0, s->dirty.nr)))
		return ret;
	return meta_sync(s);
}

/* the file as the last daemon left it: 1 if it is the device's, 0 if not (made anew) */
static int meta_load(struct ublk_dev *d, struct ublk_sums *s, char *msg, size_t len)
{
	char page[UBLK_META_PAGE], why[160];
	struct ublk_meta_head h;
	uint32_t sums[SUMS_PER_PAGE];
	int ret = full_pread(s->fd, page, sizeof(page), 0);

	if (ret || ublk_meta_head_parse(page, sizeof(page), &h, why, sizeof(why)))
		return 0;
	if (h.size != d->cfg.size || h.fingerprint != ublk_fingerprint(&d->cfg)) {
		log_notice("device %s: %s is of another layout or size: its sums are taken "
			   "anew from the members", d->cfg.name, s->path);
		return 0;
	}
	if ((ret = full_pread(s->fd, s->dirty.map, s->dirty.nr, s->l.map_off))) {
		snprintf(msg, len, "integrity: cannot read %s: %s", s->path, strerror(-ret));
		return ret;
	}
	for (uint64_t p = 0; p < s->l.sums_len / UBLK_META_PAGE; p++) {
		if ((ret = full_pread(s->fd, sums, sizeof(sums),
				      s->l.sums_off + p * UBLK_META_PAGE))) {
			snprintf(msg, len, "integrity: cannot read %s: %s", s->path,
				 strerror(-ret));
			return ret;
		}
		for (uint32_t i = 0; i < SUMS_PER_PAGE; i++)
			if (p * SUMS_PER_PAGE + i < s->l.nr_blocks)
				s->crc[p * SUMS_PER_PAGE + i] = le32toh(sums[i]);
	}
	return 1;
}

/* the device's bytes [@off, @off + @len) as member @leg has them (a mirror), or as laid out */
static int dev_read(struct ublk_dev *d, int leg, char *buf, uint64_t off, uint32_t len,
		    struct ublk_piece *p, int max)
{
	int n = ublk_map(&d->layout, false, leg, off, len, p, max), ret;

	if (n <= 0)
		return n < 0 ? n : -EINVAL;
	for (int i = 0; i < n; i++)
		if ((ret = full_pread(d->member_fd[p[i].member], buf + p[i].buf_off, p[i].len,
				      p[i].off)))
			return ret;
	return 0;
}

/*
 * Region @r after a crash: a mirror's in-sync legs made to agree (the
 * first one's bytes, as md's resync of a bitmap's dirty regions), then
 * each block's sum taken from the data. *@fixed: bytes written to legs.
 */
static int region_recompute(struct ublk_dev *d, struct ublk_sums *s, uint64_t r, char *buf,
			    char *other, struct ublk_piece *p, int max, uint64_t *fixed)
{
	uint64_t off = r << UBLK_REGION_SHIFT;
	uint32_t len = d->cfg.size - off < UBLK_REGION_SIZE ? d->cfg.size - off : UBLK_REGION_SIZE;
	bool mirror = d->layout.target == TARGET_MIRROR;
	int src = 0, ret;

	while (mirror && src < d->layout.nr && atomic_load(&d->member_failed[src]))
		src++;
	if (src == d->layout.nr)
		return 0;	/* no leg in sync: the resync brings one back, sums unknown */
	if ((ret = dev_read(d, src, buf, off, len, p, max)))
		return ret;
	for (int m = src + 1; mirror && m < d->layout.nr; m++) {
		if (atomic_load(&d->member_failed[m]))
			continue;
		if ((ret = full_pread(d->member_fd[m], other, len, off)))
			return ret;
		if (!memcmp(buf, other, len))
			continue;
		if ((ret = full_pwrite(d->member_fd[m], buf, len, off)))
			return ret;
		*fixed += len;
	}
	for (uint32_t b = 0; b < len / UBLK_SUM_BLOCK; b++) {
		uint64_t blk = off / UBLK_SUM_BLOCK + b;

		s->crc[blk] = checksum_crc32c(0, buf + (size_t)b * UBLK_SUM_BLOCK, UBLK_SUM_BLOCK);
		s->known[blk] = 1;
		s->page_dirty[blk / SUMS_PER_PAGE] = 1;
	}
	return 0;
}

/* every dirty region's sums taken anew; then the sums durable, the map clean */
static int sums_recover(struct ublk_dev *d, struct ublk_sums *s, char *msg, size_t len)
{
	int max = ublk_map_max_pieces(&d->layout, UBLK_REGION_SIZE);
	struct ublk_piece *p = calloc(max, sizeof(*p));
	uint64_t nr = 0, fixed = 0, t0 = clock_mono_ns();
	char *buf = NULL, *other = NULL;
	int ret = -ENOMEM;

	if (!p || posix_memalign((void **)&buf, 4096, UBLK_REGION_SIZE) ||
	    posix_memalign((void **)&other, 4096, UBLK_REGION_SIZE))
		goto out;
	ret = 0;
	for (uint64_t r = 0; r < s->dirty.nr && !ret; r++) {
		if (!s->dirty.map[r])
			continue;
		ret = region_recompute(d, s, r, buf, other, p, max, &fixed);
		nr++;
	}
	if (!ret && (ret = sums_write_pages(s, false)) == 0 && (ret = meta_sync(s)) == 0) {
		memset(s->dirty.map, 0, s->dirty.nr);
		if (!(ret = map_write(s, 0, s->dirty.nr)))
			ret = meta_sync(s);
	}
	if (ret)
		snprintf(msg, len, "integrity: taking the sums of %" PRIu64 " dirty regions from "
			 "the members: %s", nr, strerror(-ret));
	else if (nr)
		log_notice("device %s: integrity: %" PRIu64 " dirty region(s) of %u KiB: sums taken "
			   "from the data in %.1f s%s%" PRIu64 " bytes written to make mirror legs "
			   "agree", d->cfg.name, nr, UBLK_REGION_SIZE >> 10,
			   (clock_mono_ns() - t0) / 1e9, d->layout.target == TARGET_MIRROR ?
			   ", " : " (", fixed);
	atomic_store(&d->stats.recomputed, nr);
out:
	free(p);
	free(buf);
	free(other);
	return ret;
}

int ublk_sums_open(struct ublk_dev *d, char *msg, size_t len)
{
	struct ublk_sums *s;
	int ret;

	if (d->cfg.integrity == CHECKSUM_NONE)
		return 0;
	/* the copying path sums the tag buffers with ISA-L; zero copy needs the kernel's */
	if (d->zc && (!d->use_bpf || !bpf_loader_has_crc32c())) {
		snprintf(msg, len, "integrity = crc32c: on zero copy the sums are taken in the "
			 "kernel, on the request's pages: needs IORING_OP_BPF with uring_bpf_crc32c() "
			 "(engine = bpf, a kernel with the series' 0019), or data_path = copy (ISA-L "
			 "on the tag buffers)");
		return -EOPNOTSUPP;
	}
	if (!(s = calloc(1, sizeof(*s))))
		return -ENOMEM;
	d->sums = s;
	s->fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	ublk_meta_layout(d->cfg.size, &s->l);
	s->crc = calloc(s->l.nr_blocks ?: 1, sizeof(*s->crc));
	s->prev = calloc(s->l.nr_blocks ?: 1, sizeof(*s->prev));
	s->known = calloc(s->l.nr_blocks ?: 1, 1);
	s->page_dirty = calloc(s->l.sums_len / UBLK_META_PAGE ?: 1, 1);
	if (!s->crc || !s->prev || !s->known || !s->page_dirty || ublk_dirty_init(&s->dirty, d->cfg.size)) {
		snprintf(msg, len, "integrity: no memory for %" PRIu64 " sums", s->l.nr_blocks);
		return -ENOMEM;
	}
	if (d->state_dir) {
		if (asprintf(&s->path, "%s/device-%s.integrity", d->state_dir, d->cfg.name) < 0) {
			s->path = NULL;
			return -ENOMEM;
		}
		s->fd = open(s->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (s->fd < 0) {
			ret = -errno;
			snprintf(msg, len, "integrity: cannot open %s: %s", s->path, strerror(-ret));
			return ret;
		}
	}
	ret = s->fd >= 0 ? meta_load(d, s, msg, len) : 0;
	if (ret < 0)
		return ret;
	if (ret) {
		/* the clean regions' sums are the file's */
		memset(s->known, 1, s->l.nr_blocks);
	} else if ((ret = meta_create(d, s))) {
		snprintf(msg, len, "integrity: cannot write %s: %s", s->path, strerror(-ret));
		return ret;
	}
	ret = sums_recover(d, s, msg, len);
	s->ready = !ret;
	return ret;
}

void ublk_sums_record(struct ublk_dev *d, uint64_t first, const uint32_t *crc, uint32_t nr,
		      bool ok)
{
	struct ublk_sums *s = d->sums;

	pthread_mutex_lock(&s->lock);
	for (uint32_t i = 0; i < nr && first + i < s->l.nr_blocks; i++) {
		s->prev[first + i] = s->crc[first + i];
		s->crc[first + i] = ok ? crc[i] : 0;
		s->known[first + i] = ok;
		s->page_dirty[(first + i) / SUMS_PER_PAGE] = 1;
	}
	pthread_mutex_unlock(&s->lock);
}

bool ublk_sums_expected(struct ublk_dev *d, uint64_t b, uint32_t *crc, uint32_t *prev)
{
	struct ublk_sums *s = d->sums;
	bool known;

	pthread_mutex_lock(&s->lock);
	known = b < s->l.nr_blocks && s->known[b];
	*crc = known ? s->crc[b] : 0;
	*prev = known ? s->prev[b] : 0;
	pthread_mutex_unlock(&s->lock);
	return known;
}

int ublk_sums_write_begin(struct ublk_dev *d, uint64_t off, uint32_t len)
{
	struct ublk_sums *s = d->sums;
	uint64_t lo, hi;
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	/* durable before the write goes: a crash must find its region dirty */
	if (ublk_dirty_start(&s->dirty, off, len, now_ms())) {
		ublk_dirty_span(off, len, &lo, &hi);
		if (!(ret = map_write(s, lo, hi < s->dirty.nr ? hi : s->dirty.nr)))
			ret = meta_sync(s);
		if (ret)
			log_err("device %s: integrity: cannot mark a region dirty in %s: %s",
				d->cfg.name, s->path, strerror(-ret));
	}
	if (ret)
		ublk_dirty_end(&s->dirty, off, len, false);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

void ublk_sums_write_end(struct ublk_dev *d, uint64_t off, uint32_t len, bool ok)
{
	struct ublk_sums *s = d->sums;
	uint64_t first;
	uint32_t nr;

	pthread_mutex_lock(&s->lock);
	ublk_dirty_end(&s->dirty, off, len, ok);
	/* a failed write left its blocks unknown: not checked until the next start */
	if (!ok) {
		ublk_sums_span(off, len, &first, &nr);
		for (uint32_t i = 0; i < nr && first + i < s->l.nr_blocks; i++)
			s->known[first + i] = 0;
	}
	pthread_mutex_unlock(&s->lock);
}

bool ublk_sums_busy(struct ublk_dev *d, uint64_t off, uint32_t len)
{
	struct ublk_sums *s = d->sums;
	bool busy;

	pthread_mutex_lock(&s->lock);
	busy = ublk_dirty_busy(&s->dirty, off, len);
	pthread_mutex_unlock(&s->lock);
	return busy;
}

int ublk_sums_flush_begin(struct ublk_dev *d, uint32_t *gen)
{
	struct ublk_sums *s = d->sums;
	int ret;

	pthread_mutex_lock(&s->lock);
	*gen = ublk_dirty_flush_begin(&s->dirty, now_ms());
	ret = sums_write_pages(s, false);
	pthread_mutex_unlock(&s->lock);
	if (!ret)
		ret = meta_sync(s);
	if (ret)
		log_err("device %s: integrity: cannot make the sums durable in %s: %s",
			d->cfg.name, s->path, strerror(-ret));
	return ret;
}

void ublk_sums_flush_end(struct ublk_dev *d, uint32_t gen)
{
	struct ublk_sums *s = d->sums;

	pthread_mutex_lock(&s->lock);
	/* lazily: a clean mark lost to a crash only costs a region's recompute */
	if (ublk_dirty_flush_end(&s->dirty, gen))
		map_write(s, 0, s->dirty.nr);
	pthread_mutex_unlock(&s->lock);
}

int ublk_sums_sync(struct ublk_dev *d)
{
	uint32_t gen;

	return ublk_sums_flush_begin(d, &gen);
}

void ublk_sums_close(struct ublk_dev *d)
{
	struct ublk_sums *s = d->sums;
	int ret = 0;

	if (!s)
		return;
	/* the members are synced and nothing is in flight: every region whose writes succeeded is clean */
	if (s->fd >= 0 && s->ready) {
		ret = sums_write_pages(s, false);
		if (!ret)
			ret = meta_sync(s);
		for (uint64_t r = 0; !ret && r < s->dirty.nr; r++)
			if (s->dirty.last[r] != UINT64_MAX && !s->dirty.inflight[r])
				s->dirty.map[r] = 0;
		if (!ret && !(ret = map_write(s, 0, s->dirty.nr)))
			ret = meta_sync(s);
		if (ret)
			log_warning("device %s: cannot write its sums to %s: %s", d->cfg.name,
				    s->path, strerror(-ret));
	}
	if (s->fd >= 0)
		close(s->fd);
	ublk_dirty_free(&s->dirty);
	free(s->crc);
	free(s->prev);
	free(s->known);
	free(s->page_dirty);
	free(s->path);
	pthread_mutex_destroy(&s->lock);
	free(s);
	d->sums = NULL;
}
