// SPDX-License-Identifier: MIT
/*
 * Room for a pipeline's destinations: what the plan still has to allocate
 * on each file system, summed over the destinations that share it, against
 * what statvfs says is free, and how large a file each holds, all before
 * the first byte moves.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "files.h"
#include "rlimits.h"
#include "log.h"
#include "human.h"

/* the directory a destination is (or will be) in, for statvfs */
static int dest_fs(const struct file_slot *f, struct statvfs *vfs, uint64_t *dev)
{
	char *copy, *dir;
	struct stat st;
	int ret = 0;

	if (!f->missing) {
		if (fstatvfs(f->fd, vfs) < 0 || fstat(f->fd, &st) < 0)
			return -errno;
		*dev = st.st_dev;
		return 0;
	}
	copy = strdup(f->path);
	if (!copy)
		return -ENOMEM;
	dir = dirname(copy);
	if (statvfs(dir, vfs) < 0 || stat(dir, &st) < 0)
		ret = -errno;
	*dev = st.st_dev;
	free(copy);
	return ret;
}

/*
 * The largest file the file system of @f's directory holds, when that is
 * less than @end: ftruncate() on an unnamed file there (O_TMPFILE: nothing
 * to see, gone at close) is refused past it with EFBIG (ext4 with 4 KiB
 * blocks: 16 TiB less a block), where the writes would only fail once the
 * copy reaches them. 0: @end fits, or it cannot be told.
 */
static uint64_t largest_file_below(const struct file_slot *f, uint64_t end)
{
	char *real = f->missing ? NULL : realpath(f->path, NULL);
	char *copy = strdup(real ? real : f->path);
	uint64_t lo = 0, hi = end;
	int fd = copy ? open(dirname(copy), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600) : -1;

	free(real);
	free(copy);
	if (fd < 0)
		return 0;
	if (ftruncate(fd, end) == 0 || errno != EFBIG)
		hi = 0;
	/* lo fits, hi does not: to a block */
	while (hi - lo > 4096) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (ftruncate(fd, mid) == 0)
			lo = mid;
		else
			hi = mid;
	}
	close(fd);
	return hi ? lo : 0;
}

/* a file that grows past 2 GiB: can its file system hold it? */
static int check_largest_file(struct file_set *fs, const struct file_slot *f, uint64_t end)
{
	const struct pipeline_config *pc = fs->cfg;
	uint64_t max;
	char m[32], o[32];

	if (end <= (2ULL << 30) || (!f->missing && f->size >= end))
		return 0;
	max = largest_file_below(f, end);
	if (!max)
		return 0;
	human_bytes(max, m, sizeof(m));
	human_bytes(pc->dest_offset, o, sizeof(o));
	/* the message leads with the key to change, for --check-config --open's line */
	if (pc->dest_offset)
		return files_fail(fs, -EFBIG, "dest_offset %" PRIu64 " (%s): destination %s "
				  "would end at byte %" PRIu64 ", past the largest file its file "
				  "system holds (%" PRIu64 " bytes, %s)", pc->dest_offset, o,
				  f->path, end, max, m);
	return files_fail(fs, -EFBIG, "destination %s would end at byte %" PRIu64 ", past "
			  "the largest file its file system holds (%" PRIu64 " bytes, %s)",
			  f->path, end, max, m);
}

static uint64_t allocated_bytes(const struct file_slot *f)
{
	struct stat st;

	if (f->missing || fstat(f->fd, &st) < 0)
		return 0;
	return (uint64_t)st.st_blocks * 512;
}

int files_check_space(struct file_set *fs, const struct plan *pl)
{
	uint64_t need[CONFIG_MAX_FILES] = { 0 }, dev[CONFIG_MAX_FILES], avail[CONFIG_MAX_FILES];
	int first[CONFIG_MAX_FILES], nr = 0;

	for (int d = 0; d < fs->nr_dst; d++) {
		const struct file_slot *f = &fs->dst[d];
		uint64_t bytes = plan_dest_bytes(pl, d), end = fs->cfg->dest_offset + bytes;
		uint64_t have, more, left, fsid = 0;
		struct statvfs vfs;
		int i, ret;

		if (f->is_bdev)
			continue;
		ret = check_largest_file(fs, f, end);
		if (ret)
			return ret;
		have = allocated_bytes(f);
		if (end <= have)
			continue;
		ret = dest_fs(f, &vfs, &fsid);
		if (ret) {
			log_debug("pipeline %s: no statvfs for %s: %s", fs->cfg->name, f->path,
				  strerror(-ret));
			continue;
		}
		/* no blocks at all (proc, sysfs): it has no space to tell of */
		if (!vfs.f_blocks)
			continue;
		/* destinations on one file system share its free space */
		for (i = 0; i < nr && dev[i] != fsid; i++)
			;
		if (i == nr) {
			dev[nr] = fsid;
			first[nr] = d;
			/*
			 * the reserved blocks are for CAP_SYS_RESOURCE, not for
			 * root as such: the unit's daemon runs as root without it
			 */
			avail[nr++] = (uint64_t)(rlimits_have_cap(RLIMITS_CAP_SYS_RESOURCE) ?
						 vfs.f_bfree : vfs.f_bavail) * vfs.f_frsize;
		}
		/*
		 * at most what it writes: a dest_offset past the end leaves a
		 * hole, a resume writes past its start only (below it, a crash
		 * in a hole leaves the destination short); and a sparse copy
		 * allocates its data only (fs->hole_bytes: past the start)
		 */
		left = bytes - plan_dest_bytes_at(&pl->p, d, pl->p.start);
		more = end - have < left ? end - have : left;
		need[i] += more > fs->hole_bytes ? more - fs->hole_bytes : 0;
	}
	for (int i = 0; i < nr; i++) {
		char n[32], a[32];

		if (need[i] <= avail[i])
			continue;
		human_bytes(need[i], n, sizeof(n));
		human_bytes(avail[i], a, sizeof(a));
		return files_fail(fs, -ENOSPC, "not enough space for destination %s%s: the "
				     "copy needs %s more, its file system has %s free",
				     fs->dst[first[i]].path,
				     fs->nr_dst > 1 ? " (and any others beside it)" : "", n, a);
	}
	return 0;
}
