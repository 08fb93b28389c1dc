/* SPDX-License-Identifier: MIT */
#ifndef IOU_UBLK_MIRROR_H
#define IOU_UBLK_MIRROR_H

/*
 * A mirror's memory of its members, as md's superblock and dm-raid1's log
 * keep it: which member is stale, recorded durably in
 * STATE_DIR/device-NAME.mirror before the write that makes it stale is
 * acknowledged; and the resync that brings a stale member (or every member
 * but the first of a new mirror) back from an in-sync one, in chunks, while
 * the device serves.
 *
 * A chunk is copied inside a window that the queues keep writes out of:
 * the resync thread opens the window, every queue defers new writes into it
 * and says when the writes it had there have completed, then the chunk is
 * read from the source and written to the stale members, and the window
 * moves on. Writes below the window go to the stale members too, writes
 * above it do not (the copy brings them); reads go to in-sync members only.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"

struct ublk_dev;

struct ublk_mirror {
	char *path;			/* the record; NULL: no state_dir, nothing kept */
	pthread_mutex_t lock;		/* the record and the fields below it */
	bool stale[CONFIG_MAX_FILES];	/* as recorded */
	uint64_t synced[CONFIG_MAX_FILES];	/* stale: bytes from 0 already copied */
	_Atomic bool syncing[CONFIG_MAX_FILES];	/* written below sync_pos, never read */
	_Atomic uint64_t sync_pos;	/* the resync has copied [0, sync_pos) */
	_Atomic uint64_t win_seq;	/* the window [win_lo, win_hi); lo == hi: none */
	_Atomic uint64_t win_lo, win_hi;
	_Atomic bool stop;
	_Atomic int source;		/* resync: the member read; -1 when none runs */
	pthread_t thread;
	bool running;
};

/*
 * Before the device starts: read the record (a new mirror, or a member new
 * to it, is stale but for the first member of a new one), mark its stale
 * members failed, write the record back. 0 or -errno (@msg).
 */
int ublk_mirror_open(struct ublk_dev *d, const char *state_dir, char *msg, size_t len);
/* member @m failed: recorded stale, durably, before it is marked failed */
void ublk_mirror_member_failed(struct ublk_dev *d, int m);
/* resync the failed members from an in-sync one, on a thread; no-op if none or running */
void ublk_mirror_resync(struct ublk_dev *d);
/* end the resync (a chunk in flight finishes), close the window */
void ublk_mirror_stop(struct ublk_dev *d);
void ublk_mirror_close(struct ublk_dev *d);
/*
 * The window over [@lo, @hi) the queues keep writes out of (lo == hi: none):
 * its sequence number; acked once no queue has a write left in it. For the
 * resync here and the scrub (ublk_scrub.c), never both at once.
 */
uint64_t ublk_mirror_window(struct ublk_dev *d, uint64_t lo, uint64_t hi);
bool ublk_mirror_window_acked(struct ublk_dev *d, uint64_t seq);
/* true while a resync runs; @done and @total: its progress in bytes */
bool ublk_mirror_progress(struct ublk_dev *d, uint64_t *done, uint64_t *total);

/*
 * The mirror's I/O policy, for the queues: the leg a read goes to (the
 * first healthy one, from the next turn under read_policy = round-robin;
 * *@rr is the queue's turn), -1 when none is left; the leg a failed
 * request of @op is retried on (reads only: a write went to every leg);
 * and whether a request of @op that @ok legs took stands (a write or flush
 * stands on one, the failed legs being marked stale first).
 */
int ublk_mirror_read_leg(struct ublk_dev *d, uint64_t *rr);
int ublk_mirror_retry_leg(struct ublk_dev *d, int op, uint64_t *rr);
bool ublk_mirror_stands(const struct ublk_dev *d, int op, unsigned int ok);

#endif
