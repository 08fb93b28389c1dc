/* SPDX-License-Identifier: MIT */
#ifndef IOU_CHECKPOINT_H
#define IOU_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "files.h"

enum ckpt_state {
	CKPT_RUNNING,
	CKPT_STOPPED,
	CKPT_FAILED,
	CKPT_FINISHED,
};

struct checkpoint {
	uint64_t fingerprint;		/* pipeline_config_fingerprint() */
	enum ckpt_state state;
	uint64_t done;			/* logical bytes durably written */
	uint64_t total;
	int nr_sources;
	int nr_dests;
	struct file_ident src[CONFIG_MAX_FILES];
	/* size, mtime, ctime: when finished, or stopped with every write flushed */
	struct file_ident dst[CONFIG_MAX_FILES];
	uint64_t updated;		/* unix seconds */
};

const char *ckpt_state_to_string(enum ckpt_state s);

/* the largest checkpoint file, in bytes */
#define CKPT_RECORD_MAX	8191

/* path of NAME's checkpoint in @dir */
int checkpoint_path(const char *dir, const char *name, char *buf, size_t len);
/* 0, -ENOENT (none yet), -EINVAL (unreadable: treated as none, with a warning) */
int checkpoint_load(const char *dir, const char *name, struct checkpoint *c);
/*
 * A record that fits one sector is padded to this many bytes and rewritten
 * in place (checkpoint.c says msg)
 */
#define CKPT_SECTOR	512

/* in place over a CKPT_SECTOR file, else tmp, fsync, rename over, fsync the directory */
int checkpoint_save(const char *dir, const char *name, const struct checkpoint *c);
/* the record, CKPT_SECTOR bytes when it fits in them; its length or -ENOSPC */
int checkpoint_format(const struct checkpoint *c, const char *name, char *buf, size_t len);
/* @path opened for a rewrite in place, or -errno (-ENOENT: not a CKPT_SECTOR file) */
int checkpoint_open_in_place(const char *path);
/* @len bytes of @buf over the record @fd holds, then fdatasync: 0 or -errno */
int checkpoint_rewrite(int fd, const char *buf, int len);
int checkpoint_parse(const char *buf, struct checkpoint *c);

enum resume_action {
	RESUME_FRESH,		/* start at 0 */
	RESUME_CONTINUE,	/* continue at c->done */
	RESUME_SKIP,		/* finished and nothing changed */
};

/* a pipeline's files as they are now: identities, and paths for the messages */
struct ckpt_files {
	const struct file_ident *id;
	char *const *path;		/* NULL: named by their index */
	int nr;
};

/*
 * Decide what to do with a pipeline given its checkpoint (NULL if none)
 * and what the files look like now; says msg in @msg.
 */
enum resume_action checkpoint_decide(const struct checkpoint *c, uint64_t fingerprint,
				     struct ckpt_files src, struct ckpt_files dst,
				     bool repeat, char *msg, size_t len);

#endif
