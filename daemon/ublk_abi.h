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

/* 6.5: the features this kernel's ublk offers */
#ifndef UBLK_U_CMD_GET_FEATURES
#define UBLK_U_CMD_GET_FEATURES	_IOR('u', 0x13, struct ublksrv_ctrl_cmd)
#endif
#ifndef UBLK_U_CMD_GET_QUEUE_AFFINITY
#define UBLK_U_CMD_GET_QUEUE_AFFINITY \
	_IOR('u', UBLK_CMD_GET_QUEUE_AFFINITY, struct ublksrv_ctrl_cmd)
#endif

/*
 * Zero copy (6.15, 6.16; ported by kernel-patches 0022 and 0024 with
 * upstream's numbers): the request's pages become a kernel buffer in the
 * queue ring's table, registered by hand or by the driver (AUTO_BUF_REG,
 * the index in the sqe->addr of FETCH and COMMIT_AND_FETCH).
 */
#ifndef UBLK_F_SUPPORT_ZERO_COPY
#define UBLK_F_SUPPORT_ZERO_COPY	(1ULL << 0)
#endif
#ifndef UBLK_F_AUTO_BUF_REG
#define UBLK_F_AUTO_BUF_REG		(1ULL << 11)
#define UBLK_IO_F_NEED_REG_BUF		(1U << 17)
#define UBLK_AUTO_BUF_REG_FALLBACK	(1 << 0)
#endif
#ifndef UBLK_U_IO_REGISTER_IO_BUF
#define UBLK_U_IO_REGISTER_IO_BUF	_IOWR('u', 0x23, struct ublksrv_io_cmd)
#define UBLK_U_IO_UNREGISTER_IO_BUF	_IOWR('u', 0x24, struct ublksrv_io_cmd)
#endif

/* the per-queue descriptor array's place in /dev/ublkcN (ublk_ch_mmap) */
#define UBLK_QUEUE_DESC_STRIDE \
	((UBLK_MAX_QUEUE_DEPTH * sizeof(struct ublksrv_io_desc) + 4095) & ~4095UL)

#endif
