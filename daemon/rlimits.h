/* SPDX-License-Identifier: MIT */
#ifndef IOU_RLIMITS_H
#define IOU_RLIMITS_H

/*
 * The process limits a run meets: locked memory for the fixed buffers,
 * file descriptors for the files and rings. Checked up front (by
 * --check-config --open), so that a start does not fail part way.
 */
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* descriptors a pipeline holds while it runs: its files, its ring, BPF links */
unsigned int rlimits_pipeline_fds(const struct pipeline_config *pc);
/* the soft RLIMIT_NOFILE raised to the hard one (no select() here) */
void rlimits_raise_nofile(void);
/* 0, or -ENOMEM / -EMFILE with the limit, how much is needed and how to raise it */
int rlimits_check_memlock(uint64_t bytes, char *msg, size_t len);
int rlimits_check_nofile(unsigned int fds, char *msg, size_t len);

#endif
