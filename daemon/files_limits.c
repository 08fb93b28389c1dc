// SPDX-License-Identifier: MIT
/*
 * What a block device takes in one request without a split, against the
 * requests a plan makes of it. io_uring first issues a request without
 * blocking; the block layer refuses to split such a bio and fails it with
 * -EAGAIN (block/blk-merge.c), and io_uring then issues it again from an
 * io-wq worker: a thread hand-off for every request. The daemon's fixed
 * buffers are 4 KiB pages, physically scattered, so at worst every page is
 * a segment of its own: a device with 128 segments takes 512 KiB. Only
 * blk-mq devices split by these limits; brd, dm and md go their own ways.
 */
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "files.h"

uint64_t unsplit_bytes(uint32_t max_sectors_kb, uint32_t max_segments, uint32_t page)
{
	uint64_t by_size = (uint64_t)max_sectors_kb << 10;
	uint64_t by_segs = (uint64_t)max_segments * page;

	if (!by_size || !by_segs)
		return by_size ? by_size : by_segs;
	return by_size < by_segs ? by_size : by_segs;
}

static uint32_t sysfs_u32(const char *path)
{
	unsigned int v = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	if (fscanf(f, "%u", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/* @f's queue limits (a partition: its disk's) if it is blk-mq; else 0 */
static void bdev_limits(const struct file_slot *f, uint32_t *kb, uint32_t *segs)
{
	static const char *const up[] = { "", "../" };
	char path[128];
	struct stat st;

	*kb = *segs = 0;
	if (fstat(f->fd, &st) < 0)
		return;
	for (unsigned int i = 0; i < 2 && !*kb; i++) {
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/%smq", major(st.st_rdev),
			 minor(st.st_rdev), up[i]);
		if (access(path, F_OK))
			continue;
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/%squeue/max_sectors_kb",
			 major(st.st_rdev), minor(st.st_rdev), up[i]);
		*kb = sysfs_u32(path);
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/%squeue/max_segments",
			 major(st.st_rdev), minor(st.st_rdev), up[i]);
		*segs = sysfs_u32(path);
	}
}

/* the largest request @bp makes of each source (@rmax) and destination (@wmax) */
static void largest_requests(const struct block_plan *bp, uint32_t *rmax, uint32_t *wmax)
{
	for (int i = 0; i < bp->nr_reads; i++)
		if (bp->reads[i].io_len > rmax[bp->reads[i].file])
			rmax[bp->reads[i].file] = bp->reads[i].io_len;
	for (int i = 0; i < bp->nr_writes; i++)
		if (bp->writes[i].io_len > wmax[bp->writes[i].file])
			wmax[bp->writes[i].file] = bp->writes[i].io_len;
}

int files_split_note(const struct file_set *fs, const struct plan *pl, char *msg, size_t len)
{
	uint32_t rmax[CONFIG_MAX_FILES] = { 0 }, wmax[CONFIG_MAX_FILES] = { 0 };
	uint32_t page = sysconf(_SC_PAGESIZE);
	struct block_plan bp;

	if (!fs->cfg->s.direct || !pl->nr_blocks || block_plan_alloc(pl, &bp))
		return 0;
	/* the first block is a whole one, or the only one */
	if (!plan_block(pl, 0, &bp))
		largest_requests(&bp, rmax, wmax);
	block_plan_free(&bp);
	for (int i = 0; i < fs->nr_src + fs->nr_dst; i++) {
		bool src = i < fs->nr_src;
		const struct file_slot *f = src ? &fs->src[i] : &fs->dst[i - fs->nr_src];
		uint32_t req = src ? rmax[i] : wmax[i - fs->nr_src], kb, segs;
		uint64_t max;

		if (!f->is_bdev)
			continue;
		bdev_limits(f, &kb, &segs);
		max = unsplit_bytes(kb, segs, page);
		if (!max || req <= max)
			continue;
		snprintf(msg, len, "%s takes at most %llu KiB per request unsplit (max_sectors_kb "
			 "%u, max_segments %u of %u-byte pages), and this pipeline %s it in %u KiB: "
			 "each of those is split, which fails io_uring's non-blocking attempt and "
			 "goes to an io-wq worker; a block_size (or stripe_unit) that keeps "
			 "requests at %llu KiB or less avoids that",
			 f->path, (unsigned long long)(max >> 10), kb, segs, page,
			 src ? "reads" : "writes", req >> 10, (unsigned long long)(max >> 10));
		return 1;
	}
	return 0;
}
