// SPDX-License-Identifier: MIT
/*
 * Engine selection. `auto` must never fall back silently: the reason the
 * bpf engine is not used is logged and shown in `status`.
 *
 * The probe loads nothing into the kernel. It checks, in order: that the
 * daemon was built with the BPF ops; that io_uring accepts
 * IORING_SETUP_BPF_OP; that IORING_REGISTER_PROBE lists IORING_OP_BPF; and
 * that the kernel's BTF has the uring_bpf_ops struct_ops type (read once
 * per daemon, the bytes shared with every later libbpf load: bpf_btf.c).
 * Opcode and setup-bit numbers alone are not proof: on newer stock kernels
 * 58 is IORING_OP_RECV_ZC and bit 17 IORING_SETUP_HYBRID_IOPOLL. The loop engine
 * needs all that, a ring with IORING_SETUP_NO_SQARRAY | IORING_SETUP_SQ_REWIND,
 * and the io_uring_bpf_ops type and its iou_loop_params in BTF.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf_loader.h"
#include "engine.h"
#include "pipeline_run.h"
#include "ring.h"


void engine_probe_kernel(struct engine_probe *probe)
{
	static const char *const btf_structs[] = {
		"uring_bpf_ops", "io_uring_bpf_ops", "iou_loop_params",
	};
	bool in_btf[3];
	struct ring r;
	int ret;

	memset(probe, 0, sizeof(*probe));
	probe->probed = true;
	/* until the bpf engine's checks pass, the loop engine has the same reason */
	snprintf(probe->loop_why, sizeof(probe->loop_why), "it needs the bpf engine");
	/* for tests of the fallback on a kernel that has the op */
	if (getenv("IOU_OFFLOADD_NO_BPF")) {
		snprintf(probe->why, sizeof(probe->why),
			 "disabled by $IOU_OFFLOADD_NO_BPF");
		snprintf(probe->loop_why, sizeof(probe->loop_why), "%s", probe->why);
		return;
	}
	if (!bpf_loader_available()) {
		snprintf(probe->why, sizeof(probe->why),
			 "this build has no BPF ops (built without the patched kernel's vmlinux.h)");
		return;
	}
	ret = ring_init(&r, 4, IOU_SETUP_BPF_OP);
	if (ret < 0) {
		snprintf(probe->why, sizeof(probe->why),
			 "the kernel rejects IORING_SETUP_BPF_OP (%s): not the patched kernel",
			 strerror(-ret));
		return;
	}
	ret = ring_probe_opcode(&r, IOU_OP_BPF);
	ring_exit(&r);
	if (ret <= 0) {
		snprintf(probe->why, sizeof(probe->why),
			 "IORING_REGISTER_PROBE does not list IORING_OP_BPF (%d)", IOU_OP_BPF);
		return;
	}
	ret = bpf_loader_kernel_structs(btf_structs, 3, in_btf);
	if (ret <= 0 || !in_btf[0]) {
		snprintf(probe->why, sizeof(probe->why),
			 "kernel BTF (%s) has no struct uring_bpf_ops%s%s", VMLINUX_BTF,
			 ret < 0 ? ": " : "", ret < 0 ? strerror(-ret) : "");
		return;
	}
	probe->bpf_ok = true;

	snprintf(probe->loop_why, sizeof(probe->loop_why), "%s", "");
	ret = ring_init_sized(&r, 4, 8, IOU_SETUP_BPF_OP | IORING_SETUP_NO_SQARRAY |
			      IORING_SETUP_SQ_REWIND);
	if (ret < 0) {
		snprintf(probe->loop_why, sizeof(probe->loop_why),
			 "the kernel rejects IORING_SETUP_NO_SQARRAY | IORING_SETUP_SQ_REWIND (%s)",
			 strerror(-ret));
		return;
	}
	ring_exit(&r);
	if (!in_btf[1] || !in_btf[2]) {
		snprintf(probe->loop_why, sizeof(probe->loop_why),
			 "kernel BTF (%s) has no struct io_uring_bpf_ops (bpf-ops loop_step)",
			 VMLINUX_BTF);
		return;
	}
	probe->loop_ok = true;
}

int engine_select(enum engine_kind want, const struct engine_probe *probe,
		  const struct engine_ops **out, char *note, size_t note_len)
{
	note[0] = '\0';
	switch (want) {
	case ENGINE_URING:
		*out = &engine_uring_ops;
		return 0;
	case ENGINE_BPF:
		if (!probe->bpf_ok) {
			snprintf(note, note_len, "engine = bpf is not available: %s", probe->why);
			return -EOPNOTSUPP;
		}
		*out = &engine_bpf_ops;
		return 0;
	case ENGINE_AUTO:
		if (probe->bpf_ok) {
			*out = &engine_bpf_ops;
			return 0;
		}
		snprintf(note, note_len,
			 "engine = auto: IORING_OP_BPF unavailable (%s); using the uring "
			 "fallback engine, which copies in userspace", probe->why);
		*out = &engine_uring_ops;
		return 0;
	case ENGINE_LOOP:
		if (!probe->loop_ok) {
			snprintf(note, note_len, "engine = loop is not available: %s",
				 probe->bpf_ok ? probe->loop_why : probe->why);
			return -EOPNOTSUPP;
		}
		*out = &engine_loop_ops;
		return 0;
	default:
		snprintf(note, note_len, "engine %d is unknown", (int)want);
		return -EINVAL;
	}
}

/* ---- the optional hooks, once ---- */

int engine_max_shuffle_sqes(const struct pipeline_run *pr)
{
	return pr->engine->max_shuffle_sqes ? pr->engine->max_shuffle_sqes(pr) : 0;
}

size_t engine_meta_size(const struct pipeline_run *pr)
{
	return pr->engine->meta_size ? pr->engine->meta_size(pr) : 0;
}

void engine_preload(const struct pipeline_run *pr)
{
	if (pr->engine->preload)
		pr->engine->preload(pr);
}

int engine_attach(struct pipeline_run *pr)
{
	return pr->engine->attach ? pr->engine->attach(pr) : 0;
}

void engine_detach(struct pipeline_run *pr)
{
	/* only what attach set up: engine_priv is its mark */
	if (pr->engine && pr->engine_priv && pr->engine->detach)
		pr->engine->detach(pr);
}

int engine_user_copy(struct pipeline_run *pr, struct chain *c)
{
	return pr->engine->user_copy ? pr->engine->user_copy(pr, c) : -EINVAL;
}

int engine_build_sum(struct pipeline_run *pr, struct chain *c)
{
	return pr->engine->build_sum ? pr->engine->build_sum(pr, c) : -EOPNOTSUPP;
}

void engine_ring_size(const struct pipeline_run *pr, int ops, unsigned int *sq_entries,
		      unsigned int *cq_entries)
{
	if (pr->engine->ring_size)
		pr->engine->ring_size(pr, ops, sq_entries, cq_entries);
}

bool engine_drives_itself(const struct pipeline_run *pr)
{
	return pr->engine && pr->engine->drive;
}
