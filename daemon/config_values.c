// SPDX-License-Identifier: MIT
/*
 * The config's messages and value parsers: sizes with suffixes, ranges,
 * booleans, enum names, paths. set_by_rule() reads a value the way the key
 * table says and stores it in its field; a bad value gets one message that
 * names file:line, the section, the key and what was expected, and leaves
 * the field as it was.
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_int.h"

int errors_push(struct config_errors *errs, char *msg)
{
	char **n;

	if (errs->nr >= CONFIG_ERRORS_KEPT) {
		free(msg);
		errs->dropped++;
		return 0;
	}
	n = realloc(errs->msgs, (errs->nr + 1) * sizeof(*n));

	if (!n) {
		free(msg);
		return -ENOMEM;
	}
	errs->msgs = n;
	errs->msgs[errs->nr++] = msg;
	return 0;
}

long config_finding_line(const char *msg, const char *file)
{
	size_t n = strlen(file);

	return strncmp(msg, file, n) || msg[n] != ':' ? 0 : strtol(msg + n + 1, NULL, 10);
}

/* stable: two findings of one line keep the order they were found in */
static void sort_by_line(char **msgs, int from, int nr, const char *file)
{
	for (int i = from + 1; i < nr; i++) {
		char *msg = msgs[i];
		int j = i;

		for (; j > from && config_finding_line(msgs[j - 1], file) >
				   config_finding_line(msg, file); j--)
			msgs[j] = msgs[j - 1];
		msgs[j] = msg;
	}
}

void errors_sort(struct config_errors *errs, int from, const char *file)
{
	sort_by_line(errs->msgs, from, errs->nr, file);
	sort_by_line(errs->warnings, 0, errs->nr_warnings, file);
}

static char *located(struct parse_state *st, int line, const char *body);

void add_error(struct parse_state *st, int line, const char *fmt, ...)
{
	char body[512], *msg;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(body, sizeof(body), fmt, ap);
	va_end(ap);
	msg = located(st, line, body);
	if (!msg || errors_push(st->errs, msg))
		st->oom = 1;
}

void add_error_pair(struct parse_state *st, int line, const char *what, int other,
		    const char *fmt, ...)
{
	char body[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(body, sizeof(body), fmt, ap);
	va_end(ap);
	if (st->origins || other <= 0)
		add_error(st, line, "%s", body);
	else
		add_error(st, line, "%s (%sline %d)", body, what, other);
}

void add_warning(struct parse_state *st, int line, const char *fmt, ...)
{
	struct config_errors *errs = st->errs;
	char body[512], *msg;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(body, sizeof(body), fmt, ap);
	va_end(ap);
	if (errs->nr_warnings >= CONFIG_ERRORS_KEPT)
		return;
	msg = located(st, line, body);
	if (!msg)
		st->oom = 1;
	else
		errs->warnings[errs->nr_warnings++] = msg;
}

/* "FILE:LINE: [section]: @body" (or "FILE: ORIGIN: @body"), malloc'd */
static char *located(struct parse_state *st, int line, const char *body)
{
	const char *sec = "";
	char secbuf[CONFIG_NAME_MAX + 24], *msg;

	if (st->origins && line >= 1 && line <= st->nr_origins && st->origins[line - 1])
		return asprintf(&msg, "%s: %s: %s", st->file, st->origins[line - 1], body) < 0 ?
		       NULL : msg;
	if (st->sec == SEC_DAEMON) {
		sec = "[daemon]: ";
	} else if (st->sec == SEC_PIPELINE && st->cur) {
		snprintf(secbuf, sizeof(secbuf), "[pipeline %s]: ", st->cur->name);
		sec = secbuf;
	} else if (st->sec == SEC_DEVICE && st->dev) {
		snprintf(secbuf, sizeof(secbuf), "[device %s]: ", st->dev->name);
		sec = secbuf;
	}
	if (asprintf(&msg, "%s:%d: %s%s", st->file, line, sec, body) < 0)
		return NULL;
	return msg;
}

/* both kinds of named section start alike: section_add() reads and sets them so */
_Static_assert(offsetof(struct pipeline_config, name) == 0 &&
	       offsetof(struct device_config, name) == 0 &&
	       offsetof(struct pipeline_config, line) == offsetof(struct device_config, line),
	       "a named section starts with its name and its header's line");

static bool section_name_ok(struct parse_state *st, const char *kind, const char *arg,
			    const void *sections, size_t stride, int nr, int max)
{
	if (!valid_pipeline_name(arg)) {
		add_error(st, st->line,
			  "invalid %s name '%s': expected 1 to %d characters from "
			  "A-Z a-z 0-9 . _ - (not starting with . or -)",
			  kind, arg, CONFIG_NAME_MAX);
		return false;
	}
	for (int i = 0; i < nr; i++) {
		const char *sec = (const char *)sections + i * stride;

		if (!strcmp(sec, arg)) {
			add_error(st, st->line, "duplicate section [%s %s] (first at line %d)",
				  kind, arg, *(const int *)(sec + offsetof(struct pipeline_config, line)));
			return false;
		}
	}
	if (nr >= max) {
		add_error(st, st->line, "too many %ss: at most %d", kind, max);
		return false;
	}
	return true;
}

void *section_add(struct parse_state *st, const char *kind, const char *arg, void **sections,
		  size_t size, int *nr, int max)
{
	char *n;

	if (!section_name_ok(st, kind, arg, *sections, size, *nr, max))
		return NULL;
	n = realloc(*sections, (*nr + 1) * size);
	if (!n) {
		st->oom = 1;
		return NULL;
	}
	*sections = n;
	n += (size_t)(*nr)++ * size;
	memset(n, 0, size);
	snprintf(n, CONFIG_NAME_MAX + 1, "%s", arg);
	*(int *)(n + offsetof(struct pipeline_config, line)) = st->line;
	return n;
}

/* "a, b or c" */
static void names_list(char *buf, size_t len, unsigned int nr,
		       const char *(*name)(unsigned int i, const void *arg), const void *arg)
{
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < nr && off < len; i++)
		off += snprintf(buf + off, len - off, "%s%s",
				!i ? "" : i + 1 == nr ? " or " : ", ", name(i, arg));
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

static const char *enum_name_at(unsigned int i, const void *arg)
{
	return ((const struct enum_names *)arg)->v[i].name;
}

int parse_enum(struct parse_state *st, const struct key_def *k,
	       const struct enum_names *names, const char *value, int *out)
{
	char expected[128];

	for (unsigned int i = 0; i < names->nr; i++) {
		if (!strcmp(value, names->v[i].name)) {
			*out = names->v[i].value;
			return 0;
		}
	}
	names_list(expected, sizeof(expected), names->nr, enum_name_at, names);
	add_error(st, st->line, "%s = '%s': expected %s", k->name, value, expected);
	return -EINVAL;
}

static const char *level_at(unsigned int i, const void *arg)
{
	(void)arg;
	return log_level_to_string(LOG_LEVEL_ERR + i);
}

int set_log_level(struct parse_state *st, const struct key_def *k, void *field,
		  const char *value)
{
	enum log_level lvl;
	char expected[128];

	if (log_level_from_string(value, &lvl)) {
		names_list(expected, sizeof(expected), LOG_LEVEL_DEBUG - LOG_LEVEL_ERR + 1,
			   level_at, NULL);
		add_error(st, st->line, "%s = '%s': expected %s", k->name, value, expected);
		return -EINVAL;
	}
	*(enum log_level *)field = lvl;
	return 0;
}

/* a path added to a list of the section's: the key repeats */
static int add_path(struct parse_state *st, const struct key_def *k,
		    const struct key_rule *r, void *base, const char *value)
{
	char **list = (char **)((char *)base + r->at);
	int *lines = (int *)((char *)base + r->at_line);
	int *nr = (int *)((char *)base + r->at_nr);
	char *dup = NULL;

	if (*nr >= CONFIG_MAX_FILES) {
		add_error(st, st->line, "%s = '%s': at most %d %s", k->name, value,
			  CONFIG_MAX_FILES, r->most);
		return -EINVAL;
	}
	if (set_string(st, &dup, k->name, value))
		return -EINVAL;
	lines[*nr] = st->line;
	list[(*nr)++] = dup;
	return 0;
}

static bool pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static int set_size(struct parse_state *st, const struct key_def *k,
		    const struct key_rule *r, void *field, const char *value)
{
	char mult[32];
	uint64_t v;

	if (check_size(st, k->name, value, r->lo, r->hi, &v))
		return -EINVAL;
	if (r->pow2 && !pow2(v)) {
		add_error(st, st->line, "%s = '%s': expected a power of two", k->name, value);
		return -EINVAL;
	}
	if (r->multiple && v % r->multiple) {
		size_to_string(r->multiple, mult, sizeof(mult));
		add_error(st, st->line, "%s = '%s': expected a multiple of %s", k->name, value,
			  mult);
		return -EINVAL;
	}
	if (r->type == V_SIZE32)
		*(uint32_t *)field = v;
	else
		*(uint64_t *)field = v;
	return 0;
}

int set_by_rule(struct parse_state *st, const struct key_def *k, const struct key_rule *r,
		void *base, const char *value)
{
	void *field = (char *)base + r->at;
	int e;

	switch (r->type) {
	case V_U32:
		return check_range_u32(st, k->name, value, r->lo, r->hi, field);
	case V_SIZE32:
	case V_SIZE64:
		return set_size(st, k, r, field, value);
	case V_BOOL:
		if (parse_bool(value, field)) {
			add_error(st, st->line, "%s = '%s': expected yes or no", k->name, value);
			return -EINVAL;
		}
		return 0;
	case V_ENUM:
		if (parse_enum(st, k, r->names, value, &e))
			return -EINVAL;
		*(int *)field = e;
		return 0;
	case V_PATH:
		return set_string(st, field, k->name, value);
	case V_PATHS:
		return add_path(st, k, r, base, value);
	case V_FN:
		return r->parse(st, k, field, value);
	default:
		return -EINVAL;
	}
}
