// SPDX-License-Identifier: MIT
/*
 * hostile: what an unprivileged process can do with IORING_OP_BPF while
 * iou-offloadd runs. Started as root; the work is done by a child that has
 * dropped to nobody (uid/gid 65534, no capabilities):
 *
 *   1. it cannot load or attach uring_bpf_ops (the daemon's own loader,
 *      run as nobody on its own ring, fails with EPERM);
 *   2. it cannot get hold of the daemon's ring (pidfd_getfd, /proc/PID/fd);
 *   3. on its own ring, with no ops attached, IORING_OP_BPF fails for every
 *      op id;
 *   4. with the daemon's programs attached to its ring by root (the worst
 *      case: a privileged helper serving an unprivileged client), crafted
 *      descriptors (huge lengths, wrapping and kernel addresses, buffer
 *      indexes that exist only on the daemon's ring, bogus types and op ids,
 *      bad descriptor arrays) all complete with a negative errno, and
 *      nothing it reads back holds the daemon's data (a marker pattern the
 *      run script puts in the daemon's source).
 *
 * usage: hostile MARKER [DAEMON_PID DAEMON_RING_FD]
 * Prints "PASS what" / "FAIL what" / "# note" lines; `run` makes TAP of them.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <grp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <liburing.h>

#include "iou_abi.h"
#include "iou_ops.h"
#include "bpf_loader.h"

#define BUF_LEN		65536
#define NOBODY		65534

static int fails;

static void result(int good, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void result(int good, const char *fmt, ...)
{
	va_list ap;

	printf("%s ", good ? "PASS" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!good)
		fails++;
}

static const char *err_name(int res)
{
	static char buf[32];

	switch (-res) {
	case EFAULT: return "-EFAULT";
	case EINVAL: return "-EINVAL";
	case EPERM: return "-EPERM";
	case EACCES: return "-EACCES";
	case EOPNOTSUPP: return "-EOPNOTSUPP";
	case EIO: return "-EIO";
	case ENOMEM: return "-ENOMEM";
	case ENOENT: return "-ENOENT";
	case EBADF: return "-EBADF";
	}
	snprintf(buf, sizeof(buf), "%d", res);
	return buf;
}

static struct io_uring ring;
static uint8_t *buf_a, *buf_b;		/* registered buffers 0 and 1 */
static const char *marker;

/* one IORING_OP_BPF: op @id, descriptor array @descs (@nr pairs), @expect bytes */
static int submit_bpf(unsigned int id, uint64_t descs, uint32_t nr, uint64_t expect)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	struct io_uring_cqe *cqe;
	int ret;

	if (!sqe)
		return -EBUSY;
	io_uring_prep_rw(IOU_OP_BPF, sqe, -1, (void *)(uintptr_t)descs, nr, expect);
	iou_sqe_bpf_op_flags(sqe) = id << IORING_BPF_OP_SHIFT;
	ret = io_uring_submit(&ring);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(&ring, &cqe);
	if (ret < 0)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(&ring, cqe);
	return ret;
}

static struct io_bpf_buf_desc pair[2 * 40] __attribute__((aligned(64)));

static struct io_bpf_buf_desc desc(uint8_t type, uint16_t idx, uint32_t len, uint64_t addr)
{
	return (struct io_bpf_buf_desc){ .type = type, .buf_index = idx, .len = len, .addr = addr };
}

/* pair: dst, src through the copy op; expect a negative result */
static void crafted(const char *what, struct io_bpf_buf_desc dst, struct io_bpf_buf_desc src,
		    uint32_t expect)
{
	int res;

	pair[0] = dst;
	pair[1] = src;
	res = submit_bpf(IOU_OP_ID_COPY, (uintptr_t)pair, 1, expect);
	result(res < 0, "crafted descriptors: %s -> %s", what, err_name(res));
}

static int scan_marker(const uint8_t *p, size_t len)
{
	size_t m = strlen(marker);

	for (size_t i = 0; i + m <= len; i++)
		if (!memcmp(p + i, marker, m))
			return 1;
	return 0;
}

static uint64_t cap_eff(void)
{
	char line[256];
	uint64_t v = ~0ULL;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %lx", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

static int child(int sock, int dpid, int dfd)
{
	struct bpf_ops_handle *h = NULL;
	struct iovec iov[2];
	char err[256], c;
	int ret, res;

	if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, NOBODY)) {
		result(0, "drop to uid %d: %s", NOBODY, strerror(errno));
		return 1;
	}
	result(getuid() == NOBODY && cap_eff() == 0, "running as uid %d with CapEff %#lx",
	       getuid(), cap_eff());

	/* its own ring, with the flag the op needs */
	ret = io_uring_queue_init(16, &ring, IOU_SETUP_BPF_OP);
	if (ret) {
		result(0, "unprivileged io_uring_setup(IORING_SETUP_BPF_OP): %s", strerror(-ret));
		return 1;
	}
	result(1, "unprivileged io_uring_setup(IORING_SETUP_BPF_OP) works (its own ring)");

	/* 1: the daemon's loader, as nobody, on its own ring */
	ret = bpf_ops_attach(ring.ring_fd, &h, err, sizeof(err));
	result(ret == -EPERM, "unprivileged attach of uring_bpf_ops to its own ring fails with "
	       "EPERM (%s: %s)", err_name(ret), ret ? err : "attached!");
	bpf_ops_detach(h);
	/* 2: the daemon's ring is out of reach */
	if (dpid > 0) {
		int pidfd = syscall(SYS_pidfd_open, dpid, 0), fd;
		char path[64];

		fd = pidfd >= 0 ? syscall(SYS_pidfd_getfd, pidfd, dfd, 0) : -1;
		result(fd < 0, "pidfd_getfd of the daemon's ring fd %d fails (%s)", dfd,
		       fd < 0 ? strerror(errno) : "got it!");
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", dpid, dfd);
		fd = open(path, O_RDWR);
		result(fd < 0, "open(%s) fails (%s)", path, fd < 0 ? strerror(errno) : "opened!");
		if (pidfd >= 0)
			close(pidfd);
	}

	buf_a = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	buf_b = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(buf_a, 'h', BUF_LEN);
	iov[0] = (struct iovec){ buf_a, BUF_LEN };
	iov[1] = (struct iovec){ buf_b, BUF_LEN };
	ret = io_uring_register_buffers(&ring, iov, 2);
	result(ret == 0, "registering 2 fixed buffers of its own (%s)", err_name(ret));
	if (ret)
		return 1;

	/* 3: no ops on this ring: every op id fails */
	pair[0] = desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b);
	pair[1] = desc(IO_BPF_BUF_FIXED, 0, 4096, (uintptr_t)buf_a);
	{
		static const unsigned int ids[] = { 0, 1, 2, 3, 4, 5, 15, 16, 200, 255 };

		for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
			res = submit_bpf(ids[i], (uintptr_t)pair, 1, 4096);
			result(res < 0, "no ops attached: op id %u -> %s", ids[i], err_name(res));
		}
	}

	/* root attaches the daemon's programs to this ring */
	/* io_uring files cannot travel over SCM_RIGHTS: root takes it with pidfd_getfd */
	if (write(sock, &ring.ring_fd, sizeof(int)) != sizeof(int) || read(sock, &c, 1) != 1 ||
	    c != 'y') {
		result(0, "root attached the daemon's uring_bpf_ops to this ring");
		return 1;
	}
	result(1, "root attached the daemon's uring_bpf_ops (copy, mirror, stripe, gather) "
	       "to this ring");

	/* control: a well-formed copy works, so the errors below are the checks */
	memset(buf_b, 0, BUF_LEN);
	pair[0] = desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b);
	pair[1] = desc(IO_BPF_BUF_FIXED, 0, 4096, (uintptr_t)buf_a);
	res = submit_bpf(IOU_OP_ID_COPY, (uintptr_t)pair, 1, 4096);
	result(res == 4096 && buf_b[0] == 'h' && buf_b[4095] == 'h',
	       "control: a well-formed FIXED -> FIXED copy of 4096 bytes works (%d)", res);

	/* 4: crafted descriptors, each must fail */
	for (unsigned int idx = 2; idx < 16; idx++) {
		char what[96];

		snprintf(what, sizeof(what), "FIXED buf_index %u (registered on the daemon's "
			 "ring, not on this one)", idx);
		crafted(what, desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b),
			desc(IO_BPF_BUF_FIXED, idx, 4096, (uintptr_t)buf_a), 4096);
	}
	crafted("FIXED buf_index 65535", desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b),
		desc(IO_BPF_BUF_FIXED, 0xffff, 4096, (uintptr_t)buf_a), 4096);
	crafted("FIXED len 0xffffffff", desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b),
		desc(IO_BPF_BUF_FIXED, 0, 0xffffffff, (uintptr_t)buf_a), 4096);
	crafted("FIXED range past the end of the buffer",
		desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b),
		desc(IO_BPF_BUF_FIXED, 0, 4096, (uintptr_t)buf_a + BUF_LEN - 100), 4096);
	crafted("FIXED address before the buffer",
		desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b),
		desc(IO_BPF_BUF_FIXED, 0, 4096, (uintptr_t)buf_a - 4096), 4096);
	crafted("FIXED wrapping address 0xfffffffffffff000 + 8192",
		desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b),
		desc(IO_BPF_BUF_FIXED, 0, 8192, 0xfffffffffffff000ULL), 4096);
	/*
	 * KFIXED names a kernel buffer (a ublk request's pages, addr an offset):
	 * index 0 holds a user buffer, so each is refused whatever the address
	 */
	crafted("KFIXED wrapping address 0xffffffffffffff00 + 4096",
		desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b),
		desc(IO_BPF_BUF_KFIXED, 0, 4096, 0xffffffffffffff00ULL), 4096);
	crafted("KFIXED range past the end of the buffer",
		desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b),
		desc(IO_BPF_BUF_KFIXED, 0, 4096, (uintptr_t)buf_a + BUF_LEN - 1), 4096);
	crafted("KFIXED address below the buffer (an offset, BUF_LEN - 1, given as addr)",
		desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b),
		desc(IO_BPF_BUF_KFIXED, 0, 4096, BUF_LEN - 1), 4096);
	crafted("USER wrapping address 0xfffffffffffff000 + 8192 as destination",
		desc(IO_BPF_BUF_USER, 0, 8192, 0xfffffffffffff000ULL),
		desc(IO_BPF_BUF_FIXED, 0, 4096, (uintptr_t)buf_a), 4096);
	crafted("USER kernel address (direct map) as source",
		desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b),
		desc(IO_BPF_BUF_USER, 0, 4096, 0xffff888000000000ULL), 4096);
	crafted("USER kernel address (direct map) as destination",
		desc(IO_BPF_BUF_USER, 0, 4096, 0xffff888000100000ULL),
		desc(IO_BPF_BUF_FIXED, 0, 4096, (uintptr_t)buf_a), 4096);
	crafted("USER unmapped address", desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b),
		desc(IO_BPF_BUF_USER, 0, 4096, 0x10000), 4096);
	crafted("USER len 0x80000000 (past MAX_RW_COUNT)",
		desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b),
		desc(IO_BPF_BUF_USER, 0, 0x80000000u, (uintptr_t)buf_a), 4096);
	crafted("VEC with 100000 iovecs (past UIO_MAXIOV)",
		desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b),
		desc(IO_BPF_BUF_VEC, 0, 100000, (uintptr_t)buf_a), 4096);
	{
		static struct iovec bad[2];

		bad[0] = (struct iovec){ (void *)0xffff888000000000ULL, 4096 };
		bad[1] = (struct iovec){ (void *)0xfffffffffffff000ULL, 8192 };
		crafted("VEC of kernel and wrapping iovecs",
			desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b),
			desc(IO_BPF_BUF_VEC, 0, 2, (uintptr_t)bad), 4096);
		bad[0] = (struct iovec){ buf_a + BUF_LEN - 1024, 8192 };
		crafted("REG_VEC iovec running past the registered buffer",
			desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b),
			desc(IO_BPF_BUF_REG_VEC, 0, 1, (uintptr_t)bad), 4096);
		crafted("REG_VEC iovec array at an unmapped address",
			desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b),
			desc(IO_BPF_BUF_REG_VEC, 0, 4, 0x10000), 4096);
		crafted("REG_VEC on buffer index 7 (not on this ring)",
			desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b),
			desc(IO_BPF_BUF_REG_VEC, 7, 1, (uintptr_t)bad), 4096);
	}
	crafted("descriptor type 5", desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b),
		desc(5, 0, 4096, (uintptr_t)buf_a), 4096);
	crafted("descriptor type 255", desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b),
		desc(255, 0, 4096, (uintptr_t)buf_a), 4096);
	{
		struct io_bpf_buf_desc r = desc(IO_BPF_BUF_FIXED, 0, 4096, (uintptr_t)buf_a);

		r.reserved = 1;
		crafted("reserved byte set", desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b), r,
			4096);
	}
	crafted("sqe->off (bytes expected) larger than the pair copies",
		desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b),
		desc(IO_BPF_BUF_FIXED, 0, 4096, (uintptr_t)buf_a), 8192);

	/* the SQE itself */
	pair[0] = desc(IO_BPF_BUF_FIXED, 1, 4096, (uintptr_t)buf_b);
	pair[1] = desc(IO_BPF_BUF_FIXED, 0, 4096, (uintptr_t)buf_a);
	res = submit_bpf(IOU_OP_ID_COPY, 0x10000, 1, 4096);
	result(res < 0, "crafted SQE: descriptor array at an unmapped address -> %s", err_name(res));
	res = submit_bpf(IOU_OP_ID_COPY, 0xffff888000000000ULL, 1, 4096);
	result(res < 0, "crafted SQE: descriptor array at a kernel address -> %s", err_name(res));
	res = submit_bpf(IOU_OP_ID_COPY, (uintptr_t)pair, 0, 4096);
	result(res < 0, "crafted SQE: 0 pairs -> %s", err_name(res));
	res = submit_bpf(IOU_OP_ID_COPY, (uintptr_t)pair, IOU_OPS_MAX_PAIRS + 1, 4096);
	result(res < 0, "crafted SQE: %d pairs (past the program's bound) -> %s",
	       IOU_OPS_MAX_PAIRS + 1, err_name(res));
	res = submit_bpf(IOU_OP_ID_COPY, (uintptr_t)pair, 0xffffffff, 4096);
	result(res < 0, "crafted SQE: 0xffffffff pairs -> %s", err_name(res));
	res = submit_bpf(IOU_OP_ID_COPY, (uintptr_t)pair, 1, 1ULL << 40);
	result(res < 0, "crafted SQE: 1 TiB expected -> %s", err_name(res));
	/* the sum op: it reads its descriptor as a copy does, and writes only sums[] */
	res = submit_bpf(IOU_OP_ID_SUM, 0xffff888000000000ULL, 1, 0);
	result(res < 0, "sum op: descriptor array at a kernel address -> %s", err_name(res));
	pair[1] = desc(IO_BPF_BUF_FIXED, 7, 4096, (uintptr_t)buf_a);
	res = submit_bpf(IOU_OP_ID_SUM, (uintptr_t)pair, 1, 0);
	result(res < 0, "sum op: a buffer index this ring never registered -> %s", err_name(res));
	pair[1] = desc(IO_BPF_BUF_FIXED, 0, 4096, (uintptr_t)buf_a);
	res = submit_bpf(IOU_OP_ID_SUM, (uintptr_t)pair, 1, 0x7fffffff);
	result(res == 4096, "sum op: its own buffer, an entry far past sums[] (masked) -> %s",
	       err_name(res));
	{
		static const unsigned int ids[] = { 0, IOU_OP_ID_MAX + 1, 15, 16, 64, 255 };

		for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
			res = submit_bpf(ids[i], (uintptr_t)pair, 1, 4096);
			result(res < 0, "bogus op id %u (ops attached: 1..%d) -> %s", ids[i],
			       IOU_OP_ID_MAX, err_name(res));
		}
	}

	/* nothing it could read holds the daemon's bytes */
	result(!scan_marker(buf_a, BUF_LEN) && !scan_marker(buf_b, BUF_LEN),
	       "its buffers never held the daemon's data (marker '%s' not found)", marker);
	/* and the ring still works: the errors were per request */
	res = submit_bpf(IOU_OP_ID_COPY, (uintptr_t)pair, 1, 4096);
	result(res == 4096, "the ring still works after all that (%d)", res);
	io_uring_queue_exit(&ring);
	return fails ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct bpf_ops_handle *h = NULL;
	int sv[2], status, fd, ret;
	char err[256], c;
	pid_t pid;

	if (argc < 2) {
		fprintf(stderr, "usage: %s MARKER [DAEMON_PID DAEMON_RING_FD]\n", argv[0]);
		return 2;
	}
	marker = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 1;
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		_exit(child(sv[1], argc > 3 ? atoi(argv[2]) : 0, argc > 3 ? atoi(argv[3]) : -1));
	}
	close(sv[1]);
	fd = -1;
	if (read(sv[0], &ret, sizeof(ret)) == sizeof(ret)) {
		int pidfd = syscall(SYS_pidfd_open, pid, 0);

		fd = pidfd >= 0 ? syscall(SYS_pidfd_getfd, pidfd, ret, 0) : -1;
		if (fd < 0)
			printf("# root: pidfd_getfd of the child's ring: %s\n", strerror(errno));
	}
	{
		ret = fd >= 0 ? bpf_ops_attach(fd, &h, err, sizeof(err)) : -EBADF;
		if (ret && fd >= 0)
			printf("# root attach failed: %s\n", err);
		c = ret ? 'n' : 'y';
		if (write(sv[0], &c, 1) != 1)
			return 1;
	}
	waitpid(pid, &status, 0);
	bpf_ops_detach(h);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
