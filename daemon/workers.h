/* SPDX-License-Identifier: MIT */
#ifndef IOU_WORKERS_H
#define IOU_WORKERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "pipeline.h"
#include "status.h"

/* a pipeline's thread, as the main thread sees it */
struct worker {
	struct worker *next;
	struct pipeline_config cfg;	/* its own copy: reloads free the old config */
	struct pipeline_status status;
	struct run_env env;
	_Atomic bool stop;
	_Atomic bool exited;
	int wake_fd;			/* eventfd: wakes the pipeline's ring on stop */
	pthread_t thread;
	bool joinable;
	int result;
	bool reaped;			/* exit logged and counted */
	/* for MiB/s */
	uint64_t rate_bytes;
	uint64_t rate_ns;
	double rate_bps;
};

struct workers {
	struct worker *list;		/* newest first */
	int failed;			/* pipelines that ended failed */
	int stopped;			/* pipelines stopped before their end */
};

/* a thread running @pc, with @base's state dir, probe and main eventfd */
int worker_start(struct workers *ws, const struct pipeline_config *pc,
		 const struct run_env *base);
/* ask it to drain and checkpoint; it wakes from io_uring_enter() */
void worker_stop(struct worker *w);
/* join it (if still running) and free it */
void worker_free(struct worker *w);
struct worker *worker_find(struct workers *ws, const char *name);
void worker_unlink(struct workers *ws, struct worker *w);
/*
 * A pipeline that a reload adds may collide with one still running under an
 * older config (changed, or removed and draining): 1 and why, or 0.
 */
int worker_conflict(struct workers *ws, const struct pipeline_config *pc, char *msg,
		    size_t len);
/* join the threads that ended, counting failed and stopped ones once */
void workers_reap(struct workers *ws);
bool workers_all_exited(const struct workers *ws);
bool workers_all_set_up(const struct workers *ws);
/* each one's MiB/s, smoothed over about a second */
void workers_update_rates(struct workers *ws);
/* what the status file shows of @w */
void worker_status_entry(struct worker *w, struct status_entry *e);

#endif
