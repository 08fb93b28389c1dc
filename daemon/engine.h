/* SPDX-License-Identifier: MIT */
/*
 * Engines move a pipeline's blocks. The generic chain driver (driver.c,
 * chains built by chain.c) asks an engine per block which SQEs shuffle the
 * bytes from the read area into the write area (build_shuffle), for
 * userspace steps to do the shuffle itself (user_copy), and, with checksums
 * in the kernel, for the step that sums the block (build_sum). The `loop`
 * engine runs the whole refill/reap loop from a bpf-ops loop_step program
 * in the kernel and provides drive() instead. Callers go through the
 * engine_*() wrappers below, which stand in for the hooks an engine leaves
 * NULL.
 */
#ifndef IOU_ENGINE_H
#define IOU_ENGINE_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

struct pipeline_run;
struct chain;

/*
 * What an engine is. Only name, kind and build_shuffle are required; a NULL
 * hook means "nothing to do" (0 SQEs, no metadata, no preload, attach or
 * detach, no userspace step, the generic driver, the default ring size).
 */
struct engine_ops {
	const char *name;
	enum engine_kind kind;
	unsigned int setup_flags;	/* extra IORING_SETUP_* for the ring */
	/*
	 * copy, mirror, concat and a stripe of one unit per member need no
	 * shuffle: may this engine write straight from the read area? (every
	 * engine does; the loop engine's templates follow block_plan.from_read)
	 */
	bool elide_identity_shuffle;
	/* requests a block's chain may hold at most, shuffle included (0: any) */
	int max_chain_ops;
	/* SQEs the shuffle of one block may need at most */
	int (*max_shuffle_sqes)(const struct pipeline_run *pr);
	/* bytes of per-chain metadata (descriptors, iovecs) in registered memory */
	size_t (*meta_size)(const struct pipeline_run *pr);
	/* after the plan, before the ring: start what attach will wait for */
	void (*preload)(const struct pipeline_run *pr);
	/* after ring, buffers and files are registered; before READY=1 */
	int (*attach)(struct pipeline_run *pr);
	void (*detach)(struct pipeline_run *pr);
	/* append the shuffle step(s) of @c's block to c->ops */
	int (*build_shuffle)(struct pipeline_run *pr, struct chain *c);
	/* append the step that sums @c's block in the kernel (pr->sums_kernel) */
	int (*build_sum)(struct pipeline_run *pr, struct chain *c);
	/* run a CHAIN_OP_USER_COPY step */
	int (*user_copy)(struct pipeline_run *pr, struct chain *c);
	/* whole-pipeline driver; NULL = generic chain driver */
	int (*drive)(struct pipeline_run *pr);
	/*
	 * ring size for chains of @ops requests; NULL = enough SQEs for every
	 * chain at once and twice as many CQEs
	 */
	void (*ring_size)(const struct pipeline_run *pr, int ops, unsigned int *sq_entries,
			  unsigned int *cq_entries);
};

extern const struct engine_ops engine_uring_ops;
extern const struct engine_ops engine_bpf_ops;
extern const struct engine_ops engine_loop_ops;

/* what the running kernel and this build offer, probed once per daemon */
struct engine_probe {
	bool probed;
	bool bpf_ok;
	char why[256];		/* when !bpf_ok: the first thing that is missing */
	bool loop_ok;		/* bpf_ok, and the bpf-ops loop (IORING_SETUP_SQ_REWIND, io_uring_bpf_ops) */
	char loop_why[256];
};

/* probe without loading anything: setup flags, opcode probe, kernel BTF */
void engine_probe_kernel(struct engine_probe *probe);
/*
 * Pick the engine for @want. ENGINE_AUTO falls back to uring when the bpf
 * engine is unavailable, and says why in @note (empty when nothing to say);
 * it never picks loop, which is used only when asked for.
 */
int engine_select(enum engine_kind want, const struct engine_probe *probe,
		  const struct engine_ops **out, char *note, size_t note_len);

/*
 * The optional hooks of pr->engine, called through these (as fio's
 * td_io_*() are): a hook the engine leaves NULL does its "nothing to do"
 * here, once, not at each call site. engine_user_copy() without a hook is
 * -EINVAL: the chain asked for a step the engine does not have.
 */
int engine_max_shuffle_sqes(const struct pipeline_run *pr);
size_t engine_meta_size(const struct pipeline_run *pr);
void engine_preload(const struct pipeline_run *pr);
int engine_attach(struct pipeline_run *pr);
void engine_detach(struct pipeline_run *pr);
int engine_user_copy(struct pipeline_run *pr, struct chain *c);
int engine_build_sum(struct pipeline_run *pr, struct chain *c);
void engine_ring_size(const struct pipeline_run *pr, int ops, unsigned int *sq_entries,
		      unsigned int *cq_entries);
/* does it run its own driver (the loop engine), not the generic chain driver? */
bool engine_drives_itself(const struct pipeline_run *pr);

#endif
