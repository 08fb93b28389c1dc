// SPDX-License-Identifier: MIT
/*
 * The block checksums' manifest (checksum.h), and CRC32C from ISA-L, which
 * uses the CPU's CRC32 instruction (SSE4.2) or carry-less multiply where
 * the CPU has them.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <isa-l/crc.h>

#include "checksum.h"

#define MAGIC "iou-offload-checksums 1"

uint32_t checksum_crc32c(uint32_t crc, const void *buf, size_t len)
{
	/* ISA-L's iSCSI CRC takes and returns the register without the final
	 * inversion: the standard CRC32C is its complement of a complement */
	while (len) {
		int n = len > (1u << 30) ? 1 << 30 : (int)len;

		crc = ~crc32_iscsi((unsigned char *)buf, n, ~crc);
		buf = (const char *)buf + n;
		len -= n;
	}
	return crc;
}

uint32_t checksum_zeros(uint32_t len)
{
	static const char zeros[65536];
	/* one per length (a whole block's, the last block's): a long hole costs one */
	static _Thread_local uint32_t zero_len, zero_crc;
	uint32_t crc = 0;

	if (len == zero_len)
		return zero_crc;
	zero_len = len;
	for (uint32_t n; len; len -= n) {
		n = len < sizeof(zeros) ? len : sizeof(zeros);
		crc = checksum_crc32c(crc, zeros, n);
	}
	return zero_crc = crc;
}

int checksum_path(const char *dir, const char *name, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s.sums", dir, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int format_head(const struct checksum_head *h, char *buf)
{
	int n = snprintf(buf, CHECKSUM_HEADER, "%s\nalgorithm=crc32c\nblock_size=%" PRIu32
			 "\nlength=%" PRIu64 "\nfingerprint=%016" PRIx64 "\nsource=%" PRIu64
			 ":%" PRIu64 ":%" PRIu64 ":%" PRId64 "\nend\n", MAGIC, h->block_size,
			 h->length, h->fingerprint, h->source.dev, h->source.ino, h->source.size,
			 h->source.mtime_ns);

	if (n < 0 || n >= CHECKSUM_HEADER)
		return -EINVAL;
	memset(buf + n, '\n', CHECKSUM_HEADER - n);
	return 0;
}

int checksum_read_head(int fd, struct checksum_head *h)
{
	char buf[CHECKSUM_HEADER + 1], magic[64];
	ssize_t n = pread(fd, buf, CHECKSUM_HEADER, 0);

	if (n < 0)
		return -errno;
	if (n != CHECKSUM_HEADER)
		return n == 0 ? -ENOENT : -EINVAL;
	buf[n] = '\0';
	memset(h, 0, sizeof(*h));
	if (sscanf(buf, "%63[^\n]\nalgorithm=crc32c\nblock_size=%" SCNu32 "\nlength=%" SCNu64
		   "\nfingerprint=%" SCNx64 "\nsource=%" SCNu64 ":%" SCNu64 ":%" SCNu64 ":%" SCNd64,
		   magic, &h->block_size, &h->length, &h->fingerprint, &h->source.dev,
		   &h->source.ino, &h->source.size, &h->source.mtime_ns) != 8 ||
	    strcmp(magic, MAGIC))
		return -EINVAL;
	return 0;
}

static bool same_head(const struct checksum_head *a, const struct checksum_head *b)
{
	return a->block_size == b->block_size && a->length == b->length &&
	       a->fingerprint == b->fingerprint && a->source.dev == b->source.dev &&
	       a->source.ino == b->source.ino && a->source.size == b->source.size &&
	       a->source.mtime_ns == b->source.mtime_ns;
}

int checksum_open(const char *path, const struct checksum_head *h, bool *kept)
{
	struct checksum_head old;
	char buf[CHECKSUM_HEADER];
	int fd, ret;

	*kept = false;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (checksum_read_head(fd, &old) == 0 && same_head(&old, h)) {
		*kept = true;
		return fd;
	}
	ret = format_head(h, buf);
	if (!ret && (ftruncate(fd, 0) < 0 || pwrite(fd, buf, sizeof(buf), 0) != sizeof(buf)))
		ret = -errno ? -errno : -EIO;
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

int checksum_put(int fd, uint64_t i, uint32_t crc)
{
	uint32_t le = htole32(crc);

	return pwrite(fd, &le, sizeof(le), CHECKSUM_HEADER + 4 * i) == sizeof(le) ? 0 :
	       -errno ? -errno : -EIO;
}

ssize_t checksum_get(int fd, uint64_t first, uint32_t *crc, size_t n)
{
	ssize_t r = pread(fd, crc, n * sizeof(*crc), CHECKSUM_HEADER + 4 * first);

	if (r < 0)
		return -errno;
	r /= sizeof(*crc);
	for (ssize_t i = 0; i < r; i++)
		crc[i] = le32toh(crc[i]);
	return r;
}
