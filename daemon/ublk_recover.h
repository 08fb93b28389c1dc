/* SPDX-License-Identifier: MIT */
#ifndef IOU_UBLK_RECOVER_H
#define IOU_UBLK_RECOVER_H

#include <stddef.h>
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

/*
 * Take over device @dev_id if it is ours (@fp), of the geometry in @want,
 * and waiting for a server: START_USER_RECOVERY, retried while the kernel
 * is still quiescing it. 0 and @info filled: start the queues, then
 * END_USER_RECOVERY. -ENODEV: no such device; other -errno with @why: it
 * cannot be taken over (a stale one of ours is stopped and deleted).
 */
int ublk_recover_begin(struct ublk_ctrl *c, uint32_t dev_id, uint64_t fp,
		       const struct ublksrv_ctrl_dev_info *want,
		       struct ublksrv_ctrl_dev_info *info, char *why, size_t len);

#endif
