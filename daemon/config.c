// SPDX-License-Identifier: MIT
/*
 * iou-offloadd.conf: INI, parsed with inih.
 *
 *   [daemon]            daemon settings, and defaults for every pipeline
 *   [pipeline NAME]     one data-moving pipeline; may override the defaults
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

#include "claims.h"
#include "config.h"

/* a path of PATH_MAX and its key */
#define CONFIG_LINE_MAX	(PATH_MAX + 256)

enum key_id {
	K_STATE_DIR, K_RUNTIME_DIR, K_LOG_LEVEL, K_EXIT_WHEN_DONE,
	K_ENGINE, K_QUEUE_DEPTH, K_BLOCK_SIZE, K_STRIPE_UNIT,
	K_CHECKPOINT_INTERVAL, K_RETRIES, K_RETRY_DELAY,
	K_DIRECT, K_CREATE, K_TRUNCATE, K_REPEAT,
	K_TRANSFORM, K_GATHER, K_SOURCE, K_DESTINATION,
	K_OFFSET, K_DEST_OFFSET, K_LENGTH,
	K_PROGRESS_INTERVAL,
	K_NR,
};

enum key_scope {
	IN_DAEMON = 1,
	IN_PIPELINE = 2,
	IN_BOTH = 3,
};

struct key_def {
	const char *name;
	enum key_id id;
	enum key_scope scope;
};

static const struct key_def keys[] = {
	{ "state_dir",		 K_STATE_DIR,		IN_DAEMON },
	{ "runtime_dir",	 K_RUNTIME_DIR,		IN_DAEMON },
	{ "log_level",		 K_LOG_LEVEL,		IN_DAEMON },
	{ "exit_when_done",	 K_EXIT_WHEN_DONE,	IN_DAEMON },
	{ "progress_interval",	 K_PROGRESS_INTERVAL,	IN_DAEMON },
	{ "engine",		 K_ENGINE,		IN_BOTH },
	{ "queue_depth",	 K_QUEUE_DEPTH,		IN_BOTH },
	{ "block_size",		 K_BLOCK_SIZE,		IN_BOTH },
	{ "stripe_unit",	 K_STRIPE_UNIT,		IN_BOTH },
	{ "checkpoint_interval", K_CHECKPOINT_INTERVAL,	IN_BOTH },
	{ "retries",		 K_RETRIES,		IN_BOTH },
	{ "retry_delay",	 K_RETRY_DELAY,		IN_BOTH },
	{ "direct",		 K_DIRECT,		IN_BOTH },
	{ "create",		 K_CREATE,		IN_BOTH },
	{ "truncate",		 K_TRUNCATE,		IN_BOTH },
	{ "repeat",		 K_REPEAT,		IN_BOTH },
	{ "transform",		 K_TRANSFORM,		IN_PIPELINE },
	{ "gather",		 K_GATHER,		IN_PIPELINE },
	{ "source",		 K_SOURCE,		IN_PIPELINE },
	{ "destination",	 K_DESTINATION,		IN_PIPELINE },
	{ "offset",		 K_OFFSET,		IN_PIPELINE },
	{ "dest_offset",	 K_DEST_OFFSET,		IN_PIPELINE },
	{ "length",		 K_LENGTH,		IN_PIPELINE },
};

const char *config_key_name(unsigned int i)
{
	return i < sizeof(keys) / sizeof(keys[0]) ? keys[i].name : NULL;
}

int pipeline_config_key_line(const struct pipeline_config *pc, const char *name)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(keys[i].name, name))
			return pc->key_line[keys[i].id];
	return 0;
}

/* value ranges, shared by the parser and its messages */
#define QD_MIN		1
#define QD_MAX		1024
#define BS_MIN		512
#define BS_MAX		(256u << 20)
#define SU_MIN		512
#define SU_MAX		(1u << 30)
#define UNITS_PER_BLOCK_MAX 4096
#define RETRIES_MAX	1000
#define RETRY_DELAY_MAX	3600
#define CKPT_MAX	(1ULL << 44)

enum section_kind {
	SEC_NONE,
	SEC_DAEMON,
	SEC_PIPELINE,
	SEC_BAD,		/* unknown or invalid: its keys are ignored */
};

struct parse_state {
	const char *file;
	const char *buf;
	size_t len;
	size_t pos;
	int line;
	enum section_kind sec;
	int sec_line;
	int daemon_line;
	struct pipeline_config *cur;	/* when sec == SEC_PIPELINE */
	struct daemon_config *cfg;
	struct config_errors *errs;
	int oom;
};

static void add_error(struct parse_state *st, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int errors_push(struct config_errors *errs, char *msg)
{
	char **n = realloc(errs->msgs, (errs->nr + 1) * sizeof(*n));

	if (!n) {
		free(msg);
		return -ENOMEM;
	}
	errs->msgs = n;
	errs->msgs[errs->nr++] = msg;
	return 0;
}

static void add_error(struct parse_state *st, int line, const char *fmt, ...)
{
	char body[512], *msg;
	const char *sec = "";
	char secbuf[CONFIG_NAME_MAX + 24];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(body, sizeof(body), fmt, ap);
	va_end(ap);

	if (st->sec == SEC_DAEMON) {
		sec = "[daemon]: ";
	} else if (st->sec == SEC_PIPELINE && st->cur) {
		snprintf(secbuf, sizeof(secbuf), "[pipeline %s]: ", st->cur->name);
		sec = secbuf;
	}
	if (asprintf(&msg, "%s:%d: %s%s", st->file, line, sec, body) < 0) {
		st->oom = 1;
		return;
	}
	if (errors_push(st->errs, msg))
		st->oom = 1;
}

const char *transform_to_string(enum transform t)
{
	static const char *const names[] = { "copy", "mirror", "stripe", "gather" };

	return (unsigned int)t < 4 ? names[t] : "?";
}

const char *gather_layout_to_string(enum gather_layout g)
{
	return g == GATHER_DESTRIPE ? "destripe" : "concat";
}

const char *engine_kind_to_string(enum engine_kind e)
{
	static const char *const names[] = { "auto", "bpf", "uring", "loop" };

	return (unsigned int)e < 4 ? names[e] : "?";
}

int config_parse_size(const char *s, uint64_t *out)
{
	static const struct { const char *suffix; unsigned int shift; } sfx[] = {
		{ "", 0 }, { "k", 10 }, { "kib", 10 }, { "m", 20 }, { "mib", 20 },
		{ "g", 30 }, { "gib", 30 }, { "t", 40 }, { "tib", 40 },
	};
	uint64_t v = 0;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned int d = *p - '0';

		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		if (strcasecmp(p, sfx[i].suffix))
			continue;
		if (sfx[i].shift && v > (UINT64_MAX >> sfx[i].shift))
			return -EINVAL;
		*out = v << sfx[i].shift;
		return 0;
	}
	return -EINVAL;
}

static int parse_u64_dec(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		unsigned int d = *s - '0';

		if (*s < '0' || *s > '9' || v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };

	for (int i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

static bool valid_pipeline_name(const char *n)
{
	size_t len = strlen(n);

	if (!len || len > CONFIG_NAME_MAX || n[0] == '.' || n[0] == '-')
		return false;
	for (; *n; n++) {
		char c = *n;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

static void settings_defaults(struct pipeline_settings *s)
{
	*s = (struct pipeline_settings){
		.engine = ENGINE_AUTO,
		.queue_depth = 16,
		.block_size = 1u << 20,
		.stripe_unit = 64u << 10,
		.checkpoint_interval = 64ULL << 20,
		.retries = 0,
		.retry_delay = 5,
		.direct = false,
		.create = true,
		.truncate = true,
		.repeat = false,
	};
}

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

static int pipelines_add(struct parse_state *st, const char *name)
{
	struct daemon_config *cfg = st->cfg;
	struct pipeline_config *n;

	n = realloc(cfg->pipelines, (cfg->nr_pipelines + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	cfg->pipelines = n;
	st->cur = &n[cfg->nr_pipelines++];
	memset(st->cur, 0, sizeof(*st->cur));
	snprintf(st->cur->name, sizeof(st->cur->name), "%s", name);
	st->cur->line = st->line;
	st->cur->length = UINT64_MAX;
	return 0;
}

static void section_begin(struct parse_state *st, char *inner)
{
	char *name = trim(inner);
	char *arg;

	st->sec_line = st->line;
	st->cur = NULL;
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
	if (strncmp(name, "pipeline", 8) || (name[8] != ' ' && name[8] != '\t')) {
		add_error(st, st->line,
			  "unknown section [%s]: expected [daemon] or [pipeline NAME]", name);
		st->sec = SEC_BAD;
		return;
	}
	arg = trim(name + 8);
	if (!valid_pipeline_name(arg)) {
		add_error(st, st->line,
			  "invalid pipeline name '%s': expected 1 to %d characters from "
			  "A-Z a-z 0-9 . _ - (not starting with . or -)",
			  arg, CONFIG_NAME_MAX);
		st->sec = SEC_BAD;
		return;
	}
	for (int i = 0; i < st->cfg->nr_pipelines; i++) {
		if (!strcmp(st->cfg->pipelines[i].name, arg)) {
			add_error(st, st->line,
				  "duplicate section [pipeline %s] (first at line %d)",
				  arg, st->cfg->pipelines[i].line);
			st->sec = SEC_BAD;
			return;
		}
	}
	if (st->cfg->nr_pipelines >= CONFIG_MAX_PIPELINES) {
		add_error(st, st->line, "too many pipelines: at most %d",
			  CONFIG_MAX_PIPELINES);
		st->sec = SEC_BAD;
		return;
	}
	if (pipelines_add(st, arg)) {
		st->oom = 1;
		st->sec = SEC_BAD;
		return;
	}
	st->sec = SEC_PIPELINE;
}

static int config_handler(void *user, const char *section, const char *name,
			  const char *value);

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
		add_error(st, st->line, "syntax error: expected '[section]', 'key = value' or "
			  "a comment");
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
	if ((int)n + 2 > num) {
		memcpy(line, st->buf + start, n);
		line[n] = '\0';
		long_line(st, line);
		snprintf(str, num, "#\n");
		return str;
	}
	memcpy(line, st->buf + start, n);
	line[n] = '\0';
	snprintf(str, num, "%s\n", line);

	/* same rules as inih: optional BOM on line 1, then '[' ... ']' */
	p = line;
	if (st->line == 1 && !strncmp(p, "\xEF\xBB\xBF", 3))
		p += 3;
	p = trim(p);
	if (*p == '[') {
		char *close = strchr(p, ']');

		if (close) {
			*close = '\0';
			section_begin(st, p + 1);
		} else {
			/* inih reports the syntax error; keys below belong nowhere */
			st->sec = SEC_BAD;
			st->cur = NULL;
		}
	}
	return str;
}

/* ---- keys ---- */

static const struct key_def *key_lookup(const char *name)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(keys[i].name, name))
			return &keys[i];
	return NULL;
}

static int set_string(struct parse_state *st, char **dst, const char *name,
		      const char *value)
{
	char *dup;

	if (value[0] != '/') {
		add_error(st, st->line, "%s = '%s': expected an absolute path", name, value);
		return -EINVAL;
	}
	dup = strdup(value);
	if (!dup) {
		st->oom = 1;
		return -ENOMEM;
	}
	free(*dst);
	*dst = dup;
	return 0;
}

static int check_range_u32(struct parse_state *st, const char *name, const char *value,
			   uint32_t lo, uint32_t hi, uint32_t *out)
{
	uint64_t v;

	if (parse_u64_dec(value, &v) || v < lo || v > hi) {
		add_error(st, st->line, "%s = '%s': expected an integer from %u to %u",
			  name, value, lo, hi);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static void size_to_string(uint64_t v, char *buf, size_t len)
{
	if (v && !(v & ((1ULL << 40) - 1)))
		snprintf(buf, len, "%" PRIu64 "T", v >> 40);
	else if (v && !(v & ((1ULL << 30) - 1)))
		snprintf(buf, len, "%" PRIu64 "G", v >> 30);
	else if (v && !(v & ((1ULL << 20) - 1)))
		snprintf(buf, len, "%" PRIu64 "M", v >> 20);
	else if (v && !(v & ((1ULL << 10) - 1)))
		snprintf(buf, len, "%" PRIu64 "K", v >> 10);
	else
		snprintf(buf, len, "%" PRIu64, v);
}

static int check_size(struct parse_state *st, const char *name, const char *value,
		      uint64_t lo, uint64_t hi, uint64_t *out)
{
	char los[32], his[32];
	uint64_t v;

	if (config_parse_size(value, &v) || v < lo || v > hi) {
		size_to_string(lo, los, sizeof(los));
		size_to_string(hi, his, sizeof(his));
		add_error(st, st->line,
			  "%s = '%s': expected a size from %s to %s "
			  "(bytes, or a number with suffix K, M, G or T)",
			  name, value, los, his);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int set_setting(struct parse_state *st, struct pipeline_settings *s,
		       const struct key_def *k, const char *value)
{
	uint64_t v;
	bool b;

	switch (k->id) {
	case K_ENGINE:
		if (!strcmp(value, "auto"))
			s->engine = ENGINE_AUTO;
		else if (!strcmp(value, "bpf"))
			s->engine = ENGINE_BPF;
		else if (!strcmp(value, "uring"))
			s->engine = ENGINE_URING;
		else if (!strcmp(value, "loop"))
			s->engine = ENGINE_LOOP;
		else {
			add_error(st, st->line, "engine = '%s': expected auto, bpf, loop or uring",
				  value);
			return -EINVAL;
		}
		return 0;
	case K_QUEUE_DEPTH:
		return check_range_u32(st, k->name, value, QD_MIN, QD_MAX, &s->queue_depth);
	case K_BLOCK_SIZE:
		if (check_size(st, k->name, value, BS_MIN, BS_MAX, &v))
			return -EINVAL;
		s->block_size = v;
		return 0;
	case K_STRIPE_UNIT:
		if (check_size(st, k->name, value, SU_MIN, SU_MAX, &v))
			return -EINVAL;
		s->stripe_unit = v;
		return 0;
	case K_CHECKPOINT_INTERVAL:
		return check_size(st, k->name, value, 0, CKPT_MAX, &s->checkpoint_interval);
	case K_RETRIES:
		return check_range_u32(st, k->name, value, 0, RETRIES_MAX, &s->retries);
	case K_RETRY_DELAY:
		return check_range_u32(st, k->name, value, 0, RETRY_DELAY_MAX, &s->retry_delay);
	case K_DIRECT:
	case K_CREATE:
	case K_TRUNCATE:
	case K_REPEAT:
		if (parse_bool(value, &b)) {
			add_error(st, st->line, "%s = '%s': expected yes or no", k->name, value);
			return -EINVAL;
		}
		if (k->id == K_DIRECT)
			s->direct = b;
		else if (k->id == K_CREATE)
			s->create = b;
		else if (k->id == K_TRUNCATE)
			s->truncate = b;
		else
			s->repeat = b;
		return 0;
	default:
		return -EINVAL;
	}
}

static int add_path(struct parse_state *st, char **list, int *lines, int *nr,
		    const char *what, const char *value)
{
	char *dup = NULL;

	if (*nr >= CONFIG_MAX_FILES) {
		add_error(st, st->line, "%s = '%s': at most %d %ss per pipeline",
			  what, value, CONFIG_MAX_FILES, what);
		return -EINVAL;
	}
	if (set_string(st, &dup, what, value))
		return -EINVAL;
	lines[*nr] = st->line;
	list[(*nr)++] = dup;
	return 0;
}

static int set_pipeline_key(struct parse_state *st, const struct key_def *k,
			    const char *value)
{
	struct pipeline_config *pc = st->cur;

	switch (k->id) {
	case K_TRANSFORM:
		if (!strcmp(value, "copy"))
			pc->transform = TRANSFORM_COPY;
		else if (!strcmp(value, "mirror"))
			pc->transform = TRANSFORM_MIRROR;
		else if (!strcmp(value, "stripe"))
			pc->transform = TRANSFORM_STRIPE;
		else if (!strcmp(value, "gather"))
			pc->transform = TRANSFORM_GATHER;
		else {
			add_error(st, st->line,
				  "transform = '%s': expected copy, mirror, stripe or gather",
				  value);
			return -EINVAL;
		}
		return 0;
	case K_GATHER:
		if (!strcmp(value, "concat"))
			pc->gather = GATHER_CONCAT;
		else if (!strcmp(value, "destripe"))
			pc->gather = GATHER_DESTRIPE;
		else {
			add_error(st, st->line, "gather = '%s': expected concat or destripe",
				  value);
			return -EINVAL;
		}
		return 0;
	case K_SOURCE:
		return add_path(st, pc->sources, pc->source_line, &pc->nr_sources, "source",
				value);
	case K_DESTINATION:
		return add_path(st, pc->dests, pc->dest_line, &pc->nr_dests, "destination",
				value);
	case K_OFFSET:
		return check_size(st, k->name, value, 0, INT64_MAX, &pc->offset);
	case K_DEST_OFFSET:
		return check_size(st, k->name, value, 0, INT64_MAX, &pc->dest_offset);
	case K_LENGTH:
		return check_size(st, k->name, value, 0, INT64_MAX, &pc->length);
	default:
		return set_setting(st, &pc->s, k, value);
	}
}

static int set_daemon_key(struct parse_state *st, const struct key_def *k,
			  const char *value)
{
	struct daemon_config *cfg = st->cfg;
	enum log_level lvl;

	switch (k->id) {
	case K_STATE_DIR:
		return set_string(st, &cfg->state_dir, k->name, value);
	case K_RUNTIME_DIR:
		return set_string(st, &cfg->runtime_dir, k->name, value);
	case K_LOG_LEVEL:
		if (log_level_from_string(value, &lvl)) {
			add_error(st, st->line,
				  "log_level = '%s': expected err, warning, notice, info or debug",
				  value);
			return -EINVAL;
		}
		cfg->log_level = lvl;
		return 0;
	case K_PROGRESS_INTERVAL:
		return check_range_u32(st, k->name, value, 0, PROGRESS_INTERVAL_MAX,
				       &cfg->progress_interval);
	case K_EXIT_WHEN_DONE:
		if (parse_bool(value, &cfg->exit_when_done)) {
			add_error(st, st->line, "%s = '%s': expected yes or no", k->name, value);
			return -EINVAL;
		}
		return 0;
	default:
		return set_setting(st, &cfg->defaults, k, value);
	}
}

static int config_handler(void *user, const char *section, const char *name,
			  const char *value)
{
	struct parse_state *st = user;
	const struct key_def *k;
	int *key_line;
	uint32_t *key_valid;
	bool repeatable;
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
	if (st->sec == SEC_DAEMON && !(k->scope & IN_DAEMON)) {
		add_error(st, st->line,
			  "key '%s' is only valid in [pipeline NAME] sections", name);
		return 1;
	}
	if (st->sec == SEC_PIPELINE && !(k->scope & IN_PIPELINE)) {
		add_error(st, st->line, "key '%s' is only valid in [daemon]", name);
		return 1;
	}
	key_line = st->sec == SEC_DAEMON ? st->cfg->key_line : st->cur->key_line;
	key_valid = st->sec == SEC_DAEMON ? &st->cfg->key_valid : &st->cur->key_valid;
	repeatable = k->id == K_SOURCE || k->id == K_DESTINATION;
	if (key_line[k->id] && !repeatable) {
		add_error(st, st->line, "duplicate key '%s' (first set at line %d)",
			  name, key_line[k->id]);
		return 1;
	}
	if (st->sec == SEC_DAEMON)
		ret = set_daemon_key(st, k, value);
	else
		ret = set_pipeline_key(st, k, value);
	/* an invalid value leaves the field unset: the default stays in force */
	if (!ret)
		*key_valid |= 1u << k->id;
	if (!key_line[k->id])
		key_line[k->id] = st->line;
	return 1;
}

/* ---- checks across keys, after the whole file is read ---- */

#define INHERIT(field, id) do {					\
		if (!(pc->key_valid & (1u << (id))))		\
			pc->s.field = cfg->defaults.field;	\
	} while (0)

static void pipeline_resolve(struct parse_state *st, struct pipeline_config *pc)
{
	struct daemon_config *cfg = st->cfg;
	uint64_t units;

	INHERIT(engine, K_ENGINE);
	INHERIT(queue_depth, K_QUEUE_DEPTH);
	INHERIT(block_size, K_BLOCK_SIZE);
	INHERIT(stripe_unit, K_STRIPE_UNIT);
	INHERIT(checkpoint_interval, K_CHECKPOINT_INTERVAL);
	INHERIT(retries, K_RETRIES);
	INHERIT(retry_delay, K_RETRY_DELAY);
	INHERIT(direct, K_DIRECT);
	INHERIT(create, K_CREATE);
	INHERIT(truncate, K_TRUNCATE);
	INHERIT(repeat, K_REPEAT);

	st->sec = SEC_PIPELINE;
	st->cur = pc;
	if (!pc->key_line[K_TRANSFORM])
		add_error(st, pc->line, "missing required key 'transform' "
			  "(copy, mirror, stripe or gather)");
	if (!pc->nr_sources && !pc->key_line[K_SOURCE])
		add_error(st, pc->line, "missing required key 'source'");
	if (!pc->nr_dests && !pc->key_line[K_DESTINATION])
		add_error(st, pc->line, "missing required key 'destination'");
	/* the checks below need a valid transform and both file lists */
	if (!(pc->key_valid & (1u << K_TRANSFORM)) || !pc->nr_sources || !pc->nr_dests)
		return;
	if (pc->key_line[K_GATHER] && pc->transform != TRANSFORM_GATHER)
		add_error(st, pc->key_line[K_GATHER],
			  "key 'gather' is only valid with transform = gather");

	switch (pc->transform) {
	case TRANSFORM_COPY:
		if (pc->nr_sources != 1)
			add_error(st, pc->line,
				  "transform = copy needs exactly 1 source, got %d",
				  pc->nr_sources);
		if (pc->nr_dests != 1)
			add_error(st, pc->line,
				  "transform = copy needs exactly 1 destination, got %d "
				  "(use mirror or stripe for more)", pc->nr_dests);
		break;
	case TRANSFORM_MIRROR:
	case TRANSFORM_STRIPE:
		if (pc->nr_sources != 1)
			add_error(st, pc->line,
				  "transform = %s needs exactly 1 source, got %d",
				  transform_to_string(pc->transform), pc->nr_sources);
		if (pc->nr_dests < 2)
			add_error(st, pc->line,
				  "transform = %s needs at least 2 destinations, got %d "
				  "(use copy for one)",
				  transform_to_string(pc->transform), pc->nr_dests);
		break;
	case TRANSFORM_GATHER:
		if (pc->nr_sources < 2)
			add_error(st, pc->line,
				  "transform = gather needs at least 2 sources, got %d "
				  "(use copy for one)", pc->nr_sources);
		if (pc->nr_dests != 1)
			add_error(st, pc->line,
				  "transform = gather needs exactly 1 destination, got %d",
				  pc->nr_dests);
		break;
	}

	for (int i = 0; i < pc->nr_dests; i++) {
		for (int j = 0; j < pc->nr_sources; j++)
			if (!strcmp(pc->dests[i], pc->sources[j]))
				add_error(st, pc->line,
					  "destination '%s' is also a source", pc->dests[i]);
		for (int j = 0; j < i; j++)
			if (!strcmp(pc->dests[i], pc->dests[j]))
				add_error(st, pc->line,
					  "destination '%s' is listed twice", pc->dests[i]);
	}

	if (pc->transform == TRANSFORM_STRIPE ||
	    (pc->transform == TRANSFORM_GATHER && pc->gather == GATHER_DESTRIPE)) {
		units = pc->s.block_size / pc->s.stripe_unit;
		if (units > UNITS_PER_BLOCK_MAX)
			add_error(st, pc->key_line[K_STRIPE_UNIT] ?: pc->line,
				  "stripe_unit = %u is too small for block_size = %u: "
				  "expected at most %d stripe units per block",
				  pc->s.stripe_unit, pc->s.block_size, UNITS_PER_BLOCK_MAX);
	}
}

/* no two pipelines may write one file, or write what another reads */
static int pipelines_check_claims(struct parse_state *st, struct daemon_config *cfg)
{
	struct pipeline_claims *cl;
	char why[1024];
	int line, ret = 0;

	if (!cfg->nr_pipelines)
		return 0;
	cl = calloc(cfg->nr_pipelines, sizeof(*cl));
	if (!cl)
		return -ENOMEM;
	for (int i = 0; i < cfg->nr_pipelines && !ret; i++)
		ret = claims_of(&cfg->pipelines[i], &cl[i]);
	for (int i = 0; i < cfg->nr_pipelines && !ret; i++) {
		st->sec = SEC_PIPELINE;
		st->cur = &cfg->pipelines[i];
		if (claims_self_conflict(&cl[i], &line, why, sizeof(why)))
			add_error(st, line, "%s", why);
		for (int j = 0; j < i; j++)
			if (claims_conflict(&cl[i], &cl[j], &line, why, sizeof(why)))
				add_error(st, line, "%s", why);
	}
	for (int i = 0; i < cfg->nr_pipelines; i++)
		claims_free(&cl[i]);
	free(cl);
	return ret;
}

static void config_init(struct daemon_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->log_level = LOG_LEVEL_INFO;
	cfg->progress_interval = PROGRESS_INTERVAL_DEFAULT;
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

int config_parse_buffer(const char *name, const char *buf, size_t len,
			struct daemon_config *cfg, struct config_errors *errs)
{
	struct parse_state st = {
		.file = name, .buf = buf, .len = len, .cfg = cfg, .errs = errs,
	};
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
			st.sec = SEC_NONE;
			add_error(&st, ret, "syntax error: expected '[section]', "
				  "'key = value' or a comment");
		}
	}
	for (int i = 0; i < cfg->nr_pipelines; i++)
		pipeline_resolve(&st, &cfg->pipelines[i]);
	if (pipelines_check_claims(&st, cfg))
		st.oom = 1;
	if (config_set_default_dirs(cfg))
		st.oom = 1;
	if (st.oom)
		return -ENOMEM;
	return errs->nr > nr_before ? -EINVAL : 0;
}

int config_load(const char *path, struct daemon_config *cfg, struct config_errors *errs)
{
	struct stat stbuf;
	char *buf = NULL, *msg;
	ssize_t n;
	size_t len = 0;
	int fd, ret;

	config_init(cfg);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto fail_msg;
	}
	if (fstat(fd, &stbuf) < 0) {
		ret = -errno;
		goto fail_close;
	}
	if (!S_ISREG(stbuf.st_mode)) {
		ret = -EINVAL;
		if (asprintf(&msg, "%s: not a regular file", path) >= 0)
			errors_push(errs, msg);
		close(fd);
		return ret;
	}
	if (stbuf.st_size > CONFIG_MAX_BYTES) {
		ret = -EFBIG;
		if (asprintf(&msg, "%s: larger than %d bytes", path, CONFIG_MAX_BYTES) >= 0)
			errors_push(errs, msg);
		close(fd);
		return ret;
	}
	buf = malloc(stbuf.st_size + 1);
	if (!buf) {
		ret = -ENOMEM;
		goto fail_close;
	}
	while (len < (size_t)stbuf.st_size) {
		n = read(fd, buf + len, stbuf.st_size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			goto fail_free;
		}
		if (n == 0)
			break;
		len += n;
	}
	close(fd);
	buf[len] = '\0';
	ret = config_parse_buffer(path, buf, len, cfg, errs);
	free(buf);
	return ret;

fail_free:
	free(buf);
fail_close:
	close(fd);
fail_msg:
	if (asprintf(&msg, "%s: cannot read: %s", path, strerror(-ret)) >= 0)
		errors_push(errs, msg);
	return ret;
}

void pipeline_config_free(struct pipeline_config *pc)
{
	for (int i = 0; i < pc->nr_sources; i++)
		free(pc->sources[i]);
	for (int i = 0; i < pc->nr_dests; i++)
		free(pc->dests[i]);
	pc->nr_sources = pc->nr_dests = 0;
}

int pipeline_config_dup(const struct pipeline_config *src, struct pipeline_config *dst)
{
	*dst = *src;
	dst->nr_sources = dst->nr_dests = 0;
	for (int i = 0; i < src->nr_sources; i++) {
		if (!(dst->sources[i] = strdup(src->sources[i])))
			goto oom;
		dst->nr_sources++;
	}
	for (int i = 0; i < src->nr_dests; i++) {
		if (!(dst->dests[i] = strdup(src->dests[i])))
			goto oom;
		dst->nr_dests++;
	}
	return 0;
oom:
	pipeline_config_free(dst);
	return -ENOMEM;
}

void config_free(struct daemon_config *cfg)
{
	for (int i = 0; i < cfg->nr_pipelines; i++)
		pipeline_config_free(&cfg->pipelines[i]);
	free(cfg->pipelines);
	free(cfg->path);
	free(cfg->state_dir);
	free(cfg->runtime_dir);
	memset(cfg, 0, sizeof(*cfg));
}

void config_errors_free(struct config_errors *errs)
{
	for (int i = 0; i < errs->nr; i++)
		free(errs->msgs[i]);
	free(errs->msgs);
	errs->msgs = NULL;
	errs->nr = 0;
}

const struct pipeline_config *config_find_pipeline(const struct daemon_config *cfg,
						   const char *name)
{
	for (int i = 0; i < cfg->nr_pipelines; i++)
		if (!strcmp(cfg->pipelines[i].name, name))
			return &cfg->pipelines[i];
	return NULL;
}

/* FNV-1a: stable across builds and hosts, good enough to detect edits */
static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static uint64_t fnv_str(uint64_t h, const char *s)
{
	return fnv1a(h, s, strlen(s) + 1);
}

static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return fnv_str(h, buf);
}

uint64_t pipeline_config_fingerprint(const struct pipeline_config *pc)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	/* only what decides where each byte goes: not engine, depth, block size */
	h = fnv_str(h, "iou-offload layout 1");
	h = fnv_str(h, transform_to_string(pc->transform));
	if (pc->transform == TRANSFORM_GATHER)
		h = fnv_str(h, gather_layout_to_string(pc->gather));
	for (int i = 0; i < pc->nr_sources; i++)
		h = fnv_str(h, pc->sources[i]);
	h = fnv_str(h, "->");
	for (int i = 0; i < pc->nr_dests; i++)
		h = fnv_str(h, pc->dests[i]);
	h = fnv_u64(h, pc->offset);
	h = fnv_u64(h, pc->dest_offset);
	h = fnv_u64(h, pc->length);
	if (pc->transform == TRANSFORM_STRIPE ||
	    (pc->transform == TRANSFORM_GATHER && pc->gather == GATHER_DESTRIPE))
		h = fnv_u64(h, pc->s.stripe_unit);
	return h;
}

bool pipeline_config_same(const struct pipeline_config *a, const struct pipeline_config *b)
{
	const struct pipeline_settings *x = &a->s, *y = &b->s;

	return pipeline_config_fingerprint(a) == pipeline_config_fingerprint(b) &&
	       x->engine == y->engine && x->queue_depth == y->queue_depth &&
	       x->block_size == y->block_size && x->direct == y->direct &&
	       x->create == y->create && x->truncate == y->truncate &&
	       x->repeat == y->repeat && x->retries == y->retries &&
	       x->retry_delay == y->retry_delay &&
	       x->checkpoint_interval == y->checkpoint_interval;
}
