// SPDX-License-Identifier: MIT
/*
 * The key table: every key the config knows, and for each kind of section
 * that takes it, how its value is read and which field it sets. The
 * handler (config_load.c) looks a key up here and hands it to
 * config_set_key(); a new key is one entry below and one field.
 */
#include <errno.h>
#include <string.h>

#include "config_int.h"

/* the offset of @f in @T, refused at compile time unless it is a @ctype */
#define AT(T, f, ctype) \
	(offsetof(T, f) + 0 * sizeof(char[sizeof(((T *)0)->f) == sizeof(ctype) ? 1 : -1]))

#define U32(T, f, l, h)		{ V_U32, AT(T, f, uint32_t), .lo = l, .hi = h }
#define SIZE32(T, f, l, h)	{ V_SIZE32, AT(T, f, uint32_t), .lo = l, .hi = h }
#define SIZE64(T, f, l, h)	{ V_SIZE64, AT(T, f, uint64_t), .lo = l, .hi = h }
#define BOOL(T, f)		{ V_BOOL, AT(T, f, bool) }
#define ENUM(T, f, n)		{ V_ENUM, AT(T, f, int), .names = &n }
#define PATH(T, f)		{ V_PATH, AT(T, f, char *) }
#define PATHS(T, f, l, nr, m)	{ V_PATHS, AT(T, f, char *[CONFIG_MAX_FILES]), \
				  .at_line = AT(T, l, int[CONFIG_MAX_FILES]), \
				  .at_nr = AT(T, nr, int), .most = m }
#define FN(T, f, fn)		{ V_FN, offsetof(T, f), .parse = fn, .size = sizeof(((T *)0)->f) }

#define S struct pipeline_settings
#define D struct daemon_config
#define P struct pipeline_config
#define V struct device_config

static const struct key_def keys[] = {
	{ "state_dir", K_STATE_DIR, .daemon = PATH(D, state_dir) },
	{ "runtime_dir", K_RUNTIME_DIR, .daemon = PATH(D, runtime_dir) },
	{ "log_level", K_LOG_LEVEL, .daemon = FN(D, log_level, set_log_level) },
	{ "exit_when_done", K_EXIT_WHEN_DONE, .daemon = BOOL(D, exit_when_done) },
	{ "progress_interval", K_PROGRESS_INTERVAL,
	  .daemon = U32(D, progress_interval, 0, PROGRESS_INTERVAL_MAX) },
	{ "buffer_cache", K_BUFFER_CACHE, .daemon = SIZE64(D, buffer_cache, 0, BUFFER_CACHE_MAX) },

	{ "engine", K_ENGINE, .settings = ENUM(S, engine, engine_names),
	  .device = FN(V, engine, set_device_engine) },
	{ "queue_depth", K_QUEUE_DEPTH, .settings = U32(S, queue_depth, QD_MIN, QD_MAX),
	  .device = U32(V, queue_depth, QD_MIN, QD_MAX) },
	{ "block_size", K_BLOCK_SIZE, .settings = SIZE32(S, block_size, BS_MIN, BS_MAX) },
	{ "stripe_unit", K_STRIPE_UNIT, KEY_LAYOUT, .settings = SIZE32(S, stripe_unit, SU_MIN, SU_MAX),
	  .device = { V_SIZE32, AT(V, stripe_unit, uint32_t), .lo = SU_MIN, .hi = SU_MAX,
		      .pow2 = true } },
	{ "checkpoint_interval", K_CHECKPOINT_INTERVAL,
	  .settings = SIZE64(S, checkpoint_interval, 0, CKPT_MAX) },
	{ "retries", K_RETRIES, .settings = U32(S, retries, 0, RETRIES_MAX) },
	{ "retry_delay", K_RETRY_DELAY, .settings = U32(S, retry_delay, 0, RETRY_DELAY_MAX) },
	{ "direct", K_DIRECT, .settings = BOOL(S, direct) },
	{ "create", K_CREATE, .settings = BOOL(S, create) },
	{ "truncate", K_TRUNCATE, .settings = BOOL(S, truncate) },
	{ "repeat", K_REPEAT, .settings = BOOL(S, repeat) },
	{ "sparse", K_SPARSE, .settings = BOOL(S, sparse) },
	{ "checksum", K_CHECKSUM, .settings = ENUM(S, checksum, checksum_names) },

	{ "transform", K_TRANSFORM, KEY_LAYOUT, .pipeline = ENUM(P, transform, transform_names) },
	{ "gather", K_GATHER, KEY_LAYOUT, .pipeline = ENUM(P, gather, gather_names) },
	{ "source", K_SOURCE, KEY_LAYOUT, .pipeline = PATHS(P, sources, source_line, nr_sources,
						"sources per pipeline") },
	{ "destination", K_DESTINATION, KEY_LAYOUT, .pipeline = PATHS(P, dests, dest_line, nr_dests,
							  "destinations per pipeline") },
	{ "offset", K_OFFSET, KEY_LAYOUT, .pipeline = SIZE64(P, offset, 0, INT64_MAX) },
	{ "dest_offset", K_DEST_OFFSET, KEY_LAYOUT, .pipeline = SIZE64(P, dest_offset, 0, INT64_MAX) },
	{ "length", K_LENGTH, KEY_LAYOUT, .pipeline = SIZE64(P, length, 0, INT64_MAX) },

	{ "target", K_TARGET, .device = ENUM(V, target, target_names) },
	{ "backing", K_BACKING, .device = PATHS(V, backing, backing_line, nr_backing,
						"backing files per device") },
	{ "nr_queues", K_NR_QUEUES, .device = U32(V, nr_queues, 1, NRQ_MAX) },
	/* ublk rounds the per-tag buffer down to pages */
	{ "max_io_size", K_MAX_IO_SIZE,
	  .device = { V_SIZE32, AT(V, max_io_size, uint32_t), .lo = MAX_IO_MIN,
		      .hi = MAX_IO_MAX, .multiple = MAX_IO_MIN } },
	{ "logical_block_size", K_LOGICAL_BLOCK_SIZE,
	  .device = FN(V, logical_block_size, set_logical_block_size) },
	{ "read_policy", K_READ_POLICY, .device = ENUM(V, read_policy, read_policy_names) },
	{ "size", K_SIZE, .device = SIZE64(V, size, 1, DEV_SIZE_MAX) },
	{ "stripe_io", K_STRIPE_IO, .pipeline = ENUM(P, stripe_io, stripe_io_names),
	  .device = ENUM(V, stripe_io, stripe_io_names) },
	{ "data_path", K_DATA_PATH, .device = ENUM(V, data_path, data_path_names) },
	{ "integrity", K_INTEGRITY, .device = ENUM(V, integrity, checksum_names) },
	/* bytes a second a mirror's scrub compares; 0: as fast as the legs read */
	{ "scrub_rate", K_SCRUB_RATE, .device = SIZE64(V, scrub_rate, 0, SCRUB_RATE_MAX) },
};
_Static_assert(sizeof(keys) / sizeof(keys[0]) == K_NR, "one entry per key id");

#define NR_KEYS (sizeof(keys) / sizeof(keys[0]))

/* the bytes a rule's field takes; 0 for those that are not one plain value */
static size_t rule_size(const struct key_rule *r)
{
	switch (r->type) {
	case V_U32:
	case V_SIZE32:
		return sizeof(uint32_t);
	case V_SIZE64:
		return sizeof(uint64_t);
	case V_BOOL:
		return sizeof(bool);
	case V_ENUM:
		return sizeof(int);
	case V_FN:
		return r->size;
	default:
		return 0;
	}
}

void config_inherit_settings(struct pipeline_config *pc, const struct pipeline_settings *from)
{
	for (size_t i = 0; i < NR_KEYS; i++) {
		const struct key_rule *r = &keys[i].settings;

		if (r->type && !(pc->key_valid & (1ull << keys[i].id)))
			memcpy((char *)&pc->s + r->at, (const char *)from + r->at, rule_size(r));
	}
}

static bool field_same(const struct key_rule *r, const void *a, const void *b)
{
	return !memcmp((const char *)a + r->at, (const char *)b + r->at, rule_size(r));
}

bool config_same_but_layout(const struct pipeline_config *a, const struct pipeline_config *b)
{
	for (size_t i = 0; i < NR_KEYS; i++) {
		const struct key_def *k = &keys[i];

		if (k->flags & KEY_LAYOUT)
			continue;
		if (k->settings.type && !field_same(&k->settings, &a->s, &b->s))
			return false;
		if (k->pipeline.type && !field_same(&k->pipeline, a, b))
			return false;
	}
	return true;
}

/* a V_PATHS field of @a and @b: the same paths in the same order */
static bool paths_same(const struct key_rule *r, const void *a, const void *b)
{
	char *const *pa = (char *const *)((const char *)a + r->at);
	char *const *pb = (char *const *)((const char *)b + r->at);
	int n = *(const int *)((const char *)a + r->at_nr);

	if (n != *(const int *)((const char *)b + r->at_nr))
		return false;
	for (int j = 0; j < n; j++)
		if (strcmp(pa[j], pb[j]))
			return false;
	return true;
}

/* what reload compares for a [device]: every key of the table (members by path) */
bool device_config_same(const struct device_config *a, const struct device_config *b)
{
	for (size_t i = 0; i < NR_KEYS; i++) {
		const struct key_rule *r = &keys[i].device;

		if (r->type == V_PATHS ? !paths_same(r, a, b) : r->type && !field_same(r, a, b))
			return false;
	}
	return true;
}

/* a key a message can name: one value of a [pipeline] (a list's paths have lines of their own) */
static bool scalar_pipeline_key(const struct key_def *k)
{
	return key_in(k, SEC_PIPELINE) && !key_repeats(k);
}

int config_key_line_leading(const struct pipeline_config *pc, const char *msg)
{
	for (size_t i = 0; i < NR_KEYS; i++) {
		size_t n = strlen(keys[i].name);

		if (scalar_pipeline_key(&keys[i]) && pc->key_line[keys[i].id] &&
		    !strncmp(msg, keys[i].name, n) && msg[n] == ' ')
			return pc->key_line[keys[i].id];
	}
	return 0;
}

int config_key_line_named(const struct pipeline_config *pc, const char *msg)
{
	size_t best = 0;
	int line = 0;

	/* the longest: "dest_offset" names offset too */
	for (size_t i = 0; i < NR_KEYS; i++) {
		size_t n = strlen(keys[i].name);

		if (scalar_pipeline_key(&keys[i]) && pc->key_line[keys[i].id] && n > best &&
		    strstr(msg, keys[i].name)) {
			best = n;
			line = pc->key_line[keys[i].id];
		}
	}
	return line;
}

const struct key_def *key_lookup(const char *name)
{
	for (size_t i = 0; i < NR_KEYS; i++)
		if (!strcmp(keys[i].name, name))
			return &keys[i];
	return NULL;
}

const char *config_key_name(unsigned int i)
{
	return i < NR_KEYS ? keys[i].name : NULL;
}

int pipeline_config_key_line(const struct pipeline_config *pc, const char *name)
{
	const struct key_def *k = key_lookup(name);

	return k ? pc->key_line[k->id] : 0;
}

bool key_in(const struct key_def *k, enum section_kind sec)
{
	switch (sec) {
	case SEC_DAEMON:
		return k->settings.type || k->daemon.type;
	case SEC_PIPELINE:
		return k->settings.type || k->pipeline.type;
	case SEC_DEVICE:
		return k->device.type;
	default:
		return false;
	}
}

bool key_repeats(const struct key_def *k)
{
	return k->pipeline.type == V_PATHS || k->device.type == V_PATHS;
}

int config_set_key(struct parse_state *st, const struct key_def *k, const char *value)
{
	switch (st->sec) {
	case SEC_DAEMON:
		if (k->daemon.type)
			return set_by_rule(st, k, &k->daemon, st->cfg, value);
		return set_by_rule(st, k, &k->settings, &st->cfg->defaults, value);
	case SEC_PIPELINE:
		if (k->pipeline.type)
			return set_by_rule(st, k, &k->pipeline, st->cur, value);
		return set_by_rule(st, k, &k->settings, &st->cur->s, value);
	case SEC_DEVICE:
		return set_by_rule(st, k, &k->device, st->dev, value);
	default:
		return -EINVAL;
	}
}
