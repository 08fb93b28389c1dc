// SPDX-License-Identifier: MIT
/* iou-offloadd.conf parsing: every key, valid and invalid, with the exact message */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <stdbool.h>

#include "config.h"
#include "testutil.h"

#define PIPE "[pipeline p]\ntransform = copy\nsource = /s\ndestination = /d\n"

struct parsed {
	struct daemon_config cfg;
	struct config_errors errs;
	int ret;
};

static void parse(struct parsed *p, const char *text)
{
	memset(p, 0, sizeof(*p));
	p->ret = config_parse_buffer("test.conf", text, strlen(text), &p->cfg, &p->errs);
}

static void done(struct parsed *p)
{
	config_free(&p->cfg);
	config_errors_free(&p->errs);
}

static void dump(const struct parsed *p)
{
	for (int i = 0; i < p->errs.nr; i++)
		print_message("  got: %s\n", p->errs.msgs[i]);
}

/* @text must fail with exactly @msg among its messages */
static void expect_error(const char *text, const char *msg)
{
	struct parsed p;
	int found = 0;

	parse(&p, text);
	for (int i = 0; i < p.errs.nr; i++)
		found |= !strcmp(p.errs.msgs[i], msg);
	if (p.ret != -EINVAL || !found) {
		print_message("expected: %s\n", msg);
		dump(&p);
	}
	assert_int_equal(p.ret, -EINVAL);
	assert_true(found);
	done(&p);
}

static void expect_ok(struct parsed *p, const char *text)
{
	parse(p, text);
	if (p->ret)
		dump(p);
	assert_int_equal(p->ret, 0);
	assert_int_equal(p->errs.nr, 0);
}

/* ---- valid ---- */

static void defaults_apply_without_a_daemon_section(void **state)
{
	struct parsed p;

	(void)state;
	expect_ok(&p, PIPE);
	assert_string_equal(p.cfg.state_dir, "/var/lib/iou-offload");
	assert_string_equal(p.cfg.runtime_dir, "/run/iou-offload");
	assert_int_equal(p.cfg.log_level, LOG_LEVEL_INFO);
	assert_false(p.cfg.exit_when_done);
	assert_int_equal(p.cfg.nr_pipelines, 1);
	const struct pipeline_config *pc = &p.cfg.pipelines[0];
	assert_string_equal(pc->name, "p");
	assert_int_equal(pc->line, 1);
	assert_int_equal(pc->transform, TRANSFORM_COPY);
	assert_int_equal(pc->s.engine, ENGINE_AUTO);
	assert_int_equal(pc->s.queue_depth, 16);
	assert_int_equal(pc->s.block_size, 1 << 20);
	assert_int_equal(pc->s.stripe_unit, 64 << 10);
	assert_int_equal(pc->s.checkpoint_interval, 64 << 20);
	assert_int_equal(pc->s.retries, 0);
	assert_int_equal(pc->s.retry_delay, 5);
	assert_false(pc->s.direct);
	assert_true(pc->s.create);
	assert_true(pc->s.truncate);
	assert_false(pc->s.repeat);
	assert_true(pc->length == UINT64_MAX);
	assert_int_equal(pc->offset, 0);
	assert_int_equal(pc->dest_offset, 0);
	done(&p);
}

static void every_daemon_key_is_parsed(void **state)
{
	struct parsed p;

	(void)state;
	expect_ok(&p,
		  "[daemon]\n"
		  "state_dir = /var/tmp/st\n"
		  "runtime_dir = /run/x\n"
		  "log_level = debug\n"
		  "exit_when_done = yes\n"
		  "engine = uring\n"
		  "queue_depth = 64\n"
		  "block_size = 256K\n"
		  "stripe_unit = 4K\n"
		  "checkpoint_interval = 1G\n"
		  "retries = 3\n"
		  "retry_delay = 10\n"
		  "direct = yes\n"
		  "create = no\n"
		  "truncate = off\n"
		  "repeat = true\n"
		  PIPE);
	assert_string_equal(p.cfg.state_dir, "/var/tmp/st");
	assert_string_equal(p.cfg.runtime_dir, "/run/x");
	assert_int_equal(p.cfg.log_level, LOG_LEVEL_DEBUG);
	assert_true(p.cfg.exit_when_done);
	/* the pipeline inherits every default it does not set */
	const struct pipeline_settings *s = &p.cfg.pipelines[0].s;
	assert_int_equal(s->engine, ENGINE_URING);
	assert_int_equal(s->queue_depth, 64);
	assert_int_equal(s->block_size, 256 << 10);
	assert_int_equal(s->stripe_unit, 4096);
	assert_true(s->checkpoint_interval == 1ULL << 30);
	assert_int_equal(s->retries, 3);
	assert_int_equal(s->retry_delay, 10);
	assert_true(s->direct);
	assert_false(s->create);
	assert_false(s->truncate);
	assert_true(s->repeat);
	done(&p);
}

static void pipeline_keys_override_daemon_defaults(void **state)
{
	struct parsed p;

	(void)state;
	/* [daemon] after the pipeline: defaults are resolved after the whole file */
	expect_ok(&p,
		  "[pipeline p]\n"
		  "transform = stripe\n"
		  "source = /src\n"
		  "destination = /d0\n"
		  "destination = /d1\n"
		  "destination = /d2\n"
		  "offset = 4K\n"
		  "dest_offset = 1M\n"
		  "length = 10M\n"
		  "engine = bpf\n"
		  "queue_depth = 2\n"
		  "block_size = 1000000\n"
		  "stripe_unit = 96K\n"
		  "checkpoint_interval = 0\n"
		  "retries = 1\n"
		  "retry_delay = 0\n"
		  "direct = no\n"
		  "create = yes\n"
		  "truncate = yes\n"
		  "repeat = no\n"
		  "[daemon]\n"
		  "queue_depth = 32\n"
		  "direct = yes\n"
		  "engine = uring\n");
	const struct pipeline_config *pc = &p.cfg.pipelines[0];
	assert_int_equal(pc->transform, TRANSFORM_STRIPE);
	assert_int_equal(pc->nr_sources, 1);
	assert_string_equal(pc->sources[0], "/src");
	assert_int_equal(pc->nr_dests, 3);
	assert_string_equal(pc->dests[0], "/d0");
	assert_string_equal(pc->dests[2], "/d2");
	assert_int_equal(pc->offset, 4096);
	assert_int_equal(pc->dest_offset, 1 << 20);
	assert_int_equal(pc->length, 10 << 20);
	assert_int_equal(pc->s.engine, ENGINE_BPF);
	assert_int_equal(pc->s.queue_depth, 2);
	assert_int_equal(pc->s.block_size, 1000000);
	assert_int_equal(pc->s.stripe_unit, 96 << 10);
	assert_int_equal(pc->s.checkpoint_interval, 0);
	assert_int_equal(pc->s.retries, 1);
	assert_int_equal(pc->s.retry_delay, 0);
	assert_false(pc->s.direct);
	done(&p);
}

static void gather_layouts_and_sources_in_order(void **state)
{
	struct parsed p;

	(void)state;
	expect_ok(&p,
		  "[pipeline a]\ntransform = gather\nsource = /a\nsource = /b\nsource = /c\n"
		  "destination = /out\n"
		  "[pipeline b]\ntransform = gather\ngather = destripe\nsource = /x\nsource = /y\n"
		  "destination = /out2\n"
		  "[pipeline c]\ntransform = gather\ngather = concat\nsource = /x\nsource = /y\n"
		  "destination = /out3\n");
	assert_int_equal(p.cfg.nr_pipelines, 3);
	assert_int_equal(p.cfg.pipelines[0].gather, GATHER_CONCAT);
	assert_int_equal(p.cfg.pipelines[0].nr_sources, 3);
	assert_string_equal(p.cfg.pipelines[0].sources[1], "/b");
	assert_int_equal(p.cfg.pipelines[1].gather, GATHER_DESTRIPE);
	assert_int_equal(p.cfg.pipelines[2].gather, GATHER_CONCAT);
	assert_int_equal(p.cfg.pipelines[1].line, 7);
	done(&p);
}

static void sizes_accept_suffixes_and_reject_overflow(void **state)
{
	static const struct { const char *s; uint64_t v; } ok[] = {
		{ "0", 0 }, { "4096", 4096 }, { "4K", 4096 }, { "4k", 4096 }, { "4KiB", 4096 },
		{ "1M", 1 << 20 }, { "1mib", 1 << 20 }, { "2G", 2ULL << 30 }, { "3T", 3ULL << 40 },
	};
	static const char *const bad[] = {
		"", "K", "-1", "1.5M", "1 M", "1MB", "12Q", "0x10", "18446744073709551616",
		"17179869184G",
	};
	uint64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(config_parse_size(ok[i].s, &v), 0);
		assert_true(v == ok[i].v);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(config_parse_size(bad[i], &v), -EINVAL);
}

static void booleans_accept_the_usual_spellings(void **state)
{
	static const char *const yes[] = { "yes", "YES", "true", "on", "1" };
	static const char *const no[] = { "no", "False", "off", "0" };
	char buf[256];

	(void)state;
	for (int i = 0; i < 5; i++) {
		struct parsed p;

		snprintf(buf, sizeof(buf), "[daemon]\ndirect = %s\n", yes[i]);
		expect_ok(&p, buf);
		assert_true(p.cfg.defaults.direct);
		done(&p);
	}
	for (int i = 0; i < 4; i++) {
		struct parsed p;

		snprintf(buf, sizeof(buf), "[daemon]\ncreate = %s\n", no[i]);
		expect_ok(&p, buf);
		assert_false(p.cfg.defaults.create);
		done(&p);
	}
}

static void comments_and_blank_lines_are_ignored(void **state)
{
	struct parsed p;

	(void)state;
	expect_ok(&p,
		  "# a comment\n"
		  "; another\n"
		  "\n"
		  "[daemon]   \n"
		  "queue_depth = 8 ; inline comment\n"
		  "\r\n"
		  "[pipeline  spaced ]\n"
		  "transform = copy\nsource = /s\ndestination = /d\n");
	assert_int_equal(p.cfg.defaults.queue_depth, 8);
	assert_string_equal(p.cfg.pipelines[0].name, "spaced");
	done(&p);
}

/* inih would take an indented line for more of the value above it */
static void an_indented_line_is_a_line_of_its_own(void **state)
{
	struct parsed p;

	(void)state;
	expect_ok(&p, "[pipeline p]\ntransform = copy\nsource = /a\ndestination = /b\n"
		  "  block_size = 8K\n\tqueue_depth = 4\n");
	assert_int_equal(p.cfg.pipelines[0].nr_dests, 1);
	assert_string_equal(p.cfg.pipelines[0].dests[0], "/b");
	assert_int_equal(p.cfg.pipelines[0].s.block_size, 8192);
	assert_int_equal(p.cfg.pipelines[0].s.queue_depth, 4);
	done(&p);
}

/* a [daemon] setting a pipeline cannot use: the line that set it, not line 0 */
static void a_finding_about_an_inherited_setting_names_its_daemon_line(void **state)
{
	(void)state;
	expect_error("[daemon]\nengine = loop\nchecksum = crc32c\n"
		     "[pipeline p]\ntransform = copy\nsource = /a\ndestination = /b\n",
		     "test.conf:3: [pipeline p]: checksum = crc32c needs engine = bpf, uring or "
		     "auto (the loop engine's blocks complete inside its program, where nothing "
		     "sums them yet)");
}

/* the checks across keys run after the parse; their findings still come in file order */
static void findings_are_listed_in_line_order(void **state)
{
	struct parsed p;

	(void)state;
	parse(&p, "[pipeline p]\nsource = /a\ndestination = /b\nqueue_depth = lots\n"
		  "[pipeline q]\ntransform = copy\nsource = /c\ndestination = /d\n"
		  "block_size = huge\n");
	assert_int_equal(p.ret, -EINVAL);
	assert_int_equal(p.errs.nr, 3);
	assert_true(strstr(p.errs.msgs[0], "test.conf:1: ") != NULL);
	assert_true(strstr(p.errs.msgs[0], "missing required key 'transform'") != NULL);
	assert_true(strstr(p.errs.msgs[1], "test.conf:4: ") != NULL);
	assert_true(strstr(p.errs.msgs[2], "test.conf:9: ") != NULL);
	done(&p);
}

/* a file with CR line ends was one line: "OK, 0 pipelines", and --once ran nothing with 0 */
static void old_mac_line_ends_and_text_after_a_header_are_errors(void **state)
{
	(void)state;
	expect_error("[daemon]\rengine = uring\r[pipeline p]\rtransform = copy\r",
		     "test.conf:1: line contains a carriage return (CR) not followed by a line "
		     "feed: a file with old Mac line ends? (lines end with LF or CR LF)");
	expect_error("[daemon]garbage\nengine = uring\n",
		     "test.conf:1: text after the section header's ']': 'garbage'");
}

static void an_empty_file_is_valid_and_has_no_pipelines(void **state)
{
	struct parsed p;

	(void)state;
	expect_ok(&p, "");
	assert_int_equal(p.cfg.nr_pipelines, 0);
	done(&p);
}

static void log_levels_parse(void **state)
{
	static const struct { const char *s; enum log_level l; } lv[] = {
		{ "err", LOG_LEVEL_ERR }, { "error", LOG_LEVEL_ERR },
		{ "warning", LOG_LEVEL_WARNING }, { "warn", LOG_LEVEL_WARNING },
		{ "notice", LOG_LEVEL_NOTICE }, { "info", LOG_LEVEL_INFO },
		{ "debug", LOG_LEVEL_DEBUG },
	};
	char buf[128];

	(void)state;
	for (size_t i = 0; i < sizeof(lv) / sizeof(lv[0]); i++) {
		struct parsed p;

		snprintf(buf, sizeof(buf), "[daemon]\nlog_level = %s\n", lv[i].s);
		expect_ok(&p, buf);
		assert_int_equal(p.cfg.log_level, lv[i].l);
		done(&p);
	}
}

/* ---- invalid values: one test per key ---- */

static void engine_rejects_unknown_values(void **state)
{
	(void)state;
	expect_error("[daemon]\nengine = fast\n",
		     "test.conf:2: [daemon]: engine = 'fast': expected auto, bpf, loop or uring");
	expect_error(PIPE "engine = Loop\n",
		     "test.conf:5: [pipeline p]: engine = 'Loop': expected auto, bpf, loop or uring");
}

static void engine_loop_is_accepted_as_default_and_per_pipeline(void **state)
{
	struct parsed p;

	(void)state;
	expect_ok(&p, "[daemon]\nengine = loop\n" PIPE "queue_depth = 4\n");
	assert_int_equal(p.cfg.defaults.engine, ENGINE_LOOP);
	assert_int_equal(p.cfg.pipelines[0].s.engine, ENGINE_LOOP);
	assert_string_equal(engine_kind_to_string(ENGINE_LOOP), "loop");
	done(&p);
	expect_ok(&p, "[daemon]\nengine = bpf\n" PIPE "engine = loop\n");
	assert_int_equal(p.cfg.defaults.engine, ENGINE_BPF);
	assert_int_equal(p.cfg.pipelines[0].s.engine, ENGINE_LOOP);
	done(&p);
}

static void queue_depth_rejects_out_of_range(void **state)
{
	(void)state;
	expect_error("[daemon]\nqueue_depth = 0\n",
		     "test.conf:2: [daemon]: queue_depth = '0': expected an integer from 1 to 1024");
	expect_error("[daemon]\nqueue_depth = 1025\n",
		     "test.conf:2: [daemon]: queue_depth = '1025': expected an integer from 1 to 1024");
	expect_error(PIPE "queue_depth = eight\n",
		     "test.conf:5: [pipeline p]: queue_depth = 'eight': expected an integer from 1 "
		     "to 1024");
	expect_error("[daemon]\nqueue_depth =\n",
		     "test.conf:2: [daemon]: queue_depth = '': expected an integer from 1 to 1024");
}

static void block_size_rejects_out_of_range(void **state)
{
	(void)state;
	expect_error("[daemon]\nblock_size = 511\n",
		     "test.conf:2: [daemon]: block_size = '511': expected a size from 512 to 256M "
		     "(bytes, or a number with suffix K, M, G or T)");
	expect_error("[daemon]\nblock_size = 1G\n",
		     "test.conf:2: [daemon]: block_size = '1G': expected a size from 512 to 256M "
		     "(bytes, or a number with suffix K, M, G or T)");
	expect_error(PIPE "block_size = 12Q\n",
		     "test.conf:5: [pipeline p]: block_size = '12Q': expected a size from 512 to "
		     "256M (bytes, or a number with suffix K, M, G or T)");
}

static void stripe_unit_rejects_out_of_range(void **state)
{
	(void)state;
	expect_error("[daemon]\nstripe_unit = 100\n",
		     "test.conf:2: [daemon]: stripe_unit = '100': expected a size from 512 to 1G "
		     "(bytes, or a number with suffix K, M, G or T)");
	expect_error("[daemon]\nstripe_unit = 2G\n",
		     "test.conf:2: [daemon]: stripe_unit = '2G': expected a size from 512 to 1G "
		     "(bytes, or a number with suffix K, M, G or T)");
}

static void checkpoint_interval_rejects_bad_sizes(void **state)
{
	(void)state;
	expect_error("[daemon]\ncheckpoint_interval = often\n",
		     "test.conf:2: [daemon]: checkpoint_interval = 'often': expected a size from 0 "
		     "to 16T (bytes, or a number with suffix K, M, G or T)");
	expect_error("[daemon]\ncheckpoint_interval = 17T\n",
		     "test.conf:2: [daemon]: checkpoint_interval = '17T': expected a size from 0 "
		     "to 16T (bytes, or a number with suffix K, M, G or T)");
}

static void retries_and_retry_delay_reject_out_of_range(void **state)
{
	(void)state;
	expect_error("[daemon]\nretries = 1001\n",
		     "test.conf:2: [daemon]: retries = '1001': expected an integer from 0 to 1000");
	expect_error("[daemon]\nretries = -1\n",
		     "test.conf:2: [daemon]: retries = '-1': expected an integer from 0 to 1000");
	expect_error("[daemon]\nretry_delay = 3601\n",
		     "test.conf:2: [daemon]: retry_delay = '3601': expected an integer from 0 to 3600");
}

static void booleans_reject_other_words(void **state)
{
	(void)state;
	expect_error("[daemon]\ndirect = maybe\n",
		     "test.conf:2: [daemon]: direct = 'maybe': expected yes or no");
	expect_error("[daemon]\ncreate = 2\n",
		     "test.conf:2: [daemon]: create = '2': expected yes or no");
	expect_error(PIPE "truncate = y\n",
		     "test.conf:5: [pipeline p]: truncate = 'y': expected yes or no");
	expect_error(PIPE "repeat = always\n",
		     "test.conf:5: [pipeline p]: repeat = 'always': expected yes or no");
	expect_error("[daemon]\nexit_when_done = sure\n",
		     "test.conf:2: [daemon]: exit_when_done = 'sure': expected yes or no");
}

static void log_level_rejects_unknown_levels(void **state)
{
	(void)state;
	expect_error("[daemon]\nlog_level = loud\n",
		     "test.conf:2: [daemon]: log_level = 'loud': expected err, warning, notice, "
		     "info or debug");
}

static void directories_must_be_absolute(void **state)
{
	(void)state;
	expect_error("[daemon]\nstate_dir = var/lib/x\n",
		     "test.conf:2: [daemon]: state_dir = 'var/lib/x': expected an absolute path");
	expect_error("[daemon]\nruntime_dir =\n",
		     "test.conf:2: [daemon]: runtime_dir = '': expected an absolute path");
}

static void transform_rejects_unknown_values(void **state)
{
	(void)state;
	expect_error("[pipeline p]\ntransform = xor\nsource = /s\ndestination = /d\n",
		     "test.conf:2: [pipeline p]: transform = 'xor': expected copy, mirror, stripe "
		     "or gather");
}

static void gather_rejects_unknown_layouts(void **state)
{
	(void)state;
	expect_error("[pipeline p]\ntransform = gather\ngather = zip\nsource = /a\nsource = /b\n"
		     "destination = /d\n",
		     "test.conf:3: [pipeline p]: gather = 'zip': expected concat or destripe");
}

static void source_and_destination_must_be_absolute(void **state)
{
	(void)state;
	expect_error("[pipeline p]\ntransform = copy\nsource = rel\ndestination = /d\n",
		     "test.conf:3: [pipeline p]: source = 'rel': expected an absolute path");
	expect_error("[pipeline p]\ntransform = copy\nsource = /s\ndestination = ./d\n",
		     "test.conf:4: [pipeline p]: destination = './d': expected an absolute path");
}

static void offsets_and_length_reject_bad_sizes(void **state)
{
	(void)state;
	expect_error(PIPE "offset = -5\n",
		     "test.conf:5: [pipeline p]: offset = '-5': expected a size from 0 to "
		     "9223372036854775807 (bytes, or a number with suffix K, M, G or T)");
	expect_error(PIPE "dest_offset = 1x\n",
		     "test.conf:5: [pipeline p]: dest_offset = '1x': expected a size from 0 to "
		     "9223372036854775807 (bytes, or a number with suffix K, M, G or T)");
	expect_error(PIPE "length = all\n",
		     "test.conf:5: [pipeline p]: length = 'all': expected a size from 0 to "
		     "9223372036854775807 (bytes, or a number with suffix K, M, G or T)");
}

/* ---- structure ---- */

static void unknown_keys_are_errors(void **state)
{
	(void)state;
	expect_error("[daemon]\nqueue_dept = 4\n", "test.conf:2: [daemon]: unknown key 'queue_dept'");
	expect_error(PIPE "destinaton = /x\n", "test.conf:5: [pipeline p]: unknown key 'destinaton'");
}

static void keys_in_the_wrong_section_are_errors(void **state)
{
	(void)state;
	expect_error("[daemon]\ntransform = copy\n",
		     "test.conf:2: [daemon]: key 'transform' is only valid in [pipeline NAME] "
		     "sections");
	expect_error(PIPE "state_dir = /x\n",
		     "test.conf:5: [pipeline p]: key 'state_dir' is only valid in [daemon]");
	expect_error(PIPE "log_level = debug\n",
		     "test.conf:5: [pipeline p]: key 'log_level' is only valid in [daemon]");
}

static void unknown_sections_are_errors(void **state)
{
	(void)state;
	expect_error("[deamon]\nqueue_depth = 4\n",
		     "test.conf:1: unknown section [deamon]: expected [daemon], [pipeline NAME] or [device NAME]");
	expect_error("[pipeline]\n",
		     "test.conf:1: unknown section [pipeline]: expected [daemon], [pipeline NAME] or [device NAME]");
}

static void pipeline_names_are_checked(void **state)
{
	(void)state;
	expect_error("[pipeline a/b]\n",
		     "test.conf:1: invalid pipeline name 'a/b': expected 1 to 64 characters from "
		     "A-Z a-z 0-9 . _ - (not starting with . or -)");
	expect_error("[pipeline .hidden]\n",
		     "test.conf:1: invalid pipeline name '.hidden': expected 1 to 64 characters "
		     "from A-Z a-z 0-9 . _ - (not starting with . or -)");
	expect_error("[pipeline two words]\n",
		     "test.conf:1: invalid pipeline name 'two words': expected 1 to 64 characters "
		     "from A-Z a-z 0-9 . _ - (not starting with . or -)");
}

static void duplicate_sections_are_errors(void **state)
{
	(void)state;
	expect_error(PIPE "[pipeline p]\n",
		     "test.conf:5: duplicate section [pipeline p] (first at line 1)");
	expect_error("[daemon]\n[daemon]\n",
		     "test.conf:2: duplicate section [daemon] (first at line 1)");
}

static void duplicate_keys_are_errors(void **state)
{
	(void)state;
	expect_error("[daemon]\nqueue_depth = 4\nqueue_depth = 8\n",
		     "test.conf:3: [daemon]: duplicate key 'queue_depth' (first set at line 2)");
	expect_error(PIPE "transform = mirror\n",
		     "test.conf:5: [pipeline p]: duplicate key 'transform' (first set at line 2)");
}

static void keys_before_any_section_are_errors(void **state)
{
	(void)state;
	expect_error("queue_depth = 4\n",
		     "test.conf:1: key 'queue_depth' outside of any section: expected [daemon] or "
		     "[pipeline NAME] first");
}

static void syntax_errors_name_the_line(void **state)
{
	(void)state;
	expect_error("[daemon]\nqueue_depth 4\n",
		     "test.conf:2: syntax error: expected '[section]', 'key = value' or a comment");
	expect_error("[daemon\n",
		     "test.conf:1: syntax error: expected '[section]', 'key = value' or a comment");
}

/* inih returns only its first error line: each later one is named too, in order */
static void every_syntax_error_is_named_not_only_the_first(void **state)
{
	static const char *const want[] = {
		"test.conf:2: syntax error: expected '[section]', 'key = value' or a comment",
		"test.conf:3: [daemon]: unknown key 'bogus'",
		"test.conf:4: syntax error: expected '[section]', 'key = value' or a comment",
		"test.conf:5: syntax error: expected '[section]', 'key = value' or a comment",
		"test.conf:6: syntax error: expected '[section]', 'key = value' or a comment",
	};
	struct parsed p;

	(void)state;
	parse(&p, "[daemon]\nqueue_depth 4\nbogus = 1\nblock_size\n[pipeline p\nfoo\n");
	if (p.errs.nr != 5)
		dump(&p);
	assert_int_equal(p.ret, -EINVAL);
	assert_int_equal(p.errs.nr, 5);
	for (int i = 0; i < 5; i++)
		assert_string_equal(p.errs.msgs[i], want[i]);
	done(&p);
}

/* a PATH_MAX path fits on one line; inih's stock 200-byte buffer refused 197+ */
static void a_path_of_path_max_bytes_is_accepted(void **state)
{
	size_t n = PATH_MAX - 1, len = n + 128;
	char *buf = malloc(len), *path = malloc(n + 1);
	struct parsed p;

	(void)state;
	memset(path, 'a', n);
	path[0] = '/';
	path[n] = '\0';
	snprintf(buf, len, "[pipeline p]\ntransform = copy\nsource = %s\ndestination = /d\n",
		 path);
	expect_ok(&p, buf);
	assert_string_equal(p.cfg.pipelines[0].sources[0], path);
	done(&p);
	free(buf);
	free(path);
}

static void lines_longer_than_path_max_and_a_key_are_errors(void **state)
{
	size_t len = PATH_MAX + 512;
	char *buf = malloc(len + 64), want[128];

	(void)state;
	snprintf(buf, len + 64, "[pipeline p]\ntransform = copy\nsource = /%0*d\n"
		 "destination = /d\n", (int)len - 20, 0);
	snprintf(want, sizeof(want), "test.conf:3: [pipeline p]: line is longer than %d "
		 "characters", PATH_MAX + 256);
	expect_error(buf, want);
	free(buf);
}

/* ---- checks across keys ---- */

static void transform_is_required(void **state)
{
	(void)state;
	expect_error("[pipeline p]\nsource = /s\ndestination = /d\n",
		     "test.conf:1: [pipeline p]: missing required key 'transform' (copy, mirror, "
		     "stripe or gather)");
}

static void source_and_destination_are_required(void **state)
{
	(void)state;
	expect_error("[pipeline p]\ntransform = copy\ndestination = /d\n",
		     "test.conf:1: [pipeline p]: missing required key 'source'");
	expect_error("[pipeline p]\ntransform = copy\nsource = /s\n",
		     "test.conf:1: [pipeline p]: missing required key 'destination'");
}

static void copy_needs_one_source_and_one_destination(void **state)
{
	(void)state;
	expect_error("[pipeline p]\ntransform = copy\nsource = /s\ndestination = /a\n"
		     "destination = /b\n",
		     "test.conf:1: [pipeline p]: transform = copy needs exactly 1 destination, got 2 "
		     "(use mirror or stripe for more)");
	expect_error("[pipeline p]\ntransform = copy\nsource = /s\nsource = /t\ndestination = /a\n",
		     "test.conf:1: [pipeline p]: transform = copy needs exactly 1 source, got 2");
}

static void mirror_and_stripe_need_two_destinations(void **state)
{
	(void)state;
	expect_error("[pipeline p]\ntransform = mirror\nsource = /s\ndestination = /a\n",
		     "test.conf:1: [pipeline p]: transform = mirror needs at least 2 destinations, "
		     "got 1 (use copy for one)");
	expect_error("[pipeline p]\ntransform = stripe\nsource = /s\ndestination = /a\n",
		     "test.conf:1: [pipeline p]: transform = stripe needs at least 2 destinations, "
		     "got 1 (use copy for one)");
	expect_error("[pipeline p]\ntransform = stripe\nsource = /s\nsource = /t\n"
		     "destination = /a\ndestination = /b\n",
		     "test.conf:1: [pipeline p]: transform = stripe needs exactly 1 source, got 2");
}

static void gather_needs_two_sources_and_one_destination(void **state)
{
	(void)state;
	expect_error("[pipeline p]\ntransform = gather\nsource = /s\ndestination = /a\n",
		     "test.conf:1: [pipeline p]: transform = gather needs at least 2 sources, got 1 "
		     "(use copy for one)");
	expect_error("[pipeline p]\ntransform = gather\nsource = /s\nsource = /t\n"
		     "destination = /a\ndestination = /b\n",
		     "test.conf:1: [pipeline p]: transform = gather needs exactly 1 destination, "
		     "got 2");
}

static void gather_key_needs_transform_gather(void **state)
{
	(void)state;
	expect_error(PIPE "gather = destripe\n",
		     "test.conf:5: [pipeline p]: key 'gather' is only valid with transform = gather");
}

static void a_destination_may_not_be_a_source_or_repeat(void **state)
{
	(void)state;
	/* at the destination's line, naming the other (they said line 1, the header) */
	expect_error("[pipeline p]\ntransform = copy\nsource = /s\ndestination = /s\n",
		     "test.conf:4: [pipeline p]: destination '/s' is also a source (line 3)");
	expect_error("[pipeline p]\ntransform = mirror\nsource = /s\ndestination = /a\n"
		     "destination = /a\n",
		     "test.conf:5: [pipeline p]: destination '/a' is listed twice (first at line 4)");
}

static void at_most_sixteen_destinations(void **state)
{
	char buf[1024];
	size_t off;

	(void)state;
	off = snprintf(buf, sizeof(buf), "[pipeline p]\ntransform = mirror\nsource = /s\n");
	for (int i = 0; i < 17; i++)
		off += snprintf(buf + off, sizeof(buf) - off, "destination = /d%d\n", i);
	expect_error(buf, "test.conf:20: [pipeline p]: destination = '/d16': at most 16 "
		     "destinations per pipeline");
}

static void stripe_io_is_a_stripe_and_destripe_key_that_defaults_to_per_unit_where_the_units_fit(void **state)
{
	struct pipeline_config other;
	struct parsed p;

	(void)state;
	/* 1M blocks of 64K units: 16 units, PER_UNIT_MAX, so per-unit */
	expect_ok(&p, "[pipeline s]\ntransform = stripe\nsource = /s\ndestination = /a\n"
		  "destination = /b\nstripe_io = gather\n"
		  "[pipeline g]\ntransform = gather\ngather = destripe\nsource = /x\nsource = /y\n"
		  "destination = /d\n"
		  "[pipeline m]\ntransform = stripe\nsource = /t\ndestination = /e\n"
		  "destination = /f\nstripe_unit = 32K\n");
	assert_int_equal(p.cfg.pipelines[0].stripe_io, STRIPE_IO_GATHER);
	assert_int_equal(p.cfg.pipelines[1].stripe_io, STRIPE_IO_PER_UNIT);
	/* 32 units of 32K: more requests than a chain holds, so the gather */
	assert_int_equal(p.cfg.pipelines[2].stripe_io, STRIPE_IO_GATHER);
	/* a reload that changes it restarts the pipeline: not the same config */
	other = p.cfg.pipelines[1];
	other.stripe_io = STRIPE_IO_GATHER;
	assert_false(pipeline_config_same(&p.cfg.pipelines[1], &other));
	done(&p);
	expect_error("[pipeline c]\ntransform = copy\nsource = /s\ndestination = /d\n"
		     "stripe_io = per-unit\n",
		     "test.conf:5: [pipeline c]: key 'stripe_io' is only valid with transform = "
		     "stripe or gather = destripe");
	expect_error("[pipeline s]\ntransform = stripe\nsource = /s\ndestination = /a\n"
		     "destination = /b\nstripe_io = sideways\n",
		     "test.conf:6: [pipeline s]: stripe_io = 'sideways': expected per-unit or gather");
	expect_error("[pipeline s]\ntransform = stripe\nsource = /s\ndestination = /a\n"
		     "destination = /b\nstripe_io = per-unit\nblock_size = 1M\nstripe_unit = 32K\n",
		     "test.conf:6: [pipeline s]: stripe_io = per-unit: block_size = 1048576 holds 32 "
		     "stripe units of 32768, expected at most 16 (one request each)");
}

static void stripe_unit_must_not_be_tiny_for_the_block(void **state)
{
	(void)state;
	expect_error("[pipeline p]\ntransform = stripe\nsource = /s\ndestination = /a\n"
		     "destination = /b\nblock_size = 256M\nstripe_unit = 512\n",
		     "test.conf:7: [pipeline p]: stripe_unit = 512 is too small for block_size = "
		     "268435456: expected at most 4096 stripe units per block");
}

static void every_error_of_a_file_is_reported(void **state)
{
	struct parsed p;

	(void)state;
	parse(&p, "[daemon]\nqueue_depth = 0\nblock_size = x\nfoo = 1\n"
		  "[pipeline p]\ntransform = nope\n");
	assert_int_equal(p.ret, -EINVAL);
	/* three keys, the transform value, the missing source and destination */
	assert_int_equal(p.errs.nr, 6);
	done(&p);
}

static void unreadable_file_names_the_path(void **state)
{
	struct daemon_config cfg;
	struct config_errors errs = { 0 };

	(void)state;
	assert_int_equal(config_load("/nonexistent/iou.conf", &cfg, &errs), -ENOENT);
	assert_int_equal(errs.nr, 1);
	assert_string_equal(errs.msgs[0],
			    "/nonexistent/iou.conf: cannot read: No such file or directory");
	config_errors_free(&errs);
	config_free(&cfg);
}

static void fingerprint_follows_layout_not_tuning(void **state)
{
	struct parsed a, b, c;

	(void)state;
	expect_ok(&a, PIPE "queue_depth = 4\n");
	expect_ok(&b, PIPE "queue_depth = 64\nblock_size = 64K\nengine = uring\n");
	expect_ok(&c, PIPE "dest_offset = 4K\n");
	assert_true(pipeline_config_fingerprint(&a.cfg.pipelines[0]) ==
		    pipeline_config_fingerprint(&b.cfg.pipelines[0]));
	assert_false(pipeline_config_fingerprint(&a.cfg.pipelines[0]) ==
		     pipeline_config_fingerprint(&c.cfg.pipelines[0]));
	assert_false(pipeline_config_same(&a.cfg.pipelines[0], &b.cfg.pipelines[0]));
	done(&a);
	done(&b);
	done(&c);
}

static void every_key_is_documented_in_the_man_page(void **state)
{
	size_t len;
	char *man = tu_read_file(SRCDIR "/../../daemon/iou-offloadd.8", &len), needle[64];
	const char *k;

	(void)state;
	assert_non_null(man);
	man[len] = '\0';
	for (unsigned int i = 0; (k = config_key_name(i)); i++) {
		snprintf(needle, sizeof(needle), "\n.BI %s \"", k);
		if (!strstr(man, needle))
			print_message("iou-offloadd.8 does not document key '%s'\n", k);
		assert_non_null(strstr(man, needle));
	}
	free(man);
}

/* ---- pipelines that would overwrite each other ---- */

/* a config over files in a fresh directory: @D stands for it */
static void parse_in(struct parsed *p, const char *dir, const char *text)
{
	char buf[8192];

	tu_subst_dir(buf, sizeof(buf), text, dir);
	parse(p, buf);
}

static bool has_error(const struct parsed *p, const char *prefix, const char *needle)
{
	for (int i = 0; i < p->errs.nr; i++)
		if (!strncmp(p->errs.msgs[i], prefix, strlen(prefix)) &&
		    strstr(p->errs.msgs[i], needle))
			return true;
	dump(p);
	return false;
}

static void two_pipelines_writing_one_path_are_rejected(void **state)
{
	char *dir = tu_mkdtemp("claims");
	struct parsed p;

	(void)state;
	parse_in(&p, dir, "[pipeline a]\ntransform = copy\nsource = @D/s1\ndestination = @D/d\n"
		 "[pipeline b]\ntransform = copy\nsource = @D/s2\ndestination = @D/./d\n");
	assert_int_equal(p.ret, -EINVAL);
	assert_true(has_error(&p, "test.conf:8: [pipeline b]: destination = ",
			      "that pipeline a writes"));
	assert_true(has_error(&p, "test.conf:8: [pipeline b]: destination = ",
			      "two pipelines would overwrite each other's data"));
	done(&p);
	tu_rmrf(dir);
	free(dir);
}

static void a_symlink_or_hard_link_to_another_destination_is_rejected(void **state)
{
	char *dir = tu_mkdtemp("claims"), *d = tu_path(dir, "d"), *sl = tu_path(dir, "sym"),
	     *hl = tu_path(dir, "hard");
	struct parsed p;

	(void)state;
	assert_int_equal(tu_write_file(d, "x", 1), 0);
	assert_int_equal(symlink(d, sl), 0);
	assert_int_equal(link(d, hl), 0);
	parse_in(&p, dir, "[pipeline a]\ntransform = copy\nsource = @D/s1\ndestination = @D/d\n"
		 "[pipeline b]\ntransform = copy\nsource = @D/s2\ndestination = @D/sym\n"
		 "[pipeline c]\ntransform = mirror\nsource = @D/s3\ndestination = @D/e\n"
		 "destination = @D/hard\n");
	assert_int_equal(p.ret, -EINVAL);
	assert_true(has_error(&p, "test.conf:8: [pipeline b]: ", "the same file that pipeline a"));
	assert_true(has_error(&p, "test.conf:13: [pipeline c]: ", "the same file that pipeline a"));
	done(&p);
	tu_rmrf(dir);
	free(dir);
	free(d);
	free(sl);
	free(hl);
}

static void a_destination_that_is_another_pipelines_source_is_rejected(void **state)
{
	char *dir = tu_mkdtemp("claims");
	struct parsed p;

	(void)state;
	parse_in(&p, dir, "[pipeline a]\ntransform = copy\nsource = @D/s\ndestination = @D/d1\n"
		 "[pipeline b]\ntransform = copy\nsource = @D/d1\ndestination = @D/d2\n");
	assert_int_equal(p.ret, -EINVAL);
	assert_true(has_error(&p, "test.conf:7: [pipeline b]: source = ", "that pipeline a writes"));
	/* one side only reads: nothing of b's is overwritten (it said "each other's") */
	assert_true(has_error(&p, "test.conf:7: [pipeline b]: source = ",
			      "one pipeline would read what the other overwrites"));
	done(&p);
	/* two readers of one source are fine */
	parse_in(&p, dir, "[pipeline a]\ntransform = copy\nsource = @D/s\ndestination = @D/d1\n"
		 "[pipeline b]\ntransform = copy\nsource = @D/s\ndestination = @D/d2\n");
	assert_int_equal(p.ret, 0);
	done(&p);
	tu_rmrf(dir);
	free(dir);
}

/*
 * Two device nodes for one block device (made here with mknod, only stat'ed,
 * never opened): overlapping byte ranges are refused, disjoint ones run.
 */
static void overlapping_ranges_of_one_block_device_are_rejected(void **state)
{
	char *dir = tu_mkdtemp("claims"), *n1 = tu_path(dir, "bd1"), *n2 = tu_path(dir, "bd2");
	struct stat st;
	struct parsed p;

	(void)state;
	if (stat("/dev/vda", &st) || !S_ISBLK(st.st_mode) ||
	    mknod(n1, S_IFBLK | 0600, st.st_rdev) || mknod(n2, S_IFBLK | 0600, st.st_rdev)) {
		tu_rmrf(dir);
		free(dir);
		free(n1);
		free(n2);
		skip();		/* needs root and a block device to alias */
	}
	parse_in(&p, dir, "[pipeline a]\ntransform = copy\nsource = @D/s1\ndestination = @D/bd1\n"
		 "dest_offset = 0\nlength = 1M\n"
		 "[pipeline b]\ntransform = copy\nsource = @D/s2\ndestination = @D/bd2\n"
		 "dest_offset = 512K\nlength = 1M\n");
	assert_int_equal(p.ret, -EINVAL);
	assert_true(has_error(&p, "test.conf:10: [pipeline b]: destination = ",
			      "bytes 524288-1572864 overlap the bytes 0-1048576 that pipeline a "
			      "writes on the same device"));
	done(&p);
	parse_in(&p, dir, "[pipeline a]\ntransform = copy\nsource = @D/s1\ndestination = @D/bd1\n"
		 "dest_offset = 0\nlength = 1M\n"
		 "[pipeline b]\ntransform = copy\nsource = @D/s2\ndestination = @D/bd2\n"
		 "dest_offset = 1M\nlength = 1M\n");
	if (p.ret)
		dump(&p);
	assert_int_equal(p.ret, 0);
	done(&p);
	tu_rmrf(dir);
	free(dir);
	free(n1);
	free(n2);
}

static void paths_that_differ_but_name_one_file_in_one_pipeline_are_rejected(void **state)
{
	char *dir = tu_mkdtemp("claims"), *s = tu_path(dir, "s"), *sl = tu_path(dir, "sym");
	struct parsed p;

	(void)state;
	assert_int_equal(tu_write_file(s, "x", 1), 0);
	assert_int_equal(symlink(s, sl), 0);
	parse_in(&p, dir, "[pipeline a]\ntransform = copy\nsource = @D/s\ndestination = @D/sym\n");
	assert_int_equal(p.ret, -EINVAL);
	assert_true(has_error(&p, "test.conf:4: [pipeline a]: destination = ",
			      "is the same file as source"));
	done(&p);
	tu_rmrf(dir);
	free(dir);
	free(s);
	free(sl);
}

static void shipped_configs_are_valid(void **state)
{
	static const char *const files[] = {
		"config/iou-offloadd.conf", "config/examples/copy.conf",
		"config/examples/mirror.conf", "config/examples/stripe-raid0.conf",
		"config/examples/gather-destripe.conf", "config/examples/gather-concat.conf",
		"config/examples/offsets.conf", "config/examples/loop-mirror.conf",
	};
	char path[4096];

	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct daemon_config cfg;
		struct config_errors errs = { 0 };

		snprintf(path, sizeof(path), SRCDIR "/../../%s", files[i]);
		int ret = config_load(path, &cfg, &errs);

		for (int e = 0; e < errs.nr; e++)
			print_message("%s\n", errs.msgs[e]);
		assert_int_equal(ret, 0);
		assert_true(cfg.nr_pipelines >= 1);
		config_errors_free(&errs);
		config_free(&cfg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults_apply_without_a_daemon_section),
		cmocka_unit_test(every_daemon_key_is_parsed),
		cmocka_unit_test(pipeline_keys_override_daemon_defaults),
		cmocka_unit_test(gather_layouts_and_sources_in_order),
		cmocka_unit_test(sizes_accept_suffixes_and_reject_overflow),
		cmocka_unit_test(booleans_accept_the_usual_spellings),
		cmocka_unit_test(comments_and_blank_lines_are_ignored),
		cmocka_unit_test(an_indented_line_is_a_line_of_its_own),
		cmocka_unit_test(a_finding_about_an_inherited_setting_names_its_daemon_line),
		cmocka_unit_test(findings_are_listed_in_line_order),
		cmocka_unit_test(old_mac_line_ends_and_text_after_a_header_are_errors),
		cmocka_unit_test(an_empty_file_is_valid_and_has_no_pipelines),
		cmocka_unit_test(log_levels_parse),
		cmocka_unit_test(engine_rejects_unknown_values),
		cmocka_unit_test(engine_loop_is_accepted_as_default_and_per_pipeline),
		cmocka_unit_test(queue_depth_rejects_out_of_range),
		cmocka_unit_test(block_size_rejects_out_of_range),
		cmocka_unit_test(stripe_unit_rejects_out_of_range),
		cmocka_unit_test(checkpoint_interval_rejects_bad_sizes),
		cmocka_unit_test(retries_and_retry_delay_reject_out_of_range),
		cmocka_unit_test(booleans_reject_other_words),
		cmocka_unit_test(log_level_rejects_unknown_levels),
		cmocka_unit_test(directories_must_be_absolute),
		cmocka_unit_test(transform_rejects_unknown_values),
		cmocka_unit_test(gather_rejects_unknown_layouts),
		cmocka_unit_test(source_and_destination_must_be_absolute),
		cmocka_unit_test(offsets_and_length_reject_bad_sizes),
		cmocka_unit_test(unknown_keys_are_errors),
		cmocka_unit_test(keys_in_the_wrong_section_are_errors),
		cmocka_unit_test(unknown_sections_are_errors),
		cmocka_unit_test(pipeline_names_are_checked),
		cmocka_unit_test(duplicate_sections_are_errors),
		cmocka_unit_test(duplicate_keys_are_errors),
		cmocka_unit_test(keys_before_any_section_are_errors),
		cmocka_unit_test(syntax_errors_name_the_line),
		cmocka_unit_test(every_syntax_error_is_named_not_only_the_first),
		cmocka_unit_test(a_path_of_path_max_bytes_is_accepted),
		cmocka_unit_test(lines_longer_than_path_max_and_a_key_are_errors),
		cmocka_unit_test(transform_is_required),
		cmocka_unit_test(source_and_destination_are_required),
		cmocka_unit_test(copy_needs_one_source_and_one_destination),
		cmocka_unit_test(mirror_and_stripe_need_two_destinations),
		cmocka_unit_test(gather_needs_two_sources_and_one_destination),
		cmocka_unit_test(gather_key_needs_transform_gather),
		cmocka_unit_test(a_destination_may_not_be_a_source_or_repeat),
		cmocka_unit_test(at_most_sixteen_destinations),
		cmocka_unit_test(stripe_unit_must_not_be_tiny_for_the_block),
		cmocka_unit_test(stripe_io_is_a_stripe_and_destripe_key_that_defaults_to_per_unit_where_the_units_fit),
		cmocka_unit_test(every_error_of_a_file_is_reported),
		cmocka_unit_test(unreadable_file_names_the_path),
		cmocka_unit_test(fingerprint_follows_layout_not_tuning),
		cmocka_unit_test(every_key_is_documented_in_the_man_page),
		cmocka_unit_test(two_pipelines_writing_one_path_are_rejected),
		cmocka_unit_test(a_symlink_or_hard_link_to_another_destination_is_rejected),
		cmocka_unit_test(a_destination_that_is_another_pipelines_source_is_rejected),
		cmocka_unit_test(overlapping_ranges_of_one_block_device_are_rejected),
		cmocka_unit_test(paths_that_differ_but_name_one_file_in_one_pipeline_are_rejected),
		cmocka_unit_test(shipped_configs_are_valid),
	};

	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
