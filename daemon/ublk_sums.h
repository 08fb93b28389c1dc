/* SPDX-License-Identifier: MIT */
#ifndef IOU_UBLK_SUMS_H
#define IOU_UBLK_SUMS_H

/*
 * integrity = crc32c on a device: the CRC32C (RFC 3720) of every 4 KiB
 * block (the device's logical block size then), taken in the kernel from
 * the request's own pages (IORING_OP_BPF, IOU_OP_ID_SUM on a KFIXED
 * descriptor: buffer <tag>, the block's offset in the request): before a
 * write's data goes to the members, and after a read's came back, where
 * it is checked against the sum kept (ublk_queue.c). This keeps the sums:
 * in memory, and in STATE_DIR/device-NAME.integrity (ublk_meta.h), with
 * the dirty-region map (ublk_dirty.h) that says where they may disagree
 * with the data after a crash.
 *
 * Durability follows the device's own: a flush (or a FUA write) makes the
 * sums of what it covers durable, the file's changed pages written and
 * fdatasynced beside the members' fdatasync; between flushes the sums in
 * the file may be stale, but only in regions the map holds dirty, which
 * were made durable before their writes went out and whose sums are taken
 * again from the data at the next start.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ublk_dirty.h"
#include "ublk_meta.h"

#define UBLK_SUM_BLOCK	4096u

struct ublk_dev;

struct ublk_sums {
	pthread_mutex_t lock;		/* everything below */
	int fd;				/* the metadata file; -1: none (no state_dir) */
	char *path;
	struct ublk_meta_layout l;
	uint32_t *crc;			/* per block */
	uint32_t *prev;			/* the sum before the last write's (a read racing it) */
	uint8_t *known;			/* 0: unknown (a failed write), not checked */
	uint8_t *page_dirty;		/* per 1024 sums: not yet in the file */
	struct ublk_dirty dirty;
	bool ready;			/* recovered: what it holds is the device's */
};

/* the whole blocks of the range [@off, @off + @len): the first and how many */
void ublk_sums_span(uint64_t off, uint32_t len, uint64_t *first, uint32_t *nr);

/*
 * The device's sums: the file read, its dirty regions' sums taken again
 * from the members (a mirror's in-sync legs made to agree there first);
 * -errno with @msg where the kernel cannot take the sums or the file fails.
 */
int ublk_sums_open(struct ublk_dev *d, char *msg, size_t len);
/* blocks [@first, @first + @nr) written with these sums (@ok false: unknown) */
void ublk_sums_record(struct ublk_dev *d, uint64_t first, const uint32_t *crc, uint32_t nr,
		      bool ok);
/*
 * The sum kept for block @b, and the one before the last write (a read
 * racing a write may see either): false when there is none to check against
 */
bool ublk_sums_expected(struct ublk_dev *d, uint64_t b, uint32_t *crc, uint32_t *prev);
/* a write into [@off, @off + @len) is about to go out: its regions durably dirty first */
int ublk_sums_write_begin(struct ublk_dev *d, uint64_t off, uint32_t len);
void ublk_sums_write_end(struct ublk_dev *d, uint64_t off, uint32_t len, bool ok);
/* a write into the range is in flight */
bool ublk_sums_busy(struct ublk_dev *d, uint64_t off, uint32_t len);
/* a flush: the sums so far durable (*@gen for the end), then regions it may clear */
int ublk_sums_flush_begin(struct ublk_dev *d, uint32_t *gen);
void ublk_sums_flush_end(struct ublk_dev *d, uint32_t gen);
/* a FUA write: the sums so far durable */
int ublk_sums_sync(struct ublk_dev *d);
/* the file written whole and its regions clean (what completed is durable); freed */
void ublk_sums_close(struct ublk_dev *d);

#endif
