// SPDX-License-Identifier: MIT
/*
 * liburing setup, fixed buffers and files, and the one place that enters
 * the kernel for a pipeline (so the count of io_uring_enter() calls is
 * exact for everything that goes through here).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ring.h"

unsigned int ring_pow2(unsigned int v)
{
	unsigned int p = 1;

	while (p < v && p < (1u << 31))
		p <<= 1;
	return p;
}

int ring_init(struct ring *r, unsigned int entries, unsigned int extra_flags)
{
	return ring_init_sized(r, entries, ring_pow2(entries) * 2, extra_flags);
}

int ring_init_sized(struct ring *r, unsigned int sq_entries, unsigned int cq_entries,
		    unsigned int extra_flags)
{
	struct io_uring_params p;
	int ret;

	memset(r, 0, sizeof(*r));
	memset(&p, 0, sizeof(p));
	/* one thread submits and reaps; run task work only when it asks */
	p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
		  IORING_SETUP_CQSIZE | extra_flags;
	p.cq_entries = cq_entries;
	if (p.flags & IORING_SETUP_NO_SQARRAY) {
		ret = syscall(__NR_io_uring_setup, sq_entries, &p);
		if (ret < 0)
			return -errno;
		r->raw = true;
		r->uring.ring_fd = ret;
		r->uring.enter_ring_fd = ret;
		r->uring.flags = p.flags;
		r->uring.features = p.features;
	} else {
		ret = io_uring_queue_init_params(sq_entries, &r->uring, &p);
		if (ret < 0)
			return ret;
	}
	r->params = p;
	r->initialised = true;
	r->entries = p.sq_entries;
	r->flags = p.flags;
	return 0;
}

void ring_exit(struct ring *r)
{
	if (!r->initialised)
		return;
	/* tearing the ring down cancels what is in flight and drops registrations */
	if (r->raw)
		close(r->uring.ring_fd);
	else
		io_uring_queue_exit(&r->uring);
	r->initialised = false;
}

int ring_mem_alloc(struct ring_mem *m, const size_t *sizes, unsigned int nr)
{
	size_t page = sysconf(_SC_PAGESIZE), total = 0, off = 0;
	void *base;

	memset(m, 0, sizeof(*m));
	for (unsigned int i = 0; i < nr; i++)
		total += (sizes[i] + page - 1) / page * page;
	if (!total)
		return -EINVAL;
	m->iov = calloc(nr, sizeof(*m->iov));
	if (!m->iov)
		return -ENOMEM;
	/* anonymous and populated: registration pins it anyway, fault it now */
	base = mmap(NULL, total, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (base == MAP_FAILED) {
		free(m->iov);
		m->iov = NULL;
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < nr; i++) {
		m->iov[i].iov_base = (char *)base + off;
		m->iov[i].iov_len = sizes[i];
		off += (sizes[i] + page - 1) / page * page;
	}
	m->base = base;
	m->len = total;
	m->nr = nr;
	return 0;
}

void ring_mem_free(struct ring_mem *m)
{
	if (m->base)
		munmap(m->base, m->len);
	free(m->iov);
	memset(m, 0, sizeof(*m));
}

int ring_register_buffers(struct ring *r, const struct ring_mem *m)
{
	int ret = io_uring_register_buffers(&r->uring, m->iov, m->nr);

	if (ret < 0)
		return ret;
	r->buffers_registered = true;
	return 0;
}

int ring_register_files(struct ring *r, const int *fds, unsigned int nr)
{
	int ret = io_uring_register_files(&r->uring, fds, nr);

	if (ret < 0)
		return ret;
	r->files_registered = true;
	return 0;
}

struct io_uring_sqe *ring_get_sqe(struct ring *r)
{
	return io_uring_get_sqe(&r->uring);
}

int ring_submit_and_wait(struct ring *r, unsigned int wait_nr, unsigned int timeout_ms)
{
	struct __kernel_timespec ts = {
		.tv_sec = timeout_ms / 1000,
		.tv_nsec = (long long)(timeout_ms % 1000) * 1000000,
	};
	struct io_uring_cqe *cqe;
	unsigned int queued = io_uring_sq_ready(&r->uring);
	int ret;

	/*
	 * With IORING_FEAT_EXT_ARG (5.11+) this is at most one io_uring_enter()
	 * that submits, waits and times out; liburing skips it when nothing is
	 * queued and enough CQEs are already posted, and so do we in the count.
	 */
	if (queued || io_uring_cq_ready(&r->uring) < wait_nr)
		r->enters++;
	if (timeout_ms)
		ret = io_uring_submit_and_wait_timeout(&r->uring, &cqe, wait_nr, &ts, NULL);
	else
		ret = io_uring_submit_and_wait(&r->uring, wait_nr);
	if (ret >= 0 || ret == -ETIME) {
		r->sqes_submitted += queued;
		return ret == -ETIME ? 0 : ret;
	}
	return ret;
}

int ring_register_mem_region(struct ring *r, void *addr, size_t len)
{
	struct io_uring_region_desc rd;
	struct io_uring_mem_region_reg mr;

	memset(&rd, 0, sizeof(rd));
	memset(&mr, 0, sizeof(mr));
	rd.user_addr = (uintptr_t)addr;
	rd.size = len;
	rd.flags = IORING_MEM_REGION_TYPE_USER;
	mr.region_uptr = (uintptr_t)&rd;
	if (syscall(__NR_io_uring_register, r->uring.ring_fd, IOU_REGISTER_MEM_REGION, &mr, 1) < 0)
		return -errno;
	return 0;
}

int ring_enter_loop(struct ring *r)
{
	r->enters++;
	if (syscall(__NR_io_uring_enter, r->uring.ring_fd, 0, 0, IORING_ENTER_GETEVENTS,
		    NULL, 0) < 0)
		return -errno;
	return 0;
}

int ring_probe_opcode(struct ring *r, int op)
{
	struct io_uring_probe *probe = io_uring_get_probe_ring(&r->uring);
	int ok;

	if (!probe)
		return -EOPNOTSUPP;
	ok = op <= probe->last_op && io_uring_opcode_supported(probe, op);
	io_uring_free_probe(probe);
	return ok;
}
