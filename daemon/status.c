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

#include "status.h"

#define STATUS_MAGIC "iou-offloadd-status 1"

/* values are one line each */
static void put_str(FILE *f, const char *key, const char *v)
{
	fprintf(f, "%s=", key);
	for (; *v; v++)
		fputc(*v == '\n' || *v == '\r' ? ' ' : *v, f);
	fputc('\n', f);
}

int status_write(const char *path, const struct status_report *r)
{
	char tmp[4200];
	FILE *f;
	int fd, ret = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		ret = -errno;
		close(fd);
		unlink(tmp);
		return ret;
	}
	fprintf(f, "%s\n", STATUS_MAGIC);
	fprintf(f, "pid=%d\nstarted=%" PRIu64 "\nupdated=%" PRIu64 "\n",
		(int)r->pid, r->started, r->updated);
	put_str(f, "config", r->config);
	for (int i = 0; i < r->nr; i++) {
		const struct status_entry *e = &r->entries[i];

		put_str(f, "pipeline", e->name);
		put_str(f, "state", e->state);
		put_str(f, "engine", e->engine);
		put_str(f, "transform", e->transform);
		fprintf(f, "bytes_done=%" PRIu64 "\nbytes_total=%" PRIu64 "\n"
			"bytes_durable=%" PRIu64 "\nbytes_resumed=%" PRIu64 "\n"
			"rate_bps=%.0f\nenters=%" PRIu64 "\nbpf_ops=%" PRIu64 "\n"
			"user_copied=%" PRIu64 "\nerrors=%" PRIu64 "\nelapsed=%.3f\n"
			"bpf_bytes=%" PRIu64 "\ncqes=%" PRIu64 "\n",
			e->bytes_done, e->bytes_total, e->bytes_durable, e->bytes_resumed,
			e->rate_bps, e->enters, e->bpf_ops, e->user_copied, e->errors,
			e->elapsed, e->bpf_bytes, e->cqes);
		put_str(f, "error", e->error);
		put_str(f, "note", e->note);
	}
	status_devices_write(f, r);
	fprintf(f, "end\n");
	if (fflush(f) || ferror(f))
		ret = -EIO;
	if (fclose(f) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path) < 0)
		ret = -errno;
	if (ret)
		unlink(tmp);
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

int status_read(const char *path, struct status_report *r)
{
	struct status_entry *e = NULL;
	char *line = NULL;
	size_t cap = 0;
	bool magic = false, end = false;
	FILE *f;

	memset(r, 0, sizeof(*r));
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		char *nl = strchr(line, '\n'), *eq, *v;

		if (nl)
			*nl = '\0';
		if (!magic) {
			if (strcmp(line, STATUS_MAGIC))
				break;
			magic = true;
			continue;
		}
		if (!strcmp(line, "end")) {
			end = true;
			break;
		}
		eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		v = eq + 1;
		int dk = status_device_key(r, line, v);

		if (dk < 0)
			break;
		if (dk) {
			e = NULL;	/* the keys after a device line are the device's */
			continue;
		}
		if (!strcmp(line, "pipeline")) {
			struct status_entry *n = realloc(r->entries, (r->nr + 1) * sizeof(*n));

			if (!n)
				break;
			r->entries = n;
			e = &r->entries[r->nr++];
			memset(e, 0, sizeof(*e));
			copy_val(e->name, sizeof(e->name), v);
		} else if (!e) {
			if (!strcmp(line, "pid"))
				r->pid = atoi(v);
			else if (!strcmp(line, "started"))
				r->started = strtoull(v, NULL, 10);
			else if (!strcmp(line, "updated"))
				r->updated = strtoull(v, NULL, 10);
			else if (!strcmp(line, "config"))
				copy_val(r->config, sizeof(r->config), v);
		} else if (!strcmp(line, "state")) {
			copy_val(e->state, sizeof(e->state), v);
		} else if (!strcmp(line, "engine")) {
			copy_val(e->engine, sizeof(e->engine), v);
		} else if (!strcmp(line, "transform")) {
			copy_val(e->transform, sizeof(e->transform), v);
		} else if (!strcmp(line, "bytes_done")) {
			e->bytes_done = strtoull(v, NULL, 10);
		} else if (!strcmp(line, "bytes_total")) {
			e->bytes_total = strtoull(v, NULL, 10);
		} else if (!strcmp(line, "bytes_durable")) {
			e->bytes_durable = strtoull(v, NULL, 10);
		} else if (!strcmp(line, "bytes_resumed")) {
			e->bytes_resumed = strtoull(v, NULL, 10);
		} else if (!strcmp(line, "rate_bps")) {
			e->rate_bps = strtod(v, NULL);
		} else if (!strcmp(line, "enters")) {
			e->enters = strtoull(v, NULL, 10);
		} else if (!strcmp(line, "cqes")) {
			e->cqes = strtoull(v, NULL, 10);
		} else if (!strcmp(line, "bpf_ops")) {
			e->bpf_ops = strtoull(v, NULL, 10);
		} else if (!strcmp(line, "bpf_bytes")) {
			e->bpf_bytes = strtoull(v, NULL, 10);
		} else if (!strcmp(line, "user_copied")) {
			e->user_copied = strtoull(v, NULL, 10);
		} else if (!strcmp(line, "errors")) {
			e->errors = strtoull(v, NULL, 10);
		} else if (!strcmp(line, "elapsed")) {
			e->elapsed = strtod(v, NULL);
		} else if (!strcmp(line, "error")) {
			copy_val(e->error, sizeof(e->error), v);
		} else if (!strcmp(line, "note")) {
			copy_val(e->note, sizeof(e->note), v);
		}
	}
	free(line);
	fclose(f);
	if (!magic || !end) {
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
