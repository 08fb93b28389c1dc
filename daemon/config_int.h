/* SPDX-License-Identifier: MIT */
#ifndef IOU_CONFIG_INT_H
#define IOU_CONFIG_INT_H

/*
 * Inside the config parser, from the top down: config_load.c (the INI
 * reader, sections, the handler, load), config_keys.c (the key table: each
 * key's sections, type, range and field), config_device.c and
 * config_check.c (checks after the whole file is read), config_values.c
 * (the value parsers and the messages), config.c (enum names, defaults).
 * pipeline_config.c (copy, free, compare, fingerprint) stands apart.
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
	K_READ_POLICY, K_SIZE, K_STRIPE_IO, K_BUFFER_CACHE, K_SPARSE, K_CHECKSUM,
	K_DATA_PATH, K_INTEGRITY, K_SCRUB_RATE,
	K_NR,
};
_Static_assert(K_NR <= CONFIG_KEYS_MAX, "key_line[] and the key_valid bits hold CONFIG_KEYS_MAX keys");

/* an enum's names, in the order messages list them */
struct enum_name {
	const char *name;
	int value;
};

struct enum_names {
	const struct enum_name *v;
	unsigned int nr;
};

extern const struct enum_names checksum_names, engine_names, transform_names, gather_names,
	target_names, read_policy_names, stripe_io_names, data_path_names;

enum value_type {
	V_NONE,		/* the key is not valid in this kind of section */
	V_U32,		/* a decimal integer in [lo, hi] */
	V_SIZE32,	/* a size with an optional K/M/G/T suffix in [lo, hi] */
	V_SIZE64,
	V_BOOL,		/* yes/no, true/false, on/off, 1/0 */
	V_ENUM,		/* one of names */
	V_PATH,		/* an absolute path */
	V_PATHS,	/* an absolute path added to a list: the key repeats */
	V_FN,		/* the rule's own parser */
};

struct parse_state;
struct key_def;

/* how a key's value is read in one kind of section, and where it goes */
struct key_rule {
	enum value_type type;
	size_t at;			/* the field's offset in the section's struct */
	uint64_t lo, hi;		/* V_U32, V_SIZE*: the range */
	uint32_t multiple;		/* V_SIZE*: of this, when not 0 */
	bool pow2;			/* V_SIZE*: a power of two */
	const struct enum_names *names;	/* V_ENUM */
	size_t at_line, at_nr;		/* V_PATHS: each path's line, the count */
	const char *most;		/* V_PATHS: "at most N <most>" */
	int (*parse)(struct parse_state *st, const struct key_def *k, void *field,
		     const char *value);	/* V_FN */
	size_t size;			/* V_FN: the field's size, for compares */
};

/*
 * One entry per key: where each kind of section keeps it. [daemon] and
 * [pipeline] share struct pipeline_settings (a pipeline inherits the
 * daemon's), then each has keys of its own; [device] has its own struct.
 */
/* what else the table says of a key (key_def.flags) */
enum key_flag {
	/* decides where each byte goes: in the checkpoint's fingerprint
	 * (pipeline_config_fingerprint()), not compared apart from it */
	KEY_LAYOUT = 1 << 0,
};

struct key_def {
	const char *name;
	enum key_id id;
	unsigned int flags;		/* enum key_flag */
	struct key_rule settings;	/* struct pipeline_settings */
	struct key_rule daemon;		/* struct daemon_config */
	struct key_rule pipeline;	/* struct pipeline_config */
	struct key_rule device;		/* struct device_config */
};

/* value ranges, shared by the parser and its messages */
#define QD_MIN		1
#define QD_MAX		1024
#define BS_MIN		512
#define BS_MAX		(256u << 20)
#define SU_MIN		512
#define SU_MAX		(1u << 30)
#define UNITS_PER_BLOCK_MAX 4096
#define PER_UNIT_MAX	16	/* stripe_io = per-unit: requests per block */
#define RETRIES_MAX	1000
#define RETRY_DELAY_MAX	3600
#define CKPT_MAX	(1ULL << 44)
#define NRQ_MAX		64
#define MAX_IO_MIN	4096u
#define MAX_IO_MAX	(1u << 20)
#define DEV_SIZE_MAX	(1ULL << 50)
#define SCRUB_RATE_MAX	(1ULL << 40)	/* a TiB a second: beyond any leg */

enum section_kind {
	SEC_NONE,
	SEC_DAEMON,
	SEC_PIPELINE,
	SEC_DEVICE,
	SEC_BAD,		/* unknown or invalid: its keys are ignored */
};

struct parse_state {
	const char *file;
	/* a configuration made from a command line: the option line i + 1 came from */
	const char *const *origins;
	int nr_origins;
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

/* config_keys.c */
const struct key_def *key_lookup(const char *name);
/*
 * By the table, for every key a pipeline has: take each setting the
 * pipeline did not set from [daemon]; are two pipelines' keys the same but
 * for their layout (which the fingerprint compares)?
 */
void config_inherit_settings(struct pipeline_config *pc, const struct pipeline_settings *from);
bool config_same_but_layout(const struct pipeline_config *a, const struct pipeline_config *b);
/* is @k valid in a section of kind @sec; does it repeat (a list) */
bool key_in(const struct key_def *k, enum section_kind sec);
bool key_repeats(const struct key_def *k);
/* set @k of the current section (st->sec) from @value */
int config_set_key(struct parse_state *st, const struct key_def *k, const char *value);

/* config_device.c: [device NAME], and the checks after the file */
void device_section_begin(struct parse_state *st, const char *name);
void device_resolve(struct parse_state *st, struct device_config *dc);
int devices_check_claims(struct parse_state *st, struct daemon_config *cfg);
int set_device_engine(struct parse_state *st, const struct key_def *k, void *field,
		      const char *value);
int set_logical_block_size(struct parse_state *st, const struct key_def *k, void *field,
			   const char *value);

/* config_check.c */
void pipeline_resolve(struct parse_state *st, struct pipeline_config *pc);
int pipelines_check_claims(struct parse_state *st, struct daemon_config *cfg);

/* config_values.c: the messages, and the value parsers */
/* one "FILE:LINE: [section]: ..." message */
void add_error(struct parse_state *st, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * add_error() about @line and the earlier @other it clashes with: "...
 * (@what line N)", N named only where lines are a file's (not a one-shot's)
 */
void add_error_pair(struct parse_state *st, int line, const char *what, int other,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
int errors_push(struct config_errors *errs, char *msg);
/* the same for a line that is taken, but likely not as meant */
void add_warning(struct parse_state *st, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* @errs from @from on in line order (each message is "FILE:LINE: ...") */
void errors_sort(struct config_errors *errs, int from, const char *file);
/*
 * A [KIND NAME] section: NAME usable as a file name, not a second section
 * of that name among the *@nr in *@sections (@size bytes each), not one more
 * than @max. Appends it zeroed, with its name and header line, or returns
 * NULL after one message (or st->oom).
 */
void *section_add(struct parse_state *st, const char *kind, const char *arg, void **sections,
		  size_t size, int *nr, int max);
/* read @value by rule @r into the struct at @base */
int set_by_rule(struct parse_state *st, const struct key_def *k, const struct key_rule *r,
		void *base, const char *value);
int parse_enum(struct parse_state *st, const struct key_def *k,
	       const struct enum_names *names, const char *value, int *out);
int set_log_level(struct parse_state *st, const struct key_def *k, void *field,
		  const char *value);

/* config.c */
const char *enum_name_of(const struct enum_names *names, int value);
void settings_defaults(struct pipeline_settings *s);
/* a device's defaults, over a zeroed struct that has its name */
void device_defaults(struct device_config *dc);
bool valid_pipeline_name(const char *n);

#endif
