// SPDX-License-Identifier: MIT
/*
 * The config's ground floor: every enum's names (the parser reads them,
 * messages list them, status prints them: written once, here), the
 * defaults of a pipeline's settings and of a device, and the rule for
 * section names.
 */
#include <string.h>

#include "config_int.h"

#define NAMES(...) {							\
	(const struct enum_name[]){ __VA_ARGS__ },			\
	sizeof((const struct enum_name[]){ __VA_ARGS__ }) / sizeof(struct enum_name) \
}

const struct enum_names engine_names = NAMES(
	{ "auto", ENGINE_AUTO }, { "bpf", ENGINE_BPF },
	{ "loop", ENGINE_LOOP }, { "uring", ENGINE_URING });
const struct enum_names transform_names = NAMES(
	{ "copy", TRANSFORM_COPY }, { "mirror", TRANSFORM_MIRROR },
	{ "stripe", TRANSFORM_STRIPE }, { "gather", TRANSFORM_GATHER });
const struct enum_names gather_names = NAMES(
	{ "concat", GATHER_CONCAT }, { "destripe", GATHER_DESTRIPE });
const struct enum_names target_names = NAMES(
	{ "linear", TARGET_LINEAR }, { "stripe", TARGET_STRIPE },
	{ "mirror", TARGET_MIRROR });
const struct enum_names read_policy_names = NAMES(
	{ "round-robin", READ_ROUND_ROBIN }, { "primary", READ_PRIMARY });
const struct enum_names stripe_io_names = NAMES(
	{ "per-unit", STRIPE_IO_PER_UNIT }, { "gather", STRIPE_IO_GATHER });
const struct enum_names data_path_names = NAMES(
	{ "auto", DATA_PATH_AUTO }, { "copy", DATA_PATH_COPY },
	{ "zero-copy", DATA_PATH_ZERO_COPY });
const struct enum_names checksum_names = NAMES(
	{ "none", CHECKSUM_NONE }, { "crc32c", CHECKSUM_CRC32C });

const char *enum_name_of(const struct enum_names *names, int value)
{
	for (unsigned int i = 0; i < names->nr; i++)
		if (names->v[i].value == value)
			return names->v[i].name;
	return "?";
}

#define TO_STRING(fn, type, names) \
	const char *fn(type v) { return enum_name_of(&names, v); }

TO_STRING(engine_kind_to_string, enum engine_kind, engine_names)
TO_STRING(transform_to_string, enum transform, transform_names)
TO_STRING(gather_layout_to_string, enum gather_layout, gather_names)
TO_STRING(device_target_to_string, enum device_target, target_names)
TO_STRING(read_policy_to_string, enum read_policy, read_policy_names)
TO_STRING(stripe_io_to_string, enum stripe_io, stripe_io_names)
TO_STRING(data_path_to_string, enum data_path, data_path_names)
TO_STRING(checksum_kind_to_string, enum checksum_kind, checksum_names)

void settings_defaults(struct pipeline_settings *s)
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
		.sparse = true,
		.checksum = CHECKSUM_NONE,
	};
}

/* devices do not inherit from [daemon]: their settings are a block device's */
void device_defaults(struct device_config *dc)
{
	dc->engine = ENGINE_AUTO;
	dc->nr_queues = 1;
	dc->queue_depth = 64;
	dc->max_io_size = 512u << 10;
	dc->logical_block_size = 512;
	dc->stripe_unit = 64u << 10;
	dc->read_policy = READ_ROUND_ROBIN;
	/* per-unit moves no byte; gather did not measure faster (see the man page) */
	dc->stripe_io = STRIPE_IO_PER_UNIT;
	dc->data_path = DATA_PATH_AUTO;
	/* md's sync_speed_max is 200 MB/s: half of it leaves the legs to the device's users */
	dc->scrub_rate = 100ull << 20;
}

/* pipeline and device names become file names: a safe alphabet */
bool valid_pipeline_name(const char *n)
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
