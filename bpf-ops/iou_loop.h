/* SPDX-License-Identifier: MIT */
/*
 * What iou-offloadd and its loop_step program (iou_loop.bpf.c) share: the
 * layout of the parameter region (IOU_REGION_MEM). Included by the BPF
 * program, the daemon and the host model of the program in tests/unit.
 *
 * The region is one struct iou_loop_ctl followed by the descriptor area:
 *
 *   daemon -> program   the header (sizes, file indexes, eventfds), and the
 *                       block templates: for block b, tmpl[b & tmpl_mask]
 *                       holds every request of its chain, READ_FIXED ->
 *                       IORING_OP_BPF -> WRITE_FIXED per destination, made
 *                       with the same planner and descriptor builder as the
 *                       bpf engine. `filled` says which blocks are ready.
 *   program -> daemon   progress: `watermark` (every block below it has
 *                       completed all its writes), `durable` (below it the
 *                       destinations were fdatasync'ed, by IORING_OP_FSYNC the
 *                       program submitted), counters, the heartbeat, and on
 *                       failure which block, request and errno.
 *
 * Block b always uses chain slot b % nr_slots (its fixed buffers), so a
 * template can carry absolute buffer and descriptor addresses. The daemon
 * writes templates up to watermark + tmpl_mask + 1 blocks ahead from a
 * monitor thread while the pipeline thread sits in io_uring_enter(), and
 * writes a checkpoint whenever `durable` moves: the whole pipeline then
 * runs in one io_uring_enter() call.
 *
 * Every array index the program computes is masked by a power-of-two
 * constant below: that is what lets the verifier prove the accesses safe.
 */
#ifndef IOU_LOOP_H
#define IOU_LOOP_H

#include "iou_types.h"
#include "iou_chain.h"

#define IOU_LOOP_MAGIC		0x316c6f6f6c756f69ULL	/* "ioulool1" */

#define LOOP_MAX_SLOTS		1024	/* chains (queue_depth), power of two */
#define LOOP_MAX_OPS		32	/* requests per block, power of two */
#define LOOP_TMPL_MAX		2048	/* block templates, power of two */
#define LOOP_SQ_ENTRIES		256	/* the loop ring's SQ: SQEs per step at most */
#define LOOP_MAX_DESTS		16	/* fsyncs per checkpoint */

/*
 * Work per loop_step call; the next call comes at once while work is left.
 * The loops are open-coded iterators, so these bounds cost nothing to
 * verify: a step takes a whole batch of completions and refills in bulk.
 */
#define LOOP_REAP_MAX		1024	/* CQEs */
#define LOOP_EVAL_MAX		LOOP_MAX_SLOTS	/* chains whose requests all completed */
#define LOOP_START_MAX		LOOP_SQ_ENTRIES	/* new blocks (the SQ bounds them first) */
#define LOOP_ADVANCE_MAX	LOOP_MAX_SLOTS	/* watermark steps */
#define LOOP_WAIT_MAX		(LOOP_SQ_ENTRIES / 2)	/* CQEs waited for at once */

/*
 * The CQ region (struct io_rings) is read through a pointer whose size the
 * verifier must know: the loop ring's CQ has one of these sizes (entries),
 * and the program has one reap per size. The CQEs start at LOOP_CQES_OFF
 * (struct io_rings on 6.12; the daemon checks cq_off.cqes).
 */
#define LOOP_CQES_OFF		64
#define LOOP_CQ_BYTES(n)	(LOOP_CQES_OFF + (n) * 16)
#define LOOP_CQ_CLASS0		1024
#define LOOP_CQ_CLASS1		4096
#define LOOP_CQ_CLASS2		16384
#define LOOP_CQ_CLASS3		65536	/* IORING_MAX_CQ_ENTRIES */
/* SQEs kept free for the timer, the kick poll, fsyncs and the notify write */
#define LOOP_SQ_RESERVE		(LOOP_MAX_DESTS + 4)

/* user_data and the request kinds: iou_chain.h */

enum iou_loop_state {
	LOOP_RUNNING = 0,
	LOOP_DONE = 1,		/* every block written */
	LOOP_FAILED = 2,	/* err_* say what */
	LOOP_DRAINED = 3,	/* cmd = DRAIN and nothing in flight */
};

enum iou_loop_cmd {
	LOOP_CMD_RUN = 0,
	LOOP_CMD_DRAIN = 1,	/* start no more blocks, return once idle */
};

enum iou_loop_op_kind {
	LOOP_OP_READ = IOU_CHAIN_READ,
	LOOP_OP_BPF = IOU_CHAIN_BPF,
	LOOP_OP_WRITE = IOU_CHAIN_WRITE,
	LOOP_OP_FSYNC = 4,	/* only in err_kind */
	LOOP_OP_SUBMIT = 5,	/* only in err_kind: bpf_io_uring_submit_sqes() */
	LOOP_OP_PLAN = 6,	/* only in err_kind: a template that is not there */
};

/* one request of a block's chain, as the daemon planned it */
struct iou_loop_op {
	__u64 addr;		/* buffer (READ, WRITE), descriptor pairs (BPF) */
	__u64 off;		/* file offset (READ, WRITE); bytes to copy (BPF) */
	__u32 len;		/* bytes to submit (READ, WRITE); pairs (BPF) */
	__u32 expect;		/* done once this many bytes moved */
	__u32 op_flags;		/* BPF: sqe->bpf_op_flags */
	__u16 buf_index;	/* READ, WRITE: registered buffer */
	__u8 kind;		/* enum iou_loop_op_kind */
	__u8 file;		/* READ, WRITE: registered file */
};

struct iou_loop_tmpl {
	__u64 block;		/* which block this is (checked) */
	__u32 nr_ops;
	__u32 len;		/* logical bytes of the block */
	struct iou_loop_op ops[LOOP_MAX_OPS];
};

/* a chain in flight: per request, bytes done and the last result */
struct iou_loop_slot_op {
	__u32 done;
	__s32 res;
};

struct iou_loop_slot {
	__u64 block;
	__u32 busy;
	__u32 next;		/* first request of the group in flight */
	__u32 nr_ops;
	__u32 inflight;		/* CQEs still to come for the group */
	struct iou_loop_slot_op ops[LOOP_MAX_OPS];
};

struct iou_loop_ctl {
	/* ---- set by the daemon before the first io_uring_enter() ---- */
	__u64 magic;
	__u64 nr_blocks;
	__u32 nr_slots;		/* <= LOOP_MAX_SLOTS */
	__u32 tmpl_mask;	/* templates in use - 1 (power of two) */
	__u32 nr_dests;
	__u32 dest_file;	/* registered file index of destination 0 */
	__s32 mon_fd;		/* eventfd: wakes the daemon's monitor, or -1 */
	__s32 kick_fd;		/* eventfd the monitor writes after new templates, or -1 */
	__u64 ckpt_blocks;	/* fdatasync once this many more blocks finished */
	__u64 ckpt_ns;		/* ... or this long after the last one */
	__u64 notify_blocks;	/* wake the monitor every this many blocks */
	__u64 one;		/* 1: what the notify write sends */
	__s64 tick_sec;		/* the timer, a struct __kernel_timespec */
	__s64 tick_nsec;
	__u64 tick_addr;	/* user address of tick_sec */
	__u64 one_addr;		/* user address of one */
	/* the CQ ring, from io_uring_params: per ring, so not in the program */
	__u32 cq_entries;	/* one of LOOP_CQ_CLASS* */
	__u32 cq_mask;
	__u32 cq_head_off;
	__u32 cq_tail_off;
	__u32 cqes_off;
	__u32 wait_batch;	/* CQEs to wait for at once, at most */
	__u32 skip_cqes;	/* 1: IOSQE_CQE_SKIP_SUCCESS, one CQE per group */
	__u32 pad1;

	/* ---- written by the daemon while the loop runs ---- */
	__u64 filled;		/* templates are valid for blocks below this */
	__u32 cmd;		/* enum iou_loop_cmd */
	__u32 pad0;

	/* ---- written by the program ---- */
	__u32 state;		/* enum iou_loop_state */
	__u32 sq_k;		/* SQEs prepared in this step */
	__u64 next_block;	/* blocks started */
	__u64 watermark;	/* blocks below this have finished */
	__u64 durable;		/* blocks below this are fdatasync'ed */
	__u64 durable_seq;	/* bumped whenever durable moves */
	__u64 fsync_at;		/* the watermark the fsyncs in flight cover */
	__u64 last_fsync_ns;
	__u64 notified;		/* watermark at the last notify */
	__u64 notified_seq;	/* durable_seq at the last notify */
	__u32 fsyncs;		/* in flight */
	__u32 notify_inflight;
	__u32 timer_armed;
	__u32 kick_armed;
	__u32 evalq_head;	/* chains to judge, a ring of slot numbers */
	__u32 evalq_tail;
	__u32 starved;		/* wanted to start a block with no template */
	__u32 more;		/* work left for the next step at once */

	/* the first failure */
	__s32 err_res;		/* -errno */
	__u32 err_kind;		/* enum iou_loop_op_kind */
	__u64 err_block;
	__u32 err_op;		/* index in the block's chain */
	__u32 err_file;		/* registered file, or destination (FSYNC) */
	__u64 err_off;		/* file offset where the failed transfer began */
	__u32 err_len;		/* bytes it asked for */
	__u32 err_done;		/* bytes before it (short transfers) */

	/* counters, for status and tests */
	__u64 steps;
	__u64 sqes;
	__u64 cqes;
	__u64 bpf_ops;		/* IORING_OP_BPF completions */
	__u64 bpf_bytes;	/* bytes they copied */
	__u64 retries;		/* groups resubmitted after a short transfer */
	__u64 ticks;
	__u64 kicks;
	__u64 strays;		/* CQEs that matched nothing (a bug if not 0) */
	__u64 fsync_rounds;
	__u64 heartbeat_ns;	/* bpf_ktime_get_ns() (CLOCK_MONOTONIC) of the last step */
	/* scratch of loop_eval(): in memory, so the verifier need not track it per path */
	struct iou_group_verdict ev;
	__u32 starve_notified;	/* the monitor was told about this starvation */
	__u64 step_ns;		/* time spent inside loop_step, summed */
	__u64 busy_steps;	/* steps that asked to come back at once */
	__u64 cqes_pending;	/* CQEs the requests in flight will still post */
	__u32 cq_head;		/* the CQ head after this step's reap */
	__u32 started;		/* blocks started in this step */
	__u64 resv[2];

	__u32 evalq[LOOP_MAX_SLOTS];
	struct iou_loop_slot slots[LOOP_MAX_SLOTS];
	struct iou_loop_tmpl tmpl[LOOP_TMPL_MAX];
};

/* the loop ring's SQE array, as IOU_REGION_SQ shows it */
struct iou_loop_sq {
	struct io_uring_sqe sqes[LOOP_SQ_ENTRIES];
};

#endif
