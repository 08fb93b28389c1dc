/* SPDX-License-Identifier: MIT */
#ifndef IOU_VERIFY_H
#define IOU_VERIFY_H

#include <stdbool.h>

struct daemon_options;

/*
 * iou-offloadd verify: every named pipeline (all when @nr_names is 0) read
 * back against its checksum manifest; @source: the source too. The exit
 * status: 0 all verified, 1 a mismatch or a file that cannot be read, 2 a
 * name not in the file, 4 nothing to verify (no manifest), 78 a bad config
 */
int verify_main(const struct daemon_options *opts, bool source, char *const *names,
		int nr_names);

#endif
