// SPDX-License-Identifier: MIT
/*
 * Which bytes of which files a pipeline reads and writes, and whether two
 * pipelines collide: two writers of one file, or a writer of another's
 * source, would each report success over data the other overwrote. Files
 * are the same by path, symlink or hard link (device and inode); a block
 * device is shared safely as long as the byte ranges do not overlap.
 */
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "claims.h"
#include "plan.h"

static uint64_t end_of(uint64_t start, uint64_t len)
{
	return len == UINT64_MAX || start > UINT64_MAX - len ? UINT64_MAX : start + len;
}

/* a name for a file that may not exist yet: its directory resolved */
static char *normalized_path(const char *path)
{
	char *dir_copy, *base_copy, *dir, *out = NULL;

	out = realpath(path, NULL);
	if (out)
		return out;
	dir_copy = strdup(path);
	base_copy = strdup(path);
	if (dir_copy && base_copy) {
		dir = realpath(dirname(dir_copy), NULL);
		if (dir && asprintf(&out, "%s/%s", strcmp(dir, "/") ? dir : "",
				    basename(base_copy)) < 0)
			out = NULL;
		free(dir);
	}
	free(dir_copy);
	free(base_copy);
	return out ? out : strdup(path);
}

static int claim_one(struct file_claim *c, const char *path, int line, bool write,
		     uint64_t start, uint64_t len)
{
	struct stat st;

	memset(c, 0, sizeof(*c));
	c->path = path;
	c->line = line;
	c->write = write;
	c->start = start;
	c->end = end_of(start, len);
	c->key = normalized_path(path);
	if (!c->key)
		return -ENOMEM;
	if (stat(path, &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))) {
		c->known = true;
		c->bdev = S_ISBLK(st.st_mode);
		c->dev = c->bdev ? st.st_rdev : st.st_dev;
		c->ino = c->bdev ? 0 : st.st_ino;
	}
	return 0;
}

/* bytes of source or destination @i the pipeline touches (UINT64_MAX: unknown) */
uint64_t claim_len(const struct pipeline_config *pc, bool dest, int i)
{
	bool striped = dest ? pc->transform == TRANSFORM_STRIPE :
		       pc->transform == TRANSFORM_GATHER && pc->gather == GATHER_DESTRIPE;

	if (pc->length == UINT64_MAX)
		return UINT64_MAX;
	if (striped && pc->s.stripe_unit)
		return plan_stripe_share(pc->length, dest ? pc->nr_dests : pc->nr_sources,
					 pc->s.stripe_unit, i);
	/* a concat source gives at most the whole length */
	return pc->length;
}

int claim_file(struct file_claim *c, const char *path, int line, bool write,
	       uint64_t start, uint64_t len)
{
	return claim_one(c, path, line, write, start, len);
}

int claims_of(const struct pipeline_config *pc, struct pipeline_claims *out)
{
	int ret = 0;

	memset(out, 0, sizeof(*out));
	out->pc = pc;
	for (int i = 0; i < pc->nr_sources && !ret; i++)
		ret = claim_one(&out->c[out->nr++], pc->sources[i], pc->source_line[i], false,
				pc->offset, claim_len(pc, false, i));
	for (int i = 0; i < pc->nr_dests && !ret; i++)
		ret = claim_one(&out->c[out->nr++], pc->dests[i], pc->dest_line[i], true,
				pc->dest_offset, claim_len(pc, true, i));
	if (ret)
		claims_free(out);
	return ret;
}

void claims_free(struct pipeline_claims *pcl)
{
	for (int i = 0; i < pcl->nr; i++)
		free(pcl->c[i].key);
	pcl->nr = 0;
}

static bool same_file(const struct file_claim *a, const struct file_claim *b)
{
	if (a->known && b->known)
		return a->bdev == b->bdev && a->dev == b->dev && a->ino == b->ino;
	return !strcmp(a->key, b->key);
}

static bool collide(const struct file_claim *a, const struct file_claim *b)
{
	if (!a->write && !b->write)
		return false;
	if (!same_file(a, b))
		return false;
	/* one regular file, two users: sizes and truncation make any split unsafe */
	if (!a->bdev || !b->bdev)
		return true;
	return a->start < b->end && b->start < a->end;
}

bool claims_collide(const struct file_claim *a, const struct file_claim *b)
{
	return collide(a, b);
}

static int range_str(char *buf, size_t len, const struct file_claim *c)
{
	if (c->end == UINT64_MAX)
		return snprintf(buf, len, "bytes %" PRIu64 " to the end", c->start);
	return snprintf(buf, len, "bytes %" PRIu64 "-%" PRIu64, c->start, c->end);
}

static void describe(const struct file_claim *x, const struct pipeline_claims *other,
		     const struct file_claim *y, char *msg, size_t len)
{
	char rx[64], ry[64];
	const char *verb = y->write ? "writes" : "reads";

	if (x->bdev && y->bdev) {
		range_str(rx, sizeof(rx), x);
		range_str(ry, sizeof(ry), y);
		snprintf(msg, len, "%s = '%s': %s overlap the %s that pipeline %s %s on the "
			 "same device ('%s', line %d)", x->write ? "destination" : "source",
			 x->path, rx, ry, other->pc->name, verb, y->path, y->line);
		return;
	}
	snprintf(msg, len, "%s = '%s': %s file that pipeline %s %s ('%s', line %d); %s",
		 x->write ? "destination" : "source", x->path,
		 strcmp(x->path, y->path) ? "the same" : "a", other->pc->name, verb, y->path,
		 y->line, x->write && y->write ? "two pipelines would overwrite each other's data" :
		 "one pipeline would read what the other overwrites");
}

int claims_conflict(const struct pipeline_claims *a, const struct pipeline_claims *b,
		    int *line, char *msg, size_t len)
{
	for (int i = 0; i < a->nr; i++) {
		for (int j = 0; j < b->nr; j++) {
			if (!collide(&a->c[i], &b->c[j]))
				continue;
			*line = a->c[i].line;
			describe(&a->c[i], b, &b->c[j], msg, len);
			return 1;
		}
	}
	return 0;
}

int claims_self_conflict(const struct pipeline_claims *a, int *line, int *first_line,
			 char *msg, size_t len)
{
	for (int i = 0; i < a->nr; i++) {
		const struct file_claim *x = &a->c[i];

		for (int j = 0; j < i; j++) {
			const struct file_claim *y = &a->c[j];

			/* the same string is the config parser's own message */
			if (!strcmp(x->path, y->path) || !collide(x, y) || !x->known)
				continue;
			*line = x->line;
			*first_line = y->line;
			snprintf(msg, len, "%s = '%s' is the same file as %s '%s'",
				 x->write ? "destination" : "source", x->path,
				 y->write ? "destination" : "source", y->path);
			return 1;
		}
	}
	return 0;
}
