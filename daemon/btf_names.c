// SPDX-License-Identifier: MIT
/*
 * Names in a BTF blob's string section, found without libbpf: what the
 * engine probe asks of the kernel's BTF (/sys/kernel/btf/vmlinux).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "btf_names.h"

/* struct btf_header (uapi linux/btf.h), the part we read */
struct btf_hdr {
	uint16_t magic;
	uint8_t version, flags;
	uint32_t hdr_len, type_off, type_len, str_off, str_len;
};

#define BTF_MAGIC_LE	0xeb9f

int btf_find_strings(const char *path, const char *const *names, int n, bool *found)
{
	char buf[64 << 10];
	struct btf_hdr h;
	size_t keep = 0;
	uint64_t off, end;
	int fd, nr_found = 0, ret = 0;

	memset(found, 0, n * sizeof(*found));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (pread(fd, &h, sizeof(h), 0) != sizeof(h) || h.magic != BTF_MAGIC_LE ||
	    h.hdr_len < sizeof(h)) {
		close(fd);
		return -EPROTO;
	}
	off = (uint64_t)h.hdr_len + h.str_off;
	end = off + h.str_len;
	/* strings are NUL-separated: "\0name\0" matches the whole name only */
	while (off < end && nr_found < n) {
		size_t want = sizeof(buf) - keep;
		ssize_t got;

		if (want > end - off)
			want = end - off;
		got = pread(fd, buf + keep, want, off);
		if (got <= 0) {
			ret = got < 0 ? -errno : -EPROTO;
			break;
		}
		off += got;
		keep += got;
		for (int i = 0; i < n; i++) {
			char needle[BTF_NAME_MAX + 2] = "";
			size_t len = strlen(names[i]);

			if (found[i] || len > BTF_NAME_MAX)
				continue;
			memcpy(needle + 1, names[i], len);
			if (memmem(buf, keep, needle, len + 2)) {
				found[i] = true;
				nr_found++;
			}
		}
		/* a name cut by the chunk's end is whole in the next one */
		if (keep > BTF_NAME_MAX + 1) {
			memmove(buf, buf + keep - (BTF_NAME_MAX + 1), BTF_NAME_MAX + 1);
			keep = BTF_NAME_MAX + 1;
		}
	}
	close(fd);
	return ret ? ret : nr_found;
}
