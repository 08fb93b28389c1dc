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
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf_loader.h"
#include "iou_ops.h"
#include "log.h"

#include "iou_ops.skel.h"
#include "iou_loop.skel.h"

#define NR_OPS 4
#define VLOG_SIZE	(256 << 10)
/*
 * The struct_ops link's attach type (uapi enum bpf_attach_type, since 6.4):
 * Debian 12's linux/bpf.h is 6.1's and lacks it; the value is ABI.
 */
#define IOU_ATTACH_STRUCT_OPS	((enum bpf_attach_type)44)

/* a struct_ops map of the skeleton, as the recipe for one more per ring */
struct st_tmpl {
	char name[BPF_OBJ_NAME_LEN];
	uint32_t value_size, vtype_id, map_flags;
	int btf_fd;			/* the object's BTF, which map creation wants */
	void *value;			/* the kernel's value, program fds in place */
	uint32_t ring_fd_off;		/* where data.ring_fd sits in it */
};

/* the daemon's programs: loaded once, never unloaded */
static struct {
	pthread_mutex_t lock;
	struct iou_ops_bpf *ops;
	struct iou_loop_bpf *loop;
	struct st_tmpl ops_tmpl[NR_OPS], loop_tmpl;
	struct btf *vmlinux;
	unsigned int loads;		/* objects loaded (verified) */
	unsigned int links;		/* struct_ops maps linked to rings, ever */
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

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* @t with typedefs and modifiers peeled off */
static const struct btf_type *btf_peel(const struct btf *btf, uint32_t id)
{
	return btf__type_by_id(btf, btf__resolve_type(btf, id) < 0 ? id :
			       (uint32_t)btf__resolve_type(btf, id));
}

/* one program member of a struct_ops type: its name, the program for it */
struct st_prog {
	const char *member;
	struct bpf_program *prog;
	uint32_t off;			/* in the value, as vmlinux.h has it */
};

/* the value as vmlinux.h lays it out (the objects' .rodata) */
struct st_layout {
	uint32_t value_size;
	uint32_t id_off;		/* 0: no id member */
	uint32_t ring_fd_off;
};

/*
 * The recipe for more maps like @map (created by the skeleton's load, but
 * never filled: libbpf fills a struct_ops map when it attaches it): the
 * kernel's value (struct bpf_struct_ops_<type>, laid out by the kernel's
 * BTF) with @op_id in data.id (if >= 0), the fds of @p in their members,
 * and where data.ring_fd is, for st_tmpl_link().
 */
static int st_tmpl_init(struct st_tmpl *t, struct bpf_map *map, struct bpf_object *obj,
			int op_id, const struct st_prog *p, int nr_p, const struct st_layout *lay,
			char *err, size_t err_len)
{
	struct bpf_map_info info = {};
	uint32_t len = sizeof(info), data_off = 0;
	const struct btf_type *vt, *dt = NULL;
	const struct btf_member *m;
	int found = 0, have_id = 0, ret;

	ret = bpf_map_get_info_by_fd(bpf_map__fd(map), &info, &len);
	if (ret) {
		snprintf(err, err_len, "BPF map %s: %s", bpf_map__name(map), strerror(-ret));
		return ret;
	}
	snprintf(t->name, sizeof(t->name), "%s", info.name);
	t->value_size = info.value_size;
	t->vtype_id = info.btf_vmlinux_value_type_id;
	t->map_flags = info.map_flags;
	t->btf_fd = btf__fd(bpf_object__btf(obj));
	t->value = calloc(1, t->value_size);	/* common: refcnt and state 0 */
	if (!t->value)
		return -ENOMEM;
	/*
	 * The kernel this daemon was built for lays the value out as vmlinux.h
	 * does: no need to parse its BTF (tens of ms under emulation) unless the
	 * size says otherwise. The kernel checks what it is given: a program
	 * in the wrong member fails the update.
	 */
	if (lay->value_size == t->value_size) {
		if (op_id >= 0 && lay->id_off) {
			uint16_t id = op_id;

			memcpy((char *)t->value + lay->id_off, &id, sizeof(id));
		}
		for (int k = 0; k < nr_p; k++) {
			uint64_t fd = bpf_program__fd(p[k].prog);

			memcpy((char *)t->value + p[k].off, &fd, sizeof(fd));
		}
		t->ring_fd_off = lay->ring_fd_off;
		return 0;
	}
	log_debug("struct_ops map %s: the kernel's value has %u bytes, vmlinux.h's %u: reading "
		  "the kernel's BTF", t->name, t->value_size, lay->value_size);

	if (!progs.vmlinux) {
		double t0 = mono_s();

		progs.vmlinux = btf__load_vmlinux_btf();
		if (!progs.vmlinux) {
			ret = -errno;
			snprintf(err, err_len, "reading the kernel's BTF failed: %s", strerror(-ret));
			return ret;
		}
		log_debug("the kernel's BTF read in %.3f s", mono_s() - t0);
	}
	/* struct bpf_struct_ops_<ops> { common; <ops> data; } */
	vt = btf__type_by_id(progs.vmlinux, t->vtype_id);
	if (!vt || !btf_is_struct(vt))
		goto no_btf;
	m = btf_members(vt);
	for (int i = 0; i < btf_vlen(vt); i++, m++) {
		if (strcmp(btf__name_by_offset(progs.vmlinux, m->name_off), "data"))
			continue;
		data_off = btf_member_bit_offset(vt, i) / 8;
		dt = btf_peel(progs.vmlinux, m->type);
	}
	if (!dt || !btf_is_struct(dt))
		goto no_btf;
	t->ring_fd_off = 0;
	m = btf_members(dt);
	for (int i = 0; i < btf_vlen(dt); i++, m++) {
		const char *name = btf__name_by_offset(progs.vmlinux, m->name_off);
		uint32_t off = data_off + btf_member_bit_offset(dt, i) / 8;
		__s64 size = btf__resolve_size(progs.vmlinux, m->type);

		if (size <= 0 || off + size > t->value_size)
			goto no_btf;
		if (!strcmp(name, "ring_fd") && size == sizeof(int)) {
			t->ring_fd_off = off;
		} else if (!strcmp(name, "id") && op_id >= 0 && size == sizeof(uint16_t)) {
			uint16_t id = op_id;

			memcpy((char *)t->value + off, &id, sizeof(id));
			have_id = 1;
		}
		/* a program member takes the program's fd */
		for (int k = 0; k < nr_p; k++) {
			uint64_t fd = bpf_program__fd(p[k].prog);

			if (strcmp(name, p[k].member) || size != sizeof(fd))
				continue;
			memcpy((char *)t->value + off, &fd, sizeof(fd));
			found++;
		}
	}
	if (!t->ring_fd_off || found != nr_p || (op_id >= 0 && !have_id))
		goto no_btf;
	return 0;
no_btf:
	snprintf(err, err_len, "the kernel's BTF does not describe struct_ops map %s as expected",
		 t->name);
	return -EPROTO;
}

/* a new map from @t for @ring_fd, linked: the link's fd, or -errno */
static int st_tmpl_link(const struct st_tmpl *t, int ring_fd, char *err, size_t err_len)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .btf_fd = t->btf_fd,
		    .btf_vmlinux_value_type_id = t->vtype_id, .map_flags = t->map_flags);
	uint32_t key = 0, rfd = ring_fd;
	char *value = NULL;
	int map_fd, link_fd = -1, ret;

	map_fd = bpf_map_create(BPF_MAP_TYPE_STRUCT_OPS, t->name, sizeof(key), t->value_size, 1,
				&opts);
	if (map_fd < 0) {
		ret = -errno;
		snprintf(err, err_len, "creating struct_ops map %s failed: %s", t->name,
			 strerror(-ret));
		return ret;
	}
	value = malloc(t->value_size);
	if (!value) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(value, t->value, t->value_size);
	memcpy(value + t->ring_fd_off, &rfd, sizeof(rfd));
	ret = bpf_map_update_elem(map_fd, &key, value, 0) ? -errno : 0;
	if (ret) {
		snprintf(err, err_len, "filling struct_ops map %s failed: %s", t->name,
			 strerror(-ret));
		goto out;
	}
	link_fd = bpf_link_create(map_fd, 0, IOU_ATTACH_STRUCT_OPS, NULL);
	if (link_fd < 0) {
		ret = -errno;
		snprintf(err, err_len, "attaching %s to the ring failed: %s", t->name,
			 strerror(-ret));
		goto out;
	}
	__atomic_add_fetch(&progs.links, 1, __ATOMIC_RELAXED);
out:
	free(value);
	close(map_fd);		/* the link holds the map */
	return ret ? ret : link_fd;
}

static const char *const op_names[NR_OPS] = { "copy", "mirror", "stripe", "gather" };
static const int op_ids[NR_OPS] = {
	IOU_OP_ID_COPY, IOU_OP_ID_MIRROR, IOU_OP_ID_STRIPE, IOU_OP_ID_GATHER,
};

/* under progs.lock: the uring_bpf_ops programs, loaded at the first call */
static int ops_load(char *err, size_t err_len)
{
	struct bpf_map *maps[NR_OPS];
	double t0 = mono_s();
	int ret;

	if (progs.ops)
		return 0;
	libbpf_set_print(libbpf_log);
	progs.ops = iou_ops_bpf__open();
	if (!progs.ops) {
		ret = -errno;
		snprintf(err, err_len, "opening the BPF object failed: %s", strerror(-ret));
		return ret;
	}
	ret = iou_ops_bpf__load(progs.ops);
	if (ret) {
		snprintf(err, err_len, "loading the uring_bpf_ops programs failed: %s "
			 "(verifier log at log_level = debug)", strerror(-ret));
		goto fail;
	}
	maps[0] = progs.ops->maps.iou_copy;
	maps[1] = progs.ops->maps.iou_mirror;
	maps[2] = progs.ops->maps.iou_stripe;
	maps[3] = progs.ops->maps.iou_gather;
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

		ret = st_tmpl_init(&progs.ops_tmpl[i], maps[i], progs.ops->obj, op_ids[i], p, 2,
				   &lay, err, err_len);
		if (ret)
			goto fail;
	}
	progs.loads++;
	log_info("uring_bpf_ops programs loaded in %.3f s (BPF objects loaded: %u), kept for "
		 "every ring", mono_s() - t0, progs.loads);
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

int bpf_ops_attach(int ring_fd, struct bpf_ops_handle **out, char *err, size_t err_len)
{
	struct bpf_ops_handle *h;
	double t0 = mono_s();
	int ret;

	*out = NULL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	for (int i = 0; i < NR_OPS; i++)
		h->links[i] = -1;
	pthread_mutex_lock(&progs.lock);
	ret = ops_load(err, err_len);
	pthread_mutex_unlock(&progs.lock);
	if (ret)
		goto fail;
	for (int i = 0; i < NR_OPS; i++) {
		ret = st_tmpl_link(&progs.ops_tmpl[i], ring_fd, err, err_len);
		if (ret < 0)
			goto fail;
		h->links[i] = ret;
	}
	for (unsigned int id = 0; id <= NR_OPS; id++) {
		h->base[0][id] = __atomic_load_n(&progs.ops->bss->nr_completed[id], __ATOMIC_RELAXED);
		h->base[1][id] = __atomic_load_n(&progs.ops->bss->nr_failed[id], __ATOMIC_RELAXED);
		h->base[2][id] = __atomic_load_n(&progs.ops->bss->bytes_copied[id], __ATOMIC_RELAXED);
	}
	log_info("uring_bpf_ops attached to ring fd %d in %.3f s: %s, %s, %s, %s (one program "
		 "pair)", ring_fd, mono_s() - t0, op_names[0], op_names[1], op_names[2],
		 op_names[3]);
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
static int loop_load(char *err, size_t err_len)
{
	char *vlog;
	double t0;
	int ret;

	if (progs.loop)
		return 0;
	libbpf_set_print(libbpf_log);
	progs.loop = iou_loop_bpf__open();
	if (!progs.loop) {
		ret = -errno;
		snprintf(err, err_len, "opening the loop BPF object failed: %s", strerror(-ret));
		return ret;
	}
	/* statistics only: how much the verifier had to walk, and how long */
	vlog = calloc(1, VLOG_SIZE);
	if (vlog) {
		bpf_program__set_log_buf(progs.loop->progs.loop_step, vlog, VLOG_SIZE);
		bpf_program__set_log_level(progs.loop->progs.loop_step, 4);
	}
	t0 = mono_s();
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
			 mono_s() - t0, progs.loads, sum);
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
				   -1, p, 1, &lay, err, err_len);
	}
	else
		snprintf(err, err_len, "loading the loop_step program failed: %s (the verifier's "
			 "log is above)", strerror(-ret));
	if (ret) {
		free(progs.loop_tmpl.value);
		progs.loop_tmpl.value = NULL;
		iou_loop_bpf__destroy(progs.loop);
		progs.loop = NULL;
	}
	return ret;
}

int bpf_loop_attach(int ring_fd, struct bpf_loop_handle **out, char *err, size_t err_len)
{
	struct bpf_loop_handle *h;
	int ret;

	*out = NULL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	pthread_mutex_lock(&progs.lock);
	ret = loop_load(err, err_len);
	pthread_mutex_unlock(&progs.lock);
	if (ret) {
		free(h);
		return ret;
	}
	ret = st_tmpl_link(&progs.loop_tmpl, ring_fd, err, err_len);
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
