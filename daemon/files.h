/* SPDX-License-Identifier: MIT */
#ifndef IOU_FILES_H
#define IOU_FILES_H

/*
 * A pipeline's sources and destinations as a set: opened, identified and
 * checked here; a failure returns -errno with what failed in fs->msg, for
 * the caller to report. Nothing here knows about rings or chains.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "plan.h"

/*
 * who a file is: a changed source means the copy must start over. ctime
 * catches a change whose mtime was put back (touch -d, cp -p, tar);
 * 0 where it is unknown (a checkpoint written before it was recorded).
 */
struct file_ident {
	uint64_t dev;
	uint64_t ino;
	uint64_t size;
	int64_t mtime_ns;
	int64_t ctime_ns;
};

struct file_slot {
	const char *path;
	int fd;
	bool is_bdev;
	uint32_t max_kb, max_segs;	/* blk-mq device: queue limits (else 0) */
	uint64_t size;		/* bytes, at open */
	uint32_t dio_align;	/* O_DIRECT alignment (memory and offsets) */
	struct file_ident ident;
	bool missing;		/* a destination to create once every check passed */
	bool created;		/* created by this attempt: removed if it fails in setup */
};

struct file_set {
	const struct pipeline_config *cfg;
	struct file_slot src[CONFIG_MAX_FILES];
	struct file_slot dst[CONFIG_MAX_FILES];
	int nr_src, nr_dst;
	bool check_only;	/* --check-config --open: open and check, change nothing */
	uint64_t hole_bytes;	/* a sparse source's holes: not written, not allocated */
	_Atomic bool *stop;	/* set by the daemon: a wait for a lock ends at once */
	/* state_dir, runtime_dir: the daemon's own files, never a source or destination */
	const char *private_dirs[2];
	char msg[512];		/* what the last failure was */
	char more[1536];	/* the plan's other findings, one a line: --check-config --open */
};

/* record what failed in fs->msg (as printf) and return @err */
int files_fail(struct file_set *fs, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * Is @path (open as @fd, or -1) in one of @dirs (state_dir, runtime_dir),
 * through any link, or a hard link to one of their files? Its index, or -1.
 */
int files_private_dir(const char *const dirs[2], const char *path, int fd, bool is_bdev);
/* why such a @path is refused, into @msg */
void files_private_why(char *msg, size_t len, bool dest, const char *path, int k,
		       const char *dir);
/* fill size, type and identity of an open file; -EINVAL: neither file nor bdev */
int file_identify(struct file_slot *f);
/*
 * open every source and every existing destination of fs->cfg, with the
 * checks that need only stat; a missing destination (create = yes) is
 * created later, by files_create_missing(), once every check has passed
 */
int files_open(struct file_set *fs);
/* room on each destination's file system for what @pl writes there */
int files_check_space(struct file_set *fs, const struct plan *pl);
int files_create_missing(struct file_set *fs);
/* setup failed: remove the (still empty) destinations this attempt created */
void files_remove_created(struct file_set *fs);
void files_close(struct file_set *fs);
/* largest O_DIRECT alignment among the files (1 without direct) */
uint32_t files_io_align(const struct file_set *fs);
/* device sizes and O_DIRECT alignment against the plan */
int files_check_plan(struct file_set *fs, const struct plan *pl);
/* the sources have the size and mtime they had at open */
int files_check_unchanged(struct file_set *fs);
/*
 * files_limits.c: bytes a block device takes in one request unsplit, from
 * its queue limits (0: unknown); a blk-mq device's limits, into @f; and
 * the size requests are cut to (0: none), a multiple of @align, for direct
 * I/O to the set's blk-mq devices, with the device that sets it in @why
 */
uint64_t unsplit_bytes(uint32_t max_sectors_kb, uint32_t max_segments, uint32_t page);
void file_queue_limits(struct file_slot *f);
uint32_t files_max_io(const struct file_set *fs, uint32_t align, const struct file_slot **why);

#endif
