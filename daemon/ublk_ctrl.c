// SPDX-License-Identifier: MIT
/*
 * ublk's control commands: io_uring uring_cmd on /dev/ublk-control. The
 * command block (struct ublksrv_ctrl_cmd, 32 bytes) does not fit the 16
 * bytes a normal SQE has for it, hence an SQE128 ring of its own. Command
 * numbers are the ioctl-encoded ones (UBLK_F_CMD_IOCTL_ENCODE), which
 * 6.12 checks against the caller's rights as it checks ioctls.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "ublk_ctrl.h"

#define CTRL_DEV	"/dev/ublk-control"

int ublk_ctrl_open(struct ublk_ctrl *c)
{
	int ret;

	memset(c, 0, sizeof(*c));
	c->fd = open(CTRL_DEV, O_RDWR | O_CLOEXEC);
	if (c->fd < 0)
		return -errno;
	ret = io_uring_queue_init(4, &c->ring, IORING_SETUP_SQE128);
	if (ret < 0) {
		close(c->fd);
		c->fd = -1;
		return ret;
	}
	c->ring_ok = true;
	return 0;
}

void ublk_ctrl_close(struct ublk_ctrl *c)
{
	if (c->ring_ok)
		io_uring_queue_exit(&c->ring);
	if (c->fd >= 0)
		close(c->fd);
	c->ring_ok = false;
	c->fd = -1;
}

static int ctrl_cmd(struct ublk_ctrl *c, uint32_t op, uint32_t dev_id, void *addr,
		    uint16_t len, uint64_t data, unsigned int timeout_ms)
{
	struct __kernel_timespec ts = {
		.tv_sec = timeout_ms / 1000, .tv_nsec = (timeout_ms % 1000) * 1000000LL,
	};
	struct io_uring_sqe *sqe = io_uring_get_sqe(&c->ring);
	struct ublksrv_ctrl_cmd *cmd;
	struct io_uring_cqe *cqe;
	int ret;

	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, 2 * sizeof(*sqe));	/* an SQE128 slot */
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = c->fd;
	sqe->cmd_op = op;
	cmd = (struct ublksrv_ctrl_cmd *)sqe->cmd;
	cmd->dev_id = dev_id;
	cmd->queue_id = (uint16_t)-1;
	cmd->addr = (uintptr_t)addr;
	cmd->len = len;
	cmd->data[0] = data;
	io_uring_sqe_set_data64(sqe, ++c->seq);
	ret = io_uring_submit(&c->ring);
	if (ret < 0)
		return ret;
	for (;;) {
		ret = timeout_ms ? io_uring_wait_cqe_timeout(&c->ring, &cqe, &ts) :
				   io_uring_wait_cqe(&c->ring, &cqe);
		if (ret < 0)
			return ret;	/* -ETIME: in flight until the ring goes */
		/* a late answer to a command that timed out is dropped */
		if (cqe->user_data == c->seq)
			break;
		io_uring_cqe_seen(&c->ring, cqe);
	}
	ret = cqe->res;
	io_uring_cqe_seen(&c->ring, cqe);
	return ret;
}

int ublk_ctrl_add_dev(struct ublk_ctrl *c, struct ublksrv_ctrl_dev_info *info)
{
	return ctrl_cmd(c, UBLK_U_CMD_ADD_DEV, info->dev_id, info, sizeof(*info), 0, 0);
}

int ublk_ctrl_set_params(struct ublk_ctrl *c, uint32_t dev_id, struct ublk_params *p)
{
	p->len = sizeof(*p);
	return ctrl_cmd(c, UBLK_U_CMD_SET_PARAMS, dev_id, p, sizeof(*p), 0, 0);
}

int ublk_ctrl_start_dev(struct ublk_ctrl *c, uint32_t dev_id, int pid, unsigned int timeout_ms)
{
	return ctrl_cmd(c, UBLK_U_CMD_START_DEV, dev_id, NULL, 0, pid, timeout_ms);
}

int ublk_ctrl_stop_dev(struct ublk_ctrl *c, uint32_t dev_id)
{
	return ctrl_cmd(c, UBLK_U_CMD_STOP_DEV, dev_id, NULL, 0, 0, 0);
}

int ublk_ctrl_del_dev(struct ublk_ctrl *c, uint32_t dev_id)
{
	return ctrl_cmd(c, UBLK_U_CMD_DEL_DEV, dev_id, NULL, 0, 0, 0);
}

int ublk_ctrl_del_dev_async(struct ublk_ctrl *c, uint32_t dev_id)
{
	int ret = ctrl_cmd(c, UBLK_U_CMD_DEL_DEV_ASYNC, dev_id, NULL, 0, 0, 0);

	return ret == -EOPNOTSUPP || ret == -EINVAL ? ublk_ctrl_del_dev(c, dev_id) : ret;
}

int ublk_ctrl_get_dev_info(struct ublk_ctrl *c, uint32_t dev_id,
			   struct ublksrv_ctrl_dev_info *info)
{
	memset(info, 0, sizeof(*info));
	return ctrl_cmd(c, UBLK_U_CMD_GET_DEV_INFO, dev_id, info, sizeof(*info), 0, 0);
}

int ublk_ctrl_get_features(struct ublk_ctrl *c, uint64_t *features)
{
	int ret;

	*features = 0;
	ret = ctrl_cmd(c, UBLK_U_CMD_GET_FEATURES, 0, features, sizeof(*features), 0, 0);
	return ret == -EINVAL || ret == -ENOTTY ? -EOPNOTSUPP : ret;
}

int ublk_ctrl_get_queue_affinity(struct ublk_ctrl *c, uint32_t dev_id, uint16_t q_id,
				 void *set, uint16_t len)
{
	memset(set, 0, len);
	return ctrl_cmd(c, UBLK_U_CMD_GET_QUEUE_AFFINITY, dev_id, set, len, q_id, 0);
}

int ublk_ctrl_start_recovery(struct ublk_ctrl *c, uint32_t dev_id)
{
	return ctrl_cmd(c, UBLK_U_CMD_START_USER_RECOVERY, dev_id, NULL, 0, 0, 0);
}

int ublk_ctrl_end_recovery(struct ublk_ctrl *c, uint32_t dev_id, int pid,
			   unsigned int timeout_ms)
{
	return ctrl_cmd(c, UBLK_U_CMD_END_USER_RECOVERY, dev_id, NULL, 0, pid, timeout_ms);
}
