/* SPDX-License-Identifier: MIT */
#ifndef IOU_DEVICES_H
#define IOU_DEVICES_H

#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "status.h"
#include "ublk_dev.h"

/* a [device NAME] as the main thread sees it: served, or why not */
struct device_run {
	struct device_run *next;
	char name[CONFIG_NAME_MAX + 1];
	struct ublk_dev *dev;		/* NULL: it failed to start (why) */
	char why[512];			/* running: a change to it refused, and why */
	uint64_t last_ios, last_bytes, last_ns;
	double iops, bps;
};

struct device_set {
	struct device_run *list;
	int failures;			/* devices that did not start */
	char *state_dir;		/* device ids for recovery (the first config's) */
	const struct engine_probe *probe;	/* the daemon's kernel probe (engine_select()) */
	bool keep_on_stop;		/* DEVICES_KEEP_ENV: hand every device over at the end */
};

/*
 * IOU_OFFLOADD_KEEP_DEVICES=1 (the unit sets it): at the daemon's end every
 * device is handed over to the next daemon, not deleted, so a restart or
 * an upgrade keeps each one, its node and its users; the unit's helper
 * (iou-offloadd-release.service, `iou-offloadd release`) deletes them once
 * the unit is stopped for good.
 */
#define DEVICES_KEEP_ENV "IOU_OFFLOADD_KEEP_DEVICES"

/*
 * Start (or take over) every device of @cfg; one that fails is logged and
 * reported in status. Then delete those a daemon left that @cfg no longer has.
 */
void devices_start(struct device_set *s, const struct daemon_config *cfg,
		   const struct engine_probe *probe);
/*
 * Stop devices @next drops or changes, start the ones it adds or changes; a
 * device in use is not stopped (its change is refused). Returns how many
 * changes could not be made, each said in @msg.
 */
int devices_reload(struct device_set *s, const struct daemon_config *next, char *msg,
		   size_t len);
/*
 * Stop and delete every device (the kernel drains their I/O first); one in
 * use, or every one with DEVICES_KEEP_ENV, is handed over to the next daemon.
 */
void devices_stop(struct device_set *s);
/* the scrubs asked for in @runtime_dir (ublk_scrub.h), started or answered refused */
void devices_scrub(struct device_set *s, const char *runtime_dir);
/*
 * --check-config --open: each device's members opened as the device would
 * hold them (exclusively), each finding on @out as FILE:LINE: [device NAME]:;
 * the number of devices that would not start
 */
int devices_check_open(const struct daemon_config *cfg, FILE *out);
/*
 * `iou-offloadd release` (ExecStop= of iou-offloadd-release.service, which
 * systemd stops once iou-offloadd is stopped for good): delete the devices
 * a daemon that died left for a restart that is not coming; 0, or 1 if the
 * state directory cannot be read. Devices in use are left.
 */
int devices_release(const char *config_path);
/*
 * `iou-offloadd udev-name ublkbN` (the package's udev rule): print the NAME
 * of the [device NAME] the daemon added as /dev/ublkbN, for /dev/iou/NAME;
 * 0, or 1 if it is not one of the daemon's
 */
int devices_udev_name(const char *config_path, const char *kname);
void devices_update_rates(struct device_set *s, uint64_t now_ns);
/* one status entry per device, in @r (calloc'd); 0 or -ENOMEM */
int devices_status(const struct device_set *s, struct status_report *r);
/* "d0 /dev/ublkb0 1234 IOPS 5.0 MiB/s" for STATUS=; bytes written to @buf */
int devices_summary(const struct device_set *s, char *buf, size_t len);

#endif
