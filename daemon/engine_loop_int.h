/* SPDX-License-Identifier: MIT */
#ifndef IOU_ENGINE_LOOP_INT_H
#define IOU_ENGINE_LOOP_INT_H

/*
 * What the loop engine (engine_loop.c: attach, drive, detach) and its
 * monitor thread (loop_monitor.c) share.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "bpf_loader.h"
#include "loop_templates.h"
#include "pipeline_run.h"

struct loop_engine {
	struct pipeline_run *pr;
	uint8_t *region;
	size_t region_len;
	struct iou_loop_ctl *ctl;
	uint8_t *meta;
	size_t meta_stride;
	uint32_t nr_tmpl;
	int max_ops;
	struct slot_bufs slots[LOOP_MAX_SLOTS];
	struct loop_feed feed;
	bool feed_ok;
	int mon_fd, kick_fd;
	struct bpf_ops_handle *ops;
	struct bpf_loop_handle *loop;
	pthread_t monitor;
	bool monitor_running;
	_Atomic bool quit;
	_Atomic int fill_err;
	uint64_t ckpt_recorded;		/* durable blocks the last checkpoint holds */
	uint64_t bpf_ops_base, bpf_bytes_base, cqes_base, steps_base, blocks_base;
};

static inline uint64_t rd64(const __u64 *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline uint32_t rd32(const __u32 *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline uint64_t block_bytes(const struct pipeline_run *pr, uint64_t blocks)
{
	return blocks >= pr->plan.nr_blocks ? pr->plan.p.length :
	       plan_block_start(&pr->plan, blocks);
}

/* the monitor thread (loop_monitor.c) */
void loop_heartbeat(struct pipeline_status *st, uint64_t t);
void loop_kick(struct loop_engine *le);
/* progress and counters into the status; a checkpoint once more is durable */
void loop_mirror(struct loop_engine *le, bool checkpoint);
int monitor_start(struct loop_engine *le);
void monitor_stop(struct loop_engine *le);

#endif
