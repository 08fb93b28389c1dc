/* SPDX-License-Identifier: MIT */
#ifndef IOU_UBLK_RECOVER_H
#define IOU_UBLK_RECOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "config.h"
#include "ublk_ctrl.h"

/*
 * USER_RECOVERY across a crash of the daemon: the kernel keeps a device
 * whose server died (its requests wait, and with REISSUE those in flight
 * are issued again), and the next daemon takes it over. It finds the
 * device by the id it saved in state_dir, and knows it as its own by the
 * fingerprint it stored in ublksrv_flags (the driver keeps that field for
 * the server and never reads it).
 */

/* the layout keys of @dc: a changed device is not taken over */
uint64_t ublk_fingerprint(const struct device_config *dc);

/* STATE_DIR/device-NAME.ublk: the id of the device last added for NAME */
int ublk_id_load(const char *state_dir, const char *name, uint32_t *dev_id);
int ublk_id_save(const char *state_dir, const char *name, uint32_t dev_id);
void ublk_id_forget(const char *state_dir, const char *name);
/* the NAME whose id file names @dev_id (udev's stable names): 0, or -ENOENT */
int ublk_id_find(const char *state_dir, uint32_t dev_id, char *name, size_t len);

/*
 * /dev/ublkb@dev_id opened exclusively, so that nothing mounts it while it
 * is stopped: the fd, or -EBUSY while something holds it (a mount, dm, md,
 * swap, another O_EXCL opener), or another -errno when there is no node.
 * Stopping a device under a mount would abort the file system's journal,
 * and DEL_DEV would then wait for the unmount.
 */
int ublk_disk_claim(uint32_t dev_id);

/*
 * Take over device @dev_id if it is ours (@fp), of the geometry in @want,
 * and waiting for a server: START_USER_RECOVERY, retried while the kernel
 * is still quiescing it. 0 and @info filled: start the queues, then
 * END_USER_RECOVERY. -ENODEV: no such device; -EBUSY with @msg: it cannot
 * be taken over and is in use, so it is left as it is; other -errno with
 * @msg: it cannot be taken over (a stale one of ours is stopped and deleted).
 */
int ublk_recover_begin(struct ublk_ctrl *c, uint32_t dev_id, uint64_t fp,
		       const struct ublksrv_ctrl_dev_info *want,
		       struct ublksrv_ctrl_dev_info *info, char *msg, size_t len);

/*
 * The service is stopped for good (no restart is coming to take its devices
 * over), or a daemon starts without some of them in its configuration:
 * stop and delete each device an id in @state_dir names (but those @keep
 * says to keep, if given) that no live daemon serves, and forget the id;
 * one in use (mounted) is left as it is, its I/O waiting for the next
 * daemon. One line per device on @out. Returns how many were left, or
 * -errno if @state_dir cannot be read.
 */
int ublk_release_orphans(const char *state_dir, bool (*keep)(const char *name, void *arg),
			 void *arg, FILE *out);

#endif
