/* SPDX-License-Identifier: MIT */
#ifndef IOU_UBLK_ABI_H
#define IOU_UBLK_ABI_H

/*
 * The ublk uapi as 6.12 has it. Debian 12's linux-libc-dev (6.1) lacks the
 * ioctl-encoded command numbers (6.4), so they are supplied here with the
 * values include/uapi/linux/ublk_cmd.h of 6.12 gives them; the structs are
 * unchanged since 6.0.
 */
#include <linux/ioctl.h>
#include <linux/ublk_cmd.h>

#ifndef UBLK_U_CMD_ADD_DEV
#define UBLK_U_CMD_GET_DEV_INFO	_IOR('u', UBLK_CMD_GET_DEV_INFO, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_ADD_DEV	_IOWR('u', UBLK_CMD_ADD_DEV, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_DEL_DEV	_IOWR('u', UBLK_CMD_DEL_DEV, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_START_DEV	_IOWR('u', UBLK_CMD_START_DEV, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_STOP_DEV	_IOWR('u', UBLK_CMD_STOP_DEV, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_SET_PARAMS	_IOWR('u', UBLK_CMD_SET_PARAMS, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_START_USER_RECOVERY \
	_IOWR('u', UBLK_CMD_START_USER_RECOVERY, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_END_USER_RECOVERY \
	_IOWR('u', UBLK_CMD_END_USER_RECOVERY, struct ublksrv_ctrl_cmd)
#endif
#ifndef UBLK_U_CMD_DEL_DEV_ASYNC
#define UBLK_U_CMD_DEL_DEV_ASYNC _IOR('u', 0x14, struct ublksrv_ctrl_cmd)
#endif
#ifndef UBLK_U_IO_FETCH_REQ
#define UBLK_U_IO_FETCH_REQ	_IOWR('u', UBLK_IO_FETCH_REQ, struct ublksrv_io_cmd)
#define UBLK_U_IO_COMMIT_AND_FETCH_REQ \
	_IOWR('u', UBLK_IO_COMMIT_AND_FETCH_REQ, struct ublksrv_io_cmd)
#endif
#ifndef UBLK_F_CMD_IOCTL_ENCODE
#define UBLK_F_CMD_IOCTL_ENCODE	(1UL << 6)
#endif

#ifndef BLOCK_URING_CMD_DISCARD
#define BLOCK_URING_CMD_DISCARD	_IO(0x12, 0)	/* linux/blkdev.h, 6.12 */
#endif
#ifndef UBLK_ATTR_FUA
#define UBLK_ATTR_FUA		(1 << 3)
#endif

/* the per-queue descriptor array's place in /dev/ublkcN (ublk_ch_mmap) */
#define UBLK_QUEUE_DESC_STRIDE \
	((UBLK_MAX_QUEUE_DEPTH * sizeof(struct ublksrv_io_desc) + 4095) & ~4095UL)

#endif
