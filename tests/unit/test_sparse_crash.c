// SPDX-License-Identifier: MIT
/*
 * A crash (kill -9, a power cut) in a sparse source's hole: the checkpoint
 * goes through the holes as through data, and the next start resumes there,
 * not at 0 (a multi-TiB sparse image copied again from its start), while a
 * destination cut into what the checkpoint vouches for is still caught.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "daemon_fx.h"

#ifndef IOU_BIN
#error "IOU_BIN: path of the iou-offloadd binary under test"
#endif

#define MiB	(1ULL << 20)

/* @D/src: 1 MiB of data, a hole up to @hole_end, then @tail bytes of data */
static void sparse_src(struct fx *f, uint64_t hole_end, uint64_t tail)
{
	char *path = tu_path(f->dir, "src");
	static char buf[1 << 20];
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);

	assert_true(fd >= 0);
	tu_fill(buf, sizeof(buf), 301);
	assert_int_equal(pwrite(fd, buf, sizeof(buf), 0), sizeof(buf));
	assert_int_equal(ftruncate(fd, hole_end), 0);
	for (uint64_t at = 0; at < tail; at += sizeof(buf)) {
		size_t n = tail - at < sizeof(buf) ? tail - at : sizeof(buf);

		tu_fill(buf, n, 302 + at / sizeof(buf));
		assert_int_equal(pwrite(fd, buf, n, hole_end + at), (ssize_t)n);
	}
	close(fd);
	free(path);
}

/* @D/@a and @D/@b hold the same bytes: compared where either has data (holes read as zeros) */
static void same_sparse(struct fx *f, const char *a, const char *b)
{
	char *pa = tu_path(f->dir, a), *pb = tu_path(f->dir, b);
	static char ba[1 << 20], bb[1 << 20];
	int fa = open(pa, O_RDONLY), fb = open(pb, O_RDONLY);
	struct stat sa, sb;

	assert_true(fa >= 0 && fb >= 0);
	assert_int_equal(fstat(fa, &sa), 0);
	assert_int_equal(fstat(fb, &sb), 0);
	assert_int_equal(sa.st_size, sb.st_size);
	for (int k = 0; k < 2; k++) {
		int fd = k ? fb : fa;
		off_t at = 0, end;

		while ((at = lseek(fd, at, SEEK_DATA)) >= 0) {
			end = lseek(fd, at, SEEK_HOLE);
			while (at < end) {
				size_t n = end - at < (off_t)sizeof(ba) ? (size_t)(end - at) : sizeof(ba);

				assert_int_equal(pread(fa, ba, n, at), (ssize_t)n);
				assert_int_equal(pread(fb, bb, n, at), (ssize_t)n);
				assert_memory_equal(ba, bb, n);
				at += n;
			}
		}
	}
	close(fa);
	close(fb);
	free(pa);
	free(pb);
}

static int resume(struct fx *f)
{
	return run_bin(f, ((char *[]){ IOU_BIN, "-c", f->conf, "--once", NULL }));
}

/*
 * kill -9 once the checkpoint stands at @at and the copy goes on past it;
 * false when it finished or checkpointed again first (the caller skips)
 */
static bool kill_9_at(struct fx *f, uint64_t at)
{
	char *sd = tu_path(f->dir, "state");
	struct checkpoint ck = { 0 };
	pid_t pid;

	pid = spawn(f, ((char *[]){ IOU_BIN, "-c", f->conf, "--once", NULL }));
	for (int i = 0; i < 60000; i++) {
		if (!checkpoint_load(sd, "big", &ck) && (ck.done >= at || ck.state != CKPT_RUNNING))
			break;
		usleep(1000);
	}
	kill(pid, SIGKILL);
	wait_exit(pid, 30);
	assert_int_equal(checkpoint_load(sd, "big", &ck), 0);
	free(sd);
	return ck.state == CKPT_RUNNING && ck.done == at;
}

/*
 * 1 MiB of data, a 4 GiB hole, 128 MiB of data: the data after the hole lies
 * past the writes' window (checkpoint_interval 1G), so a checkpoint stands at
 * the hole's end before it is written. Killed then, and the power cut before
 * any write past the checkpoint reached the disk: the destination ends at its
 * first MiB, 4 GiB short of the checkpoint. 0 when the copy outran the kill.
 */
static uint64_t crash_at_the_end_of_a_hole(struct fx *f)
{
	uint64_t hole_end = 4096 * MiB;
	char *out = tu_path(f->dir, "out");

	sparse_src(f, hole_end, 128 * MiB);
	write_conf(f, "block_size = 4K\nqueue_depth = 1\ncheckpoint_interval = 1G\n", BIG_COPY);
	if (!kill_9_at(f, hole_end)) {
		free(out);
		return 0;
	}
	assert_int_equal(truncate(out, MiB), 0);
	free(out);
	return hole_end;
}

/* it resumed at 0: the short destination was taken for one cut behind its back */
static void a_crash_checkpointed_in_a_hole_resumes_there(void **state)
{
	struct fx *f = *state;
	char want[96];
	uint64_t at = crash_at_the_end_of_a_hole(f);

	if (!at) {
		print_message("skipped: the copy went past its checkpoint before SIGKILL\n");
		skip();
	}
	assert_int_equal(resume(f), 0);
	snprintf(want, sizeof(want), "resuming at byte %llu of", (unsigned long long)at);
	assert_true(file_has(f->err, want));
	assert_true(file_has(f->err, "the source has only holes from there to the checkpoint"));
	assert_false(strstr(slurp(f->err), "starting at 0"));
	same_sparse(f, "src", "out");
}

/* the data guard: a destination cut into what the checkpoint vouches for */
static void a_destination_cut_into_its_data_after_a_crash_is_copied_again(void **state)
{
	struct fx *f = *state;
	char *out = tu_path(f->dir, "out");

	if (!crash_at_the_end_of_a_hole(f)) {
		print_message("skipped: the copy went past its checkpoint before SIGKILL\n");
		free(out);
		skip();
	}
	assert_int_equal(truncate(out, 65536), 0);
	assert_int_equal(resume(f), 0);
	assert_true(file_has(f->err, "is shorter than the checkpoint says: starting at 0"));
	same_sparse(f, "src", "out");
	free(out);
}

/*
 * No checkpoint was written while holes were skipped: a kill -9 seconds into
 * a long hole found the checkpoint where the data before it ended, and the
 * restart skipped (and, with checksums, summed) the hole again from there
 */
static void a_kill_9_in_a_long_hole_keeps_its_progress(void **state)
{
	struct fx *f = *state;
	char *sd = tu_path(f->dir, "state");
	uint64_t hole_end = 8ULL << 40;
	struct checkpoint ck = { 0 };
	char want[96];
	pid_t pid;

	/* 8 TiB of hole in 4K blocks: seconds to skip, past the first checkpoint by time */
	sparse_src(f, hole_end, MiB);
	write_conf(f, "block_size = 4K\n", BIG_COPY);
	pid = spawn(f, ((char *[]){ IOU_BIN, "-c", f->conf, "--once", NULL }));
	for (int i = 0; i < 3000; i++) {
		if (!checkpoint_load(sd, "big", &ck) && (ck.done > MiB || ck.state != CKPT_RUNNING))
			break;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	wait_exit(pid, 30);
	assert_int_equal(checkpoint_load(sd, "big", &ck), 0);
	assert_int_equal(ck.state, CKPT_RUNNING);
	/* in the hole, recorded before its end */
	assert_true(ck.done > MiB);
	assert_true(ck.done < hole_end);
	/* the restart goes on from there (the destination ends at its first MiB) */
	pid = spawn(f, ((char *[]){ IOU_BIN, "-c", f->conf, "--once", NULL }));
	snprintf(want, sizeof(want), "resuming at byte %llu of", (unsigned long long)ck.done);
	for (int i = 0; i < 3000 && !strstr(slurp(f->err), "resuming at byte"); i++)
		usleep(10000);
	kill(pid, SIGTERM);
	assert_int_equal(wait_exit(pid, 30), 3);
	assert_true(file_has(f->err, want));
	free(sd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(a_crash_checkpointed_in_a_hole_resumes_there,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(
			a_destination_cut_into_its_data_after_a_crash_is_copied_again,
			fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_kill_9_in_a_long_hole_keeps_its_progress,
						fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
