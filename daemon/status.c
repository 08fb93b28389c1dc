// SPDX-License-Identifier: MIT
/*
 * The status file in the runtime directory, rewritten atomically about
 * once a second by the daemon, and read by `iou-offloadd status`. A plain
 * key=value text file, so `cat` is a fine fallback for a person too.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kv.h"
#include "status.h"

#define STATUS_MAGIC "iou-offloadd-status 1"
#define STATUS_MAX_BYTES (16 << 20)

int status_write(const char *path, const struct status_report *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int ret = 0;

	if (!f)
		return -errno;
	fprintf(f, "%s\n", STATUS_MAGIC);
	fprintf(f, "pid=%d\nstarted=%" PRIu64 "\nupdated=%" PRIu64 "\n",
		(int)r->pid, r->started, r->updated);
	kv_put(f, "config", r->config);
	for (int i = 0; i < r->nr; i++) {
		const struct status_entry *e = &r->entries[i];

		kv_put(f, "pipeline", e->name);
		kv_put(f, "state", e->state);
		kv_put(f, "engine", e->engine);
		kv_put(f, "transform", e->transform);
		fprintf(f, "bytes_done=%" PRIu64 "\nbytes_total=%" PRIu64 "\n"
			"bytes_durable=%" PRIu64 "\nbytes_resumed=%" PRIu64 "\n"
			"rate_bps=%.0f\nenters=%" PRIu64 "\nbpf_ops=%" PRIu64 "\n"
			"user_copied=%" PRIu64 "\nerrors=%" PRIu64 "\nelapsed=%.3f\n"
			"bpf_bytes=%" PRIu64 "\ncqes=%" PRIu64 "\n",
			e->bytes_done, e->bytes_total, e->bytes_durable, e->bytes_resumed,
			e->rate_bps, e->enters, e->bpf_ops, e->user_copied, e->errors,
			e->elapsed, e->bpf_bytes, e->cqes);
		kv_put(f, "error", e->error);
		kv_put(f, "note", e->note);
	}
	status_devices_write(f, r);
	fprintf(f, "end\n");
	if (fflush(f) || ferror(f))
		ret = -EIO;
	if (fclose(f) && !ret)
		ret = -errno;
	if (!ret)
		ret = kv_replace(path, buf, len, 0644, false);
	free(buf);
	return ret;
}

void status_report_free(struct status_report *r)
{
	free(r->entries);
	free(r->devices);
	memset(r, 0, sizeof(*r));
}

static void copy_val(char *dst, size_t len, const char *v)
{
	snprintf(dst, len, "%s", v);
}

struct status_reading {
	struct status_report *r;
	struct status_entry *e;	/* the pipeline the keys belong to, or none */
};

static int status_key(void *arg, const char *key, const char *v)
{
	struct status_reading *rd = arg;
	struct status_report *r = rd->r;
	int dk = status_device_key(r, key, v);

	if (dk < 0)
		return dk;
	if (dk) {
		rd->e = NULL;	/* the keys after a device line are the device's */
		return 0;
	}
	if (!strcmp(key, "pipeline")) {
		struct status_entry *n = realloc(r->entries, (r->nr + 1) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		r->entries = n;
		rd->e = &r->entries[r->nr++];
		memset(rd->e, 0, sizeof(*rd->e));
		copy_val(rd->e->name, sizeof(rd->e->name), v);
	} else if (!rd->e) {
		if (!strcmp(key, "pid"))
			r->pid = atoi(v);
		else if (!strcmp(key, "started"))
			r->started = strtoull(v, NULL, 10);
		else if (!strcmp(key, "updated"))
			r->updated = strtoull(v, NULL, 10);
		else if (!strcmp(key, "config"))
			copy_val(r->config, sizeof(r->config), v);
	} else if (!strcmp(key, "state")) {
		copy_val(rd->e->state, sizeof(rd->e->state), v);
	} else if (!strcmp(key, "engine")) {
		copy_val(rd->e->engine, sizeof(rd->e->engine), v);
	} else if (!strcmp(key, "transform")) {
		copy_val(rd->e->transform, sizeof(rd->e->transform), v);
	} else if (!strcmp(key, "bytes_done")) {
		rd->e->bytes_done = strtoull(v, NULL, 10);
	} else if (!strcmp(key, "bytes_total")) {
		rd->e->bytes_total = strtoull(v, NULL, 10);
	} else if (!strcmp(key, "bytes_durable")) {
		rd->e->bytes_durable = strtoull(v, NULL, 10);
	} else if (!strcmp(key, "bytes_resumed")) {
		rd->e->bytes_resumed = strtoull(v, NULL, 10);
	} else if (!strcmp(key, "rate_bps")) {
		rd->e->rate_bps = strtod(v, NULL);
	} else if (!strcmp(key, "enters")) {
		rd->e->enters = strtoull(v, NULL, 10);
	} else if (!strcmp(key, "cqes")) {
		rd->e->cqes = strtoull(v, NULL, 10);
	} else if (!strcmp(key, "bpf_ops")) {
		rd->e->bpf_ops = strtoull(v, NULL, 10);
	} else if (!strcmp(key, "bpf_bytes")) {
		rd->e->bpf_bytes = strtoull(v, NULL, 10);
	} else if (!strcmp(key, "user_copied")) {
		rd->e->user_copied = strtoull(v, NULL, 10);
	} else if (!strcmp(key, "errors")) {
		rd->e->errors = strtoull(v, NULL, 10);
	} else if (!strcmp(key, "elapsed")) {
		rd->e->elapsed = strtod(v, NULL);
	} else if (!strcmp(key, "error")) {
		copy_val(rd->e->error, sizeof(rd->e->error), v);
	} else if (!strcmp(key, "note")) {
		copy_val(rd->e->note, sizeof(rd->e->note), v);
	}
	return 0;
}

int status_read(const char *path, struct status_report *r)
{
	struct status_reading rd = { .r = r };
	char *text;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = kv_read(path, STATUS_MAX_BYTES, &text);
	if (ret)
		return ret;
	ret = kv_parse(text, STATUS_MAGIC, false, status_key, &rd);
	free(text);
	if (ret) {
		status_report_free(r);
		return -EINVAL;
	}
	return 0;
}

void human_bytes(uint64_t v, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double d = v;
	int u = 0;

	while (d >= 1024 && u < 5) {
		d /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%" PRIu64 " B", v);
	else
		snprintf(buf, len, "%.1f %s", d, units[u]);
}

static void human_duration(uint64_t s, char *buf, size_t len)
{
	if (s < 60)
		snprintf(buf, len, "%" PRIu64 "s", s);
	else if (s < 3600)
		snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else
		snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, (s % 3600) / 60);
}

/* the pid is a live iou-offloadd (not a process that reused the number) */
static bool daemon_alive(pid_t pid)
{
	char path[64], comm[32] = "";
	FILE *f;

	if (pid <= 0 || (kill(pid, 0) < 0 && errno != EPERM))
		return false;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return true;	/* no /proc to ask: trust kill() */
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = '\0';
	fclose(f);
	return !strncmp(comm, "iou-offloadd", 12);
}

/* states a dead daemon cannot be in any more */
static bool state_was_live(const char *state)
{
	return !strcmp(state, "running") || !strcmp(state, "pending") ||
	       !strcmp(state, "retrying");
}

void status_print(FILE *out, const struct status_report *r, uint64_t now)
{
	char up[32], done[32], total[32];
	bool alive = daemon_alive(r->pid);

	human_duration(now > r->started ? now - r->started : 0, up, sizeof(up));
	if (alive)
		fprintf(out, "iou-offloadd: running, pid %d, up %s, config %s "
			"(status updated %" PRIu64 " s ago)\n", (int)r->pid, up, r->config,
			now > r->updated ? now - r->updated : 0);
	else
		fprintf(out, "iou-offloadd: not running (pid %d is gone); last status from "
			"%" PRIu64 " s ago, config %s\n", (int)r->pid,
			now > r->updated ? now - r->updated : 0, r->config);
	status_devices_print(out, r, alive);
	if (!r->nr) {
		if (!r->nr_devices)
			fprintf(out, "no pipelines configured\n");
		return;
	}
	fprintf(out, "%-16s %-11s %-6s %-9s %11s %11s %6s %9s %8s %8s %8s %6s\n",
		"PIPELINE", "STATE", "ENGINE", "TRANSFORM", "DONE", "TOTAL", "%",
		"MiB/s", "ETA", "ENTERS", "BPF_OPS", "ERRORS");
	for (int i = 0; i < r->nr; i++) {
		const struct status_entry *e = &r->entries[i];
		bool stale = !alive && state_was_live(e->state);
		bool running = alive && !strcmp(e->state, "running");
		char pct[16] = "-", eta[16] = "-";

		/* a pipeline that failed before it knew its size has no percentage */
		if (e->bytes_total)
			snprintf(pct, sizeof(pct), "%5.1f%%", 100.0 * e->bytes_done / e->bytes_total);
		else if (!strcmp(e->state, "finished"))
			snprintf(pct, sizeof(pct), "100.0%%");
		if (running && e->rate_bps > 0 && e->bytes_total >= e->bytes_done) {
			double left = (e->bytes_total - e->bytes_done) / e->rate_bps;

			human_duration((uint64_t)left + 1, eta, sizeof(eta));
		}
		human_bytes(e->bytes_done, done, sizeof(done));
		human_bytes(e->bytes_total, total, sizeof(total));
		fprintf(out, "%-16s %-11s %-6s %-9s %11s %11s %6s %9.1f %8s %8" PRIu64
			" %8" PRIu64 " %6" PRIu64 "\n", e->name,
			stale ? "interrupted" : e->state, e->engine, e->transform, done, total,
			pct, running ? e->rate_bps / (1 << 20) : 0.0, eta, e->enters,
			e->bpf_ops, e->errors);
		if (stale)
			fprintf(out, "  the daemon ended while this pipeline was %s; what was "
				"durable (byte %" PRIu64 ") is kept, a restart resumes there\n",
				e->state, e->bytes_durable);
		if (e->bytes_done > e->bytes_resumed)
			fprintf(out, "  memcpy'd per byte moved: %.2f (by IORING_OP_BPF in the kernel: "
				"%" PRIu64 " bytes; in userspace: %" PRIu64 " bytes); %" PRIu64
				" CQEs\n", status_copied_per_byte(e->bpf_bytes, e->user_copied,
								 e->bytes_done - e->bytes_resumed),
				e->bpf_bytes, e->user_copied, e->cqes);
		if (e->bytes_resumed)
			fprintf(out, "  resumed at byte %" PRIu64 "; durable up to byte %" PRIu64 "\n",
				e->bytes_resumed, e->bytes_durable);
		if (e->note[0])
			fprintf(out, "  note: %s\n", e->note);
		if (e->error[0])
			fprintf(out, "  error: %s\n", e->error);
	}
}
