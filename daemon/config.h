/* SPDX-License-Identifier: MIT */
#ifndef IOU_CONFIG_H
#define IOU_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log.h"

#define CONFIG_DEFAULT_PATH	"/etc/iou-offloadd.conf"
#define CONFIG_MAX_FILES	16	/* sources or destinations per pipeline */
#define CONFIG_NAME_MAX		64
#define CONFIG_MAX_BYTES	(1 << 20)
#define CONFIG_MAX_PIPELINES	256
#define CONFIG_MAX_DEVICES	64
#define PROGRESS_INTERVAL_DEFAULT 10	/* seconds between progress log lines */
#define PROGRESS_INTERVAL_MAX	86400
#define BUFFER_CACHE_DEFAULT	(256ULL << 20)	/* idle fixed buffers kept between runs */
#define BUFFER_CACHE_MAX	(1ULL << 40)

enum transform {
	TRANSFORM_COPY,
	TRANSFORM_MIRROR,
	TRANSFORM_STRIPE,
	TRANSFORM_GATHER,
};

enum gather_layout {
	GATHER_CONCAT,		/* sources one after the other */
	GATHER_DESTRIPE,	/* inverse of stripe: interleave in stripe_unit */
};

/* engine_kind is part of the config ABI: numbers stay */
enum engine_kind {
	ENGINE_AUTO,
	ENGINE_BPF,
	ENGINE_URING,
	ENGINE_LOOP,		/* bpf-ops loop_step drives the chains; only when asked */
};

/*
 * A stripe unit scattered through a block or a request (several units per
 * member): moved by one request per unit straight from the buffer it was
 * read into, or gathered into one contiguous buffer per member first.
 */
enum stripe_io {
	STRIPE_IO_PER_UNIT,	/* one request per unit, from the buffer in place */
	STRIPE_IO_GATHER,	/* units gathered per member, one request per member */
};

/* checksum = ...: a sum of every block, in a manifest beside the checkpoint */
enum checksum_kind {
	CHECKSUM_NONE,
	CHECKSUM_CRC32C,
};

/* settings a [pipeline] inherits from [daemon] unless it sets them */
/* keys the table may hold: key_line[] and the key_valid bits (config_int.h) */
#define CONFIG_KEYS_MAX	64

struct pipeline_settings {
	enum engine_kind engine;
	uint32_t queue_depth;
	uint32_t block_size;
	uint32_t stripe_unit;
	uint64_t checkpoint_interval;
	uint32_t retries;
	uint32_t retry_delay;
	bool direct;
	bool create;
	bool truncate;
	bool repeat;
	bool sparse;		/* holes of the source stay holes (copy, mirror) */
	enum checksum_kind checksum;
};

struct pipeline_config {
	char name[CONFIG_NAME_MAX + 1];
	int line;			/* line of the [pipeline NAME] header */
	enum transform transform;
	enum gather_layout gather;
	enum stripe_io stripe_io;	/* stripe and destripe: several units per member */
	char *sources[CONFIG_MAX_FILES];
	int nr_sources;
	char *dests[CONFIG_MAX_FILES];
	int nr_dests;
	int source_line[CONFIG_MAX_FILES];	/* line of each source = ... */
	int dest_line[CONFIG_MAX_FILES];	/* line of each destination = ... */
	uint64_t offset;		/* into each source */
	uint64_t dest_offset;		/* into each destination */
	uint64_t length;		/* logical bytes; UINT64_MAX = to the end */
	struct pipeline_settings s;
	/* bookkeeping: line each key was given on (0 = never), and which held a valid value */
	int key_line[CONFIG_KEYS_MAX];
	uint64_t key_valid;
};

/* [device NAME]: a ublk block device served by the daemon (device_config.c) */
enum device_target {
	TARGET_LINEAR,		/* the members one after the other */
	TARGET_STRIPE,		/* RAID-0 in stripe_unit */
	TARGET_MIRROR,		/* RAID-1: every write to all, reads from one */
};

enum read_policy {
	READ_ROUND_ROBIN,	/* requests alternate between healthy members */
	READ_PRIMARY,		/* the first healthy member */
};

/* how a device's request data reaches the members (ublk_dev.c) */
enum data_path {
	DATA_PATH_AUTO,		/* zero copy where the kernel's ublk offers it */
	DATA_PATH_COPY,		/* ublk copies each request through a tag buffer */
	DATA_PATH_ZERO_COPY,	/* the request's own pages, or the device fails to start */
};

/* stripe: how a request with several units on one member reaches it */
struct device_config {
	char name[CONFIG_NAME_MAX + 1];
	int line;			/* of the [device NAME] header */
	enum device_target target;
	char *backing[CONFIG_MAX_FILES];
	int backing_line[CONFIG_MAX_FILES];
	int nr_backing;
	uint64_t member_size[CONFIG_MAX_FILES];	/* bytes each member has (found by the check) */
	enum engine_kind engine;
	uint32_t nr_queues;
	uint32_t queue_depth;
	uint32_t max_io_size;
	uint32_t logical_block_size;
	uint32_t stripe_unit;
	enum read_policy read_policy;
	enum stripe_io stripe_io;
	enum data_path data_path;
	enum checksum_kind integrity;	/* crc32c: each 4 KiB summed on write, checked on read */
	uint64_t scrub_rate;		/* mirror: bytes a second `scrub` compares; 0: unthrottled */
	uint64_t size;			/* 0 in the file: as large as the members allow */
	int key_line[CONFIG_KEYS_MAX];
	uint64_t key_valid;
};

struct daemon_config {
	char *path;
	char *state_dir;
	char *runtime_dir;
	/*
	 * a one-shot's state_dir and runtime_dir are its own, under these (the
	 * configured ones), which hold the other commands' state: no data there
	 */
	char *oneshot_base[2];
	enum log_level log_level;
	bool exit_when_done;
	uint32_t progress_interval;	/* s between progress lines off a terminal; 0: none */
	uint64_t buffer_cache;		/* bytes of idle fixed buffers kept (bufpool.h) */
	struct pipeline_settings defaults;
	struct pipeline_config *pipelines;
	int nr_pipelines;
	struct device_config *devices;
	int nr_devices;
	int key_line[CONFIG_KEYS_MAX];
	uint64_t key_valid;
};

/* error messages, each "FILE:LINE: ..." */
/* the first CONFIG_ERRORS_KEPT messages are kept (a binary file makes thousands) */
#define CONFIG_ERRORS_KEPT	20
struct config_errors {
	char **msgs;
	int nr;
	int dropped;		/* errors past the first CONFIG_ERRORS_KEPT: counted only */
	char *warnings[CONFIG_ERRORS_KEPT];	/* taken, but maybe not as meant */
	int nr_warnings;
};

/*
 * Parse and validate a configuration. Returns 0, -EINVAL with one message
 * per problem in @errs, or another -errno (file unreadable, -ENOMEM).
 */
int config_load(const char *path, struct daemon_config *cfg,
		struct config_errors *errs);
int config_parse_buffer(const char *name, const char *buf, size_t len,
			struct daemon_config *cfg, struct config_errors *errs);
/*
 * The same for a configuration made from a command line: @origins[i] names
 * the option line i + 1 came from, and a message about that line says
 * "@name: ORIGIN: " where a file's says "FILE:LINE: [section]: "
 */
int config_parse_generated(const char *name, const char *buf, const char *const *origins,
			   int nr_origins, struct daemon_config *cfg, struct config_errors *errs);
void config_free(struct daemon_config *cfg);
void config_errors_free(struct config_errors *errs);
/*
 * @p as the config takes paths (absolute, from the current directory),
 * without resolving the file itself: a destination need not exist, and a
 * symlink stays what it is. malloc'd; NULL when that fails
 */
char *config_absolute_path(const char *p);
/* the LINE of a "FILE:LINE: ..." finding of @file (0: none) */
long config_finding_line(const char *msg, const char *file);

const struct pipeline_config *config_find_pipeline(const struct daemon_config *cfg,
						   const char *name);
/* true if both describe the same data layout (resume-compatible) */
bool pipeline_config_same(const struct pipeline_config *a,
			  const struct pipeline_config *b);
int pipeline_config_dup(const struct pipeline_config *src,
			struct pipeline_config *dst);
void pipeline_config_free(struct pipeline_config *pc);
/* stable 64-bit fingerprint of the layout-relevant keys, for checkpoints */
uint64_t pipeline_config_fingerprint(const struct pipeline_config *pc);

const struct device_config *config_find_device(const struct daemon_config *cfg,
					       const char *name);
/* true if a running device needs no restart to match @b */
bool device_config_same(const struct device_config *a, const struct device_config *b);
int device_config_dup(const struct device_config *src, struct device_config *dst);
void device_config_free(struct device_config *dc);
/* bytes member @i holds of a device of dc->size bytes */
uint64_t device_member_share(const struct device_config *dc, int i);

const char *transform_to_string(enum transform t);
const char *device_target_to_string(enum device_target t);
const char *read_policy_to_string(enum read_policy p);
const char *stripe_io_to_string(enum stripe_io s);
const char *data_path_to_string(enum data_path p);
const char *checksum_kind_to_string(enum checksum_kind c);
const char *gather_layout_to_string(enum gather_layout g);
const char *engine_kind_to_string(enum engine_kind e);

/* the @i-th key the parser knows, NULL past the last: for documentation checks */
const char *config_key_name(unsigned int i);

/* the line @pc set key @name on, 0 if it did not (inherited or default) */
int pipeline_config_key_line(const struct pipeline_config *pc, const char *name);
/*
 * The line of the [pipeline] key a message is about, by the table (0 if
 * none): the key @msg starts with ("offset 1048576 is ..."), or the longest
 * key it names anywhere; only keys @pc sets
 */
int config_key_line_leading(const struct pipeline_config *pc, const char *msg);
int config_key_line_named(const struct pipeline_config *pc, const char *msg);

/* "64K" -> 65536; 0 or -EINVAL (also on overflow) */
int config_parse_size(const char *s, uint64_t *out);

#endif
