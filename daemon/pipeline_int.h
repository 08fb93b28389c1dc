/* SPDX-License-Identifier: MIT */
#ifndef IOU_PIPELINE_INT_H
#define IOU_PIPELINE_INT_H

/*
 * Inside one pipeline: what pipeline_setup.c (setup), pipeline.c (finish,
 * retry), chain.c (a block's requests and their judging), resume.c (the
 * resume decision and checkpoints) and driver.c (the generic ring loop)
 * share. Not for engines or the daemon: they use pipeline.h.
 */
#include <stdbool.h>
#include <stdint.h>

#include "pipeline.h"


#define WAIT_TIMEOUT_MS	1000	/* heartbeat for the watchdog while I/O is slow */
#define CKPT_MAX_NS	(5ULL * 1000000000ULL)	/* also checkpoint at least this often */
#define WB_KICK_BYTES	(8ULL << 20)	/* start writeback of completed data this often */

/* a file check failed: report what files.c found, as the pipeline's error */
static inline int pipeline_files_failed(struct pipeline_run *pr, int err)
{
	return pipeline_fail(pr, err, "%s", pr->fs.msg);
}

/* chain.c */
int chain_build(struct pipeline_run *pr, struct chain *c, uint64_t block);
int chain_submit(struct pipeline_run *pr, struct chain *c);
void chain_release(struct pipeline_run *pr, struct chain *c);
void chain_handle_cqe(struct pipeline_run *pr, uint64_t data, int res);

/* resume.c: 1 nothing to do, 0 pp->start is where to begin */
int ckpt_decide_resume(struct pipeline_run *pr, struct plan_params *pp);
int ckpt_write(struct pipeline_run *pr, enum ckpt_state state, uint64_t done);
/* logical offset below which every block has completed */
uint64_t ckpt_watermark_now(const struct pipeline_run *pr);
/* flush the destinations up to watermark @w when a checkpoint is due (@force: now) */
void ckpt_begin(struct pipeline_run *pr, uint64_t w, bool force);
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

/* sums.c: checksum = crc32c for a pipeline run */
int sums_setup(struct pipeline_run *pr);
/* the manifest's header for this run: does the one on disk match it? */
bool sums_manifest_matches(const struct pipeline_run *pr, const struct plan_params *pp);
/*
 * the block at @logical_off, @len bytes of @buf (NULL: a hole, zeros), is
 * done: its sum into the manifest, from the kernel's sums[] when chain @slot
 * summed it there (-1: no chain)
 */
int sums_block_done(struct pipeline_run *pr, uint64_t logical_off, const void *buf, uint32_t len,
		    int slot);
void sums_close(struct pipeline_run *pr);

/* sparse.c: map the source's holes (sparse = yes), punch them, skip them */
int sparse_map_build(struct pipeline_run *pr);
void sparse_map_free(struct sparse_map *m);
int sparse_punch_dests(struct pipeline_run *pr);
bool sparse_block_is_hole(const struct pipeline_run *pr, uint64_t block);

/* driver.c: keep the chains in flight until the plan is done, a stop or an error */
int pipeline_drive_chains(struct pipeline_run *pr);

#endif
