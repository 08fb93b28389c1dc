/* SPDX-License-Identifier: MIT */
#ifndef IOU_UBLK_MEMBER_H
#define IOU_UBLK_MEMBER_H

#include <stddef.h>
#include <stdint.h>

/*
 * A device's member opened as the device uses it, and held exclusively, as
 * md and dm hold theirs: a block device with O_EXCL (EBUSY while it is
 * mounted, a dm/md/LVM member, swap, or opened O_EXCL elsewhere) and an
 * open file description write lock over it all, which a pipeline's lock
 * on the same file or range also meets; a regular file with that lock.
 * Block devices whose sector fits @logical_block_size go O_DIRECT (the tag
 * buffers are page aligned); files use the page cache.
 *
 * The fd and *@size, or -errno with the reason in @msg. -EBUSY is retried
 * for @busy_wait_ms: a daemon killed a moment ago holds its members until
 * the kernel has torn its rings down.
 */
int ublk_member_open(const char *path, uint32_t logical_block_size, unsigned int busy_wait_ms,
		     uint64_t *size, char *msg, size_t len);

#endif
