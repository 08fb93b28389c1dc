// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "testutil.h"

char *tu_mkdtemp(const char *tag)
{
	const char *base = getenv("TMPDIR");
	char *p;

	if (asprintf(&p, "%s/iou-test-%s-XXXXXX", base && *base ? base : "/tmp", tag) < 0)
		return NULL;
	if (!mkdtemp(p)) {
		free(p);
		return NULL;
	}
	return p;
}

void tu_rmrf(const char *path)
{
	struct dirent *de;
	DIR *d = opendir(path);

	if (!d) {
		unlink(path);
		return;
	}
	while ((de = readdir(d))) {
		char *sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		sub = tu_path(path, de->d_name);
		tu_rmrf(sub);
		free(sub);
	}
	closedir(d);
	rmdir(path);
}

void tu_fill(void *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
	unsigned char *p = buf;

	for (size_t i = 0; i < len; i++) {
		/* xorshift64*: fast, and no two test files look alike */
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		p[i] = (x * 0x2545F4914F6CDD1DULL) >> 56;
	}
}

int tu_write_file(const char *path, const void *buf, size_t len)
{
	const char *p = buf;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		return -errno;
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			close(fd);
			return -errno;
		}
		p += n;
		len -= n;
	}
	close(fd);
	return 0;
}

void *tu_read_file(const char *path, size_t *len)
{
	struct stat st;
	char *buf;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return NULL;
	}
	buf = malloc(st.st_size + 1);
	while (buf && got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, st.st_size - got);

		if (n <= 0)
			break;
		got += n;
	}
	close(fd);
	*len = got;
	return buf;
}

char *tu_path(const char *dir, const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		return NULL;
	return p;
}

static struct {
	pthread_mutex_t lock;
	char **msgs;
	int nr;
} cap = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void sink(enum log_level level, const char *msg, void *arg)
{
	(void)arg;
	if (level > LOG_LEVEL_NOTICE)
		return;
	pthread_mutex_lock(&cap.lock);
	cap.msgs = realloc(cap.msgs, (cap.nr + 1) * sizeof(*cap.msgs));
	cap.msgs[cap.nr++] = strdup(msg);
	pthread_mutex_unlock(&cap.lock);
	if (getenv("TEST_VERBOSE"))
		fprintf(stderr, "log: %s\n", msg);
}

void tu_log_capture_start(void)
{
	tu_log_capture_stop();
	log_set_level(LOG_LEVEL_DEBUG);
	log_set_sink(sink, NULL);
}

void tu_log_capture_stop(void)
{
	/* the sink stays: tests keep the daemon's expected errors off the terminal */
	pthread_mutex_lock(&cap.lock);
	for (int i = 0; i < cap.nr; i++)
		free(cap.msgs[i]);
	free(cap.msgs);
	cap.msgs = NULL;
	cap.nr = 0;
	pthread_mutex_unlock(&cap.lock);
}

int tu_log_contains(const char *needle)
{
	int found = 0;

	pthread_mutex_lock(&cap.lock);
	for (int i = 0; i < cap.nr && !found; i++)
		found = strstr(cap.msgs[i], needle) != NULL;
	pthread_mutex_unlock(&cap.lock);
	return found;
}

void tu_subst_dir(char *buf, size_t len, const char *text, const char *dir)
{
	size_t o = 0, dlen = strlen(dir);

	for (const char *c = text; *c && o + 1 < len; c++) {
		if (c[0] == '@' && c[1] == 'D') {
			if (o + dlen + 1 > len)
				break;
			memcpy(buf + o, dir, dlen);
			o += dlen;
			c++;
		} else {
			buf[o++] = *c;
		}
	}
	buf[o] = '\0';
}
