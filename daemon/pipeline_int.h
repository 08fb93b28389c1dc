/* SPDX-License-Identifier: MIT */
#ifndef IOU_PIPELINE_INT_H
#define IOU_PIPELINE_INT_H

/*
 * Inside one pipeline: what pipeline_setup.c (setup), pipeline.c (finish,
 * retry), chain.c, durability.c, sums.c, sparse.c and driver.c (the generic
 * ring loop) share. Not for engines (engine.h, pipeline_run.h) or the
 * daemon (pipeline.h).
 */
#include <stdbool.h>
#include <stdint.h>

#include "chain.h"
#include "durability.h"
#include "engine.h"
#include "pipeline.h"
#include "pipeline_run.h"
#include "sparse.h"
#include "sums.h"

#define WAIT_TIMEOUT_MS	1000	/* heartbeat for the watchdog while I/O is slow */
#define CKPT_MAX_NS	(5ULL * 1000000000ULL)	/* also checkpoint at least this often */
#define WB_KICK_BYTES	(8ULL << 20)	/* start writeback of completed data this often */

/* a file check failed: report what files.c found, as the pipeline's error */
static inline int pipeline_files_failed(struct pipeline_run *pr, int err)
{
	return pipeline_fail(pr, err, "%s", pr->fs.msg);
}

/* steps of pipeline_run() (pipeline_setup.c, pipeline.c) */
int pipeline_prepare(struct pipeline_run *pr, const struct pipeline_config *pc,
		     const struct run_env *env);
int pipeline_execute(struct pipeline_run *pr);
void pipeline_cleanup(struct pipeline_run *pr);
/* --check-config --open's part (pipeline_setup.c): open, plan, check; no I/O */
int pipeline_check_open(struct pipeline_run *pr, const struct pipeline_config *pc,
			const struct run_env *env);
/* bytes of fixed buffers the run of a checked pipeline registers (locked memory) */
uint64_t pipeline_buffer_bytes(const struct pipeline_run *pr);

/* driver.c: keep the chains in flight until the plan is done, a stop or an error */
int pipeline_drive_chains(struct pipeline_run *pr);

#endif
