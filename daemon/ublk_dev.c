// SPDX-License-Identifier: MIT
/*
 * A device's life: open the members, ADD_DEV, SET_PARAMS, one thread and
 * ring per queue (each fetches all its tags), START_DEV; and at the end
 * STOP_DEV (the kernel drains what is in flight through the queues, then
 * aborts their tags), join, close /dev/ublkcN, DEL_DEV_ASYNC. Never a
 * device something holds (a mount): that one is handed over instead, the
 * way a crash leaves it (USER_RECOVERY), for the next daemon to take over.
 *
 * The data path is picked when the device is added, from what the
 * kernel's ublk offers (GET_FEATURES) and data_path: zero copy with
 * AUTO_BUF_REG (and its fallback), else with REGISTER_IO_BUF by hand,
 * else the copying mode. A device taken over is served the way it was
 * added: its flags say which.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "ublk_dev.h"
#include "ublk_member.h"
#include "ublk_queue.h"
#include "ublk_recover.h"
#include "ublk_sums.h"

#define START_TIMEOUT_MS	10000
/* a daemon killed a moment ago holds the members until its rings are gone */
#define MEMBER_WAIT_MS		3000
#define NODE_WAIT_MS		2000

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* a regular file punches holes (a test past its end changes nothing) */
static uint32_t file_discard(int fd, uint64_t size)
{
	return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, size, 4096) ? 0 : 4096;
}

/* a block device discards if its queue says so: its granularity, or 0 */
static uint32_t bdev_discard(int fd)
{
	unsigned long long max = 0, gran = 0;
	char path[96];
	struct stat sb;
	FILE *f;

	if (fstat(fd, &sb) < 0)
		return 0;
	/* a partition has no queue of its own: its disk's */
	for (int up = 0; up < 2 && !max; up++) {
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/%squeue/discard_max_bytes",
			 major(sb.st_rdev), minor(sb.st_rdev), up ? "../" : "");
		if ((f = fopen(path, "re"))) {
			if (fscanf(f, "%llu", &max) != 1)
				max = 0;
			fclose(f);
		}
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/%squeue/discard_granularity",
			 major(sb.st_rdev), minor(sb.st_rdev), up ? "../" : "");
		if (max && (f = fopen(path, "re"))) {
			if (fscanf(f, "%llu", &gran) != 1)
				gran = 0;
			fclose(f);
		}
	}
	return max ? (gran ? gran : 512) : 0;
}

static int members_open(struct ublk_dev *d, char *msg, size_t len)
{
	uint64_t size;
	struct stat sb;

	for (int i = 0; i < d->cfg.nr_backing; i++) {
		d->member_fd[i] = ublk_member_open(d->cfg.backing[i], d->cfg.logical_block_size,
						   MEMBER_WAIT_MS, &size, msg, len);
		if (d->member_fd[i] < 0)
			return d->member_fd[i];
		/* checked by the config already; the file may have shrunk since */
		d->cfg.member_size[i] = size;
		/* discard only where every member can: as dm and md do */
		d->member_bdev[i] = !fstat(d->member_fd[i], &sb) && S_ISBLK(sb.st_mode);
		uint32_t g = d->member_bdev[i] ? bdev_discard(d->member_fd[i]) :
			     file_discard(d->member_fd[i], size);
		/* integrity: a punched range would need its sums taken again; none offered */
		if (!g || (i && !d->discard_granularity) || d->cfg.integrity != CHECKSUM_NONE)
			d->discard_granularity = 0;
		else if (g > d->discard_granularity)
			d->discard_granularity = g;
		if (size < device_member_share(&d->cfg, i)) {
			snprintf(msg, len, "backing %s has %llu bytes, the device needs %llu",
				 d->cfg.backing[i], (unsigned long long)size,
				 (unsigned long long)device_member_share(&d->cfg, i));
			return -ENOSPC;
		}
	}
	return 0;
}

static int ilog2u(uint32_t v)
{
	return 31 - __builtin_clz(v);
}

/*
 * A stripe's I/O hints as dm-stripe and md RAID0 give them, which mkfs
 * aligns to: the unit as the minimum, a full stripe as the optimum, where
 * ublk can say it (its sizes are powers of two: else one unit).
 */
static void dev_params(const struct ublk_dev *d, struct ublk_params *p)
{
	const struct device_config *c = &d->cfg;
	bool stripe = c->target == TARGET_STRIPE;
	uint32_t min = stripe ? c->stripe_unit : c->logical_block_size;
	uint64_t full = (uint64_t)c->stripe_unit * c->nr_backing;
	uint32_t opt = !stripe ? min : (full & (full - 1)) || full > (1u << 31) ? min : full;

	memset(p, 0, sizeof(*p));
	p->types = UBLK_PARAM_TYPE_BASIC;
	/*
	 * a volatile cache, so that flushes reach the members; FUA, which a
	 * write sends on as RWF_DSYNC: a member that has no FUA of its own
	 * flushes after the write, which is what the flush would have cost
	 */
	p->basic.attrs = UBLK_ATTR_VOLATILE_CACHE | UBLK_ATTR_FUA;
	p->basic.logical_bs_shift = ilog2u(c->logical_block_size);
	p->basic.physical_bs_shift = ilog2u(c->logical_block_size);
	p->basic.io_min_shift = ilog2u(min);
	p->basic.io_opt_shift = ilog2u(opt);
	p->basic.max_sectors = d->info.max_io_buf_bytes >> 9;
	p->basic.dev_sectors = c->size >> 9;
	/*
	 * Discard, where every member has it: a file's range is punched out
	 * (FALLOC_FL_PUNCH_HOLE), a block device's discarded; cut by the
	 * layout as a write is, so a request must fit a tag's pieces
	 */
	if (d->discard_granularity) {
		p->types |= UBLK_PARAM_TYPE_DISCARD;
		p->discard.discard_granularity = d->discard_granularity < c->logical_block_size ?
						 c->logical_block_size : d->discard_granularity;
		p->discard.max_discard_sectors = d->info.max_io_buf_bytes >> 9;
		p->discard.max_discard_segments = 1;
	}
}

static int char_open(struct ublk_dev *d)
{
	char path[32];

	snprintf(path, sizeof(path), "/dev/ublkc%u", d->info.dev_id);
	/* devtmpfs makes the node when the device is added; udev may still own it */
	for (unsigned int waited = 0;; waited += 10) {
		d->char_fd = open(path, O_RDWR | O_CLOEXEC);
		if (d->char_fd >= 0 || errno != ENOENT || waited >= NODE_WAIT_MS)
			break;
		sleep_ms(10);
	}
	return d->char_fd < 0 ? -errno : 0;
}

/* the CPUs the block layer sends queue @q's requests from; none known: left empty */
static void queue_cpus(struct ublk_dev *d, int q, cpu_set_t *set)
{
	int ret = ublk_ctrl_get_queue_affinity(&d->ctrl, d->info.dev_id, q, set, sizeof(*set));

	if (ret) {
		CPU_ZERO(set);
		log_info("device %s: queue %d: no CPU affinity (%s): its thread runs anywhere",
			 d->cfg.name, q, strerror(-ret));
	}
}

static int queues_start(struct ublk_dev *d, char *msg, size_t len)
{
	int ret;

	d->nr_queues = d->info.nr_hw_queues;
	d->queues = calloc(d->nr_queues, sizeof(*d->queues));
	if (!d->queues)
		return -ENOMEM;
	for (int i = 0; i < d->nr_queues; i++)
		d->queues[i].wake_fd = -1;
	for (int i = 0; i < d->nr_queues; i++) {
		struct ublk_queue *q = &d->queues[i];

		q->dev = d;
		q->q_id = i;
		q->depth = d->info.queue_depth;
		q->buf_size = d->info.max_io_buf_bytes;
		q->gather = d->gather;
		/* IORING_OP_BPF for the gather, or zero copy's sums (never both: the config refuses) */
		q->bpf = (d->gather || (d->sums && d->zc)) && d->use_bpf;
		q->zc = d->zc;
		queue_cpus(d, i, &q->cpus);
		ret = ublk_queue_start(q);
		if (ret) {
			snprintf(msg, len, "cannot start queue %d: %s", i, strerror(-ret));
			return ret;
		}
	}
	for (int i = 0; i < d->nr_queues; i++) {
		while (!(ret = atomic_load(&d->queues[i].ready)))
			sleep_ms(1);
		if (ret < 0) {
			snprintf(msg, len, "queue %d: %s", i, strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* @handover: the queues leave the device to the kernel (USER_RECOVERY) instead */
static void dev_teardown(struct ublk_dev *d, bool handover)
{
	int ret;

	/* deferred writes go out before the queues drain; a scrub's window closes first */
	ublk_scrub_stop(d);
	ublk_mirror_stop(d);
	if (handover) {
		atomic_store(&d->handover, true);
		ublk_dev_wake(d);
	} else if (d->added) {
		/* also before START_DEV: it aborts every fetched tag */
		ret = ublk_ctrl_stop_dev(&d->ctrl, d->info.dev_id);
		if (ret && ret != -ENODEV)
			log_warning("device %s: STOP_DEV: %s", d->cfg.name, strerror(-ret));
	}
	for (int i = 0; i < d->nr_queues; i++)
		ublk_queue_join(&d->queues[i]);
	free(d->queues);
	d->queues = NULL;
	d->nr_queues = 0;
	if (d->char_fd >= 0)
		close(d->char_fd);
	d->char_fd = -1;
	if (d->added && !handover) {
		/* async: DEL_DEV would wait for the last opener of /dev/ublkbN */
		ret = ublk_ctrl_del_dev_async(&d->ctrl, d->info.dev_id);
		if (ret)
			log_warning("device %s: DEL_DEV: %s", d->cfg.name, strerror(-ret));
		else
			ublk_id_forget(d->state_dir, d->cfg.name);
	}
	d->added = d->started = false;
	ublk_ctrl_close(&d->ctrl);
	for (int i = 0; i < d->cfg.nr_backing; i++) {
		if (d->member_fd[i] < 0)
			continue;
		fdatasync(d->member_fd[i]);
		close(d->member_fd[i]);
		d->member_fd[i] = -1;
	}
	ublk_mirror_close(d);
	ublk_sums_close(d);
	device_config_free(&d->cfg);
	free(d->state_dir);
	free(d);
}

/*
 * The zero-copy flags to add the device with (0: copying), from the
 * kernel's features; -EOPNOTSUPP with @msg where data_path = zero-copy
 * cannot be had.
 */
static int dev_pick_path(struct ublk_dev *d, uint64_t *flags, char *msg, size_t len)
{
	uint64_t features = 0;
	int ret;

	*flags = 0;
	if (d->cfg.data_path == DATA_PATH_COPY)
		return 0;
	/* the request's pages are a kernel buffer: only IORING_OP_BPF gathers from them */
	if (d->gather && !d->use_bpf) {
		if (d->cfg.data_path != DATA_PATH_ZERO_COPY)
			return 0;
		snprintf(msg, len, "data_path = zero-copy with stripe_io = gather needs "
			 "IORING_OP_BPF (engine bpf), which this kernel has not");
		return -EOPNOTSUPP;
	}
	ret = ublk_ctrl_get_features(&d->ctrl, &features);
	if (ret)
		log_info("device %s: GET_FEATURES: %s", d->cfg.name, strerror(-ret));
	/*
	 * The tests take the kernel for one with zero copy but no AUTO_BUF_REG
	 * (upstream 6.15) to reach the path that registers each request by hand
	 */
	if (getenv("IOU_UBLK_NO_AUTO_BUF_REG"))
		features &= ~UBLK_F_AUTO_BUF_REG;
	if (features & UBLK_F_AUTO_BUF_REG)
		*flags = UBLK_F_AUTO_BUF_REG;
	else if (features & UBLK_F_SUPPORT_ZERO_COPY)
		*flags = UBLK_F_SUPPORT_ZERO_COPY;
	if (!*flags && d->cfg.data_path == DATA_PATH_ZERO_COPY) {
		snprintf(msg, len, "data_path = zero-copy: this kernel's ublk offers neither "
			 "UBLK_F_AUTO_BUF_REG nor UBLK_F_SUPPORT_ZERO_COPY (features %#llx; stock "
			 "6.12 masks zero copy off): use data_path = auto or copy",
			 (unsigned long long)features);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* what the device's flags (its own, or a taken-over one's) make of the data path */
static enum ublk_zc dev_zc(const struct ublksrv_ctrl_dev_info *info)
{
	if (info->flags & UBLK_F_AUTO_BUF_REG)
		return UBLK_ZC_AUTO;
	return info->flags & UBLK_F_SUPPORT_ZERO_COPY ? UBLK_ZC_MANUAL : UBLK_ZC_NONE;
}

static void dev_info_wanted(const struct ublk_dev *d, struct ublksrv_ctrl_dev_info *info)
{
	*info = (struct ublksrv_ctrl_dev_info){
		.nr_hw_queues = d->cfg.nr_queues,
		.queue_depth = d->cfg.queue_depth,
		.max_io_buf_bytes = d->cfg.max_io_size,
		.dev_id = UINT32_MAX,
		.ublksrv_pid = getpid(),
		/* a crashed daemon's device waits for the next, in-flight I/O reissued */
		.flags = UBLK_F_CMD_IOCTL_ENCODE | UBLK_F_USER_RECOVERY |
			 UBLK_F_USER_RECOVERY_REISSUE | d->zc_flags,
		.ublksrv_flags = ublk_fingerprint(&d->cfg),
	};
}

static int dev_add(struct ublk_dev *d, char *msg, size_t len)
{
	struct ublk_params params;
	int ret;

	dev_info_wanted(d, &d->info);
	ret = ublk_ctrl_add_dev(&d->ctrl, &d->info);
	if (ret) {
		snprintf(msg, len, "ADD_DEV: %s%s", strerror(-ret), ret == -EPERM ?
			 " (adding a ublk device needs CAP_SYS_ADMIN: under systemd, a drop-in "
			 "with CapabilityBoundingSet=CAP_SYS_ADMIN)" : "");
		return ret;
	}
	d->added = true;
	ret = ublk_id_save(d->state_dir, d->cfg.name, d->info.dev_id);
	if (ret)
		log_warning("device %s: cannot save its id in %s (%s): after a crash it is "
			    "not taken over", d->cfg.name, d->state_dir, strerror(-ret));
	dev_params(d, &params);
	ret = ublk_ctrl_set_params(&d->ctrl, d->info.dev_id, &params);
	if (ret)
		snprintf(msg, len, "SET_PARAMS: %s", strerror(-ret));
	return ret;
}

/*
 * A device the last daemon left for us: 1 if taken over (queues still to
 * start), 0 if there is none to take, -EBUSY (@msg) if there is one we
 * cannot take and may not delete either, since something holds it.
 */
static int dev_recover(struct ublk_dev *d, char *msg, size_t len)
{
	struct ublksrv_ctrl_dev_info want;
	char detail[512] = "";
	uint32_t id;
	int ret;

	if (ublk_id_load(d->state_dir, d->cfg.name, &id))
		return 0;
	dev_info_wanted(d, &want);
	ret = ublk_recover_begin(&d->ctrl, id, want.ublksrv_flags, &want, &d->info, detail,
				 sizeof(detail));
	if (ret == -EBUSY) {
		snprintf(msg, len, "not taken over: %s", detail);
		return ret;
	}
	if (ret) {
		if (detail[0])
			log_warning("device %s: not taken over: %s", d->cfg.name, detail);
		ublk_id_forget(d->state_dir, d->cfg.name);
		return 0;
	}
	d->added = true;
	d->recovered = true;
	log_notice("device %s: taking over /dev/ublkb%u from the last daemon",
		   d->cfg.name, id);
	return 1;
}

static int dev_open_ctrl(struct ublk_dev *d, char *msg, size_t len)
{
	int ret = ublk_ctrl_open(&d->ctrl);

	if (ret)
		snprintf(msg, len, "cannot open /dev/ublk-control: %s%s", strerror(-ret),
			 ret == -ENOENT ? " (a kernel with CONFIG_BLK_DEV_UBLK, or modprobe "
			 "ublk_drv)" : "");
	return ret;
}

static int dev_char_open(struct ublk_dev *d, char *msg, size_t len)
{
	int ret = char_open(d);

	if (ret)
		snprintf(msg, len, "cannot open /dev/ublkc%u: %s", d->info.dev_id, strerror(-ret));
	return ret;
}

int ublk_dev_start(const struct device_config *dc, const char *state_dir, bool use_bpf,
		   struct ublk_dev **out, char *msg, size_t len)
{
	struct ublk_dev *d = calloc(1, sizeof(*d));
	int ret;

	if (!d)
		return -ENOMEM;
	d->char_fd = -1;
	d->ctrl.fd = -1;
	for (int i = 0; i < CONFIG_MAX_FILES; i++)
		d->member_fd[i] = -1;
	ret = device_config_dup(dc, &d->cfg);
	if (ret) {
		free(d);
		return ret;
	}
	d->state_dir = state_dir ? strdup(state_dir) : NULL;
	d->gather = dc->target == TARGET_STRIPE && dc->stripe_io == STRIPE_IO_GATHER;
	d->use_bpf = use_bpf;
	ublk_layout_init(&d->layout, &d->cfg);
	ret = ublk_mirror_open(d, state_dir, msg, len);
	if (!ret)
		ret = members_open(d, msg, len);
	if (!ret)
		ret = dev_open_ctrl(d, msg, len);
	if (!ret)
		ret = dev_pick_path(d, &d->zc_flags, msg, len);
	if (!ret && !(ret = dev_recover(d, msg, len)))
		ret = dev_add(d, msg, len);
	else if (ret > 0)
		ret = 0;
	d->zc = dev_zc(&d->info);
	if (!ret)
		ret = ublk_sums_open(d, msg, len);
	if (!ret)
		ret = dev_char_open(d, msg, len);
	if (!ret)
		ret = queues_start(d, msg, len);
	if (!ret && d->recovered) {
		ret = ublk_ctrl_end_recovery(&d->ctrl, d->info.dev_id, getpid(), START_TIMEOUT_MS);
		if (ret)
			snprintf(msg, len, "END_USER_RECOVERY: %s", strerror(-ret));
	} else if (!ret) {
		ret = ublk_ctrl_start_dev(&d->ctrl, d->info.dev_id, getpid(), START_TIMEOUT_MS);
		if (ret)
			snprintf(msg, len, "START_DEV: %s", strerror(-ret));
	}
	if (ret) {
		/* a device taken over may be mounted: it waits for the next daemon */
		int claim = ublk_dev_claim(d);

		if (claim == -EBUSY)
			ublk_dev_handover(d);
		else
			ublk_dev_stop(d, claim);
		return ret;
	}
	d->started = true;
	snprintf(d->path, sizeof(d->path), "/dev/ublkb%u", d->info.dev_id);
	ublk_mirror_resync(d);
	*out = d;
	return 0;
}

int ublk_dev_claim(const struct ublk_dev *d)
{
	return d->added ? ublk_disk_claim(d->info.dev_id) : -ENODEV;
}

void ublk_dev_stop(struct ublk_dev *d, int claim)
{
	dev_teardown(d, false);
	if (claim >= 0)
		close(claim);	/* after STOP_DEV: the disk is gone, nothing mounts it */
}

void ublk_dev_handover(struct ublk_dev *d)
{
	dev_teardown(d, true);
}

int ublk_dev_degraded(const struct ublk_dev *d)
{
	int n = 0;

	for (int i = 0; i < d->layout.nr; i++)
		n += atomic_load(&d->member_failed[i]);
	return n;
}

void ublk_dev_wake(struct ublk_dev *d)
{
	for (int i = 0; i < d->nr_queues; i++)
		if (d->queues[i].wake_fd >= 0 && eventfd_write(d->queues[i].wake_fd, 1) < 0)
			log_warning("device %s: cannot wake queue %d: %s", d->cfg.name, i,
				    strerror(errno));
}

const char *ublk_dev_data_path(const struct ublk_dev *d)
{
	return d->zc ? "zero-copy" : "copy";
}

const char *ublk_dev_buffers(const struct ublk_dev *d)
{
	return d->zc == UBLK_ZC_AUTO ? ", request buffers by AUTO_BUF_REG" :
	       d->zc == UBLK_ZC_MANUAL ? ", request buffers registered by hand (REGISTER_IO_BUF)" :
	       "";
}

const char *ublk_dev_engine(const struct ublk_dev *d)
{
	/* the engine picked, as for pipelines: linear and mirror copy nothing in either */
	return d->use_bpf ? "bpf" : "uring";
}
