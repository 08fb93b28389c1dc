/* SPDX-License-Identifier: MIT */
#ifndef IOU_STATUS_H
#define IOU_STATUS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "human.h"
#include "status_device.h"

#define STATUS_FILE_NAME "status"

/* one pipeline as the daemon reports it */
struct status_entry {
	char name[65];
	char state[16];
	char engine[16];
	char transform[16];
	uint64_t bytes_done;
	uint64_t bytes_total;
	uint64_t bytes_durable;
	uint64_t bytes_resumed;
	double rate_bps;
	uint64_t enters;
	uint64_t cqes;
	uint64_t bpf_ops;
	uint64_t bpf_bytes;
	uint64_t user_copied;
	uint64_t loop_steps;		/* engine = loop: loop_step program runs */
	uint64_t loop_blocks;		/* engine = loop: blocks it finished */
	uint64_t errors;
	double elapsed;
	char error[512];
	char note[512];
	/* not in the status file: `status` reads them from state_dir/NAME.verify, .scrub */
	struct status_check {
		bool known;
		uint64_t when, blocks, bytes, mismatches;
		int complete, failed;
	} verify, scrub;
};

struct status_report {
	pid_t pid;
	uint64_t started;
	uint64_t updated;
	char config[4096];
	char state_dir[4096];	/* its checkpoints (a one-shot's are not the config's) */
	struct status_entry *entries;
	int nr;
	struct status_device *devices;
	int nr_devices;
};

/*
 * Bytes memcpy'd (by IORING_OP_BPF in the kernel plus in userspace) per
 * byte moved in this run: 0 where every write goes out of the buffer its
 * bytes were read into, 1 for a gather or scatter, N for a copied N-way
 * mirror.
 */
static inline double status_copied_per_byte(uint64_t kernel, uint64_t user, uint64_t moved)
{
	return moved ? (double)(kernel + user) / (double)moved : 0.0;
}

/* atomically replace @path */
int status_write(const char *path, const struct status_report *r);
int status_read(const char *path, struct status_report *r);
void status_report_free(struct status_report *r);
/* the table `iou-offloadd status` prints */
void status_print(FILE *out, const struct status_report *r, uint64_t now);
/*
 * status --json: the same report as one JSON object, {"schema": STATUS_JSON_SCHEMA,
 * "daemon": {...}, "pipelines": [...], "devices": [...]}, each pipeline and
 * device with every key of the status file (iou-offloadd(8), STATUS FOR MACHINES)
 */
#define STATUS_JSON_SCHEMA 1
void status_print_json(FILE *out, const struct status_report *r, uint64_t now);
/* @pid is a live iou-offloadd (not a process that reused the number) */
bool status_daemon_alive(pid_t pid);

#endif
