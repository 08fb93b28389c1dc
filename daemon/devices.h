/* SPDX-License-Identifier: MIT */
#ifndef IOU_DEVICES_H
#define IOU_DEVICES_H

#include <stdint.h>

#include "config.h"
#include "status.h"
#include "ublk_dev.h"

/* a [device NAME] as the main thread sees it: served, or why not */
struct device_run {
	struct device_run *next;
	char name[CONFIG_NAME_MAX + 1];
	struct ublk_dev *dev;		/* NULL: it failed to start (why) */
	char why[512];
	uint64_t last_ios, last_bytes, last_ns;
	double iops, bps;
};

struct device_set {
	struct device_run *list;
	int failures;			/* devices that did not start */
	char *state_dir;		/* device ids for recovery (the first config's) */
	bool bpf_ok;			/* the kernel runs IORING_OP_BPF (engine probe) */
};

/* start every device of @cfg; one that fails is logged and reported in status */
void devices_start(struct device_set *s, const struct daemon_config *cfg, bool bpf_ok);
/* stop devices @next drops or changes, start the ones it adds or changes */
void devices_reload(struct device_set *s, const struct daemon_config *next);
/* stop and delete every device: the kernel drains their I/O first */
void devices_stop(struct device_set *s);
void devices_update_rates(struct device_set *s, uint64_t now_ns);
/* one status entry per device, in @r (calloc'd); 0 or -ENOMEM */
int devices_status(const struct device_set *s, struct status_report *r);
/* "d0 /dev/ublkb0 1234 IOPS 5.0 MiB/s" for STATUS=; bytes written to @buf */
int devices_summary(const struct device_set *s, char *buf, size_t len);

#endif
