/* SPDX-License-Identifier: MIT */
#ifndef IOU_UBLK_SUMS_H
#define IOU_UBLK_SUMS_H

/*
 * checksum = crc32c on a device: the CRC32C (RFC 3720) of every 4 KiB block
 * a write covers whole, taken in the kernel from the request's own pages
 * (IORING_OP_BPF, IOU_OP_ID_SUM on a KFIXED descriptor: buffer <tag>, the
 * block's offset in the request) before the members are written. Kept per
 * block of the device; written out as STATE_DIR/device-NAME.crc32c when the
 * device stops or is handed over. The hook the verified-data work builds
 * on: the bytes a request carries, read where they are.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UBLK_SUM_BLOCK	4096u

struct ublk_dev;

/* the whole blocks of the range [@off, @off + @len): the first and how many */
void ublk_sums_span(uint64_t off, uint32_t len, uint64_t *first, uint32_t *nr);

/* the device's table; -errno with @msg where the kernel cannot take the sums */
int ublk_sums_open(struct ublk_dev *d, char *msg, size_t len);
/* blocks [@first, @first + @nr) written with these sums (@ok: taken) */
void ublk_sums_record(struct ublk_dev *d, uint64_t first, const uint32_t *crc, uint32_t nr,
		      bool ok);
/* a write that covers part of blocks: what they held is no longer known */
void ublk_sums_forget(struct ublk_dev *d, uint64_t off, uint32_t len);
/* STATE_DIR/device-NAME.crc32c written (when there is a table), the table freed */
void ublk_sums_close(struct ublk_dev *d);

#endif
