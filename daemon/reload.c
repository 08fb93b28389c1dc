// SPDX-License-Identifier: MIT
/*
 * A reload's answer (reload.h): written by the daemon after each reload,
 * waited for by `iou-offloadd reload`, so that `systemctl reload` fails when
 * the daemon refused the configuration or a part of it.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "kv.h"
#include "reload.h"
#include "status.h"

#define RELOAD_MAGIC	"iou-offloadd-reload 1"
/* under systemd's TimeoutStartSec= (90 s), which also bounds ExecReload */
#define ANSWER_WAIT_MS	80000

struct answer {
	pid_t pid;
	uint64_t seq;
	bool ok;
	char why[4096];
};

int reload_answer_write(const char *runtime_dir, pid_t pid, uint64_t seq, const char *why)
{
	char path[4200], head[128];

	snprintf(path, sizeof(path), "%s/%s", runtime_dir, RELOAD_FILE_NAME);
	snprintf(head, sizeof(head), "%s\npid=%d\nseq=%" PRIu64 "\nresult=%s\n", RELOAD_MAGIC,
		 (int)pid, seq, why[0] ? "failed" : "ok");
	return kv_answer_write(path, head, why);
}

static int answer_key(void *arg, const char *key, const char *v)
{
	struct answer *a = arg;

	if (!strcmp(key, "pid"))
		a->pid = atoi(v);
	else if (!strcmp(key, "seq"))
		a->seq = strtoull(v, NULL, 10);
	else if (!strcmp(key, "result"))
		a->ok = !strcmp(v, "ok");
	else if (!strcmp(key, "why"))
		snprintf(a->why, sizeof(a->why), "%s", v);
	return 0;
}

static int answer_read(const char *path, struct answer *a)
{
	char *text;
	int ret;

	memset(a, 0, sizeof(*a));
	ret = kv_read(path, 1 << 16, &text);
	if (ret)
		return ret;
	ret = kv_parse(text, RELOAD_MAGIC, false, answer_key, a);
	free(text);
	return ret;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* the daemon's pid, and into @config (if given) the file it runs, from its status file */
static pid_t daemon_pid(const char *runtime_dir, char *config, size_t len)
{
	struct status_report r;
	char path[4200];
	pid_t pid;

	snprintf(path, sizeof(path), "%s/%s", runtime_dir, STATUS_FILE_NAME);
	if (status_read(path, &r))
		return 0;
	pid = r.pid;
	if (config)
		snprintf(config, len, "%s", r.config);
	status_report_free(&r);
	return pid;
}

pid_t reload_daemon_pid(const char *runtime_dir)
{
	return daemon_pid(runtime_dir, NULL, 0);
}

/*
 * A reload makes the daemon read its own file again: @config_path must be
 * that one. A relative path is the daemon's, from a directory not known
 * here: taken as the same.
 */
static bool same_config(const char *running, const char *config_path)
{
	char *a, *b;
	bool same;

	if (running[0] != '/')
		return true;
	a = realpath(running, NULL);
	b = realpath(config_path, NULL);
	same = a && b ? !strcmp(a, b) : !strcmp(running, config_path);

	free(a);
	free(b);
	return same;
}

int reload_request(const char *config_path, const char *pid_arg)
{
	struct config_errors errs = { 0 };
	struct daemon_config cfg;
	struct answer before, now;
	char path[4200], running[4096];
	pid_t pid;
	int ret;

	ret = config_load(config_path, &cfg, &errs);
	for (int i = 0; i < errs.nr; i++)
		fprintf(stderr, "%s\n", errs.msgs[i]);
	config_errors_free(&errs);
	if (ret) {
		fprintf(stderr, "iou-offloadd reload: %s has errors: not reloaded, the daemon "
			"keeps its configuration\n", config_path);
		config_free(&cfg);
		return 78;
	}
	snprintf(path, sizeof(path), "%s/%s", cfg.runtime_dir, RELOAD_FILE_NAME);
	running[0] = '\0';
	pid = daemon_pid(cfg.runtime_dir, running, sizeof(running));
	config_free(&cfg);
	if (pid_arg) {
		char *end;
		long n = strtol(pid_arg, &end, 10);

		if (*end || n <= 0 || n > INT_MAX) {
			fprintf(stderr, "iou-offloadd reload: '%s' is not a pid\n", pid_arg);
			return 2;	/* a bad command line */
		}
		/* the status file's config is another daemon's */
		if ((pid_t)n != pid)
			running[0] = '\0';
		pid = (pid_t)n;
	}
	if (pid <= 0) {
		fprintf(stderr, "iou-offloadd reload: no daemon to reload (no pid given, none in "
			"the status file)\n");
		return 1;
	}
	if (!strcmp(running, "-")) {
		fprintf(stderr, "iou-offloadd reload: pid %d read its configuration from standard "
			"input (-c -): it has no file to read again; restart it to change it\n",
			(int)pid);
		return 1;
	}
	if (running[0] && !same_config(running, config_path)) {
		fprintf(stderr, "iou-offloadd reload: pid %d runs %s, not %s: a reload reads the "
			"daemon's own file again (edit that one)\n", (int)pid, running, config_path);
		return 1;
	}
	/* a pid the status file names may be another process's by now: never signal that */
	if (!status_daemon_alive(pid)) {
		fprintf(stderr, "iou-offloadd reload: pid %d is not a running iou-offloadd: the "
			"daemon is not running, nothing reloaded\n", (int)pid);
		return 1;
	}
	answer_read(path, &before);
	if (kill(pid, SIGHUP) < 0) {
		fprintf(stderr, "iou-offloadd reload: cannot signal pid %d: %s\n", (int)pid,
			strerror(errno));
		return 1;
	}
	for (unsigned int waited = 0; waited < ANSWER_WAIT_MS; waited += 50) {
		sleep_ms(50);
		if (!status_daemon_alive(pid)) {
			fprintf(stderr, "iou-offloadd reload: pid %d exited before it answered\n",
				(int)pid);
			return 1;
		}
		if (answer_read(path, &now) || now.pid != pid ||
		    (before.pid == pid && now.seq == before.seq))
			continue;
		if (now.ok)
			return 0;
		fprintf(stderr, "iou-offloadd reload: refused: %s\n", now.why);
		return 1;
	}
	fprintf(stderr, "iou-offloadd reload: pid %d has not answered in %d s\n", (int)pid,
		ANSWER_WAIT_MS / 1000);
	return 1;
}
