// SPDX-License-Identifier: MIT
/*
 * Reading and writing the key=value files (kv.h): one reader and one
 * atomic writer for the status file and the checkpoints.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kv.h"

int kv_parse(const char *text, const char *magic, bool strict, kv_fn fn, void *arg)
{
	char *copy = strdup(text), *line, *nl, *eq;
	bool first = true;
	int ret = -EINVAL;

	if (!copy)
		return -ENOMEM;
	for (line = copy; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (!nl) {
			if (strict)
				break;	/* a torn last line: never ours, saves are atomic */
			nl = line + strlen(line) - 1;
		} else {
			*nl = '\0';
		}
		if (first) {
			if (strcmp(line, magic))
				break;
			first = false;
			continue;
		}
		if (!strcmp(line, "end")) {
			ret = 0;
			break;
		}
		eq = strchr(line, '=');
		if (!eq) {
			if (strict)
				break;
			continue;
		}
		*eq = '\0';
		ret = fn(arg, line, eq + 1);
		if (ret)
			break;
		ret = -EINVAL;
	}
	free(copy);
	return ret;
}

int kv_read_fd(int fd, size_t max, char **text, size_t *len_out)
{
	size_t len = 0, cap = max < 4096 ? max + 1 : 4096;
	char *buf = malloc(cap), *more;
	ssize_t n;

	for (;;) {
		if (!buf)
			return -ENOMEM;
		if (len + 1 >= cap) {
			if (cap > max) {
				free(buf);
				return -EFBIG;
			}
			cap = cap * 2 > max + 1 ? max + 2 : cap * 2;
			more = realloc(buf, cap);
			if (!more)
				free(buf);
			buf = more;
			continue;
		}
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			free(buf);
			return n;
		}
		if (n == 0)
			break;
		len += n;
	}
	if (len > max) {
		free(buf);
		return -EFBIG;
	}
	buf[len] = '\0';
	*text = buf;
	if (len_out)
		*len_out = len;
	return 0;
}

int kv_read(const char *path, size_t max, char **text)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = kv_read_fd(fd, max, text, NULL);
	close(fd);
	/* larger than any file of ours: not one, as a torn one is not */
	return ret == -EFBIG ? -EINVAL : ret;
}

void kv_put(FILE *f, const char *key, const char *v)
{
	fprintf(f, "%s=", key);
	for (; *v; v++)
		fputc(*v == '\n' || *v == '\r' ? ' ' : *v, f);
	fputc('\n', f);
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

static int fsync_dir_of(const char *path)
{
	char *copy = strdup(path);
	int dfd, ret = 0;

	if (!copy)
		return -ENOMEM;
	dfd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(copy);
	if (dfd < 0)
		return -errno;
	if (fsync(dfd) < 0)
		ret = -errno;
	close(dfd);
	return ret;
}

int kv_replace(const char *path, const char *buf, size_t len, mode_t mode, bool durable)
{
	size_t plen = strlen(path);
	char *tmp = malloc(plen + 5);
	int fd, ret;

	if (!tmp)
		return -ENOMEM;
	memcpy(tmp, path, plen);
	memcpy(tmp + plen, ".tmp", 5);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0) {
		ret = -errno;
		free(tmp);
		return ret;
	}
	ret = write_all(fd, buf, len);
	if (!ret && durable && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path) < 0)
		ret = -errno;
	if (ret)
		unlink(tmp);
	free(tmp);
	if (!ret && durable)
		ret = fsync_dir_of(path);
	return ret;
}

int kv_record_open(struct kv_record *r, const char *magic)
{
	r->buf = NULL;
	r->len = 0;
	r->f = open_memstream(&r->buf, &r->len);
	if (!r->f)
		return -errno;
	if (magic)
		fprintf(r->f, "%s\n", magic);
	return 0;
}

int kv_record_replace(struct kv_record *r, const char *path, mode_t mode, bool durable)
{
	int ret = 0;

	fputs("end\n", r->f);
	if (fflush(r->f) || ferror(r->f))
		ret = -EIO;
	if (fclose(r->f) && !ret)
		ret = -ENOMEM;
	if (!ret)
		ret = kv_replace(path, r->buf, r->len, mode, durable);
	free(r->buf);
	*r = (struct kv_record){ 0 };
	return ret;
}

int kv_answer_write(const char *path, const char *head, const char *why)
{
	struct kv_record r;
	int ret = kv_record_open(&r, NULL);

	if (ret)
		return ret;
	fputs(head, r.f);
	kv_put(r.f, "why", why);
	return kv_record_replace(&r, path, 0644, false);
}

int kv_replace_open(struct kv_pending *p, const char *path, mode_t mode)
{
	char dir[sizeof(p->path)];
	int ret;

	if (snprintf(p->path, sizeof(p->path), "%s", path) >= (int)sizeof(p->path))
		return -ENAMETOOLONG;
	snprintf(p->tmp, sizeof(p->tmp), "%s.tmp", path);
	memcpy(dir, p->path, sizeof(dir));
	p->dir_fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p->dir_fd < 0)
		return -errno;
	p->fd = open(p->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (p->fd < 0) {
		ret = -errno;
		close(p->dir_fd);
		return ret;
	}
	return 0;
}

void kv_replace_close(struct kv_pending *p, bool failed)
{
	close(p->fd);
	close(p->dir_fd);
	if (failed)
		unlink(p->tmp);
	p->fd = p->dir_fd = -1;
}

/* one field's value: a string as the file keeps it (a line), or as JSON */
static void put_value(FILE *f, const struct kv_field *d, const void *base, bool json)
{
	const void *p = (const char *)base + d->at;

	switch (d->type) {
	case KV_STR:
		if (json) {
			kv_json_str(f, p);
			break;
		}
		for (const char *c = p; *c; c++)
			fputc(*c == '\n' ? ' ' : *c, f);
		break;
	case KV_U64:
		fprintf(f, "%" PRIu64, *(const uint64_t *)p);
		break;
	case KV_U32:
		fprintf(f, "%" PRIu32, *(const uint32_t *)p);
		break;
	case KV_INT:
		fprintf(f, "%d", *(const int *)p);
		break;
	case KV_RATE:
		fprintf(f, "%.0f", *(const double *)p);
		break;
	case KV_SECONDS:
		fprintf(f, "%.3f", *(const double *)p);
		break;
	}
}

void kv_put_fields(FILE *f, const struct kv_field *fields, size_t nr, const char *prefix,
		   const void *base)
{
	for (size_t i = 0; i < nr; i++) {
		fprintf(f, "%s%s=", prefix, fields[i].key);
		put_value(f, &fields[i], base, false);
		fputc('\n', f);
	}
}

bool kv_set_field(const struct kv_field *fields, size_t nr, const char *prefix, void *base,
		  const char *key, const char *v)
{
	size_t plen = strlen(prefix);

	if (strncmp(key, prefix, plen))
		return false;
	for (size_t i = 0; i < nr; i++) {
		const struct kv_field *d = &fields[i];
		void *p = (char *)base + d->at;

		if (strcmp(key + plen, d->key))
			continue;
		switch (d->type) {
		case KV_STR:
			snprintf(p, d->size, "%s", v);
			break;
		case KV_U64:
			*(uint64_t *)p = strtoull(v, NULL, 10);
			break;
		case KV_U32:
			*(uint32_t *)p = strtoul(v, NULL, 10);
			break;
		case KV_INT:
			*(int *)p = atoi(v);
			break;
		case KV_RATE:
		case KV_SECONDS:
			*(double *)p = strtod(v, NULL);
			break;
		}
		return true;
	}
	return false;
}

void kv_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\')
			fprintf(f, "\\%c", *c);
		else if (*c < 0x20)
			fprintf(f, "\\u%04x", *c);
		else
			fputc(*c, f);
	}
	fputc('"', f);
}

void kv_json_fields(FILE *f, const struct kv_field *fields, size_t nr, const void *base,
		    bool first)
{
	for (size_t i = 0; i < nr; i++) {
		fprintf(f, "%s\"%s\": ", first && !i ? "" : ", ", fields[i].key);
		put_value(f, &fields[i], base, true);
	}
}
