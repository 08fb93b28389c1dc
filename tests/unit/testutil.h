/* SPDX-License-Identifier: MIT */
#ifndef IOU_TESTUTIL_H
#define IOU_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/* a fresh directory under $TMPDIR (or /tmp), removed with tu_rmrf() */
char *tu_mkdtemp(const char *tag);
void tu_rmrf(const char *path);
/* deterministic pseudo-random bytes */
void tu_fill(void *buf, size_t len, uint64_t seed);
/* write @len bytes to @path; 0 or -errno */
int tu_write_file(const char *path, const void *buf, size_t len);
/* read a whole file (malloc'd, *len set); NULL if missing */
void *tu_read_file(const char *path, size_t *len);
/* path join into a static-free buffer the caller frees */
char *tu_path(const char *dir, const char *name);
/* @text with every "@D" replaced by @dir, into @buf of @len bytes (cut to fit) */
void tu_subst_dir(char *buf, size_t len, const char *text, const char *dir);
/* capture log messages (errors and warnings) for assertions */
void tu_log_capture_start(void);
void tu_log_capture_stop(void);
/* does any captured message contain @needle? */
int tu_log_contains(const char *needle);

#endif
