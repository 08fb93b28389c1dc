// SPDX-License-Identifier: MIT
/*
 * Per-pipeline progress in the state directory, NAME.ckpt:
 *
 *   iou-offload-checkpoint 1
 *   fingerprint=...   state=...   done=...   total=...
 *   source.N=dev:ino:size:mtime_ns:ctime_ns
 *   dest.N=dev:ino:size:mtime_ns:ctime_ns   (size and times 0: not recorded)
 *
 * The pipeline only moves `done` past bytes whose destination writes were
 * completed *and* flushed (fdatasync) before the save, so a crash at any
 * point resumes at or before the first byte that might be missing. Saves
 * are atomic. A record that fits one sector is padded to CKPT_SECTOR bytes
 * and rewritten in place once a file of that size exists: a device writes a
 * sector whole or not at all (PostgreSQL's pg_control rests on the same
 * rule), and an overwrite that changes neither size nor blocks costs
 * fdatasync one device flush and no journal commit. Any other record is
 * written to a new file, fsynced, renamed over the old one, and the
 * directory is fsynced so the rename itself survives a power cut.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"
#include "kv.h"

#define CKPT_MAGIC "iou-offload-checkpoint 1"

const char *ckpt_state_to_string(enum ckpt_state s)
{
	static const char *const names[] = { "running", "stopped", "failed", "finished" };

	return (unsigned int)s < 4 ? names[s] : "?";
}

int checkpoint_path(const char *dir, const char *name, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s.ckpt", dir, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int checkpoint_format(const struct checkpoint *c, const char *name, char *buf, size_t len)
{
	size_t off = 0;
	int n;

#define OUT(...) do {							\
		n = snprintf(buf + off, len - off, __VA_ARGS__);	\
		if (n < 0 || (size_t)n >= len - off)			\
			return -ENOSPC;					\
		off += n;						\
	} while (0)

	OUT("%s\n", CKPT_MAGIC);
	OUT("pipeline=%s\n", name);
	OUT("fingerprint=%016" PRIx64 "\n", c->fingerprint);
	OUT("state=%s\n", ckpt_state_to_string(c->state));
	OUT("done=%" PRIu64 "\n", c->done);
	OUT("total=%" PRIu64 "\n", c->total);
	OUT("updated=%" PRIu64 "\n", c->updated);
	for (int i = 0; i < c->nr_sources; i++)
		OUT("source.%d=%" PRIu64 ":%" PRIu64 ":%" PRIu64 ":%" PRId64 ":%" PRId64 "\n",
		    i, c->src[i].dev, c->src[i].ino, c->src[i].size, c->src[i].mtime_ns,
		    c->src[i].ctime_ns);
	for (int i = 0; i < c->nr_dests; i++)
		OUT("dest.%d=%" PRIu64 ":%" PRIu64 ":%" PRIu64 ":%" PRId64 ":%" PRId64 "\n",
		    i, c->dst[i].dev, c->dst[i].ino, c->dst[i].size, c->dst[i].mtime_ns,
		    c->dst[i].ctime_ns);
	OUT("end\n");
#undef OUT
	/* what follows "end" is never read */
	if (off < CKPT_SECTOR && len >= CKPT_SECTOR) {
		memset(buf + off, '\n', CKPT_SECTOR - off);
		off = CKPT_SECTOR;
	}
	return off;
}

int checkpoint_open_in_place(const char *path)
{
	struct stat st;
	int fd;

	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size != CKPT_SECTOR) {
		close(fd);
		return -ENOENT;
	}
	return fd;
}

int checkpoint_rewrite(int fd, const char *buf, int len)
{
	ssize_t n = pwrite(fd, buf, len, 0);

	if (n != len)
		return n < 0 ? -errno : -EIO;
	return fdatasync(fd) < 0 ? -errno : 0;
}

/* dev:ino:size:mtime_ns[:ctime_ns]: records before ctime have four fields */
static int parse_ident(const char *v, struct file_ident *id)
{
	char tail;
	int n;

	id->ctime_ns = 0;
	n = sscanf(v, "%" SCNu64 ":%" SCNu64 ":%" SCNu64 ":%" SCNd64 ":%" SCNd64 "%c",
		   &id->dev, &id->ino, &id->size, &id->mtime_ns, &id->ctime_ns, &tail);
	return n == 4 || n == 5 ? 0 : -EINVAL;
}

struct ckpt_reading {
	struct checkpoint *c;
	bool have_fp, have_state;
};

static int ckpt_key(void *arg, const char *key, const char *v)
{
	struct ckpt_reading *rd = arg;
	struct checkpoint *c = rd->c;
	int idx;

	if (strlen(key) >= 32 || strlen(v) >= 256)
		return -EINVAL;
	if (!strcmp(key, "pipeline")) {
		return 0;
	} else if (!strcmp(key, "fingerprint")) {
		if (sscanf(v, "%" SCNx64, &c->fingerprint) != 1)
			return -EINVAL;
		rd->have_fp = true;
	} else if (!strcmp(key, "state")) {
		int s;

		for (s = 0; s < 4; s++)
			if (!strcmp(v, ckpt_state_to_string(s)))
				break;
		if (s == 4)
			return -EINVAL;
		c->state = s;
		rd->have_state = true;
	} else if (!strcmp(key, "done")) {
		if (sscanf(v, "%" SCNu64, &c->done) != 1)
			return -EINVAL;
	} else if (!strcmp(key, "total")) {
		if (sscanf(v, "%" SCNu64, &c->total) != 1)
			return -EINVAL;
	} else if (!strcmp(key, "updated")) {
		if (sscanf(v, "%" SCNu64, &c->updated) != 1)
			return -EINVAL;
	} else if (sscanf(key, "source.%d", &idx) == 1) {
		if (idx != c->nr_sources || idx >= CONFIG_MAX_FILES ||
		    parse_ident(v, &c->src[idx]))
			return -EINVAL;
		c->nr_sources++;
	} else if (sscanf(key, "dest.%d", &idx) == 1) {
		if (idx != c->nr_dests || idx >= CONFIG_MAX_FILES ||
		    parse_ident(v, &c->dst[idx]))
			return -EINVAL;
		c->nr_dests++;
	} else {
		return -EINVAL;
	}
	return 0;
}

int checkpoint_parse(const char *buf, struct checkpoint *c)
{
	struct ckpt_reading rd = { .c = c };
	int ret;

	memset(c, 0, sizeof(*c));
	ret = kv_parse(buf, CKPT_MAGIC, true, ckpt_key, &rd);
	if (ret || !rd.have_fp || !rd.have_state || c->done > c->total)
		return -EINVAL;
	return 0;
}

int checkpoint_load(const char *dir, const char *name, struct checkpoint *c)
{
	char path[4096], *text;
	int ret;

	ret = checkpoint_path(dir, name, path, sizeof(path));
	if (ret)
		return ret;
	ret = kv_read(path, CKPT_RECORD_MAX, &text);
	if (ret)
		return ret;
	ret = checkpoint_parse(text, c);
	free(text);
	return ret;
}

int checkpoint_save(const char *dir, const char *name, const struct checkpoint *c)
{
	char path[4096], buf[CKPT_RECORD_MAX];
	int len, ret, fd;

	ret = checkpoint_path(dir, name, path, sizeof(path));
	if (ret)
		return ret;
	len = checkpoint_format(c, name, buf, sizeof(buf));
	if (len < 0)
		return len;
	fd = len == CKPT_SECTOR ? checkpoint_open_in_place(path) : -ENOENT;
	if (fd < 0)
		return kv_replace(path, buf, len, 0600, true);
	ret = checkpoint_rewrite(fd, buf, len);
	close(fd);
	return ret;
}

static bool ident_same_file(const struct file_ident *a, const struct file_ident *b)
{
	return a->dev == b->dev && a->ino == b->ino;
}

static bool ident_same_content(const struct file_ident *a, const struct file_ident *b)
{
	return ident_same_file(a, b) && a->size == b->size && a->mtime_ns == b->mtime_ns &&
	       (!a->ctime_ns || !b->ctime_ns || a->ctime_ns == b->ctime_ns);
}

/* what differs, for the message: "size 4096 -> 8192", "mtime", "inode, size ..." */
static const char *ident_change(const struct file_ident *was, const struct file_ident *now,
				char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	if (!ident_same_file(was, now))
		n += snprintf(buf + n, len - n, "inode");
	if (n < len && was->size != now->size)
		n += snprintf(buf + n, len - n, "%ssize %" PRIu64 " -> %" PRIu64, n ? ", " : "",
			      was->size, now->size);
	if (n < len && was->mtime_ns != now->mtime_ns)
		n += snprintf(buf + n, len - n, "%smtime", n ? ", " : "");
	if (n < len && was->ctime_ns && now->ctime_ns && was->ctime_ns != now->ctime_ns)
		snprintf(buf + n, len - n, "%sctime", n ? ", " : "");
	return buf;
}

/* a record of a stopped pipeline holds its destinations as they were left */
static bool ident_recorded(const struct file_ident *id)
{
	return id->size || id->mtime_ns || id->ctime_ns;
}

/* "source /a" or, without paths, "source 0" */
static const char *file_name(struct ckpt_files f, int i, char *buf, size_t len)
{
	if (f.path)
		return f.path[i];
	snprintf(buf, len, "%d", i);
	return buf;
}

enum resume_action checkpoint_decide(const struct checkpoint *c, uint64_t fingerprint,
				     struct ckpt_files src, struct ckpt_files dst,
				     bool repeat, char *msg, size_t len)
{
	char n[16], what[96];

	if (!c) {
		snprintf(msg, len, "no checkpoint: starting at 0");
		return RESUME_FRESH;
	}
	if (c->fingerprint != fingerprint || c->nr_sources != src.nr || c->nr_dests != dst.nr) {
		snprintf(msg, len, "configuration changed since the checkpoint: starting at 0");
		return RESUME_FRESH;
	}
	for (int i = 0; i < src.nr; i++) {
		if (!ident_same_content(&c->src[i], &src.id[i])) {
			snprintf(msg, len,
				 "source %s changed since the checkpoint (%s): starting at 0",
				 file_name(src, i, n, sizeof(n)),
				 ident_change(&c->src[i], &src.id[i], what, sizeof(what)));
			return RESUME_FRESH;
		}
	}
	for (int i = 0; i < dst.nr; i++) {
		/* a missing or replaced destination lost what was written */
		if (!ident_same_file(&c->dst[i], &dst.id[i])) {
			snprintf(msg, len,
				 "destination %s was replaced or removed since the checkpoint: "
				 "starting at 0", file_name(dst, i, n, sizeof(n)));
			return RESUME_FRESH;
		}
	}
	if (c->state == CKPT_FINISHED) {
		if (repeat) {
			snprintf(msg, len, "finished before, repeat = yes: starting at 0");
			return RESUME_FRESH;
		}
		for (int i = 0; i < dst.nr; i++) {
			if (!ident_same_content(&c->dst[i], &dst.id[i])) {
				snprintf(msg, len,
					 "destination %s was modified after the pipeline finished "
					 "(%s): starting at 0", file_name(dst, i, n, sizeof(n)),
					 ident_change(&c->dst[i], &dst.id[i], what, sizeof(what)));
				return RESUME_FRESH;
			}
		}
		snprintf(msg, len, "finished before and nothing changed: nothing to do");
		return RESUME_SKIP;
	}
	for (int i = 0; i < dst.nr && c->state != CKPT_RUNNING; i++) {
		/* a stop flushed every write first: anything since is not ours */
		if (ident_recorded(&c->dst[i]) && !ident_same_content(&c->dst[i], &dst.id[i])) {
			snprintf(msg, len,
				 "destination %s changed while the pipeline was stopped (%s): "
				 "starting at 0", file_name(dst, i, n, sizeof(n)),
				 ident_change(&c->dst[i], &dst.id[i], what, sizeof(what)));
			return RESUME_FRESH;
		}
	}
	if (c->done == 0) {
		snprintf(msg, len, "checkpoint at 0: starting at 0");
		return RESUME_FRESH;
	}
	snprintf(msg, len, "resuming at byte %" PRIu64 " of %" PRIu64 " (checkpoint: %s)",
		 c->done, c->total, ckpt_state_to_string(c->state));
	return RESUME_CONTINUE;
}
