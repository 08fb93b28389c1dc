/* SPDX-License-Identifier: MIT */
#ifndef IOU_PIPELINE_H
#define IOU_PIPELINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "checkpoint.h"
#include "config.h"
#include "engine.h"
#include "files.h"
#include "kv.h"
#include "plan.h"
#include "ring.h"
#include "../bpf-ops/iou_chain.h"	/* after ring.h: the uapi types */

enum pipeline_state {
	PIPELINE_PENDING,	/* thread started, not set up yet */
	PIPELINE_RUNNING,
	PIPELINE_FINISHED,
	PIPELINE_STOPPED,	/* stopped on request, checkpoint written */
	PIPELINE_FAILED,
	PIPELINE_RETRYING,	/* failed, waiting retry_delay before resuming */
};

const char *pipeline_state_to_string(enum pipeline_state s);

/*
 * What the pipeline thread shares with the daemon's main thread:
 * counters are atomics, the strings are under the mutex.
 */
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
	const struct engine_probe *probe;
	_Atomic bool *stop;		/* drain, checkpoint, return */
	int wake_fd;			/* eventfd the daemon writes to after setting stop; -1 */
	int main_fd;			/* eventfd the pipeline writes to when its setup is done
					 * and when it ends (wakes the main thread); -1 */
	struct pipeline_status *status;
	struct bufpool *pool;		/* fixed buffers kept between runs; NULL: none */
};

/* wake the daemon's main thread: setup done, or the pipeline ended */
void run_env_wake_main(const struct run_env *env);

enum chain_op_kind {
	CHAIN_OP_READ = IOU_CHAIN_READ,
	CHAIN_OP_BPF = IOU_CHAIN_BPF,
	CHAIN_OP_WRITE = IOU_CHAIN_WRITE,
	CHAIN_OP_USER_COPY = 8,	/* userspace step: engine->user_copy(); not in the loop */
};

struct chain_op {
	enum chain_op_kind kind;
	uint16_t file;		/* registered file index */
	uint16_t buf_index;	/* registered buffer index */
	uint8_t *buf;
	uint64_t file_off;
	uint32_t io_len;	/* bytes to submit */
	uint32_t expect;	/* bytes a complete op returns */
	uint32_t done;		/* bytes done so far (short transfers resubmit the rest) */
	int32_t res;		/* last CQE result */
	bool complete;
	/* CHAIN_OP_BPF */
	uint64_t desc_addr;
	uint32_t nr_pairs;
	uint32_t op_id;
	bool sum;		/* IOU_OP_ID_SUM: the SQE's off is sum_index, not expect */
	uint32_t sum_index;
};

struct chain {
	int slot;
	bool busy;
	struct block_plan bp;
	struct chain_op *ops;
	int nr_ops;
	int max_ops;
	bool skip_cqes;		/* IOSQE_CQE_SKIP_SUCCESS: one CQE per group */
	int next;		/* first op of the group in flight / to submit */
	int group_end;		/* one past its last op */
	int inflight;		/* CQEs still to come for the group */
	/* this chain's registered areas */
	uint8_t *rbuf, *wbuf, *meta;
	uint16_t rbuf_index, wbuf_index, meta_index;
	size_t meta_len;
};

/* sparse.c: the holes of a sparse source, logical [lo, hi), sorted */
struct sparse_hole {
	uint64_t lo, hi;
};
struct sparse_map {
	struct sparse_hole *holes;
	size_t nr, cap;
	uint64_t hole_bytes;
	bool on;		/* blocks in holes are skipped, their ranges punched */
};

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
	/* checkpointing */
	pthread_mutex_t ckpt_lock;	/* ckpt, durable: an engine's thread may checkpoint */
	struct checkpoint ckpt;
	uint64_t ckpt_watermark;	/* durable once the fsyncs in flight finish */
	int ckpt_fsyncs;		/* fsync CQEs outstanding */
	bool sync_failed;		/* an fsync failed: what it covered may be lost */
	bool dests_settled;		/* wound down: all written, flushed, identified */
	uint64_t synced;		/* flushed by the last checkpoint, once it is recorded */
	uint64_t flushed;		/* flushed by the last flush that completed */
	uint64_t wb_started;		/* logical bytes whose writeback was started */
	int wb_inflight;		/* sync_file_range CQEs outstanding */
	uint64_t durable;
	uint64_t last_ckpt_ns;
	/* the record of a flushed checkpoint, written through the ring (resume.c) */
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
	/* pacing (resume.c ckpt_due()): what a checkpoint costs, how fast the copy runs */
	struct {
		uint64_t cost_ns;	/* flush start to record end, smoothed; 0: not timed */
		double rate;		/* bytes a second completed, smoothed; 0: unknown */
		uint64_t w, t_ns;	/* watermark and time at the last flush start */
		uint64_t flush_ns;	/* the start of the flush being timed; 0: none */
	} pace;
	bool resumed;
	bool wake_armed;
	uint64_t bpf_bytes;		/* this run's IORING_OP_BPF bytes, vs. the program's count */
	uint64_t reported_off;		/* logical offset of the block the error names */
	/* request failures after the first: logged as one line per range */
	uint64_t fallout_count, fallout_lo, fallout_hi;
	uint64_t wake_buf;
	char msg[512];			/* the error message for status and log */
};

/*
 * Run @pc to completion, a stop request, or failure, with retries per its
 * settings. Returns 0 (finished, or nothing to do), -EINTR (stopped,
 * checkpoint written) or the first -errno (message in env->status).
 */
int pipeline_run(const struct pipeline_config *pc, const struct run_env *env);

/*
 * --check-config --open: open the files (nothing is created or written),
 * plan, and run every check a start would; 0, or -errno with the message in
 * pr->msg. pipeline_cleanup() afterwards either way.
 */
int pipeline_check_open(struct pipeline_run *pr, const struct pipeline_config *pc,
			const struct run_env *env);

/* bytes of fixed buffers the run of a checked pipeline registers (locked memory) */
uint64_t pipeline_buffer_bytes(const struct pipeline_run *pr);

/* steps of pipeline_run(), exposed for tests */
int pipeline_prepare(struct pipeline_run *pr, const struct pipeline_config *pc,
		     const struct run_env *env);
int pipeline_execute(struct pipeline_run *pr);
void pipeline_cleanup(struct pipeline_run *pr);

/*
 * For engines with their own driver: record @done logical bytes as durable
 * (the caller has flushed them) in state @state; 0 or -errno (logged). Safe
 * from the engine's own threads: the one way they change pipeline state.
 */
int pipeline_checkpoint(struct pipeline_run *pr, enum ckpt_state state, uint64_t done);
/* has the daemon asked this pipeline to stop? */
bool pipeline_stop_requested(const struct pipeline_run *pr);

/* set pr->msg, log it, and return @err */
int pipeline_fail(struct pipeline_run *pr, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
