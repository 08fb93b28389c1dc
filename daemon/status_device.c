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

#include "status.h"

void status_devices_write(FILE *f, const struct status_report *r)
{
	for (int i = 0; i < r->nr_devices; i++) {
		const struct status_device *d = &r->devices[i];

		fprintf(f, "device=%s\ndev_state=%s\ndev_path=%s\ndev_target=%s\n"
			"dev_engine=%s\ndev_size=%" PRIu64 "\ndev_reads=%" PRIu64 "\n"
			"dev_writes=%" PRIu64 "\ndev_bytes_read=%" PRIu64 "\n"
			"dev_bytes_written=%" PRIu64 "\ndev_errors=%" PRIu64 "\n"
			"dev_in_flight=%u\ndev_iops=%.0f\ndev_rate_bps=%.0f\n"
			"dev_members=%d\ndev_degraded=%d\ndev_bpf_ops=%" PRIu64 "\n"
			"dev_bpf_bytes=%" PRIu64 "\ndev_user_copied=%" PRIu64 "\n",
			d->name, d->state, d->path,
			d->target, d->engine, d->size, d->reads, d->writes, d->bytes_read,
			d->bytes_written, d->errors, d->in_flight, d->iops, d->rate_bps,
			d->members, d->degraded, d->bpf_ops, d->bpf_bytes, d->user_copied);
		fprintf(f, "dev_error=");
		for (const char *c = d->error; *c; c++)
			fputc(*c == '\n' ? ' ' : *c, f);
		fputc('\n', f);
	}
}

#define STR(field) if (!strcmp(key, "dev_" #field)) snprintf(d->field, sizeof(d->field), "%s", v)
#define U64(field) if (!strcmp(key, "dev_" #field)) d->field = strtoull(v, NULL, 10)
#define DBL(field) if (!strcmp(key, "dev_" #field)) d->field = strtod(v, NULL)

int status_device_key(struct status_report *r, const char *key, const char *v)
{
	struct status_device *d;

	if (!strcmp(key, "device")) {
		d = realloc(r->devices, (r->nr_devices + 1) * sizeof(*d));
		if (!d)
			return -ENOMEM;
		r->devices = d;
		d = &r->devices[r->nr_devices++];
		memset(d, 0, sizeof(*d));
		snprintf(d->name, sizeof(d->name), "%s", v);
		return 1;
	}
	if (!r->nr_devices || strncmp(key, "dev_", 4))
		return 0;
	d = &r->devices[r->nr_devices - 1];
	STR(state); STR(path); STR(target); STR(engine); STR(error);
	U64(size); U64(reads); U64(writes); U64(bytes_read); U64(bytes_written); U64(errors);
	U64(in_flight); U64(members); U64(degraded); U64(bpf_ops); U64(bpf_bytes);
	U64(user_copied);
	DBL(iops); DBL(rate_bps);
	return 1;
}

void status_devices_print(FILE *out, const struct status_report *r, bool alive)
{
	char size[32];

	if (!r->nr_devices)
		return;
	fprintf(out, "%-16s %-9s %-12s %-7s %-6s %11s %9s %9s %9s %8s %6s\n", "DEVICE",
		"STATE", "PATH", "TARGET", "ENGINE", "SIZE", "IOPS", "MiB/s", "IN_FLIGHT",
		"DEGRADED", "ERRORS");
	for (int i = 0; i < r->nr_devices; i++) {
		const struct status_device *d = &r->devices[i];

		human_bytes(d->size, size, sizeof(size));
		fprintf(out, "%-16s %-9s %-12s %-7s %-6s %11s %9.0f %9.1f %9u %5d/%-2d %6" PRIu64
			"\n", d->name, alive ? d->state : "gone", d->path[0] ? d->path : "-",
			d->target[0] ? d->target : "-", d->engine[0] ? d->engine : "-", size,
			alive ? d->iops : 0.0, alive ? d->rate_bps / (1 << 20) : 0.0,
			d->in_flight, d->degraded, d->members, d->errors);
		if (d->bpf_bytes || d->user_copied)
			fprintf(out, "  stripe units gathered: %" PRIu64 " bytes by IORING_OP_BPF (%"
				PRIu64 " requests), %" PRIu64 " bytes by memcpy()\n", d->bpf_bytes,
				d->bpf_ops, d->user_copied);
		if (d->error[0])
			fprintf(out, "  %s: %s\n", !strcmp(d->state, "failed") ? "error" : "note",
				d->error);
	}
}
