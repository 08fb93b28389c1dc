// SPDX-License-Identifier: MIT
/*
 * kfunc_bench: MiB/s of uring_bpf_memcpy() against userspace memcpy() of
 * the same sizes, in one process, one after the other.
 *
 * Paths: FIXED -> FIXED and FIXED -> REG_VEC (the destination split into
 * --vecs entries with a page gap between them, inside one registered
 * buffer), and KFIXED -> FIXED: the source is the pages of a 1 MiB WRITE
 * request of a ublk device this process serves with zero copy
 * (UBLK_F_SUPPORT_ZERO_COPY), registered in the ring's buffer table while
 * the request is held; its memcpy columns copy the same bytes between user
 * buffers, as a server without zero copy would have them. Sizes 4 KiB,
 * 64 KiB, 1 MiB. Methods:
 *   kfunc      one copy per IORING_OP_BPF request, --qd requests per
 *              io_uring_enter(): what a pipeline pays per block
 *   kfunc-x16  16 copies per request (a loop in issue_fn): the kfunc's own
 *              cost, with the request overhead amortised
 *   memcpy     userspace memcpy() of the same bytes (one call per vector
 *              entry for REG_VEC), between the same two buffers
 *   rep-movsb  the same copies with `rep movsb`, which glibc picks between
 *              its rep_movsb_threshold and rep_movsb_stop_threshold (and the
 *              kernel's memcpy only with FSRM): emulators run it and vector
 *              or GPR loops at very different speeds, so this column tells
 *              the kfunc's cost apart from glibc's choice of loop
 *
 * CRC32C: uring_bpf_crc32c() (this series' own kfunc) over a FIXED buffer
 * of 64 KiB and 1 MiB against userspace CRC32C of the same bytes, with the
 * SSE4.2 crc32 instruction (what a userspace checksum uses on x86) and
 * table-driven (one byte per step), each result checked against the other.
 *
 * Every measurement is calibrated to last at least --min-time seconds,
 * then timed --runs times: median, min and max are reported. After each
 * measurement the destination is checked byte for byte (data equals the
 * source, everything around it untouched); that, not the speed, decides
 * its TAP result. Output: TAP on stdout with the table as comments, and
 * table.md + kfunc.json in --out DIR when given.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <cpuid.h>
/* the patched uapi header first: liburing's copy has the same include guard */
#include <linux/io_uring.h>
#include <liburing.h>
#include <linux/ublk_cmd.h>
#include <bpf/libbpf.h>
#include "kfunc_bench.h"
#include "kfunc_bench.skel.h"

#define PAGE		4096UL
#define POISON		0xee
#define MAX_SIZE	(1UL << 20)
#define MAX_VECS	64
#define MAX_RUNS	31
#define OP_ID		0
#define CRC_OP_ID	1

enum path { PATH_FIXED, PATH_REG_VEC, PATH_KFIXED, NR_PATHS };
enum method { M_KFUNC, M_KFUNC_X16, M_MEMCPY, M_MOVSB, NR_METHODS };

static const char *const path_name[] = { "FIXED->FIXED", "FIXED->REG_VEC", "KFIXED->FIXED" };
#define KBUF_INDEX	2	/* the ublk request's pages in the buffer table */
#define UD_UBLK		(1ULL << 40)	/* user_data of ublk commands */
static const char *const method_name[] = { "kfunc", "kfunc-x16", "memcpy", "rep-movsb" };
static const unsigned int method_reps[] = { 1, 16, 1, 1 };
static const size_t sizes[] = { 4096, 65536, MAX_SIZE };
#define NR_SIZES (sizeof(sizes) / sizeof(sizes[0]))

enum crc_method { C_KFUNC, C_KFUNC_X16, C_SSE42, C_TABLE, NR_CRC_METHODS };
static const char *const crc_method_name[] = { "crc-kfunc", "crc-kfunc-x16", "crc-sse4.2",
					       "crc-table" };
static const unsigned int crc_method_reps[] = { 1, 16, 1, 1 };
static const size_t crc_sizes[] = { 65536, MAX_SIZE };
#define NR_CRC_SIZES (sizeof(crc_sizes) / sizeof(crc_sizes[0]))

struct opts {
	double min_time;
	unsigned int runs, qd, vecs;
	const char *out;
};

struct result {
	double median, min, max;	/* MiB/s */
	double ns_per_copy;		/* median, one copy of size bytes */
	unsigned long iters;		/* units per timed run */
	int verified;
	char err[128];
};

struct bench {
	struct opts o;
	struct io_uring ring;
	struct kfunc_bench *skel;
	struct bpf_link *link, *crc_link;
	unsigned char *src, *dst;
	size_t dst_span;
	struct iovec iov[MAX_VECS];
	struct io_bpf_buf_desc desc[2];	/* source, destination */
	struct result res[NR_PATHS][NR_SIZES][NR_METHODS];
	struct result crc_res[NR_CRC_SIZES][NR_CRC_METHODS];
	uint32_t crc_want;		/* of the size being measured */
	volatile uint32_t crc_sink;	/* userspace CRCs land here */
	/* the ublk zero-copy device whose held WRITE request KFIXED names */
	int ublk_ctrl_fd, ublk_cdev, ublk_ok;
	struct io_uring ublk_ctrl;
	struct ublksrv_ctrl_dev_info ublk_info;
	const struct ublksrv_io_desc *ublk_iod;
	pthread_t writer;
	int writer_ret, writer_started;
	char ublk_err[128];
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned char pattern(size_t i)
{
	return (unsigned char)(i * 131 + 7 + (i >> 8));
}

/* CPUID leaf 0x40000000: "TCGTCGTCGTCG" under QEMU TCG, "KVMKVMKVM" under KVM */
static const char *accelerator(void)
{
	static char sig[13];
	unsigned int a, b, c, d;

	__cpuid(1, a, b, c, d);
	if (!(c & (1U << 31)))
		return "none (bare metal)";
	__cpuid(0x40000000, a, b, c, d);
	memcpy(sig, &b, 4);
	memcpy(sig + 4, &c, 4);
	memcpy(sig + 8, &d, 4);
	if (!strcmp(sig, "TCGTCGTCGTCG"))
		return "tcg";
	if (!strncmp(sig, "KVMKVMKVM", 9))
		return "kvm";
	return sig[0] ? sig : "unknown hypervisor";
}

/* the CPU features that pick glibc's and the kernel's memcpy loops */
static void print_cpu_features(void)
{
	unsigned int a, b, c, d;

	__cpuid_count(7, 0, a, b, c, d);
	printf("# cpu: erms %u, fsrm %u, avx2 %u, avx512f %u (the kernel's memcpy is "
	       "rep movsb with fsrm, else an unrolled 64-bit GPR loop)\n",
	       (b >> 9) & 1, (d >> 4) & 1, (b >> 5) & 1, (b >> 16) & 1);
}

/* Destination layout of a path at a size: iovecs (REG_VEC) and the descriptors. */
static unsigned int layout(struct bench *b, enum path p, size_t size)
{
	unsigned int i, n = p == PATH_REG_VEC ? b->o.vecs : 1;
	size_t piece = size / n, off = 0;

	for (i = 0; i < n; i++) {
		b->iov[i].iov_base = b->dst + off;
		b->iov[i].iov_len = i == n - 1 ? size - piece * (n - 1) : piece;
		off += b->iov[i].iov_len + PAGE;	/* a page gap between entries */
	}
	memset(b->desc, 0, sizeof(b->desc));
	b->desc[0].type = IO_BPF_BUF_FIXED;
	b->desc[0].buf_index = 0;
	b->desc[0].addr = (uintptr_t)b->src;
	b->desc[0].len = size;
	if (p == PATH_KFIXED) {
		/* the request's first bytes, by offset */
		b->desc[0].type = IO_BPF_BUF_KFIXED;
		b->desc[0].buf_index = KBUF_INDEX;
		b->desc[0].addr = 0;
	}
	b->desc[1].buf_index = 1;
	if (p == PATH_REG_VEC) {
		b->desc[1].type = IO_BPF_BUF_REG_VEC;
		b->desc[1].addr = (uintptr_t)b->iov;
		b->desc[1].len = n;
	} else {
		b->desc[1].type = IO_BPF_BUF_FIXED;
		b->desc[1].addr = (uintptr_t)b->dst;
		b->desc[1].len = size;
	}
	return n;
}

/* Data equals the source in order; every byte outside the entries is poison. */
static int verify(struct bench *b, unsigned int n, char *err, size_t errlen)
{
	size_t data = 0, pos = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		unsigned char *base = b->iov[i].iov_base;
		size_t gap = base - b->dst, k;

		for (; pos < gap; pos++)
			if (b->dst[pos] != POISON) {
				snprintf(err, errlen, "byte %zu before entry %u changed", pos, i);
				return -1;
			}
		for (k = 0; k < b->iov[i].iov_len; k++, data++)
			if (base[k] != b->src[data]) {
				snprintf(err, errlen, "data byte %zu (entry %u) wrong", data, i);
				return -1;
			}
		pos = gap + b->iov[i].iov_len;
	}
	for (; pos < b->dst_span; pos++)
		if (b->dst[pos] != POISON) {
			snprintf(err, errlen, "byte %zu after the data changed", pos);
			return -1;
		}
	return 0;
}

/* n requests of reps copies (CRCs with op_id CRC_OP_ID) each, qd per enter */
static int run_kfunc(struct bench *b, unsigned int op_id, unsigned long n, unsigned int reps,
		     size_t size, char *err, size_t errlen)
{
	int want = (int)(size * reps);

	while (n) {
		unsigned int batch = n < b->o.qd ? n : b->o.qd, i, seen = 0, head;
		struct io_uring_cqe *cqe;
		int ret;

		for (i = 0; i < batch; i++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);

			memset(sqe, 0, sizeof(*sqe));
			sqe->opcode = IORING_OP_BPF;
			sqe->fd = -1;
			sqe->bpf_op_flags = op_id << IORING_BPF_OP_SHIFT;
			sqe->addr = (uintptr_t)b->desc;
			sqe->len = reps;
			sqe->user_data = i;
		}
		ret = io_uring_submit_and_wait(&b->ring, batch);
		if (ret != (int)batch) {
			snprintf(err, errlen, "submit_and_wait: %d, want %u", ret, batch);
			return ret < 0 ? ret : -EIO;
		}
		while (seen < batch) {
			unsigned int got = 0;

			io_uring_for_each_cqe(&b->ring, head, cqe) {
				if (cqe->res != want) {
					snprintf(err, errlen, "cqe res %d, want %d", cqe->res, want);
					io_uring_cq_advance(&b->ring, got + 1);
					return cqe->res < 0 ? cqe->res : -EIO;
				}
				got++;
			}
			io_uring_cq_advance(&b->ring, got);
			seen += got;
			if (seen < batch) {
				ret = io_uring_wait_cqe(&b->ring, &cqe);
				if (ret) {
					snprintf(err, errlen, "wait_cqe: %d", ret);
					return ret;
				}
			}
		}
		n -= batch;
	}
	return 0;
}

static void copy_movsb(void *dst, const void *src, size_t len)
{
	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(len) : : "memory");
}

/* n copies of size bytes in userspace, one call per destination entry */
static void run_memcpy(struct bench *b, unsigned long n, unsigned int nvec, bool movsb)
{
	unsigned int i;

	while (n--) {
		const unsigned char *s = b->src;

		for (i = 0; i < nvec; i++) {
			if (movsb)
				copy_movsb(b->iov[i].iov_base, s, b->iov[i].iov_len);
			else
				memcpy(b->iov[i].iov_base, s, b->iov[i].iov_len);
			s += b->iov[i].iov_len;
		}
		/* the copies must happen: the compiler sees the buffers used */
		__asm__ volatile("" : : "r"(b->dst), "r"(b->src) : "memory");
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* one timed run of n units; seconds, or < 0 on error */
static double timed(struct bench *b, enum method m, unsigned long n, size_t size,
		    unsigned int nvec, char *err, size_t errlen)
{
	double t0 = now();

	if (m == M_MEMCPY || m == M_MOVSB)
		run_memcpy(b, n, nvec, m == M_MOVSB);
	else if (run_kfunc(b, OP_ID, n, method_reps[m], size, err, errlen))
		return -1;
	return now() - t0;
}

static void measure(struct bench *b, enum path p, unsigned int z, enum method m)
{
	struct result *r = &b->res[p][z][m];
	size_t size = sizes[z];
	unsigned int nvec = layout(b, p, size), i;
	size_t unit = size * method_reps[m];	/* bytes per unit of work */
	double t, mibs[MAX_RUNS];
	unsigned long n = 1;

	memset(r, 0, sizeof(*r));
	memset(b->dst, POISON, b->dst_span);
	/* calibrate (and warm up): grow n until a run lasts min_time */
	for (;;) {
		t = timed(b, m, n, size, nvec, r->err, sizeof(r->err));
		if (t < 0)
			return;
		if (t >= b->o.min_time || n > (1UL << 40))
			break;
		if (t < b->o.min_time / 64)
			n *= 16;
		else
			n = (unsigned long)(n * (b->o.min_time * 1.1 / t)) + 1;
	}
	for (i = 0; i < b->o.runs; i++) {
		t = timed(b, m, n, size, nvec, r->err, sizeof(r->err));
		if (t < 0)
			return;
		mibs[i] = (double)unit * n / t / (1 << 20);
	}
	qsort(mibs, b->o.runs, sizeof(mibs[0]), cmp_double);
	r->min = mibs[0];
	r->max = mibs[b->o.runs - 1];
	r->median = b->o.runs % 2 ? mibs[b->o.runs / 2] :
		    (mibs[b->o.runs / 2 - 1] + mibs[b->o.runs / 2]) / 2;
	r->ns_per_copy = size / (r->median * (1 << 20)) * 1e9;
	r->iters = n;
	if (verify(b, nvec, r->err, sizeof(r->err)) == 0)
		r->verified = 1;
}

/* CRC32C, raw register as the kernel's crc32c(): a byte per table step */
static uint32_t crc32c_table(uint32_t crc, const unsigned char *p, size_t n)
{
	static uint32_t table[256];
	unsigned int i, k;

	if (!table[1]) {
		for (i = 0; i < 256; i++) {
			uint32_t c = i;

			for (k = 0; k < 8; k++)
				c = c & 1 ? (c >> 1) ^ 0x82f63b78 : c >> 1;
			table[i] = c;
		}
	}
	while (n--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

/* the same with the SSE4.2 crc32 instruction, 8 bytes a step */
__attribute__((target("sse4.2")))
static uint32_t crc32c_sse42(uint32_t crc, const unsigned char *p, size_t n)
{
	uint64_t c = crc, v;

	for (; n >= 8; n -= 8, p += 8) {
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
	}
	crc = c;
	while (n--)
		crc = __builtin_ia32_crc32qi(crc, *p++);
	return crc;
}

static bool have_sse42(void)
{
	unsigned int a, b, c, d;

	__cpuid(1, a, b, c, d);
	return c & (1U << 20);
}

static double crc_timed(struct bench *b, enum crc_method m, unsigned long n, size_t size,
			char *err, size_t errlen)
{
	double t0 = now();

	switch (m) {
	case C_KFUNC:
	case C_KFUNC_X16:
		if (run_kfunc(b, CRC_OP_ID, n, crc_method_reps[m], size, err, errlen))
			return -1;
		break;
	case C_SSE42:
		while (n--)
			b->crc_sink = crc32c_sse42(~0U, b->src, size);
		break;
	default:
		while (n--)
			b->crc_sink = crc32c_table(~0U, b->src, size);
		break;
	}
	return now() - t0;
}

static void crc_measure(struct bench *b, unsigned int z, enum crc_method m)
{
	struct result *r = &b->crc_res[z][m];
	size_t size = crc_sizes[z], unit = size * crc_method_reps[m];
	double t, mibs[MAX_RUNS];
	unsigned long n = 1;
	uint32_t got;
	unsigned int i;

	memset(r, 0, sizeof(*r));
	if (m == C_SSE42 && !have_sse42()) {
		snprintf(r->err, sizeof(r->err), "no SSE4.2");
		return;
	}
	layout(b, PATH_FIXED, size);
	b->skel->bss->last_crc = 0;
	for (;;) {
		t = crc_timed(b, m, n, size, r->err, sizeof(r->err));
		if (t < 0)
			return;
		if (t >= b->o.min_time || n > (1UL << 40))
			break;
		if (t < b->o.min_time / 64)
			n *= 16;
		else
			n = (unsigned long)(n * (b->o.min_time * 1.1 / t)) + 1;
	}
	for (i = 0; i < b->o.runs; i++) {
		t = crc_timed(b, m, n, size, r->err, sizeof(r->err));
		if (t < 0)
			return;
		mibs[i] = (double)unit * n / t / (1 << 20);
	}
	qsort(mibs, b->o.runs, sizeof(mibs[0]), cmp_double);
	r->min = mibs[0];
	r->max = mibs[b->o.runs - 1];
	r->median = b->o.runs % 2 ? mibs[b->o.runs / 2] :
		    (mibs[b->o.runs / 2 - 1] + mibs[b->o.runs / 2]) / 2;
	r->ns_per_copy = size / (r->median * (1 << 20)) * 1e9;
	r->iters = n;
	got = m <= C_KFUNC_X16 ? b->skel->bss->last_crc : b->crc_sink;
	if (got == b->crc_want)
		r->verified = 1;
	else
		snprintf(r->err, sizeof(r->err), "CRC %#x, want %#x", got, b->crc_want);
}

/* submit one control command on /dev/ublk-control (SQE128 ring) */
static int ublk_ctrl_submit(struct bench *b, __u32 op, __u64 addr, __u16 len, __u64 data)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ublk_ctrl);
	struct ublksrv_ctrl_cmd *c;
	int ret;

	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = b->ublk_ctrl_fd;
	sqe->cmd_op = op;
	c = (struct ublksrv_ctrl_cmd *)sqe->cmd;
	c->dev_id = b->ublk_info.dev_id;
	c->queue_id = (__u16)-1;
	c->addr = addr;
	c->len = len;
	c->data[0] = data;
	ret = io_uring_submit(&b->ublk_ctrl);
	return ret == 1 ? 0 : (ret < 0 ? ret : -EIO);
}

/* the result of the control command submitted last */
static int ublk_ctrl_reap(struct bench *b)
{
	struct io_uring_cqe *cqe;
	int ret = io_uring_wait_cqe(&b->ublk_ctrl, &cqe);

	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(&b->ublk_ctrl, cqe);
	return ret;
}

/* one control command, synchronously */
static int ublk_ctrl_cmd(struct bench *b, __u32 op, __u64 addr, __u16 len, __u64 data)
{
	int ret = ublk_ctrl_submit(b, op, addr, len, data);

	return ret ? ret : ublk_ctrl_reap(b);
}

/* one io command for tag 0 on the benchmark's ring; its CQE's res */
static int ublk_io_cmd(struct bench *b, __u32 op, int result, __u64 addr, bool wait)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);
	struct ublksrv_io_cmd *c;
	struct io_uring_cqe *cqe;
	int ret;

	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = b->ublk_cdev;
	sqe->cmd_op = op;
	sqe->user_data = UD_UBLK | op;
	c = (struct ublksrv_io_cmd *)sqe->cmd;
	c->q_id = 0;
	c->tag = 0;
	c->result = result;
	c->addr = addr;
	ret = io_uring_submit(&b->ring);
	if (ret != 1)
		return ret < 0 ? ret : -EIO;
	if (!wait)
		return 0;
	ret = io_uring_wait_cqe(&b->ring, &cqe);
	if (ret)
		return ret;
	ret = cqe->user_data == (UD_UBLK | op) ? cqe->res : -EPROTO;
	io_uring_cqe_seen(&b->ring, cqe);
	return ret;
}

/* the client: one 1 MiB O_DIRECT write of the source's bytes */
static void *ublk_writer(void *p)
{
	struct bench *b = p;
	char path[64];
	int fd = -1, i;

	snprintf(path, sizeof(path), "/dev/ublkb%u", b->ublk_info.dev_id);
	for (i = 0; i < 200 && fd < 0; i++) {
		fd = open(path, O_WRONLY | O_DIRECT);
		if (fd < 0)
			usleep(20000);
	}
	if (fd < 0) {
		b->writer_ret = -errno;
		return NULL;
	}
	b->writer_ret = pwrite(fd, b->src, MAX_SIZE, 0) == (ssize_t)MAX_SIZE ? 0 : -EIO;
	close(fd);
	return NULL;
}

/*
 * A ublk device with zero copy, one queue of depth 1, served on the
 * benchmark's ring: a writer thread writes the source's 1 MiB to it, and
 * the request is held with its pages at KBUF_INDEX. Other requests (the
 * kernel's partition scan reads) are completed as zero-filled short reads.
 */
static int ublk_setup(struct bench *b)
{
	struct ublk_params params = { 0 };
	struct io_uring_cqe *cqe;
	char path[64];
	int ret;

	b->ublk_ctrl_fd = open("/dev/ublk-control", O_RDWR);
	if (b->ublk_ctrl_fd < 0)
		return -errno;
	ret = io_uring_queue_init(4, &b->ublk_ctrl, IORING_SETUP_SQE128);
	if (ret)
		return ret;
	b->ublk_info.nr_hw_queues = 1;
	b->ublk_info.queue_depth = 1;
	b->ublk_info.max_io_buf_bytes = MAX_SIZE;
	b->ublk_info.dev_id = (__u32)-1;
	b->ublk_info.ublksrv_pid = getpid();
	b->ublk_info.flags = UBLK_F_SUPPORT_ZERO_COPY;
	ret = ublk_ctrl_cmd(b, UBLK_U_CMD_ADD_DEV, (uintptr_t)&b->ublk_info,
			    sizeof(b->ublk_info), 0);
	if (ret)
		return ret;
	b->ublk_ok = 1;		/* added: teardown deletes it */
	params.len = sizeof(params);
	params.types = UBLK_PARAM_TYPE_BASIC;
	params.basic.logical_bs_shift = 9;
	params.basic.physical_bs_shift = 12;
	params.basic.io_opt_shift = 12;
	params.basic.io_min_shift = 9;
	params.basic.max_sectors = MAX_SIZE >> 9;
	params.basic.dev_sectors = (2 * MAX_SIZE) >> 9;
	ret = ublk_ctrl_cmd(b, UBLK_U_CMD_SET_PARAMS, (uintptr_t)&params, sizeof(params), 0);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "/dev/ublkc%u", b->ublk_info.dev_id);
	b->ublk_cdev = open(path, O_RDWR);
	if (b->ublk_cdev < 0)
		return -errno;
	b->ublk_iod = mmap(NULL, 4096, PROT_READ, MAP_SHARED | MAP_POPULATE, b->ublk_cdev,
			   UBLKSRV_CMD_BUF_OFFSET);
	if (b->ublk_iod == MAP_FAILED) {
		b->ublk_iod = NULL;
		return -errno;
	}
	ret = ublk_io_cmd(b, UBLK_U_IO_FETCH_REQ, 0, 0, false);
	if (ret)
		return ret;
	/*
	 * START_DEV adds the disk, whose partition scan reads it: served
	 * below, so START_DEV is only submitted here and reaped after.
	 */
	ret = ublk_ctrl_submit(b, UBLK_U_CMD_START_DEV, 0, 0, getpid());
	if (ret)
		return ret;
	b->ublk_ok = 2;		/* started, or starting */
	if (pthread_create(&b->writer, NULL, ublk_writer, b))
		return -EAGAIN;
	b->writer_started = 1;
	for (;;) {
		unsigned int op, bytes;

		ret = io_uring_wait_cqe(&b->ring, &cqe);
		if (ret)
			return ret;
		ret = cqe->res;
		io_uring_cqe_seen(&b->ring, cqe);
		if (ret != UBLK_IO_RES_OK)
			return ret < 0 ? ret : -EIO;
		op = b->ublk_iod[0].op_flags & 0xff;
		bytes = b->ublk_iod[0].nr_sectors << 9;
		if (op == UBLK_IO_OP_WRITE && bytes == MAX_SIZE && !b->ublk_iod[0].start_sector)
			break;
		/* not the writer's: a read completes zero-filled, anything else as done */
		ret = ublk_io_cmd(b, UBLK_U_IO_COMMIT_AND_FETCH_REQ,
				  op == UBLK_IO_OP_READ ? 0 : (int)bytes, 0, false);
		if (ret)
			return ret;
	}
	ret = ublk_ctrl_reap(b);
	if (ret)
		return ret;
	ret = ublk_io_cmd(b, UBLK_U_IO_REGISTER_IO_BUF, 0, KBUF_INDEX, true);
	if (ret)
		return ret;
	b->ublk_ok = 3;		/* the request is held at KBUF_INDEX */
	return 0;
}

static void ublk_teardown(struct bench *b)
{
	if (b->ublk_ok >= 3) {
		ublk_io_cmd(b, UBLK_U_IO_UNREGISTER_IO_BUF, 0, KBUF_INDEX, true);
		ublk_io_cmd(b, UBLK_U_IO_COMMIT_AND_FETCH_REQ, MAX_SIZE, 0, false);
	}
	if (b->ublk_ok >= 2 && !ublk_ctrl_submit(b, UBLK_U_CMD_STOP_DEV, 0, 0, 0)) {
		/*
		 * Serve what comes until STOP_DEV is done (it waits for the
		 * requests delivered): reads complete zero-filled, as above.
		 */
		for (int i = 0; i < 3000; i++) {
			struct __kernel_timespec ts = { .tv_nsec = 10 * 1000 * 1000 };
			struct io_uring_cqe *cqe;
			int res;

			if (!io_uring_peek_cqe(&b->ublk_ctrl, &cqe)) {
				io_uring_cqe_seen(&b->ublk_ctrl, cqe);
				break;
			}
			if (io_uring_wait_cqe_timeout(&b->ring, &cqe, &ts))
				continue;
			res = cqe->res;
			io_uring_cqe_seen(&b->ring, cqe);
			if (res == UBLK_IO_RES_OK)
				ublk_io_cmd(b, UBLK_U_IO_COMMIT_AND_FETCH_REQ,
					    (b->ublk_iod[0].op_flags & 0xff) == UBLK_IO_OP_READ ?
					    0 : (int)(b->ublk_iod[0].nr_sectors << 9), 0, false);
		}
	}
	if (b->writer_started)
		pthread_join(b->writer, NULL);
	if (b->ublk_iod)
		munmap((void *)b->ublk_iod, 4096);
	if (b->ublk_cdev > 0)
		close(b->ublk_cdev);
	b->ublk_cdev = -1;
	if (b->ublk_ok >= 1)
		ublk_ctrl_cmd(b, UBLK_U_CMD_DEL_DEV, 0, 0, 0);
	if (b->ublk_ctrl_fd > 0) {
		io_uring_queue_exit(&b->ublk_ctrl);
		close(b->ublk_ctrl_fd);
	}
	b->ublk_ok = 0;
	b->ublk_ctrl_fd = -1;
}

static int bench_setup(struct bench *b)
{
	struct io_uring_params params;
	struct iovec reg[2];
	size_t i;
	int ret;

	b->src = mmap(NULL, MAX_SIZE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	b->dst_span = MAX_SIZE + MAX_VECS * PAGE;
	b->dst = mmap(NULL, b->dst_span, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (b->src == MAP_FAILED || b->dst == MAP_FAILED) {
		printf("# mmap: %s\n", strerror(errno));
		return -ENOMEM;
	}
	for (i = 0; i < MAX_SIZE; i++)
		b->src[i] = pattern(i);

	memset(&params, 0, sizeof(params));
	params.flags = IORING_SETUP_BPF_OP;
	ret = io_uring_queue_init_params(b->o.qd, &b->ring, &params);
	if (ret) {
		printf("# io_uring setup with IORING_SETUP_BPF_OP: %s\n", strerror(-ret));
		return ret;
	}
	reg[0] = (struct iovec){ b->src, MAX_SIZE };
	reg[1] = (struct iovec){ b->dst, b->dst_span };
	/* and an empty slot, KBUF_INDEX, for the ublk request's pages */
	ret = io_uring_register_buffers_sparse(&b->ring, KBUF_INDEX + 1);
	if (!ret) {
		__u64 tags[2] = { 0, 0 };

		ret = io_uring_register_buffers_update_tag(&b->ring, 0, reg, tags, 2);
		ret = ret == 2 ? 0 : (ret < 0 ? ret : -EIO);
	}
	if (ret) {
		printf("# register buffers: %s\n", strerror(-ret));
		return ret;
	}
	b->skel = kfunc_bench__open();
	if (!b->skel) {
		printf("# skeleton open: %s\n", strerror(errno));
		return -errno;
	}
	b->skel->struct_ops.kb_ops->ring_fd = b->ring.ring_fd;
	b->skel->struct_ops.kb_ops->id = OP_ID;
	b->skel->struct_ops.kb_crc_ops->ring_fd = b->ring.ring_fd;
	b->skel->struct_ops.kb_crc_ops->id = CRC_OP_ID;
	ret = kfunc_bench__load(b->skel);
	if (ret) {
		printf("# load: %s\n", strerror(-ret));
		return ret;
	}
	b->link = bpf_map__attach_struct_ops(b->skel->maps.kb_ops);
	if (!b->link) {
		printf("# attach struct_ops: %s\n", strerror(errno));
		return -errno;
	}
	b->crc_link = bpf_map__attach_struct_ops(b->skel->maps.kb_crc_ops);
	if (!b->crc_link) {
		printf("# attach the crc struct_ops: %s\n", strerror(errno));
		return -errno;
	}
	return 0;
}

static void bench_teardown(struct bench *b)
{
	bpf_link__destroy(b->crc_link);
	bpf_link__destroy(b->link);
	kfunc_bench__destroy(b->skel);
	if (b->ring.ring_fd > 0)
		io_uring_queue_exit(&b->ring);
}

static void size_name(size_t size, char *buf, size_t len)
{
	if (size >= (1 << 20))
		snprintf(buf, len, "%zu MiB", size >> 20);
	else
		snprintf(buf, len, "%zu KiB", size >> 10);
}

static void print_table(struct bench *b, FILE *f, const char *prefix, const char *accel)
{
	unsigned int p, z;
	char sz[32];

	fprintf(f, "%skfunc micro-benchmark: uring_bpf_memcpy() vs userspace memcpy(), "
		"accelerator %s; MiB/s median of %u runs [min, max]; REG_VEC: %u entries\n",
		prefix, accel, b->o.runs, b->o.vecs);
	fprintf(f, "%s\n", prefix);
	fprintf(f, "%s| path | size | kfunc MiB/s | memcpy MiB/s | ratio | kfunc x16/req MiB/s | ratio x16 "
		"| rep movsb MiB/s | kfunc / movsb | kfunc ns/copy |\n", prefix);
	fprintf(f, "%s| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n", prefix);
	for (p = 0; p < NR_PATHS; p++) {
		for (z = 0; z < NR_SIZES; z++) {
			struct result *k = &b->res[p][z][M_KFUNC];
			struct result *x = &b->res[p][z][M_KFUNC_X16];
			struct result *m = &b->res[p][z][M_MEMCPY];
			struct result *s = &b->res[p][z][M_MOVSB];

			size_name(sizes[z], sz, sizeof(sz));
			fprintf(f, "%s| %s | %s | %.0f [%.0f, %.0f] | %.0f [%.0f, %.0f] | %.2f | "
				"%.0f [%.0f, %.0f] | %.2f | %.0f [%.0f, %.0f] | %.2f | %.0f |\n", prefix,
				path_name[p], sz, k->median, k->min, k->max,
				m->median, m->min, m->max, m->median ? k->median / m->median : 0,
				x->median, x->min, x->max, m->median ? x->median / m->median : 0,
				s->median, s->min, s->max, s->median ? k->median / s->median : 0,
				k->ns_per_copy);
		}
	}
	fprintf(f, "%s\n", prefix);
	fprintf(f, "%sKFIXED->FIXED: the kfunc copies from a held ublk WRITE request's pages "
		"(zero copy); its memcpy columns are the same bytes between user buffers%s\n",
		prefix, b->ublk_ok == 3 || b->res[PATH_KFIXED][0][M_KFUNC].median ? "" :
		" (not measured: no ublk zero-copy device)");
	fprintf(f, "%s\n", prefix);
	fprintf(f, "%sCRC32C of a FIXED buffer: uring_bpf_crc32c() (ours, not upstream's) vs "
		"userspace, MiB/s median of %u runs [min, max]\n", prefix, b->o.runs);
	fprintf(f, "%s\n", prefix);
	fprintf(f, "%s| size | kfunc MiB/s | kfunc x16/req MiB/s | user sse4.2 MiB/s | "
		"user table MiB/s | kfunc / sse4.2 | x16 / sse4.2 | kfunc ns/CRC |\n", prefix);
	fprintf(f, "%s| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n", prefix);
	for (z = 0; z < NR_CRC_SIZES; z++) {
		struct result *k = &b->crc_res[z][C_KFUNC];
		struct result *x = &b->crc_res[z][C_KFUNC_X16];
		struct result *s = &b->crc_res[z][C_SSE42];
		struct result *t = &b->crc_res[z][C_TABLE];

		size_name(crc_sizes[z], sz, sizeof(sz));
		fprintf(f, "%s| %s | %.0f [%.0f, %.0f] | %.0f [%.0f, %.0f] | %.0f [%.0f, %.0f] | "
			"%.0f [%.0f, %.0f] | %.2f | %.2f | %.0f |\n", prefix, sz,
			k->median, k->min, k->max, x->median, x->min, x->max,
			s->median, s->min, s->max, t->median, t->min, t->max,
			s->median ? k->median / s->median : 0,
			s->median ? x->median / s->median : 0, k->ns_per_copy);
	}
}

static void write_json(struct bench *b, FILE *f, const char *accel)
{
	struct utsname u;
	unsigned int p, z, m;
	const char *sep = "";

	uname(&u);
	fprintf(f, "{\n  \"benchmark\": \"kfunc\",\n  \"accelerator\": \"%s\",\n"
		"  \"kernel\": \"%s\",\n  \"runs\": %u,\n  \"min_time_s\": %.3f,\n"
		"  \"queue_depth\": %u,\n  \"reg_vec_entries\": %u,\n  \"results\": [",
		accel, u.release, b->o.runs, b->o.min_time, b->o.qd, b->o.vecs);
	for (p = 0; p < NR_PATHS; p++)
		for (z = 0; z < NR_SIZES; z++)
			for (m = 0; m < NR_METHODS; m++) {
				struct result *r = &b->res[p][z][m];

				fprintf(f, "%s\n    {\"path\": \"%s\", \"size\": %zu, \"method\": \"%s\", "
					"\"copies_per_request\": %u, \"mib_s_median\": %.2f, "
					"\"mib_s_min\": %.2f, \"mib_s_max\": %.2f, \"ns_per_copy\": %.1f, "
					"\"units_per_run\": %lu, \"verified\": %s}",
					sep, path_name[p], sizes[z], method_name[m],
					m >= M_MEMCPY ? 0 : method_reps[m], r->median, r->min, r->max,
					r->ns_per_copy, r->iters, r->verified ? "true" : "false");
				sep = ",";
			}
	for (z = 0; z < NR_CRC_SIZES; z++)
		for (m = 0; m < NR_CRC_METHODS; m++) {
			struct result *r = &b->crc_res[z][m];

			fprintf(f, ",\n    {\"path\": \"FIXED\", \"size\": %zu, \"method\": \"%s\", "
				"\"crcs_per_request\": %u, \"mib_s_median\": %.2f, "
				"\"mib_s_min\": %.2f, \"mib_s_max\": %.2f, \"ns_per_crc\": %.1f, "
				"\"units_per_run\": %lu, \"verified\": %s}",
				crc_sizes[z], crc_method_name[m],
				m <= C_KFUNC_X16 ? crc_method_reps[m] : 0, r->median, r->min,
				r->max, r->ns_per_copy, r->iters, r->verified ? "true" : "false");
		}
	fprintf(f, "\n  ]\n}\n");
}

static FILE *open_out(const char *dir, const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return fopen(path, "w");
}

static void usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [--min-time S] [--runs N] [--qd N] [--vecs N] [--out DIR]\n", argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "min-time", required_argument, NULL, 't' },
		{ "runs", required_argument, NULL, 'r' },
		{ "qd", required_argument, NULL, 'q' },
		{ "vecs", required_argument, NULL, 'v' },
		{ "out", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	static struct bench b = { .o = { 0.4, 5, 32, 16, NULL } };
	unsigned int p, z, m, t = 1, failed = 0;
	const char *accel = accelerator();
	char sz[32];
	int c;

	while ((c = getopt_long(argc, argv, "t:r:q:v:o:", longopts, NULL)) != -1) {
		switch (c) {
		case 't': b.o.min_time = atof(optarg); break;
		case 'r': b.o.runs = atoi(optarg); break;
		case 'q': b.o.qd = atoi(optarg); break;
		case 'v': b.o.vecs = atoi(optarg); break;
		case 'o': b.o.out = optarg; break;
		default: usage(argv[0]);
		}
	}
	if (b.o.runs < 1 || b.o.runs > MAX_RUNS || b.o.qd < 1 || b.o.qd > 4096 ||
	    b.o.vecs < 1 || b.o.vecs > MAX_VECS || !(b.o.min_time > 0))
		usage(argv[0]);
	setvbuf(stdout, NULL, _IOLBF, 0);

	printf("1..%zu\n", 1 + NR_PATHS * NR_SIZES * NR_METHODS + NR_CRC_SIZES * NR_CRC_METHODS);
	printf("# accelerator: %s; timings are emulated under tcg: compare them as ratios\n", accel);
	print_cpu_features();
	if (bench_setup(&b)) {
		printf("not ok %u - load the benchmark's uring_bpf_ops program on an IORING_SETUP_BPF_OP ring\n", t++);
		for (p = 0; p < NR_PATHS; p++)
			for (z = 0; z < NR_SIZES; z++)
				for (m = 0; m < NR_METHODS; m++) {
					size_name(sizes[z], sz, sizeof(sz));
					printf("ok %u - %s %s %s # SKIP no BPF op loaded\n", t++,
					       method_name[m], path_name[p], sz);
				}
		for (z = 0; z < NR_CRC_SIZES; z++)
			for (m = 0; m < NR_CRC_METHODS; m++) {
				size_name(crc_sizes[z], sz, sizeof(sz));
				printf("ok %u - %s FIXED %s # SKIP no BPF op loaded\n", t++,
				       crc_method_name[m], sz);
			}
		bench_teardown(&b);
		return 1;
	}
	printf("ok %u - load the benchmark's uring_bpf_ops program on an IORING_SETUP_BPF_OP ring\n", t++);
	c = ublk_setup(&b);
	if (c) {
		snprintf(b.ublk_err, sizeof(b.ublk_err), "no ublk zero-copy request to hold: %s",
			 strerror(-c));
		ublk_teardown(&b);
	}
	printf("# KFIXED source: %s\n", b.ublk_ok == 3 ?
	       "a held 1 MiB WRITE request of a ublk zero-copy device" : b.ublk_err);

	/* methods alternate within each (path, size), so drift hits all alike */
	for (p = 0; p < NR_PATHS; p++) {
		for (z = 0; z < NR_SIZES; z++) {
			for (m = 0; m < NR_METHODS; m++) {
				struct result *r = &b.res[p][z][m];

				size_name(sizes[z], sz, sizeof(sz));
				if (p == PATH_KFIXED && b.ublk_ok != 3) {
					printf("ok %u - %s %s %s # SKIP %s\n", t++, method_name[m],
					       path_name[p], sz, b.ublk_err);
					continue;
				}
				measure(&b, p, z, m);
				if (r->verified) {
					printf("ok %u - %s %s %s: %.1f MiB/s [%.1f, %.1f], %lu units x %u runs, "
					       "destination verified\n", t++, method_name[m], path_name[p], sz,
					       r->median, r->min, r->max, r->iters, b.o.runs);
				} else {
					printf("not ok %u - %s %s %s: ran and the destination verified (%s)\n",
					       t++, method_name[m], path_name[p], sz, r->err);
					failed++;
				}
			}
		}
	}
	/* CRC32C: the table-driven CRC of each size is the reference */
	for (z = 0; z < NR_CRC_SIZES; z++) {
		b.crc_want = crc32c_table(~0U, b.src, crc_sizes[z]);
		for (m = 0; m < NR_CRC_METHODS; m++) {
			struct result *r = &b.crc_res[z][m];

			crc_measure(&b, z, m);
			size_name(crc_sizes[z], sz, sizeof(sz));
			if (r->verified) {
				printf("ok %u - %s FIXED %s: %.1f MiB/s [%.1f, %.1f], %lu units x %u runs, "
				       "CRC verified\n", t++, crc_method_name[m], sz, r->median, r->min,
				       r->max, r->iters, b.o.runs);
			} else {
				printf("not ok %u - %s FIXED %s: ran and the CRC verified (%s)\n", t++,
				       crc_method_name[m], sz, r->err);
				failed++;
			}
		}
	}
	ublk_teardown(&b);
	if (b.writer_started && b.writer_ret)
		printf("# the ublk writer: %s\n", strerror(-b.writer_ret));
	print_table(&b, stdout, "# ", accel);
	if (b.o.out) {
		FILE *f = open_out(b.o.out, "table.md");

		if (f) {
			print_table(&b, f, "", accel);
			fclose(f);
		}
		f = open_out(b.o.out, "kfunc.json");
		if (f) {
			write_json(&b, f, accel);
			fclose(f);
		}
		if (!f)
			printf("# writing into %s: %s\n", b.o.out, strerror(errno));
	}
	bench_teardown(&b);
	return failed ? 1 : 0;
}
