// SPDX-License-Identifier: MIT
/*
 * A device's member, opened and held exclusively (ublk_member.h): used by
 * the device (ublk_dev.c) and by --check-config --open (devices.c), so that
 * both find the same member in use.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ublk_member.h"

#define BUSY_POLL_MS	20

static bool busy(int err)
{
	return err == EBUSY || err == EAGAIN || err == EACCES;
}

/* an open file description write lock over all of @fd: 0, -EBUSY, or 0 where locks are not kept */
static int member_lock(int fd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
		return 0;
	return busy(errno) ? -EBUSY : 0;
}

static int member_try(const char *path, uint32_t lbs, uint64_t *size, char *msg, size_t len)
{
	struct stat sb;
	int fd, ssz, ret;

	if (stat(path, &sb) < 0)
		goto fail_errno;
	/* O_EXCL on a block device claims it; on a file it would mean O_CREAT's */
	fd = open(path, O_RDWR | O_CLOEXEC | (S_ISBLK(sb.st_mode) ? O_EXCL : 0));
	if (fd < 0)
		goto fail_errno;
	if (fstat(fd, &sb) < 0) {
		ret = -errno;
		goto fail;
	}
	if (S_ISREG(sb.st_mode)) {
		*size = sb.st_size;
	} else if (!S_ISBLK(sb.st_mode)) {
		ret = -EINVAL;
		snprintf(msg, len, "cannot open backing %s: not a regular file or a block device",
			 path);
		goto fail_msg;
	} else if (ioctl(fd, BLKGETSIZE64, size) < 0 || ioctl(fd, BLKSSZGET, &ssz) < 0 ||
		   ((uint32_t)ssz <= lbs && fcntl(fd, F_SETFL, O_DIRECT) < 0)) {
		ret = -errno;
		goto fail;
	}
	ret = member_lock(fd);
	if (ret) {
		snprintf(msg, len, "backing %s is in use: a pipeline or another process holds a "
			 "lock on it", path);
		goto fail_msg;
	}
	return fd;
fail_errno:
	ret = -errno;
	if (ret == -EBUSY) {
		snprintf(msg, len, "backing %s is in use (EBUSY): mounted, a member of a dm, md "
			 "or LVM device, swap, or held by another device (see its holders in "
			 "/sys/block); members are held exclusively", path);
		return ret;
	}
	snprintf(msg, len, "cannot open backing %s: %s", path, strerror(-ret));
	return ret;
fail:
	snprintf(msg, len, "cannot open backing %s: %s", path, strerror(-ret));
fail_msg:
	close(fd);
	return ret;
}

int ublk_member_open(const char *path, uint32_t logical_block_size, unsigned int busy_wait_ms,
		     uint64_t *size, char *msg, size_t len)
{
	int fd;

	for (unsigned int waited = 0;; waited += BUSY_POLL_MS) {
		fd = member_try(path, logical_block_size, size, msg, len);
		if (fd != -EBUSY || waited >= busy_wait_ms)
			return fd;
		usleep(BUSY_POLL_MS * 1000);
	}
}
