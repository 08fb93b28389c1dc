/* SPDX-License-Identifier: MIT */
#ifndef IOU_BPF_STRUCT_OPS_H
#define IOU_BPF_STRUCT_OPS_H

/*
 * One struct_ops map per ring, made from a loaded skeleton's map: the
 * kernel binds a struct_ops map to the ring its value names, so each ring
 * needs a map of its own, while the programs in it are shared.
 */
#include <stdint.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

/* a struct_ops map of the skeleton, as the recipe for one more per ring */
struct st_tmpl {
	char name[BPF_OBJ_NAME_LEN];
	uint32_t value_size, vtype_id, map_flags;
	int btf_fd;			/* the object's BTF, which map creation wants */
	void *value;			/* the kernel's value, program fds in place */
	uint32_t ring_fd_off;		/* where data.ring_fd sits in it */
};

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
int st_tmpl_init(struct st_tmpl *t, struct bpf_map *map, struct bpf_object *obj, int op_id,
		 const struct st_prog *p, int nr_p, const struct st_layout *lay, char *msg,
		 size_t len);

/* a new map from @t for @ring_fd, linked: the link's fd, or -errno */
int st_tmpl_link(const struct st_tmpl *t, int ring_fd, char *msg, size_t len);

#endif
