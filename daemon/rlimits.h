/* SPDX-License-Identifier: MIT */
#ifndef IOU_RLIMITS_H
#define IOU_RLIMITS_H

/*
 * The process limits a run meets: locked memory for the fixed buffers,
 * file descriptors for the files and rings. Checked up front (by
 * --check-config --open), so that a start does not fail part way.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* capability numbers (linux/capability.h) the limits depend on */
#define RLIMITS_CAP_IPC_LOCK		14	/* locked memory without RLIMIT_MEMLOCK */
#define RLIMITS_CAP_SYS_RESOURCE	24	/* a file system's reserved blocks */

/* is @cap in the process's effective set? */
bool rlimits_have_cap(int cap);
/* descriptors a pipeline holds while it runs: its files, its ring, BPF links */
unsigned int rlimits_pipeline_fds(const struct pipeline_config *pc);
/* the soft RLIMIT_NOFILE raised to the hard one (no select() here) */
void rlimits_raise_nofile(void);
/* 0, or -ENOMEM / -EMFILE with the limit, how much is needed and how to raise it */
int rlimits_check_memlock(uint64_t bytes, char *msg, size_t len);
int rlimits_check_nofile(unsigned int fds, char *msg, size_t len);

#endif
