/* SPDX-License-Identifier: MIT */
#ifndef IOU_CONFIG_INT_H
#define IOU_CONFIG_INT_H

/*
 * Inside the config parser: config.c (the key table, the INI reader and
 * handler, load), config_values.c (one parser per key), config_check.c
 * (checks across keys and pipelines, after the whole file is read) and
 * pipeline_config.c (copy, free, compare, fingerprint) share this.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

enum key_id {
	K_STATE_DIR, K_RUNTIME_DIR, K_LOG_LEVEL, K_EXIT_WHEN_DONE,
	K_ENGINE, K_QUEUE_DEPTH, K_BLOCK_SIZE, K_STRIPE_UNIT,
	K_CHECKPOINT_INTERVAL, K_RETRIES, K_RETRY_DELAY,
	K_DIRECT, K_CREATE, K_TRUNCATE, K_REPEAT,
	K_TRANSFORM, K_GATHER, K_SOURCE, K_DESTINATION,
	K_OFFSET, K_DEST_OFFSET, K_LENGTH,
	K_PROGRESS_INTERVAL,
	K_TARGET, K_BACKING, K_NR_QUEUES, K_MAX_IO_SIZE, K_LOGICAL_BLOCK_SIZE,
	K_READ_POLICY, K_SIZE, K_STRIPE_IO,
	K_NR,
};

enum key_scope {
	IN_DAEMON = 1,
	IN_PIPELINE = 2,
	IN_BOTH = 3,
	IN_DEVICE = 4,
	IN_ALL = 7,
};

struct key_def {
	const char *name;
	enum key_id id;
	enum key_scope scope;
};

extern const struct key_def keys[K_NR];	/* one entry per key id */
_Static_assert(K_NR <= 32, "key_line[32] and the key_valid bits hold 32 keys");

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
	SEC_DEVICE,
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
	struct device_config *dev;	/* when sec == SEC_DEVICE */
	struct daemon_config *cfg;
	struct config_errors *errs;
	int oom;
};

/* one "FILE:LINE: [section]: ..." message */
void add_error(struct parse_state *st, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
const struct key_def *key_lookup(const char *name);
void settings_defaults(struct pipeline_settings *s);
bool valid_pipeline_name(const char *n);

/* config_values.c: set the key @k of the current section to @value */
int set_pipeline_key(struct parse_state *st, const struct key_def *k, const char *value);
int set_daemon_key(struct parse_state *st, const struct key_def *k, const char *value);
int set_setting(struct parse_state *st, struct pipeline_settings *s, const struct key_def *k,
		const char *value);
int set_string(struct parse_state *st, char **dst, const char *name, const char *value);

/* config_device.c: [device NAME] keys, and the checks after the file */
void device_init(struct device_config *dc);
/* [device NAME]: a new device, or SEC_BAD with the reason */
void device_section_begin(struct parse_state *st, const char *name);
int set_device_key(struct parse_state *st, const struct key_def *k, const char *value);
void device_resolve(struct parse_state *st, struct device_config *dc);
int devices_check_claims(struct parse_state *st, struct daemon_config *cfg);
int check_size(struct parse_state *st, const char *name, const char *value,
	       uint64_t lo, uint64_t hi, uint64_t *out);
int check_range_u32(struct parse_state *st, const char *name, const char *value,
		    uint32_t lo, uint32_t hi, uint32_t *out);
int set_engine(struct parse_state *st, const char *value, enum engine_kind *out);

/* config_check.c */
void pipeline_resolve(struct parse_state *st, struct pipeline_config *pc);
int pipelines_check_claims(struct parse_state *st, struct daemon_config *cfg);

#endif
