/* SPDX-License-Identifier: MIT */
#ifndef IOU_ONESHOT_H
#define IOU_ONESHOT_H

#include <stdbool.h>

struct daemon_options;

/* copy, mirror, stripe, gather */
bool oneshot_verb(const char *arg);
/*
 * argv[0] is the verb: fill @opts with the pipeline's config text, --once
 * and the name of its own state; -1 to run it, or an exit status
 */
int oneshot_parse(int argc, char **argv, struct daemon_options *opts);

#endif
