// SPDX-License-Identifier: MIT
/*
 * Taking over a ublk device after the daemon died (kill -9, a crash): see
 * ublk_recover.h. The id file is written after ADD_DEV and removed after
 * DEL_DEV, so one left behind names a device a dead daemon served.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ublk_recover.h"

#define QUIESCE_WAIT_MS	10000
/* the top 16 bits of ublksrv_flags say "iou-offloadd's", the rest is the layout */
#define UBLK_FP_MAGIC_MASK	(0xffffULL << 48)
#define UBLK_FP_MAGIC		(0x10d0ULL << 48)

static uint64_t fnv(uint64_t h, const void *p, size_t len)
{
	const unsigned char *c = p;

	while (len--)
		h = (h ^ *c++) * 0x100000001b3ULL;
	return h;
}

uint64_t ublk_fingerprint(const struct device_config *dc)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	uint32_t v[] = { dc->target, dc->nr_queues, dc->queue_depth, dc->max_io_size,
			 dc->logical_block_size, dc->stripe_unit, dc->nr_backing };

	h = fnv(h, "iou-offload ublk", 16);
	h = fnv(h, dc->name, strlen(dc->name));
	h = fnv(h, v, sizeof(v));
	h = fnv(h, &dc->size, sizeof(dc->size));
	for (int i = 0; i < dc->nr_backing; i++)
		h = fnv(h, dc->backing[i], strlen(dc->backing[i]) + 1);
	return UBLK_FP_MAGIC | (h & ~UBLK_FP_MAGIC_MASK);
}

static int id_path(char *buf, size_t len, const char *state_dir, const char *name)
{
	if (!state_dir)
		return -ENOENT;
	snprintf(buf, len, "%s/device-%s.ublk", state_dir, name);
	return 0;
}

int ublk_id_load(const char *state_dir, const char *name, uint32_t *dev_id)
{
	char path[4200];
	unsigned int id;
	FILE *f;
	int ret;

	if (id_path(path, sizeof(path), state_dir, name))
		return -ENOENT;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	ret = fscanf(f, "dev_id=%u", &id) == 1 ? 0 : -EINVAL;
	fclose(f);
	if (!ret)
		*dev_id = id;
	return ret;
}

int ublk_id_save(const char *state_dir, const char *name, uint32_t dev_id)
{
	char path[4200], tmp[4300];
	FILE *f;
	int ret = 0;

	if (id_path(path, sizeof(path), state_dir, name))
		return 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "dev_id=%u\n", dev_id);
	if (fflush(f) || fsync(fileno(f)))
		ret = -errno;
	if (fclose(f) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path) < 0)
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

void ublk_id_forget(const char *state_dir, const char *name)
{
	char path[4200];

	if (!id_path(path, sizeof(path), state_dir, name))
		unlink(path);
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void drop_stale(struct ublk_ctrl *c, uint32_t dev_id)
{
	ublk_ctrl_stop_dev(c, dev_id);
	ublk_ctrl_del_dev(c, dev_id);
}

int ublk_recover_begin(struct ublk_ctrl *c, uint32_t dev_id, uint64_t fp,
		       const struct ublksrv_ctrl_dev_info *want,
		       struct ublksrv_ctrl_dev_info *info, char *why, size_t len)
{
	int ret;

	ret = ublk_ctrl_get_dev_info(c, dev_id, info);
	if (ret)
		return ret;
	if ((info->ublksrv_flags & UBLK_FP_MAGIC_MASK) != UBLK_FP_MAGIC) {
		/* someone else's device now holds the id: leave it alone */
		snprintf(why, len, "ublk device %u is not one this daemon added", dev_id);
		return -ENODEV;
	}
	if (info->ublksrv_flags != fp || info->nr_hw_queues != want->nr_hw_queues || info->queue_depth != want->queue_depth ||
	    !(info->flags & UBLK_F_USER_RECOVERY)) {
		snprintf(why, len, "ublk device %u was added for another layout; deleting it", dev_id);
		drop_stale(c, dev_id);
		return -ESTALE;
	}
	/* the kernel quiesces the device once the dead server's files are gone */
	for (unsigned int waited = 0;; waited += 50) {
		ret = ublk_ctrl_start_recovery(c, dev_id);
		if (ret != -EBUSY || waited >= QUIESCE_WAIT_MS)
			break;
		sleep_ms(50);
	}
	if (ret) {
		snprintf(why, len, "START_USER_RECOVERY of ublk device %u: %s; deleting it",
			 dev_id, strerror(-ret));
		drop_stale(c, dev_id);
		return ret;
	}
	return 0;
}
