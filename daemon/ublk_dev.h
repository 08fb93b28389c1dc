/* SPDX-License-Identifier: MIT */
#ifndef IOU_UBLK_DEV_H
#define IOU_UBLK_DEV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "ublk_ctrl.h"
#include "ublk_map.h"
#include "ublk_mirror.h"
#include "ublk_scrub.h"

struct ublk_queue;
struct ublk_sums;

/* where a request's data is when the daemon gets it (ublk_dev.c picks) */
enum ublk_zc {
	UBLK_ZC_NONE,		/* copied by the driver into the tag's buffer */
	UBLK_ZC_AUTO,		/* its pages, registered by the driver at the tag's index */
	UBLK_ZC_MANUAL,		/* its pages, registered by the queue (REGISTER_IO_BUF) */
};

/* what the queue threads count, read by the main thread for status */
struct ublk_stats {
	_Atomic uint64_t reads, writes, flushes, discards;
	_Atomic uint64_t bytes_read, bytes_written;
	_Atomic uint64_t errors;	/* requests completed with an error */
	_Atomic uint32_t in_flight;	/* requests the daemon holds */
	_Atomic uint64_t bpf_ops, bpf_bytes;	/* gathers by IORING_OP_BPF */
	_Atomic uint64_t user_copied;	/* bytes gathered by memcpy() */
	_Atomic uint64_t driver_copied;	/* copying path: bytes ublk copied to or from tag buffers */
	_Atomic uint64_t sums;		/* integrity: 4 KiB blocks summed by IORING_OP_BPF */
	_Atomic uint64_t mismatches;	/* integrity: blocks read that disagreed with their sum */
	_Atomic uint64_t repairs;	/* mirror: of them rewritten from a leg that agreed */
	_Atomic uint64_t recomputed;	/* dirty regions whose sums were taken anew at start */
	_Atomic uint64_t filled;	/* integrity, zero copy: read bytes copied staging -> pages */
	_Atomic uint64_t member_errors[CONFIG_MAX_FILES];	/* backing requests failed, by member */
};

/* one [device NAME], served: the main thread starts and stops it */
struct ublk_dev {
	struct device_config cfg;	/* its own copy */
	struct ublk_layout layout;
	int member_fd[CONFIG_MAX_FILES];
	bool member_bdev[CONFIG_MAX_FILES];	/* a block device (discard: BLOCK_URING_CMD_DISCARD) */
	uint32_t discard_granularity;	/* 0: a member cannot discard, the device does not */
	_Atomic bool member_failed[CONFIG_MAX_FILES];	/* mirror: not read (stale) */
	struct ublk_mirror mirror;	/* mirror: stale members recorded, resync */
	struct ublk_scrub scrub;	/* mirror: `iou-offloadd scrub NAME` (ublk_scrub.h) */
	struct ublk_ctrl ctrl;
	struct ublksrv_ctrl_dev_info info;	/* as the kernel returned it */
	bool added, started;
	bool recovered;			/* taken over from a daemon that died */
	_Atomic bool handover;		/* the queues stop serving and leave the device */
	bool gather;			/* stripe_io = gather */
	uint64_t zc_flags;		/* UBLK_F_* of zero copy it is added with */
	enum ublk_zc zc;		/* as the device was added (a take-over keeps it) */
	bool use_bpf;			/* the gather runs as IORING_OP_BPF */
	char *state_dir;		/* where its id is kept for recovery */
	struct ublk_sums *sums;		/* integrity = crc32c (ublk_sums.h); NULL: none */
	int char_fd;			/* /dev/ublkcN */
	struct ublk_queue *queues;
	int nr_queues;
	struct ublk_stats stats;
	char path[32];			/* /dev/ublkbN */
};

/*
 * Open the members, add the ublk device (or take over the one a dead daemon
 * left, see ublk_recover.h), start a thread and ring per queue and start
 * the device. 0 and *@out, or -errno with the reason in @msg
 * (nothing is left behind).
 */
int ublk_dev_start(const struct device_config *dc, const char *state_dir, bool use_bpf,
		   struct ublk_dev **out, char *msg, size_t len);
/* the engine it runs under: "bpf" (gathers by IORING_OP_BPF) or "uring" (memcpy) */
const char *ublk_dev_engine(const struct ublk_dev *d);
/*
 * /dev/ublkbN held exclusively by the daemon, before it stops the device:
 * the fd (or another -errno: there is no node to hold), or -EBUSY when
 * something else holds it (mounted, a dm/md/LVM member, swap, O_EXCL).
 * Such a device is never stopped: the file system on it would lose its
 * journal, and deleting it would wait for the unmount.
 */
int ublk_dev_claim(const struct ublk_dev *d);
/*
 * Stop the device (the kernel drains what is in flight), join, delete
 * (asynchronously: nothing waits for the last opener), release @claim, free.
 */
void ublk_dev_stop(struct ublk_dev *d, int claim);
/*
 * Leave the device to the next daemon (USER_RECOVERY): the queues finish
 * the requests they have started and exit, the kernel holds what comes
 * next, and the id stays in state_dir for the take-over. Frees @d.
 */
void ublk_dev_handover(struct ublk_dev *d);
/* the data path it runs: "zero-copy" or "copy" */
const char *ublk_dev_data_path(const struct ublk_dev *d);
/* ", request buffers by ..." on zero copy (the journal's start line), else "" */
const char *ublk_dev_buffers(const struct ublk_dev *d);
/* members marked failed (a mirror's: stale, or resyncing) */
int ublk_dev_degraded(const struct ublk_dev *d);
/* wake every queue to look at the device's handover flag and the mirror's window */
void ublk_dev_wake(struct ublk_dev *d);

#endif
