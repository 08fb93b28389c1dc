// SPDX-License-Identifier: MIT
/*
 * LD_PRELOAD shim for the ublk-integrity suite: with $IOU_FAIL_QUEUE_MMAP
 * set, the mmap of a ublk queue's I/O descriptors fails with ENOMEM for
 * every queue but the first (offset > 0 on /dev/ublkcN), so a device's
 * second queue fails its setup after the first has fetched all its tags,
 * as a queue short of memory or of sums does.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int is_later_queue(int fd, off_t off)
{
	char link[64], path[64];
	ssize_t n;

	if (off <= 0 || fd < 0 || !getenv("IOU_FAIL_QUEUE_MMAP"))
		return 0;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return 0;
	path[n] = '\0';
	return !strncmp(path, "/dev/ublkc", 10);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	static void *(*real)(void *, size_t, int, int, int, off_t);

	if (is_later_queue(fd, off)) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	if (!real)
		real = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
	return real(addr, len, prot, flags, fd, off);
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap(addr, len, prot, flags, fd, off);
}
