// SPDX-License-Identifier: MIT
/*
 * Loads bpf-ops/iou_ops.bpf.c (through its libbpf skeleton) for one ring:
 * every uring_bpf_ops map gets the ring's fd before load, and each is
 * attached with a BPF link. Detaching the links unregisters the ops from
 * the ring, and the kernel drops them by itself if the daemon dies, since
 * the links are tied to our file descriptors.
 *
 * Built only with BPF=1 (libbpf 1.5 from the patched 6.12 tree, linked
 * statically: skeleton access to struct_ops fields before load needs
 * libbpf >= 1.4, and Debian's libbpf1 is 1.1).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/libbpf.h>

#include "bpf_loader.h"
#include "log.h"

#include "iou_ops.skel.h"
#include "iou_loop.skel.h"

#define NR_OPS 4

struct bpf_ops_handle {
	struct iou_ops_bpf *skel;
	struct bpf_link *links[NR_OPS];
};

bool bpf_loader_available(void)
{
	return true;
}

/*
 * libbpf's messages go to our log, a line each. A failed load comes with
 * the verifier's whole log in one message: its head and its tail (where
 * the reason is) are kept.
 */
static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	enum { HEAD = 8, TAIL = 60 };
	char *buf = NULL, *line, *save = NULL;
	int nlines = 0, i = 0;

	if (vasprintf(&buf, fmt, ap) < 0)
		return 0;
	for (char *c = buf; *c; c++)
		nlines += *c == '\n';
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
		if (i == HEAD && nlines > HEAD + TAIL + 1)
			log_msg(level == LIBBPF_WARN ? LOG_LEVEL_WARNING : LOG_LEVEL_DEBUG,
				"libbpf: ... (%d lines) ...", nlines - HEAD - TAIL);
		if (i >= HEAD && i < nlines - TAIL)
			continue;
		if (level == LIBBPF_WARN)
			log_warning("libbpf: %s", line);
		else
			log_debug("libbpf: %s", line);
	}
	free(buf);
	return 0;
}

int bpf_ops_attach(int ring_fd, struct bpf_ops_handle **out, char *err, size_t err_len)
{
	struct bpf_ops_handle *h;
	struct bpf_map *maps[NR_OPS];
	int ret;

	*out = NULL;
	libbpf_set_print(libbpf_log);
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->skel = iou_ops_bpf__open();
	if (!h->skel) {
		ret = -errno;
		snprintf(err, err_len, "opening the BPF object failed: %s", strerror(-ret));
		goto fail;
	}
	/* the ring they serve, set in the struct_ops maps before load */
	h->skel->struct_ops.iou_copy->ring_fd = ring_fd;
	h->skel->struct_ops.iou_mirror->ring_fd = ring_fd;
	h->skel->struct_ops.iou_stripe->ring_fd = ring_fd;
	h->skel->struct_ops.iou_gather->ring_fd = ring_fd;

	ret = iou_ops_bpf__load(h->skel);
	if (ret) {
		snprintf(err, err_len, "loading the uring_bpf_ops programs failed: %s "
			 "(verifier log at log_level = debug)", strerror(-ret));
		goto fail;
	}
	maps[0] = h->skel->maps.iou_copy;
	maps[1] = h->skel->maps.iou_mirror;
	maps[2] = h->skel->maps.iou_stripe;
	maps[3] = h->skel->maps.iou_gather;
	for (int i = 0; i < NR_OPS; i++) {
		h->links[i] = bpf_map__attach_struct_ops(maps[i]);
		if (!h->links[i]) {
			ret = -errno;
			snprintf(err, err_len, "attaching %s to the ring failed: %s",
				 bpf_map__name(maps[i]), strerror(-ret));
			goto fail;
		}
	}
	log_info("uring_bpf_ops attached to ring fd %d: copy, mirror, stripe, gather", ring_fd);
	*out = h;
	return 0;

fail:
	bpf_ops_detach(h);
	return ret ? ret : -EINVAL;
}

void bpf_ops_detach(struct bpf_ops_handle *h)
{
	if (!h)
		return;
	for (int i = 0; i < NR_OPS; i++)
		bpf_link__destroy(h->links[i]);
	iou_ops_bpf__destroy(h->skel);
	free(h);
}

int bpf_ops_counters(struct bpf_ops_handle *h, unsigned int op_id, uint64_t *completed,
		     uint64_t *failed, uint64_t *bytes)
{
	if (!h || !h->skel->bss || op_id >= sizeof(h->skel->bss->nr_completed) / sizeof(uint64_t))
		return -EINVAL;
	*completed = h->skel->bss->nr_completed[op_id];
	*failed = h->skel->bss->nr_failed[op_id];
	*bytes = h->skel->bss->bytes_copied[op_id];
	return 0;
}

/* ---- the loop_step program ---- */

struct bpf_loop_handle {
	struct iou_loop_bpf *skel;
	struct bpf_link *link;
	char *vlog;		/* the verifier's statistics (log level 4) */
};

#define VLOG_SIZE	(256 << 10)

/* the verifier's summary lines, joined: "processed N insns ...; verification time ..." */
static void vlog_summary(const char *log, char *out, size_t len)
{
	const char *keys[] = { "processed ", "verification time" };
	size_t o = 0;

	out[0] = '\0';
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		const char *p = strstr(log, keys[k]);
		size_t n;

		if (!p)
			continue;
		n = strcspn(p, "\n");
		o += snprintf(out + o, o < len ? len - o : 0, "%s%.*s", o ? "; " : "", (int)n, p);
	}
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct iou_loop_bpf *loop_open(int ring_fd, const struct bpf_loop_params *p)
{
	struct iou_loop_bpf *skel = iou_loop_bpf__open();

	if (!skel)
		return NULL;
	skel->rodata->cq_size = p->cq_size;
	skel->rodata->cq_head_off = p->cq_head_off;
	skel->rodata->cq_tail_off = p->cq_tail_off;
	skel->rodata->cqes_off = p->cqes_off;
	skel->rodata->cq_mask = p->cq_mask;
	skel->struct_ops.iou_loop->ring_fd = ring_fd;
	return skel;
}

int bpf_loop_attach(int ring_fd, const struct bpf_loop_params *p, struct bpf_loop_handle **out,
		    char *err, size_t err_len)
{
	struct bpf_loop_handle *h;
	double t0;
	int ret;

	*out = NULL;
	libbpf_set_print(libbpf_log);
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->skel = loop_open(ring_fd, p);
	if (!h->skel) {
		ret = -errno;
		snprintf(err, err_len, "opening the loop BPF object failed: %s", strerror(-ret));
		goto fail;
	}
	/* statistics only: how much the verifier had to walk, and how long */
	h->vlog = calloc(1, VLOG_SIZE);
	if (h->vlog) {
		bpf_program__set_log_buf(h->skel->progs.loop_step, h->vlog, VLOG_SIZE);
		bpf_program__set_log_level(h->skel->progs.loop_step, 4);
	}
	t0 = mono_s();
	ret = iou_loop_bpf__load(h->skel);
	if (ret && h->vlog) {
		/* again with libbpf's own log, which it prints in full on failure */
		iou_loop_bpf__destroy(h->skel);
		h->skel = loop_open(ring_fd, p);
		ret = h->skel ? iou_loop_bpf__load(h->skel) : -errno;
	} else if (!ret) {
		char sum[512];

		vlog_summary(h->vlog ? h->vlog : "", sum, sizeof(sum));
		log_info("loop_step program loaded in %.2f s; verifier: %s", mono_s() - t0, sum);
	}
	free(h->vlog);
	h->vlog = NULL;
	if (ret) {
		snprintf(err, err_len, "loading the loop_step program failed: %s (the verifier's "
			 "log is above)", strerror(-ret));
		goto fail;
	}
	h->link = bpf_map__attach_struct_ops(h->skel->maps.iou_loop);
	if (!h->link) {
		ret = -errno;
		snprintf(err, err_len, "attaching the loop_step program to the ring failed: %s",
			 strerror(-ret));
		goto fail;
	}
	log_info("io_uring_bpf_ops loop_step attached to ring fd %d", ring_fd);
	*out = h;
	return 0;

fail:
	bpf_loop_detach(h);
	return ret ? ret : -EINVAL;
}

void bpf_loop_detach(struct bpf_loop_handle *h)
{
	if (!h)
		return;
	bpf_link__destroy(h->link);
	iou_loop_bpf__destroy(h->skel);
	free(h);
}

uint64_t bpf_loop_null_regions(struct bpf_loop_handle *h)
{
	return h && h->skel->bss ? h->skel->bss->null_regions : 0;
}
