/* SPDX-License-Identifier: MIT */
#ifndef IOU_UBLK_CTRL_H
#define IOU_UBLK_CTRL_H

#include <stdbool.h>
#include <stdint.h>

#include <liburing.h>

#include "ublk_abi.h"

/* /dev/ublk-control and the SQE128 ring its commands travel on */
struct ublk_ctrl {
	struct io_uring ring;
	int fd;
	bool ring_ok;
	uint64_t seq;			/* user_data of the last command */
};

/* 0, or -errno (-ENOENT: no ublk in this kernel) */
int ublk_ctrl_open(struct ublk_ctrl *c);
void ublk_ctrl_close(struct ublk_ctrl *c);

/* ADD_DEV with @info (dev_id UINT32_MAX: the kernel picks); @info is updated */
int ublk_ctrl_add_dev(struct ublk_ctrl *c, struct ublksrv_ctrl_dev_info *info);
int ublk_ctrl_set_params(struct ublk_ctrl *c, uint32_t dev_id, struct ublk_params *p);
/* waits until every queue has fetched every tag, at most @timeout_ms */
int ublk_ctrl_start_dev(struct ublk_ctrl *c, uint32_t dev_id, int pid, unsigned int timeout_ms);
int ublk_ctrl_stop_dev(struct ublk_ctrl *c, uint32_t dev_id);
int ublk_ctrl_del_dev(struct ublk_ctrl *c, uint32_t dev_id);
/*
 * DEL_DEV without waiting for the device's last reference (6.9+): DEL_DEV
 * waits until every opener of /dev/ublkbN has closed it, which a mount
 * never does. Falls back to DEL_DEV on a kernel without it.
 */
int ublk_ctrl_del_dev_async(struct ublk_ctrl *c, uint32_t dev_id);
/* @info of device @dev_id as the kernel has it; -ENODEV if there is none */
int ublk_ctrl_get_dev_info(struct ublk_ctrl *c, uint32_t dev_id,
			   struct ublksrv_ctrl_dev_info *info);
/* UBLK_F_* this kernel offers; -EOPNOTSUPP before 6.5 (no zero copy there either) */
int ublk_ctrl_get_features(struct ublk_ctrl *c, uint64_t *features);
/* the CPUs the block layer maps to queue @q_id, as a cpu_set_t of @len bytes */
int ublk_ctrl_get_queue_affinity(struct ublk_ctrl *c, uint32_t dev_id, uint16_t q_id,
				 void *set, uint16_t len);
/* USER_RECOVERY: -EBUSY until the kernel has quiesced the device after its server died */
int ublk_ctrl_start_recovery(struct ublk_ctrl *c, uint32_t dev_id);
/* waits until every queue has fetched again, at most @timeout_ms */
int ublk_ctrl_end_recovery(struct ublk_ctrl *c, uint32_t dev_id, int pid,
			   unsigned int timeout_ms);

#endif
