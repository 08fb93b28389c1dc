// SPDX-License-Identifier: MIT
/*
 * The uring engine end to end on real files on the host's stock kernel:
 * every transform at 0 B, 1 B, block-1, block+1 and 64 MiB, compared byte
 * for byte with a reference; then resume, stop, faults and policies.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"
#include "config.h"
#include "engine.h"
#include "log.h"
#include "pipeline.h"
#include "plan.h"
#include "testutil.h"

#define BS_SMALL	(64u << 10)
#define SU_SMALL	(24u << 10)	/* does not divide the block */
#define BS_BIG		(1u << 20)
#define SU_BIG		(96u << 10)
#define BIG		(64ull << 20)

struct fx {
	char *dir;
	char *state;
	struct engine_probe probe;
	struct pipeline_status st;
	_Atomic bool stop;
	struct run_env env;
	struct daemon_config cfg;
	bool have_cfg;
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	f->dir = tu_mkdtemp("uring");
	assert_non_null(f->dir);
	f->state = tu_path(f->dir, "state");
	mkdir(f->state, 0700);
	/* what the daemon probes; on this build it never touches BPF */
	engine_probe_kernel(&f->probe);
	assert_false(f->probe.bpf_ok);
	tu_log_capture_start();
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	if (f->have_cfg)
		config_free(&f->cfg);
	tu_log_capture_stop();
	tu_rmrf(f->dir);
	free(f->dir);
	free(f->state);
	free(f);
	return 0;
}

static char *fpath(struct fx *f, const char *name)
{
	return tu_path(f->dir, name);
}

static void make_file(struct fx *f, const char *name, const void *buf, size_t len)
{
	char *p = fpath(f, name);

	assert_int_equal(tu_write_file(p, buf, len), 0);
	free(p);
}

static void *read_back(struct fx *f, const char *name, size_t *len)
{
	char *p = fpath(f, name);
	void *buf = tu_read_file(p, len);

	free(p);
	assert_non_null(buf);
	return buf;
}

static void expect_file(struct fx *f, const char *name, const void *want, size_t len)
{
	size_t got_len;
	void *got = read_back(f, name, &got_len);

	if (got_len != len)
		print_message("%s: %zu bytes, expected %zu\n", name, got_len, len);
	assert_int_equal(got_len, len);
	assert_true(memcmp(got, want, len) == 0);
	free(got);
}

/* config text with @D replaced by the test directory */
static int load_cfg(struct fx *f, const char *text)
{
	struct config_errors errs = { 0 };
	char *buf = malloc(strlen(text) * 4 + 4096), *o = buf;
	int ret;

	o += sprintf(o, "[daemon]\nstate_dir = %s\n", f->state);
	for (const char *p = text; *p; p++) {
		if (*p == '@' && p[1] == 'D') {
			o += sprintf(o, "%s", f->dir);
			p++;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	if (f->have_cfg)
		config_free(&f->cfg);
	ret = config_parse_buffer("test.conf", buf, strlen(buf), &f->cfg, &errs);
	for (int i = 0; i < errs.nr; i++)
		print_message("config: %s\n", errs.msgs[i]);
	config_errors_free(&errs);
	free(buf);
	f->have_cfg = true;
	return ret;
}

static int run_loaded(struct fx *f);

/* run pipeline 0 of @text; returns pipeline_run()'s result */
static int run(struct fx *f, const char *text)
{
	assert_int_equal(load_cfg(f, text), 0);
	return run_loaded(f);
}

/* run pipeline 0 of the config load_cfg() read */
static int run_loaded(struct fx *f)
{
	pthread_mutex_destroy(&f->st.lock);
	pipeline_status_init(&f->st);
	atomic_store(&f->stop, false);
	f->env = (struct run_env){
		.state_dir = f->state, .probe = &f->probe, .stop = &f->stop,
		.wake_fd = -1, .main_fd = -1, .status = &f->st,
	};
	return pipeline_run(&f->cfg.pipelines[0], &f->env);
}

static void error_is(struct fx *f, const char *want)
{
	char got[512];

	pipeline_status_get_error(&f->st, got, sizeof(got));
	if (strcmp(got, want))
		print_message("error: '%s'\nwant:  '%s'\n", got, want);
	assert_string_equal(got, want);
}

/* ---- the matrix: every transform at every interesting size ---- */

struct mcase {
	char name[96];
	enum transform t;
	enum gather_layout g;
	uint64_t len;
	uint32_t bs, su;
};

static void stripe_ref(const uint8_t *src, uint64_t len, int n, uint32_t su, uint8_t **out,
		       uint64_t *out_len)
{
	for (int d = 0; d < n; d++) {
		out_len[d] = plan_stripe_share(len, n, su, d);
		out[d] = malloc(out_len[d] + 1);
	}
	for (uint64_t x = 0; x < len; x += su) {
		uint64_t u = x / su, piece = len - x < su ? len - x : su;

		memcpy(out[u % n] + (u / n) * su, src + x, piece);
	}
}

static struct mcase *current_case;

static void run_matrix_case(struct fx *f, const struct mcase *c)
{
	uint8_t *src = malloc(c->len + 1), *parts[3];
	uint64_t part_len[3];
	char conf[2048];
	const char *head = "[pipeline t]\nengine = uring\nqueue_depth = 8\ncheckpoint_interval = 4M\n";

	tu_fill(src, c->len, c->len + c->t * 7 + c->g);
	switch (c->t) {
	case TRANSFORM_COPY:
		make_file(f, "src", src, c->len);
		snprintf(conf, sizeof(conf), "%stransform = copy\nblock_size = %u\n"
			 "source = @D/src\ndestination = @D/out\n", head, c->bs);
		assert_int_equal(run(f, conf), 0);
		expect_file(f, "out", src, c->len);
		break;
	case TRANSFORM_MIRROR:
		make_file(f, "src", src, c->len);
		snprintf(conf, sizeof(conf), "%stransform = mirror\nblock_size = %u\n"
			 "source = @D/src\ndestination = @D/m0\ndestination = @D/m1\n",
			 head, c->bs);
		assert_int_equal(run(f, conf), 0);
		expect_file(f, "m0", src, c->len);
		expect_file(f, "m1", src, c->len);
		break;
	case TRANSFORM_STRIPE:
		make_file(f, "src", src, c->len);
		snprintf(conf, sizeof(conf), "%stransform = stripe\nblock_size = %u\n"
			 "stripe_unit = %u\nsource = @D/src\ndestination = @D/s0\n"
			 "destination = @D/s1\ndestination = @D/s2\n", head, c->bs, c->su);
		assert_int_equal(run(f, conf), 0);
		stripe_ref(src, c->len, 3, c->su, parts, part_len);
		expect_file(f, "s0", parts[0], part_len[0]);
		expect_file(f, "s1", parts[1], part_len[1]);
		expect_file(f, "s2", parts[2], part_len[2]);
		for (int i = 0; i < 3; i++)
			free(parts[i]);
		break;
	case TRANSFORM_GATHER:
		if (c->g == GATHER_DESTRIPE) {
			/* the members of a stripe, gathered back */
			stripe_ref(src, c->len, 3, c->su, parts, part_len);
			make_file(f, "s0", parts[0], part_len[0]);
			make_file(f, "s1", parts[1], part_len[1]);
			make_file(f, "s2", parts[2], part_len[2]);
			for (int i = 0; i < 3; i++)
				free(parts[i]);
			snprintf(conf, sizeof(conf), "%stransform = gather\ngather = destripe\n"
				 "block_size = %u\nstripe_unit = %u\nsource = @D/s0\n"
				 "source = @D/s1\nsource = @D/s2\ndestination = @D/out\n",
				 head, c->bs, c->su);
		} else {
			uint64_t a = c->len / 3, b = c->len / 3;

			make_file(f, "c0", src, a);
			make_file(f, "c1", src + a, b);
			make_file(f, "c2", src + a + b, c->len - a - b);
			snprintf(conf, sizeof(conf), "%stransform = gather\nblock_size = %u\n"
				 "source = @D/c0\nsource = @D/c1\nsource = @D/c2\n"
				 "destination = @D/out\n", head, c->bs);
		}
		assert_int_equal(run(f, conf), 0);
		expect_file(f, "out", src, c->len);
		break;
	}
	assert_int_equal(atomic_load(&f->st.state), PIPELINE_FINISHED);
	assert_true(atomic_load(&f->st.bytes_done) == c->len);
	assert_true(atomic_load(&f->st.bytes_durable) == c->len);
	assert_int_equal(atomic_load(&f->st.bpf_ops), 0);
	free(src);
}

static void matrix_test(void **state)
{
	run_matrix_case(*state, current_case);
}

/* ---- behaviours ---- */

static void finished_pipeline_is_not_copied_again(void **state)
{
	struct fx *f = *state;
	uint8_t buf[100000];
	struct stat a, b;
	char *out = fpath(f, "out");
	const char *conf = "[pipeline p]\nengine = uring\ntransform = copy\nsource = @D/src\n"
			   "destination = @D/out\nblock_size = 4K\n";

	tu_fill(buf, sizeof(buf), 1);
	make_file(f, "src", buf, sizeof(buf));
	assert_int_equal(run(f, conf), 0);
	assert_int_equal(stat(out, &a), 0);
	tu_log_capture_start();
	assert_int_equal(run(f, conf), 0);
	assert_true(tu_log_contains("finished before and nothing changed: nothing to do"));
	assert_int_equal(stat(out, &b), 0);
	/* not one byte written: the destination's mtime did not move */
	assert_true(a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec);
	assert_int_equal(atomic_load(&f->st.state), PIPELINE_FINISHED);
	free(out);
}

static void changed_source_is_copied_again(void **state)
{
	struct fx *f = *state;
	uint8_t buf[50000];
	char want[4200];
	const char *conf = "[pipeline p]\nengine = uring\ntransform = copy\nsource = @D/src\n"
			   "destination = @D/out\nblock_size = 4K\n";

	tu_fill(buf, sizeof(buf), 2);
	make_file(f, "src", buf, sizeof(buf));
	assert_int_equal(run(f, conf), 0);
	tu_fill(buf, sizeof(buf), 3);
	make_file(f, "src", buf, sizeof(buf) - 1);	/* new size and mtime */
	tu_log_capture_start();
	assert_int_equal(run(f, conf), 0);
	/* named by its path, as the config gives it */
	snprintf(want, sizeof(want), "source %s/src changed since the checkpoint", f->dir);
	assert_true(tu_log_contains(want));
	expect_file(f, "out", buf, sizeof(buf) - 1);
}

static void repeat_yes_copies_a_finished_pipeline_again(void **state)
{
	struct fx *f = *state;
	uint8_t buf[5000];
	const char *conf = "[pipeline p]\nengine = uring\ntransform = copy\nsource = @D/src\n"
			   "destination = @D/out\nrepeat = yes\n";

	tu_fill(buf, sizeof(buf), 4);
	make_file(f, "src", buf, sizeof(buf));
	assert_int_equal(run(f, conf), 0);
	tu_log_capture_start();
	assert_int_equal(run(f, conf), 0);
	assert_true(tu_log_contains("finished before, repeat = yes: starting at 0"));
	expect_file(f, "out", buf, sizeof(buf));
}

static void resume_continues_at_the_checkpoint(void **state)
{
	struct fx *f = *state;
	size_t len = 10 << 20, at = 3 << 20, got;
	uint8_t *buf = malloc(len), *bad;
	struct checkpoint ck;
	const char *conf = "[pipeline p]\nengine = uring\ntransform = stripe\nsource = @D/src\n"
			   "destination = @D/s0\ndestination = @D/s1\nblock_size = 256K\n"
			   "stripe_unit = 40K\n";

	tu_fill(buf, len, 5);
	make_file(f, "src", buf, len);
	assert_int_equal(run(f, conf), 0);
	/*
	 * pretend it crashed at 3 MiB (a running record: the destinations by
	 * identity only), and garble everything past that
	 */
	assert_int_equal(checkpoint_load(f->state, "p", &ck), 0);
	ck.state = CKPT_RUNNING;
	ck.done = at;
	for (int d = 0; d < 2; d++)
		ck.dst[d].size = ck.dst[d].mtime_ns = ck.dst[d].ctime_ns = 0;
	assert_int_equal(checkpoint_save(f->state, "p", &ck), 0);
	for (int d = 0; d < 2; d++) {
		char name[8];
		uint64_t keep = plan_stripe_share(at, 2, 40 << 10, d);

		snprintf(name, sizeof(name), "s%d", d);
		bad = read_back(f, name, &got);
		memset(bad + keep, 0xEE, got - keep);
		make_file(f, name, bad, got);
		free(bad);
	}
	tu_log_capture_start();
	assert_int_equal(run(f, conf), 0);
	assert_true(tu_log_contains("resuming at byte 3145728 of 10485760"));
	assert_true(atomic_load(&f->st.bytes_resumed) == at);
	uint8_t *parts[2];
	uint64_t plen[2];

	stripe_ref(buf, len, 2, 40 << 10, parts, plen);
	expect_file(f, "s0", parts[0], plen[0]);
	expect_file(f, "s1", parts[1], plen[1]);
	free(parts[0]);
	free(parts[1]);
	free(buf);
}

struct stopper {
	struct fx *f;
	uint64_t at;
	pthread_t th;
};

static void *stopper_thread(void *arg)
{
	struct stopper *s = arg;

	while (atomic_load(&s->f->st.bytes_done) < s->at &&
	       atomic_load(&s->f->st.state) != PIPELINE_FINISHED)
		usleep(200);
	atomic_store(&s->f->stop, true);
	return NULL;
}

static void stop_mid_copy_checkpoints_and_resumes_identical(void **state)
{
	struct fx *f = *state;
	size_t len = 64 << 20;
	uint8_t *buf = malloc(len);
	struct checkpoint ck;
	struct stopper s = { .f = f, .at = 8 << 20 };
	const char *conf = "[pipeline p]\nengine = uring\ntransform = mirror\nsource = @D/src\n"
			   "destination = @D/m0\ndestination = @D/m1\nblock_size = 4K\n"
			   "queue_depth = 2\ncheckpoint_interval = 64K\n";

	tu_fill(buf, len, 6);
	make_file(f, "src", buf, len);
	assert_int_equal(load_cfg(f, conf), 0);
	pipeline_status_init(&f->st);
	f->env = (struct run_env){
		.state_dir = f->state, .probe = &f->probe, .stop = &f->stop,
		.wake_fd = -1, .main_fd = -1, .status = &f->st,
	};
	pthread_create(&s.th, NULL, stopper_thread, &s);
	int ret = pipeline_run(&f->cfg.pipelines[0], &f->env);
	pthread_join(s.th, NULL);
	assert_int_equal(ret, -EINTR);
	assert_int_equal(atomic_load(&f->st.state), PIPELINE_STOPPED);
	assert_int_equal(checkpoint_load(f->state, "p", &ck), 0);
	assert_int_equal(ck.state, CKPT_STOPPED);
	assert_true(ck.done >= 8 << 20 && ck.done < len);
	/* never more than what completed */
	assert_true(ck.done <= atomic_load(&f->st.bytes_done));
	uint64_t stopped_at = ck.done;

	assert_int_equal(run(f, conf), 0);
	assert_true(atomic_load(&f->st.bytes_resumed) == stopped_at);
	expect_file(f, "m0", buf, len);
	expect_file(f, "m1", buf, len);
	free(buf);
}

static void failing_destination_stops_with_its_offset_and_resumes(void **state)
{
	struct fx *f = *state;
	size_t len = 8 << 20;
	uint8_t *buf = malloc(len);
	struct rlimit old, lim = { .rlim_cur = 5 << 20, .rlim_max = RLIM_INFINITY };
	struct checkpoint ck;
	char want[512];
	const char *conf = "[pipeline p]\nengine = uring\ntransform = copy\nsource = @D/src\n"
			   "destination = @D/out\nblock_size = 1M\nqueue_depth = 1\n"
			   "checkpoint_interval = 1M\n";

	tu_fill(buf, len, 7);
	make_file(f, "src", buf, len);
	/* files may not grow past 5 MiB: writes there fail with EFBIG */
	signal(SIGXFSZ, SIG_IGN);
	getrlimit(RLIMIT_FSIZE, &old);
	lim.rlim_max = old.rlim_max;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	int ret = run(f, conf);
	setrlimit(RLIMIT_FSIZE, &old);
	assert_int_equal(ret, -EFBIG);
	assert_int_equal(atomic_load(&f->st.state), PIPELINE_FAILED);
	snprintf(want, sizeof(want), "write to %s/out at offset 5242880 (1048576 bytes) failed: "
		 "File too large", f->dir);
	error_is(f, want);
	assert_int_equal(checkpoint_load(f->state, "p", &ck), 0);
	assert_int_equal(ck.state, CKPT_FAILED);
	/* the checkpoint never passes the block that failed */
	assert_true(ck.done <= 5 << 20);

	assert_int_equal(run(f, conf), 0);
	assert_true(atomic_load(&f->st.bytes_resumed) == ck.done);
	expect_file(f, "out", buf, len);
	free(buf);
}

static void length_past_the_source_is_refused(void **state)
{
	struct fx *f = *state;
	uint8_t buf[1000];
	char want[512];

	tu_fill(buf, sizeof(buf), 8);
	make_file(f, "src", buf, sizeof(buf));
	assert_int_equal(run(f, "[pipeline p]\nengine = uring\ntransform = copy\nsource = @D/src\n"
			     "destination = @D/out\noffset = 10\nlength = 991\n"), -EINVAL);
	snprintf(want, sizeof(want), "length 991 is more than source %s/src holds after offset 10 "
		 "(990 bytes)", f->dir);
	error_is(f, want);
}

static void offset_past_the_source_is_refused(void **state)
{
	struct fx *f = *state;
	uint8_t buf[100] = { 0 };
	char want[512];

	make_file(f, "src", buf, sizeof(buf));
	assert_int_equal(run(f, "[pipeline p]\nengine = uring\ntransform = copy\nsource = @D/src\n"
			     "destination = @D/out\noffset = 101\n"), -EINVAL);
	snprintf(want, sizeof(want), "offset 101 is beyond the end of source %s/src (100 bytes)",
		 f->dir);
	error_is(f, want);
}

static void offsets_and_length_copy_the_sub_range(void **state)
{
	struct fx *f = *state;
	uint8_t src[300000], want[1000 + 200000];

	tu_fill(src, sizeof(src), 9);
	make_file(f, "src", src, sizeof(src));
	memset(want, 0x11, sizeof(want));
	make_file(f, "out", want, 1000);	/* existing bytes before dest_offset stay */
	memcpy(want + 1000, src + 12345, 200000);
	assert_int_equal(run(f, "[pipeline p]\nengine = uring\ntransform = copy\nsource = @D/src\n"
			     "destination = @D/out\noffset = 12345\ndest_offset = 1000\n"
			     "length = 200000\nblock_size = 64K\n"), 0);
	expect_file(f, "out", want, sizeof(want));
}

static void truncate_yes_cuts_a_longer_destination(void **state)
{
	struct fx *f = *state;
	uint8_t src[10000], old[50000];

	tu_fill(src, sizeof(src), 10);
	memset(old, 0x33, sizeof(old));
	make_file(f, "src", src, sizeof(src));
	make_file(f, "out", old, sizeof(old));
	assert_int_equal(run(f, "[pipeline p]\nengine = uring\ntransform = copy\nsource = @D/src\n"
			     "destination = @D/out\ntruncate = yes\n"), 0);
	expect_file(f, "out", src, sizeof(src));
}

static void truncate_no_keeps_what_lies_beyond(void **state)
{
	struct fx *f = *state;
	uint8_t src[10000], old[50000];

	tu_fill(src, sizeof(src), 11);
	memset(old, 0x33, sizeof(old));
	make_file(f, "src", src, sizeof(src));
	make_file(f, "out", old, sizeof(old));
	memcpy(old, src, sizeof(src));
	assert_int_equal(run(f, "[pipeline p]\nengine = uring\ntransform = copy\nsource = @D/src\n"
			     "destination = @D/out\ntruncate = no\n"), 0);
	expect_file(f, "out", old, sizeof(old));
}

static void missing_destination_with_create_no_is_refused(void **state)
{
	struct fx *f = *state;
	uint8_t src[10] = { 0 };
	char want[512];

	make_file(f, "src", src, sizeof(src));
	assert_int_equal(run(f, "[pipeline p]\nengine = uring\ntransform = copy\nsource = @D/src\n"
			     "destination = @D/nope\ncreate = no\n"), -ENOENT);
	snprintf(want, sizeof(want), "destination %s/nope does not exist and create = no", f->dir);
	error_is(f, want);
}

/*
 * The config refuses a destination that is a link to the source when it
 * exists at load time (test_config); one made after the load is caught at open.
 */
static void destination_that_is_the_source_is_refused(void **state)
{
	struct fx *f = *state;
	uint8_t src[10] = { 0 };
	char want[512], *a = fpath(f, "src"), *b = fpath(f, "alias");

	make_file(f, "src", src, sizeof(src));
	assert_int_equal(load_cfg(f, "[pipeline p]\nengine = uring\ntransform = copy\n"
				  "source = @D/src\ndestination = @D/alias\n"), 0);
	assert_int_equal(link(a, b), 0);
	assert_int_equal(run_loaded(f), -EINVAL);
	snprintf(want, sizeof(want), "destination %s/alias is the same file as source %s/src",
		 f->dir, f->dir);
	error_is(f, want);
	free(a);
	free(b);
}

static void inconsistent_destripe_sources_are_refused(void **state)
{
	struct fx *f = *state;
	uint8_t buf[10000] = { 0 };
	char want[512];

	make_file(f, "a", buf, 8192);
	make_file(f, "b", buf, 100);
	assert_int_equal(run(f, "[pipeline p]\nengine = uring\ntransform = gather\n"
			     "gather = destripe\nstripe_unit = 4K\nsource = @D/a\nsource = @D/b\n"
			     "destination = @D/out\n"), -ERANGE);
	snprintf(want, sizeof(want), "gather = destripe: source %s/b holds 100 bytes after offset, "
		 "but a 8292-byte stream striped over 2 sources in units of 4096 needs 4096 from "
		 "it", f->dir);
	error_is(f, want);
}

static bool direct_io_works_here(struct fx *f)
{
	char *p = fpath(f, "dio-probe");
	int fd = open(p, O_CREAT | O_RDWR | O_DIRECT, 0644);

	free(p);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static void direct_io_copies_an_unaligned_length(void **state)
{
	struct fx *f = *state;
	size_t len = 3 * (256 << 10) + 1234;
	uint8_t *buf = malloc(len);

	if (!direct_io_works_here(f)) {
		print_message("skipped: O_DIRECT is not supported in %s\n", f->dir);
		free(buf);
		skip();
	}
	tu_fill(buf, len, 12);
	make_file(f, "src", buf, len);
	assert_int_equal(run(f, "[pipeline p]\nengine = uring\ntransform = stripe\ndirect = yes\n"
			     "source = @D/src\ndestination = @D/s0\ndestination = @D/s1\n"
			     "block_size = 256K\nstripe_unit = 64K\n"), 0);
	uint8_t *parts[2];
	uint64_t plen[2];

	stripe_ref(buf, len, 2, 64 << 10, parts, plen);
	expect_file(f, "s0", parts[0], plen[0]);
	expect_file(f, "s1", parts[1], plen[1]);
	free(parts[0]);
	free(parts[1]);
	free(buf);
}

/* copy links the read to the write: the short read of the tail must not fail it */
static void direct_io_copies_an_unaligned_source_tail(void **state)
{
	struct fx *f = *state;
	size_t len = 3 * (256 << 10) + 1000;
	uint8_t *buf = malloc(len);

	if (!direct_io_works_here(f)) {
		print_message("skipped: O_DIRECT is not supported in %s\n", f->dir);
		free(buf);
		skip();
	}
	tu_fill(buf, len, 16);
	make_file(f, "src", buf, len);
	assert_int_equal(run(f, "[pipeline p]\nengine = uring\ntransform = copy\ndirect = yes\n"
			     "source = @D/src\ndestination = @D/out\nblock_size = 256K\n"), 0);
	expect_file(f, "out", buf, len);
	free(buf);
}

static void direct_io_refuses_unaligned_offsets_up_front(void **state)
{
	struct fx *f = *state;
	uint8_t buf[8192] = { 0 };
	char msg[512];

	if (!direct_io_works_here(f)) {
		print_message("skipped: O_DIRECT is not supported in %s\n", f->dir);
		skip();
	}
	make_file(f, "src", buf, sizeof(buf));
	assert_int_equal(run(f, "[pipeline p]\nengine = uring\ntransform = copy\ndirect = yes\n"
			     "source = @D/src\ndestination = @D/out\noffset = 100\n"), -EINVAL);
	pipeline_status_get_error(&f->st, msg, sizeof(msg));
	assert_non_null(strstr(msg, "direct = yes: offset 100 is not a multiple of the O_DIRECT "
			       "alignment"));
}

static void engine_bpf_is_refused_without_bpf_ops(void **state)
{
	struct fx *f = *state;
	uint8_t buf[10] = { 0 };
	char msg[512];

	make_file(f, "src", buf, sizeof(buf));
	assert_int_equal(run(f, "[pipeline p]\nengine = bpf\ntransform = copy\nsource = @D/src\n"
			     "destination = @D/out\n"), -EOPNOTSUPP);
	pipeline_status_get_error(&f->st, msg, sizeof(msg));
	assert_string_equal(msg, "engine = bpf is not available: this build has no BPF ops "
			    "(built without the patched kernel's vmlinux.h)");
}

static void engine_loop_is_refused_without_bpf_ops(void **state)
{
	struct fx *f = *state;
	uint8_t buf[10] = { 0 };
	char msg[512];

	make_file(f, "src", buf, sizeof(buf));
	assert_int_equal(run(f, "[pipeline p]\nengine = loop\ntransform = copy\nsource = @D/src\n"
			     "destination = @D/out\n"), -EOPNOTSUPP);
	pipeline_status_get_error(&f->st, msg, sizeof(msg));
	assert_string_equal(msg, "engine = loop is not available: this build has no BPF ops "
			    "(built without the patched kernel's vmlinux.h)");
	assert_false(f->probe.loop_ok);
}

static void engine_select_loop_only_when_asked(void **state)
{
	struct engine_probe probe = { .probed = true, .bpf_ok = true, .loop_ok = true };
	const struct engine_ops *e = NULL;
	char note[256];

	(void)state;
	assert_int_equal(engine_select(ENGINE_LOOP, &probe, &e, note, sizeof(note)), 0);
	assert_ptr_equal(e, &engine_loop_ops);
	assert_string_equal(e->name, "loop");
	assert_non_null(e->drive);
	/* auto stays on bpf even where loop would work */
	assert_int_equal(engine_select(ENGINE_AUTO, &probe, &e, note, sizeof(note)), 0);
	assert_ptr_equal(e, &engine_bpf_ops);
	/* bpf there, the loop not: says what is missing */
	probe.loop_ok = false;
	snprintf(probe.loop_why, sizeof(probe.loop_why), "no loop here");
	assert_int_equal(engine_select(ENGINE_LOOP, &probe, &e, note, sizeof(note)),
			 -EOPNOTSUPP);
	assert_string_equal(note, "engine = loop is not available: no loop here");
	assert_int_equal(engine_select(ENGINE_BPF, &probe, &e, note, sizeof(note)), 0);
	assert_ptr_equal(e, &engine_bpf_ops);
}

static void engine_auto_falls_back_to_uring_and_says_so(void **state)
{
	struct fx *f = *state;
	uint8_t buf[70000];
	char note[512], engine[16];

	tu_fill(buf, sizeof(buf), 13);
	make_file(f, "src", buf, sizeof(buf));
	tu_log_capture_start();
	assert_int_equal(run(f, "[pipeline p]\nengine = auto\ntransform = copy\nsource = @D/src\n"
			     "destination = @D/out\n"), 0);
	pipeline_status_get_note(&f->st, note, sizeof(note));
	pipeline_status_get_engine(&f->st, engine, sizeof(engine));
	assert_string_equal(engine, "uring");
	assert_non_null(strstr(note, "engine = auto: IORING_OP_BPF unavailable"));
	assert_true(tu_log_contains("using the uring fallback engine"));
	expect_file(f, "out", buf, sizeof(buf));
}

/* copy 16 MiB in 16 blocks of 1M, 8 in flight, and check the bytes */
static void copy_16_blocks(struct fx *f, int seed, const char *interval)
{
	size_t len = 16 << 20;
	uint8_t *buf = malloc(len);
	char conf[512];

	tu_fill(buf, len, seed);
	make_file(f, "src", buf, len);
	snprintf(conf, sizeof(conf), "[pipeline p]\nengine = uring\ntransform = copy\n"
		 "source = @D/src\ndestination = @D/out\nblock_size = 1M\nqueue_depth = 8\n"
		 "checkpoint_interval = %s\n", interval);
	assert_int_equal(run(f, conf), 0);
	expect_file(f, "out", buf, len);
	free(buf);
}

static void enters_are_counted_once_per_batch(void **state)
{
	struct fx *f = *state;

	copy_16_blocks(f, 14, "16M");
	uint64_t enters = atomic_load(&f->st.enters);

	/* 16 blocks, up to 8 in flight: at least 2 calls, at most one per request */
	print_message("16 blocks: %lu io_uring_enter calls\n", (unsigned long)enters);
	assert_true(enters >= 2 && enters <= 2 * 16 + 4);
	assert_true(atomic_load(&f->st.user_copied) == 0);	/* copy writes from the read area */
}

/*
 * IOSQE_CQE_SKIP_SUCCESS on all but a group's last request: a copy block
 * (read linked to write) posts one CQE, not two. Besides the 16 blocks only
 * the writeback starts (one per 8 MiB) may post one.
 */
static void a_copy_block_posts_one_cqe(void **state)
{
	struct fx *f = *state;

	copy_16_blocks(f, 17, "1G");
	uint64_t cqes = atomic_load(&f->st.cqes);

	print_message("16 blocks: %lu CQEs\n", (unsigned long)cqes);
	assert_true(cqes >= 16 && cqes <= 16 + 2);
}

/* 1M blocks, 64K units, two members: 8 units each, written one by one by default */
static void a_stripe_memcpys_nothing_by_default_and_all_when_gathered_on_uring(void **state)
{
	struct fx *f = *state;
	size_t len = 1 << 20;
	uint8_t *buf = malloc(len);

	tu_fill(buf, len, 15);
	make_file(f, "src", buf, len);
	assert_int_equal(run(f, "[pipeline p]\nengine = uring\ntransform = stripe\nsource = @D/src\n"
			     "destination = @D/s0\ndestination = @D/s1\n"), 0);
	assert_true(atomic_load(&f->st.user_copied) == 0);
	/* a name of its own: the first one's checkpoint says finished */
	assert_int_equal(run(f, "[pipeline g]\nengine = uring\ntransform = stripe\nsource = @D/src\n"
			     "destination = @D/g0\ndestination = @D/g1\nstripe_io = gather\n"), 0);
	assert_true(atomic_load(&f->st.user_copied) == len);
	free(buf);
}

/*
 * 1 MiB and a short last block with a partial unit, striped over two members
 * with 64K units and destriped back, blocks of @block, @stripe_io: the
 * layout and the bytes must come out exact; the bytes memcpy'd by the
 * stripe and by the destripe in @copied.
 */
static void stripe_round_trip(struct fx *f, const char *block, const char *stripe_io,
			      uint64_t copied[2])
{
	size_t len = (1 << 20) + 4096 + 17;
	uint8_t *buf = malloc(len), *parts[2];
	uint64_t plen[2];
	char conf[512];

	tu_fill(buf, len, 16);
	make_file(f, "src", buf, len);
	stripe_ref(buf, len, 2, 64 << 10, parts, plen);
	/* a pipeline name of its own: no checkpoint of another round applies */
	snprintf(conf, sizeof(conf), "[pipeline s-%s-%s]\nengine = uring\ntransform = stripe\n"
		 "source = @D/src\ndestination = @D/s0\ndestination = @D/s1\n"
		 "block_size = %s\nstripe_unit = 64K\nstripe_io = %s\n", block, stripe_io, block,
		 stripe_io);
	assert_int_equal(run(f, conf), 0);
	copied[0] = atomic_load(&f->st.user_copied);
	expect_file(f, "s0", parts[0], plen[0]);
	expect_file(f, "s1", parts[1], plen[1]);
	snprintf(conf, sizeof(conf), "[pipeline d-%s-%s]\nengine = uring\ntransform = gather\n"
		 "gather = destripe\nsource = @D/s0\nsource = @D/s1\ndestination = @D/back\n"
		 "block_size = %s\nstripe_unit = 64K\nstripe_io = %s\n", block, stripe_io, block,
		 stripe_io);
	assert_int_equal(run(f, conf), 0);
	copied[1] = atomic_load(&f->st.user_copied);
	expect_file(f, "back", buf, len);
	print_message("block %s, stripe_io %s: stripe %lu, destripe %lu bytes memcpy'd\n", block,
		      stripe_io, (unsigned long)copied[0], (unsigned long)copied[1]);
	free(parts[0]);
	free(parts[1]);
	free(buf);
}

/*
 * A block of one stripe unit per member is written out of the read area at
 * each unit's offset and a destripe reads each member's unit straight into
 * its place: nothing is memcpy'd, either way.
 */
static void one_unit_stripes_and_destripes_memcpy_nothing(void **state)
{
	uint64_t copied[2];

	stripe_round_trip(*state, "128K", "gather", copied);
	assert_true(copied[0] == 0 && copied[1] == 0);
	stripe_round_trip(*state, "128K", "per-unit", copied);
	assert_true(copied[0] == 0 && copied[1] == 0);
}

/*
 * With two units per member in a block, the gather memcpys them; stripe_io
 * = per-unit writes each unit from the read area (destripe: reads it into
 * its place) and memcpys nothing.
 */
static void per_unit_stripes_and_destripes_memcpy_nothing(void **state)
{
	uint64_t copied[2];

	stripe_round_trip(*state, "256K", "gather", copied);
	assert_true(copied[0] >= (1 << 20) && copied[1] >= (1 << 20));
	stripe_round_trip(*state, "256K", "per-unit", copied);
	assert_true(copied[0] == 0 && copied[1] == 0);
}

static const struct { const char *tag; enum transform t; enum gather_layout g; } transforms[] = {
	{ "copy", TRANSFORM_COPY, GATHER_CONCAT },
	{ "mirror", TRANSFORM_MIRROR, GATHER_CONCAT },
	{ "stripe", TRANSFORM_STRIPE, GATHER_CONCAT },
	{ "gather_concat", TRANSFORM_GATHER, GATHER_CONCAT },
	{ "gather_destripe", TRANSFORM_GATHER, GATHER_DESTRIPE },
};

static struct mcase cases[5 * 5];

static int case_setup(void **state)
{
	/* the case is picked by the test's initial state */
	struct mcase *c = *state;
	int ret = fx_setup(state);

	current_case = c;
	return ret;
}

int main(void)
{
	static const struct { const char *tag; uint64_t len; bool big; } sizes[] = {
		{ "0_bytes", 0, false },
		{ "1_byte", 1, false },
		{ "block_minus_1", BS_SMALL - 1, false },
		{ "block_plus_1", BS_SMALL + 1, false },
		{ "64_MiB", BIG, true },
	};
	struct CMUnitTest tests[25 + 33];
	int n = 0;

	for (int t = 0; t < 5; t++) {
		for (int s = 0; s < 5; s++) {
			struct mcase *c = &cases[n];

			snprintf(c->name, sizeof(c->name), "uring_%s_of_%s_is_byte_identical",
				 transforms[t].tag, sizes[s].tag);
			c->t = transforms[t].t;
			c->g = transforms[t].g;
			c->len = sizes[s].len;
			c->bs = sizes[s].big ? BS_BIG : BS_SMALL;
			c->su = sizes[s].big ? SU_BIG : SU_SMALL;
			tests[n] = (struct CMUnitTest){
				.name = c->name, .test_func = matrix_test,
				.setup_func = case_setup, .teardown_func = fx_teardown,
				.initial_state = c,
			};
			n++;
		}
	}
#define T(fn) tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
	T(finished_pipeline_is_not_copied_again);
	T(changed_source_is_copied_again);
	T(repeat_yes_copies_a_finished_pipeline_again);
	T(resume_continues_at_the_checkpoint);
	T(stop_mid_copy_checkpoints_and_resumes_identical);
	T(failing_destination_stops_with_its_offset_and_resumes);
	T(length_past_the_source_is_refused);
	T(offset_past_the_source_is_refused);
	T(offsets_and_length_copy_the_sub_range);
	T(truncate_yes_cuts_a_longer_destination);
	T(truncate_no_keeps_what_lies_beyond);
	T(missing_destination_with_create_no_is_refused);
	T(destination_that_is_the_source_is_refused);
	T(inconsistent_destripe_sources_are_refused);
	T(direct_io_copies_an_unaligned_length);
	T(direct_io_copies_an_unaligned_source_tail);
	T(direct_io_refuses_unaligned_offsets_up_front);
	T(engine_bpf_is_refused_without_bpf_ops);
	T(engine_loop_is_refused_without_bpf_ops);
	T(engine_select_loop_only_when_asked);
	T(engine_auto_falls_back_to_uring_and_says_so);
	T(enters_are_counted_once_per_batch);
	T(a_copy_block_posts_one_cqe);
	T(a_stripe_memcpys_nothing_by_default_and_all_when_gathered_on_uring);
	T(one_unit_stripes_and_destripes_memcpy_nothing);
	T(per_unit_stripes_and_destripes_memcpy_nothing);
#undef T
	return _cmocka_run_group_tests("uring engine", tests, n, NULL, NULL);
}
