// SPDX-License-Identifier: MIT
/*
 * What a person used to cp and dd types: `iou-offloadd copy SRC DST` and
 * its siblings, a config on standard input, and the finish line that says
 * how much, how long and how fast.
 */
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon_fx.h"

#ifndef IOU_BIN
#error "IOU_BIN: path of the iou-offloadd binary under test"
#endif

/* argv[] of a one-shot: the verb, --state-dir in the test directory, then @rest */
#define ONESHOT(f, verb, ...) \
	((char *[]){ IOU_BIN, verb, "--state-dir", state_of(f), __VA_ARGS__, NULL })

static char state_buf[4200];

static char *state_of(struct fx *f)
{
	snprintf(state_buf, sizeof(state_buf), "%s/oneshot-state", f->dir);
	return state_buf;
}

static char *p(struct fx *f, const char *name)
{
	return tu_path(f->dir, name);	/* leaked: a test's few paths */
}

static void copy_copies_and_the_same_command_again_has_nothing_to_do(void **state)
{
	struct fx *f = *state;

	make_src(f, "src", 5000007, 91);
	assert_int_equal(run_bin(f, ONESHOT(f, "copy", p(f, "src"), p(f, "dst"))), 0);
	same_files(f, "src", "dst");
	assert_true(file_has(f->err, "finished, 5000007 bytes in"));
	assert_true(file_has(f->err, "MiB/s"));
	assert_int_equal(run_bin(f, ONESHOT(f, "copy", p(f, "src"), p(f, "dst"))), 0);
	assert_true(file_has(f->err, "nothing to do"));
}

/* run @argv, then SIGTERM it half a second into its copy: stopped (exit 3), or skipped */
static void stop_part_way(struct fx *f, char **argv)
{
	char status[4300];
	pid_t pid = spawn(f, argv);
	int rc;

	/* the status file of a one-shot is in its own directory */
	snprintf(status, sizeof(status), "%s/oneshot", state_of(f));
	for (int i = 0; i < 3000 && access(status, F_OK); i++)
		usleep(10000);
	usleep(500000);
	kill(pid, SIGTERM);
	rc = wait_exit(pid, 60);
	if (rc == 0) {
		print_message("skipped: the copy finished before SIGTERM arrived\n");
		skip();
	}
	assert_int_equal(rc, 3);
}

static void copy_stopped_part_way_resumes_when_run_again(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "copy", "--state-dir", state_of(f), "--block-size", "4K",
			 "--queue-depth", "1", p(f, "src"), p(f, "dst"), NULL };

	make_src(f, "src", 256 << 20, 92);
	stop_part_way(f, argv);
	assert_int_equal(run_bin(f, argv), 0);
	assert_true(file_has(f->err, "resuming at byte"));
	assert_true(file_has(f->err, "(resumed at byte"));
	same_files(f, "src", "dst");
}

/* @text with the line that starts with @key replaced by @line */
static char *with_line(const char *text, const char *key, const char *line)
{
	const char *at = strstr(text, key), *end = at ? strchr(at, '\n') : NULL;
	char *out;

	assert_non_null(end);
	assert_true(asprintf(&out, "%.*s%s%s", (int)(at - text), text, line, end) > 0);
	return out;
}

/*
 * A one-shot's status file, as a daemon killed mid-copy leaves it (running,
 * durable as of up to a second before): status names the byte a restart
 * resumes from by the checkpoint, which lies beside it (it said byte 0:
 * it looked for checkpoints in the state_dir of /etc/iou-offloadd.conf)
 */
static void status_of_a_killed_one_shot_says_the_checkpoint_it_resumes_from(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "copy", "--state-dir", state_of(f), "--block-size", "4K",
			 "--queue-depth", "1", p(f, "src"), p(f, "dst"), NULL };
	char *st[] = { IOU_BIN, "status", "-s", NULL, NULL };
	char want[128], *text, *left, *stale;
	unsigned long long done = 0;
	glob_t g;

	make_src(f, "src", 256 << 20, 100);
	stop_part_way(f, argv);
	text = slurp(f->err);
	left = strstr(text, "stopped at byte ");
	assert_non_null(left);
	done = strtoull(left + strlen("stopped at byte "), NULL, 10);
	free(text);
	assert_true(done > 0);

	snprintf(want, sizeof(want), "%s/oneshot/copy-*/status", state_of(f));
	assert_int_equal(glob(want, 0, NULL, &g), 0);
	assert_int_equal(g.gl_pathc, 1);
	text = slurp(g.gl_pathv[0]);
	left = with_line(text, "state=", "state=running");
	stale = with_line(left, "bytes_durable=", "bytes_durable=0");
	tu_write_file(g.gl_pathv[0], stale, strlen(stale));
	st[3] = g.gl_pathv[0];
	assert_int_equal(run_bin(f, st), 3);
	snprintf(want, sizeof(want), "a restart resumes at byte %llu\n", done);
	assert_true(file_has(f->out, want));
	free(text);
	free(left);
	free(stale);
	globfree(&g);
}

/*
 * The same one-shot command twice at once: said in its words (it said
 * "state_dir ... is in use by another iou-offloadd: give each daemon its
 * own state_dir", a key no one-shot user set)
 */
static void the_same_command_twice_at_once_says_it_is_running(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "copy", "--state-dir", state_of(f), "--block-size", "4K",
			 "--queue-depth", "1", p(f, "src"), p(f, "dst"), NULL };
	char *err = f->err, *first_err = p(f, "first.err"), *text;
	pid_t pid;

	make_src(f, "src", 256 << 20, 96);
	/* the first run's output apart: the second's spawn truncates f->err */
	f->err = first_err;
	pid = spawn(f, argv);
	f->err = err;
	for (int i = 0; i < 3000; i++) {
		char *text = slurp(first_err);
		bool ready = strstr(text, "ready");

		free(text);
		if (ready)
			break;
		usleep(10000);
	}
	assert_int_equal(run_bin(f, argv), 1);
	assert_true(file_has(f->err, "the same command is already running on these files (pid "));
	assert_true(file_has(f->err, "stop it (SIGTERM) and run the command again, which resumes"));
	text = slurp(f->err);
	assert_null(strstr(text, "state_dir"));
	free(text);
	kill(pid, SIGTERM);
	assert_true(wait_exit(pid, 60) >= 0);
}

/* fixed buffers over RLIMIT_MEMLOCK: a one-shot is told its options, not the unit's keys */
static void a_one_shot_over_memlock_is_told_its_options(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "copy", "--engine=uring", "--state-dir", state_of(f),
			 "--block-size", "1M", "--queue-depth", "32", p(f, "src"), p(f, "dst"),
			 NULL };
	const char *const readable[] = { "src", NULL };
	char *text;
	int rc;

	make_src(f, "src", 8 << 20, 97);
	/* root has CAP_IPC_LOCK: the child becomes nobody */
	rc = run_as_nobody(f, argv, (struct spawn_opts){ .rlimit = RLIMIT_MEMLOCK,
							 .lim = 64 << 10 }, readable);
	if (rc == -2)
		skip();
	assert_int_equal(rc, 1);
	assert_true(file_has(f->err, "RLIMIT_MEMLOCK is 64 KiB: raise it with `ulimit -l` in a "
			     "shell, or lower --queue-depth or --block-size"));
	text = slurp(f->err);
	assert_null(strstr(text, "LimitMEMLOCK="));
	free(text);
}

/* a one-shot has no [daemon] section: a --state-dir it cannot use is told by the option */
static void a_one_shot_state_dir_it_cannot_use_names_the_option(void **state)
{
	struct fx *f = *state;
	char *file = p(f, "afile");
	char *argv[] = { IOU_BIN, "copy", "--engine=uring", "--state-dir", file, p(f, "src"),
			 p(f, "dst"), NULL };
	char *text;

	make_src(f, "src", 1 << 20, 98);
	make_src(f, "afile", 10, 99);
	assert_int_equal(run_bin(f, argv), 1);
	assert_true(file_has(f->err, "Not a directory (give another with --state-dir=DIR)"));
	text = slurp(f->err);
	assert_null(strstr(text, "[daemon]"));
	free(text);
}

static void stripe_then_gather_destripe_gives_the_source_back(void **state)
{
	struct fx *f = *state;

	make_src(f, "src", (3 << 20) + 12345, 93);
	assert_int_equal(run_bin(f, ONESHOT(f, "mirror", p(f, "src"), p(f, "m1"),
					    p(f, "m2"))), 0);
	same_files(f, "src", "m1");
	same_files(f, "src", "m2");
	assert_int_equal(run_bin(f, ONESHOT(f, "stripe", "--unit", "64K", p(f, "src"),
					    p(f, "s1"), p(f, "s2"))), 0);
	assert_int_equal(run_bin(f, ONESHOT(f, "gather", "--destripe", "--unit", "64K",
					    p(f, "s1"), p(f, "s2"), p(f, "back"))), 0);
	same_files(f, "src", "back");
}

/*
 * a one-shot's state_dir holds every one-shot's checkpoints: no destination
 * there, not even another command's checkpoint
 */
static void a_one_shot_refuses_a_destination_in_its_state_dir(void **state)
{
	struct fx *f = *state;
	char *inside;

	make_src(f, "src", 100000, 95);
	assert_int_equal(run_bin(f, ONESHOT(f, "copy", p(f, "src"), p(f, "dst"))), 0);
	inside = tu_path(state_of(f), "x.img");
	assert_int_equal(run_bin(f, ONESHOT(f, "copy", p(f, "src"), inside)), 1);
	assert_true(file_has(f->err, "is in state_dir"));
	assert_int_equal(access(inside, F_OK), -1);
	free(inside);
}

/* the same files by another spelling are the same command: it resumes */
static void a_one_shot_by_another_spelling_of_its_paths_is_the_same_command(void **state)
{
	struct fx *f = *state;
	char *dotted = p(f, "sub/../src"), *doubled;

	make_src(f, "src", 100000, 96);
	assert_int_equal(mkdir(p(f, "sub"), 0755), 0);
	assert_int_equal(run_bin(f, ONESHOT(f, "copy", p(f, "src"), p(f, "dst"))), 0);
	assert_int_equal(asprintf(&doubled, "/%s", p(f, "dst")), (int)strlen(p(f, "dst")) + 1);
	assert_int_equal(run_bin(f, ONESHOT(f, "copy", dotted, doubled)), 0);
	assert_true(file_has(f->err, "nothing to do"));
	free(doubled);
}

static void a_one_shot_with_the_wrong_files_prints_usage_and_exits_2(void **state)
{
	struct fx *f = *state;

	assert_int_equal(run_bin(f, ONESHOT(f, "copy", p(f, "only"))), 2);
	assert_true(file_has(f->err, "usage: iou-offloadd copy"));
	assert_int_equal(run_bin(f, ONESHOT(f, "stripe", p(f, "a"), p(f, "b"))), 2);
	assert_true(file_has(f->err, "--unit SIZE"));
}

/* the usage line alone left the reader to guess which rule the line broke */
static void a_one_shot_usage_error_says_which_rule(void **state)
{
	struct fx *f = *state;

	assert_int_equal(run_bin(f, ONESHOT(f, "gather", "--destripe", p(f, "a"), p(f, "b"),
					    p(f, "c"))), 2);
	assert_true(file_has(f->err, "iou-offloadd gather: --unit SIZE is required"));
	assert_int_equal(run_bin(f, ONESHOT(f, "mirror", "--destripe", "--unit", "4K", p(f, "a"),
					    p(f, "b"))), 2);
	assert_true(file_has(f->err, "iou-offloadd mirror: --destripe is for gather"));
	assert_int_equal(run_bin(f, ONESHOT(f, "copy", p(f, "a"), p(f, "b"), p(f, "c"))), 2);
	assert_true(file_has(f->err, "copy takes one source and one destination"));
	/* usage and 2, as the man page says (was 78 and a config file's text) */
	assert_int_equal(run_bin(f, ONESHOT(f, "mirror", p(f, "a"), p(f, "b"))), 2);
	assert_true(file_has(f->err, "iou-offloadd mirror: it takes one source and at least two"));
	assert_int_equal(run_bin(f, ONESHOT(f, "gather", p(f, "a"), p(f, "b"))), 2);
	assert_true(file_has(f->err, "it takes at least two sources and one destination"));
}

/* getopt's message names the command (it said "copy: unrecognized option") */
static void an_unknown_option_is_named_with_the_command(void **state)
{
	struct fx *f = *state;

	assert_int_equal(run_bin(f, ONESHOT(f, "copy", "--frobnicate", p(f, "a"), p(f, "b"))), 2);
	assert_true(file_has(f->err, "iou-offloadd copy: unrecognized option '--frobnicate'"));
}

/*
 * said at the option, with the key the man page describes (it said
 * "command line:3: [pipeline copy]: ", a line of a text no one wrote)
 */
static void a_bad_option_value_names_the_option_and_its_key(void **state)
{
	struct fx *f = *state;

	make_src(f, "src", 4096, 94);
	assert_int_equal(run_bin(f, ONESHOT(f, "copy", "--block-size", "lots", p(f, "src"),
					    p(f, "dst"))), 78);
	assert_true(file_has(f->err, "command line: --block-size: block_size = 'lots': expected"));
	assert_false(file_has(f->err, "command line:3"));
	assert_int_equal(run_bin(f, ONESHOT(f, "stripe", "--unit", "3", "--queue-depth", "0",
					    p(f, "src"), p(f, "d1"), p(f, "d2"))), 78);
	assert_true(file_has(f->err, "command line: --unit: stripe_unit = '3': expected"));
	assert_true(file_has(f->err, "command line: --queue-depth: queue_depth = '0': expected"));
}

/*
 * The one-shot passes its paths through a configuration's text, which cuts
 * a value at ' ;', drops its trailing blanks and a CR at its end: "keep ;old"
 * or "keep " wrote over the file "keep" instead
 */
/*
 * an option's value is one line of the text too: a newline in it added a
 * line of its own (--block-size=$'64K\ndirect = yes' copied with O_DIRECT)
 */
static void an_option_value_the_config_text_would_change_is_refused(void **state)
{
	struct fx *f = *state;

	make_src(f, "src", 4096, 99);
	assert_int_equal(run_bin(f, ONESHOT(f, "copy", "--block-size", "64K\ndirect = yes",
					    p(f, "src"), p(f, "dst"))), 2);
	assert_true(file_has(f->err, "--block-size: a value with a newline"));
	assert_int_equal(run_bin(f, ONESHOT(f, "copy", "--engine", "uring ;x", p(f, "src"),
					    p(f, "dst"))), 2);
	assert_true(file_has(f->err, "--engine: a value with ' ;' is not taken"));
	assert_int_equal(access(p(f, "dst"), F_OK), -1);
}

static void a_path_the_config_text_would_change_is_refused_not_cut(void **state)
{
	struct fx *f = *state;
	const char *bad[] = { "keep ;old", "keep\t;old", "keep ", "keep\t", "keep\r" };

	make_src(f, "src", 4096, 97);
	make_src(f, "keep", 8192, 98);
	make_src(f, "keep.orig", 8192, 98);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(run_bin(f, ONESHOT(f, "copy", p(f, "src"), p(f, bad[i]))), 2);
		assert_true(file_has(f->err, "is not taken"));
		same_files(f, "keep", "keep.orig");
	}
	/* as a source: not "keep" copied in its place */
	assert_int_equal(run_bin(f, ONESHOT(f, "copy", p(f, "keep ;old"), p(f, "dst"))), 2);
	assert_int_equal(access(p(f, "dst"), F_OK), -1);
	/* nor a state directory: an empty one was the current directory */
	assert_int_equal(run_bin(f, (char *[]){ IOU_BIN, "copy", "--state-dir", p(f, "st ;x"),
						p(f, "src"), p(f, "dst"), NULL }), 2);
	assert_true(file_has(f->err, "--state-dir"));
	assert_int_equal(access(p(f, "st"), F_OK), -1);
	assert_int_equal(run_bin(f, (char *[]){ IOU_BIN, "copy", "--state-dir", "", p(f, "src"),
						p(f, "dst"), NULL }), 2);
	assert_true(file_has(f->err, "--state-dir '': an empty path is not taken"));
}

/* a hard link of the source: named by its paths, not by lines of a text no one wrote */
static void a_destination_linked_to_the_source_is_named_without_a_line(void **state)
{
	struct fx *f = *state;

	make_src(f, "src", 4096, 99);
	assert_int_equal(link(p(f, "src"), p(f, "alias")), 0);
	assert_int_equal(run_bin(f, ONESHOT(f, "copy", p(f, "src"), p(f, "alias"))), 78);
	assert_true(file_has(f->err, "is the same file as source"));
	assert_false(file_has(f->err, "(line "));
}

static void a_config_on_standard_input_runs(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", "-", "--once", NULL };
	char conf[2048];
	int in[2];
	pid_t pid;

	make_src(f, "src", 1 << 20, 95);
	snprintf(conf, sizeof(conf), "[daemon]\nstate_dir = %s/state\nruntime_dir = %s/run\n"
		 "engine = uring\n[pipeline p]\ntransform = copy\nsource = %s/src\n"
		 "destination = %s/out\n", f->dir, f->dir, f->dir, f->dir);
	assert_int_equal(pipe(in), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int e = open(f->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(in[0], 0);
		dup2(e, 2);
		close(in[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	assert_int_equal(write(in[1], conf, strlen(conf)), (ssize_t)strlen(conf));
	close(in[1]);
	assert_int_equal(wait_exit(pid, 60), 0);
	same_files(f, "src", "out");
}

static void status_of_a_finished_pipeline_gives_time_and_average_rate(void **state)
{
	struct fx *f = *state;
	char *once[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *st[] = { IOU_BIN, "status", "-c", f->conf, NULL };

	make_src(f, "src", 8 << 20, 96);
	write_conf(f, "", BIG_COPY);
	assert_int_equal(run_bin(f, once), 0);
	assert_int_equal(run_bin(f, st), 3);
	assert_true(file_has(f->out, "finished: 8388608 bytes in"));
	assert_true(file_has(f->out, "MiB/s on average"));
}

/* @name: @len bytes, all hole but @nr_data 4 KiB pieces of seed data */
static void make_sparse(struct fx *f, const char *name, off_t len, const off_t *at, int nr)
{
	char *path = tu_path(f->dir, name), buf[4096];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, len), 0);
	for (int i = 0; i < nr; i++) {
		tu_fill(buf, sizeof(buf), 97 + i);
		assert_int_equal(pwrite(fd, buf, sizeof(buf), at[i]), sizeof(buf));
	}
	close(fd);
	free(path);
}

static long long allocated(struct fx *f, const char *name)
{
	char *path = tu_path(f->dir, name);
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	free(path);
	return (long long)st.st_blocks * 512;
}

/* holes stay holes; an old destination's bytes there read back as zeros */
static void a_sparse_source_gives_a_sparse_destination(void **state)
{
	struct fx *f = *state;
	const off_t at[] = { 0, 100 << 20, (256 << 20) - 4096 };
	char junk[1 << 16];
	int fd;

	make_sparse(f, "src", 256 << 20, at, 3);
	if (allocated(f, "src") > (1 << 20)) {
		print_message("skipped: this file system does not keep holes\n");
		skip();
	}
	/* an old destination full of other bytes where the source has holes */
	memset(junk, 0xAB, sizeof(junk));
	fd = open(p(f, "dst"), O_WRONLY | O_CREAT, 0644);
	for (off_t o = 0; o < (8 << 20); o += sizeof(junk))
		assert_int_equal(pwrite(fd, junk, sizeof(junk), (50 << 20) + o), sizeof(junk));
	close(fd);
	assert_int_equal(run_bin(f, ONESHOT(f, "copy", p(f, "src"), p(f, "dst"))), 0);
	same_files(f, "src", "dst");
	/* whole blocks (1 MiB) are written where the source has data: three */
	print_message("destination: %lld bytes allocated\n", allocated(f, "dst"));
	assert_true(allocated(f, "dst") <= (4 << 20));
	assert_true(file_has(f->err, "hole(s)"));
	/* sparse = no: every byte written */
	write_conf(f, "sparse = no\n", "[pipeline p]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/dense\n");
	assert_int_equal(run_bin(f, ((char *[]){ IOU_BIN, "-c", f->conf, "--once", NULL })), 0);
	same_files(f, "src", "dense");
	assert_true(allocated(f, "dense") >= (256 << 20));
}

/* the space check counts what will be allocated: 256 MiB of holes fit in 64 MiB */
static void a_sparse_copy_fits_where_its_data_fits(void **state)
{
	struct fx *f = *state;
	const off_t at[] = { 0, 128 << 20 };
	char *mnt = tu_path(f->dir, "small"), dst[4200];

	make_sparse(f, "src", 256 << 20, at, 2);
	assert_int_equal(mkdir(mnt, 0755), 0);
	if (mount("iou-test", mnt, "tmpfs", 0, "size=64m")) {
		free(mnt);
		skip();
	}
	snprintf(dst, sizeof(dst), "%s/out", mnt);
	assert_int_equal(run_bin(f, ONESHOT(f, "copy", p(f, "src"), dst)), 0);
	same_files(f, "src", "small/out");
	umount2(mnt, MNT_DETACH);
	free(mnt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			copy_copies_and_the_same_command_again_has_nothing_to_do,
			fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(copy_stopped_part_way_resumes_when_run_again,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_one_shot_refuses_a_destination_in_its_state_dir,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(
			a_one_shot_by_another_spelling_of_its_paths_is_the_same_command,
			fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(stripe_then_gather_destripe_gives_the_source_back,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(
			a_one_shot_with_the_wrong_files_prints_usage_and_exits_2,
			fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_one_shot_usage_error_says_which_rule, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(an_unknown_option_is_named_with_the_command,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_bad_option_value_names_the_option_and_its_key,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(an_option_value_the_config_text_would_change_is_refused,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_path_the_config_text_would_change_is_refused_not_cut,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_destination_linked_to_the_source_is_named_without_a_line,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_config_on_standard_input_runs,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(
			status_of_a_finished_pipeline_gives_time_and_average_rate,
			fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(
			status_of_a_killed_one_shot_says_the_checkpoint_it_resumes_from,
			fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(the_same_command_twice_at_once_says_it_is_running,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_one_shot_over_memlock_is_told_its_options,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_one_shot_state_dir_it_cannot_use_names_the_option,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_sparse_source_gives_a_sparse_destination,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_sparse_copy_fits_where_its_data_fits,
						fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
