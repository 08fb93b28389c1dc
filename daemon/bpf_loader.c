// SPDX-License-Identifier: MIT
/*
 * Loads the BPF programs once per daemon and links them to each ring.
 *
 * bpf-ops/iou_ops.bpf.c (the uring_bpf_ops prep/issue pair) and
 * bpf-ops/iou_loop.bpf.c (loop_step) are opened and verified at their
 * first use, through their libbpf skeletons, and stay loaded until the
 * daemon exits: no ring's geometry is compiled into them. What binds them
 * to a ring is a struct_ops map naming the ring's fd (the kernel binds one
 * map to one ring): for each ring the loader makes new maps from the
 * skeleton's (which are never attached) with the same program fds and
 * that ring_fd, and links them. Detaching closes the links, which
 * unregisters the ops from the ring; the kernel does it by itself if the
 * daemon dies, since the links are tied to our file descriptors.
 *
 * Built only with BPF=1 (libbpf 1.5 from the patched 6.12 tree, linked
 * statically: skeleton access to struct_ops fields before load needs
 * libbpf >= 1.4, and Debian's libbpf1 is 1.1).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_btf.h"
#include "bpf_loader.h"
#include "bpf_struct_ops.h"
#include "clock.h"
#include "../bpf-ops/iou_ops.h"
#include "log.h"

#include "iou_ops.skel.h"
#include "iou_loop.skel.h"

#define NR_OPS 5
#define VLOG_SIZE	(256 << 10)

/* the daemon's programs: loaded once, never unloaded */
static struct {
	pthread_mutex_t lock;
	struct iou_ops_bpf *ops;
	struct iou_loop_bpf *loop;
	struct st_tmpl ops_tmpl[NR_OPS], loop_tmpl;
	unsigned int loads;		/* objects loaded (verified) */
	/* a preload that failed, for the next attach to report */
	int ops_ret, loop_ret;
	char ops_err[256], loop_err[256];
	/* entries of the program's sums[] in use, one bit each (bpf_sums_alloc()) */
	uint64_t sums_used[IOU_SUMS_MAX / 64];
} progs = { .lock = PTHREAD_MUTEX_INITIALIZER };

struct bpf_ops_handle {
	int links[NR_OPS];
	uint64_t base[3][NR_OPS + 1];	/* the counters when this ring attached */
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

static const char *const op_names[NR_OPS] = { "copy", "mirror", "stripe", "gather", "sum" };
static const int op_ids[NR_OPS] = {
	IOU_OP_ID_COPY, IOU_OP_ID_MIRROR, IOU_OP_ID_STRIPE, IOU_OP_ID_GATHER, IOU_OP_ID_SUM,
};

/* under progs.lock: the uring_bpf_ops programs, loaded at the first call */
static int ops_load(char *msg, size_t len)
{
	uint64_t t0 = clock_mono_ns();
	int ret;

	if (progs.ops)
		return 0;
	libbpf_set_print(libbpf_log);
	progs.ops = iou_ops_bpf__open();
	if (!progs.ops) {
		ret = -errno;
		snprintf(msg, len, "opening the BPF object failed: %s", strerror(-ret));
		return ret;
	}
	ret = iou_ops_bpf__load(progs.ops);
	if (ret) {
		snprintf(msg, len, "loading the uring_bpf_ops programs failed: %s "
			 "(verifier log at log_level = debug)", strerror(-ret));
		goto fail;
	}
	/* one map in the object, a template per id: iou_copy, iou_mirror, ... */
	for (int i = 0; i < NR_OPS; i++) {
		const struct st_prog p[] = {
			{ "prep_fn", progs.ops->progs.iou_prep, progs.ops->rodata->st_off_prep },
			{ "issue_fn", progs.ops->progs.iou_issue, progs.ops->rodata->st_off_issue },
		};
		const struct st_layout lay = {
			.value_size = progs.ops->rodata->st_value_size,
			.id_off = progs.ops->rodata->st_off_id,
			.ring_fd_off = progs.ops->rodata->st_off_ring_fd,
		};

		ret = st_tmpl_init(&progs.ops_tmpl[i], progs.ops->maps.iou_ops, progs.ops->obj,
				   op_ids[i], p, 2, &lay, msg, len);
		if (ret)
			goto fail;
		snprintf(progs.ops_tmpl[i].name, sizeof(progs.ops_tmpl[i].name), "iou_%s",
			 op_names[i]);
	}
	progs.loads++;
	log_info("uring_bpf_ops programs loaded in %.3f s (BPF objects loaded: %u), kept for "
		 "every ring", (clock_mono_ns() - t0) / 1e9, progs.loads);
	return 0;
fail:
	for (int i = 0; i < NR_OPS; i++) {
		free(progs.ops_tmpl[i].value);
		progs.ops_tmpl[i].value = NULL;
	}
	iou_ops_bpf__destroy(progs.ops);
	progs.ops = NULL;
	return ret ? ret : -EINVAL;
}

/* under progs.lock: a preload's failure, once, else @load's result */
static int load_or_preloaded(int (*load)(char *, size_t), int *pre_ret, const char *pre_err,
			     char *msg, size_t len)
{
	int ret = *pre_ret;

	if (!ret)
		return load(msg, len);
	*pre_ret = 0;		/* the next attach tries again */
	snprintf(msg, len, "%s", pre_err);
	return ret;
}

int bpf_ops_attach(int ring_fd, struct bpf_ops_handle **out, char *msg, size_t len)
{
	struct bpf_ops_handle *h;
	uint64_t t0 = clock_mono_ns();
	int ret;

	*out = NULL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	for (int i = 0; i < NR_OPS; i++)
		h->links[i] = -1;
	pthread_mutex_lock(&progs.lock);
	ret = load_or_preloaded(ops_load, &progs.ops_ret, progs.ops_err, msg, len);
	pthread_mutex_unlock(&progs.lock);
	if (ret)
		goto fail;
	for (int i = 0; i < NR_OPS; i++) {
		ret = st_tmpl_link(&progs.ops_tmpl[i], ring_fd, msg, len);
		if (ret < 0)
			goto fail;
		h->links[i] = ret;
	}
	for (unsigned int id = 0; id <= NR_OPS; id++) {
		h->base[0][id] = __atomic_load_n(&progs.ops->bss->nr_completed[id], __ATOMIC_RELAXED);
		h->base[1][id] = __atomic_load_n(&progs.ops->bss->nr_failed[id], __ATOMIC_RELAXED);
		h->base[2][id] = __atomic_load_n(&progs.ops->bss->bytes_copied[id], __ATOMIC_RELAXED);
	}
	log_info("uring_bpf_ops attached to ring fd %d in %.3f s: %s, %s, %s, %s, %s (one "
		 "program pair)", ring_fd, (clock_mono_ns() - t0) / 1e9, op_names[0], op_names[1],
		 op_names[2], op_names[3], op_names[4]);
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
		if (h->links[i] >= 0)
			close(h->links[i]);
	free(h);
}

int bpf_ops_counters(struct bpf_ops_handle *h, unsigned int op_id, uint64_t *completed,
		     uint64_t *failed, uint64_t *bytes)
{
	if (!h || !progs.ops || !progs.ops->bss || op_id > NR_OPS)
		return -EINVAL;
	*completed = __atomic_load_n(&progs.ops->bss->nr_completed[op_id], __ATOMIC_RELAXED) -
		     h->base[0][op_id];
	*failed = __atomic_load_n(&progs.ops->bss->nr_failed[op_id], __ATOMIC_RELAXED) -
		  h->base[1][op_id];
	*bytes = __atomic_load_n(&progs.ops->bss->bytes_copied[op_id], __ATOMIC_RELAXED) -
		 h->base[2][op_id];
	return 0;
}

int bpf_loader_kernel_structs(const char *const *names, int n, bool *found)
{
	int ret;

	pthread_mutex_lock(&progs.lock);
	ret = bpf_kernel_btf_structs(names, n, found);
	pthread_mutex_unlock(&progs.lock);
	return ret;
}

unsigned int bpf_loader_loads(void)
{
	unsigned int n;

	pthread_mutex_lock(&progs.lock);
	n = progs.loads;
	pthread_mutex_unlock(&progs.lock);
	return n;
}

/* ---- the loop_step program ---- */

struct bpf_loop_handle {
	int link;
};

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

/* under progs.lock: the loop_step program, loaded at the first call */
static int loop_load(char *msg, size_t len)
{
	char *vlog;
	uint64_t t0;
	int ret;

	if (progs.loop)
		return 0;
	libbpf_set_print(libbpf_log);
	progs.loop = iou_loop_bpf__open();
	if (!progs.loop) {
		ret = -errno;
		snprintf(msg, len, "opening the loop BPF object failed: %s", strerror(-ret));
		return ret;
	}
	/* statistics only: how much the verifier had to walk, and how long */
	vlog = calloc(1, VLOG_SIZE);
	if (vlog) {
		bpf_program__set_log_buf(progs.loop->progs.loop_step, vlog, VLOG_SIZE);
		bpf_program__set_log_level(progs.loop->progs.loop_step, 4);
	}
	t0 = clock_mono_ns();
	ret = iou_loop_bpf__load(progs.loop);
	if (ret && vlog) {
		/* again with libbpf's own log, which it prints in full on failure */
		iou_loop_bpf__destroy(progs.loop);
		progs.loop = iou_loop_bpf__open();
		ret = progs.loop ? iou_loop_bpf__load(progs.loop) : -errno;
	} else if (!ret) {
		char sum[512];

		progs.loads++;
		vlog_summary(vlog ? vlog : "", sum, sizeof(sum));
		log_info("loop_step program loaded in %.2f s (BPF objects loaded: %u); verifier: %s",
			 (clock_mono_ns() - t0) / 1e9, progs.loads, sum);
	}
	free(vlog);
	if (!ret) {
		const struct st_prog p[] = {
			{ "loop_step", progs.loop->progs.loop_step, progs.loop->rodata->st_off_loop_step },
		};
		const struct st_layout lay = {
			.value_size = progs.loop->rodata->st_value_size,
			.ring_fd_off = progs.loop->rodata->st_off_ring_fd,
		};

		ret = st_tmpl_init(&progs.loop_tmpl, progs.loop->maps.iou_loop, progs.loop->obj,
				   -1, p, 1, &lay, msg, len);
	}
	else
		snprintf(msg, len, "loading the loop_step program failed: %s (the verifier's "
			 "log is above)", strerror(-ret));
	if (ret) {
		free(progs.loop_tmpl.value);
		progs.loop_tmpl.value = NULL;
		iou_loop_bpf__destroy(progs.loop);
		progs.loop = NULL;
	}
	return ret;
}

int bpf_loop_attach(int ring_fd, struct bpf_loop_handle **out, char *msg, size_t len)
{
	struct bpf_loop_handle *h;
	int ret;

	*out = NULL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	pthread_mutex_lock(&progs.lock);
	ret = load_or_preloaded(loop_load, &progs.loop_ret, progs.loop_err, msg, len);
	pthread_mutex_unlock(&progs.lock);
	if (ret) {
		free(h);
		return ret;
	}
	ret = st_tmpl_link(&progs.loop_tmpl, ring_fd, msg, len);
	if (ret < 0) {
		free(h);
		return ret;
	}
	h->link = ret;
	log_info("io_uring_bpf_ops loop_step attached to ring fd %d", ring_fd);
	*out = h;
	return 0;
}

void bpf_loop_detach(struct bpf_loop_handle *h)
{
	if (!h)
		return;
	close(h->link);
	free(h);
}

uint64_t bpf_loop_null_regions(struct bpf_loop_handle *h)
{
	return h && progs.loop && progs.loop->bss ? progs.loop->bss->null_regions : 0;
}

struct preload {
	bool ops, loop;
};

static void *preload_thread(void *arg)
{
	struct preload *p = arg;

	pthread_mutex_lock(&progs.lock);
	if (p->ops && !progs.ops && !progs.ops_ret)
		progs.ops_ret = ops_load(progs.ops_err, sizeof(progs.ops_err));
	if (p->loop && !progs.loop && !progs.loop_ret)
		progs.loop_ret = loop_load(progs.loop_err, sizeof(progs.loop_err));
	pthread_mutex_unlock(&progs.lock);
	free(p);
	return NULL;
}

void bpf_loader_preload(bool ops, bool loop)
{
	struct preload *p;
	pthread_t t;
	bool need;

	pthread_mutex_lock(&progs.lock);
	need = (ops && !progs.ops) || (loop && !progs.loop);
	pthread_mutex_unlock(&progs.lock);
	if (!need)
		return;
	p = malloc(sizeof(*p));
	if (!p)
		return;		/* the attach loads them */
	*p = (struct preload){ .ops = ops, .loop = loop };
	/* detached: the attach waits on progs.lock, not on the thread */
	if (pthread_create(&t, NULL, preload_thread, p)) {
		free(p);
		return;
	}
	pthread_detach(t);
}

bool bpf_loader_has_crc32c(void)
{
	static const char *const name[] = { "uring_bpf_crc32c" };
	bool found = false;

	return bpf_loader_kernel_structs(name, 1, &found) > 0 && found;
}

int bpf_sums_alloc(unsigned int n, bool device)
{
	unsigned int lo = device ? 0 : IOU_SUMS_DEVICES, hi = device ? IOU_SUMS_DEVICES : IOU_SUMS_MAX;
	int base = -ENOSPC;

	pthread_mutex_lock(&progs.lock);
	/* first fit over the bitmap: a run of @n free entries */
	for (unsigned int i = lo, run = 0; i < hi && base < 0; i++) {
		run = progs.sums_used[i / 64] & (1ULL << (i % 64)) ? 0 : run + 1;
		if (run == n) {
			base = i + 1 - n;
			for (unsigned int k = base; k <= i; k++)
				progs.sums_used[k / 64] |= 1ULL << (k % 64);
		}
	}
	pthread_mutex_unlock(&progs.lock);
	return base;
}

void bpf_sums_free(int base, unsigned int n)
{
	if (base < 0)
		return;
	pthread_mutex_lock(&progs.lock);
	for (unsigned int k = base; k < base + n && k < IOU_SUMS_MAX; k++)
		progs.sums_used[k / 64] &= ~(1ULL << (k % 64));
	pthread_mutex_unlock(&progs.lock);
}

uint32_t bpf_sums_get(unsigned int idx)
{
	/* written by the program before the request completed, read after its CQE */
	return __atomic_load_n(&progs.ops->bss->sums[idx % IOU_SUMS_MAX], __ATOMIC_ACQUIRE);
}
