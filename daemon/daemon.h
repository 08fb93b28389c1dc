/* SPDX-License-Identifier: MIT */
#ifndef IOU_DAEMON_H
#define IOU_DAEMON_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "engine.h"
#include "pipeline.h"

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

struct daemon_options {
	const char *config_path;
	bool once;			/* exit when every pipeline has ended */
	bool log_level_set;
	enum log_level log_level;
};

/* the daemon's one context */
struct daemon {
	struct daemon_options opts;
	struct daemon_config cfg;
	struct engine_probe probe;
	struct worker *workers;
	int sigfd;
	int event_fd;			/* eventfd: pipelines wake the main thread */
	uint64_t watchdog_usec;
	uint64_t started;		/* unix seconds */
	uint64_t last_watchdog_ns;
	char status_path[4200];
	bool stopping;
	int failures;			/* pipelines that ended failed */
};

/* the whole life of the daemon: exit status for main() */
int daemon_main(const struct daemon_options *opts);

#endif
