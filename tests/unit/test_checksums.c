// SPDX-License-Identifier: MIT
/*
 * checksum = crc32c and `iou-offloadd verify`: every block's CRC32C in a
 * manifest beside the checkpoint, read back from each destination.
 */
#include <fcntl.h>
#include <linux/falloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checksum.h"
#include "daemon_fx.h"

#ifndef IOU_BIN
#error "IOU_BIN: path of the iou-offloadd binary under test"
#endif

static char *const *once(struct fx *f)
{
	static char *argv[5];

	argv[0] = IOU_BIN;
	argv[1] = "-c";
	argv[2] = f->conf;
	argv[3] = "--once";
	return argv;
}

static int verify(struct fx *f, const char *extra)
{
	char *argv[] = { IOU_BIN, "verify", "-c", f->conf, (char *)extra, NULL };

	return run_bin(f, argv);
}

/* flip one byte of @name at @off */
static void flip(struct fx *f, const char *name, off_t off)
{
	char *path = tu_path(f->dir, name), c;
	int fd = open(path, O_RDWR);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, off), 1);
	c ^= 0x5a;
	assert_int_equal(pwrite(fd, &c, 1, off), 1);
	close(fd);
	free(path);
}

static void crc32c_gives_the_standard_check_value(void **state)
{
	(void)state;
	/* the check value of CRC-32C (Castagnoli) over "123456789" */
	assert_int_equal(checksum_crc32c(0, "123456789", 9), 0xe3069283);
	/* in pieces, the same */
	assert_int_equal(checksum_crc32c(checksum_crc32c(0, "1234", 4), "56789", 5), 0xe3069283);
}

static void a_mirror_verifies_and_a_changed_byte_on_one_leg_is_found(void **state)
{
	struct fx *f = *state;
	char want[4300];

	make_src(f, "src", 5000011, 201);
	write_conf(f, "checksum = crc32c\nblock_size = 64K\n",
		   "[pipeline m]\ntransform = mirror\nsource = @D/src\ndestination = @D/a\n"
		   "destination = @D/b\n");
	assert_int_equal(run_bin(f, once(f)), 0);
	assert_int_equal(verify(f, "--source"), 0);
	assert_true(file_has(f->out, "m: 77 block(s) of 65536 bytes on 3 file sets"));
	flip(f, "b", 3 * 65536 + 17);
	assert_int_equal(verify(f, NULL), 1);
	snprintf(want, sizeof(want), "m: mismatch: %s/b offset 196608 length 65536", f->dir);
	assert_true(file_has(f->out, want));
	assert_true(file_has(f->out, "1 mismatch(es)"));
	/* the other leg is fine: one mismatch in all */
	assert_null(strstr(slurp(f->out), "/a offset"));
}

static void a_stripe_verifies_through_its_members(void **state)
{
	struct fx *f = *state;

	make_src(f, "src", 3 << 20, 202);
	write_conf(f, "checksum = crc32c\nblock_size = 256K\n",
		   "[pipeline s]\ntransform = stripe\nstripe_unit = 16K\nsource = @D/src\n"
		   "destination = @D/s0\ndestination = @D/s1\ndestination = @D/s2\n");
	assert_int_equal(run_bin(f, once(f)), 0);
	assert_int_equal(verify(f, NULL), 0);
	flip(f, "s2", 100000);
	assert_int_equal(verify(f, NULL), 1);
	assert_true(file_has(f->out, "mismatch: stripe over 3 members"));
}

static void a_resumed_copy_continues_its_manifest(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "-c", f->conf, "--once", NULL };
	struct stat st;
	char *out = tu_path(f->dir, "out");
	pid_t pid;
	int rc;

	make_src(f, "src", 256 << 20, 203);
	write_conf(f, "checksum = crc32c\nblock_size = 4K\nqueue_depth = 1\n"
		   "checkpoint_interval = 256K\n", BIG_COPY);
	pid = spawn(f, argv);
	for (int i = 0; i < 6000 && (stat(out, &st) || st.st_size < (8 << 20)); i++)
		usleep(1000);
	kill(pid, SIGSTOP);
	kill(pid, SIGTERM);
	kill(pid, SIGCONT);
	rc = wait_exit(pid, 60);
	assert_int_equal(rc, 3);
	assert_int_equal(run_bin(f, once(f)), 0);
	assert_true(file_has(f->err, "resuming at byte"));
	assert_int_equal(verify(f, "--source"), 0);
	same_files(f, "src", "out");
	free(out);
}

/*
 * A resume continues the copy as it was begun: without --checksum again it
 * left the manifest of the blocks before the stop, which verify then read
 * as the whole copy's (every later block a mismatch)
 */
static void a_resume_without_checksum_goes_on_summing(void **state)
{
	struct fx *f = *state;
	char *out = tu_path(f->dir, "out"), *src = tu_path(f->dir, "src");
	char *sd = tu_path(f->dir, "os");
	struct stat st;
	pid_t pid;

	make_src(f, "src", 128 << 20, 212);
	pid = spawn(f, ((char *[]){ IOU_BIN, "copy", "--engine=uring", "--checksum",
				    "--block-size=4K", "--queue-depth=1", "--state-dir", sd, src,
				    out, NULL }));
	for (int i = 0; i < 6000 && (stat(out, &st) || st.st_size < (8 << 20)); i++)
		usleep(1000);
	kill(pid, SIGTERM);
	assert_int_equal(wait_exit(pid, 60), 3);
	assert_int_equal(run_bin(f, ((char *[]){ IOU_BIN, "copy", "--engine=uring", "--state-dir",
						 sd, src, out, NULL })), 0);
	assert_true(file_has(f->err, "resuming at byte"));
	assert_true(file_has(f->err, "this copy was begun with checksums: the resume sums the "
			     "rest of it too"));
	assert_int_equal(run_bin(f, ((char *[]){ IOU_BIN, "verify", "copy", "--source",
						 "--state-dir", sd, src, out, NULL })), 0);
	assert_true(file_has(f->out, "32768 block(s) of 4096 bytes on 2 file sets (the source "
			     "too): 0 mismatch(es)"));
	free(out);
	free(src);
	free(sd);
}

static void verify_without_a_manifest_exits_4(void **state)
{
	struct fx *f = *state;

	make_src(f, "src", 4096, 204);
	write_conf(f, "", "[pipeline p]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/out\n");
	assert_int_equal(run_bin(f, once(f)), 0);
	assert_int_equal(verify(f, NULL), 4);
	assert_true(file_has(f->err, "checksum = none"));
}

/* a damaged or deleted manifest said "nothing to verify" (4), which a scrub timer passes */
static void a_damaged_or_lost_manifest_fails_verify(void **state)
{
	struct fx *f = *state;
	char *sums = tu_path(f->dir, "state/p.sums");

	make_src(f, "src", 1 << 20, 207);
	write_conf(f, "checksum = crc32c\n", "[pipeline p]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/out\n");
	assert_int_equal(run_bin(f, once(f)), 0);
	assert_int_equal(verify(f, NULL), 0);
	assert_int_equal(truncate(sums, 100), 0);
	assert_int_equal(verify(f, NULL), 1);
	assert_true(file_has(f->err, "is damaged: its sums are lost"));
	assert_int_equal(unlink(sums), 0);
	assert_int_equal(verify(f, NULL), 1);
	assert_true(file_has(f->err, "is gone, though the pipeline has run"));
	free(sums);
}

static void checksums_on_the_loop_engine_are_refused_at_their_line(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "--check-config", f->conf, NULL };

	write_conf(f, "", "[pipeline p]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/out\nengine = loop\nchecksum = crc32c\n");
	assert_int_equal(run_bin(f, argv), 78);
	assert_true(file_has(f->err, ":10: [pipeline p]: checksum = crc32c needs engine"));
}

/* a one-shot's state dir, source and destination in the test's directory */
static void one_shot_paths(struct fx *f, char sd[4200], char src[4200], char dst[4200])
{
	snprintf(sd, 4200, "%s/os", f->dir);
	snprintf(src, 4200, "%s/src", f->dir);
	snprintf(dst, 4200, "%s/dst", f->dir);
}

/* the one-shot form: copy --checksum, then verify copy with the same words */
static void a_one_shot_copy_with_checksums_verifies_by_the_same_command(void **state)
{
	struct fx *f = *state;
	char sd[4200], src[4200], dst[4200];

	one_shot_paths(f, sd, src, dst);
	make_src(f, "src", 3 << 20, 205);
	assert_int_equal(run_bin(f, ((char *[]){ IOU_BIN, "copy", "--checksum", "--state-dir",
						 sd, src, dst, NULL })), 0);
	assert_int_equal(run_bin(f, ((char *[]){ IOU_BIN, "verify", "copy", "--checksum",
						 "--state-dir", sd, "--source", src, dst,
						 NULL })), 0);
	assert_true(file_has(f->out, "copy: 3 block(s)"));
	flip(f, "dst", 5);
	assert_int_equal(run_bin(f, ((char *[]){ IOU_BIN, "verify", "copy", "--checksum",
						 "--state-dir", sd, src, dst, NULL })), 1);
	assert_true(file_has(f->out, "offset 0 length 1048576"));
	/* without --checksum again: the manifest is what counts (it said checksum = none) */
	assert_int_equal(run_bin(f, ((char *[]){ IOU_BIN, "verify", "copy", "--state-dir", sd,
						 src, dst, NULL })), 1);
	assert_true(file_has(f->out, "offset 0 length 1048576"));
}

/* a one-shot run without --checksum: said in its options' words, not a config key's */
static void a_one_shot_verify_without_sums_names_the_option(void **state)
{
	struct fx *f = *state;
	char sd[4200], src[4200], dst[4200];

	one_shot_paths(f, sd, src, dst);
	make_src(f, "src", 1 << 20, 206);
	assert_int_equal(run_bin(f, ((char *[]){ IOU_BIN, "copy", "--state-dir", sd, src, dst,
						 NULL })), 0);
	assert_int_equal(run_bin(f, ((char *[]){ IOU_BIN, "verify", "copy", "--state-dir", sd,
						 src, dst, NULL })), 4);
	assert_true(file_has(f->err, "no checksums recorded for it (was it run with --checksum?)"));
}

/*
 * SIGTERM while a --checksum copy sums a long hole stops it at once (it
 * went on to the hole's end: 85 s for 3 TiB, past the unit's
 * TimeoutStopSec, which ends in SIGKILL).
 */
static void a_stop_ends_the_summing_of_a_long_hole(void **state)
{
	struct fx *f = *state;
	char sd[4200], src[4200], dst[4200];
	pid_t pid;
	int fd;

	one_shot_paths(f, sd, src, dst);
	fd = open(src, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	/* 1 TiB, data only at its end: 16 Mi blocks of 64K to sum as zeros */
	assert_int_equal(ftruncate(fd, 1LL << 40), 0);
	assert_int_equal(pwrite(fd, "xyz", 3, (1LL << 40) - 4096), 3);
	close(fd);
	pid = spawn(f, ((char *[]){ IOU_BIN, "copy", "--engine=uring", "--checksum",
				    "--block-size=64K", "--state-dir", sd, src, dst, NULL }));
	for (int i = 0; i < 3000 && !file_has(f->err, "starting at 0"); i++)
		usleep(10000);
	usleep(300000);
	kill(pid, SIGTERM);
	assert_int_equal(wait_exit(pid, 10), 3);
	assert_true(file_has(f->err, "stopped at byte"));
}

/* @path: @size bytes, 1 MiB of data at its start and "xyz" 4 KiB before its end */
static void sparse_file(const char *path, off_t size)
{
	char data[4096];
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);

	assert_true(fd >= 0);
	for (int i = 0; i < 256; i++) {
		memset(data, i + 1, sizeof(data));
		assert_int_equal(pwrite(fd, data, sizeof(data), i * 4096), 4096);
	}
	assert_int_equal(ftruncate(fd, size), 0);
	assert_int_equal(pwrite(fd, "xyz", 3, size - 4096), 3);
	close(fd);
}

/* file_has() without the message: for polling, and for what must not be there */
static bool has(const char *path, const char *needle)
{
	char *s = slurp(path);
	bool found = strstr(s, needle) != NULL;

	free(s);
	return found;
}

/* a one-shot --checksum copy of a 1 TiB sparse source, stopped in its hole */
static void stop_in_the_hole(struct fx *f, char sd[4200], char src[4200], char dst[4200])
{
	pid_t pid;

	one_shot_paths(f, sd, src, dst);
	sparse_file(src, 1LL << 40);
	pid = spawn(f, ((char *[]){ IOU_BIN, "copy", "--engine=uring", "--checksum",
				    "--block-size=64K", "--state-dir", sd, src, dst, NULL }));
	for (int i = 0; i < 3000 && !has(f->err, "starting at 0"); i++)
		usleep(10000);
	usleep(300000);
	kill(pid, SIGTERM);
	assert_int_equal(wait_exit(pid, 10), 3);
	assert_true(file_has(f->err, "stopped at byte"));
}

/*
 * An unfinished sparse copy's destination ends at its last data; the end of
 * the copy extends it over the holes. verify read past that end as a file
 * cut short (exit 1, a false alarm): below the checkpoint it reads as the
 * zeros the end leaves there. (The stop extends it now; a crash need not.)
 */
static void verify_of_an_unfinished_sparse_copy_finds_no_false_mismatch(void **state)
{
	struct fx *f = *state;
	char sd[4200], src[4200], dst[4200];

	stop_in_the_hole(f, sd, src, dst);
	/* as a crash in the hole leaves it: the data only */
	assert_int_equal(truncate(dst, 1 << 20), 0);
	assert_int_equal(run_bin(f, ((char *[]){ IOU_BIN, "verify", "copy", "--state-dir", sd,
						 src, dst, NULL })), 0);
	assert_true(file_has(f->out, "0 mismatch(es) (up to the checkpoint: the copy is not "
			     "finished)"));
	/* a destination cut into its data is still found */
	assert_int_equal(truncate(dst, 65536), 0);
	assert_int_equal(run_bin(f, ((char *[]){ IOU_BIN, "verify", "copy", "--state-dir", sd,
						 src, dst, NULL })), 1);
	assert_true(file_has(f->out, "15 mismatch(es)"));
}

/* a stop in a hole resumed at 0: its destination was shorter than its checkpoint */
static void a_sparse_copy_stopped_in_a_hole_resumes_there(void **state)
{
	struct fx *f = *state;
	char sd[4200], src[4200], dst[4200];
	pid_t pid;

	stop_in_the_hole(f, sd, src, dst);
	pid = spawn(f, ((char *[]){ IOU_BIN, "copy", "--engine=uring", "--checksum",
				    "--block-size=64K", "--state-dir", sd, src, dst, NULL }));
	/* its setup said where it starts, then that it is ready for signals */
	for (int i = 0; i < 3000 && !has(f->err, "resuming at byte"); i++)
		usleep(10000);
	for (int i = 0; i < 3000 && !has(f->err, "ready"); i++)
		usleep(10000);
	kill(pid, SIGTERM);
	assert_int_equal(wait_exit(pid, 10), 3);
	assert_true(file_has(f->err, "resuming at byte"));
	assert_false(has(f->err, "starting at 0"));
}

/* bytes this process and its reaped children have read (/proc/self/io rchar) */
static uint64_t rchar(void)
{
	FILE *io = fopen("/proc/self/io", "r");
	unsigned long long n = 0;

	assert_non_null(io);
	assert_int_equal(fscanf(io, "rchar: %llu", &n), 1);
	fclose(io);
	return n;
}

/*
 * verify reads no hole (4 TiB of them took many minutes): a hole of the
 * destination is compared with the sum of zeros, so one punched into its
 * data is still a mismatch
 */
static void verify_compares_holes_without_reading_them(void **state)
{
	struct fx *f = *state;
	char sd[4200], src[4200], dst[4200];
	char *vf[] = { IOU_BIN, "verify", "copy", "--source", "--state-dir", sd, src, dst, NULL };
	uint64_t before;
	int fd;

	one_shot_paths(f, sd, src, dst);
	sparse_file(src, 1LL << 30);
	assert_int_equal(run_bin(f, ((char *[]){ IOU_BIN, "copy", "--engine=uring", "--checksum",
						 "--block-size=64K", "--state-dir", sd, src, dst,
						 NULL })), 0);
	before = rchar();
	assert_int_equal(run_bin(f, vf), 0);
	assert_true(file_has(f->out, "16384 block(s) of 65536 bytes on 2 file sets"));
	/* the data, twice, and the manifest: not the GiB of holes */
	assert_true(rchar() - before < (16 << 20));
	fd = open(dst, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 65536, 65536), 0);
	close(fd);
	assert_int_equal(run_bin(f, vf), 1);
	assert_true(file_has(f->out, "offset 65536 length 65536"));
	assert_true(file_has(f->out, "1 mismatch(es)"));
}

/* status --json: every key of the status file, and the last verify from state_dir */
static void status_json_gives_the_pipeline_and_its_last_verify(void **state)
{
	struct fx *f = *state;
	char *st[] = { IOU_BIN, "status", "-c", f->conf, "--json", NULL };

	make_src(f, "src", 2 << 20, 206);
	write_conf(f, "checksum = crc32c\n", "[pipeline j]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/out\n");
	assert_int_equal(run_bin(f, once(f)), 0);
	flip(f, "out", 10);
	assert_int_equal(verify(f, NULL), 1);
	assert_int_equal(run_bin(f, st), 3);	/* not running: as the table */
	assert_true(file_has(f->out, "{\"schema\": 1, \"daemon\": {"));
	assert_true(file_has(f->out, "\"running\": false"));
	assert_true(file_has(f->out, "\"pipelines\": [{\"name\": \"j\", \"state\": \"finished\""));
	assert_true(file_has(f->out, "\"bytes_done\": 2097152"));
	assert_true(file_has(f->out, "\"last_verify\": {\"when\": "));
	assert_true(file_has(f->out, "\"mismatches\": 1, \"complete\": true"));
	assert_true(file_has(f->out, "\"devices\": []}"));
}

/* @from -> @to, once, in the file at @path */
static void replace_in(const char *path, const char *from, const char *to)
{
	char *text = slurp(path), *at = strstr(text, from), *out;
	size_t n;

	assert_non_null(at);
	n = strlen(text) - strlen(from) + strlen(to);
	out = malloc(n + 1);
	assert_non_null(out);
	snprintf(out, n + 1, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
	assert_int_equal(tu_write_file(path, out, n), 0);
	free(out);
	free(text);
}

/*
 * scrub: every finished pipeline read back, kept as its last scrub (status
 * shows it beside the last verify); an unfinished one is named, not failed
 */
static void scrub_reads_finished_pipelines_and_status_shows_the_last_scrub(void **state)
{
	struct fx *f = *state;
	char *scrub[] = { IOU_BIN, "scrub", "-c", f->conf, NULL };
	char *st[] = { IOU_BIN, "status", "-c", f->conf, "--json", NULL };
	char *table[] = { IOU_BIN, "status", "-c", f->conf, NULL };

	make_src(f, "src", 1 << 20, 207);
	write_conf(f, "checksum = crc32c\nblock_size = 64K\n", "[pipeline a]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/out\n");
	assert_int_equal(run_bin(f, once(f)), 0);
	assert_int_equal(run_bin(f, scrub), 0);
	assert_true(file_has(f->out, "a: 16 block(s) of 65536 bytes on 1 file set: 0 mismatch(es)"));
	flip(f, "out", 70000);
	assert_int_equal(run_bin(f, scrub), 1);
	assert_true(file_has(f->out, "a: mismatch: "));
	assert_int_equal(run_bin(f, st), 3);
	assert_true(file_has(f->out, "\"last_scrub\": {\"when\": "));
	assert_true(file_has(f->out, "\"mismatches\": 1, \"complete\": true"));
	/* no verify was run: only the scrub is known */
	assert_null(strstr(slurp(f->out), "last_verify"));
	assert_int_equal(run_bin(f, table), 3);
	assert_true(file_has(f->out, "last scrub: "));
}

static void scrub_leaves_an_unfinished_copy_and_a_device_and_says_so(void **state)
{
	struct fx *f = *state;
	char *scrub[] = { IOU_BIN, "scrub", "-c", f->conf, "p", NULL };
	char *dev[] = { IOU_BIN, "scrub", "-c", f->conf, "d", NULL };
	char *nosuch[] = { IOU_BIN, "scrub", "-c", f->conf, "nosuch", NULL };
	char *ck = tu_path(f->dir, "state/p.ckpt");

	make_src(f, "src", 1 << 20, 208);
	make_src(f, "m0", 4 << 20, 209);
	write_conf(f, "checksum = crc32c\n", "[pipeline p]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/out\n");
	assert_int_equal(run_bin(f, once(f)), 0);
	/* scrub reads the device's section only (no device runs on the host) */
	write_conf(f, "checksum = crc32c\n", "[pipeline p]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/out\n[device d]\ntarget = linear\nbacking = @D/m0\n");
	/* as if stopped half way: the checkpoint says running, at 512 KiB */
	replace_in(ck, "state=finished", "state=stopped");
	replace_in(ck, "done=1048576", "done=524288");
	assert_int_equal(run_bin(f, scrub), 4);
	assert_true(file_has(f->out, "p: not scrubbed: the copy is not finished"));
	/* a device's scrub compares a mirror's legs: a linear one has none */
	assert_int_equal(run_bin(f, dev), 4);
	assert_true(file_has(f->out, "d: not scrubbed: scrub compares a mirror's legs (target = "
			     "linear)"));
	/* a mirror is compared by the daemon that serves it: none runs here */
	make_src(f, "m1", 4 << 20, 210);
	write_conf(f, "checksum = crc32c\n", "[pipeline p]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/out\n[device d]\ntarget = mirror\nbacking = @D/m0\n"
		   "backing = @D/m1\n");
	assert_int_equal(run_bin(f, dev), 4);
	assert_true(file_has(f->out, "d: not scrubbed: no iou-offloadd serves it"));
	assert_int_equal(run_bin(f, nosuch), 2);
	assert_true(file_has(f->err, "nosuch is not a pipeline or device of"));
	free(ck);
}

/* a file set that cannot be read is not counted as checked, in the line or the record */
static void verify_counts_only_the_blocks_it_read(void **state)
{
	struct fx *f = *state;
	char *scrub[] = { IOU_BIN, "scrub", "-c", f->conf, NULL };
	char *st[] = { IOU_BIN, "status", "-c", f->conf, "--json", NULL };
	char *out = tu_path(f->dir, "out");

	make_src(f, "src", 1 << 20, 210);
	write_conf(f, "checksum = crc32c\nblock_size = 64K\n", "[pipeline a]\ntransform = copy\n"
		   "source = @D/src\ndestination = @D/out\n");
	assert_int_equal(run_bin(f, once(f)), 0);
	assert_int_equal(truncate(out, 3 * 65536 + 100), 0);
	assert_int_equal(run_bin(f, scrub), 1);
	assert_true(file_has(f->out, "a: 3 block(s) of 65536 bytes on 1 file set: 0 mismatch(es); "
			     "not all read"));
	assert_int_equal(run_bin(f, st), 3);
	assert_true(file_has(f->out, "\"last_scrub\": {\"when\": "));
	assert_true(file_has(f->out, "\"blocks\": 3, \"bytes\": 196608, \"mismatches\": 0, "
			     "\"complete\": false, \"failed\": true}"));
	unlink(out);
	assert_int_equal(run_bin(f, scrub), 1);
	assert_true(file_has(f->out, "a: 0 block(s) of 65536 bytes"));
	free(out);
}

/* a file that ends early after a mismatch: the line and the record still count it */
static void verify_counts_a_mismatch_before_a_file_that_ends_early(void **state)
{
	struct fx *f = *state;
	char *st[] = { IOU_BIN, "status", "-c", f->conf, "--json", NULL };
	char *out = tu_path(f->dir, "out");

	make_src(f, "src", 1 << 20, 211);
	write_conf(f, "checksum = crc32c\nblock_size = 64K\n", "[pipeline a]\ntransform = copy\n"
		   "source = @D/src\ndestination = @D/out\n");
	assert_int_equal(run_bin(f, once(f)), 0);
	flip(f, "out", 65536 + 5);
	assert_int_equal(truncate(out, 3 * 65536 + 100), 0);
	assert_int_equal(verify(f, NULL), 1);
	assert_true(file_has(f->out, "a: mismatch: "));
	assert_true(file_has(f->out, "a: 3 block(s) of 65536 bytes on 1 file set: 1 mismatch(es); "
			     "not all read"));
	assert_int_equal(run_bin(f, st), 3);
	assert_true(file_has(f->out, "\"last_verify\": {\"when\": "));
	assert_true(file_has(f->out, "\"blocks\": 3, \"bytes\": 196608, \"mismatches\": 1, "
			     "\"complete\": false, \"failed\": true}"));
	free(out);
}

static void scrub_source_and_unknown_names_are_refused_by_name(void **state)
{
	struct fx *f = *state;
	char *src[] = { IOU_BIN, "scrub", "-c", f->conf, "--source", NULL };
	char *two[] = { IOU_BIN, "verify", "-c", f->conf, "a", "nosuch", NULL };

	make_src(f, "src", 65536, 211);
	write_conf(f, "checksum = crc32c\n", "[pipeline a]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/out\n");
	assert_int_equal(run_bin(f, once(f)), 0);
	assert_int_equal(run_bin(f, src), 2);
	assert_true(file_has(f->err, "--source is verify's"));
	assert_int_equal(run_bin(f, two), 2);
	assert_true(file_has(f->err, "nosuch is not a pipeline or device of"));
	/* the name that is there is still verified */
	assert_true(file_has(f->out, "a: 1 block(s)"));
}

/* --check-config --json: the findings with their lines and severities */
static void check_config_json_lists_errors_and_warnings_by_line(void **state)
{
	struct fx *f = *state;
	char *argv[] = { IOU_BIN, "--check-config", "--json", f->conf, NULL };

	write_conf(f, "", "[pipeline p]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/out ;x\nblock_size = lots\n");
	assert_int_equal(run_bin(f, argv), 78);
	assert_true(file_has(f->out, "\"valid\": false"));
	assert_true(file_has(f->out, "{\"line\": 9, \"severity\": \"error\", \"message\": "
			     "\"[pipeline p]: block_size = 'lots'"));
	assert_true(file_has(f->out, "{\"line\": 8, \"severity\": \"warning\""));
	write_conf(f, "", "[pipeline p]\ntransform = copy\nsource = @D/src\n"
		   "destination = @D/out\n");
	assert_int_equal(run_bin(f, argv), 0);
	assert_true(file_has(f->out, "\"valid\": true, \"findings\": []}"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(crc32c_gives_the_standard_check_value),
		cmocka_unit_test_setup_teardown(
			a_mirror_verifies_and_a_changed_byte_on_one_leg_is_found,
			fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_stripe_verifies_through_its_members,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_resumed_copy_continues_its_manifest,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_resume_without_checksum_goes_on_summing,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(verify_without_a_manifest_exits_4,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_damaged_or_lost_manifest_fails_verify, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(checksums_on_the_loop_engine_are_refused_at_their_line,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(
			a_one_shot_copy_with_checksums_verifies_by_the_same_command,
			fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_one_shot_verify_without_sums_names_the_option,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_stop_ends_the_summing_of_a_long_hole, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(scrub_reads_finished_pipelines_and_status_shows_the_last_scrub,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(scrub_leaves_an_unfinished_copy_and_a_device_and_says_so,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(verify_counts_only_the_blocks_it_read,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(verify_counts_a_mismatch_before_a_file_that_ends_early,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(scrub_source_and_unknown_names_are_refused_by_name,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(
			verify_of_an_unfinished_sparse_copy_finds_no_false_mismatch,
			fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_sparse_copy_stopped_in_a_hole_resumes_there,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(verify_compares_holes_without_reading_them,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(status_json_gives_the_pipeline_and_its_last_verify,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(check_config_json_lists_errors_and_warnings_by_line,
						fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
