/* SPDX-License-Identifier: MIT */
#ifndef IOU_KV_H
#define IOU_KV_H

/*
 * The daemon's key=value files (the status file, the checkpoints): a magic
 * first line, one key=value per line, "end" last; written to NAME.tmp and
 * renamed over NAME, so a reader sees the old file or the new one whole.
 */
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* one key=value line: a non-zero return stops the walk and is returned */
typedef int (*kv_fn)(void *arg, const char *key, const char *val);

/*
 * Walk @text: 0 once "end" is read, -EINVAL if the first line is not
 * @magic or "end" never comes (a torn file); @strict: a line without '='
 * or without its newline is -EINVAL too, else it is skipped.
 */
int kv_parse(const char *text, const char *magic, bool strict, kv_fn fn, void *arg);
/* all of @path (at most @max bytes), NUL-terminated, in *text (free it) */
int kv_read(const char *path, size_t max, char **text);
/* key=value on one line: a newline in @v becomes a space */
void kv_put(FILE *f, const char *key, const char *v);
/*
 * Replace @path with @len bytes of @buf, atomically; @durable: fsync the
 * file before the rename and the directory after, so both survive a power
 * cut (checkpoints; the status file is rewritten every second and needs not)
 */
int kv_replace(const char *path, const char *buf, size_t len, mode_t mode, bool durable);

#endif
