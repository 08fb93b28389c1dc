// SPDX-License-Identifier: MIT
#include <errno.h>
#include <unistd.h>

#include "full_io.h"

int full_pread(int fd, void *buf, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pread(fd, buf, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -ENODATA;
		buf = (char *)buf + n;
		len -= n;
		off += n;
	}
	return 0;
}

int full_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, buf, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf = (const char *)buf + n;
		len -= n;
		off += n;
	}
	return 0;
}
