// SPDX-License-Identifier: MIT
/*
 * iou-offloadd.conf: INI, parsed with inih.
 *
 *   [daemon]            daemon settings, and defaults for every pipeline
 *   [pipeline NAME]     one data-moving pipeline; may override the defaults
 *   [device NAME]       one ublk block device (config_device.c)
 *
 * Every problem becomes one message that names file:line, the key and what
 * was expected; parsing goes on after an error so that one run of
 * --check-config reports all of them. Unknown keys and sections are errors:
 * a typo must not silently fall back to a default.
 *
 * inih's handler is not told line numbers, so we feed it through our own
 * reader, which counts lines and also records section headers (inih does not
 * report sections without keys, and truncates long section names).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "config.h"
#include "config_int.h"
#include "kv.h"

/* a path of PATH_MAX and its key */
#define CONFIG_LINE_MAX	(PATH_MAX + 256)

/* ---- section tracking, done by the line reader ---- */

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
		*--e = '\0';
	return s;
}

static void section_begin(struct parse_state *st, char *inner)
{
	char *name = trim(inner);
	char *arg;

	st->sec_line = st->line;
	st->cur = NULL;
	st->dev = NULL;
	if (!strcmp(name, "daemon")) {
		if (st->daemon_line) {
			st->sec = SEC_NONE;
			add_error(st, st->line, "duplicate section [daemon] (first at line %d)",
				  st->daemon_line);
			st->sec = SEC_BAD;
			return;
		}
		st->daemon_line = st->line;
		st->sec = SEC_DAEMON;
		return;
	}
	st->sec = SEC_NONE;
	if (!strncmp(name, "device", 6) && (name[6] == ' ' || name[6] == '\t')) {
		device_section_begin(st, trim(name + 6));
		return;
	}
	if (strncmp(name, "pipeline", 8) || (name[8] != ' ' && name[8] != '\t')) {
		add_error(st, st->line, "unknown section [%s]: expected [daemon], "
			  "[pipeline NAME] or [device NAME]", name);
		st->sec = SEC_BAD;
		return;
	}
	arg = trim(name + 8);
	st->cur = section_add(st, "pipeline", arg, (void **)&st->cfg->pipelines,
			      sizeof(*st->cfg->pipelines), &st->cfg->nr_pipelines,
			      CONFIG_MAX_PIPELINES);
	if (!st->cur) {
		st->sec = SEC_BAD;
		return;
	}
	st->cur->length = UINT64_MAX;
	st->sec = SEC_PIPELINE;
}

static int config_handler(void *user, const char *section, const char *name,
			  const char *value);

/* a line that is no section, key or comment: said alike wherever it is */
static void syntax_error(struct parse_state *st, int line)
{
	enum section_kind sec = st->sec;

	st->sec = SEC_NONE;
	add_error(st, line, "syntax error: expected '[section]', 'key = value' or a comment");
	st->sec = sec;
}

/*
 * A line longer than inih's fixed buffer (Debian builds it with 200 bytes,
 * and its ini_max_line knob is not read): parse it here as inih would, a
 * comment or "key = value" with an optional " ;" comment, and hand it to
 * the same handler.
 */
static void long_line(struct parse_state *st, char *line)
{
	char *p = trim(line), *sep, *c;

	if (!*p || *p == ';' || *p == '#')
		return;
	sep = strpbrk(p, "=:");
	if (*p == '[' || !sep) {
		syntax_error(st, st->line);
		return;
	}
	*sep = '\0';
	for (c = sep + 1; (c = strchr(c, ';')); c++) {
		if (c[-1] == ' ' || c[-1] == '\t') {
			*c = '\0';
			break;
		}
	}
	config_handler(st, NULL, trim(p), trim(sep + 1));
}

/*
 * inih cuts a value at " ;" (an inline comment): "destination = /a ;b" writes
 * /a. Legal, and a path with " ;" in it is rare, so say what was taken.
 */
static void inline_comment_warning(struct parse_state *st, const char *p)
{
	const char *sep = strpbrk(p, "=:"), *c;

	if (*p == ';' || *p == '#' || *p == '[' || !sep)
		return;
	for (c = sep + 1; (c = strchr(c, ';')); c++) {
		if (c[-1] == ' ' || c[-1] == '\t') {
			int klen = strcspn(p, " \t=:"), vlen;
			const char *v = sep + 1;

			while (*v == ' ' || *v == '\t')
				v++;
			vlen = c - v;
			while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
				vlen--;
			add_warning(st, st->line, "%.*s: ' ;' starts a comment: the value is "
				    "'%.*s' (write the value without ' ;' if it is part of it)",
				    klen, p, vlen, v);
			return;
		}
	}
}

/*
 * fgets-like reader over the in-memory file. Counts lines, and looks at
 * section headers itself. Lines longer than inih's buffer are parsed here
 * (long_line()); inih sees a comment in their place, so its line numbers
 * stay in step with ours.
 */
static char *config_reader(char *str, int num, void *stream)
{
	struct parse_state *st = stream;
	size_t start = st->pos, end, n;
	char line[CONFIG_LINE_MAX + 3], *p;

	if (st->pos >= st->len)
		return NULL;
	end = start;
	while (end < st->len && st->buf[end] != '\n')
		end++;
	st->pos = end < st->len ? end + 1 : end;
	st->line++;
	n = end - start;
	if (n && st->buf[start + n - 1] == '\r')
		n--;
	if (n > CONFIG_LINE_MAX) {
		add_error(st, st->line, "line is longer than %d characters", CONFIG_LINE_MAX);
		snprintf(str, num, "#\n");
		return str;
	}
	if (memchr(st->buf + start, '\0', n)) {
		add_error(st, st->line, "line contains a NUL byte");
		snprintf(str, num, "#\n");
		return str;
	}
	/* a file with CR line ends is one long line to us: say so, not "0 pipelines" */
	if (memchr(st->buf + start, '\r', n)) {
		add_error(st, st->line, "line contains a carriage return (CR) not followed by a "
			  "line feed: a file with old Mac line ends? (lines end with LF or CR LF)");
		snprintf(str, num, "#\n");
		return str;
	}
	if ((int)n + 2 > num) {
		memcpy(line, st->buf + start, n);
		line[n] = '\0';
		long_line(st, line);
		snprintf(str, num, "#\n");
		return str;
	}
	memcpy(line, st->buf + start, n);
	line[n] = '\0';
	/*
	 * Without its indentation: inih takes an indented line for the value
	 * of the key above it, so "  block_size = 4K" under a destination
	 * was a second destination named "block_size = 4K".
	 */
	snprintf(str, num, "%s\n", line + strspn(line, " \t"));

	/* same rules as inih: optional BOM on line 1, then '[' ... ']' */
	p = line;
	if (st->line == 1 && !strncmp(p, "\xEF\xBB\xBF", 3))
		p += 3;
	p = trim(p);
	inline_comment_warning(st, p);
	if (*p == '[') {
		char *close = strchr(p, ']');
		const char *after = close ? close + 1 + strspn(close + 1, " \t") : "";

		/* inih drops it: "[daemon]garbage" was taken as [daemon] */
		if (*after && *after != '#' && *after != ';')
			add_error(st, st->line, "text after the section header's ']': '%s'", after);
		if (close) {
			*close = '\0';
			section_begin(st, p + 1);
		} else {
			/* keys below belong nowhere */
			st->sec = SEC_BAD;
			st->cur = NULL;
			st->dev = NULL;
			syntax_error(st, st->line);
			snprintf(str, num, "#\n");
		}
	} else if (*p && *p != ';' && *p != '#' && !strpbrk(p, "=:")) {
		/* inih stops counting at its first error: every such line is named here */
		syntax_error(st, st->line);
		snprintf(str, num, "#\n");
	}
	return str;
}

/* ---- keys ---- */

static int config_handler(void *user, const char *section, const char *name,
			  const char *value)
{
	struct parse_state *st = user;
	const struct key_def *k;
	int *key_line;
	uint64_t *key_valid;
	int ret;

	(void)section;	/* we track sections in the reader */
	if (st->sec == SEC_BAD)
		return 1;
	if (st->sec == SEC_NONE) {
		add_error(st, st->line,
			  "key '%s' outside of any section: expected [daemon] or "
			  "[pipeline NAME] first", name);
		st->sec = SEC_BAD;	/* one message, not one per key */
		return 1;
	}
	k = key_lookup(name);
	if (!k) {
		add_error(st, st->line, "unknown key '%s'", name);
		return 1;
	}
	if (!key_in(k, st->sec)) {
		if (st->sec == SEC_DEVICE)
			add_error(st, st->line, "key '%s' is not valid in [device NAME] sections%s",
				  name, k->id == K_CHECKSUM ? " (a device's sums: integrity = crc32c)" :
				  "");
		else if (st->sec == SEC_DAEMON)
			add_error(st, st->line, "key '%s' is only valid in [%s NAME] sections",
				  name, key_in(k, SEC_PIPELINE) ? "pipeline" : "device");
		else
			add_error(st, st->line, "key '%s' is only valid in %s", name,
				  key_in(k, SEC_DAEMON) ? "[daemon]" : "[device NAME] sections");
		return 1;
	}
	if (st->sec == SEC_DAEMON) {
		key_line = st->cfg->key_line;
		key_valid = &st->cfg->key_valid;
	} else if (st->sec == SEC_DEVICE) {
		key_line = st->dev->key_line;
		key_valid = &st->dev->key_valid;
	} else {
		key_line = st->cur->key_line;
		key_valid = &st->cur->key_valid;
	}
	if (key_line[k->id] && !key_repeats(k)) {
		add_error(st, st->line, "duplicate key '%s' (first set at line %d)",
			  name, key_line[k->id]);
		return 1;
	}
	ret = config_set_key(st, k, value);
	/* an invalid value leaves the field unset: the default stays in force */
	if (!ret)
		*key_valid |= 1ull << k->id;
	if (!key_line[k->id])
		key_line[k->id] = st->line;
	return 1;
}

/* ---- checks across keys, after the whole file is read ---- */

static void config_init(struct daemon_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->log_level = LOG_LEVEL_INFO;
	cfg->progress_interval = PROGRESS_INTERVAL_DEFAULT;
	cfg->buffer_cache = BUFFER_CACHE_DEFAULT;
	settings_defaults(&cfg->defaults);
}

/*
 * Unset in the config: $STATE_DIRECTORY / $RUNTIME_DIRECTORY (set by systemd
 * for StateDirectory= and RuntimeDirectory=, or by hand); else for root the
 * FHS places, for anyone else the XDG base directories, which they can write.
 */
static char *default_dir(bool state)
{
	const char *xdg = getenv(state ? "XDG_STATE_HOME" : "XDG_RUNTIME_DIR");
	const char *sd = getenv(state ? "STATE_DIRECTORY" : "RUNTIME_DIRECTORY");
	const char *home = getenv("HOME");
	char *out = NULL;

	/* systemd's StateDirectory= / RuntimeDirectory= (one path: no ':') */
	if (sd && sd[0] == '/' && !strchr(sd, ':'))
		return strdup(sd);
	if (geteuid() == 0)
		return strdup(state ? "/var/lib/iou-offload" : "/run/iou-offload");
	if (xdg && xdg[0] == '/' && asprintf(&out, "%s/iou-offload", xdg) >= 0)
		return out;
	/* no XDG_RUNTIME_DIR (no login session): beside the state */
	if (home && home[0] == '/' &&
	    asprintf(&out, "%s/.local/state/iou-offload%s", home, state ? "" : "/run") >= 0)
		return out;
	if (asprintf(&out, "/tmp/iou-offload-%u%s", (unsigned int)geteuid(),
		     state ? "" : "/run") >= 0)
		return out;
	return NULL;
}

static int config_set_default_dirs(struct daemon_config *cfg)
{
	if (!cfg->state_dir && !(cfg->state_dir = default_dir(true)))
		return -ENOMEM;
	if (!cfg->runtime_dir && !(cfg->runtime_dir = default_dir(false)))
		return -ENOMEM;
	return 0;
}

/* @st: the file's, set up by the caller */
static int parse(struct parse_state st)
{
	const char *name = st.file;
	struct daemon_config *cfg = st.cfg;
	struct config_errors *errs = st.errs;
	int nr_before, ret;

	config_init(cfg);
	cfg->path = strdup(name);
	if (!cfg->path)
		return -ENOMEM;
	nr_before = errs->nr;

	ret = ini_parse_stream(config_reader, &st, config_handler, &st);
	if (ret == -2)
		st.oom = 1;
	if (ret > 0) {
		/* our own messages carry the handler's errors; this is syntax */
		bool seen = false;
		char prefix[64];

		snprintf(prefix, sizeof(prefix), "%s:%d: ", name, ret);
		for (int i = nr_before; i < errs->nr; i++)
			if (!strncmp(errs->msgs[i], prefix, strlen(prefix)))
				seen = true;
		if (!seen) {
			syntax_error(&st, ret);
		}
	}
	for (int i = 0; i < cfg->nr_pipelines; i++)
		pipeline_resolve(&st, &cfg->pipelines[i]);
	if (pipelines_check_claims(&st, cfg))
		st.oom = 1;
	for (int i = 0; i < cfg->nr_devices; i++)
		device_resolve(&st, &cfg->devices[i]);
	if (devices_check_claims(&st, cfg))
		st.oom = 1;
	if (config_set_default_dirs(cfg))
		st.oom = 1;
	if (st.oom)
		return -ENOMEM;
	/* in the file's order, as a reader fixes them: the checks run after the parse */
	errors_sort(errs, nr_before, name);
	return errs->nr > nr_before ? -EINVAL : 0;
}

int config_parse_buffer(const char *name, const char *buf, size_t len,
			struct daemon_config *cfg, struct config_errors *errs)
{
	struct parse_state st = {
		.file = name, .buf = buf, .len = len, .cfg = cfg, .errs = errs,
	};

	return parse(st);
}

int config_parse_generated(const char *name, const char *buf, const char *const *origins,
			   int nr_origins, struct daemon_config *cfg, struct config_errors *errs)
{
	struct parse_state st = {
		.file = name, .origins = origins, .nr_origins = nr_origins,
		.buf = buf, .len = strlen(buf), .cfg = cfg, .errs = errs,
	};

	return parse(st);
}

/* -c -: the configuration on standard input (a pipe: no size to check first) */
static int config_load_fd(int fd, const char *name, struct daemon_config *cfg,
			  struct config_errors *errs)
{
	char *buf, *msg;
	size_t len;
	int ret = kv_read_fd(fd, CONFIG_MAX_BYTES, &buf, &len);

	if (ret) {
		if (ret == -EFBIG ? asprintf(&msg, "%s: larger than %d bytes", name,
					     CONFIG_MAX_BYTES) >= 0 :
		    asprintf(&msg, "%s: cannot read: %s", name, strerror(-ret)) >= 0)
			errors_push(errs, msg);
		return ret;
	}
	ret = config_parse_buffer(name, buf, len, cfg, errs);
	free(buf);
	return ret;
}

char *config_absolute_path(const char *p)
{
	char cwd[PATH_MAX], *out;

	if (p[0] == '/')
		return strdup(p);
	if (!getcwd(cwd, sizeof(cwd)) || asprintf(&out, "%s/%s", cwd, p) < 0)
		return NULL;
	return out;
}

int config_load(const char *path, struct daemon_config *cfg, struct config_errors *errs)
{
	struct stat stbuf;
	char *msg;
	int fd, ret;

	config_init(cfg);
	if (!strcmp(path, "-"))
		return config_load_fd(STDIN_FILENO, "<stdin>", cfg, errs);
	/* not blocked by a FIFO that no one writes: it is refused below */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &stbuf) < 0) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		if (asprintf(&msg, "%s: cannot read: %s", path, strerror(-ret)) >= 0)
			errors_push(errs, msg);
		return ret;
	}
	if (!S_ISREG(stbuf.st_mode)) {
		close(fd);
		if (asprintf(&msg, "%s: not a regular file (%s): a configuration is a file, or "
			     "standard input with -c -", path, S_ISFIFO(stbuf.st_mode) ? "a FIFO" :
			     S_ISDIR(stbuf.st_mode) ? "a directory" : S_ISSOCK(stbuf.st_mode) ?
			     "a socket" : "a device") >= 0)
			errors_push(errs, msg);
		return -EINVAL;
	}
	ret = config_load_fd(fd, path, cfg, errs);
	close(fd);
	return ret;
}

