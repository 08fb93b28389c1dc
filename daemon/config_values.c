// SPDX-License-Identifier: MIT
/*
 * One parser per key: sizes with suffixes, ranges, booleans, enum names,
 * paths; each rejects a bad value with a message naming the key and what
 * was expected, and records the line the key was given on.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_int.h"

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

int set_string(struct parse_state *st, char **dst, const char *name,
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

int check_range_u32(struct parse_state *st, const char *name, const char *value,
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

int check_size(struct parse_state *st, const char *name, const char *value,
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

int set_engine(struct parse_state *st, const char *value, enum engine_kind *out)
{
	if (!strcmp(value, "auto"))
		*out = ENGINE_AUTO;
	else if (!strcmp(value, "bpf"))
		*out = ENGINE_BPF;
	else if (!strcmp(value, "uring"))
		*out = ENGINE_URING;
	else if (!strcmp(value, "loop"))
		*out = ENGINE_LOOP;
	else {
		add_error(st, st->line, "engine = '%s': expected auto, bpf, loop or uring",
			  value);
		return -EINVAL;
	}
	return 0;
}

int set_setting(struct parse_state *st, struct pipeline_settings *s,
		       const struct key_def *k, const char *value)
{
	uint64_t v;
	bool b;

	switch (k->id) {
	case K_ENGINE:
		return set_engine(st, value, &s->engine);
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

int set_pipeline_key(struct parse_state *st, const struct key_def *k,
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

int set_daemon_key(struct parse_state *st, const struct key_def *k,
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
