// SPDX-License-Identifier: MIT
/*
 * The iou-offloadd binary: command line, --check-config, --once, signals
 * (SIGHUP reload, SIGTERM drain, SIGKILL crash) and `status`.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pty.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"
#include "daemon_fx.h"

static int count_lines(const char *path, const char *needle);

#ifndef IOU_BIN
#error "IOU_BIN: path of the iou-offloadd binary under test"
#endif


/* ---- tests ---- */

static void help_explains_usage_and_exits_0(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "--help", NULL };

	assert_int_equal(run_bin(f, argv), 0);
	assert_true(file_has(f->out, "Usage:"));
	assert_true(file_has(f->out, "--check-config"));
	assert_true(file_has(f->out, "iou-offloadd status"));
}

static void unknown_option_exits_2(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "--frobnicate", NULL };

	assert_int_equal(run_bin(f, argv), 2);
	/* one line for the option, one to point at --help: not the whole usage */
	assert_true(file_has(f->err, "see --help"));
	assert_false(strstr(slurp(f->err), "Usage:"));
}

/* a binary file given as the config: the first 20 errors and a count, not thousands */
static void a_binary_config_prints_twenty_errors_and_a_count(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "--check-config", f->conf, NULL };
	char junk[64 << 10];

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (i % 7) ? (char)(i * 131) : '\n';
	assert_int_equal(tu_write_file(f->conf, junk, sizeof(junk)), 0);
	assert_int_equal(run_bin(f, argv), 78);
	assert_true(count_lines(f->err, f->conf) <= 22);
	assert_true(file_has(f->err, "more error(s) not shown"));
}

/* "destination = /a ;b" writes /a: legal INI, so a warning that says so */
static void a_value_cut_at_an_inline_comment_is_a_warning(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "--check-config", f->conf, NULL };

	write_conf(f, "", "[pipeline p]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/out ;old\n");
	assert_int_equal(run_bin(f, argv), 0);
	assert_true(file_has(f->err, "destination: ' ;' starts a comment"));
	assert_true(file_has(f->err, "(warning)"));
}

/* a warning at line 4 and an error at line 5 of f->conf, checked by @argv: in that order */
static void assert_warning_then_error(struct fx *f, char **argv)
{
	const char *warn, *err;
	char *text;

	write_conf(f, "", "[pipeline p]\ntransform = copy\nsource = /a\n"
		   "destination = /b ;old\nqueue_depth = lots\n");
	assert_int_equal(run_bin(f, argv), 78);
	text = slurp(f->err);
	warn = strstr(text, "' ;' starts a comment");
	err = strstr(text, "queue_depth = 'lots'");
	assert_non_null(warn);
	assert_non_null(err);
	assert_true(warn < err);
	free(text);
}

/* the warnings came after every error, whatever their lines */
static void warnings_and_errors_come_in_the_files_order(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "--check-config", f->conf, NULL };

	assert_warning_then_error(f, argv);
}

/* from standard input the findings are named <stdin>: the order held for files only */
static void warnings_and_errors_from_stdin_come_in_order(void **state)
{
	struct fx *f = *state;
	char cmd[9000];
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };

	snprintf(cmd, sizeof(cmd), "exec %s --check-config - < %s", IOU_BIN, f->conf);
	assert_warning_then_error(f, argv);
}

static void check_config_accepts_a_valid_file(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "--check-config", f->conf, NULL };

	write_conf(f, "", "[pipeline p]\ntransform = copy\nsource = /a\ndestination = /b\n");
	assert_int_equal(run_bin(f, argv), 0);
	assert_true(file_has(f->out, "OK, 1 pipeline(s)"));
}

/* without --open too: the start would refuse it, so the check must */
static void plain_check_config_refuses_a_destination_in_state_dir(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "--check-config", f->conf, NULL };
	char want[4200], state_dir[4096];

	snprintf(state_dir, sizeof(state_dir), "%s/state", f->dir);
	assert_int_equal(mkdir(state_dir, 0755), 0);
	write_conf(f, "", "[pipeline p]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/state/p.ckpt\n");
	assert_int_equal(run_bin(f, argv), 78);
	/* [daemon] takes lines 1-4, so the destination is on line 8 */
	snprintf(want, sizeof(want), "%s:8: [pipeline p]: destination %s/state/p.ckpt is in "
		 "state_dir %s/state", f->conf, f->dir, f->dir);
	assert_true(file_has(f->err, want));
	assert_false(file_has(f->out, "OK"));
}

static void check_config_summary_counts_devices(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "--check-config", f->conf, NULL };
	char leg[4200];

	for (int i = 0; i < 2; i++) {
		snprintf(leg, sizeof(leg), "%s/leg%d", f->dir, i);
		assert_int_equal(tu_write_file(leg, "", 0), 0);
		assert_int_equal(truncate(leg, 16 << 20), 0);
	}
	write_conf(f, "", "[device m]\ntarget = mirror\nbacking = @D/leg0\n"
		   "backing = @D/leg1\nsize = 16M\n");
	assert_int_equal(run_bin(f, argv), 0);
	assert_true(file_has(f->out, "OK, 0 pipeline(s), 1 device(s)"));
	assert_true(file_has(f->out, "mirror 2 member(s)"));
}

static void check_config_reports_file_line_and_exits_78(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "--check-config", f->conf, NULL };
	char want[4200];

	write_conf(f, "", "[pipeline p]\ntransform = copy\nsource = /a\ndestination = /b\n"
		   "queue_depth = lots\n");
	assert_int_equal(run_bin(f, argv), 78);
	/* [daemon] takes lines 1-4, so the bad key is on line 9 */
	snprintf(want, sizeof(want), "%s:9: [pipeline p]: queue_depth = 'lots': expected an "
		 "integer from 1 to 1024", f->conf);
	assert_true(file_has(f->err, want));
}

static void broken_config_refuses_to_start_with_the_message_and_exits_78(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, NULL };
	char want[4200];

	write_conf(f, "", "[pipeline p]\ntransform = copy\nsource = /a\n");
	assert_int_equal(run_bin(f, argv), 78);
	snprintf(want, sizeof(want), "%s:5: [pipeline p]: missing required key 'destination'",
		 f->conf);
	assert_true(file_has(f->err, want));
}

static void once_runs_every_pipeline_and_exits_0(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, "--once", NULL };

	make_src(f, "src", 3 << 20, 1);
	write_conf(f, "", "[pipeline a]\ntransform = copy\nsource = @D/src\ndestination = @D/a\n"
		   "[pipeline b]\ntransform = mirror\nsource = @D/src\ndestination = @D/b0\n"
		   "destination = @D/b1\n");
	assert_int_equal(run_bin(f, argv), 0);
	same_files(f, "src", "a");
	same_files(f, "src", "b0");
	same_files(f, "src", "b1");
}

/*
 * The bpf and loop engines' probe reads the kernel's BTF (thousands of 4 KiB
 * reads under sysfs): a daemon whose pipelines all run engine = uring skips
 * it, one with engine = auto probes and says what it found.
 */
static void the_kernel_is_probed_only_for_a_pipeline_that_may_use_bpf(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, "--once", "-l", "info", NULL };
	char *err;

	make_src(f, "src", 1 << 20, 3);
	write_conf(f, "", "[pipeline a]\ntransform = copy\nsource = @D/src\ndestination = @D/a\n");
	assert_int_equal(run_bin(f, argv), 0);
	err = slurp(f->err);
	if (strstr(err, "bpf engine"))
		fail_msg("an engine = uring daemon probed for the bpf engine:\n%s", err);
	free(err);
	write_conf(f, "", "[pipeline b]\ntransform = copy\nengine = auto\nsource = @D/src\n"
		   "destination = @D/b\n");
	assert_int_equal(run_bin(f, argv), 0);
	assert_true(file_has(f->err, "bpf engine"));
	same_files(f, "src", "a");
	same_files(f, "src", "b");
}

/*
 * The main thread waits for signals in 500 ms ticks; a pipeline that ends
 * wakes it, so --once returns when the copy is done, not at the next tick
 * (before, every run lasted at least 500 ms). Best of 3 against a loaded host.
 */
static void once_exits_when_its_pipeline_ends_not_at_the_next_tick(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	double best = 1e9;

	make_src(f, "src", 64 << 10, 7);
	write_conf(f, "", "[pipeline a]\ntransform = copy\nsource = @D/src\ndestination = @D/a\n");
	for (int i = 0; i < 3; i++) {
		struct timespec t0, t1;
		double s;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		assert_int_equal(run_bin(f, argv), 0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		if (s < best)
			best = s;
	}
	same_files(f, "src", "a");
	if (best >= 0.25)
		fail_msg("--once took %.3f s at best for a 64 KiB copy: it waits for a tick", best);
}

static void once_exits_1_when_a_pipeline_fails(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, "--once", NULL };

	write_conf(f, "", "[pipeline a]\ntransform = copy\nsource = @D/missing\n"
		   "destination = @D/a\n");
	assert_int_equal(run_bin(f, argv), 1);
	assert_true(file_has(f->err, "cannot open source"));
}

static void status_command_prints_each_pipeline(void **state)
{
	struct fx *f = *state;
	char *run_argv[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *st_argv[] = { IOU_BIN, "status", "-c", f->conf, NULL };

	make_src(f, "src", 1 << 20, 2);
	write_conf(f, "", "[pipeline alpha]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/a\n");
	assert_int_equal(run_bin(f, run_argv), 0);
	/* the daemon has exited: 3, "not running", as systemctl status says it */
	assert_int_equal(run_bin(f, st_argv), 3);
	assert_true(file_has(f->out, "PIPELINE"));
	assert_true(file_has(f->out, "alpha"));
	assert_true(file_has(f->out, "finished"));
	assert_true(file_has(f->out, "uring"));
	assert_true(file_has(f->out, "not running"));
}

static void sighup_adds_a_pipeline_and_rejects_a_broken_config(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, NULL };
	pid_t pid;

	make_src(f, "src", 2 << 20, 3);
	write_conf(f, "", "[pipeline one]\ntransform = copy\nsource = @D/src\ndestination = @D/one\n");
	pid = spawn(f, argv);
	assert_true(wait_state(f, "one", "finished", 30));

	write_conf(f, "", "[pipeline one]\ntransform = copy\nsource = @D/src\ndestination = @D/one\n"
		   "[pipeline two]\ntransform = copy\nsource = @D/src\ndestination = @D/two\n");
	kill(pid, SIGHUP);
	assert_true(wait_state(f, "two", "finished", 30));
	same_files(f, "src", "two");

	/* a bad config is refused; the daemon and its pipelines carry on */
	write_conf(f, "", "[pipeline three]\ntransform = teleport\n");
	kill(pid, SIGHUP);
	for (int i = 0; i < 200; i++) {
		char *err = slurp(f->err);
		bool seen = strstr(err, "reload rejected") != NULL;

		free(err);
		if (seen)
			break;
		usleep(20000);
	}
	assert_true(file_has(f->err, "reload rejected"));
	assert_true(file_has(f->err, "transform = 'teleport'"));
	assert_int_equal(kill(pid, 0), 0);
	struct status_entry e;
	assert_true(status_of(f, "two", &e));
	assert_false(status_of(f, "three", &e));

	kill(pid, SIGTERM);
	assert_int_equal(wait_exit(pid, 30), 0);
}

/*
 * A run that ends leaves its fixed buffers, zeroed, for the next run of the
 * same layout: a pipeline added by reload maps none. The second source ends
 * short of its last block, so a stale byte left in the buffers would show.
 */
static void reload_with_buffer_cache(struct fx *f, const char *daemon_keys, bool reused)
{
	char *argv[] = { IOU_BIN, "-c", f->conf, NULL };
	const char *one = "[pipeline one]\ntransform = copy\nsource = @D/src\ndestination = @D/one\n";
	char both[512];
	pid_t pid;

	make_src(f, "src", 2 << 20, 3);
	make_src(f, "src2", (2 << 20) - 1000, 4);
	write_conf(f, daemon_keys, one);
	pid = spawn(f, argv);
	assert_true(wait_state(f, "one", "finished", 30));
	snprintf(both, sizeof(both), "%s[pipeline two]\ntransform = copy\nsource = @D/src2\n"
		 "destination = @D/two\n", one);
	write_conf(f, daemon_keys, both);
	kill(pid, SIGHUP);
	assert_true(wait_state(f, "two", "finished", 30));
	same_files(f, "src2", "two");
	assert_true(file_has(f->err, "pipeline one: copy"));
	assert_int_equal(file_has(f->err, "pipeline two: copy 2096152 bytes in 2 blocks of "
				  "1048576, 2 chains, uring engine; ready in"), true);
	assert_int_equal(file_has(f->err, "with buffers reused"), reused);
	kill(pid, SIGTERM);
	assert_int_equal(wait_exit(pid, 30), 0);
}

static void a_pipeline_added_by_reload_reuses_the_buffers_of_one_that_ended(void **state)
{
	reload_with_buffer_cache(*state, "", true);
}

static void buffer_cache_0_keeps_no_buffers_between_runs(void **state)
{
	reload_with_buffer_cache(*state, "buffer_cache = 0\n", false);
}

static void sigterm_mid_copy_checkpoints_and_restart_finishes(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, NULL };
	char *once[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *state_dir = tu_path(f->dir, "state");
	struct checkpoint ck;
	struct status_entry e;
	pid_t pid;

	make_src(f, "src", 256 << 20, 4);
	/* small blocks and one chain: slow enough to stop half way */
	write_conf(f, "block_size = 4K\nqueue_depth = 1\ncheckpoint_interval = 256K\n",
		   BIG_COPY);
	pid = spawn(f, argv);
	assert_true(wait_progress(f, "big", 4 << 20, 60));
	kill(pid, SIGTERM);
	assert_int_equal(wait_exit(pid, 60), 0);
	assert_int_equal(checkpoint_load(state_dir, "big", &ck), 0);
	if (ck.state == CKPT_FINISHED) {
		print_message("skipped: the copy finished before SIGTERM arrived\n");
		free(state_dir);
		skip();
	}
	assert_int_equal(ck.state, CKPT_STOPPED);
	assert_true(ck.done > 0 && ck.done < (256 << 20));
	assert_true(file_has(f->err, "stopped at byte"));

	assert_int_equal(run_bin(f, once), 0);
	assert_true(status_of(f, "big", &e));
	assert_true(e.bytes_resumed == ck.done);
	same_files(f, "src", "out");
	free(state_dir);
}

/*
 * --once answers "is the copy done?": a stop part way is exit 3 with a
 * resumable checkpoint, never 0. Slow settings so that the signal lands
 * mid-copy; if the copy still wins the race, that is a skip, not a pass.
 */
static void once_stopped_part_way_exits_3(struct fx *f, int sig)
{
	char *argv[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *state_dir = tu_path(f->dir, "state");
	struct checkpoint ck;
	pid_t pid;
	int rc;

	make_src(f, "src", 256 << 20, 4);
	write_conf(f, "block_size = 4K\nqueue_depth = 1\ncheckpoint_interval = 256K\n",
		   BIG_COPY);
	pid = spawn(f, argv);
	assert_true(wait_progress(f, "big", 4 << 20, 60));
	kill(pid, sig);
	rc = wait_exit(pid, 60);
	assert_int_equal(checkpoint_load(state_dir, "big", &ck), 0);
	free(state_dir);
	if (ck.state == CKPT_FINISHED) {
		print_message("skipped: the copy finished before the signal arrived\n");
		skip();
	}
	assert_int_equal(ck.state, CKPT_STOPPED);
	assert_int_equal(rc, 3);
	assert_true(file_has(f->err, "stopped before every pipeline finished"));
}

static void once_stopped_part_way_by_sigterm_exits_3(void **state)
{
	once_stopped_part_way_exits_3(*state, SIGTERM);
}

static void once_stopped_part_way_by_sigint_exits_3(void **state)
{
	once_stopped_part_way_exits_3(*state, SIGINT);
}

/* every file under @dir named @name has the content of seed @seed */
static void file_is(struct fx *f, const char *name, size_t len, uint64_t seed)
{
	char *p = tu_path(f->dir, name);
	uint8_t *want = malloc(len);
	size_t got_len;
	void *got = tu_read_file(p, &got_len);

	tu_fill(want, len, seed);
	assert_non_null(got);
	assert_int_equal(got_len, len);
	assert_true(memcmp(got, want, len) == 0);
	free(got);
	free(want);
	free(p);
}

/*
 * Two pipelines writing one file (here through a hard link) both "finished"
 * over a destination that matched neither source. Refused at check time and
 * at start, before anything is opened for writing.
 */
static void two_pipelines_with_one_destination_are_refused_and_nothing_is_written(void **state)
{
	struct fx *f = *state;
	char *check[] = { IOU_BIN, "--check-config", f->conf, NULL };
	char *once[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *d = tu_path(f->dir, "d"), *hl = tu_path(f->dir, "d-link"), *st = tu_path(f->dir,
										       "state");
	struct stat sb;

	make_src(f, "s1", 1 << 20, 11);
	make_src(f, "s2", 1 << 20, 12);
	make_src(f, "d", 3 << 19, 13);
	assert_int_equal(link(d, hl), 0);
	write_conf(f, "", "[pipeline a]\ntransform = copy\nsource = @D/s1\ndestination = @D/d\n"
		   "[pipeline b]\ntransform = copy\nsource = @D/s2\ndestination = @D/d-link\n");
	assert_int_equal(run_bin(f, check), 78);
	assert_true(file_has(f->err, ":12: [pipeline b]: destination = "));
	assert_true(file_has(f->err, "the same file that pipeline a writes"));
	assert_int_equal(run_bin(f, once), 78);
	file_is(f, "d", 3 << 19, 13);
	file_is(f, "s1", 1 << 20, 11);
	file_is(f, "s2", 1 << 20, 12);
	assert_true(stat(st, &sb) < 0 && errno == ENOENT);	/* not even a checkpoint */
	free(d);
	free(hl);
	free(st);
}

/* a reload that adds a writer of a running pipeline's destination is rejected */
static void reload_adding_a_writer_of_a_running_destination_is_rejected(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, NULL };
	char *once[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	const char *slow = "block_size = 4K\nqueue_depth = 1\n";
	const char *big = BIG_COPY;
	char both[512];
	struct status_entry e;
	pid_t pid;

	make_src(f, "src", 256 << 20, 21);
	make_src(f, "src2", 1 << 20, 22);
	write_conf(f, slow, big);
	pid = spawn(f, argv);
	assert_true(wait_progress(f, "big", 1 << 20, 60));
	snprintf(both, sizeof(both), "%s[pipeline intruder]\ntransform = copy\n"
		 "source = @D/src2\ndestination = @D/out\n", big);
	write_conf(f, slow, both);
	kill(pid, SIGHUP);
	for (int i = 0; i < 500 && !strstr(slurp(f->err), "reload rejected"); i++)
		usleep(20000);
	assert_true(file_has(f->err, "reload rejected"));
	assert_true(file_has(f->err, "that pipeline big writes"));
	assert_false(status_of(f, "intruder", &e));
	kill(pid, SIGTERM);
	assert_int_equal(wait_exit(pid, 60), 0);
	write_conf(f, "", big);
	assert_int_equal(run_bin(f, once), 0);
	same_files(f, "src", "out");
}

/*
 * The run-time guard: open file description locks. A second daemon (its own
 * state) pointed at the file the first is writing fails its pipeline at open
 * and writes nothing; the first one's copy comes out whole. The first one
 * is stopped (SIGSTOP) mid-copy, holding its locks, so it is still running
 * when the second has given up waiting for the lock (3 s), however fast the
 * machine or its checkpoint pacing.
 */
static void a_second_daemon_cannot_write_what_the_first_is_writing(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, NULL };
	char *once[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *conf2 = tu_path(f->dir, "second.conf");
	char *second[] = { IOU_BIN, "-c", conf2, "--once", NULL };
	const char *big = BIG_COPY;
	struct status_entry e;
	char buf[2048];
	pid_t pid;

	make_src(f, "src", 64 << 20, 31);
	make_src(f, "src2", 1 << 20, 32);
	write_conf(f, "block_size = 4K\nqueue_depth = 1\ncheckpoint_interval = 4K\n", big);
	pid = spawn(f, argv);
	assert_true(wait_progress(f, "big", 256 << 10, 60));
	kill(pid, SIGSTOP);
	snprintf(buf, sizeof(buf), "[daemon]\nstate_dir = %s/state2\nruntime_dir = %s/run2\n"
		 "engine = uring\n[pipeline other]\ntransform = copy\nsource = %s/src2\n"
		 "destination = %s/out\ntruncate = yes\n", f->dir, f->dir, f->dir, f->dir);
	assert_int_equal(tu_write_file(conf2, buf, strlen(buf)), 0);
	assert_int_equal(run_bin(f, second), 1);
	assert_true(file_has(f->err, "destination"));
	assert_true(file_has(f->err, "is in use"));
	assert_true(status_of(f, "big", &e));
	assert_string_equal(e.state, "running");
	kill(pid, SIGTERM);
	kill(pid, SIGCONT);
	assert_int_equal(wait_exit(pid, 60), 0);
	write_conf(f, "", big);
	assert_int_equal(run_bin(f, once), 0);
	same_files(f, "src", "out");
	free(conf2);
}

/* lines of @path that contain @needle */
static int count_lines(const char *path, const char *needle)
{
	char *s = slurp(path), *line, *save = NULL;
	int n = 0;

	for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		n += strstr(line, needle) != NULL;
	free(s);
	return n;
}

static bool exists(struct fx *f, const char *name)
{
	char *p = tu_path(f->dir, name);
	struct stat st;
	bool e = stat(p, &st) == 0;

	free(p);
	return e;
}

/* a destripe whose sources are too short fails its checks: no 0-byte destination */
static void a_refused_pipeline_creates_no_destination(void **state)
{
	struct fx *f = *state;
	char *check[] = { IOU_BIN, "-c", f->conf, "--once", NULL };

	make_src(f, "s0", 128 << 10, 41);
	make_src(f, "s1", 32 << 10, 42);
	write_conf(f, "", "[pipeline back]\ntransform = gather\ngather = destripe\n"
		   "stripe_unit = 64K\nlength = 256K\nsource = @D/s0\nsource = @D/s1\n"
		   "destination = @D/joined\n");
	assert_int_equal(run_bin(f, check), 1);
	assert_true(file_has(f->err, "gather = destripe: source"));
	assert_false(exists(f, "joined"));
	file_is(f, "s0", 128 << 10, 41);
	file_is(f, "s1", 32 << 10, 42);
}

/*
 * A destination file system too small for the copy: one clear line per
 * attempt, before anything is created (was: the copy ran into ENOSPC and
 * logged a line per request in flight, 16 per attempt). Needs a small file
 * system of its own: a 4 MiB tmpfs, which only root can mount.
 */
static void a_full_destination_is_refused_up_front_in_one_line(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *mnt = tu_path(f->dir, "small");

	assert_int_equal(mkdir(mnt, 0755), 0);
	if (mount("iou-test", mnt, "tmpfs", 0, "size=4m")) {
		free(mnt);
		skip();
	}
	make_src(f, "src", 8 << 20, 43);
	write_conf(f, "retries = 2\nretry_delay = 0\n",
		   "[pipeline a]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/small/out\n");
	assert_int_equal(run_bin(f, argv), 1);
	umount2(mnt, MNT_DETACH);
	assert_int_equal(count_lines(f->err, "not enough space for destination"), 3);
	assert_true(file_has(f->err, "the copy needs 8.0 MiB more, its file system has"));
	assert_int_equal(count_lines(f->err, "write to"), 0);
	free(mnt);
}

/* an option or word meant for a command started the daemon and ran its pipelines */
static void a_command_option_without_its_command_runs_nothing(void **state)
{
	struct fx *f = *state;
	char *json[] = { IOU_BIN, "-c", f->conf, "--json", NULL };
	char *sfile[] = { IOU_BIN, "-c", f->conf, "-s", "/nonexistent/status", NULL };
	char *udev[] = { IOU_BIN, "-c", f->conf, "udev-name", NULL };

	make_src(f, "src", 64 << 10, 45);
	write_conf(f, "", "[pipeline p]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/out\n");
	assert_int_equal(run_bin(f, json), 2);
	assert_true(file_has(f->err, "--json goes with status or --check-config"));
	assert_int_equal(run_bin(f, sfile), 2);
	assert_int_equal(run_bin(f, udev), 2);
	assert_true(file_has(f->err, "which disk?"));
	assert_false(exists(f, "out"));
}

/* "size 209715200 -> 209715200" named a change that was not there */
static void a_source_written_mid_copy_says_what_moved(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *src = tu_path(f->dir, "src");
	struct timespec later[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = 1000000000 } };
	pid_t pid;
	int rc;


	make_src(f, "src", 256 << 20, 46);
	/* small blocks, one chain, frequent checkpoints: slow enough to be caught half way */
	write_conf(f, "block_size = 4K\nqueue_depth = 1\ncheckpoint_interval = 256K\n", BIG_COPY);
	pid = spawn(f, argv);
	assert_true(wait_progress(f, "big", 1 << 20, 60));
	/* rewritten in place: the same size, another mtime */
	assert_int_equal(utimensat(AT_FDCWD, src, later, 0), 0);
	rc = wait_exit(pid, 120);
	if (rc == 0) {
		print_message("skipped: the copy finished before the source was written\n");
		free(src);
		skip();
	}
	assert_int_equal(rc, 1);
	assert_true(file_has(f->err, "changed while it was being copied (written to: its mtime "
			     "moved, same size)"));
	free(src);
}

/*
 * reload -c OTHER exited 0 while the daemon read its own file again;
 * "notapid" was "no pid given"
 */
static void reload_refuses_another_file_and_a_bad_pid(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, NULL };
	char *other = tu_path(f->dir, "other.conf");
	char *reload_other[] = { IOU_BIN, "reload", "-c", other, NULL };
	char *reload_bad_pid[] = { IOU_BIN, "reload", "-c", f->conf, "notapid", NULL };
	char *text;
	size_t len;
	pid_t pid;

	make_src(f, "src", 64 << 20, 47);
	write_conf(f, "block_size = 4K\nqueue_depth = 1\n", BIG_COPY);
	text = tu_read_file(f->conf, &len);
	assert_int_equal(tu_write_file(other, text, len), 0);
	pid = spawn(f, argv);
	assert_true(wait_progress(f, "big", 1 << 20, 60));
	assert_int_equal(run_bin(f, reload_other), 1);
	assert_true(file_has(f->err, "a reload reads the daemon's own file again"));
	assert_int_equal(run_bin(f, reload_bad_pid), 2);
	assert_true(file_has(f->err, "'notapid' is not a pid"));
	kill(pid, SIGTERM);
	assert_int_equal(wait_exit(pid, 60), 0);
	free(text);
	free(other);
}

/* --open named only the first O_DIRECT finding of a pipeline: each at its key's line */
static void check_config_open_names_every_alignment_finding_of_a_pipeline(void **state)
{
	struct fx *f = *state;
	char *open_[] = { IOU_BIN, "--check-config", "--open", f->conf, NULL };
	char want[4300];

	make_src(f, "src", 1 << 20, 63);
	write_conf(f, "", "[pipeline p]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/out\ndirect = yes\noffset = 100\ndest_offset = 1000\n");
	assert_int_equal(run_bin(f, open_), 78);
	/* [daemon] takes lines 1-4 */
	snprintf(want, sizeof(want), "%s:10: [pipeline p]: direct = yes: offset 100 is not a "
		 "multiple of the O_DIRECT alignment", f->conf);
	assert_true(file_has(f->err, want));
	snprintf(want, sizeof(want), "%s:11: [pipeline p]: direct = yes: dest_offset 1000 is "
		 "not a multiple of the O_DIRECT alignment", f->conf);
	assert_true(file_has(f->err, want));
	assert_true(file_has(f->err, "1 pipeline(s) would not start"));
}

/*
 * --open passed fixed buffers past the machine's RAM as root (CAP_IPC_LOCK
 * skips RLIMIT_MEMLOCK): the start could only fail
 */
static void check_config_open_refuses_buffers_past_ram(void **state)
{
	struct fx *f = *state;
	char *open_[] = { IOU_BIN, "--check-config", "--open", f->conf, NULL };
	uint64_t ram = (uint64_t)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE);
	/* 1024 blocks of 256 MiB a pipeline at most: a sparse source twice RAM */
	uint64_t len = (2 * ram + (256 << 20) - 1) / (256 << 20) * (256 << 20);
	char *src = tu_path(f->dir, "src");
	int fd;

	if (len > (256ULL << 30))
		skip();
	fd = open(src, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, len), 0);
	close(fd);
	write_conf(f, "", "[pipeline big]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/out\nblock_size = 256M\nqueue_depth = 1024\n");
	assert_int_equal(run_bin(f, open_), 78);
	assert_true(file_has(f->err, "of fixed buffers, locked memory, more than the"));
	assert_true(file_has(f->err, "MiB of RAM this machine has: lower queue_depth or "
			     "block_size"));
	free(src);
}

/*
 * dest_offset = 17T on ext4 passed --open, and the start failed with EFBIG:
 * the file system's largest file is checked, at the key's line
 */
static void check_config_open_refuses_a_destination_past_the_largest_file(void **state)
{
	struct fx *f = *state;
	char *open_[] = { IOU_BIN, "--check-config", "--open", f->conf, NULL };
	int fd = open(f->dir, O_TMPFILE | O_WRONLY, 0600);
	char want[4300];

	/* only where the test directory's file system stops short of 17 TiB (ext4) */
	if (fd < 0 || ftruncate(fd, 17LL << 40) == 0 || errno != EFBIG) {
		if (fd >= 0)
			close(fd);
		skip();
	}
	close(fd);
	make_src(f, "src", 1 << 20, 64);
	write_conf(f, "", "[pipeline p]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/out\ndest_offset = 17T\n");
	assert_int_equal(run_bin(f, open_), 78);
	snprintf(want, sizeof(want), "%s:9: [pipeline p]: dest_offset 18691697672192 (17.0 TiB): "
		 "destination %s/out would end at byte 18691698720768, past the largest file its "
		 "file system holds (", f->conf, f->dir);
	assert_true(file_has(f->err, want));
	assert_false(exists(f, "out"));
}

/*
 * The status file named a relative config as it was given: `reload` from
 * another directory could not compare it, took any file for the daemon's
 * own and exited 0 while the daemon read its own again
 */
static void reload_from_another_directory_knows_a_relative_config(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", "iou.conf", NULL };
	char *other = tu_path(f->dir, "other.conf"), *status = tu_path(f->dir, "run/status");
	char *reload_other[] = { IOU_BIN, "reload", "-c", other, NULL };
	char *reload_own[] = { IOU_BIN, "reload", "-c", f->conf, NULL };
	char want[4200], cwd[4096], *text;
	size_t len;
	pid_t pid;

	make_src(f, "src", 64 << 20, 48);
	write_conf(f, "block_size = 4K\nqueue_depth = 1\n", BIG_COPY);
	text = tu_read_file(f->conf, &len);
	assert_int_equal(tu_write_file(other, text, len), 0);
	/* started from its directory, by a relative name */
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(f->dir), 0);
	pid = spawn(f, argv);
	assert_int_equal(chdir(cwd), 0);
	assert_true(wait_progress(f, "big", 1 << 20, 60));
	snprintf(want, sizeof(want), "config=%s\n", f->conf);
	assert_true(file_has(status, want));
	assert_int_equal(run_bin(f, reload_other), 1);
	assert_true(file_has(f->err, "a reload reads the daemon's own file again"));
	assert_int_equal(run_bin(f, reload_own), 0);
	kill(pid, SIGTERM);
	assert_int_equal(wait_exit(pid, 60), 0);
	free(text);
	free(other);
	free(status);
}

/* a FIFO as the configuration: refused at once (open waited for a writer) */
static void a_fifo_as_the_config_is_refused_not_waited_on(void **state)
{
	struct fx *f = *state;
	char *fifo = tu_path(f->dir, "fifo.conf");
	char *check[] = { IOU_BIN, "--check-config", fifo, NULL };
	char *run[] = { IOU_BIN, "-c", fifo, "--once", NULL };

	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(wait_exit(spawn(f, check), 5), 78);
	assert_true(file_has(f->err, "fifo.conf: not a regular file (a FIFO): a configuration "
			     "is a file, or standard input with -c -"));
	assert_int_equal(wait_exit(spawn(f, run), 5), 78);
	assert_true(file_has(f->err, "not a regular file (a FIFO)"));
	free(fifo);
}

/* SigBlk of @pid in /proc holds SIGHUP: the daemon has blocked its signals */
static bool hup_blocked(pid_t pid)
{
	char path[64], *text, *blk;
	bool yes;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	text = slurp(path);
	blk = strstr(text, "SigBlk:");
	yes = blk && strtoull(blk + 7, NULL, 16) & (1ULL << (SIGHUP - 1));
	free(text);
	return yes;
}

/*
 * -c - reads its configuration to the end before it starts: a SIGHUP and a
 * SIGTERM sent meanwhile are handled by the main loop (ignored, a stop),
 * not the defaults that killed the daemon (exit 129)
 */
static void a_signal_while_the_config_is_read_waits_for_the_main_loop(void **state)
{
	struct fx *f = *state;
	char *fifo = tu_path(f->dir, "in"), cmd[9000], *text;
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	size_t len;
	pid_t pid;
	int w;

	make_src(f, "src", 64 << 20, 45);
	write_conf(f, "block_size = 4K\nqueue_depth = 1\n", BIG_COPY);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* read and write: opening it does not wait, and its close is the end */
	w = open(fifo, O_RDWR | O_CLOEXEC);
	assert_true(w >= 0);
	snprintf(cmd, sizeof(cmd), "exec %s -c - --once < %s", IOU_BIN, fifo);
	pid = spawn(f, argv);
	for (int i = 0; i < 200 && !hup_blocked(pid); i++)
		usleep(10000);
	kill(pid, SIGHUP);
	kill(pid, SIGTERM);
	text = tu_read_file(f->conf, &len);
	assert_non_null(text);
	assert_int_equal(write(w, text, len), (ssize_t)len);
	close(w);
	assert_int_equal(wait_exit(pid, 30), 3);
	assert_true(file_has(f->err, "a configuration from stdin has no file to read again; "
			     "SIGHUP ignored"));
	assert_true(file_has(f->err, "stopped before every pipeline finished"));
	free(text);
	free(fifo);
}

/*
 * dest_offset past the end of the destination leaves a hole the copy never
 * writes: only the bytes it writes need room (was: 64 MiB + 2 MiB needed of
 * a 4 MiB file system, and refused).
 */
static void a_dest_offset_hole_needs_no_space(void **state)
{
	struct fx *f = *state;
	char *check[] = { IOU_BIN, "--check-config", "--open", f->conf, NULL };
	char *argv[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *mnt = tu_path(f->dir, "small"), *out = tu_path(mnt, "out");
	struct stat st;

	assert_int_equal(mkdir(mnt, 0755), 0);
	if (mount("iou-test", mnt, "tmpfs", 0, "size=4m")) {
		free(out);
		free(mnt);
		skip();
	}
	make_src(f, "src", 2 << 20, 44);
	write_conf(f, "", "[pipeline a]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/small/out\ndest_offset = 64M\n");
	assert_int_equal(run_bin(f, check), 0);
	assert_int_equal(run_bin(f, argv), 0);
	assert_int_equal(stat(out, &st), 0);
	umount2(mnt, MNT_DETACH);
	assert_int_equal(st.st_size, (64 << 20) + (2 << 20));
	assert_true(st.st_blocks * 512 <= 3 << 20);
	free(out);
	free(mnt);
}

/*
 * When writes do fail, the lowest failing block is logged in full (the one
 * where the failure starts) and what fails beside it (every request in
 * flight) as one summary line. RLIMIT_FSIZE makes
 * every write past 1 MiB fail with EFBIG, whatever the file system's room.
 */
static void write_errors_behind_the_first_are_one_summary_line(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	struct rlimit rl = { 1 << 20, 1 << 20 };
	pid_t pid;

	make_src(f, "src", 16 << 20, 44);
	write_conf(f, "block_size = 64K\nqueue_depth = 32\nretries = 0\n",
		   "[pipeline a]\ntransform = copy\nsource = @D/src\ndestination = @D/out\n");
	signal(SIGXFSZ, SIG_IGN);	/* inherited through exec: EFBIG, not a signal */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setrlimit(RLIMIT_FSIZE, &rl);
		int o = open(f->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(f->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(o, 1);
		dup2(e, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	assert_int_equal(wait_exit(pid, 120), 1);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(count_lines(f->err, "write to"), 1);
	assert_true(file_has(f->err, "File too large"));
	/* whatever order the blocks in flight complete in: where the failure starts */
	assert_true(file_has(f->err, "at offset 1048576 (65536 bytes) failed"));
	assert_true(count_lines(f->err, "more request(s) failed beside that") <= 1);
}

/* ---- progress that tells the truth ---- */

/*
 * After a resume the rate counts from the resume point: it cannot exceed
 * what this run moved over a one-second window (it once showed the resumed
 * bytes as if copied in the first second: 255 MiB/s where 17 was real).
 */
static void resumed_run_counts_its_rate_from_the_resume_point(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, NULL };
	struct status_entry e;
	bool seen = false;
	pid_t pid;

	make_src(f, "src", 256 << 20, 51);
	write_conf(f, "block_size = 4K\nqueue_depth = 1\ncheckpoint_interval = 256K\n",
		   BIG_COPY);
	pid = spawn(f, argv);
	assert_true(wait_progress(f, "big", 32 << 20, 60));
	kill(pid, SIGTERM);
	assert_int_equal(wait_exit(pid, 60), 0);
	/* slower now: every 4K block flushed, so the rate is small and the resume large */
	write_conf(f, "block_size = 4K\nqueue_depth = 1\ncheckpoint_interval = 4K\n",
		   BIG_COPY);
	pid = spawn(f, argv);
	for (int i = 0; i < 500 && !seen; i++) {
		usleep(20000);
		seen = status_of(f, "big", &e) && !strcmp(e.state, "running") && e.rate_bps > 0;
	}
	kill(pid, SIGTERM);
	assert_int_equal(wait_exit(pid, 60), 0);
	if (!seen)
		fail_msg("no rate was reported while the resumed copy ran");
	assert_true(e.bytes_resumed >= 16 << 20);
	if (e.rate_bps > (e.bytes_done - e.bytes_resumed) / 0.9 + 1)
		fail_msg("rate %.0f B/s, but only %llu bytes moved since the resume", e.rate_bps,
			 (unsigned long long)(e.bytes_done - e.bytes_resumed));
}

/* failed before it knew its size: no "0 B / 0 B 100.0%" */
static void status_of_a_pipeline_that_failed_at_open_shows_no_percentage(void **state)
{
	struct fx *f = *state;
	char *once[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *st[] = { IOU_BIN, "status", "-c", f->conf, NULL };

	write_conf(f, "", "[pipeline a]\ntransform = copy\nsource = @D/missing\n"
		   "destination = @D/a\n");
	assert_int_equal(run_bin(f, once), 1);
	assert_int_equal(run_bin(f, st), 3);
	assert_true(file_has(f->out, "failed"));
	assert_false(strstr(slurp(f->out), "100.0%"));
	assert_true(file_has(f->out, "error: cannot open source"));
}

/* kill -9 leaves "running" in the status file: `status` says what it means */
static void status_after_kill_9_says_the_pipeline_was_interrupted(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, NULL };
	char *st[] = { IOU_BIN, "status", "-c", f->conf, NULL };
	pid_t pid;

	make_src(f, "src", 64 << 20, 52);
	write_conf(f, "block_size = 4K\nqueue_depth = 1\ncheckpoint_interval = 4K\n",
		   BIG_COPY);
	pid = spawn(f, argv);
	assert_true(wait_state(f, "big", "running", 60));
	kill(pid, SIGKILL);
	wait_exit(pid, 30);
	assert_int_equal(run_bin(f, st), 3);
	assert_true(file_has(f->out, "not running"));
	assert_true(file_has(f->out, "interrupted"));
	assert_true(file_has(f->out, "a restart resumes at byte"));
	assert_int_equal(count_lines(f->out, "big              interrupted"), 1);
}

/* off a terminal, --once logs a progress line with rate and ETA every interval */
static void once_off_a_terminal_logs_progress_with_an_eta(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *st[] = { IOU_BIN, "status", "-c", f->conf, NULL };
	bool seen = false;
	pid_t pid;

	make_src(f, "src", 64 << 20, 53);
	write_conf(f, "progress_interval = 1\nblock_size = 4K\nqueue_depth = 1\n"
		   "checkpoint_interval = 4K\n",
		   BIG_COPY);
	pid = spawn(f, argv);
	for (int i = 0; i < 1000 && !seen; i++) {
		char *err = slurp(f->err);

		seen = strstr(err, "progress: big: ") && strstr(err, "ETA ");
		free(err);
		usleep(10000);
	}
	/* `status` of the running daemon has the ETA column filled */
	assert_int_equal(wait_exit(spawn(f, st), 30), 0);
	kill(pid, SIGTERM);
	assert_int_equal(wait_exit(pid, 60), 3);
	assert_true(seen);
}

/* on a terminal, --once redraws one progress line in place (dd status=progress) */
static void once_on_a_terminal_redraws_one_progress_line(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char buf[65536];
	size_t len = 0;
	int master, draws = 0;
	pid_t pid;

	make_src(f, "src", 64 << 20, 54);
	write_conf(f, "block_size = 4K\nqueue_depth = 1\ncheckpoint_interval = 4K\n",
		   BIG_COPY);
	pid = forkpty(&master, NULL, NULL, NULL);
	assert_true(pid >= 0);
	if (pid == 0) {
		unsetenv("JOURNAL_STREAM");
		execv(argv[0], argv);
		_exit(127);
	}
	fcntl(master, F_SETFL, O_NONBLOCK);
	for (int i = 0; i < 1000 && draws < 2; i++) {
		ssize_t n = read(master, buf + len, sizeof(buf) - 1 - len);

		if (n > 0)
			len += n;
		buf[len] = '\0';
		draws = 0;
		for (char *p = buf; (p = strstr(p, "\r\033[Kbig: ")); p++)
			draws++;
		usleep(10000);
	}
	kill(pid, SIGTERM);
	wait_exit(pid, 60);
	close(master);
	if (draws < 2)
		fail_msg("expected the progress line drawn twice; the terminal got:\n%s", buf);
	assert_true(strstr(buf, "MiB/s") != NULL);
}

/* as a normal user, the defaults are the XDG directories (were /var/lib, /run) */
static void a_normal_user_runs_with_xdg_directories_by_default(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	const char *const readable[] = { "src", NULL };
	char buf[1024], path[4200], xs[4200], xr[4200];
	const char *env[] = { xs, xr, NULL };
	struct stat st;
	int rc;

	make_src(f, "src", 1 << 20, 55);
	snprintf(buf, sizeof(buf), "[pipeline a]\nengine = uring\ntransform = copy\n"
		 "source = %s/src\ndestination = %s/out\n", f->dir, f->dir);
	assert_int_equal(tu_write_file(f->conf, buf, strlen(buf)), 0);
	snprintf(xs, sizeof(xs), "XDG_STATE_HOME=%s/xdg-state", f->dir);
	snprintf(xr, sizeof(xr), "XDG_RUNTIME_DIR=%s/xdg-run", f->dir);
	rc = run_as_nobody(f, argv, (struct spawn_opts){ .env = env }, readable);
	if (rc == -2)
		skip();
	assert_int_equal(rc, 0);
	same_files(f, "src", "out");
	snprintf(path, sizeof(path), "%s/xdg-state/iou-offload", f->dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_uid, 65534);
	snprintf(path, sizeof(path), "%s/xdg-run/iou-offload/status", f->dir);
	assert_int_equal(stat(path, &st), 0);
}

/* a directory that cannot be made is named, with the key that sets it */
static void an_unwritable_runtime_dir_is_named(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char buf[1024];

	snprintf(buf, sizeof(buf), "[daemon]\nstate_dir = %s/state\n"
		 "runtime_dir = /proc/iou-no-such/run\n", f->dir);
	assert_int_equal(tu_write_file(f->conf, buf, strlen(buf)), 0);
	assert_int_equal(run_bin(f, argv), 1);
	assert_true(file_has(f->err, "cannot create runtime_dir /proc/iou-no-such/run"));
	assert_true(file_has(f->err, "set runtime_dir in [daemon]"));
}

/*
 * --check-config stays syntax and values (ExecReload runs it); --open also
 * opens the files and reports, all at once and with the line of the key,
 * what a start would refuse. It creates and writes nothing.
 */
static void check_config_open_reports_every_finding_at_its_line_and_changes_nothing(
	void **state)
{
	struct fx *f = *state;
	char *plain[] = { IOU_BIN, "--check-config", f->conf, NULL };
	char *open_[] = { IOU_BIN, "--check-config", "--open", f->conf, NULL };
	char want[4300];

	make_src(f, "src", 1 << 20, 61);
	make_src(f, "kept", 1 << 19, 62);
	write_conf(f, "", "[pipeline past]\ntransform = copy\nsource = @D/src\n"
		   "offset = 2M\ndestination = @D/d1\n"
		   "[pipeline nodir]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/no/such/dir/d2\n"
		   "[pipeline unaligned]\ntransform = copy\nsource = @D/src\ndirect = yes\n"
		   "dest_offset = 100\ndestination = @D/kept\n"
		   "[pipeline fine]\ntransform = copy\nsource = @D/src\ndestination = @D/d3\n");
	assert_int_equal(run_bin(f, plain), 0);
	assert_int_equal(run_bin(f, open_), 78);
	/* [daemon] takes lines 1-4 */
	snprintf(want, sizeof(want), "%s:8: [pipeline past]: offset 2097152 is beyond the end "
		 "of source %s/src", f->conf, f->dir);
	assert_true(file_has(f->err, want));
	snprintf(want, sizeof(want), "%s:13: [pipeline nodir]: cannot create destination "
		 "%s/no/such/dir/d2: its directory does not exist", f->conf, f->dir);
	assert_true(file_has(f->err, want));
	snprintf(want, sizeof(want), "%s:18: [pipeline unaligned]: direct = yes: dest_offset "
		 "100 is not a multiple", f->conf);
	assert_true(file_has(f->err, want));
	assert_true(file_has(f->err, "3 pipeline(s) would not start"));
	assert_false(strstr(slurp(f->err), "[pipeline fine]"));
	assert_false(exists(f, "d1"));
	assert_false(exists(f, "d3"));
	assert_false(exists(f, "state"));
	file_is(f, "kept", 1 << 19, 62);
	file_is(f, "src", 1 << 20, 61);
}

static void check_config_open_accepts_a_startable_config(void **state)
{
	struct fx *f = *state;
	char *open_[] = { IOU_BIN, "--check-config", "--open", f->conf, NULL };

	make_src(f, "src", 1 << 20, 63);
	write_conf(f, "", "[pipeline fine]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/d\n");
	assert_int_equal(run_bin(f, open_), 0);
	assert_true(file_has(f->out, "OK (files opened and checked), 1 pipeline(s)"));
	assert_false(exists(f, "d"));
}

/* fixed buffers over RLIMIT_MEMLOCK: the message names both ways to raise it */
static void memlock_too_small_names_ulimit_and_limitmemlock(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	const char *const readable[] = { "src", NULL };
	char buf[1024];
	int rc;

	make_src(f, "src", 8 << 20, 56);
	snprintf(buf, sizeof(buf), "[daemon]\nstate_dir = %s/st\nruntime_dir = %s/rt\n"
		 "engine = uring\nblock_size = 1M\nqueue_depth = 32\n[pipeline a]\n"
		 "transform = copy\nsource = %s/src\ndestination = %s/out\n", f->dir, f->dir,
		 f->dir, f->dir);
	assert_int_equal(tu_write_file(f->conf, buf, strlen(buf)), 0);
	/* root has CAP_IPC_LOCK: the child becomes nobody */
	rc = run_as_nobody(f, argv, (struct spawn_opts){ .rlimit = RLIMIT_MEMLOCK,
							 .lim = 64 << 10 }, readable);
	if (rc == -2)
		skip();
	assert_int_equal(rc, 1);
	assert_true(file_has(f->err, "RLIMIT_MEMLOCK is 64 KiB"));
	assert_true(file_has(f->err, "`ulimit -l`"));
	assert_true(file_has(f->err, "LimitMEMLOCK="));
	assert_false(exists(f, "out"));
}

static void kill_9_mid_copy_then_restart_finishes_identical(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, NULL };
	char *once[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *state_dir = tu_path(f->dir, "state");
	struct checkpoint ck;
	pid_t pid;

	make_src(f, "src", 256 << 20, 5);
	write_conf(f, "block_size = 4K\nqueue_depth = 2\ncheckpoint_interval = 64K\n",
		   "[pipeline big]\ntransform = stripe\nstripe_unit = 12K\nsource = @D/src\n"
		   "destination = @D/s0\ndestination = @D/s1\n");
	pid = spawn(f, argv);
	assert_true(wait_progress(f, "big", 8 << 20, 60));
	kill(pid, SIGKILL);
	assert_int_equal(wait_exit(pid, 30), 128 + SIGKILL);
	assert_int_equal(checkpoint_load(state_dir, "big", &ck), 0);
	if (ck.state == CKPT_FINISHED) {
		print_message("skipped: the copy finished before SIGKILL arrived\n");
		free(state_dir);
		skip();
	}
	assert_int_equal(ck.state, CKPT_RUNNING);

	/* now gather the stripe back and compare with the source */
	assert_int_equal(run_bin(f, once), 0);
	write_conf(f, "", "[pipeline back]\ntransform = gather\ngather = destripe\n"
		   "stripe_unit = 12K\nsource = @D/s0\nsource = @D/s1\ndestination = @D/back\n");
	assert_int_equal(run_bin(f, once), 0);
	same_files(f, "src", "back");
	free(state_dir);
}

/*
 * iou-offloadd(8): after a crash at most about queue_depth blocks plus
 * checkpoint_interval are copied again. The writes may not run ahead of a
 * slow fdatasync: what the destination holds past the checkpoint when the
 * daemon dies is within that bound.
 */
static void kill_9_recopies_at_most_a_queue_depth_past_the_checkpoint(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, NULL };
	char *once[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *state_dir = tu_path(f->dir, "state"), *out = tu_path(f->dir, "out");
	struct checkpoint ck;
	struct stat sb;
	pid_t pid;

	make_src(f, "src", 64 << 20, 7);
	write_conf(f, "block_size = 64K\nqueue_depth = 4\ncheckpoint_interval = 0\n",
		   "[pipeline a]\ntransform = copy\nsource = @D/src\ndestination = @D/out\n");
	pid = spawn(f, argv);
	assert_true(wait_progress(f, "a", 8 << 20, 60));
	kill(pid, SIGKILL);
	assert_int_equal(wait_exit(pid, 30), 128 + SIGKILL);
	assert_int_equal(checkpoint_load(state_dir, "a", &ck), 0);
	assert_int_equal(stat(out, &sb), 0);
	print_message("written %lld, checkpoint %llu\n", (long long)sb.st_size,
		      (unsigned long long)ck.done);
	if (ck.state != CKPT_FINISHED)
		assert_true((uint64_t)sb.st_size <= ck.done + 4 * (64 << 10));
	assert_int_equal(run_bin(f, once), 0);
	same_files(f, "src", "out");
	free(state_dir);
	free(out);
}

/*
 * run_bin() with fail_fsync.so preloaded: the first fsync or fdatasync of a
 * file whose path has @path in it fails with EIO, after @skip that pass.
 */
static int run_bin_fsync_fails(struct fx *f, char **argv, const char *path, const char *skip)
{
	int rc;

	setenv("LD_PRELOAD", FAIL_FSYNC_SO, 1);
	setenv("ASAN_OPTIONS", "verify_asan_link_order=0", 1);
	setenv("IOU_FAIL_FSYNC_PATH", path, 1);
	setenv("IOU_FAIL_FSYNC_SKIP", skip, 1);
	rc = run_bin(f, argv);
	unsetenv("LD_PRELOAD");
	unsetenv("IOU_FAIL_FSYNC_PATH");
	unsetenv("IOU_FAIL_FSYNC_SKIP");
	return rc;
}

/*
 * A failed fsync at the end (a lost writeback): the pipeline fails, and the
 * checkpoint must not move to the end just because a second fsync (which
 * the kernel answers with success once it has reported the error) passed.
 * The next run must copy again and not take the destination as finished.
 */
static void failed_fsync_keeps_the_checkpoint_and_the_next_run_copies_again(void **state)
{
	struct fx *f = *state;
	char *once[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *state_dir = tu_path(f->dir, "state");
	struct checkpoint ck;
	struct status_entry e;

	make_src(f, "src", 3 << 20, 6);
	/* no checkpoint on the way: the final fsync is the first one */
	write_conf(f, "checkpoint_interval = 1G\n",
		   "[pipeline a]\ntransform = copy\nsource = @D/src\ndestination = @D/out\n");
	/* out exists: the first fdatasync is the open-time flush of old errors */
	make_src(f, "out", 0, 0);
	assert_int_equal(run_bin_fsync_fails(f, once, "/out", "1"), 1);
	assert_true(file_has(f->err, "Input/output error"));
	assert_int_equal(checkpoint_load(state_dir, "a", &ck), 0);
	assert_int_equal(ck.state, CKPT_FAILED);
	assert_true(ck.done < ck.total);

	assert_int_equal(run_bin(f, once), 0);
	assert_false(file_has(f->err, "nothing to do"));
	assert_true(status_of(f, "a", &e));
	assert_true(e.bytes_resumed == ck.done);
	same_files(f, "src", "out");
	free(state_dir);
}

/*
 * A writeback error left pending on the destination before the daemon
 * opened it (the last close of a block device flushed into an EIO, and the
 * fault has been cleared since) is reported by the first fdatasync of the
 * new open. It is about writes no checkpoint vouched for: the run warns and
 * copies again from its checkpoint, instead of failing for good.
 */
static void writeback_error_pending_at_open_is_a_warning_and_the_copy_finishes(void **state)
{
	struct fx *f = *state;
	char *once[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	struct status_entry e;

	make_src(f, "src", 3 << 20, 9);
	make_src(f, "out", 0, 0);	/* opened, not created: it may carry an old error */
	write_conf(f, "checkpoint_interval = 1M\n",
		   "[pipeline a]\ntransform = copy\nsource = @D/src\ndestination = @D/out\n");
	assert_int_equal(run_bin_fsync_fails(f, once, "/out", "0"), 0);
	assert_true(file_has(f->err, "an earlier writeback error (Input/output error)"));
	assert_true(status_of(f, "a", &e));
	assert_string_equal(e.state, "finished");
	same_files(f, "src", "out");
}

/*
 * Run the daemon (--once) under strace -c tracing @syscalls; the calls of
 * all of them in *calls. 0, or skip() where strace cannot run here.
 */
static int strace_calls(struct fx *f, const char *syscalls, unsigned long *calls)
{
	char *trace = tu_path(f->dir, "strace.out"), filter[128];
	char *argv[] = { "/usr/bin/strace", "-f", "-qq", "-c", "-e", filter, "-o",
			 trace, IOU_BIN, "-c", f->conf, "--once", NULL };
	char *s, *err, *line;
	double pct, secs;
	unsigned long usecs;
	bool no_ptrace;
	int rc;

	if (access("/usr/bin/strace", X_OK)) {
		print_message("skipped: no strace\n");
		free(trace);
		skip();
	}
	snprintf(filter, sizeof(filter), "trace=%s", syscalls);
	/* LeakSanitizer refuses to run under ptrace; leaks are checked elsewhere */
	setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
	rc = run_bin(f, argv);
	unsetenv("ASAN_OPTIONS");
	err = slurp(f->err);
	no_ptrace = rc != 0 && strstr(err, "ptrace");
	free(err);
	if (no_ptrace) {
		print_message("skipped: strace cannot trace here\n");
		free(trace);
		skip();
	}
	s = slurp(trace);
	*calls = 0;
	/* "% time seconds usecs/call calls [errors] syscall": the total line sums them */
	line = strstr(s, " total");
	if (line) {
		while (line > s && line[-1] != '\n')
			line--;
		if (sscanf(line, "%lf %lf %lu %lu", &pct, &secs, &usecs, calls) != 4)
			*calls = 0;
	}
	free(s);
	free(trace);
	return rc;
}

static void enter_count_matches_strace(void **state)
{
	struct fx *f = *state;
	struct status_entry e;
	unsigned long calls;

	make_src(f, "src", 32 << 20, 6);
	write_conf(f, "block_size = 256K\nqueue_depth = 8\n",
		   "[pipeline p]\ntransform = stripe\nstripe_unit = 64K\nsource = @D/src\n"
		   "destination = @D/s0\ndestination = @D/s1\n");
	assert_int_equal(strace_calls(f, "io_uring_enter", &calls), 0);
	assert_true(status_of(f, "p", &e));
	print_message("io_uring_enter: daemon counted %lu, strace counted %lu\n",
		      (unsigned long)e.enters, calls);
	assert_int_equal(e.enters, calls);
}

/*
 * Checkpoints are flushed and recorded through the ring: the fdatasync of
 * the destination, then the record's write and fdatasync in place. The
 * pipeline thread itself syncs only at the start (the first record) and at
 * the end, however many checkpoints a run takes.
 */
static void checkpoints_do_not_fsync_on_the_pipeline_thread(void **state)
{
	struct fx *f = *state;
	unsigned long calls;
	int records = 0;
	char *err;

	make_src(f, "src", 16 << 20, 7);
	write_conf(f, "block_size = 256K\nqueue_depth = 4\ncheckpoint_interval = 1M\n"
		   "log_level = debug\n",
		   "[pipeline p]\ntransform = copy\nsource = @D/src\ndestination = @D/out\n");
	assert_int_equal(strace_calls(f, "fsync,fdatasync", &calls), 0);
	err = slurp(f->err);
	for (char *p = err; (p = strstr(p, "checkpoint: durable up to byte")); p++)
		records++;
	free(err);
	print_message("%d checkpoints recorded with %lu fsync/fdatasync calls\n", records,
		      calls);
	assert_true(records >= 8);
	/* the first record (2: a new file), the last flush (1) and record (1, in place) */
	assert_true(calls <= 4);
	same_files(f, "src", "out");
}

/*
 * Flushes and records overlap, and each flush is an fdatasync of the range
 * written since the one before (durability.c): the ranges must tile the copy
 * from its start, and a record may only name the end of a flush that has
 * completed, never more (the debug log says each, in order, from the
 * pipeline thread). The finished record follows finish()'s full fsync.
 * Returns the records before the finish.
 */
static int run_and_tile_records(struct fx *f)
{
	char *once[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	uint64_t ends[1024] = { 0 }, next = 0, durable = 0, a, b, n;
	int flushes = 0, records = 0, k;
	char *err, *line;

	assert_int_equal(run_bin(f, once), 0);
	err = slurp(f->err);
	for (line = strtok(err, "\n"); line; line = strtok(NULL, "\n")) {
		const char *m;

		if ((m = strstr(line, "flush of bytes ")) &&
		    sscanf(m, "flush of bytes %" SCNu64 " to %" SCNu64, &a, &b) == 2) {
			assert_int_equal(a, next);
			assert_true(a < b);
			next = b;
		} else if ((m = strstr(line, "destination(s) up to byte ")) &&
			   sscanf(m, "destination(s) up to byte %" SCNu64, &b) == 1) {
			assert_int_equal(b, next);
			assert_true(flushes < 1023);
			ends[++flushes] = b;
		} else if ((m = strstr(line, "checkpoint: durable up to byte ")) &&
			   sscanf(m, "checkpoint: durable up to byte %" SCNu64 " of %" SCNu64,
				  &b, &n) == 2) {
			if (b == n)
				break;		/* finish(), after its own full fsync */
			/* the start (ends[0]), or where a completed flush ended */
			for (k = flushes; k > 0 && ends[k] != b; k--)
				;
			assert_int_equal(ends[k], b);
			assert_true(b >= durable);
			durable = b;
			records++;
		}
	}
	free(err);
	print_message("%d flushes, %d records before the finish\n", flushes, records);
	assert_true(flushes >= 8);
	return records;
}

static void checkpoints_record_only_flushed_ranges_that_tile_the_copy(void **state)
{
	struct fx *f = *state;

	make_src(f, "src", 16 << 20, 8);
	write_conf(f, "block_size = 64K\nqueue_depth = 4\ncheckpoint_interval = 512K\n"
		   "log_level = debug\n",
		   "[pipeline p]\ntransform = copy\nsource = @D/src\ndestination = @D/out\n");
	assert_true(run_and_tile_records(f) >= 4);
	same_files(f, "src", "out");
}

static ino_t ckpt_ino(struct fx *f, off_t *size)
{
	char *path = tu_path(f->dir, "state/p.ckpt");
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	free(path);
	*size = st.st_size;
	return st.st_ino;
}

/*
 * A record of one sector is rewritten in place through the ring as well
 * (its write and fdatasync, no journal commit): a second run's records,
 * flushed ones and the last, all keep the file the first run left.
 */
static void a_run_rewrites_its_one_sector_checkpoint_in_place(void **state)
{
	struct fx *f = *state;
	off_t size;
	ino_t ino;

	make_src(f, "src", 16 << 20, 9);
	write_conf(f, "block_size = 64K\nqueue_depth = 4\ncheckpoint_interval = 512K\n"
		   "log_level = debug\nrepeat = yes\n",
		   "[pipeline p]\ntransform = copy\nsource = @D/src\ndestination = @D/out\n");
	run_and_tile_records(f);
	ino = ckpt_ino(f, &size);
	assert_int_equal(size, CKPT_SECTOR);
	assert_true(run_and_tile_records(f) >= 4);
	assert_true(ckpt_ino(f, &size) == ino);
	assert_int_equal(size, CKPT_SECTOR);
	assert_true(file_has(f->err, "checkpoint: durable up to byte 16777216 of 16777216"));
	same_files(f, "src", "out");
}

/*
 * A record too long for a sector (a mirror to eight destinations) is renamed
 * into place through the ring, as before: the same tiling, a new file.
 */
static void a_checkpoint_longer_than_a_sector_is_renamed_into_place(void **state)
{
	struct fx *f = *state;
	char pipeline[1024] = "[pipeline p]\ntransform = mirror\nsource = @D/src\n";
	char *ckpt = tu_path(f->dir, "state/p.ckpt");
	struct stat st;
	off_t size;
	ino_t ino;
	int old;

	for (int d = 0; d < 8; d++)
		snprintf(pipeline + strlen(pipeline), sizeof(pipeline) - strlen(pipeline),
			 "destination = @D/out%d\n", d);
	make_src(f, "src", 16 << 20, 10);
	write_conf(f, "block_size = 64K\nqueue_depth = 4\ncheckpoint_interval = 512K\n"
		   "log_level = debug\nrepeat = yes\n", pipeline);
	run_and_tile_records(f);
	ino = ckpt_ino(f, &size);
	assert_true(size > CKPT_SECTOR);
	/* held open, the old record keeps its inode: no new file can reuse the number */
	old = open(ckpt, O_RDONLY);
	assert_true(old >= 0);
	assert_true(run_and_tile_records(f) >= 4);
	assert_true(ckpt_ino(f, &size) != ino);
	assert_int_equal(fstat(old, &st), 0);
	assert_int_equal(st.st_nlink, 0);	/* replaced by a rename, not rewritten */
	close(old);
	free(ckpt);
	for (int d = 0; d < 8; d++) {
		char out[16];

		snprintf(out, sizeof(out), "out%d", d);
		same_files(f, "src", out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(help_explains_usage_and_exits_0, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(unknown_option_exits_2, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(check_config_accepts_a_valid_file, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(warnings_and_errors_come_in_the_files_order,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(warnings_and_errors_from_stdin_come_in_order,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_command_option_without_its_command_runs_nothing,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(plain_check_config_refuses_a_destination_in_state_dir, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(check_config_summary_counts_devices, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_binary_config_prints_twenty_errors_and_a_count,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_value_cut_at_an_inline_comment_is_a_warning,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(check_config_reports_file_line_and_exits_78, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(
			broken_config_refuses_to_start_with_the_message_and_exits_78,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(once_runs_every_pipeline_and_exits_0, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(the_kernel_is_probed_only_for_a_pipeline_that_may_use_bpf,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(once_exits_when_its_pipeline_ends_not_at_the_next_tick,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(once_exits_1_when_a_pipeline_fails, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(status_command_prints_each_pipeline, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(sighup_adds_a_pipeline_and_rejects_a_broken_config,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(sigterm_mid_copy_checkpoints_and_restart_finishes,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(once_stopped_part_way_by_sigterm_exits_3, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(once_stopped_part_way_by_sigint_exits_3, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(
			two_pipelines_with_one_destination_are_refused_and_nothing_is_written,
			fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(
			reload_adding_a_writer_of_a_running_destination_is_rejected, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(
			a_pipeline_added_by_reload_reuses_the_buffers_of_one_that_ended, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(buffer_cache_0_keeps_no_buffers_between_runs,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(
			a_second_daemon_cannot_write_what_the_first_is_writing, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_refused_pipeline_creates_no_destination, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(a_full_destination_is_refused_up_front_in_one_line,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_dest_offset_hole_needs_no_space, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(
			check_config_open_names_every_alignment_finding_of_a_pipeline,
			fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(check_config_open_refuses_buffers_past_ram,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(
			check_config_open_refuses_a_destination_past_the_largest_file,
			fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(reload_from_another_directory_knows_a_relative_config,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_fifo_as_the_config_is_refused_not_waited_on,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(
			a_signal_while_the_config_is_read_waits_for_the_main_loop, fx_setup,
			fx_teardown),
		cmocka_unit_test_setup_teardown(reload_refuses_another_file_and_a_bad_pid,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_source_written_mid_copy_says_what_moved, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(
			write_errors_behind_the_first_are_one_summary_line, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(
			resumed_run_counts_its_rate_from_the_resume_point, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(
			status_of_a_pipeline_that_failed_at_open_shows_no_percentage, fx_setup,
			fx_teardown),
		cmocka_unit_test_setup_teardown(
			status_after_kill_9_says_the_pipeline_was_interrupted, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(once_off_a_terminal_logs_progress_with_an_eta,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(once_on_a_terminal_redraws_one_progress_line,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(
			a_normal_user_runs_with_xdg_directories_by_default, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(an_unwritable_runtime_dir_is_named, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(
			check_config_open_reports_every_finding_at_its_line_and_changes_nothing,
			fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(check_config_open_accepts_a_startable_config,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(memlock_too_small_names_ulimit_and_limitmemlock,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(kill_9_mid_copy_then_restart_finishes_identical,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(
			kill_9_recopies_at_most_a_queue_depth_past_the_checkpoint, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(
			failed_fsync_keeps_the_checkpoint_and_the_next_run_copies_again, fx_setup,
			fx_teardown),
		cmocka_unit_test_setup_teardown(
			writeback_error_pending_at_open_is_a_warning_and_the_copy_finishes,
			fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(enter_count_matches_strace, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(
			checkpoints_record_only_flushed_ranges_that_tile_the_copy, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_run_rewrites_its_one_sector_checkpoint_in_place,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(
			a_checkpoint_longer_than_a_sector_is_renamed_into_place, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(checkpoints_do_not_fsync_on_the_pipeline_thread, fx_setup,
						fx_teardown),
	};

	return cmocka_run_group_tests_name("iou-offloadd binary", tests, NULL, NULL);
}
