// SPDX-License-Identifier: MIT
/*
 * Per-pipeline progress in the state directory, NAME.ckpt:
 *
 *   iou-offload-checkpoint 1
 *   fingerprint=...   state=...   done=...   total=...
 *   source.N=dev:ino:size:mtime_ns
 *   dest.N=dev:ino:size:mtime_ns
 *
 * The pipeline only moves `done` past bytes whose destination writes were
 * completed *and* flushed (fdatasync) before the save, so a crash at any
 * point resumes at or before the first byte that might be missing. Saves
 * are atomic: a new file is written and fsynced, renamed over the old one,
 * and the directory is fsynced so the rename itself survives a power cut.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"

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
		OUT("source.%d=%" PRIu64 ":%" PRIu64 ":%" PRIu64 ":%" PRId64 "\n", i,
		    c->src[i].dev, c->src[i].ino, c->src[i].size, c->src[i].mtime_ns);
	for (int i = 0; i < c->nr_dests; i++)
		OUT("dest.%d=%" PRIu64 ":%" PRIu64 ":%" PRIu64 ":%" PRId64 "\n", i,
		    c->dst[i].dev, c->dst[i].ino, c->dst[i].size, c->dst[i].mtime_ns);
	OUT("end\n");
#undef OUT
	return off;
}

static int parse_ident(const char *v, struct file_ident *id)
{
	char tail;

	if (sscanf(v, "%" SCNu64 ":%" SCNu64 ":%" SCNu64 ":%" SCNd64 "%c",
		   &id->dev, &id->ino, &id->size, &id->mtime_ns, &tail) != 4)
		return -EINVAL;
	return 0;
}

int checkpoint_parse(const char *buf, struct checkpoint *c)
{
	const char *line = buf, *nl;
	bool magic = false, end = false, have_fp = false, have_state = false;
	char key[32], val[256];

	memset(c, 0, sizeof(*c));
	for (; *line; line = nl + 1) {
		const char *eq;
		size_t klen, vlen;
		int idx;

		nl = strchr(line, '\n');
		if (!nl)
			return -EINVAL;	/* a torn last line: never ours, saves are atomic */
		if (!magic) {
			if ((size_t)(nl - line) != strlen(CKPT_MAGIC) ||
			    strncmp(line, CKPT_MAGIC, nl - line))
				return -EINVAL;
			magic = true;
			continue;
		}
		if (nl - line == 3 && !strncmp(line, "end", 3)) {
			end = true;
			break;
		}
		eq = memchr(line, '=', nl - line);
		if (!eq)
			return -EINVAL;
		klen = eq - line;
		vlen = nl - eq - 1;
		if (klen >= sizeof(key) || vlen >= sizeof(val))
			return -EINVAL;
		memcpy(key, line, klen);
		key[klen] = '\0';
		memcpy(val, eq + 1, vlen);
		val[vlen] = '\0';

		if (!strcmp(key, "pipeline")) {
			continue;
		} else if (!strcmp(key, "fingerprint")) {
			if (sscanf(val, "%" SCNx64, &c->fingerprint) != 1)
				return -EINVAL;
			have_fp = true;
		} else if (!strcmp(key, "state")) {
			int s;

			for (s = 0; s < 4; s++)
				if (!strcmp(val, ckpt_state_to_string(s)))
					break;
			if (s == 4)
				return -EINVAL;
			c->state = s;
			have_state = true;
		} else if (!strcmp(key, "done")) {
			if (sscanf(val, "%" SCNu64, &c->done) != 1)
				return -EINVAL;
		} else if (!strcmp(key, "total")) {
			if (sscanf(val, "%" SCNu64, &c->total) != 1)
				return -EINVAL;
		} else if (!strcmp(key, "updated")) {
			if (sscanf(val, "%" SCNu64, &c->updated) != 1)
				return -EINVAL;
		} else if (sscanf(key, "source.%d", &idx) == 1) {
			if (idx != c->nr_sources || idx >= CONFIG_MAX_FILES ||
			    parse_ident(val, &c->src[idx]))
				return -EINVAL;
			c->nr_sources++;
		} else if (sscanf(key, "dest.%d", &idx) == 1) {
			if (idx != c->nr_dests || idx >= CONFIG_MAX_FILES ||
			    parse_ident(val, &c->dst[idx]))
				return -EINVAL;
			c->nr_dests++;
		} else {
			return -EINVAL;
		}
	}
	if (!magic || !end || !have_fp || !have_state || c->done > c->total)
		return -EINVAL;
	return 0;
}

int checkpoint_load(const char *dir, const char *name, struct checkpoint *c)
{
	char path[4096], buf[8192];
	ssize_t n;
	size_t len = 0;
	int fd, ret;

	ret = checkpoint_path(dir, name, path, sizeof(path));
	if (ret)
		return ret;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	while (len < sizeof(buf) - 1) {
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += n;
	}
	close(fd);
	buf[len] = '\0';
	return checkpoint_parse(buf, c);
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= n;
	}
	return 0;
}

int checkpoint_save(const char *dir, const char *name, const struct checkpoint *c)
{
	char path[4096], tmp[4096 + 8], buf[8192];
	int fd, dfd, len, ret;

	ret = checkpoint_path(dir, name, path, sizeof(path));
	if (ret)
		return ret;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	len = checkpoint_format(c, name, buf, sizeof(buf));
	if (len < 0)
		return len;

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	ret = write_all(fd, buf, len);
	if (!ret && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (ret)
		goto fail_unlink;
	if (rename(tmp, path) < 0) {
		ret = -errno;
		goto fail_unlink;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (fsync(dfd) < 0)
		ret = -errno;
	close(dfd);
	return ret;

fail_unlink:
	unlink(tmp);
	return ret;
}

static bool ident_same_file(const struct file_ident *a, const struct file_ident *b)
{
	return a->dev == b->dev && a->ino == b->ino;
}

static bool ident_same_content(const struct file_ident *a, const struct file_ident *b)
{
	return ident_same_file(a, b) && a->size == b->size && a->mtime_ns == b->mtime_ns;
}

enum resume_action checkpoint_decide(const struct checkpoint *c, uint64_t fingerprint,
				     const struct file_ident *src, int nr_src,
				     const struct file_ident *dst, int nr_dst,
				     bool repeat, char *why, size_t why_len)
{
	if (!c) {
		snprintf(why, why_len, "no checkpoint: starting at 0");
		return RESUME_FRESH;
	}
	if (c->fingerprint != fingerprint || c->nr_sources != nr_src || c->nr_dests != nr_dst) {
		snprintf(why, why_len, "configuration changed since the checkpoint: starting at 0");
		return RESUME_FRESH;
	}
	for (int i = 0; i < nr_src; i++) {
		if (!ident_same_content(&c->src[i], &src[i])) {
			snprintf(why, why_len,
				 "source %d changed since the checkpoint (size, mtime or inode): "
				 "starting at 0", i);
			return RESUME_FRESH;
		}
	}
	for (int i = 0; i < nr_dst; i++) {
		/* a missing or replaced destination lost what was written */
		if (!ident_same_file(&c->dst[i], &dst[i])) {
			snprintf(why, why_len,
				 "destination %d was replaced or removed since the checkpoint: "
				 "starting at 0", i);
			return RESUME_FRESH;
		}
	}
	if (c->state == CKPT_FINISHED) {
		if (repeat) {
			snprintf(why, why_len, "finished before, repeat = yes: starting at 0");
			return RESUME_FRESH;
		}
		for (int i = 0; i < nr_dst; i++) {
			if (!ident_same_content(&c->dst[i], &dst[i])) {
				snprintf(why, why_len,
					 "destination %d was modified after the pipeline finished: "
					 "starting at 0", i);
				return RESUME_FRESH;
			}
		}
		snprintf(why, why_len, "finished before and nothing changed: nothing to do");
		return RESUME_SKIP;
	}
	if (c->done == 0) {
		snprintf(why, why_len, "checkpoint at 0: starting at 0");
		return RESUME_FRESH;
	}
	snprintf(why, why_len, "resuming at byte %" PRIu64 " of %" PRIu64 " (checkpoint: %s)",
		 c->done, c->total, ckpt_state_to_string(c->state));
	return RESUME_CONTINUE;
}
