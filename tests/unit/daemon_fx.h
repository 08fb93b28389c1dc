/* SPDX-License-Identifier: MIT */
#ifndef IOU_DAEMON_FX_H
#define IOU_DAEMON_FX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "status.h"
#include "testutil.h"

struct fx {
	char *dir;
	char *conf;
	char *out;	/* stdout and stderr of the last command */
	char *err;
};

/* cmocka setup/teardown: a scratch directory and the paths in it */
int fx_setup(void **state);
int fx_teardown(void **state);
/* config with @D for the test directory; [daemon] dirs under it */
void write_conf(struct fx *f, const char *extra_daemon, const char *pipelines);
/* @argv run with stdout and stderr into f->out and f->err */
pid_t spawn(struct fx *f, char *const argv[]);
/* how a child is set up before it runs @argv (spawn_with()) */
struct spawn_opts {
	int rlimit;		/* a resource to limit (RLIMIT_*), with @lim; 0: none */
	unsigned long lim;
	bool nobody;		/* run as uid/gid 65534 (after the limit) */
	const char *const *env;	/* NAME=VALUE pairs to set, NULL-terminated */
};
pid_t spawn_with(struct fx *f, char *const argv[], const struct spawn_opts *o);
/*
 * the daemon as nobody, with @o's limit and environment: @argv[0] is replaced
 * by a copy nobody can run (fx_stage_bin()), and the test directory, config
 * and @readable files are opened to it; -2 when that cannot be (the caller
 * skips), else the exit status
 */
int run_as_nobody(struct fx *f, char *argv[], struct spawn_opts o, const char *const *readable);
/* exit status, or -1 on timeout (the child is killed then) */
int wait_exit(pid_t pid, int timeout_s);
int run_bin(struct fx *f, char *const argv[]);
/* a whole file as a string ("" if missing) */
char *slurp(const char *path);
bool file_has(const char *path, const char *needle);
/* @D/@name: @len bytes of seed @seed */
void make_src(struct fx *f, const char *name, size_t len, uint64_t seed);
/* @D/@a and @D/@b hold the same bytes */
void same_files(struct fx *f, const char *a, const char *b);
/* the pipeline's entry in the daemon's status file, if there is one yet */
bool status_of(struct fx *f, const char *name, struct status_entry *out);
bool wait_state(struct fx *f, const char *name, const char *state, int timeout_s);
bool wait_progress(struct fx *f, const char *name, uint64_t bytes, int timeout_s);

/*
 * @bin copied into the test directory, which is opened to other users, for a
 * test that runs it as another user: the checkout may be where they cannot
 * reach (/root is 0700). NULL when a directory above the test directory
 * keeps them out (the caller skips, saying so).
 */
char *fx_stage_bin(struct fx *f, const char *bin);

/* one pipeline copying @D/src to @D/out, the slow runs' subject */
#define BIG_COPY "[pipeline big]\ntransform = copy\nsource = @D/src\ndestination = @D/out\n"

#endif
