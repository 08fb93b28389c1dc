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

#define R(f, t) KV_FIELD(struct status_report, f, t)
#define E(f, t) KV_FIELD(struct status_entry, f, t)
/* the daemon's keys, first in the file */
static const struct kv_field report_fields[] = {
	R(pid, KV_INT), R(started, KV_U64), R(updated, KV_U64), R(config, KV_STR),
	R(state_dir, KV_STR),
};
/* a pipeline's keys but its name, after its pipeline=NAME line */
static const struct kv_field entry_fields[] = {
	E(state, KV_STR), E(engine, KV_STR), E(transform, KV_STR),
	E(bytes_done, KV_U64), E(bytes_total, KV_U64), E(bytes_durable, KV_U64),
	E(bytes_resumed, KV_U64), E(rate_bps, KV_RATE), E(enters, KV_U64), E(cqes, KV_U64),
	E(bpf_ops, KV_U64), E(bpf_bytes, KV_U64), E(user_copied, KV_U64),
	E(loop_steps, KV_U64), E(loop_blocks, KV_U64), E(errors, KV_U64),
	E(elapsed, KV_SECONDS), E(error, KV_STR), E(note, KV_STR),
};
#define NR(t) (sizeof(t) / sizeof(t[0]))

int status_write(const char *path, const struct status_report *r)
{
	struct kv_record rec;
	int ret = kv_record_open(&rec, STATUS_MAGIC);

	if (ret)
		return ret;
	kv_put_fields(rec.f, report_fields, NR(report_fields), "", r);
	for (int i = 0; i < r->nr; i++) {
		kv_put(rec.f, "pipeline", r->entries[i].name);
		kv_put_fields(rec.f, entry_fields, NR(entry_fields), "", &r->entries[i]);
	}
	status_devices_write(rec.f, r->devices, r->nr_devices);
	return kv_record_replace(&rec, path, 0644, false);
}

void status_report_free(struct status_report *r)
{
	free(r->entries);
	free(r->devices);
	memset(r, 0, sizeof(*r));
}

struct status_reading {
	struct status_report *r;
	struct status_entry *e;	/* the pipeline the keys belong to, or none */
};

static int status_key(void *arg, const char *key, const char *v)
{
	struct status_reading *rd = arg;
	struct status_report *r = rd->r;
	int dk = status_device_key(&r->devices, &r->nr_devices, key, v);

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
		snprintf(rd->e->name, sizeof(rd->e->name), "%s", v);
	} else if (rd->e) {
		kv_set_field(entry_fields, NR(entry_fields), "", rd->e, key, v);
	} else {
		kv_set_field(report_fields, NR(report_fields), "", r, key, v);
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

/* the pid is a live iou-offloadd (not a process that reused the number) */
static bool daemon_alive(pid_t pid)
{
	return status_daemon_alive(pid);
}

bool status_daemon_alive(pid_t pid)
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

/* a pipeline's last verify or scrub, one line of the table */
static void print_check(FILE *out, const char *what, const struct status_check *c, uint64_t now)
{
	char ago[32];

	if (!c->known)
		return;
	human_duration(now > c->when ? now - c->when : 0, ago, sizeof(ago));
	fprintf(out, "  last %s: %s ago, %" PRIu64 " block(s) (%s), %" PRIu64 " mismatch(es)%s\n",
		what, ago, c->blocks, c->complete ? "the whole copy" : "up to its checkpoint",
		c->mismatches, c->failed ? ", a file could not be read" : "");
}

/* the same as a JSON member */
static void json_check(FILE *out, const char *key, const struct status_check *c)
{
	if (!c->known)
		return;
	fprintf(out, ", \"%s\": {\"when\": %" PRIu64 ", \"blocks\": %" PRIu64 ", \"bytes\": %"
		PRIu64 ", \"mismatches\": %" PRIu64 ", \"complete\": %s, \"failed\": %s}", key,
		c->when, c->blocks, c->bytes, c->mismatches, c->complete ? "true" : "false",
		c->failed ? "true" : "false");
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
		fprintf(out, "iou-offloadd: not running (no iou-offloadd with pid %d); last status from "
			"%" PRIu64 " s ago, config %s\n", (int)r->pid,
			now > r->updated ? now - r->updated : 0, r->config);
	status_devices_print(out, r->devices, r->nr_devices, alive);
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
		bool finished = !strcmp(e->state, "finished");
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
			pct, running || finished ? e->rate_bps / (1 << 20) : 0.0, eta, e->enters,
			e->bpf_ops, e->errors);
		if (finished && e->elapsed > 0)
			fprintf(out, "  finished: %" PRIu64 " bytes in %.1f s, %.1f MiB/s on "
				"average%s\n", e->bytes_done - e->bytes_resumed, e->elapsed,
				e->rate_bps / (1 << 20), e->bytes_resumed ? " (this run: it resumed)" : "");
		if (stale)
			fprintf(out, "  the daemon ended while this pipeline was %s; what was "
				"durable is kept: a restart resumes at byte %" PRIu64 "\n",
				e->state, e->bytes_durable);
		if (e->bytes_done > e->bytes_resumed)
			fprintf(out, "  memcpy'd per byte moved: %.2f (by IORING_OP_BPF in the kernel: "
				"%" PRIu64 " bytes; in userspace: %" PRIu64 " bytes); %" PRIu64
				" CQEs\n", status_copied_per_byte(e->bpf_bytes, e->user_copied,
								 e->bytes_done - e->bytes_resumed),
				e->bpf_bytes, e->user_copied, e->cqes);
		if (e->loop_blocks)
			fprintf(out, "  loop_step runs: %" PRIu64 " for %" PRIu64 " blocks, %.2f per "
				"block\n", e->loop_steps, e->loop_blocks,
				(double)e->loop_steps / e->loop_blocks);
		if (e->bytes_resumed)
			fprintf(out, "  resumed at byte %" PRIu64 "; durable up to byte %" PRIu64 "\n",
				e->bytes_resumed, e->bytes_durable);
		print_check(out, "verify", &e->verify, now);
		print_check(out, "scrub", &e->scrub, now);
		if (e->note[0])
			fprintf(out, "  note: %s\n", e->note);
		if (e->error[0])
			fprintf(out, "  error: %s\n", e->error);
	}
}

void status_print_json(FILE *out, const struct status_report *r, uint64_t now)
{
	bool alive = daemon_alive(r->pid);

	fprintf(out, "{\"schema\": %d, \"daemon\": {", STATUS_JSON_SCHEMA);
	kv_json_fields(out, report_fields, NR(report_fields), r, true);
	fprintf(out, ", \"running\": %s, \"now\": %" PRIu64 "}, \"pipelines\": [",
		alive ? "true" : "false", now);
	for (int i = 0; i < r->nr; i++) {
		const struct status_entry *e = &r->entries[i];

		fprintf(out, "%s{\"name\": ", i ? ", " : "");
		kv_json_str(out, e->name);
		kv_json_fields(out, entry_fields, NR(entry_fields), e, false);
		/* what `status` calls interrupted: the daemon died while it ran */
		fprintf(out, ", \"interrupted\": %s",
			!alive && state_was_live(e->state) ? "true" : "false");
		json_check(out, "last_verify", &e->verify);
		json_check(out, "last_scrub", &e->scrub);
		fputc('}', out);
	}
	fprintf(out, "], \"devices\": [");
	status_devices_json(out, r->devices, r->nr_devices);
	fprintf(out, "]}\n");
}
