/* SPDX-License-Identifier: MIT */
#ifndef IOU_UBLK_DIRTY_H
#define IOU_UBLK_DIRTY_H

/*
 * integrity = crc32c: the dirty-region map, after dm-integrity's bitmap
 * mode. A region is marked dirty, durably, before a write into it goes to
 * the members; it is cleared lazily, at a flush, once every write into it
 * completed before the flush began (so the flush made their data and sums
 * durable) and none came since, and it has been quiet for a while (a hot
 * region stays dirty instead of costing a durable mark per flush). At
 * start the dirty regions' sums are taken again from the data: after a
 * crash, data and sums can disagree only there.
 *
 * Pure logic, no I/O, no locking (ublk_sums.c holds the device's lock and
 * writes the map): unit-tested on the host (test_ublk_integrity.c).
 */
#include <stdbool.h>
#include <stdint.h>

/* 1 MiB: a first write into a clean region costs one durable mark */
#define UBLK_REGION_SHIFT	20
#define UBLK_REGION_SIZE	(1u << UBLK_REGION_SHIFT)
/* ms a region must have had no write before a flush may clear it */
#define UBLK_CLEAN_DELAY_MS	5000

struct ublk_dirty {
	uint64_t nr;		/* regions */
	uint8_t *map;		/* 1: dirty, as the file has it (or is about to) */
	uint32_t *inflight;	/* writes started and not completed */
	uint32_t *cand;		/* the flush that may clear it (its generation), 0: none */
	uint64_t *last;		/* ms of its last write's start; UINT64_MAX: keep dirty */
	uint32_t gen;		/* of the last flush begun */
};

int ublk_dirty_init(struct ublk_dirty *m, uint64_t size);
void ublk_dirty_free(struct ublk_dirty *m);
/* the regions [*@lo, *@hi) the device range [@off, @off + @len) touches */
void ublk_dirty_span(uint64_t off, uint64_t len, uint64_t *lo, uint64_t *hi);
/*
 * A write into [@off, @off + @len) starts at @now ms: true when a region
 * became dirty, which the file must hold before the write goes out.
 */
bool ublk_dirty_start(struct ublk_dirty *m, uint64_t off, uint64_t len, uint64_t now);
/* ...and completed; @ok false: what it left is unknown, the region stays dirty */
void ublk_dirty_end(struct ublk_dirty *m, uint64_t off, uint64_t len, bool ok);
/* a write into the range is in flight (a read that disagrees may have raced it) */
bool ublk_dirty_busy(const struct ublk_dirty *m, uint64_t off, uint64_t len);
/* a flush begins at @now: its generation, which marks the regions it may clear */
uint32_t ublk_dirty_flush_begin(struct ublk_dirty *m, uint64_t now);
/* flush @gen made its data and sums durable: the regions cleared, how many */
uint64_t ublk_dirty_flush_end(struct ublk_dirty *m, uint32_t gen);
/* regions dirty */
uint64_t ublk_dirty_count(const struct ublk_dirty *m);

#endif
