// SPDX-License-Identifier: MIT
/*
 * The daemon's devices: start them with the daemon, stop them at its end,
 * follow reloads (a changed device is stopped and started again: ublk has
 * no way to change a live device's layout), and count their I/O for status.
 * A device something holds (mounted, a dm/md/LVM member) is never stopped:
 * a reload that would is refused for it (EBUSY, as dmsetup remove refuses
 * an open device), and at the daemon's end it is handed over to the next
 * daemon instead of deleted.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "devices.h"
#include "engine.h"
#include "log.h"
#include "kv.h"
#include "ublk_member.h"
#include "ublk_recover.h"

static struct device_run *device_run_start(const struct device_config *dc,
					   const struct device_set *s)
{
	static const struct engine_probe not_probed;	/* no probe: bpf is unavailable */
	struct device_run *r = calloc(1, sizeof(*r));
	const struct engine_ops *ops;
	char note[300];
	bool use_bpf;
	int ret;

	if (!r)
		return NULL;
	snprintf(r->name, sizeof(r->name), "%s", dc->name);
	/* IORING_OP_BPF where bytes move (the gather, sums): the pipelines' choice */
	if (engine_select(dc->engine, s->probe ? s->probe : &not_probed, &ops, note,
			  sizeof(note))) {
		snprintf(r->why, sizeof(r->why), "%s (use uring or auto)", note);
		log_err("device %s: not started: %s", dc->name, r->why);
		return r;
	}
	use_bpf = ops == &engine_bpf_ops;
	ret = ublk_dev_start(dc, s->state_dir, use_bpf, &r->dev, r->why, sizeof(r->why));
	if (ret) {
		r->dev = NULL;
		log_err("device %s: not started: %s", dc->name, r->why);
		return r;
	}
	log_notice("device %s: %s%s, %s%s%s over %d member(s), %llu bytes, %u queue(s) of %u tags, "
		   "data path %s%s, engine %s%s", dc->name, r->dev->path,
		   r->dev->recovered ? " (taken over, its requests reissued)" : "",
		   device_target_to_string(dc->target),
		   dc->target == TARGET_STRIPE ? " stripe_io " : "",
		   dc->target == TARGET_STRIPE ? stripe_io_to_string(dc->stripe_io) : "",
		   dc->nr_backing, (unsigned long long)dc->size, r->dev->info.nr_hw_queues,
		   r->dev->info.queue_depth, ublk_dev_data_path(r->dev), ublk_dev_buffers(r->dev),
		   ublk_dev_engine(r->dev),
		   r->dev->gather ? (use_bpf ? ", stripe units gathered by IORING_OP_BPF" :
				     ", stripe units gathered by memcpy()") :
		   dc->target == TARGET_STRIPE ? ", one request per stripe unit" : "");
	return r;
}

/* stop and delete: -EBUSY (and nothing done) while something holds the device */
static int device_run_stop(struct device_run *r)
{
	int claim;

	if (!r->dev)
		return 0;
	claim = ublk_dev_claim(r->dev);
	if (claim == -EBUSY)
		return claim;
	log_notice("device %s: stopping %s (in-flight I/O drains first)", r->name,
		   r->dev->path);
	ublk_dev_stop(r->dev, claim);
	r->dev = NULL;
	log_notice("device %s: stopped and deleted", r->name);
	return 0;
}

/*
 * The daemon's end: delete the device, or hand it over if something holds
 * it, or every device under the unit (DEVICES_KEEP_ENV), whose helper
 * deletes them only once the unit is stopped for good.
 */
static void device_run_end(struct device_run *r, bool keep)
{
	if (keep && r->dev) {
		log_notice("device %s: %s handed over to the next iou-offloadd (its I/O waits "
			   "for it; deleted if the unit is stopped for good)", r->name, r->dev->path);
		ublk_dev_handover(r->dev);
	} else if (device_run_stop(r)) {
		log_notice("device %s: %s is in use (mounted, or held open exclusively): handed "
			   "over, not deleted; its I/O waits for the next iou-offloadd, which "
			   "takes it over", r->name, r->dev->path);
		ublk_dev_handover(r->dev);
	}
	free(r);
}

static struct device_run *devices_add(struct device_set *s, const struct device_config *dc)
{
	struct device_run *r = device_run_start(dc, s), **tail = &s->list;

	if (!r) {
		log_err("device %s: out of memory", dc->name);
		s->failures++;
		return NULL;
	}
	if (!r->dev)
		s->failures++;
	while (*tail)
		tail = &(*tail)->next;
	*tail = r;
	return r;
}

static bool in_config(const char *name, void *cfg)
{
	return config_find_device(cfg, name);
}

/* the devices a daemon left that this configuration no longer has */
static void devices_release_others(const struct daemon_config *cfg)
{
	char *buf = NULL, *line, *save;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return;
	ublk_release_orphans(cfg->state_dir, in_config, (void *)cfg, f);
	fclose(f);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		log_notice("%s (not in the configuration)", line);
	free(buf);
}

void devices_start(struct device_set *s, const struct daemon_config *cfg,
		   const struct engine_probe *probe)
{
	const char *keep = getenv(DEVICES_KEEP_ENV);

	s->probe = probe;
	s->keep_on_stop = keep && !strcmp(keep, "1");
	if (!s->state_dir && cfg->state_dir)
		s->state_dir = strdup(cfg->state_dir);
	for (int i = 0; i < cfg->nr_devices; i++)
		devices_add(s, &cfg->devices[i]);
	if (cfg->state_dir)
		devices_release_others(cfg);
}

/* what a reload could not do, for the reload's answer: one "; "-separated line */
static void reload_problem(char *msg, size_t len, const char *fmt, const char *name,
			   const char *why)
{
	size_t off = strlen(msg);

	if (off < len)
		snprintf(msg + off, len - off, fmt, off ? "; " : "", name, why);
}

int devices_reload(struct device_set *s, const struct daemon_config *next, char *msg,
		   size_t len)
{
	struct device_run **p = &s->list;
	int problems = 0;

	while (*p) {
		struct device_run *r = *p;
		const struct device_config *dc = config_find_device(next, r->name);

		if (dc && r->dev && device_config_same(&r->dev->cfg, dc)) {
			r->why[0] = '\0';
			/* a mirror's failed members are tried again: resynced */
			ublk_mirror_resync(r->dev);
			p = &r->next;
			continue;
		}
		if (device_run_stop(r)) {
			snprintf(r->why, sizeof(r->why), "%s is in use (mounted, or held open "
				 "exclusively): its %s refused (EBUSY); it runs as before until it "
				 "is released and the daemon reloaded", r->dev->path,
				 dc ? "change is" : "removal is");
			log_err("device %s: %s the configuration, but %s", r->name,
				dc ? "changed in" : "removed from", r->why);
			reload_problem(msg, len, "%sdevice %s: %s", r->name, r->why);
			problems++;
			p = &r->next;
			continue;
		}
		log_notice("device %s: %s the configuration", r->name,
			   dc ? "changed in" : "removed from");
		*p = r->next;
		free(r);
	}
	for (int i = 0; i < next->nr_devices; i++) {
		struct device_run *r;
		bool have = false;

		for (r = s->list; r; r = r->next)
			have |= !strcmp(r->name, next->devices[i].name);
		if (have)
			continue;
		r = devices_add(s, &next->devices[i]);
		if (!r || !r->dev) {
			reload_problem(msg, len, "%sdevice %s: not started: %s",
				       next->devices[i].name, r ? r->why : "out of memory");
			problems++;
		}
	}
	return problems;
}

void devices_stop(struct device_set *s)
{
	while (s->list) {
		struct device_run *r = s->list;

		s->list = r->next;
		device_run_end(r, s->keep_on_stop);
	}
	free(s->state_dir);
	s->state_dir = NULL;
}

void devices_scrub(struct device_set *s, const char *runtime_dir)
{
	for (struct device_run *r = s->list; r; r = r->next) {
		char path[4200], file[300], why[256] = "", *text;
		uint64_t seq;

		snprintf(file, sizeof(file), SCRUB_REQUEST, r->name);
		snprintf(path, sizeof(path), "%s/%s", runtime_dir, file);
		if (kv_read(path, 4096, &text))
			continue;
		unlink(path);
		seq = strncmp(text, "seq=", 4) ? 0 : strtoull(text + 4, NULL, 10);
		free(text);
		if (!r->dev)
			snprintf(why, sizeof(why), "the device is not running: %s", r->why);
		else if (ublk_scrub_start(r->dev, runtime_dir, seq, why, sizeof(why)) == 0)
			continue;
		log_notice("device %s: scrub refused: %s", r->name, why);
		ublk_scrub_answer(runtime_dir, r->name, seq, false, why);
	}
}

void devices_update_rates(struct device_set *s, uint64_t now)
{
	for (struct device_run *r = s->list; r; r = r->next) {
		struct ublk_stats *st;
		uint64_t ios, bytes;

		if (!r->dev)
			continue;
		st = &r->dev->stats;
		ios = atomic_load(&st->reads) + atomic_load(&st->writes);
		bytes = atomic_load(&st->bytes_read) + atomic_load(&st->bytes_written);
		if (r->last_ns && now > r->last_ns) {
			double dt = (now - r->last_ns) / 1e9;

			r->iops = (ios - r->last_ios) / dt;
			r->bps = (bytes - r->last_bytes) / dt;
		}
		r->last_ios = ios;
		r->last_bytes = bytes;
		r->last_ns = now;
	}
}

/*
 * What dmsetup table and mdadm --detail say: "members a, b (stale, 3 errors);
 * read_policy round-robin": each member's state when it is not in sync and
 * its failed requests when there were any
 */
static void device_layout(struct ublk_dev *d, char *buf, size_t len)
{
	const struct device_config *dc = &d->cfg;
	int off = snprintf(buf, len, "members");

	for (int i = 0; i < dc->nr_backing && off < (int)len; i++) {
		uint64_t errs = atomic_load(&d->stats.member_errors[i]);
		bool failed = atomic_load(&d->member_failed[i]);
		const char *state = !failed ? NULL :
				    atomic_load(&d->mirror.syncing[i]) ? "resyncing" :
				    dc->target == TARGET_MIRROR ? "stale" : "failed";

		off += snprintf(buf + off, len - off, "%s %s", i ? "," : "", dc->backing[i]);
		if ((state || errs) && off < (int)len)
			off += snprintf(buf + off, len - off, " (%s%s%" PRIu64 " errors)",
					state ? state : "", state ? ", " : "", errs);
	}
	if (off >= (int)len)
		return;
	if (dc->target == TARGET_STRIPE)
		snprintf(buf + off, len - off, "; stripe_unit %u, stripe_io %s", dc->stripe_unit,
			 stripe_io_to_string(dc->stripe_io));
	else if (dc->target == TARGET_MIRROR)
		snprintf(buf + off, len - off, "; read_policy %s",
			 read_policy_to_string(dc->read_policy));
}

int devices_status(const struct device_set *s, struct status_report *r)
{
	int n = 0;

	for (struct device_run *d = s->list; d; d = d->next)
		n++;
	r->devices = calloc(n ? n : 1, sizeof(*r->devices));
	if (!r->devices)
		return -ENOMEM;
	for (struct device_run *d = s->list; d; d = d->next) {
		struct status_device *e = &r->devices[r->nr_devices++];

		snprintf(e->name, sizeof(e->name), "%s", d->name);
		if (!d->dev) {
			snprintf(e->state, sizeof(e->state), "failed");
			snprintf(e->error, sizeof(e->error), "%s", d->why);
			continue;
		}
		bool resync = ublk_mirror_progress(d->dev, &e->resync_done, &e->resync_total);

		bool scrub = ublk_scrub_progress(d->dev, &e->scrub_done);

		snprintf(e->state, sizeof(e->state), "%s", resync ? "resyncing" :
			 ublk_dev_degraded(d->dev) ? "degraded" : scrub ? "scrubbing" : "running");
		if (!scrub)
			e->scrub_done = 0;
		if (!resync)
			e->resync_done = e->resync_total = 0;
		snprintf(e->path, sizeof(e->path), "%s", d->dev->path);
		snprintf(e->target, sizeof(e->target), "%s",
			 device_target_to_string(d->dev->cfg.target));
		snprintf(e->engine, sizeof(e->engine), "%s", ublk_dev_engine(d->dev));
		e->bpf_ops = atomic_load(&d->dev->stats.bpf_ops);
		e->bpf_bytes = atomic_load(&d->dev->stats.bpf_bytes);
		e->user_copied = atomic_load(&d->dev->stats.user_copied);
		e->driver_copied = atomic_load(&d->dev->stats.driver_copied);
		e->sums = atomic_load(&d->dev->stats.sums);
		snprintf(e->integrity, sizeof(e->integrity), "%s", d->dev->sums ? "crc32c" : "");
		e->mismatches = atomic_load(&d->dev->stats.mismatches);
		e->repairs = atomic_load(&d->dev->stats.repairs);
		e->recomputed = atomic_load(&d->dev->stats.recomputed);
		e->filled = atomic_load(&d->dev->stats.filled);
		snprintf(e->data_path, sizeof(e->data_path), "%s", ublk_dev_data_path(d->dev));
		e->size = d->dev->cfg.size;
		e->reads = atomic_load(&d->dev->stats.reads);
		e->writes = atomic_load(&d->dev->stats.writes);
		e->bytes_read = atomic_load(&d->dev->stats.bytes_read);
		e->bytes_written = atomic_load(&d->dev->stats.bytes_written);
		e->errors = atomic_load(&d->dev->stats.errors);
		e->in_flight = atomic_load(&d->dev->stats.in_flight);
		e->iops = d->iops;
		e->rate_bps = d->bps;
		e->members = d->dev->cfg.nr_backing;
		device_layout(d->dev, e->layout, sizeof(e->layout));
		e->degraded = ublk_dev_degraded(d->dev);
		int off = snprintf(e->error, sizeof(e->error), "%s", d->why);

		for (int i = 0; i < d->dev->cfg.nr_backing && off < (int)sizeof(e->error); i++)
			if (atomic_load(&d->dev->member_failed[i]))
				off += snprintf(e->error + off, sizeof(e->error) - off,
						"%sfailed member %s", off ? "; " : "",
						d->dev->cfg.backing[i]);
	}
	return 0;
}

int devices_summary(const struct device_set *s, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (struct device_run *d = s->list; d && off < len; d = d->next) {
		if (!d->dev)
			off += snprintf(buf + off, len - off, "%sdevice %s failed", off ? "; " : "",
					d->name);
		else
			off += snprintf(buf + off, len - off, "%sdevice %s %s %.0f IOPS %.1f MiB/s%s",
					off ? "; " : "", d->name, d->dev->path, d->iops,
					d->bps / (1 << 20),
					ublk_dev_degraded(d->dev) ? " degraded" : "");
	}
	return off < len ? (int)off : (int)len - 1;
}

int devices_check_open(const struct daemon_config *cfg, FILE *out)
{
	int bad = 0;

	for (int d = 0; d < cfg->nr_devices; d++) {
		const struct device_config *dc = &cfg->devices[d];
		bool failed = false;

		for (int i = 0; i < dc->nr_backing; i++) {
			char why[512];
			uint64_t size;
			int fd = ublk_member_open(dc->backing[i], dc->logical_block_size, 0, &size,
						  why, sizeof(why));

			if (fd >= 0) {
				close(fd);
				continue;
			}
			fprintf(out, "%s:%d: [device %s]: %s\n", cfg->path, dc->backing_line[i],
				dc->name, why);
			failed = true;
		}
		bad += failed;
	}
	return bad;
}

int devices_release(const char *config_path)
{
	struct config_errors errs = { 0 };
	struct daemon_config cfg;
	int ret;

	/* a file with errors still names the state_dir (or the default is it) */
	config_load(config_path, &cfg, &errs);
	config_errors_free(&errs);
	ret = cfg.state_dir ? ublk_release_orphans(cfg.state_dir, NULL, NULL, stdout) : -ENOENT;
	if (ret < 0)
		fprintf(stderr, "iou-offloadd release: state_dir %s: %s\n",
			cfg.state_dir ? cfg.state_dir : "(none)", strerror(-ret));
	config_free(&cfg);
	return ret < 0 ? 1 : 0;
}

int devices_udev_name(const char *config_path, const char *kname)
{
	struct config_errors errs = { 0 };
	struct daemon_config cfg;
	char name[CONFIG_NAME_MAX + 1];
	unsigned int id;
	int ret = -ENOENT;

	if (sscanf(kname, "ublkb%u", &id) != 1)
		return 1;
	config_load(config_path, &cfg, &errs);
	config_errors_free(&errs);
	if (cfg.state_dir)
		ret = ublk_id_find(cfg.state_dir, id, name, sizeof(name));
	config_free(&cfg);
	if (ret)
		return 1;
	printf("%s\n", name);
	return 0;
}
