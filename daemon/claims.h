/* SPDX-License-Identifier: MIT */
#ifndef IOU_CLAIMS_H
#define IOU_CLAIMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"

/* one source or destination of a pipeline, and the bytes it touches there */
struct file_claim {
	const char *path;	/* as configured (not owned) */
	char *key;		/* the path with its directory resolved */
	int line;		/* of its source = / destination = */
	bool write;
	bool known;		/* it exists: identity below is valid */
	bool bdev;
	dev_t dev;		/* block device: its rdev */
	ino_t ino;
	uint64_t start, end;	/* end UINT64_MAX: to the end of the file */
};

struct pipeline_claims {
	const struct pipeline_config *pc;
	struct file_claim c[2 * CONFIG_MAX_FILES];
	int nr;
};

/* bytes of source (@dest false) or destination @i that @pc touches past its
 * offset; UINT64_MAX when the length is "to the end" */
uint64_t claim_len(const struct pipeline_config *pc, bool dest, int i);

/* one file's claim, for users other than pipelines (devices' backing) */
int claim_file(struct file_claim *c, const char *path, int line, bool write,
	       uint64_t start, uint64_t len);
/* both touch the same bytes of one file and at least one writes them */
bool claims_collide(const struct file_claim *a, const struct file_claim *b);

/* stat every file of @pc (nothing is opened); 0 or -ENOMEM */
int claims_of(const struct pipeline_config *pc, struct pipeline_claims *out);
void claims_free(struct pipeline_claims *pcl);

/*
 * 1 if @a and @b write the same file (or one writes the other's source),
 * with @a's line and a message naming both in @msg; 0 if they can run
 * side by side.
 */
int claims_conflict(const struct pipeline_claims *a, const struct pipeline_claims *b,
		    int *line, char *msg, size_t len);
/*
 * the same inside one pipeline, for paths that differ but name one file:
 * @line is the later path's, @first_line the earlier's (the message names
 * no line: a one-shot's lines are not a file's)
 */
int claims_self_conflict(const struct pipeline_claims *a, int *line, int *first_line,
			 char *msg, size_t len);

#endif
