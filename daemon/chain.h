/* SPDX-License-Identifier: MIT */
#ifndef IOU_DAEMON_CHAIN_H
#define IOU_DAEMON_CHAIN_H

/*
 * One block as a chain of requests (chain.c): read, the engine's shuffle,
 * write(s). What an engine builds (engine_ops.build_shuffle appends to
 * c->ops) and what the generic driver (driver.c) submits and judges.
 */
#include <stdbool.h>
#include <stdint.h>

#include "plan.h"
#include "ring.h"
#include "../bpf-ops/iou_chain.h"

struct pipeline_run;

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

int chain_build(struct pipeline_run *pr, struct chain *c, uint64_t block);
int chain_submit(struct pipeline_run *pr, struct chain *c);
void chain_release(struct pipeline_run *pr, struct chain *c);
void chain_handle_cqe(struct pipeline_run *pr, uint64_t data, int res);

#endif
