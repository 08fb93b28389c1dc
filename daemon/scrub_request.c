// SPDX-License-Identifier: MIT
/*
 * `iou-offloadd scrub NAME` of a device: the daemon that serves it does the
 * scrub (ublk_scrub.c); this asks it (runtime_dir/scrub-NAME.request and
 * SIGUSR1), waits for its answer and prints the record it kept.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "human.h"
#include "kv.h"
#include "reload.h"
#include "status.h"
#include "ublk_scrub.h"
#include "verify.h"

struct answer {
	uint64_t seq;
	bool done;
	char why[512];
};

static int answer_key(void *arg, const char *key, const char *v)
{
	struct answer *a = arg;

	if (!strcmp(key, "seq"))
		a->seq = strtoull(v, NULL, 10);
	else if (!strcmp(key, "result"))
		a->done = !strcmp(v, "done");
	else if (!strcmp(key, "why"))
		snprintf(a->why, sizeof(a->why), "%s", v);
	return 0;
}

static int answer_read(const char *path, struct answer *a)
{
	char *text;
	int ret = kv_read(path, 1 << 16, &text);

	memset(a, 0, sizeof(*a));
	if (ret)
		return ret;
	ret = kv_parse(text, SCRUB_MAGIC, false, answer_key, a);
	free(text);
	return ret;
}

int ublk_scrub_request(const struct daemon_config *cfg, const struct device_config *dc)
{
	char req[4200], ans[4200], file[300], buf[64], size[32];
	uint64_t seq = clock_mono_ns() ^ ((uint64_t)getpid() << 40);
	struct verify_record v;
	struct answer a;
	pid_t pid;
	int n;

	if (dc->target != TARGET_MIRROR) {
		printf("%s: not scrubbed: scrub compares a mirror's legs (target = %s)\n", dc->name,
		       device_target_to_string(dc->target));
		return 4;
	}
	pid = reload_daemon_pid(cfg->runtime_dir);
	if (pid <= 0 || !status_daemon_alive(pid)) {
		printf("%s: not scrubbed: no iou-offloadd serves it (the scrub runs in the daemon, "
		       "beside the device's I/O)\n", dc->name);
		return 4;
	}
	snprintf(file, sizeof(file), SCRUB_REQUEST, dc->name);
	snprintf(req, sizeof(req), "%s/%s", cfg->runtime_dir, file);
	snprintf(file, sizeof(file), SCRUB_ANSWER, dc->name);
	snprintf(ans, sizeof(ans), "%s/%s", cfg->runtime_dir, file);
	n = snprintf(buf, sizeof(buf), "seq=%" PRIu64 "\n", seq);
	if (kv_replace(req, buf, n, 0600, false) || kill(pid, SIGUSR1) < 0) {
		printf("%s: not scrubbed: cannot ask pid %d (%s)\n", dc->name, (int)pid,
		       strerror(errno));
		return 4;
	}
	/* as long as the scrub takes: the rate bounds it, not a timeout */
	for (;;) {
		struct timespec ts = { 0, 200 * 1000000L };

		if (!answer_read(ans, &a) && a.seq == seq)
			break;
		if (!status_daemon_alive(pid)) {
			printf("%s: not scrubbed: the daemon (pid %d) ended before it answered\n",
			       dc->name, (int)pid);
			return 4;
		}
		nanosleep(&ts, NULL);
	}
	if (!a.done) {
		printf("%s: not scrubbed: %s\n", dc->name, a.why);
		return 4;
	}
	if (verify_record_load(cfg->state_dir, dc->name, true, &v) || v.seq != seq) {
		printf("%s: scrubbed, but its record in %s is not there\n", dc->name,
		       cfg->state_dir);
		return 1;
	}
	human_bytes(v.bytes, size, sizeof(size));
	printf("%s: %s of %d legs compared%s: %" PRIu64 " block(s) of 4 KiB differed, %" PRIu64
	       " repaired%s%s%s\n", dc->name, size, v.files, v.complete ? "" : " (stopped early)",
	       v.mismatches, v.repaired, dc->integrity == CHECKSUM_NONE && v.mismatches ?
	       " (integrity = none: reported only)" : "", a.why[0] ? "; " : "", a.why);
	return v.mismatches > v.repaired || v.failed || !v.complete ? 1 : 0;
}
