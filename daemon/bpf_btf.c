// SPDX-License-Identifier: MIT
/*
 * The kernel's BTF, read from sysfs and parsed once per daemon.
 *
 * libbpf reads /sys/kernel/btf/vmlinux again for every object it loads,
 * and sysfs hands it out 4 KiB per read(): 1339 reads for this host's
 * 5.4 MB, about 40% of the time libbpf takes to have it parsed; the parse
 * is the rest. The daemon links a copy of libbpf.a in which
 * btf__load_vmlinux_btf() and btf__free() are weak (libbpf-iou.sh): the
 * first below hands every load the one parse, which libbpf only reads, and
 * the second keeps it when libbpf frees it after each load.
 * The engine probe looks for its struct names in the bytes, without a
 * parse: an engine that loads no program never pays for one. Callers hold
 * the loader's lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include <bpf/btf.h>

#include "bpf_btf.h"
#include "bpf_loader.h"
#include "clock.h"
#include "log.h"

static char *raw;		/* until the parse, which keeps its own copy */
static size_t raw_len;
static struct btf *parsed;

/*
 * sysfs hands a binary attribute out 4 KiB per read(): 646 calls for the
 * guest's 2.6 MB, 1339 for this host's 5.4 MB. sendfile() into a memfd
 * loops in the kernel instead, and one pread() takes it all: 0 or -errno.
 */
static int read_by_sendfile(int fd)
{
	int mfd = memfd_create("iou-offloadd-btf", MFD_CLOEXEC);
	size_t total = 0, got = 0;
	int ret = 0;

	if (mfd < 0)
		return -errno;
	for (;;) {
		ssize_t n = sendfile(mfd, fd, NULL, 1 << 30);

		if (n < 0) {
			ret = -errno;
			goto out;
		}
		if (!n)
			break;
		total += n;
	}
	raw = malloc(total + 1);
	if (!raw) {
		ret = -ENOMEM;
		goto out;
	}
	while (got < total) {
		ssize_t n = pread(mfd, raw + got, total - got, got);

		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			goto out;
		}
		got += n;
	}
	raw_len = total;
out:
	close(mfd);
	return ret;
}

/* the same with read(), where sendfile() from sysfs is refused: 0 or -errno */
static int read_by_pages(int fd)
{
	size_t cap = 0;

	for (;;) {
		ssize_t n;

		if (raw_len == cap) {
			char *p = realloc(raw, cap ? 2 * cap : 4 << 20);

			if (!p)
				return -ENOMEM;
			raw = p;
			cap = cap ? 2 * cap : 4 << 20;
		}
		n = read(fd, raw + raw_len, cap - raw_len);
		if (n <= 0)
			return n < 0 ? -errno : 0;
		raw_len += n;
	}
}

/* the bytes of the kernel's BTF, read at the first call: 0 or -errno */
static int kernel_btf_read(void)
{
	uint64_t t0 = clock_mono_ns();
	int fd, ret;

	if (raw || parsed)
		return 0;
	fd = open(VMLINUX_BTF, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = read_by_sendfile(fd);
	if (ret) {
		log_debug("%s: sendfile(): %s; reading it 4 KiB at a time", VMLINUX_BTF,
			  strerror(-ret));
		free(raw);
		raw = NULL;
		raw_len = 0;
		ret = lseek(fd, 0, SEEK_SET) < 0 ? -errno : read_by_pages(fd);
	}
	close(fd);
	if (!ret && raw_len < sizeof(struct btf_header))
		ret = -EPROTO;
	if (ret) {
		free(raw);
		raw = NULL;
		raw_len = 0;
		return ret;
	}
	log_debug("the kernel's BTF (%zu bytes) read in %.3f s, once for the daemon", raw_len,
		  (clock_mono_ns() - t0) / 1e9);
	return 0;
}

/* the BTF's bytes: read, or the parse's copy of them */
static const char *kernel_btf_bytes(size_t *len)
{
	uint32_t n;
	int ret;

	if (parsed) {
		const char *p = btf__raw_data(parsed, &n);

		*len = n;
		return p;
	}
	ret = kernel_btf_read();
	if (ret) {
		errno = -ret;
		return NULL;
	}
	*len = raw_len;
	return raw;
}

/* libbpf's, made weak in the copy the daemon links: one parse for all */
struct btf *btf__load_vmlinux_btf(void)
{
	uint64_t t0;
	int ret;

	if (parsed)
		return parsed;
	ret = kernel_btf_read();
	if (ret) {
		errno = -ret;
		return NULL;
	}
	t0 = clock_mono_ns();
	parsed = btf__new(raw, raw_len);
	if (!parsed)
		return NULL;
	free(raw);
	raw = NULL;
	log_debug("the kernel's BTF parsed in %.3f s, once for the daemon",
		  (clock_mono_ns() - t0) / 1e9);
	return parsed;
}

void __real_btf__free(struct btf *btf);

/* libbpf frees the kernel's BTF after each load: keep the one parse */
void btf__free(struct btf *btf)
{
	if (btf != parsed)
		__real_btf__free(btf);
}

int bpf_kernel_btf_structs(const char *const *names, int n, bool *found)
{
	const struct btf_header *h;
	const char *bytes, *str;
	size_t len;
	int nr = 0;

	bytes = kernel_btf_bytes(&len);
	if (!bytes)
		return -errno;
	h = (const struct btf_header *)bytes;
	if (h->magic != BTF_MAGIC || h->hdr_len < sizeof(*h) ||
	    (uint64_t)h->hdr_len + h->str_off + h->str_len > len)
		return -EPROTO;
	str = bytes + h->hdr_len + h->str_off;
	for (int i = 0; i < n; i++) {
		size_t len = strlen(names[i]);
		char *needle = malloc(len + 2);

		if (!needle)
			return -ENOMEM;
		/* strings are NUL-separated: "\0name\0" is the whole name only */
		needle[0] = '\0';
		memcpy(needle + 1, names[i], len + 1);
		found[i] = memmem(str, h->str_len, needle, len + 2) != NULL;
		nr += found[i];
		free(needle);
	}
	return nr;
}
