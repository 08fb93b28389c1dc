// SPDX-License-Identifier: MIT
/*
 * What a newcomer does that must never lose data silently: a destination
 * that is the daemon's own state, a partial destination changed while the
 * pipeline is stopped, two daemons on one state_dir, a state_dir that
 * cannot hold a checkpoint, a FIFO as source, and `status` after kill -9.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"
#include "daemon_fx.h"

#ifndef IOU_BIN
#error "IOU_BIN: path of the iou-offloadd binary under test"
#endif

static void conf_with_dest(struct fx *f, const char *dest)
{
	char buf[4096];

	snprintf(buf, sizeof(buf), "[pipeline p]\ntransform = copy\nsource = @D/src\n"
		 "destination = %s\n", dest);
	write_conf(f, "", buf);
}

/* the run, and --check-config --open, refuse @dest and leave @keep as it was */
static void refused_as_private(struct fx *f, const char *dest, const char *keep)
{
	char *once[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *open_[] = { IOU_BIN, "--check-config", "--open", f->conf, NULL };
	char *kp = tu_path(f->dir, keep);
	size_t before_len, after_len;
	char *before, *after;

	conf_with_dest(f, dest);
	assert_int_equal(run_bin(f, open_), 78);
	assert_true(file_has(f->err, "the daemon's own"));
	before = tu_read_file(kp, &before_len);
	assert_non_null(before);
	assert_int_equal(run_bin(f, once), 1);
	assert_true(file_has(f->err, "the daemon's own"));
	after = tu_read_file(kp, &after_len);
	assert_non_null(after);
	/* the status file is rewritten by the run: it must still be a status file */
	if (strstr(keep, "status"))
		assert_non_null(strstr(after, "pid="));
	else
		assert_memory_equal(before, after, before_len < after_len ? before_len : after_len);
	assert_null(strstr(slurp(f->err), "finished,"));
	free(before);
	free(after);
	free(kp);
}

static void a_destination_in_state_dir_or_runtime_dir_is_refused(void **state)
{
	struct fx *f = *state;
	char *once[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *link = tu_path(f->dir, "alias"), *target = tu_path(f->dir, "state");

	make_src(f, "src", 3000007, 71);
	/* a first run leaves a checkpoint and a status file to aim at */
	conf_with_dest(f, "@D/out");
	assert_int_equal(run_bin(f, once), 0);
	refused_as_private(f, "@D/state/p.ckpt", "state/p.ckpt");
	refused_as_private(f, "@D/run/status", "run/status");
	/* by identity: another path to the same directory */
	assert_int_equal(symlink(target, link), 0);
	refused_as_private(f, "@D/alias/p.ckpt", "state/p.ckpt");
	/* a file not yet there, inside state_dir, is refused too */
	refused_as_private(f, "@D/state/new-file", "state/p.ckpt");
	free(link);
	free(target);
}

static void a_hard_link_to_a_checkpoint_is_refused_as_a_source(void **state)
{
	struct fx *f = *state;
	char *once[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *ck = tu_path(f->dir, "state/p.ckpt"), *ln = tu_path(f->dir, "elsewhere");
	char buf[512];

	make_src(f, "src", 1 << 20, 72);
	conf_with_dest(f, "@D/out");
	assert_int_equal(run_bin(f, once), 0);
	assert_int_equal(link(ck, ln), 0);
	snprintf(buf, sizeof(buf), "[pipeline q]\ntransform = copy\nsource = @D/elsewhere\n"
		 "destination = @D/out2\n");
	write_conf(f, "", buf);
	assert_int_equal(run_bin(f, once), 1);
	assert_true(file_has(f->err, "the daemon's own"));
	free(ck);
	free(ln);
}

/*
 * the destination has @bytes: the copy is under way. Its size, not the status
 * file, which is written once a second: a fast copy is done by then
 */
static bool wait_dest(struct fx *f, const char *name, off_t bytes, int timeout_s)
{
	char *path = tu_path(f->dir, name);
	struct stat st;
	bool ok = false;

	for (int i = 0; i < timeout_s * 1000 && !ok; i++) {
		ok = stat(path, &st) == 0 && st.st_size >= bytes;
		if (!ok)
			usleep(1000);
	}
	free(path);
	return ok;
}

/* exit 3 part way; 0 if the copy finished before the signal (caller skips) */
static int stop_part_way(struct fx *f)
{
	char *argv[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *state_dir = tu_path(f->dir, "state");
	struct checkpoint ck;
	pid_t pid;
	int rc;

	pid = spawn(f, argv);
	assert_true(wait_dest(f, "out", 8 << 20, 60));
	/* held still while the stop is asked for: it cannot finish first */
	kill(pid, SIGSTOP);
	kill(pid, SIGTERM);
	kill(pid, SIGCONT);
	rc = wait_exit(pid, 60);
	assert_int_equal(checkpoint_load(state_dir, "big", &ck), 0);
	free(state_dir);
	if (ck.state == CKPT_FINISHED)
		return 0;
	assert_int_equal(ck.state, CKPT_STOPPED);
	assert_int_equal(rc, 3);
	assert_true(ck.done >= (1 << 20));
	return 3;
}

/*
 * Zeroed in place while stopped, mtime put back: the inode and size are the
 * same, only the ctime tells. The next run must not vouch for those bytes.
 */
static void a_destination_changed_while_stopped_is_copied_again(void **state)
{
	struct fx *f = *state;
	char *once[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *out = tu_path(f->dir, "out");
	static char zero[1 << 20];
	struct timespec ts[2];
	struct stat st;
	int fd;

	make_src(f, "src", 256 << 20, 73);
	write_conf(f, "block_size = 4K\nqueue_depth = 1\ncheckpoint_interval = 256K\n", BIG_COPY);
	if (!stop_part_way(f)) {
		print_message("skipped: the copy finished before SIGTERM arrived\n");
		skip();
	}
	assert_int_equal(stat(out, &st), 0);
	fd = open(out, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, zero, sizeof(zero), 0), sizeof(zero));
	close(fd);
	ts[0] = st.st_atim;
	ts[1] = st.st_mtim;
	assert_int_equal(utimensat(AT_FDCWD, out, ts, 0), 0);
	assert_int_equal(run_bin(f, once), 0);
	assert_true(file_has(f->err, "changed while the pipeline was stopped"));
	same_files(f, "src", "out");
	free(out);
}

/* untouched while stopped: the next run resumes where the last one stopped */
static void an_untouched_stopped_destination_resumes(void **state)
{
	struct fx *f = *state;
	char *once[] = { IOU_BIN, "-c", f->conf, "--once", NULL };

	make_src(f, "src", 256 << 20, 74);
	write_conf(f, "block_size = 4K\nqueue_depth = 1\ncheckpoint_interval = 256K\n", BIG_COPY);
	if (!stop_part_way(f)) {
		print_message("skipped: the copy finished before SIGTERM arrived\n");
		skip();
	}
	assert_int_equal(run_bin(f, once), 0);
	assert_true(file_has(f->err, "resuming at byte"));
	same_files(f, "src", "out");
}

static void a_second_daemon_on_the_same_state_dir_is_refused(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, NULL };
	char *conf2 = tu_path(f->dir, "second.conf");
	char *second[] = { IOU_BIN, "-c", conf2, "--once", NULL };
	char buf[2048], want[256];
	pid_t pid;

	make_src(f, "src", 64 << 20, 75);
	make_src(f, "src2", 1 << 20, 76);
	write_conf(f, "block_size = 4K\nqueue_depth = 1\n", BIG_COPY);
	pid = spawn(f, argv);
	assert_true(wait_progress(f, "big", 256 << 10, 60));
	/* its own runtime_dir, the same state_dir: a pipeline of the same name */
	snprintf(buf, sizeof(buf), "[daemon]\nstate_dir = %s/state\nruntime_dir = %s/run2\n"
		 "engine = uring\n[pipeline big]\ntransform = copy\nsource = %s/src2\n"
		 "destination = %s/out2\n", f->dir, f->dir, f->dir, f->dir);
	assert_int_equal(tu_write_file(conf2, buf, strlen(buf)), 0);
	assert_int_equal(run_bin(f, second), 1);
	snprintf(want, sizeof(want), "in use by another iou-offloadd (pid %d,", (int)pid);
	assert_true(file_has(f->err, want));
	/* and the same runtime_dir under another state_dir */
	snprintf(buf, sizeof(buf), "[daemon]\nstate_dir = %s/state2\nruntime_dir = %s/run\n"
		 "engine = uring\n[pipeline big]\ntransform = copy\nsource = %s/src2\n"
		 "destination = %s/out2\n", f->dir, f->dir, f->dir, f->dir);
	assert_int_equal(tu_write_file(conf2, buf, strlen(buf)), 0);
	assert_int_equal(run_bin(f, second), 1);
	assert_true(file_has(f->err, want));
	assert_int_equal(access(tu_path(f->dir, "out2"), F_OK), -1);
	kill(pid, SIGTERM);
	assert_int_equal(wait_exit(pid, 60), 0);
	free(conf2);
}

/* a stop whose record cannot be written says so, and claims nothing */
static void a_stop_without_a_written_checkpoint_does_not_claim_one(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *sd = tu_path(f->dir, "state"), *gone = tu_path(f->dir, "state.gone");
	pid_t pid;

	make_src(f, "src", 256 << 20, 77);
	write_conf(f, "block_size = 4K\nqueue_depth = 1\n", BIG_COPY);
	pid = spawn(f, argv);
	assert_true(wait_dest(f, "out", 256 << 10, 60));
	/* held still, so it cannot finish first however fast the machine is */
	kill(pid, SIGSTOP);
	/* moved away whole (a removal races the records being written into it) */
	assert_int_equal(rename(sd, gone), 0);
	kill(pid, SIGTERM);
	kill(pid, SIGCONT);
	assert_int_equal(wait_exit(pid, 60), 3);
	assert_true(file_has(f->err, "cannot write checkpoint"));
	assert_null(strstr(slurp(f->err), "(checkpointed)"));
	assert_true(file_has(f->err, "not checkpointed"));
	free(sd);
	free(gone);
}

/* a state_dir that is a file, or read-only: refused before a byte is copied */
static void an_unusable_state_dir_is_refused_up_front(void **state)
{
	struct fx *f = *state;
	char *once[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *open_[] = { IOU_BIN, "--check-config", "--open", f->conf, NULL };
	char *sd = tu_path(f->dir, "state");

	make_src(f, "src", 1 << 20, 78);
	assert_int_equal(tu_write_file(sd, "x", 1), 0);
	conf_with_dest(f, "@D/out");
	assert_int_equal(run_bin(f, open_), 78);
	assert_true(file_has(f->err, "state_dir"));
	assert_true(file_has(f->err, "is not a directory"));
	assert_int_equal(run_bin(f, once), 1);
	assert_true(file_has(f->err, "is not a directory"));
	assert_int_equal(access(tu_path(f->dir, "out"), F_OK), -1);
	free(sd);
}

static void a_read_only_state_dir_is_refused_up_front(void **state)
{
	struct fx *f = *state;
	char *once[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *open_[] = { IOU_BIN, "--check-config", "--open", f->conf, NULL };
	char *sd = tu_path(f->dir, "state");
	char buf[512];

	/* root writes through a mode; a read-only bind is what stops it, and /proc is one */
	make_src(f, "src", 1 << 20, 79);
	snprintf(buf, sizeof(buf), "[daemon]\nstate_dir = /proc/self\nruntime_dir = %s/run\n"
		 "[pipeline p]\ntransform = copy\nsource = %s/src\ndestination = %s/out\n",
		 f->dir, f->dir, f->dir);
	assert_int_equal(tu_write_file(f->conf, buf, strlen(buf)), 0);
	assert_int_equal(run_bin(f, open_), 78);
	assert_true(file_has(f->err, "state_dir /proc/self"));
	assert_int_equal(run_bin(f, once), 1);
	assert_true(file_has(f->err, "state_dir /proc/self"));
	assert_int_equal(access(tu_path(f->dir, "out"), F_OK), -1);
	free(sd);
}

/* opening a FIFO blocks until a writer comes: never open one */
static void a_fifo_source_is_refused_without_blocking(void **state)
{
	struct fx *f = *state;
	char *once[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	char *open_[] = { IOU_BIN, "--check-config", "--open", f->conf, NULL };
	char *fifo = tu_path(f->dir, "fifo");

	assert_int_equal(mkfifo(fifo, 0600), 0);
	write_conf(f, "", "[pipeline p]\ntransform = copy\nsource = @D/fifo\n"
		   "destination = @D/out\n");
	assert_int_equal(wait_exit(spawn(f, open_), 10), 78);
	assert_true(file_has(f->err, "is a FIFO"));
	assert_int_equal(wait_exit(spawn(f, once), 10), 1);
	assert_true(file_has(f->err, "is a FIFO"));
	free(fifo);
}

/* SIGTERM while it waits for another process's lock: out within a second */
static void sigterm_ends_a_wait_for_a_lock_at_once(void **state)
{
	struct fx *f = *state;
	char *first[] = { IOU_BIN, "-c", f->conf, NULL };
	char *conf2 = tu_path(f->dir, "second.conf");
	char *second[] = { IOU_BIN, "-c", conf2, "--once", NULL };
	struct timespec t0, t1;
	char buf[1024];
	pid_t a, b;
	int rc;

	make_src(f, "src", 256 << 20, 85);
	write_conf(f, "block_size = 4K\nqueue_depth = 1\n", BIG_COPY);
	a = spawn(f, first);
	assert_true(wait_dest(f, "out", 64 << 10, 60));
	/* another daemon, its own state, the same destination: it waits for the lock */
	snprintf(buf, sizeof(buf), "[daemon]\nstate_dir = %s/state2\nruntime_dir = %s/run2\n"
		 "engine = uring\n[pipeline other]\ntransform = copy\nsource = %s/src\n"
		 "destination = %s/out\n", f->dir, f->dir, f->dir, f->dir);
	assert_int_equal(tu_write_file(conf2, buf, strlen(buf)), 0);
	b = spawn(f, second);
	usleep(800000);		/* setup done, inside the 3 s wait */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	kill(b, SIGTERM);
	rc = wait_exit(b, 10);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	print_message("exit %d after %.3f s\n", rc,
		      (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	assert_true((t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9 < 1.0);
	assert_int_equal(rc, 3);
	kill(a, SIGTERM);
	wait_exit(a, 60);
	free(conf2);
}

/* a dangling symlink as destination is named for what it is */
static void a_dangling_symlink_destination_is_named(void **state)
{
	struct fx *f = *state;
	char *open_[] = { IOU_BIN, "--check-config", "--open", f->conf, NULL };
	char *ln = tu_path(f->dir, "out");

	make_src(f, "src", 1 << 20, 80);
	assert_int_equal(symlink("/nonexistent/iou-target", ln), 0);
	conf_with_dest(f, "@D/out");
	assert_int_equal(run_bin(f, open_), 78);
	assert_true(file_has(f->err, "dangling symbolic link"));
	free(ln);
}

/* /proc/cpuinfo says 0 bytes: refused with the reason, not "finished, 0 bytes" */
static void a_procfs_source_is_refused_with_the_reason(void **state)
{
	struct fx *f = *state;
	char *once[] = { IOU_BIN, "-c", f->conf, "--once", NULL };

	write_conf(f, "", "[pipeline p]\ntransform = copy\nsource = /proc/cpuinfo\n"
		   "destination = @D/out\n");
	assert_int_equal(run_bin(f, once), 1);
	assert_true(file_has(f->err, "is on procfs"));
	assert_int_equal(access(tu_path(f->dir, "out"), F_OK), -1);
}

/* after an early kill -9 the status file lags; the checkpoint is the truth */
static void status_after_kill_9_reports_the_checkpoint(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, NULL };
	char *st[] = { IOU_BIN, "status", "-c", f->conf, NULL };
	char *sd = tu_path(f->dir, "state");
	struct checkpoint ck;
	char want[128];
	pid_t pid;

	make_src(f, "src", 256 << 20, 81);
	write_conf(f, "block_size = 4K\nqueue_depth = 1\ncheckpoint_interval = 256K\n",
		   BIG_COPY);
	pid = spawn(f, argv);
	/* the status file is written once a second: kill right after it first says running */
	assert_true(wait_state(f, "big", "running", 60));
	assert_true(wait_progress(f, "big", 1, 60));
	usleep(300000);
	kill(pid, SIGKILL);
	wait_exit(pid, 30);
	assert_int_equal(checkpoint_load(sd, "big", &ck), 0);
	if (ck.state == CKPT_FINISHED) {
		print_message("skipped: the copy finished before SIGKILL arrived\n");
		free(sd);
		skip();
	}
	/* not running: status says so in its exit status too (3, as systemctl) */
	assert_int_equal(run_bin(f, st), 3);
	snprintf(want, sizeof(want), "a restart resumes at byte %" PRIu64 "\n", ck.done);
	assert_true(file_has(f->out, want));
	free(sd);
}

/* --check-config --open says what the run would meet: too few descriptors */
static void check_config_open_counts_descriptors_against_nofile(void **state)
{
	struct fx *f = *state;
	char *open_[] = { IOU_BIN, "--check-config", "--open", f->conf, NULL };
	size_t len = 64 * 160, off = 0;
	char *buf = malloc(len);

	make_src(f, "src", 4096, 82);
	for (int i = 0; i < 40; i++)
		off += snprintf(buf + off, len - off, "[pipeline p%d]\ntransform = copy\n"
				"source = @D/src\ndestination = @D/out%d\n", i, i);
	write_conf(f, "", buf);
	free(buf);
	assert_int_equal(wait_exit(spawn_with(f, open_, &(struct spawn_opts){
		.rlimit = RLIMIT_NOFILE, .lim = 64 }), 60), 78);
	assert_true(file_has(f->err, "RLIMIT_NOFILE is 64"));
	assert_true(file_has(f->err, "LimitNOFILE="));
	assert_int_equal(wait_exit(spawn_with(f, open_, &(struct spawn_opts){
		.rlimit = RLIMIT_NOFILE, .lim = 4096 }), 60), 0);
}

/* and too little locked memory, for someone without CAP_IPC_LOCK */
static void check_config_open_counts_buffers_against_memlock(void **state)
{
	struct fx *f = *state;
	char *open_[] = { IOU_BIN, "--check-config", "--open", f->conf, NULL };
	const char *const readable[] = { "src", NULL };
	char buf[1024];
	int rc;

	make_src(f, "src", 64 << 20, 83);
	/* the defaults, 16 x 1 MiB, twice: over Debian's 8 MiB */
	snprintf(buf, sizeof(buf), "[daemon]\nstate_dir = %s/st\nruntime_dir = %s/rt\n"
		 "engine = uring\n[pipeline a]\ntransform = copy\nsource = %s/src\n"
		 "destination = %s/a\n[pipeline b]\ntransform = copy\nsource = %s/src\n"
		 "destination = %s/b\n", f->dir, f->dir, f->dir, f->dir, f->dir, f->dir);
	assert_int_equal(tu_write_file(f->conf, buf, strlen(buf)), 0);
	/* root has CAP_IPC_LOCK: the child becomes nobody */
	rc = run_as_nobody(f, open_, (struct spawn_opts){ .rlimit = RLIMIT_MEMLOCK,
							  .lim = 8 << 20 }, readable);
	if (rc == -2)
		skip();
	assert_int_equal(rc, 78);
	assert_true(file_has(f->err, "RLIMIT_MEMLOCK is 8192 KiB"));
	assert_true(file_has(f->err, "32"));
}

/* a 1-byte file with block_size = 256M pins a page, not 256 MiB */
static void buffers_are_sized_to_the_file_not_the_block(void **state)
{
	struct fx *f = *state;
	char *once[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	const char *const readable[] = { "src", NULL };
	char buf[1024];
	int rc;

	make_src(f, "src", 1, 84);
	snprintf(buf, sizeof(buf), "[daemon]\nstate_dir = %s/st\nruntime_dir = %s/rt\n"
		 "engine = uring\nblock_size = 256M\n[pipeline a]\ntransform = copy\n"
		 "source = %s/src\ndestination = %s/out\n", f->dir, f->dir, f->dir, f->dir);
	assert_int_equal(tu_write_file(f->conf, buf, strlen(buf)), 0);
	/* as nobody (root has CAP_IPC_LOCK), under 1 MiB of locked memory */
	rc = run_as_nobody(f, once, (struct spawn_opts){ .rlimit = RLIMIT_MEMLOCK,
							 .lim = 1 << 20 }, readable);
	if (rc == -2)
		skip();
	assert_int_equal(rc, 0);
	same_files(f, "src", "out");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(a_destination_in_state_dir_or_runtime_dir_is_refused,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_hard_link_to_a_checkpoint_is_refused_as_a_source,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_destination_changed_while_stopped_is_copied_again,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(an_untouched_stopped_destination_resumes,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_second_daemon_on_the_same_state_dir_is_refused,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_stop_without_a_written_checkpoint_does_not_claim_one,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(an_unusable_state_dir_is_refused_up_front,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_read_only_state_dir_is_refused_up_front,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_fifo_source_is_refused_without_blocking,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(sigterm_ends_a_wait_for_a_lock_at_once,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_dangling_symlink_destination_is_named,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_procfs_source_is_refused_with_the_reason,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(status_after_kill_9_reports_the_checkpoint,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(check_config_open_counts_descriptors_against_nofile,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(check_config_open_counts_buffers_against_memlock,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(buffers_are_sized_to_the_file_not_the_block,
						fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
