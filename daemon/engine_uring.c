// SPDX-License-Identifier: MIT
/*
 * The fallback engine for stock kernels: the same chains, with the
 * read -> write shuffle done by memcpy() in userspace between the
 * completions of the reads and the submission of the writes. Where the
 * layout needs no shuffle (copy, mirror, concat) it writes straight from
 * the read area and the chain stays one linked submission.
 */
#include <string.h>

#include "engine.h"
#include "pipeline_run.h"

static int uring_build_shuffle(struct pipeline_run *pr, struct chain *c)
{
	struct chain_op *op;

	(void)pr;
	if (c->nr_ops >= c->max_ops)
		return -E2BIG;
	op = &c->ops[c->nr_ops++];
	memset(op, 0, sizeof(*op));
	op->kind = CHAIN_OP_USER_COPY;
	op->expect = c->bp.len;
	return 0;
}

static int uring_user_copy(struct pipeline_run *pr, struct chain *c)
{
	uint64_t bytes = 0;

	for (int i = 0; i < c->bp.nr_copies; i++) {
		const struct plan_copy *cp = &c->bp.copies[i];

		memcpy(c->wbuf + cp->dst_off, c->rbuf + cp->src_off, cp->len);
		bytes += cp->len;
	}
	atomic_fetch_add(&pr->env->status->user_copied, bytes);
	return 0;
}

const struct engine_ops engine_uring_ops = {
	.name = "uring",
	.kind = ENGINE_URING,
	.elide_identity_shuffle = true,
	.build_shuffle = uring_build_shuffle,
	.user_copy = uring_user_copy,
};
