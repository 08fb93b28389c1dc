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

/* is @op supported by the running kernel? 1, 0, or -errno */
int ring_probe_opcode(struct ring *r, int op);

/* round up to a power of two, at least 1 */
unsigned int ring_pow2(unsigned int v);

#endif
