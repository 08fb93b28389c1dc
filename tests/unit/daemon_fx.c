// SPDX-License-Identifier: MIT
/*
 * The fixture of the tests that run the iou-offloadd binary: a scratch
 * directory, configs written into it, the daemon spawned with its output
 * captured, and its status file read back.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon_fx.h"

int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	f->dir = tu_mkdtemp("daemon");
	f->conf = tu_path(f->dir, "iou.conf");
	f->out = tu_path(f->dir, "stdout");
	f->err = tu_path(f->dir, "stderr");
	*state = f;
	return 0;
}

int fx_teardown(void **state)
{
	struct fx *f = *state;

	tu_rmrf(f->dir);
	free(f->dir);
	free(f->conf);
	free(f->out);
	free(f->err);
	free(f);
	return 0;
}

/* config with @D for the test directory; [daemon] dirs under it */
void write_conf(struct fx *f, const char *extra_daemon, const char *pipelines)
{
	size_t len = strlen(pipelines) * 4 + 4096;
	char *buf = malloc(len);
	int n;

	n = snprintf(buf, len, "[daemon]\nstate_dir = %s/state\nruntime_dir = %s/run\n"
		     "engine = uring\n%s", f->dir, f->dir, extra_daemon);
	tu_subst_dir(buf + n, len - n, pipelines, f->dir);
	assert_int_equal(tu_write_file(f->conf, buf, strlen(buf)), 0);
	free(buf);
}

pid_t spawn(struct fx *f, char *const argv[])
{
	return spawn_with(f, argv, &(struct spawn_opts){ 0 });
}

pid_t spawn_with(struct fx *f, char *const argv[], const struct spawn_opts *so)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int o = open(f->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(f->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(o, 1);
		dup2(e, 2);
		unsetenv("NOTIFY_SOCKET");
		unsetenv("WATCHDOG_USEC");
		for (const char *const *v = so->env; v && *v; v++)
			putenv((char *)*v);
		if (so->rlimit && setrlimit(so->rlimit, &(struct rlimit){ so->lim, so->lim }))
			_exit(126);
		if (so->nobody && (setgid(65534) || setuid(65534)))
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* exit status, or -1 on timeout (the child is killed then) */
int wait_exit(pid_t pid, int timeout_s)
{
	for (int i = 0; i < timeout_s * 100; i++) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

int run_bin(struct fx *f, char *const argv[])
{
	return wait_exit(spawn(f, argv), 120);
}

char *slurp(const char *path)
{
	size_t len;
	char *s = tu_read_file(path, &len);

	if (!s)
		return strdup("");
	s[len] = '\0';
	return s;
}

bool file_has(const char *path, const char *needle)
{
	char *s = slurp(path);
	bool found = strstr(s, needle) != NULL;

	if (!found)
		print_message("%s does not contain '%s'; it has:\n%s\n", path, needle, s);
	free(s);
	return found;
}

void make_src(struct fx *f, const char *name, size_t len, uint64_t seed)
{
	char *p = tu_path(f->dir, name);
	uint8_t *buf = malloc(len);

	tu_fill(buf, len, seed);
	assert_int_equal(tu_write_file(p, buf, len), 0);
	free(buf);
	free(p);
}

void same_files(struct fx *f, const char *a, const char *b)
{
	char *pa = tu_path(f->dir, a), *pb = tu_path(f->dir, b);
	size_t la, lb;
	void *da = tu_read_file(pa, &la), *db = tu_read_file(pb, &lb);

	assert_non_null(da);
	assert_non_null(db);
	assert_int_equal(la, lb);
	assert_true(memcmp(da, db, la) == 0);
	free(da);
	free(db);
	free(pa);
	free(pb);
}

/* the pipeline's entry in the daemon's status file, if there is one yet */
bool status_of(struct fx *f, const char *name, struct status_entry *out)
{
	char path[4096];
	struct status_report r;
	bool found = false;

	snprintf(path, sizeof(path), "%s/run/status", f->dir);
	if (status_read(path, &r))
		return false;
	for (int i = 0; i < r.nr; i++) {
		if (!strcmp(r.entries[i].name, name)) {
			*out = r.entries[i];
			found = true;
		}
	}
	status_report_free(&r);
	return found;
}

bool wait_state(struct fx *f, const char *name, const char *state, int timeout_s)
{
	struct status_entry e;

	for (int i = 0; i < timeout_s * 50; i++) {
		if (status_of(f, name, &e) && !strcmp(e.state, state))
			return true;
		usleep(20000);
	}
	return false;
}

bool wait_progress(struct fx *f, const char *name, uint64_t bytes, int timeout_s)
{
	struct status_entry e;

	for (int i = 0; i < timeout_s * 500; i++) {
		if (status_of(f, name, &e) && e.bytes_done >= bytes)
			return true;
		usleep(2000);
	}
	return false;
}

char *fx_stage_bin(struct fx *f, const char *bin)
{
	char *dst = tu_path(f->dir, "iou-offloadd"), *up = strdup(f->dir), *slash;
	size_t len;
	void *data;
	struct stat st;

	/* every directory above must let others through */
	while ((slash = strrchr(up, '/')) && slash != up) {
		*slash = '\0';
		if (stat(up, &st) < 0 || !(st.st_mode & S_IXOTH)) {
			print_message("%s does not let other users through\n", up);
			free(up);
			free(dst);
			return NULL;
		}
	}
	free(up);
	data = tu_read_file(bin, &len);
	assert_non_null(data);
	assert_int_equal(tu_write_file(dst, data, len), 0);
	free(data);
	assert_int_equal(chmod(dst, 0755), 0);
	assert_int_equal(chmod(f->dir, 0777), 0);
	return dst;
}

int run_as_nobody(struct fx *f, char *argv[], struct spawn_opts o, const char *const *readable)
{
	if (geteuid() != 0)
		return -2;	/* needs to become another user */
	argv[0] = fx_stage_bin(f, argv[0]);
	if (!argv[0])
		return -2;
	chmod(f->conf, 0644);
	for (const char *const *r = readable; r && *r; r++) {
		char *p = tu_path(f->dir, *r);

		chmod(p, 0644);
		free(p);
	}
	o.nobody = true;
	return wait_exit(spawn_with(f, argv, &o), 60);
}
