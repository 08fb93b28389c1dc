/* SPDX-License-Identifier: MIT */
#ifndef IOU_KV_H
#define IOU_KV_H

/*
 * The daemon's key=value files (the status file, the checkpoints): a magic
 * first line, one key=value per line, "end" last; written to NAME.tmp and
 * renamed over NAME, so a reader sees the old file or the new one whole.
 */
#include <stdbool.h>
#include <stddef.h>
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
/*
 * all of @path, or of @fd to its end (a pipe too), NUL-terminated, in
 * *text (free it), its length in *@len when not NULL: 0, -EFBIG past @max
 * bytes (kv_read: -EINVAL, a file too big to be ours), or the read's
 * -errno. The one reader of whole files (the status file, checkpoints, the
 * configuration)
 */
int kv_read(const char *path, size_t max, char **text);
int kv_read_fd(int fd, size_t max, char **text, size_t *len);
/* key=value on one line: a newline in @v becomes a space */
void kv_put(FILE *f, const char *key, const char *v);
/*
 * Replace @path with @len bytes of @buf, atomically; @durable: fsync the
 * file before the rename and the directory after, so both survive a power
 * cut (checkpoints; the status file is rewritten every second and needs not)
 */
int kv_replace(const char *path, const char *buf, size_t len, mode_t mode, bool durable);
/*
 * A record composed in memory, then kv_replace()d whole: kv_record_open()
 * writes its @magic line (if any), the caller its lines to @r->f, and
 * kv_record_replace() the closing "end" line before the replace; it frees
 * the record either way. -errno; -EIO when a line could not be written.
 */
struct kv_record {
	FILE *f;
	char *buf;
	size_t len;
};
int kv_record_open(struct kv_record *r, const char *magic);
int kv_record_replace(struct kv_record *r, const char *path, mode_t mode, bool durable);
/*
 * The answer a daemon leaves for a command that waits on it (reload,
 * scrub): @head's lines ("MAGIC\nkey=value\n..."), why=@why, end; replaced
 * at @path in one rename
 */
int kv_answer_write(const char *path, const char *head, const char *why);

/*
 * kv_replace() for a caller that does the I/O itself, e.g. through a ring:
 * kv_replace_open() creates PATH.tmp and opens the directory; the caller
 * writes the tmp file, fsyncs it, renames it over PATH and fsyncs the
 * directory, in that order; kv_replace_close() closes both and, when that
 * failed, removes the tmp file.
 */
struct kv_pending {
	char path[4096];
	char tmp[4100];
	int fd, dir_fd;
};

int kv_replace_open(struct kv_pending *p, const char *path, mode_t mode);
void kv_replace_close(struct kv_pending *p, bool failed);

/* a struct's field as a key of the file: a table of these says both ways */
enum kv_type {
	KV_STR,		/* char[]: cut to fit when read */
	KV_U64,
	KV_U32,
	KV_INT,
	KV_RATE,	/* double, written without decimals */
	KV_SECONDS,	/* double, written to the millisecond */
};

struct kv_field {
	const char *key;
	enum kv_type type;
	size_t at, size;
};

/* a field of @T; a width that is not @type's is refused at compile time */
#define KV_FIELD(T, f, type) {						\
	#f, type,							\
	offsetof(T, f) + 0 * sizeof(char[(type) == KV_STR ||		\
		sizeof(((T *)0)->f) == ((type) == KV_U32 || (type) == KV_INT ? 4 : 8) ? 1 : -1]), \
	sizeof(((T *)0)->f)						\
}

/* every field of @base in @fields, each as PREFIXkey=value */
void kv_put_fields(FILE *f, const struct kv_field *fields, size_t nr, const char *prefix,
		   const void *base);
/*
 * the same fields as JSON members, "key": value, each after a comma but the
 * first when @first (status --json: the file's keys are its schema)
 */
void kv_json_fields(FILE *f, const struct kv_field *fields, size_t nr, const void *base,
		    bool first);
/* @s as a JSON string, quoted and escaped */
void kv_json_str(FILE *f, const char *s);
/* @key is PREFIX plus one of @fields: set it in @base from @v and return true */
bool kv_set_field(const struct kv_field *fields, size_t nr, const char *prefix, void *base,
		  const char *key, const char *v);

#endif
