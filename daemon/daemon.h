/* SPDX-License-Identifier: MIT */
#ifndef IOU_DAEMON_H
#define IOU_DAEMON_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "bufpool.h"
#include "config.h"
#include "devices.h"
#include "engine.h"
#include "pipeline.h"
#include "workers.h"

/*
 * Exit status of iou-offloadd, part of its command-line contract (--help and
 * the man page list it): a script can tell a finished copy from a partial one.
 */
enum daemon_exit {
	DAEMON_EXIT_OK = 0,		/* every pipeline finished, or had nothing to do */
	DAEMON_EXIT_FAILED = 1,		/* a pipeline failed, or the daemon could not start */
	DAEMON_EXIT_USAGE = 2,		/* bad command line */
	DAEMON_EXIT_STOPPED = 3,	/* --once: stopped (SIGTERM, SIGINT) before the end */
	DAEMON_EXIT_CONFIG = 78,	/* the configuration is invalid (EX_CONFIG) */
};

struct daemon_options {
	const char *config_path;
	const char *config_text;	/* a one-shot verb's pipeline (config_path names it) */
	const char *const *config_origins;	/* its lines': the options they came from */
	int nr_config_origins;
	char dir_suffix[64];		/* its own state: under state_dir/oneshot, runtime_dir/oneshot */
	bool verify_source;		/* verify COPY...: the one-shot's --source */
	bool once;			/* exit when every pipeline has ended */
	bool log_level_set;
	enum log_level log_level;
};

/* the daemon's one context */
struct daemon {
	struct daemon_options opts;
	int dir_lock[2];		/* state_dir, runtime_dir: held while it runs */
	struct daemon_config cfg;
	struct engine_probe probe;
	struct workers workers;		/* one per pipeline, newest first */
	struct device_set devices;	/* [device NAME]s being served */
	struct bufpool pool;		/* fixed buffers kept between pipeline runs */
	int sigfd;
	int event_fd;			/* eventfd: pipelines wake the main thread */
	uint64_t watchdog_usec;
	uint64_t started;		/* unix seconds */
	uint64_t last_watchdog_ns;
	uint64_t reloads;		/* SIGHUPs handled: the reload answer's seq */
	char status_path[4200];
	char config_file[4200];		/* absolute: what the status file and the lock name */
	bool stopping;
	bool tty;			/* stderr is a terminal: --once draws a progress line */
	bool progress_shown;
	uint64_t last_progress_ns;	/* last progress log line */
};

/* -l/--log-level @arg into @opts: 0, or a message and DAEMON_EXIT_USAGE */
int daemon_options_log_level(struct daemon_options *opts, const char *arg);

/* the configuration @opts names: its file, or a one-shot's text (oneshot.c) */
int daemon_config_load(const struct daemon_options *opts, struct daemon_config *cfg,
		       struct config_errors *errs);

/* the whole life of the daemon: an enum daemon_exit for main() */
int daemon_main(const struct daemon_options *opts);

#endif
