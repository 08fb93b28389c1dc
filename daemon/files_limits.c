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
 * The plan cuts requests to what the devices take whole (max_io, plan.c).
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
void file_queue_limits(struct file_slot *f)
{
	static const char *const up[] = { "", "../" };
	char path[128];
	struct stat st;

	f->max_kb = f->max_segs = 0;
	if (!f->is_bdev || fstat(f->fd, &st) < 0)
		return;
	for (unsigned int i = 0; i < 2 && !f->max_kb; i++) {
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/%smq", major(st.st_rdev),
			 minor(st.st_rdev), up[i]);
		if (access(path, F_OK))
			continue;
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/%squeue/max_sectors_kb",
			 major(st.st_rdev), minor(st.st_rdev), up[i]);
		f->max_kb = sysfs_u32(path);
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/%squeue/max_segments",
			 major(st.st_rdev), minor(st.st_rdev), up[i]);
		f->max_segs = sysfs_u32(path);
	}
}

uint32_t files_max_io(const struct file_set *fs, uint32_t align, const struct file_slot **why)
{
	uint32_t page = sysconf(_SC_PAGESIZE);
	uint64_t best = 0;

	*why = NULL;
	if (!fs->cfg->s.direct)
		return 0;	/* the page cache writes back in its own sizes */
	for (int i = 0; i < fs->nr_src + fs->nr_dst; i++) {
		const struct file_slot *f = i < fs->nr_src ? &fs->src[i] : &fs->dst[i - fs->nr_src];
		uint64_t max = unsplit_bytes(f->max_kb, f->max_segs, page);

		if (max && (!best || max < best)) {
			best = max;
			*why = f;
		}
	}
	best -= best % (align ? align : 1);
	if (!best || best > UINT32_MAX)
		*why = NULL;
	return *why ? best : 0;
}
