// SPDX-License-Identifier: MIT
/*
 * benchtool: the measuring half of `make bench`, the same binary in the guest
 * and on the host (it loads nothing into any kernel).
 *
 *   benchtool accel
 *       the accelerator this runs under: tcg, kvm, none (bare metal), ...
 *   benchtool run [--count] [--log FILE] -- CMD [ARG...]
 *       runs CMD, prints one line
 *         wall=S user=S sys=S rc=N io_uring_enter=N syscalls=N punts=N
 *         nvcsw=N nivcsw=N minflt=N maxrss_kb=N
 *       with the CPU time, the voluntary and involuntary context switches,
 *       the minor faults (pages first touched, MAP_POPULATE's included) and
 *       the peak RSS of CMD and everything it waited for (wait4's rusage: every
 *       thread of CMD, io-wq workers included), and, with --count, the
 *       io_uring_enter(2) calls, all system calls and the requests io_uring
 *       punted to io-wq of CMD and its threads and children, counted exactly
 *       by perf tracepoint counters (syscalls:sys_enter_io_uring_enter,
 *       raw_syscalls:sys_enter, io_uring:io_uring_queue_async_work; counters
 *       with inherit follow every task CMD creates after exec, io-wq's
 *       io_threads too: the kernel forks them like any thread; -1 when not
 *       counted). CMD's output goes to FILE (default /dev/null).
 *   benchtool memcpy --block SIZE --total SIZE [--region SIZE]
 *       userspace memcpy() bandwidth: TOTAL bytes in BLOCK-sized copies
 *       walking through two REGION-sized buffers (default 64 MiB, so the
 *       copies leave the caches like streamed data does); prints the run
 *       line above for the copy loop alone, after checking the copy
 *   benchtool fill PATH SIZE
 *       writes SIZE bytes of a pattern that differs per 8-byte word (no page
 *       of it is zero or equal to another) at the start of PATH, then fsync
 *   benchtool gpt DEV PARTS SIZE
 *       writes a GPT onto DEV with PARTS partitions of SIZE bytes each
 *       (1 MiB aligned) and asks the kernel to re-read it
 *   benchtool stamp PATH SIZE EVERY SEED
 *       writes a 4 KiB stamp (each 8-byte word derived from its offset and
 *       SEED) at every multiple of EVERY below SIZE, and nothing else: a
 *       large source that costs little to make on a sparse disk (the rest
 *       reads as zeros)
 *   benchtool verify-stamps PATH SIZE EVERY SEED
 *       reads SIZE bytes of PATH and checks that they are what `stamp` wrote
 *       on zeros: every stamp in place (a block copied to the wrong offset,
 *       or one left from a run with another SEED, fails) and zeros between
 *
 * Sizes take K, M, G suffixes (powers of 1024).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/fs.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cpuid.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double tv(const struct timeval *t)
{
	return t->tv_sec + t->tv_usec / 1e6;
}

static unsigned long long parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	switch (*end) {
	case 'G': case 'g': v <<= 10; /* fall through */
	case 'M': case 'm': v <<= 10; /* fall through */
	case 'K': case 'k': v <<= 10; end++; break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	if (*end || end == s) {
		fprintf(stderr, "benchtool: bad size '%s'\n", s);
		exit(2);
	}
	return v;
}

static int cmd_accel(void)
{
	unsigned int a, b, c, d;
	char sig[13] = "";

	__cpuid(1, a, b, c, d);
	if (!(c & (1U << 31))) {
		puts("none");
		return 0;
	}
	__cpuid(0x40000000, a, b, c, d);
	memcpy(sig, &b, 4);
	memcpy(sig + 4, &c, 4);
	memcpy(sig + 8, &d, 4);
	if (!strcmp(sig, "TCGTCGTCGTCG"))
		puts("tcg");
	else if (!strncmp(sig, "KVMKVMKVM", 9))
		puts("kvm");
	else
		printf("hypervisor:%s\n", sig);
	return 0;
}

/* the perf id of a tracepoint, from tracefs; -1 if there is none */
static long tracepoint_id(const char *event)
{
	static const char *const roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char path[256];
	unsigned int i;
	long id = -1;
	FILE *f;

	for (i = 0; i < 2 && id < 0; i++) {
		snprintf(path, sizeof(path), "%s/events/%s/id", roots[i], event);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%ld", &id) != 1)
			id = -1;
		fclose(f);
	}
	return id;
}

/* a counter of a tracepoint for pid and its future children, armed at exec */
static int open_counter(const char *event, pid_t pid)
{
	struct perf_event_attr attr;
	long id = tracepoint_id(event);

	if (id < 0)
		return -1;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_TRACEPOINT;
	attr.config = id;
	attr.disabled = 1;
	attr.enable_on_exec = 1;
	attr.inherit = 1;
	return syscall(SYS_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static long long read_counter(int fd)
{
	unsigned long long v;

	if (fd < 0 || read(fd, &v, sizeof(v)) != sizeof(v))
		return -1;
	return (long long)v;
}

static int cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "count", no_argument, NULL, 'c' },
		{ "log", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	const char *log = "/dev/null";
	int count = 0, c, go[2], ufd = -1, sfd = -1, pfd = -1, status, rc;
	struct rusage ru;
	double t0, t1;
	pid_t pid;
	char x = 0;

	while ((c = getopt_long(argc, argv, "+cl:", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': count = 1; break;
		case 'l': log = optarg; break;
		default: return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "usage: benchtool run [--count] [--log FILE] -- CMD [ARG...]\n");
		return 2;
	}
	if (pipe2(go, O_CLOEXEC))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		close(fd);
		close(go[1]);
		/* wait until the counters are attached */
		if (read(go[0], &x, 1) != 1)
			_exit(126);
		execvp(argv[optind], argv + optind);
		_exit(127);
	}
	close(go[0]);
	if (count) {
		ufd = open_counter("syscalls/sys_enter_io_uring_enter", pid);
		sfd = open_counter("raw_syscalls/sys_enter", pid);
		if (ufd < 0 || sfd < 0)
			fprintf(stderr, "benchtool: perf tracepoint counters: %s\n", strerror(errno));
		/* a kernel without io_uring's tracepoints: punts=-1, not a failure */
		pfd = open_counter("io_uring/io_uring_queue_async_work", pid);
	}
	t0 = now();
	if (write(go[1], &x, 1) != 1)
		return 1;
	close(go[1]);
	if (wait4(pid, &status, 0, &ru) < 0)
		return 1;
	t1 = now();
	rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	printf("wall=%.6f user=%.6f sys=%.6f rc=%d io_uring_enter=%lld syscalls=%lld punts=%lld "
	       "nvcsw=%ld nivcsw=%ld minflt=%ld maxrss_kb=%ld\n",
	       t1 - t0, tv(&ru.ru_utime), tv(&ru.ru_stime), rc,
	       read_counter(ufd), read_counter(sfd), read_counter(pfd),
	       ru.ru_nvcsw, ru.ru_nivcsw, ru.ru_minflt, ru.ru_maxrss);
	return 0;
}

static int cmd_memcpy(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "block", required_argument, NULL, 'b' },
		{ "total", required_argument, NULL, 't' },
		{ "region", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long block = 1 << 20, total = 256ULL << 20, region = 64ULL << 20, done, off;
	struct rusage r0, r1;
	unsigned char *src, *dst;
	double t0, t1;
	size_t i;
	int c;

	while ((c = getopt_long(argc, argv, "b:t:r:", longopts, NULL)) != -1) {
		switch (c) {
		case 'b': block = parse_size(optarg); break;
		case 't': total = parse_size(optarg); break;
		case 'r': region = parse_size(optarg); break;
		default: return 2;
		}
	}
	if (!block || region < block || region % block) {
		fprintf(stderr, "benchtool memcpy: region must be a multiple of block\n");
		return 2;
	}
	src = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	dst = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (src == MAP_FAILED || dst == MAP_FAILED) {
		perror("benchtool memcpy: mmap");
		return 1;
	}
	for (i = 0; i < region; i++)
		src[i] = (unsigned char)(i * 131 + 7 + (i >> 12));
	getrusage(RUSAGE_SELF, &r0);
	t0 = now();
	for (done = 0, off = 0; done < total; done += block) {
		memcpy(dst + off, src + off, block);
		__asm__ volatile("" : : "r"(dst) : "memory");
		off += block;
		if (off == region)
			off = 0;
	}
	t1 = now();
	getrusage(RUSAGE_SELF, &r1);
	/* every block of dst that was written holds its source */
	if (memcmp(dst, src, total < region ? total : region)) {
		fprintf(stderr, "benchtool memcpy: destination differs from the source\n");
		return 1;
	}
	printf("wall=%.6f user=%.6f sys=%.6f rc=0 io_uring_enter=0 syscalls=0 punts=0 "
	       "nvcsw=%ld nivcsw=%ld\n", t1 - t0,
	       tv(&r1.ru_utime) - tv(&r0.ru_utime), tv(&r1.ru_stime) - tv(&r0.ru_stime),
	       r1.ru_nvcsw - r0.ru_nvcsw, r1.ru_nivcsw - r0.ru_nivcsw);
	return 0;
}

static int cmd_fill(int argc, char **argv)
{
	unsigned long long size, done = 0, seed = 0x9e3779b97f4a7c15ULL;
	size_t chunk = 1 << 20, i;
	uint64_t *buf;
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: benchtool fill PATH SIZE\n");
		return 2;
	}
	size = parse_size(argv[2]);
	fd = open(argv[1], O_WRONLY | O_CREAT, 0644);
	buf = malloc(chunk);
	if (fd < 0 || !buf) {
		perror(argv[1]);
		return 1;
	}
	while (done < size) {
		size_t n = size - done < chunk ? size - done : chunk;

		for (i = 0; i < chunk / 8; i++)
			buf[i] = ((done / 8 + i) * seed) ^ (done + i * 8) ^ 0x5a5a5a5a5a5a5a5aULL;
		if (pwrite(fd, buf, n, done) != (ssize_t)n) {
			perror("benchtool fill: write");
			return 1;
		}
		done += n;
	}
	if (fsync(fd)) {
		perror("benchtool fill: fsync");
		return 1;
	}
	close(fd);
	free(buf);
	return 0;
}

/* CRC-32 (IEEE 802.3), as GPT wants it */
static uint32_t crc32(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint32_t crc = 0xffffffff;
	int k;

	while (n--) {
		crc ^= *b++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320 & -(crc & 1));
	}
	return ~crc;
}

struct gpt_header {
	char signature[8];
	uint32_t revision, header_size, header_crc, reserved;
	uint64_t my_lba, alternate_lba, first_usable, last_usable;
	unsigned char disk_guid[16];
	uint64_t entries_lba;
	uint32_t nr_entries, entry_size, entries_crc;
} __attribute__((packed));

struct gpt_entry {
	unsigned char type_guid[16], part_guid[16];
	uint64_t first_lba, last_lba, attrs;
	uint16_t name[36];
} __attribute__((packed));

static int cmd_gpt(int argc, char **argv)
{
	/* 0FC63DAF-8483-4772-8E79-3D69D8477DE4, Linux filesystem data, on-disk order */
	static const unsigned char linux_data[16] = {
		0xaf, 0x3d, 0xc6, 0x0f, 0x83, 0x84, 0x72, 0x47,
		0x8e, 0x79, 0x3d, 0x69, 0xd8, 0x47, 0x7d, 0xe4 };
	enum { SECTOR = 512, NR_ENTRIES = 128 };
	static struct gpt_entry entries[NR_ENTRIES];
	unsigned long long size, dev_bytes, parts, lba, part_lbas, last_lba;
	unsigned char mbr[SECTOR] = { 0 }, hdr_sector[SECTOR] = { 0 };
	struct gpt_header *h = (struct gpt_header *)hdr_sector;
	unsigned int i;
	int fd;

	if (argc != 4) {
		fprintf(stderr, "usage: benchtool gpt DEV PARTS SIZE\n");
		return 2;
	}
	parts = strtoull(argv[2], NULL, 10);
	size = parse_size(argv[3]);
	fd = open(argv[1], O_RDWR | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, BLKGETSIZE64, &dev_bytes)) {
		perror(argv[1]);
		return 1;
	}
	part_lbas = (size + (1 << 20) - 1) / (1 << 20) * ((1 << 20) / SECTOR);
	last_lba = dev_bytes / SECTOR - 1;
	if (parts < 1 || parts > NR_ENTRIES || size % SECTOR ||
	    2048 + parts * part_lbas > last_lba - 33) {
		fprintf(stderr, "benchtool gpt: %llu partitions of %llu bytes do not fit on %s (%llu bytes)\n",
			parts, size, argv[1], dev_bytes);
		return 1;
	}
	for (i = 0, lba = 2048; i < parts; i++, lba += part_lbas) {
		memcpy(entries[i].type_guid, linux_data, 16);
		memset(entries[i].part_guid, 0, 16);
		entries[i].part_guid[0] = 0x10;
		entries[i].part_guid[15] = i + 1;
		entries[i].first_lba = lba;
		entries[i].last_lba = lba + size / SECTOR - 1;
		entries[i].name[0] = 'b';
		entries[i].name[1] = '0' + i % 10;
	}
	/* protective MBR: one partition of type 0xee over the disk */
	mbr[446 + 4] = 0xee;
	mbr[446 + 2] = 0x02;
	*(uint32_t *)&mbr[446 + 8] = 1;
	*(uint32_t *)&mbr[446 + 12] = last_lba > 0xffffffffULL ? 0xffffffff : (uint32_t)last_lba;
	mbr[510] = 0x55;
	mbr[511] = 0xaa;

	memcpy(h->signature, "EFI PART", 8);
	h->revision = 0x00010000;
	h->header_size = sizeof(*h);
	h->my_lba = 1;
	h->alternate_lba = last_lba;
	h->first_usable = 34;
	h->last_usable = last_lba - 33;
	h->disk_guid[0] = 0x10;
	h->disk_guid[15] = 0xd1;
	h->entries_lba = 2;
	h->nr_entries = NR_ENTRIES;
	h->entry_size = sizeof(struct gpt_entry);
	h->entries_crc = crc32(entries, sizeof(entries));
	h->header_crc = crc32(h, sizeof(*h));
	if (pwrite(fd, mbr, SECTOR, 0) != SECTOR ||
	    pwrite(fd, hdr_sector, SECTOR, SECTOR) != SECTOR ||
	    pwrite(fd, entries, sizeof(entries), 2 * SECTOR) != sizeof(entries)) {
		perror("benchtool gpt: write");
		return 1;
	}
	/* the backup: entries before the last 33 sectors' header at the end */
	h->my_lba = last_lba;
	h->alternate_lba = 1;
	h->entries_lba = last_lba - 32;
	h->header_crc = 0;
	h->header_crc = crc32(h, sizeof(*h));
	if (pwrite(fd, entries, sizeof(entries), (last_lba - 32) * SECTOR) != sizeof(entries) ||
	    pwrite(fd, hdr_sector, SECTOR, last_lba * SECTOR) != SECTOR) {
		perror("benchtool gpt: write backup");
		return 1;
	}
	if (fsync(fd) || ioctl(fd, BLKRRPART)) {
		perror("benchtool gpt: re-read partition table");
		return 1;
	}
	close(fd);
	return 0;
}

#define STAMP_SIZE	4096
#define STAMP_CHUNK	(4U << 20)

static uint64_t stamp_word(unsigned long long off, uint64_t seed)
{
	return (off * 0x9e3779b97f4a7c15ULL) ^ seed ^ 0xa5a5a5a5a5a5a5a5ULL;
}

static void stamp_make(uint64_t *w, unsigned long long off, uint64_t seed)
{
	size_t i;

	for (i = 0; i < STAMP_SIZE / 8; i++)
		w[i] = stamp_word(off + i * 8, seed);
}

/* O_DIRECT where the file takes it (block devices): no page cache to fill or flush */
static int open_maybe_direct(const char *path, int flags)
{
	int fd = open(path, flags | O_DIRECT | O_CLOEXEC, 0644);

	return fd >= 0 ? fd : open(path, flags | O_CLOEXEC, 0644);
}

static int stamp_args(int argc, char **argv, unsigned long long *size,
		      unsigned long long *every, uint64_t *seed)
{
	if (argc != 5)
		return -1;
	*size = parse_size(argv[2]);
	*every = parse_size(argv[3]);
	*seed = strtoull(argv[4], NULL, 0);
	if (*every < STAMP_SIZE || *every % STAMP_SIZE || STAMP_CHUNK % *every ||
	    *size % *every)
		return -1;
	return 0;
}

static int cmd_stamp(int argc, char **argv)
{
	unsigned long long size, every, off;
	uint64_t seed, *w;
	int fd;

	if (stamp_args(argc, argv, &size, &every, &seed)) {
		fprintf(stderr, "usage: benchtool stamp PATH SIZE EVERY SEED "
			"(EVERY a multiple of 4K dividing 4M and SIZE)\n");
		return 2;
	}
	fd = open_maybe_direct(argv[1], O_WRONLY | O_CREAT);
	if (fd < 0 || posix_memalign((void **)&w, STAMP_SIZE, STAMP_SIZE)) {
		perror(argv[1]);
		return 1;
	}
	for (off = 0; off < size; off += every) {
		stamp_make(w, off, seed);
		if (pwrite(fd, w, STAMP_SIZE, off) != STAMP_SIZE) {
			perror("benchtool stamp: write");
			return 1;
		}
	}
	if (fsync(fd)) {
		perror("benchtool stamp: fsync");
		return 1;
	}
	close(fd);
	free(w);
	return 0;
}

static int cmd_verify_stamps(int argc, char **argv)
{
	unsigned long long size, every, off, pos;
	uint64_t seed, *want, *buf;
	size_t i, n;
	ssize_t got;
	int fd;

	if (stamp_args(argc, argv, &size, &every, &seed)) {
		fprintf(stderr, "usage: benchtool verify-stamps PATH SIZE EVERY SEED\n");
		return 2;
	}
	fd = open_maybe_direct(argv[1], O_RDONLY);
	if (fd < 0 || posix_memalign((void **)&buf, STAMP_SIZE, STAMP_CHUNK) ||
	    posix_memalign((void **)&want, STAMP_SIZE, STAMP_SIZE)) {
		perror(argv[1]);
		return 1;
	}
	for (off = 0; off < size; off += n) {
		n = size - off < STAMP_CHUNK ? size - off : STAMP_CHUNK;
		got = pread(fd, buf, n, off);
		if (got != (ssize_t)n) {
			fprintf(stderr, "benchtool verify-stamps: %s: short read at %llu (%zd)\n",
				argv[1], off, got);
			return 1;
		}
		for (pos = 0; pos < n; pos += every) {
			const uint64_t *b = buf + pos / 8;

			stamp_make(want, off + pos, seed);
			if (memcmp(b, want, STAMP_SIZE)) {
				printf("mismatch: stamp at offset %llu\n", off + pos);
				return 1;
			}
			for (i = STAMP_SIZE / 8; i < every / 8; i++) {
				if (b[i]) {
					printf("mismatch: non-zero word at offset %llu\n",
					       off + pos + i * 8);
					return 1;
				}
			}
		}
	}
	close(fd);
	free(buf);
	free(want);
	printf("ok: %llu bytes, %llu stamps\n", size, size / every);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		goto usage;
	if (!strcmp(argv[1], "accel"))
		return cmd_accel();
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "memcpy"))
		return cmd_memcpy(argc - 1, argv + 1);
	if (!strcmp(argv[1], "fill"))
		return cmd_fill(argc - 1, argv + 1);
	if (!strcmp(argv[1], "gpt"))
		return cmd_gpt(argc - 1, argv + 1);
	if (!strcmp(argv[1], "stamp"))
		return cmd_stamp(argc - 1, argv + 1);
	if (!strcmp(argv[1], "verify-stamps"))
		return cmd_verify_stamps(argc - 1, argv + 1);
usage:
	fprintf(stderr, "usage: benchtool accel | run [--count] [--log FILE] -- CMD... | "
		"memcpy --block SIZE --total SIZE | fill PATH SIZE | gpt DEV PARTS SIZE | "
		"stamp PATH SIZE EVERY SEED | verify-stamps PATH SIZE EVERY SEED\n");
	return 2;
}
