// SPDX-License-Identifier: MIT
/* Checkpoint files and the resume decision */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "status.h"
#include "testutil.h"

static struct checkpoint sample(void)
{
	struct checkpoint c = {
		.fingerprint = 0x0123456789abcdefULL, .state = CKPT_RUNNING,
		.done = 4 << 20, .total = 64 << 20, .nr_sources = 2, .nr_dests = 1,
		.updated = 1700000000,
	};

	c.src[0] = (struct file_ident){ 1, 2, 3, 4 };
	c.src[1] = (struct file_ident){ 5, 6, 7, -8 };
	c.dst[0] = (struct file_ident){ 9, 10, 0, 0 };
	return c;
}

static void save_then_load_round_trips(void **state)
{
	struct checkpoint c = sample(), back;
	char *dir = tu_mkdtemp("ckpt");

	(void)state;
	assert_int_equal(checkpoint_save(dir, "p", &c), 0);
	assert_int_equal(checkpoint_load(dir, "p", &back), 0);
	assert_memory_equal(&c, &back, sizeof(c));
	/* nothing left behind by the atomic save */
	char *tmp = tu_path(dir, "p.ckpt.tmp");
	assert_int_equal(access(tmp, F_OK), -1);
	free(tmp);
	tu_rmrf(dir);
	free(dir);
}

static ino_t ino_of(const char *dir, const char *name, off_t *size)
{
	char *path = tu_path(dir, name);
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	free(path);
	*size = st.st_size;
	return st.st_ino;
}

/*
 * A record of one sector is rewritten in place (one fdatasync, no journal
 * commit), once the file has that size: the first save of an older, shorter
 * file replaces it, every save after that keeps its inode.
 */
static void a_checkpoint_that_fits_a_sector_is_rewritten_in_place(void **state)
{
	struct checkpoint c = sample(), back;
	char *dir = tu_mkdtemp("ckpt"), *path = tu_path(dir, "p.ckpt");
	char old[CKPT_RECORD_MAX];
	int len = checkpoint_format(&c, "p", old, sizeof(old));
	off_t size;
	ino_t ino;

	(void)state;
	assert_int_equal(len, CKPT_SECTOR);
	/* an unpadded record, as earlier versions wrote it */
	assert_int_equal(tu_write_file(path, old, strstr(old, "\nend\n") + 5 - old), 0);
	assert_true(ino_of(dir, "p.ckpt", &size) && size < CKPT_SECTOR);
	assert_int_equal(checkpoint_load(dir, "p", &back), 0);
	assert_memory_equal(&c, &back, sizeof(c));

	assert_int_equal(checkpoint_save(dir, "p", &c), 0);
	ino = ino_of(dir, "p.ckpt", &size);
	assert_int_equal(size, CKPT_SECTOR);
	for (int i = 0; i < 3; i++) {
		c.done += 1 << 20;
		c.state = i == 2 ? CKPT_STOPPED : CKPT_RUNNING;
		assert_int_equal(checkpoint_save(dir, "p", &c), 0);
		assert_true(ino_of(dir, "p.ckpt", &size) == ino);
		assert_int_equal(size, CKPT_SECTOR);
		assert_int_equal(checkpoint_load(dir, "p", &back), 0);
		assert_memory_equal(&c, &back, sizeof(c));
	}
	tu_rmrf(dir);
	free(path);
	free(dir);
}

/* a record longer than a sector is never written in place: a new file each time */
static void a_checkpoint_longer_than_a_sector_is_replaced_whole(void **state)
{
	struct checkpoint c = sample(), back;
	char *dir = tu_mkdtemp("ckpt"), buf[CKPT_RECORD_MAX];
	off_t size;
	ino_t ino;
	int len;

	(void)state;
	c.nr_dests = CONFIG_MAX_FILES;
	for (int i = 0; i < c.nr_dests; i++)
		c.dst[i] = (struct file_ident){ 64769, 1000000 + i, 1ULL << 40, 1700000000 };
	len = checkpoint_format(&c, "p", buf, sizeof(buf));
	assert_true(len > CKPT_SECTOR);
	assert_int_equal(checkpoint_save(dir, "p", &c), 0);
	ino = ino_of(dir, "p.ckpt", &size);
	assert_int_equal(size, len);
	c.done += 1 << 20;
	assert_int_equal(checkpoint_save(dir, "p", &c), 0);
	assert_true(ino_of(dir, "p.ckpt", &size) != ino);
	assert_int_equal(checkpoint_load(dir, "p", &back), 0);
	assert_memory_equal(&c, &back, sizeof(c));
	tu_rmrf(dir);
	free(dir);
}

/* a symlink where the checkpoint goes is replaced, never written through */
static void a_checkpoint_is_never_written_through_a_symlink(void **state)
{
	struct checkpoint c = sample();
	char *dir = tu_mkdtemp("ckpt"), *path = tu_path(dir, "p.ckpt");
	char *victim = tu_path(dir, "victim"), zeros[CKPT_SECTOR] = { 0 }, *text;
	size_t len;
	off_t size;

	(void)state;
	assert_int_equal(tu_write_file(victim, zeros, sizeof(zeros)), 0);
	assert_int_equal(symlink(victim, path), 0);
	assert_int_equal(checkpoint_save(dir, "p", &c), 0);
	ino_of(dir, "p.ckpt", &size);
	assert_int_equal(size, CKPT_SECTOR);	/* a file now, not the link */
	text = tu_read_file(victim, &len);
	assert_int_equal(len, sizeof(zeros));
	assert_memory_equal(text, zeros, sizeof(zeros));
	free(text);
	tu_rmrf(dir);
	free(victim);
	free(path);
	free(dir);
}

static void missing_checkpoint_is_enoent(void **state)
{
	struct checkpoint c;
	char *dir = tu_mkdtemp("ckpt");

	(void)state;
	assert_int_equal(checkpoint_load(dir, "none", &c), -ENOENT);
	tu_rmrf(dir);
	free(dir);
}

static void torn_or_foreign_files_are_rejected(void **state)
{
	struct checkpoint c = sample(), back;
	char buf[4096];
	int len;

	(void)state;
	len = checkpoint_format(&c, "p", buf, sizeof(buf));
	assert_true(len > 0);
	assert_int_equal(checkpoint_parse(buf, &back), 0);
	/* cut anywhere before the end marker (the padding follows it): never accepted */
	len = strstr(buf, "\nend\n") + 4 - buf;
	for (int cut = 0; cut < len; cut += 7) {
		char part[4096];

		memcpy(part, buf, cut);
		part[cut] = '\0';
		assert_int_equal(checkpoint_parse(part, &back), -EINVAL);
	}
	assert_int_equal(checkpoint_parse("something else\nend\n", &back), -EINVAL);
	/* done past total is nonsense */
	c.done = c.total + 1;
	checkpoint_format(&c, "p", buf, sizeof(buf));
	assert_int_equal(checkpoint_parse(buf, &back), -EINVAL);
}

/* the status file goes through the same reader: cut short, it is refused */
static void a_status_file_cut_short_is_refused(void **state)
{
	struct status_entry e = { .name = "p", .state = "running", .bytes_done = 42 };
	struct status_report w = { .pid = 1, .entries = &e, .nr = 1 }, r;
	char *dir = tu_mkdtemp("status"), *path = tu_path(dir, "status");
	size_t len;
	char *text;

	(void)state;
	assert_int_equal(status_write(path, &w), 0);
	assert_int_equal(status_read(path, &r), 0);
	assert_int_equal(r.nr, 1);
	assert_true(r.entries[0].bytes_done == 42);
	status_report_free(&r);
	text = tu_read_file(path, &len);
	assert_non_null(text);
	assert_int_equal(tu_write_file(path, text, len - 4), 0);	/* "end\n" gone */
	assert_int_equal(status_read(path, &r), -EINVAL);
	free(text);
	tu_rmrf(dir);
	free(path);
	free(dir);
}

static void decide(const struct checkpoint *c, const struct file_ident *src,
		   const struct file_ident *dst, bool repeat, enum resume_action want,
		   const char *why_part)
{
	char why[256];
	enum resume_action a = checkpoint_decide(c, 0x0123456789abcdefULL,
						 (struct ckpt_files){ src, NULL, 2 },
						 (struct ckpt_files){ dst, NULL, 1 }, repeat,
						 why, sizeof(why));

	if (a != want || !strstr(why, why_part))
		print_message("got %d: %s\n", a, why);
	assert_int_equal(a, want);
	assert_non_null(strstr(why, why_part));
}

static void resume_continues_when_nothing_changed(void **state)
{
	struct checkpoint c = sample();

	(void)state;
	decide(&c, c.src, c.dst, false, RESUME_CONTINUE, "resuming at byte 4194304 of 67108864");
	decide(NULL, c.src, c.dst, false, RESUME_FRESH, "no checkpoint");
}

static void changed_config_or_source_starts_over(void **state)
{
	struct checkpoint c = sample();
	struct file_ident src[2] = { c.src[0], c.src[1] };

	(void)state;
	c.fingerprint++;
	decide(&c, src, c.dst, false, RESUME_FRESH, "configuration changed");
	c.fingerprint--;
	src[1].mtime_ns++;
	decide(&c, src, c.dst, false, RESUME_FRESH, "source 1 changed");
	src[1] = c.src[1];
	src[0].size++;
	decide(&c, src, c.dst, false, RESUME_FRESH, "source 0 changed");
}

static void replaced_destination_starts_over(void **state)
{
	struct checkpoint c = sample();
	struct file_ident dst = c.dst[0];

	(void)state;
	dst.ino++;
	decide(&c, c.src, &dst, false, RESUME_FRESH, "destination 0 was replaced or removed");
}

static void finished_pipeline_is_not_copied_again(void **state)
{
	struct checkpoint c = sample();
	struct file_ident dst;

	(void)state;
	c.state = CKPT_FINISHED;
	c.done = c.total;
	c.dst[0].size = 64 << 20;
	c.dst[0].mtime_ns = 42;
	decide(&c, c.src, c.dst, false, RESUME_SKIP, "nothing to do");
	decide(&c, c.src, c.dst, true, RESUME_FRESH, "repeat = yes");
	dst = c.dst[0];
	dst.mtime_ns++;
	decide(&c, c.src, &dst, false, RESUME_FRESH, "modified after the pipeline finished");
}

/* "size, mtime or inode" left the reader to find out which */
static void a_change_message_says_what_changed(void **state)
{
	struct checkpoint c = sample();
	struct file_ident src[2] = { c.src[0], c.src[1] }, dst;
	char want[96];

	(void)state;
	src[1].mtime_ns++;
	decide(&c, src, c.dst, false, RESUME_FRESH, "source 1 changed since the checkpoint "
	       "(mtime): starting at 0");
	src[1] = c.src[1];
	src[0].size++;
	src[0].ctime_ns = c.src[0].ctime_ns + 1;
	snprintf(want, sizeof(want), "(size %" PRIu64 " -> %" PRIu64 "%s)", c.src[0].size,
		 c.src[0].size + 1, c.src[0].ctime_ns ? ", ctime" : "");
	decide(&c, src, c.dst, false, RESUME_FRESH, want);
	c.state = CKPT_FINISHED;
	c.done = c.total;
	dst = c.dst[0];
	dst.mtime_ns++;
	decide(&c, c.src, &dst, false, RESUME_FRESH, "modified after the pipeline finished "
	       "(mtime)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(save_then_load_round_trips),
		cmocka_unit_test(missing_checkpoint_is_enoent),
		cmocka_unit_test(a_checkpoint_that_fits_a_sector_is_rewritten_in_place),
		cmocka_unit_test(a_checkpoint_longer_than_a_sector_is_replaced_whole),
		cmocka_unit_test(a_checkpoint_is_never_written_through_a_symlink),
		cmocka_unit_test(torn_or_foreign_files_are_rejected),
		cmocka_unit_test(a_status_file_cut_short_is_refused),
		cmocka_unit_test(resume_continues_when_nothing_changed),
		cmocka_unit_test(changed_config_or_source_starts_over),
		cmocka_unit_test(a_change_message_says_what_changed),
		cmocka_unit_test(replaced_destination_starts_over),
		cmocka_unit_test(finished_pipeline_is_not_copied_again),
	};

	return cmocka_run_group_tests_name("checkpoint", tests, NULL, NULL);
}
