/* SPDX-License-Identifier: MIT */
#ifndef IOU_UBLK_QUEUE_H
#define IOU_UBLK_QUEUE_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#include "ring.h"
#include "ublk_dev.h"

struct ublk_tag;

/* one ublk hardware queue: its thread, ring, tag buffers and descriptors */
struct ublk_queue {
	struct ublk_dev *dev;
	int q_id;
	unsigned int depth;
	uint32_t buf_size;		/* per tag */
	size_t slot_size;		/* per tag in the area: buffer, staging, descriptors */
	bool gather;			/* stripe_io = gather (ublk_gather.c) */
	bool bpf;			/* ...by IORING_OP_BPF, else memcpy() */
	enum ublk_zc zc;		/* zero copy: tag t's request is buffer t of a sparse table */
	cpu_set_t cpus;			/* where the block layer sends its requests; empty: anywhere */
	struct bpf_ops_handle *ops;
	struct ring ring;
	struct ring_mem mem;		/* copying: tag t's slot at t * slot_size, buffer index 0 */
	const struct ublksrv_io_desc *descs;
	size_t descs_len;
	struct ublk_tag *tags;
	struct ublk_piece *pieces;	/* max_pieces per tag */
	uint32_t *done;			/* bytes each piece has moved */
	struct ublk_piece *units;	/* gather: the per-unit pieces, max_pieces per tag */
	/* integrity: sums_per_tag entries of the programs' sums[] and descriptor pairs per tag */
	int sums_base;
	uint32_t sums_per_tag;
	void *sum_descs;
	uint8_t *bad;			/* integrity: a mirror read's disagreeing blocks, per tag */
	bool staging;			/* the slot after the requests' is staging (gather, integrity) */
	int max_pieces;
	unsigned int cmds;		/* FETCH / COMMIT_AND_FETCH in the kernel */
	unsigned int backing;		/* backing requests in flight */
	uint64_t rr;			/* mirror round robin */
	pthread_t thread;
	bool joinable;
	bool leaving;			/* handing the device over: serve nothing new */
	int wake_fd;			/* eventfd: ublk_dev_wake() */
	/* a mirror's resync window (ublk_mirror.h) as this queue last saw it */
	uint64_t win_seen, win_lo, win_hi;
	int win_busy;			/* its writes in flight in the window */
	_Atomic uint64_t win_ack;	/* win_seq with none of them left */
	uint16_t *deferred;		/* tags of writes into the window, held back */
	int nr_deferred;
	_Atomic int ready;		/* 1: every tag fetched; -errno: the thread failed */
};

/* start the queue's thread; it reports through q->ready */
int ublk_queue_start(struct ublk_queue *q);
/* after STOP_DEV: the thread ends when every tag is aborted */
void ublk_queue_join(struct ublk_queue *q);

#endif
