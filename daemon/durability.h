/* SPDX-License-Identifier: MIT */
#ifndef IOU_DURABILITY_H
#define IOU_DURABILITY_H

/*
 * What a run records as durable, and when (durability.c): where it resumes,
 * the flushes of completed writes, the checkpoint records written through
 * the ring, and their pacing. Its state is one member of the run
 * (pipeline_run.dur); the record format itself is checkpoint.c's.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "checkpoint.h"
#include "kv.h"

struct pipeline_run;
struct plan_params;

struct durability {
	pthread_mutex_t lock;		/* ckpt, durable: an engine's thread may checkpoint */
	struct checkpoint ckpt;
	uint64_t watermark;		/* durable once the fsyncs in flight finish */
	int fsyncs;			/* fsync CQEs outstanding */
	bool sync_failed;		/* an fsync failed: what it covered may be lost */
	bool dests_settled;		/* wound down: all written, flushed, identified */
	uint64_t synced;		/* flushed by the last checkpoint, once it is recorded */
	uint64_t flushed;		/* flushed by the last flush that completed */
	uint64_t wb_started;		/* logical bytes whose writeback was started */
	int wb_inflight;		/* sync_file_range CQEs outstanding */
	uint64_t durable;
	uint64_t last_ns;		/* when the last checkpoint was recorded */
	/* the record of a flushed checkpoint, written through the ring */
	struct {
		struct kv_pending kv;
		char buf[CKPT_RECORD_MAX + 1];
		int len;
		uint64_t done;		/* what it records */
		int inflight;		/* its four steps not yet completed */
		bool failed;
		bool in_place;		/* rewritten in place (checkpoint_open_in_place()) */
		bool committing;	/* its commit (rename or write, then a sync) is submitted */
	} rec;
	uint64_t flush_start_ns;	/* when the checkpoint's fsyncs in flight began */
	/* pacing (ckpt_due()): what a checkpoint costs, how fast the copy runs */
	struct {
		uint64_t cost_ns;	/* flush start to record end, smoothed; 0: not timed */
		double rate;		/* bytes a second completed, smoothed; 0: unknown */
		uint64_t w, t_ns;	/* watermark and time at the last flush start */
		uint64_t flush_ns;	/* the start of the flush being timed; 0: none */
	} pace;
	bool resumed;
};

/* 1 nothing to do, 0 pp->start is where to begin */
int ckpt_decide_resume(struct pipeline_run *pr, struct plan_params *pp);
int ckpt_write(struct pipeline_run *pr, enum ckpt_state state, uint64_t done);
/* logical offset below which every block has completed */
uint64_t ckpt_watermark_now(const struct pipeline_run *pr);
/* flush the destinations up to watermark @w when a checkpoint is due (@force: now) */
void ckpt_begin(struct pipeline_run *pr, uint64_t w, bool force);
/* skipping holes: a checkpoint through them is due now (by time, none in flight) */
bool ckpt_hole_due(const struct pipeline_run *pr);
/* skipping holes: give the ring loop back, for that checkpoint or its completions */
bool ckpt_hole_yield(const struct pipeline_run *pr);
void ckpt_handle_fsync_cqe(struct pipeline_run *pr, uint64_t data, int res);
void ckpt_handle_record_cqe(struct pipeline_run *pr, uint64_t data, int res);
/* a record cut off (the ring broke, or the pipeline failed): close it, drop its tmp file */
void ckpt_record_drop(struct pipeline_run *pr);
/* start writeback of what completed since the last call, every WB_KICK_BYTES */
void ckpt_start_writeback(struct pipeline_run *pr, uint64_t w);
void ckpt_handle_writeback_cqe(struct pipeline_run *pr, uint64_t data, int res);
int ckpt_sync_dests(struct pipeline_run *pr, bool full);
/* stopped or failed: record what is durable, never more */
int ckpt_wind_down(struct pipeline_run *pr, enum ckpt_state state);

#endif
