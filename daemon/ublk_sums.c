// SPDX-License-Identifier: MIT
/*
 * checksum = crc32c on a device (see ublk_sums.h): the table of sums and
 * its file. The queues take the sums (ublk_queue.c); this keeps them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf_loader.h"
#include "log.h"
#include "ublk_dev.h"
#include "ublk_sums.h"

void ublk_sums_span(uint64_t off, uint32_t len, uint64_t *first, uint32_t *nr)
{
	uint64_t lo = (off + UBLK_SUM_BLOCK - 1) / UBLK_SUM_BLOCK;
	uint64_t hi = (off + len) / UBLK_SUM_BLOCK;

	*first = lo;
	*nr = hi > lo ? (uint32_t)(hi - lo) : 0;
}

int ublk_sums_open(struct ublk_dev *d, char *msg, size_t len)
{
	if (d->cfg.checksum == CHECKSUM_NONE)
		return 0;
	if (!d->zc) {
		snprintf(msg, len, "checksum = crc32c: the device runs the copying path (this "
			 "kernel's ublk has no zero copy), and the sums are taken from the "
			 "request's own pages");
		return -EOPNOTSUPP;
	}
	if (!d->use_bpf || !bpf_loader_has_crc32c()) {
		snprintf(msg, len, "checksum = crc32c: needs IORING_OP_BPF with "
			 "uring_bpf_crc32c() (engine = bpf, a kernel with the series' 0019)");
		return -EOPNOTSUPP;
	}
	d->nr_blocks = d->cfg.size / UBLK_SUM_BLOCK;
	d->crc = calloc(d->nr_blocks, sizeof(*d->crc));
	d->crc_ok = calloc(d->nr_blocks, sizeof(*d->crc_ok));
	if (!d->crc || !d->crc_ok) {
		snprintf(msg, len, "checksum = crc32c: no memory for %" PRIu64 " sums",
			 d->nr_blocks);
		return -ENOMEM;
	}
	return 0;
}

void ublk_sums_record(struct ublk_dev *d, uint64_t first, const uint32_t *crc, uint32_t nr,
		      bool ok)
{
	for (uint32_t i = 0; i < nr && first + i < d->nr_blocks; i++) {
		d->crc[first + i] = ok ? crc[i] : 0;
		d->crc_ok[first + i] = ok;
	}
}

void ublk_sums_forget(struct ublk_dev *d, uint64_t off, uint32_t len)
{
	uint64_t lo = off / UBLK_SUM_BLOCK, hi = (off + len + UBLK_SUM_BLOCK - 1) / UBLK_SUM_BLOCK;

	for (uint64_t b = lo; b < hi && b < d->nr_blocks; b++)
		d->crc_ok[b] = 0;
}

/* "BLOCK CRC" per line for the blocks whose sum is known: tmp, fsync, rename */
static int sums_write(const struct ublk_dev *d)
{
	char path[4200], tmp[4210];
	FILE *f;
	int ret = 0;

	if (!d->state_dir)
		return 0;
	snprintf(path, sizeof(path), "%s/device-%s.crc32c", d->state_dir, d->cfg.name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "# iou-offloadd device %s: CRC32C (RFC 3720) of each %u-byte block last "
		"written whole, taken in the kernel from the request's pages: BLOCK CRC\n",
		d->cfg.name, UBLK_SUM_BLOCK);
	for (uint64_t b = 0; b < d->nr_blocks; b++)
		if (d->crc_ok[b])
			fprintf(f, "%" PRIu64 " %08x\n", b, d->crc[b]);
	if (fflush(f) || fsync(fileno(f)))
		ret = -errno;
	if (fclose(f) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

void ublk_sums_close(struct ublk_dev *d)
{
	int ret;

	if (d->crc && d->crc_ok && (ret = sums_write(d)))
		log_warning("device %s: cannot write its sums to %s: %s", d->cfg.name,
			    d->state_dir, strerror(-ret));
	free(d->crc);
	free(d->crc_ok);
	d->crc = NULL;
	d->crc_ok = NULL;
}
