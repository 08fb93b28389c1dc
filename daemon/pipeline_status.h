/* SPDX-License-Identifier: MIT */
#ifndef IOU_PIPELINE_STATUS_H
#define IOU_PIPELINE_STATUS_H

/*
 * What a pipeline's thread and the daemon's main thread share
 * (pipeline_status.c): the state and counters the main thread reports, and
 * the environment the daemon hands a run. Nothing of a run's insides.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bufpool;
struct engine_probe;

enum pipeline_state {
	PIPELINE_PENDING,	/* thread started, not set up yet */
	PIPELINE_RUNNING,
	PIPELINE_FINISHED,
	PIPELINE_STOPPED,	/* stopped on request, checkpoint written */
	PIPELINE_FAILED,
	PIPELINE_RETRYING,	/* failed, waiting retry_delay before resuming */
};

const char *pipeline_state_to_string(enum pipeline_state s);

/* counters are atomics, the strings are under the mutex */
struct pipeline_status {
	_Atomic int state;
	_Atomic bool setup_done;	/* ring, buffers, ops ready (or failed) */
	_Atomic uint64_t bytes_total;
	_Atomic uint64_t bytes_done;	/* completed, from logical 0 */
	_Atomic uint64_t bytes_durable;	/* checkpointed */
	_Atomic uint64_t bytes_resumed;	/* where this run started */
	_Atomic uint64_t enters;
	_Atomic uint64_t cqes;		/* completions the daemon reaped */
	_Atomic uint64_t bpf_ops;	/* IORING_OP_BPF completions */
	_Atomic uint64_t bpf_bytes;	/* bytes IORING_OP_BPF completions copied */
	_Atomic uint64_t user_copied;	/* bytes memcpy'd in userspace */
	_Atomic uint64_t loop_steps;	/* engine = loop: loop_step program runs */
	_Atomic uint64_t loop_blocks;	/* engine = loop: blocks it finished */
	_Atomic uint64_t errors;
	_Atomic uint64_t heartbeat_ns;	/* CLOCK_MONOTONIC at the last loop turn */
	_Atomic uint64_t start_ns;
	_Atomic uint64_t end_ns;
	pthread_mutex_t lock;
	char engine[16];
	char last_error[512];
	char note[512];			/* e.g. why engine = auto did not pick bpf */
};

void pipeline_status_init(struct pipeline_status *st);
void pipeline_status_set_error(struct pipeline_status *st, const char *msg);
void pipeline_status_get_error(struct pipeline_status *st, char *buf, size_t len);
void pipeline_status_set_note(struct pipeline_status *st, const char *msg);
void pipeline_status_get_note(struct pipeline_status *st, char *buf, size_t len);
void pipeline_status_set_engine(struct pipeline_status *st, const char *name);
void pipeline_status_get_engine(struct pipeline_status *st, char *buf, size_t len);

/* set by the daemon, read by the pipeline */
struct run_env {
	const char *state_dir;
	const char *runtime_dir;	/* with state_dir: no source or destination there */
	const char *const *private_dirs;	/* [2]: where no source or destination may be,
						 * when wider than state_dir, runtime_dir */
	const struct engine_probe *probe;
	_Atomic bool *stop;		/* drain, checkpoint, return */
	int wake_fd;			/* eventfd the daemon writes to after setting stop; -1 */
	int main_fd;			/* eventfd the pipeline writes to when its setup is done
					 * and when it ends (wakes the main thread); -1 */
	struct pipeline_status *status;
	struct bufpool *pool;		/* fixed buffers kept between runs; NULL: none */
	bool oneshot;			/* a one-shot command's: advice in its options' words */
};

/* wake the daemon's main thread: setup done, or the pipeline ended */
void run_env_wake_main(const struct run_env *env);
/* has the daemon asked this run to stop? */
bool run_env_stop_requested(const struct run_env *env);

#endif
