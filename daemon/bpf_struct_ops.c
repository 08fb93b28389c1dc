// SPDX-License-Identifier: MIT
/*
 * Per-ring struct_ops maps from a skeleton's: the value the kernel wants
 * (laid out by vmlinux.h, or by the kernel's BTF where the sizes differ),
 * the program fds in it, and the ring's fd at link time. Its callers hold
 * the loader's lock around st_tmpl_init(), which guards the kernel BTF
 * read here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/btf.h>

#include "bpf_struct_ops.h"
#include "clock.h"
#include "log.h"

/*
 * The struct_ops link's attach type (uapi enum bpf_attach_type, since 6.4):
 * Debian 12's linux/bpf.h is 6.1's and lacks it; the value is ABI.
 */
#define IOU_ATTACH_STRUCT_OPS	((enum bpf_attach_type)44)

/* the kernel's BTF, read once and only if a value's size needs it */
static struct btf *vmlinux;

/* @t with typedefs and modifiers peeled off */
static const struct btf_type *btf_peel(const struct btf *btf, uint32_t id)
{
	return btf__type_by_id(btf, btf__resolve_type(btf, id) < 0 ? id :
			       (uint32_t)btf__resolve_type(btf, id));
}

/*
 * The recipe for more maps like @map (created by the skeleton's load, but
 * never filled: libbpf fills a struct_ops map when it attaches it): the
 * kernel's value (struct bpf_struct_ops_<type>, laid out by the kernel's
 * BTF) with @op_id in data.id (if >= 0), the fds of @p in their members,
 * and where data.ring_fd is, for st_tmpl_link().
 */
int st_tmpl_init(struct st_tmpl *t, struct bpf_map *map, struct bpf_object *obj, int op_id,
		 const struct st_prog *p, int nr_p, const struct st_layout *lay, char *msg,
		 size_t len)
{
	struct bpf_map_info info = {};
	uint32_t info_len = sizeof(info), data_off = 0;
	const struct btf_type *vt, *dt = NULL;
	const struct btf_member *m;
	int found = 0, have_id = 0, ret;

	ret = bpf_map_get_info_by_fd(bpf_map__fd(map), &info, &info_len);
	if (ret) {
		snprintf(msg, len, "BPF map %s: %s", bpf_map__name(map), strerror(-ret));
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

	if (!vmlinux) {
		uint64_t t0 = clock_mono_ns();

		vmlinux = btf__load_vmlinux_btf();
		if (!vmlinux) {
			ret = -errno;
			snprintf(msg, len, "reading the kernel's BTF failed: %s", strerror(-ret));
			return ret;
		}
		log_debug("the kernel's BTF read in %.3f s", (clock_mono_ns() - t0) / 1e9);
	}
	/* struct bpf_struct_ops_<ops> { common; <ops> data; } */
	vt = btf__type_by_id(vmlinux, t->vtype_id);
	if (!vt || !btf_is_struct(vt))
		goto no_btf;
	m = btf_members(vt);
	for (int i = 0; i < btf_vlen(vt); i++, m++) {
		if (strcmp(btf__name_by_offset(vmlinux, m->name_off), "data"))
			continue;
		data_off = btf_member_bit_offset(vt, i) / 8;
		dt = btf_peel(vmlinux, m->type);
	}
	if (!dt || !btf_is_struct(dt))
		goto no_btf;
	t->ring_fd_off = 0;
	m = btf_members(dt);
	for (int i = 0; i < btf_vlen(dt); i++, m++) {
		const char *name = btf__name_by_offset(vmlinux, m->name_off);
		uint32_t off = data_off + btf_member_bit_offset(dt, i) / 8;
		__s64 size = btf__resolve_size(vmlinux, m->type);

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
	snprintf(msg, len, "the kernel's BTF does not describe struct_ops map %s as expected",
		 t->name);
	return -EPROTO;
}

int st_tmpl_link(const struct st_tmpl *t, int ring_fd, char *msg, size_t len)
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
		snprintf(msg, len, "creating struct_ops map %s failed: %s", t->name,
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
		snprintf(msg, len, "filling struct_ops map %s failed: %s", t->name,
			 strerror(-ret));
		goto out;
	}
	link_fd = bpf_link_create(map_fd, 0, IOU_ATTACH_STRUCT_OPS, NULL);
	if (link_fd < 0) {
		ret = -errno;
		snprintf(msg, len, "attaching %s to the ring failed: %s", t->name,
			 strerror(-ret));
		goto out;
	}
out:
	free(value);
	close(map_fd);		/* the link holds the map */
	return ret ? ret : link_fd;
}
