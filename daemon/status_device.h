/* SPDX-License-Identifier: MIT */
#ifndef IOU_STATUS_DEVICE_H
#define IOU_STATUS_DEVICE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* one [device NAME] as the daemon reports it */
struct status_device {
	char name[65];
	char state[16];			/* running, resyncing, degraded, failed */
	char path[32];			/* /dev/ublkbN */
	char target[16];
	char engine[16];
	char data_path[16];		/* zero-copy, copy */
	uint64_t size;
	uint64_t reads, writes, bytes_read, bytes_written, errors;
	uint32_t in_flight;
	uint64_t bpf_ops, bpf_bytes, user_copied;	/* stripe gathers */
	uint64_t driver_copied;		/* copying path: bytes ublk copied through tag buffers */
	uint64_t sums;			/* integrity: 4 KiB blocks summed by IORING_OP_BPF */
	char integrity[8];		/* crc32c, or empty: none */
	uint64_t mismatches;		/* integrity: blocks read that disagreed with their sum */
	uint64_t repairs;		/* mirror: of them rewritten from the other leg */
	uint64_t recomputed;		/* dirty regions whose sums were taken anew at start */
	uint64_t filled;		/* zero copy: read bytes copied from staging into the pages */
	double iops, rate_bps;
	int members, degraded;
	uint64_t resync_done, resync_total;	/* a mirror's resync: bytes copied of */
	uint64_t scrub_done;		/* a mirror's scrub running: bytes compared */
	/* its last scrub (STATE_DIR/NAME.scrub), filled by `status`, not in the file */
	struct {
		bool known;
		uint64_t when, blocks, bytes, mismatches, repaired;
		int legs, complete, failed;
	} last_scrub;
	char layout[1100];		/* its members in order, and the layout's keys */
	char error[512];
};

/* the device lines of the status file, after the pipelines' */
void status_devices_write(FILE *f, const struct status_device *d, int nr);
/* a key of the file: 1 if it was a device's, 0 if not, -ENOMEM */
int status_device_key(struct status_device **d, int *nr, const char *key, const char *v);
/* the devices as JSON objects, comma-separated (status --json) */
void status_devices_json(FILE *f, const struct status_device *d, int nr);
/* the devices' part of the `iou-offloadd status` table */
void status_devices_print(FILE *out, const struct status_device *d, int nr, bool alive);

#endif
