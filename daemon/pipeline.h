/* SPDX-License-Identifier: MIT */
#ifndef IOU_PIPELINE_H
#define IOU_PIPELINE_H

/*
 * A pipeline as the daemon sees it (pipeline.c, pipeline_setup.c): run one
 * to its end, or check one without running it. What a run holds inside is
 * pipeline_run.h's, for the pipeline's own files and the engines.
 */
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "pipeline_status.h"

/*
 * Run @pc to completion, a stop request, or failure, with retries per its
 * settings. Returns 0 (finished, or nothing to do), -EINTR (stopped,
 * checkpoint written) or the first -errno (message in env->status).
 */
int pipeline_run(const struct pipeline_config *pc, const struct run_env *env);

/*
 * --check-config --open: open the files (nothing is created or written),
 * plan, and run every check a start would. 0, with the bytes of fixed
 * buffers a run would register (locked memory) in *@buffer_bytes; or
 * -errno with the findings in @msg, one a line (the plan's checks say
 * each, not only the first).
 */
int pipeline_check(const struct pipeline_config *pc, const struct run_env *env,
		   uint64_t *buffer_bytes, char *msg, size_t len);

#endif
