// SPDX-License-Identifier: MIT
/*
 * Devices in the status file: they come after the pipelines, each opened by
 * a "device=NAME" line, so a reader that knows only pipelines skips them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "human.h"
#include "kv.h"
#include "status_device.h"

#define F(f, t) KV_FIELD(struct status_device, f, t)
/* every key of a device but its name, each written as dev_KEY */
static const struct kv_field fields[] = {
	F(state, KV_STR), F(path, KV_STR), F(target, KV_STR), F(engine, KV_STR),
	F(data_path, KV_STR), F(driver_copied, KV_U64), F(sums, KV_U64), F(integrity, KV_STR),
	F(mismatches, KV_U64), F(repairs, KV_U64), F(recomputed, KV_U64), F(filled, KV_U64),
	F(size, KV_U64), F(reads, KV_U64), F(writes, KV_U64), F(bytes_read, KV_U64),
	F(bytes_written, KV_U64), F(errors, KV_U64), F(in_flight, KV_U32),
	F(iops, KV_RATE), F(rate_bps, KV_RATE), F(members, KV_INT), F(degraded, KV_INT),
	F(bpf_ops, KV_U64), F(bpf_bytes, KV_U64), F(user_copied, KV_U64),
	F(resync_done, KV_U64), F(resync_total, KV_U64), F(scrub_done, KV_U64), F(layout, KV_STR),
	F(error, KV_STR),
};
#define NR_FIELDS (sizeof(fields) / sizeof(fields[0]))

void status_devices_json(FILE *f, const struct status_device *d, int nr)
{
	for (int i = 0; i < nr; i++) {
		fprintf(f, "%s{\"name\": ", i ? ", " : "");
		kv_json_str(f, d[i].name);
		kv_json_fields(f, fields, NR_FIELDS, &d[i], false);
		if (d[i].last_scrub.known)
			fprintf(f, ", \"last_scrub\": {\"when\": %" PRIu64 ", \"blocks\": %" PRIu64
				", \"bytes\": %" PRIu64 ", \"mismatches\": %" PRIu64 ", \"repaired\": %"
				PRIu64 ", \"legs\": %d, \"complete\": %s, \"failed\": %s}",
				d[i].last_scrub.when, d[i].last_scrub.blocks, d[i].last_scrub.bytes,
				d[i].last_scrub.mismatches, d[i].last_scrub.repaired,
				d[i].last_scrub.legs, d[i].last_scrub.complete ? "true" : "false",
				d[i].last_scrub.failed ? "true" : "false");
		fputc('}', f);
	}
}

void status_devices_write(FILE *f, const struct status_device *d, int nr)
{
	for (int i = 0; i < nr; i++) {
		kv_put(f, "device", d[i].name);
		kv_put_fields(f, fields, NR_FIELDS, "dev_", &d[i]);
	}
}

int status_device_key(struct status_device **d, int *nr, const char *key, const char *v)
{
	struct status_device *n;

	if (!strcmp(key, "device")) {
		n = realloc(*d, (*nr + 1) * sizeof(*n));
		if (!n)
			return -ENOMEM;
		*d = n;
		n = &n[(*nr)++];
		memset(n, 0, sizeof(*n));
		snprintf(n->name, sizeof(n->name), "%s", v);
		return 1;
	}
	if (!*nr || strncmp(key, "dev_", 4))
		return 0;
	kv_set_field(fields, NR_FIELDS, "dev_", &(*d)[*nr - 1], key, v);
	return 1;
}

void status_devices_print(FILE *out, const struct status_device *devs, int nr, bool alive)
{
	char size[32];

	if (!nr)
		return;
	fprintf(out, "%-16s %-9s %-12s %-7s %-6s %-9s %11s %9s %9s %9s %8s %6s\n", "DEVICE",
		"STATE", "PATH", "TARGET", "ENGINE", "DATA_PATH", "SIZE", "IOPS", "MiB/s",
		"IN_FLIGHT", "DEGRADED", "ERRORS");
	for (int i = 0; i < nr; i++) {
		const struct status_device *d = &devs[i];

		human_bytes(d->size, size, sizeof(size));
		fprintf(out, "%-16s %-9s %-12s %-7s %-6s %-9s %11s %9.0f %9.1f %9u %5d/%-2d %6"
			PRIu64 "\n", d->name, alive ? d->state : "gone", d->path[0] ? d->path : "-",
			d->target[0] ? d->target : "-", d->engine[0] ? d->engine : "-",
			d->data_path[0] ? d->data_path : "-", size,
			alive ? d->iops : 0.0, alive ? d->rate_bps / (1 << 20) : 0.0,
			d->in_flight, d->degraded, d->members, d->errors);
		if (d->layout[0])
			fprintf(out, "  %s\n", d->layout);
		if (d->resync_total) {
			char done[32], total[32];

			human_bytes(d->resync_done, done, sizeof(done));
			human_bytes(d->resync_total, total, sizeof(total));
			fprintf(out, "  resync: %.0f%%, %s of %s copied to the stale member(s)\n",
				100.0 * d->resync_done / d->resync_total, done, total);
		}
		if (d->bpf_bytes || d->user_copied)
			fprintf(out, "  stripe units gathered: %" PRIu64 " bytes by IORING_OP_BPF (%"
				PRIu64 " requests), %" PRIu64 " bytes by memcpy()\n", d->bpf_bytes,
				d->bpf_ops, d->user_copied);
		if (d->scrub_done)
			fprintf(out, "  scrub: %.0f%% of the legs compared\n",
				d->size ? 100.0 * d->scrub_done / d->size : 0.0);
		if (d->last_scrub.known)
			fprintf(out, "  last scrub: %" PRIu64 " block(s) of %d legs compared%s, %" PRIu64
				" differed, %" PRIu64 " repaired%s\n", d->last_scrub.blocks,
				d->last_scrub.legs, d->last_scrub.complete ? "" : " (stopped early)",
				d->last_scrub.mismatches, d->last_scrub.repaired,
				d->last_scrub.failed ? ", a leg could not be read" : "");
		if (d->integrity[0])
			fprintf(out, "  integrity %s: %" PRIu64 " 4 KiB blocks summed by IORING_OP_BPF; "
				"%" PRIu64 " read disagreed with its sum, %" PRIu64 " repaired from "
				"another leg; %" PRIu64 " dirty region(s) taken anew at start; %" PRIu64
				" bytes read copied from staging into the requests' pages\n",
				d->integrity, d->sums, d->mismatches, d->repairs, d->recomputed,
				d->filled);
		if (d->error[0])
			fprintf(out, "  %s: %s\n", !strcmp(d->state, "failed") ? "error" : "note",
				d->error);
	}
}
