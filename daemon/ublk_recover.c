// SPDX-License-Identifier: MIT
/*
 * Taking over a ublk device after the daemon died (kill -9, a crash): see
 * ublk_recover.h. The id file is written after ADD_DEV and removed after
 * DEL_DEV, so one left behind names a device a dead daemon served.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fnv.h"
#include "kv.h"
#include "ublk_recover.h"

#define QUIESCE_WAIT_MS	10000
/* the top 16 bits of ublksrv_flags say "iou-offloadd's", the rest is the layout */
#define UBLK_FP_MAGIC_MASK	(0xffffULL << 48)
#define UBLK_FP_MAGIC		(0x10d0ULL << 48)

uint64_t ublk_fingerprint(const struct device_config *dc)
{
	uint64_t h = FNV1A_START;
	uint32_t v[] = { dc->target, dc->nr_queues, dc->queue_depth, dc->max_io_size,
			 dc->logical_block_size, dc->stripe_unit, dc->nr_backing };

	h = fnv1a(h, "iou-offload ublk", 16);
	h = fnv1a(h, dc->name, strlen(dc->name));
	h = fnv1a(h, v, sizeof(v));
	h = fnv1a(h, &dc->size, sizeof(dc->size));
	for (int i = 0; i < dc->nr_backing; i++)
		h = fnv1a(h, dc->backing[i], strlen(dc->backing[i]) + 1);
	return UBLK_FP_MAGIC | (h & ~UBLK_FP_MAGIC_MASK);
}

static int id_path(char *buf, size_t len, const char *state_dir, const char *name)
{
	if (!state_dir)
		return -ENOENT;
	snprintf(buf, len, "%s/device-%s.ublk", state_dir, name);
	return 0;
}

#define ID_MAGIC	"iou-offload-ublk 1"

static int id_key(void *arg, const char *key, const char *val)
{
	unsigned int id;
	char tail;

	if (strcmp(key, "dev_id"))
		return 0;
	if (sscanf(val, "%u%c", &id, &tail) != 1)
		return -EINVAL;
	*(uint32_t *)arg = id;
	return 1;
}

int ublk_id_load(const char *state_dir, const char *name, uint32_t *dev_id)
{
	char path[4200], *text;
	unsigned int id;
	int ret;

	if (id_path(path, sizeof(path), state_dir, name))
		return -ENOENT;
	ret = kv_read(path, 4096, &text);
	if (ret)
		return ret;
	if (!strncmp(text, ID_MAGIC "\n", sizeof(ID_MAGIC))) {
		ret = kv_parse(text, ID_MAGIC, false, id_key, dev_id);
		ret = ret == 1 ? 0 : -EINVAL;
	} else {
		/* a daemon before the kv format wrote the line alone: a take-over still reads it */
		ret = sscanf(text, "dev_id=%u", &id) == 1 ? 0 : -EINVAL;
		if (!ret)
			*dev_id = id;
	}
	free(text);
	return ret;
}

int ublk_id_save(const char *state_dir, const char *name, uint32_t dev_id)
{
	char path[4200], buf[64];
	int n;

	if (id_path(path, sizeof(path), state_dir, name))
		return 0;
	n = snprintf(buf, sizeof(buf), "%s\ndev_id=%u\nend\n", ID_MAGIC, dev_id);
	/* durable, the directory too: the next daemon takes the device over by it */
	return kv_replace(path, buf, n, 0600, true);
}

void ublk_id_forget(const char *state_dir, const char *name)
{
	char path[4200];

	if (!id_path(path, sizeof(path), state_dir, name))
		unlink(path);
}

/* the NAME of STATE_DIR/device-NAME.ublk; false if @file is not one */
static bool id_file_name(const char *file, char *name, size_t len)
{
	size_t n = strlen(file);

	if (strncmp(file, "device-", 7) || n < 13 || strcmp(file + n - 5, ".ublk") ||
	    n - 12 >= len)
		return false;
	snprintf(name, len, "%.*s", (int)(n - 12), file + 7);
	return true;
}

int ublk_id_find(const char *state_dir, uint32_t dev_id, char *name, size_t len)
{
	DIR *dir = opendir(state_dir);
	struct dirent *e;
	uint32_t id;
	int ret = -ENOENT;

	if (!dir)
		return -errno;
	while (ret && (e = readdir(dir)))
		if (id_file_name(e->d_name, name, len) && !ublk_id_load(state_dir, name, &id) &&
		    id == dev_id)
			ret = 0;
	closedir(dir);
	return ret;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int ublk_disk_claim(uint32_t dev_id)
{
	char path[32];
	int fd;

	snprintf(path, sizeof(path), "/dev/ublkb%u", dev_id);
	fd = open(path, O_RDONLY | O_EXCL | O_NONBLOCK | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* a device of ours we cannot take over: deleted, unless something holds it */
static int drop_stale(struct ublk_ctrl *c, uint32_t dev_id, char *msg, size_t len)
{
	int claim = ublk_disk_claim(dev_id);

	if (claim == -EBUSY) {
		snprintf(msg + strlen(msg), len - strlen(msg), "; it is in use (mounted or "
			 "held open exclusively), so it is left as it is, its I/O waiting: "
			 "restore its configuration and restart, or unmount it");
		return -EBUSY;
	}
	snprintf(msg + strlen(msg), len - strlen(msg), "; deleting it");
	ublk_ctrl_stop_dev(c, dev_id);
	ublk_ctrl_del_dev_async(c, dev_id);
	if (claim >= 0)
		close(claim);
	return 0;
}

int ublk_recover_begin(struct ublk_ctrl *c, uint32_t dev_id, uint64_t fp,
		       const struct ublksrv_ctrl_dev_info *want,
		       struct ublksrv_ctrl_dev_info *info, char *msg, size_t len)
{
	int ret;

	ret = ublk_ctrl_get_dev_info(c, dev_id, info);
	if (ret)
		return ret;
	if ((info->ublksrv_flags & UBLK_FP_MAGIC_MASK) != UBLK_FP_MAGIC) {
		/* someone else's device now holds the id: leave it alone */
		snprintf(msg, len, "ublk device %u is not one this daemon added", dev_id);
		return -ENODEV;
	}
	if (info->ublksrv_flags != fp || info->nr_hw_queues != want->nr_hw_queues || info->queue_depth != want->queue_depth ||
	    !(info->flags & UBLK_F_USER_RECOVERY)) {
		snprintf(msg, len, "ublk device %u was added for another layout", dev_id);
		return drop_stale(c, dev_id, msg, len) ?: -ESTALE;
	}
	/* the kernel quiesces the device once the dead server's files are gone */
	for (unsigned int waited = 0;; waited += 50) {
		ret = ublk_ctrl_start_recovery(c, dev_id);
		if (ret != -EBUSY || waited >= QUIESCE_WAIT_MS)
			break;
		sleep_ms(50);
	}
	if (ret) {
		snprintf(msg, len, "START_USER_RECOVERY of ublk device %u: %s", dev_id,
			 strerror(-ret));
		return drop_stale(c, dev_id, msg, len) ?: (ret == -EBUSY ? -ETIMEDOUT : ret);
	}
	return 0;
}

/* a daemon's device: 1 deleted (or already gone), 0 left in use, -errno */
static int release_one(struct ublk_ctrl *c, const char *state_dir, const char *name, FILE *out)
{
	struct ublksrv_ctrl_dev_info info;
	uint32_t id;
	int claim, ret;

	if (ublk_id_load(state_dir, name, &id))
		return 1;
	ret = ublk_ctrl_get_dev_info(c, id, &info);
	if (ret || (info.ublksrv_flags & UBLK_FP_MAGIC_MASK) != UBLK_FP_MAGIC) {
		ublk_id_forget(state_dir, name);	/* gone, or the id is someone else's now */
		return 1;
	}
	if (info.state == UBLK_S_DEV_LIVE && info.ublksrv_pid > 0 && kill(info.ublksrv_pid, 0) == 0) {
		fprintf(out, "device %s: /dev/ublkb%u is served by pid %d: left to it\n", name, id,
			info.ublksrv_pid);
		return 0;
	}
	claim = ublk_disk_claim(id);
	if (claim == -EBUSY) {
		fprintf(out, "device %s: /dev/ublkb%u is in use (mounted, or held open "
			"exclusively): left as it is, its I/O waiting for the next iou-offloadd\n",
			name, id);
		return 0;
	}
	ublk_ctrl_stop_dev(c, id);
	ret = ublk_ctrl_del_dev_async(c, id);
	if (claim >= 0)
		close(claim);
	if (ret && ret != -ENODEV) {
		fprintf(out, "device %s: /dev/ublkb%u: DEL_DEV: %s\n", name, id, strerror(-ret));
		return ret;
	}
	ublk_id_forget(state_dir, name);
	fprintf(out, "device %s: /dev/ublkb%u deleted (no daemon serves it)\n", name, id);
	return 1;
}

int ublk_release_orphans(const char *state_dir, bool (*keep)(const char *name, void *arg),
			 void *arg, FILE *out)
{
	struct ublk_ctrl c = { .fd = -1 };
	struct dirent *e;
	int left = 0, ret = 0;
	DIR *dir;

	dir = opendir(state_dir);
	if (!dir)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(dir))) {
		char name[256];

		if (!id_file_name(e->d_name, name, sizeof(name)) || (keep && keep(name, arg)))
			continue;
		if (!c.ring_ok && (ret = ublk_ctrl_open(&c))) {
			fprintf(out, "cannot open /dev/ublk-control: %s\n", strerror(-ret));
			break;
		}
		left += release_one(&c, state_dir, name, out) <= 0;
	}
	closedir(dir);
	ublk_ctrl_close(&c);
	return ret ? ret : left;
}
