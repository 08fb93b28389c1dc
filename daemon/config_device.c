// SPDX-License-Identifier: MIT
/*
 * [device NAME]: a ublk block device over files or block devices. The
 * section, the two keys whose rule the key table cannot say (an engine but
 * loop; a logical block size), and the checks after the whole file is read: the target's member count,
 * sizes that ublk and O_DIRECT accept, the members' sizes (each must hold
 * its share of the device), and backing files that no other device or
 * pipeline uses: two writers of one file would corrupt each other.
 *
 * Devices do not inherit from [daemon]: their queue depth and engine are
 * the block device's, not a copy's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../bpf-ops/iou_ops.h"
#include "claims.h"
#include "config_int.h"
#include "plan.h"

/* ---- the section ---- */

void device_section_begin(struct parse_state *st, const char *arg)
{
	st->dev = section_add(st, "device", arg, (void **)&st->cfg->devices,
			      sizeof(*st->cfg->devices), &st->cfg->nr_devices, CONFIG_MAX_DEVICES);
	if (!st->dev) {
		st->sec = SEC_BAD;
		return;
	}
	device_defaults(st->dev);
	st->sec = SEC_DEVICE;
}

int set_device_engine(struct parse_state *st, const struct key_def *k, void *field,
		      const char *value)
{
	int e;

	if (parse_enum(st, k, &engine_names, value, &e))
		return -EINVAL;
	if (e == ENGINE_LOOP) {
		add_error(st, st->line, "engine = loop: not available for devices "
			  "(expected auto, bpf or uring)");
		return -EINVAL;
	}
	*(enum engine_kind *)field = e;
	return 0;
}

/* what the block layer takes: a power of two from 512 to the page size */
int set_logical_block_size(struct parse_state *st, const struct key_def *k, void *field,
			   const char *value)
{
	uint64_t v;

	if (config_parse_size(value, &v) || v < 512 || v > 4096 || (v & (v - 1))) {
		add_error(st, st->line, "%s = '%s': expected 512, 1024, 2048 or 4096",
			  k->name, value);
		return -EINVAL;
	}
	*(uint32_t *)field = v;
	return 0;
}

/* bytes a backing file or block device has; -errno if it cannot be found */
static int member_size(const char *path, uint64_t *out)
{
	struct stat sb;
	int fd, ret = 0;

	if (stat(path, &sb) < 0)
		return -errno;
	if (S_ISREG(sb.st_mode)) {
		*out = sb.st_size;
		return 0;
	}
	if (!S_ISBLK(sb.st_mode))
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, BLKGETSIZE64, out) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static uint64_t round_down(uint64_t v, uint64_t a)
{
	return v - v % a;
}

/* linear: member @i starts where the ones before it end */
uint64_t device_member_share(const struct device_config *dc, int i)
{
	uint64_t left = dc->size, got;

	switch (dc->target) {
	case TARGET_STRIPE:
		return plan_stripe_share(dc->size, dc->nr_backing, dc->stripe_unit, i);
	case TARGET_MIRROR:
		return dc->size;
	case TARGET_LINEAR:
	default:
		for (int j = 0; j < i; j++) {
			got = round_down(dc->member_size[j], dc->logical_block_size);
			left -= got < left ? got : left;
		}
		got = round_down(dc->member_size[i], dc->logical_block_size);
		return got < left ? got : left;
	}
}

/* the size the members allow when the file does not set one */
static uint64_t device_default_size(const struct device_config *dc)
{
	uint64_t min = UINT64_MAX, sum = 0;

	for (int i = 0; i < dc->nr_backing; i++) {
		sum += round_down(dc->member_size[i], dc->logical_block_size);
		if (dc->member_size[i] < min)
			min = dc->member_size[i];
	}
	if (dc->target == TARGET_LINEAR)
		return sum;
	if (dc->target == TARGET_STRIPE)
		return round_down(min, dc->stripe_unit) * dc->nr_backing;
	return round_down(min, dc->logical_block_size);
}

static void device_check_keys(struct parse_state *st, struct device_config *dc)
{
	int min = dc->target == TARGET_LINEAR ? 1 : 2;

	if (dc->nr_backing < min)
		add_error(st, dc->line, "target = %s needs at least %d backing files, got %d",
			  device_target_to_string(dc->target), min, dc->nr_backing);
	if (dc->key_line[K_STRIPE_UNIT] && dc->target != TARGET_STRIPE)
		add_error(st, dc->key_line[K_STRIPE_UNIT],
			  "key 'stripe_unit' is only valid with target = stripe");
	if (dc->key_line[K_STRIPE_IO] && dc->target != TARGET_STRIPE)
		add_error(st, dc->key_line[K_STRIPE_IO],
			  "key 'stripe_io' is only valid with target = stripe");
	/* the request's pages are a kernel buffer: only IORING_OP_BPF gathers from them */
	if (dc->data_path == DATA_PATH_ZERO_COPY && dc->target == TARGET_STRIPE &&
	    dc->stripe_io == STRIPE_IO_GATHER && dc->engine == ENGINE_URING)
		add_error(st, dc->key_line[K_DATA_PATH],
			  "data_path = zero-copy: not with stripe_io = gather on engine = uring, "
			  "whose memcpy() cannot reach the request's pages (expected engine = bpf "
			  "or auto, or data_path = auto or copy)");
	/* zero copy: summed and checked in the kernel; copy: ISA-L on the tag buffers */
	if (dc->integrity != CHECKSUM_NONE && dc->target == TARGET_STRIPE &&
	    dc->stripe_io == STRIPE_IO_GATHER)
		add_error(st, dc->key_line[K_INTEGRITY],
			  "integrity = %s: not with stripe_io = gather (the two are not combined)",
			  checksum_kind_to_string(dc->integrity));
	if (dc->integrity != CHECKSUM_NONE && dc->engine == ENGINE_URING &&
	    dc->data_path != DATA_PATH_COPY)
		add_error(st, dc->key_line[K_INTEGRITY],
			  "integrity = %s: on zero copy summed by IORING_OP_BPF, which engine = uring "
			  "does not use (expected engine = auto or bpf, or data_path = copy: ISA-L on "
			  "the tag buffers)", checksum_kind_to_string(dc->integrity));
	/* a sum per 4 KiB: no request may cover part of one (dm-integrity's block_size) */
	if (dc->integrity != CHECKSUM_NONE && dc->key_line[K_LOGICAL_BLOCK_SIZE] &&
	    dc->logical_block_size != 4096)
		add_error(st, dc->key_line[K_LOGICAL_BLOCK_SIZE],
			  "logical_block_size = %u: integrity = %s sums 4 KiB blocks (expected "
			  "4096, its default with integrity)", dc->logical_block_size,
			  checksum_kind_to_string(dc->integrity));
	else if (dc->integrity != CHECKSUM_NONE)
		dc->logical_block_size = 4096;
	if (dc->key_line[K_SCRUB_RATE] && dc->target != TARGET_MIRROR)
		add_error(st, dc->key_line[K_SCRUB_RATE],
			  "key 'scrub_rate' is only valid with target = mirror (a scrub compares "
			  "its legs)");
	if (dc->key_line[K_READ_POLICY] && dc->target != TARGET_MIRROR)
		add_error(st, dc->key_line[K_READ_POLICY],
			  "key 'read_policy' is only valid with target = mirror");
	if (dc->target == TARGET_STRIPE && dc->stripe_unit % dc->logical_block_size)
		add_error(st, dc->key_line[K_STRIPE_UNIT] ?: dc->line,
			  "stripe_unit = %u is not a multiple of logical_block_size = %u",
			  dc->stripe_unit, dc->logical_block_size);
	if (dc->max_io_size % dc->logical_block_size)
		add_error(st, dc->key_line[K_MAX_IO_SIZE] ?: dc->line,
			  "max_io_size = %u is not a multiple of logical_block_size = %u",
			  dc->max_io_size, dc->logical_block_size);
	if (dc->size % dc->logical_block_size)
		add_error(st, dc->key_line[K_SIZE],
			  "size = %" PRIu64 " is not a multiple of logical_block_size = %u",
			  dc->size, dc->logical_block_size);
}

/*
 * The unit gives the service a /tmp and /var/tmp of its own (PrivateTmp=):
 * a backing there that this process finds is not there for the daemon.
 */
static void device_warn_private_tmp(struct parse_state *st, const struct device_config *dc,
				    int i)
{
	static const char *const dirs[] = { "/tmp/", "/var/tmp/" };

	for (size_t k = 0; k < sizeof(dirs) / sizeof(dirs[0]); k++)
		if (!strncmp(dc->backing[i], dirs[k], strlen(dirs[k])))
			add_warning(st, dc->backing_line[i], "backing = '%s': under %.*s, which "
				    "iou-offloadd.service makes private (PrivateTmp=yes): the daemon "
				    "under systemd does not see this file (systemctl reload checks "
				    "as the service sees files)", dc->backing[i],
				    (int)strlen(dirs[k]) - 1, dirs[k]);
}

/* every member exists and holds its share; 0 when the sizes are known */
static int device_check_members(struct parse_state *st, struct device_config *dc)
{
	uint64_t need;
	int ret, bad = 0;

	for (int i = 0; i < dc->nr_backing; i++)
		device_warn_private_tmp(st, dc, i);
	for (int i = 0; i < dc->nr_backing; i++) {
		ret = member_size(dc->backing[i], &dc->member_size[i]);
		if (ret == -EINVAL)
			add_error(st, dc->backing_line[i], "backing = '%s': not a regular file "
				  "or a block device", dc->backing[i]);
		else if (ret)
			add_error(st, dc->backing_line[i], "backing = '%s': %s", dc->backing[i],
				  ret == -ENOENT ? "does not exist (backing files are never "
				  "created)" : strerror(-ret));
		bad |= ret;
	}
	if (bad)
		return -ENOENT;
	if (!dc->size)
		dc->size = device_default_size(dc);
	if (!dc->size) {
		add_error(st, dc->line, "the backing files hold no whole %s: the device would "
			  "be empty", dc->target == TARGET_STRIPE ? "stripe_unit" :
			  "logical block");
		return -ENOSPC;
	}
	for (int i = 0; i < dc->nr_backing; i++) {
		need = device_member_share(dc, i);
		if (dc->target == TARGET_LINEAR || dc->member_size[i] >= need)
			continue;
		add_error(st, dc->backing_line[i], "backing = '%s': %" PRIu64 " bytes, too "
			  "small: the device needs %" PRIu64 " bytes of it (size %" PRIu64 ")",
			  dc->backing[i], dc->member_size[i], need, dc->size);
		bad = -ENOSPC;
	}
	if (dc->target == TARGET_LINEAR && device_default_size(dc) < dc->size) {
		add_error(st, dc->key_line[K_SIZE], "size = %" PRIu64 ": the backing files "
			  "hold only %" PRIu64 " bytes", dc->size, device_default_size(dc));
		bad = -ENOSPC;
	}
	return bad;
}

void device_resolve(struct parse_state *st, struct device_config *dc)
{
	st->sec = SEC_DEVICE;
	st->dev = dc;
	st->cur = NULL;
	if (!dc->key_line[K_TARGET])
		add_error(st, dc->line, "missing required key 'target' (linear, stripe or mirror)");
	if (!dc->key_line[K_BACKING])
		add_error(st, dc->line, "missing required key 'backing'");
	if (!(dc->key_valid & (1ull << K_TARGET)) || !dc->nr_backing)
		return;
	device_check_keys(st, dc);
	for (int i = 0; i < dc->nr_backing; i++)
		for (int j = 0; j < i; j++)
			if (!strcmp(dc->backing[i], dc->backing[j]))
				add_error_pair(st, dc->backing_line[i], "first at ",
					       dc->backing_line[j], "backing '%s' is listed twice",
					       dc->backing[i]);
	if (dc->key_line[K_SIZE] && !(dc->key_valid & (1ull << K_SIZE)))
		return;
	device_check_members(st, dc);
}

/* the backing files of device @dc as claims: each written over its share */
static int device_claims(const struct device_config *dc, struct file_claim *c)
{
	int ret = 0;

	for (int i = 0; i < dc->nr_backing && !ret; i++)
		ret = claim_file(&c[i], dc->backing[i], dc->backing_line[i], true, 0, UINT64_MAX);
	return ret;
}

static void claims_release(struct file_claim *c, int n)
{
	for (int i = 0; i < n; i++)
		free(c[i].key);
}

static void device_against_pipelines(struct parse_state *st, struct daemon_config *cfg,
				     const struct file_claim *mine, int n)
{
	struct pipeline_claims pcl;

	for (int p = 0; p < cfg->nr_pipelines; p++) {
		if (claims_of(&cfg->pipelines[p], &pcl))
			continue;
		for (int i = 0; i < n; i++) {
			for (int j = 0; j < pcl.nr; j++) {
				if (!claims_collide(&mine[i], &pcl.c[j]))
					continue;
				add_error(st, mine[i].line, "backing = '%s': the same file as "
					  "pipeline %s's %s '%s' (line %d); %s",
					  mine[i].path, cfg->pipelines[p].name,
					  pcl.c[j].write ? "destination" : "source",
					  pcl.c[j].path, pcl.c[j].line, pcl.c[j].write ?
					  "the device and the pipeline would overwrite each "
					  "other's data" : "the pipeline would read what the "
					  "device overwrites");
				break;
			}
		}
		claims_free(&pcl);
	}
}

/*
 * Zero copy: the sums of every integrity device's requests in flight share
 * the one BPF program's sums[] (one object per daemon): said at the device
 * whose queues pass it.
 */
static void devices_check_sums(struct parse_state *st, const struct daemon_config *cfg)
{
	uint64_t total = 0;

	for (int i = 0; i < cfg->nr_devices; i++) {
		const struct device_config *dc = &cfg->devices[i];
		uint64_t n = dc->nr_queues * iou_sums_per_queue(dc->queue_depth, dc->max_io_size);

		if (dc->integrity == CHECKSUM_NONE || dc->data_path == DATA_PATH_COPY)
			continue;
		total += n;
		if (total <= IOU_SUMS_DEVICES)
			continue;
		st->sec = SEC_DEVICE;
		st->dev = (struct device_config *)dc;
		add_error(st, dc->key_line[K_NR_QUEUES] ?: dc->key_line[K_INTEGRITY],
			  "integrity = %s: nr_queues x queue_depth x max_io_size / 4K = %" PRIu64
			  " sums in flight (%" PRIu64 " with the integrity devices before it), where "
			  "the BPF program holds %u for devices (expected a smaller nr_queues, queue_depth or "
			  "max_io_size, or data_path = copy)", checksum_kind_to_string(dc->integrity),
			  n, total, IOU_SUMS_DEVICES);
		total -= n;
	}
}

/* no backing file is another device's, the same device's twice, or a pipeline's */
int devices_check_claims(struct parse_state *st, struct daemon_config *cfg)
{
	struct file_claim (*c)[CONFIG_MAX_FILES];
	int ret = 0, d;

	if (!cfg->nr_devices)
		return 0;
	devices_check_sums(st, cfg);
	c = calloc(cfg->nr_devices, sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (d = 0; d < cfg->nr_devices && !ret; d++)
		ret = device_claims(&cfg->devices[d], c[d]);
	for (int i = 0; i < cfg->nr_devices && !ret; i++) {
		const struct device_config *a = &cfg->devices[i];

		st->sec = SEC_DEVICE;
		st->dev = &cfg->devices[i];
		for (int m = 0; m < a->nr_backing; m++) {
			for (int j = 0; j <= i; j++) {
				const struct device_config *b = &cfg->devices[j];
				int end = j == i ? m : b->nr_backing;

				for (int n = 0; n < end; n++) {
					/* the same string is device_resolve()'s message */
					if ((j == i && !strcmp(a->backing[m], b->backing[n])) ||
					    !claims_collide(&c[i][m], &c[j][n]))
						continue;
					add_error(st, a->backing_line[m], "backing = '%s': the "
						  "same file as device %s's backing '%s' (line %d)",
						  a->backing[m], b->name, b->backing[n],
						  b->backing_line[n]);
				}
			}
		}
		device_against_pipelines(st, cfg, c[i], a->nr_backing);
	}
	for (int i = 0; i < d; i++)
		claims_release(c[i], cfg->devices[i].nr_backing);
	free(c);
	return ret;
}

/* ---- copy, compare, free ---- */

const struct device_config *config_find_device(const struct daemon_config *cfg,
					       const char *name)
{
	for (int i = 0; i < cfg->nr_devices; i++)
		if (!strcmp(cfg->devices[i].name, name))
			return &cfg->devices[i];
	return NULL;
}

void device_config_free(struct device_config *dc)
{
	for (int i = 0; i < dc->nr_backing; i++)
		free(dc->backing[i]);
	dc->nr_backing = 0;
}

int device_config_dup(const struct device_config *src, struct device_config *dst)
{
	*dst = *src;
	for (int i = 0; i < src->nr_backing; i++) {
		dst->backing[i] = strdup(src->backing[i]);
		if (!dst->backing[i]) {
			dst->nr_backing = i;
			device_config_free(dst);
			return -ENOMEM;
		}
	}
	return 0;
}
