/* SPDX-License-Identifier: MIT */
#ifndef IOU_PIPELINE_RUN_H
#define IOU_PIPELINE_RUN_H

/*
 * One run of a pipeline: what its thread holds from setup to cleanup. The
 * pipeline's own files and the engines (engine.h) read it; the daemon does
 * not (pipeline.h). Each part has one owner: the files (files.c), the plan
 * (plan.c), the holes (sparse.c), the manifest (sums.c), the chains
 * (chain.c), durability (durability.c).
 */
#include <stdbool.h>
#include <stdint.h>

#include "chain.h"
#include "config.h"
#include "durability.h"
#include "engine.h"
#include "files.h"
#include "pipeline_status.h"
#include "plan.h"
#include "ring.h"
#include "sparse.h"

struct pipeline_run {
	struct pipeline_config cfg;
	const struct run_env *env;
	const struct engine_ops *engine;
	void *engine_priv;
	struct plan plan;
	struct file_set fs;		/* the sources and destinations, open */
	struct sparse_map sparse;
	int sums_fd;			/* checksum = crc32c: the manifest (checksum.h); -1 */
	bool sums_kernel;		/* summed by IOU_OP_ID_SUM in the chain (bpf engine) */
	int sums_base;			/* its entries of the programs' sums[], one a chain */
	uint64_t sums_in_kernel, sums_in_user;	/* blocks summed each way, for the log */
	struct ring ring;
	struct ring_mem mem;
	bool buffers_reused;		/* mem came from env->pool */
	struct chain *chains;
	int nr_chains;
	int inflight_chains;
	uint64_t next_block;
	uint64_t failed_off;		/* logical offset of the first failed block, or UINT64_MAX */
	int error;			/* first error: the pipeline stops */
	struct durability dur;		/* checkpoints, flushes, where it resumes */
	bool wake_armed;
	uint64_t bpf_bytes;		/* this run's IORING_OP_BPF bytes, vs. the program's count */
	uint64_t reported_off;		/* logical offset of the block the error names */
	/* request failures after the first: logged as one line per range */
	uint64_t fallout_count, fallout_lo, fallout_hi;
	uint64_t wake_buf;
	char msg[512];			/* the error message for status and log */
};

/*
 * What a run offers its engine, besides its fields: the one error rule
 * (pipeline_status.c) and, for engines with their own driver, checkpoints
 * (durability.c).
 */

/* the first error of a run is the one recorded: set pr->msg, log it, return @err */
int pipeline_fail(struct pipeline_run *pr, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Record @done logical bytes as durable (the caller has flushed them) in
 * state @state; 0 or -errno (logged). Safe from the engine's own threads:
 * the one way they change pipeline state.
 */
int pipeline_checkpoint(struct pipeline_run *pr, enum ckpt_state state, uint64_t done);

#endif
