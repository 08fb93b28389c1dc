// SPDX-License-Identifier: MIT
/*
 * uring_nop: one IORING_OP_NOP round trip on a ring set up the way
 * iou-offloadd sets up its rings (SINGLE_ISSUER | DEFER_TASKRUN, and
 * NO_SQARRAY where the library allows it).
 *
 *   uring_nop liburing   through liburing: SINGLE_ISSUER | DEFER_TASKRUN
 *   uring_nop raw        raw syscalls: SINGLE_ISSUER | DEFER_TASKRUN | NO_SQARRAY
 *
 * Why two: Debian's liburing is 2.3, older than NO_SQARRAY (liburing 2.5).
 * 2.3 would map and fill an SQ index array the kernel no longer has, i.e.
 * write over the ring's head and tail words, so the NO_SQARRAY ring is
 * driven by hand here. Exits 0 on success, 1 with a message on stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <liburing.h>

#ifndef IORING_SETUP_NO_SQARRAY
#define IORING_SETUP_NO_SQARRAY (1U << 16)
#endif

#define NOP_USER_DATA 0x10c0ffeeULL

static int nop_liburing(void)
{
	struct io_uring_params p = {
		.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
	};
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int ret;

	ret = io_uring_queue_init_params(4, &ring, &p);
	if (ret < 0) {
		fprintf(stderr, "io_uring_queue_init_params: %s\n", strerror(-ret));
		return 1;
	}
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data64(sqe, NOP_USER_DATA);
	ret = io_uring_submit_and_wait(&ring, 1);
	if (ret != 1) {
		fprintf(stderr, "io_uring_submit_and_wait: %d (%s)\n", ret,
			ret < 0 ? strerror(-ret) : "short submit");
		goto fail;
	}
	ret = io_uring_wait_cqe(&ring, &cqe);
	if (ret < 0) {
		fprintf(stderr, "io_uring_wait_cqe: %s\n", strerror(-ret));
		goto fail;
	}
	if (cqe->user_data != NOP_USER_DATA || cqe->res != 0) {
		fprintf(stderr, "unexpected cqe: user_data=%#llx res=%d\n",
			(unsigned long long)cqe->user_data, cqe->res);
		goto fail;
	}
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	return 0;
fail:
	io_uring_queue_exit(&ring);
	return 1;
}

static int nop_raw(void)
{
	struct io_uring_params p = {
		.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
			 IORING_SETUP_NO_SQARRAY,
	};
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqe;
	unsigned int *sq_tail, *sq_mask, *cq_head, *cq_tail, *cq_mask;
	unsigned int tail, head;
	size_t ring_sz, sqes_sz;
	void *ring;
	int fd, ret, rc = 1;

	fd = syscall(__NR_io_uring_setup, 4, &p);
	if (fd < 0) {
		fprintf(stderr, "io_uring_setup(SINGLE_ISSUER|DEFER_TASKRUN|NO_SQARRAY): %s\n",
			strerror(errno));
		return 1;
	}
	if (!(p.features & IORING_FEAT_SINGLE_MMAP)) {
		fprintf(stderr, "kernel lacks IORING_FEAT_SINGLE_MMAP\n");
		goto out_fd;
	}
	/* one mapping covers both rings; with NO_SQARRAY there is no index array */
	ring_sz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	ring = mmap(NULL, ring_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		    fd, IORING_OFF_SQ_RING);
	if (ring == MAP_FAILED) {
		fprintf(stderr, "mmap rings: %s\n", strerror(errno));
		goto out_fd;
	}
	sqes_sz = p.sq_entries * sizeof(struct io_uring_sqe);
	sqes = mmap(NULL, sqes_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		    fd, IORING_OFF_SQES);
	if (sqes == MAP_FAILED) {
		fprintf(stderr, "mmap sqes: %s\n", strerror(errno));
		goto out_ring;
	}
	sq_tail = (unsigned int *)((char *)ring + p.sq_off.tail);
	sq_mask = (unsigned int *)((char *)ring + p.sq_off.ring_mask);
	cq_head = (unsigned int *)((char *)ring + p.cq_off.head);
	cq_tail = (unsigned int *)((char *)ring + p.cq_off.tail);
	cq_mask = (unsigned int *)((char *)ring + p.cq_off.ring_mask);

	/* without an SQ array, the kernel consumes sqes[head & mask] directly */
	tail = *sq_tail;
	memset(&sqes[tail & *sq_mask], 0, sizeof(*sqes));
	sqes[tail & *sq_mask].opcode = IORING_OP_NOP;
	sqes[tail & *sq_mask].user_data = NOP_USER_DATA;
	__atomic_store_n(sq_tail, tail + 1, __ATOMIC_RELEASE);

	/* DEFER_TASKRUN: completions are posted only inside GETEVENTS */
	ret = syscall(__NR_io_uring_enter, fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0);
	if (ret != 1) {
		fprintf(stderr, "io_uring_enter: %d (%s)\n", ret,
			ret < 0 ? strerror(errno) : "short submit");
		goto out_sqes;
	}
	head = *cq_head;
	if (__atomic_load_n(cq_tail, __ATOMIC_ACQUIRE) == head) {
		fprintf(stderr, "no completion after io_uring_enter(GETEVENTS, min_complete=1)\n");
		goto out_sqes;
	}
	cqe = (struct io_uring_cqe *)((char *)ring + p.cq_off.cqes) + (head & *cq_mask);
	if (cqe->user_data != NOP_USER_DATA || cqe->res != 0) {
		fprintf(stderr, "unexpected cqe: user_data=%#llx res=%d\n",
			(unsigned long long)cqe->user_data, cqe->res);
		goto out_sqes;
	}
	__atomic_store_n(cq_head, head + 1, __ATOMIC_RELEASE);
	rc = 0;
out_sqes:
	munmap(sqes, sqes_sz);
out_ring:
	munmap(ring, ring_sz);
out_fd:
	close(fd);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "liburing"))
		return nop_liburing();
	if (argc == 2 && !strcmp(argv[1], "raw"))
		return nop_raw();
	fprintf(stderr, "usage: %s liburing|raw\n", argv[0]);
	return 2;
}
