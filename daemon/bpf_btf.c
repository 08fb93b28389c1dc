// SPDX-License-Identifier: MIT
/*
 * The kernel's BTF, read from sysfs once per daemon.
 *
 * libbpf reads /sys/kernel/btf/vmlinux again for every object it loads,
 * and sysfs hands it out 4 KiB per read(): 1339 reads for this host's
 * 5.4 MB, about 40% of the time libbpf takes to have it parsed. The daemon
 * links a copy of libbpf.a in which btf__load_vmlinux_btf() is weak
 * (DAEMON_BPF_WEAKEN in sources.mk), so libbpf's loads call the one below:
 * the bytes read once, parsed afresh for each caller (libbpf frees what it
 * gets). The engine probe looks for its struct names in the same bytes,
 * without a parse. Callers hold the loader's lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/btf.h>

#include "bpf_btf.h"
#include "bpf_loader.h"
#include "clock.h"
#include "log.h"

static char *raw;
static size_t raw_len;

/* the bytes of the kernel's BTF, read at the first call: 0 or -errno */
static int kernel_btf_read(void)
{
	uint64_t t0 = clock_mono_ns();
	size_t cap = 0;
	int fd, ret = 0;

	if (raw)
		return 0;
	fd = open(VMLINUX_BTF, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n;

		if (raw_len == cap) {
			char *p = realloc(raw, cap ? 2 * cap : 4 << 20);

			if (!p) {
				ret = -ENOMEM;
				break;
			}
			raw = p;
			cap = cap ? 2 * cap : 4 << 20;
		}
		n = read(fd, raw + raw_len, cap - raw_len);
		if (n <= 0) {
			ret = n < 0 ? -errno : 0;
			break;
		}
		raw_len += n;
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

/* libbpf's, made weak in the copy the daemon links: the same BTF, from memory */
struct btf *btf__load_vmlinux_btf(void)
{
	int ret = kernel_btf_read();

	if (ret) {
		errno = -ret;
		return NULL;
	}
	return btf__new(raw, raw_len);
}

int bpf_kernel_btf_structs(const char *const *names, int n, bool *found)
{
	const struct btf_header *h;
	const char *str;
	int nr = 0, ret;

	ret = kernel_btf_read();
	if (ret)
		return ret;
	h = (const struct btf_header *)raw;
	if (h->magic != BTF_MAGIC || h->hdr_len < sizeof(*h) ||
	    (uint64_t)h->hdr_len + h->str_off + h->str_len > raw_len)
		return -EPROTO;
	str = raw + h->hdr_len + h->str_off;
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
