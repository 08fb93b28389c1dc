/* SPDX-License-Identifier: MIT */
#ifndef IOU_VERIFY_H
#define IOU_VERIFY_H

#include <stdbool.h>

struct daemon_options;

/*
 * iou-offloadd verify: every named pipeline (all when @nr_names is 0) read
 * back against its checksum manifest; @source: the source too. The exit
 * status: 0 all verified, 1 a mismatch or a file that cannot be read, 2 a
 * name not in the file, 4 nothing to verify (no manifest), 78 a bad config.
 * @scrub (iou-offloadd scrub, the monthly timer): the finished pipelines
 * only, the others and the devices named as not scrubbed, and the result
 * kept as the last scrub.
 */
int verify_main(const struct daemon_options *opts, bool source, bool scrub,
		char *const *names, int nr_names);

/* a pipeline's last verify (or scrub), in state_dir/NAME.verify (NAME.scrub), for `status` */
struct verify_record {
	uint64_t when;		/* unix seconds */
	uint64_t blocks, bytes, mismatches;
	int files;		/* file sets read: destinations (a stripe is one), the source */
	int complete;		/* 1: the whole copy; 0: up to its checkpoint */
	int failed;		/* 1: a file could not be read */
	uint64_t repaired;	/* a mirror device's scrub: blocks rewritten from a leg that agreed */
	uint64_t seq;		/* a device's scrub: the request it answers */
};
/* kept in @dir (not durable: a lost one is done again) */
void verify_record_save(const char *dir, const char *name, bool scrub,
			const struct verify_record *v);
/* 0, or -ENOENT (never verified, or never scrubbed), -EINVAL */
int verify_record_load(const char *state_dir, const char *name, bool scrub,
		       struct verify_record *v);

#endif
