/* SPDX-License-Identifier: MIT */
#ifndef IOU_FULL_IO_H
#define IOU_FULL_IO_H

/*
 * A whole pread/pwrite at an offset, for the daemon's own synchronous I/O
 * beside the rings (a device's sums file, a mirror's resync and scrub):
 * retried on EINTR and on a short transfer; 0, or -errno, or -ENODATA when
 * a read meets the end of the file (-EIO when a write makes no progress).
 */
#include <stddef.h>
#include <stdint.h>

int full_pread(int fd, void *buf, size_t len, uint64_t off);
int full_pwrite(int fd, const void *buf, size_t len, uint64_t off);

#endif
