// SPDX-License-Identifier: MIT
/*
 * checksum = crc32c in a pipeline run: the manifest opened (continued on a
 * resume when its header matches, else the copy starts at 0), each block's
 * CRC32C written as the block completes, from the read area that its
 * writes went out of (so the sum is of the bytes written), and flushed with
 * the destinations by every checkpoint (durability.c). For copy, mirror and
 * stripe, whose read area holds the block's logical bytes, on the engines
 * whose chains complete in the daemon (uring, bpf).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "bpf_loader.h"
#include "checksum.h"
#include "log.h"
#include "pipeline_int.h"

static void head_of(const struct pipeline_run *pr, const struct plan_params *pp,
		    struct checksum_head *h)
{
	*h = (struct checksum_head){
		.block_size = pp->block_size,
		.length = pp->length,
		.fingerprint = pipeline_config_fingerprint(&pr->cfg),
		.source = pr->fs.src[0].ident,
	};
}

uint32_t sums_manifest_block_size(const struct pipeline_run *pr, const struct plan_params *pp)
{
	struct checksum_head want, have;
	char path[4200];
	int fd, ret;

	if (checksum_path(pr->env->state_dir, pr->cfg.name, path, sizeof(path)))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ret = checksum_read_head(fd, &have);
	close(fd);
	head_of(pr, pp, &want);
	return !ret && have.length == want.length && have.fingerprint == want.fingerprint &&
	       have.source.ino == want.source.ino && have.source.dev == want.source.dev &&
	       have.source.size == want.source.size &&
	       have.source.mtime_ns == want.source.mtime_ns ? have.block_size : 0;
}

bool sums_manifest_matches(const struct pipeline_run *pr, const struct plan_params *pp)
{
	return sums_manifest_block_size(pr, pp) == pp->block_size;
}

int sums_setup(struct pipeline_run *pr)
{
	const struct pipeline_config *pc = &pr->cfg;
	struct checksum_head h;
	char path[4200];
	bool kept;
	int fd;

	pr->sums_fd = -1;
	if (pc->s.checksum == CHECKSUM_NONE)
		return 0;
	if (pc->transform != TRANSFORM_COPY && pc->transform != TRANSFORM_MIRROR &&
	    pc->transform != TRANSFORM_STRIPE)
		return pipeline_fail(pr, -EINVAL, "checksum = crc32c: for copy, mirror and stripe "
				     "(a gather's blocks are not yet summed)");
	if (engine_drives_itself(pr))
		return pipeline_fail(pr, -EINVAL, "checksum = crc32c: the loop engine's blocks "
				     "complete inside its program, where nothing sums them yet; "
				     "use engine = bpf or uring");
	if (pr->fs.check_only)
		return 0;
	if (checksum_path(pr->env->state_dir, pc->name, path, sizeof(path)))
		return pipeline_fail(pr, -ENAMETOOLONG, "checksum manifest path too long");
	head_of(pr, &pr->plan.p, &h);
	fd = checksum_open(path, &h, &kept);
	if (fd < 0)
		return pipeline_fail(pr, fd, "cannot open the checksum manifest %s: %s", path,
				     strerror(-fd));
	/* a resume continues only the manifest of the same blocks (durability.c) */
	if (!kept && pr->plan.p.start) {
		close(fd);
		return pipeline_fail(pr, -ESTALE, "checksum manifest %s does not match the "
				     "checkpoint", path);
	}
	pr->sums_fd = fd;
	return 0;
}

int sums_block_done(struct pipeline_run *pr, uint64_t logical_off, const void *buf, uint32_t len,
		    int slot)
{
	uint32_t crc;
	int ret;

	if (pr->sums_fd < 0)
		return 0;
	if (pr->sums_kernel && slot >= 0) {
		/* the chain's IOU_OP_ID_SUM put it there before the writes ran */
		crc = bpf_sums_get(pr->sums_base + slot);
		pr->sums_in_kernel++;
	} else if (buf) {
		crc = checksum_crc32c(0, buf, len);
		pr->sums_in_user++;
	} else {
		crc = checksum_zeros(len);
	}
	ret = checksum_put(pr->sums_fd, logical_off / pr->plan.p.block_size, crc);
	if (ret)
		return pipeline_fail(pr, ret, "cannot write the checksum of the block at %" PRIu64
				     ": %s", logical_off, strerror(-ret));
	return 0;
}

void sums_close(struct pipeline_run *pr)
{
	if (pr->sums_fd >= 0) {
		log_info("pipeline %s: checksums: %" PRIu64 " block(s) summed in the kernel by "
			 "IORING_OP_BPF, %" PRIu64 " in userspace", pr->cfg.name, pr->sums_in_kernel,
			 pr->sums_in_user);
		close(pr->sums_fd);
	}
	pr->sums_fd = -1;
}
