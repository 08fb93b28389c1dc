// SPDX-License-Identifier: MIT
/*
 * LD_PRELOAD shim for test_daemon: fsync()/fdatasync() of a file whose path
 * contains $IOU_FAIL_FSYNC_PATH fail with EIO, the first $IOU_FAIL_FSYNC_COUNT
 * times (default 1) after $IOU_FAIL_FSYNC_SKIP (default 0) that pass, as
 * after a lost writeback: the kernel reports such an error once per open
 * file, and the next fsync succeeds.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int left = -1, skip;

static int should_fail(int fd)
{
	const char *want = getenv("IOU_FAIL_FSYNC_PATH");
	char link[64], path[4096];
	ssize_t n;

	if (!want)
		return 0;
	if (left < 0) {
		left = getenv("IOU_FAIL_FSYNC_COUNT") ? atoi(getenv("IOU_FAIL_FSYNC_COUNT")) : 1;
		skip = getenv("IOU_FAIL_FSYNC_SKIP") ? atoi(getenv("IOU_FAIL_FSYNC_SKIP")) : 0;
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return 0;
	path[n] = '\0';
	if (!strstr(path, want) || left == 0)
		return 0;
	if (skip > 0) {
		skip--;
		return 0;
	}
	left--;
	return 1;
}

int fsync(int fd)
{
	int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fsync");

	if (should_fail(fd)) {
		errno = EIO;
		return -1;
	}
	return real(fd);
}

int fdatasync(int fd)
{
	int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");

	if (should_fail(fd)) {
		errno = EIO;
		return -1;
	}
	return real(fd);
}
