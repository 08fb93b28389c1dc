// SPDX-License-Identifier: MIT
/*
 * RLIMIT_MEMLOCK and RLIMIT_NOFILE against what the configured pipelines
 * will hold at once. io_uring charges registered buffers to the user's
 * locked memory unless the process has CAP_IPC_LOCK.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "rlimits.h"

/* stdio, signalfd, eventfd, the directory locks, status and journal files */
#define DAEMON_FDS		16

unsigned int rlimits_pipeline_fds(const struct pipeline_config *pc)
{
	/* the ring, its wake eventfd, and struct_ops map and link for bpf/loop */
	return pc->nr_sources + pc->nr_dests + 4;
}

void rlimits_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

bool rlimits_have_cap(int cap)
{
	unsigned long long eff = 0;
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	return eff & (1ULL << cap);
}

int rlimits_check_memlock(uint64_t bytes, char *msg, size_t len)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	struct rlimit rl;

	/* pinned pages past RAM: no limit or capability makes that work */
	if (pages > 0 && page > 0 && bytes > (uint64_t)pages * page) {
		snprintf(msg, len, "the pipelines register %llu MiB of fixed buffers, locked "
			 "memory, more than the %llu MiB of RAM this machine has: lower "
			 "queue_depth or block_size (a pipeline's buffers are about their "
			 "product), or run fewer pipelines at once",
			 (unsigned long long)(bytes + (1 << 20) - 1) >> 20,
			 (unsigned long long)pages * page >> 20);
		return -ENOMEM;
	}
	if (!bytes || rlimits_have_cap(RLIMITS_CAP_IPC_LOCK) || getrlimit(RLIMIT_MEMLOCK, &rl) < 0 ||
	    rl.rlim_cur == RLIM_INFINITY || bytes <= rl.rlim_cur)
		return 0;
	snprintf(msg, len, "the pipelines register %llu KiB of fixed buffers, locked memory, "
		 "but RLIMIT_MEMLOCK is %llu KiB: raise it with `ulimit -l` in a shell or "
		 "LimitMEMLOCK= in the unit, or lower queue_depth or block_size",
		 (unsigned long long)(bytes + 1023) >> 10, (unsigned long long)rl.rlim_cur >> 10);
	return -ENOMEM;
}

int rlimits_check_nofile(unsigned int fds, char *msg, size_t len)
{
	struct rlimit rl;

	fds += DAEMON_FDS;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_max == RLIM_INFINITY ||
	    fds <= rl.rlim_max)
		return 0;
	snprintf(msg, len, "the pipelines hold about %u file descriptors at once, but "
		 "RLIMIT_NOFILE is %llu (hard): raise it with `ulimit -n` in a shell or "
		 "LimitNOFILE= in the unit, or run fewer pipelines in one daemon", fds,
		 (unsigned long long)rl.rlim_max);
	return -EMFILE;
}
