/* SPDX-License-Identifier: MIT */
#ifndef IOU_RING_H
#define IOU_RING_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "iou_abi.h"	/* before liburing.h: see iou_abi.h */
#include <liburing.h>

/*
 * One io_uring per pipeline, owned by the pipeline's thread
 * (IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN: completions
 * are only run when that thread enters the kernel, which it does once per
 * batch, so the enter count is a good measure of kernel crossings).
 */
struct ring {
	struct io_uring uring;
	/*
	 * IORING_SETUP_NO_SQARRAY rings (the loop engine's) are set up with the
	 * raw syscall: liburing 2.3 predates the flag and would fill an SQ array
	 * that is not there, over the ring header. Nothing is mapped for them:
	 * only the loop program touches their SQEs and CQEs. liburing's register
	 * helpers work on them (they need ring_fd only), its SQ/CQ helpers do not.
	 */
	bool raw;
	struct io_uring_params params;	/* as the kernel returned them */
	bool initialised;
	unsigned int entries;
	unsigned int flags;		/* IORING_SETUP_* actually used */
	uint64_t enters;		/* io_uring_enter() calls made through ring_* */
	uint64_t sqes_submitted;
	bool buffers_registered;
	bool files_registered;
};

/* memory for fixed buffers: one mapping, cut into registered areas */
struct ring_mem {
	void *base;
	size_t len;
	struct iovec *iov;
	unsigned int nr;
};

int ring_init(struct ring *r, unsigned int entries, unsigned int extra_flags);
/* @sq_entries SQEs, @cq_entries CQEs (IORING_SETUP_CQSIZE) */
int ring_init_sized(struct ring *r, unsigned int sq_entries, unsigned int cq_entries,
		    unsigned int extra_flags);
void ring_exit(struct ring *r);
static inline int ring_fd(const struct ring *r)
{
	return r->uring.ring_fd;
}

/* @sizes[i] bytes for area i, each page aligned; registered as buffer i */
int ring_mem_alloc(struct ring_mem *m, const size_t *sizes, unsigned int nr);
void ring_mem_free(struct ring_mem *m);
int ring_register_buffers(struct ring *r, const struct ring_mem *m);
int ring_register_files(struct ring *r, const int *fds, unsigned int nr);

struct io_uring_sqe *ring_get_sqe(struct ring *r);
/* submit everything queued and wait for @wait_nr CQEs or @timeout_ms: one enter */
int ring_submit_and_wait(struct ring *r, unsigned int wait_nr, unsigned int timeout_ms);

/* IORING_REGISTER_MEM_REGION: @len bytes of user memory at @addr (page aligned) */
int ring_register_mem_region(struct ring *r, void *addr, size_t len);
/*
 * io_uring_enter(fd, 0, 0, IORING_ENTER_GETEVENTS): on a ring with a
 * loop_step program, the loop runs until it says stop. Counted. 0 or -errno.
 */
int ring_enter_loop(struct ring *r);

/* is @op supported by the running kernel? 1, 0, or -errno */
int ring_probe_opcode(struct ring *r, int op);

/* round up to a power of two, at least 1 */
unsigned int ring_pow2(unsigned int v);

#endif
