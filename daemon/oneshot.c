// SPDX-License-Identifier: MIT
/*
 * The one-shot verbs, for people used to cp and dd:
 *
 *   iou-offloadd copy SRC DST
 *   iou-offloadd mirror SRC DST...
 *   iou-offloadd stripe --unit SIZE SRC DST...
 *   iou-offloadd gather [--destripe --unit SIZE] SRC... DST
 *
 * Each is one pipeline written as a config text and run as --once: the same
 * progress line, checkpoints and exit status. Its state lives in a directory
 * of its own under state_dir (or --state-dir), named after the command's
 * layout, so running the same command again resumes it, and it never meets
 * a service's state.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <unistd.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "fnv.h"
#include "oneshot.h"

static const char *const verbs[] = { "copy", "mirror", "stripe", "gather" };

bool oneshot_verb(const char *arg)
{
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (!strcmp(arg, verbs[i]))
			return true;
	return false;
}

#define MAX_LINES	48

/* the pipeline's config text, and the option each of its lines came from */
struct text {
	char *buf;
	size_t len, cap;
	bool oom;
	int nr_lines;
	const char *origin[MAX_LINES];
};

static void add(struct text *t, const char *origin, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void add(struct text *t, const char *origin, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (const char *c = fmt; *c; c++)
		if (*c == '\n' && t->nr_lines < MAX_LINES)
			t->origin[t->nr_lines++] = origin;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0,
			      fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->oom = true;
			return;
		}
		if (t->buf && t->len + n < t->cap) {
			t->len += n;
			return;
		}
		t->cap = (t->cap + n + 1) * 2;
		t->buf = realloc(t->buf, t->cap);
		if (!t->buf) {
			t->oom = true;
			return;
		}
	}
}

/*
 * @p as the file it names, for the command's state name: the same files by
 * another spelling (../, //, a symlinked directory, another cwd) resume the
 * same state. A file not there yet: its directory resolved, then its name.
 */
static char *canonical(const char *p)
{
	char *abs = config_absolute_path(p), *real, *slash, *dir, *out = NULL;

	if (!abs)
		return NULL;
	real = realpath(abs, NULL);
	if (real) {
		free(abs);
		return real;
	}
	slash = strrchr(abs, '/');
	*slash = '\0';
	dir = realpath(abs[0] ? abs : "/", NULL);
	*slash = '/';
	if (!dir || asprintf(&out, "%s/%s", strcmp(dir, "/") ? dir : "", slash + 1) < 0)
		out = NULL;
	free(dir);
	if (!out)
		return abs;	/* no such directory: as typed, the run will say so */
	free(abs);
	return out;
}

/*
 * Why @p (a path, or an option's value) cannot go into the configuration
 * text as it is, or NULL: the parser would end the value at a line break
 * (the rest a line of its own), cut it at ' ;' (a comment) and drop its
 * trailing blanks or CR, and so take another file or value
 */
static const char *value_unfit(const char *p)
{
	size_t n = strlen(p);

	if (strpbrk(p, "\n\r"))
		return "a value with a newline or carriage return is not taken";
	if (strstr(p, " ;") || strstr(p, "\t;"))
		return "a value with ' ;' is not taken (a configuration cuts a value there)";
	if (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		return "a value ending in a blank is not taken (a configuration drops it)";
	return NULL;
}

static void usage_line(const char *verb)
{
	fprintf(stderr, "iou-offloadd %s: usage: iou-offloadd %s%s (see --help)\n", verb, verb,
		!strcmp(verb, "copy") ? " [OPTION...] SRC DST" :
		!strcmp(verb, "mirror") ? " [OPTION...] SRC DST..." :
		!strcmp(verb, "stripe") ? " --unit SIZE [OPTION...] SRC DST..." :
		" [--destripe --unit SIZE] [OPTION...] SRC... DST");
}

int oneshot_parse(int argc, char **argv, struct daemon_options *opts)
{
	enum { OPT_ENGINE = 256, OPT_BS, OPT_QD, OPT_DIRECT, OPT_UNIT, OPT_DESTRIPE, OPT_STATE,
	       OPT_CHECKSUM, OPT_SOURCE };
	static const struct option longopts[] = {
		{ "engine", required_argument, NULL, OPT_ENGINE },
		{ "block-size", required_argument, NULL, OPT_BS },
		{ "queue-depth", required_argument, NULL, OPT_QD },
		{ "direct", no_argument, NULL, OPT_DIRECT },
		{ "unit", required_argument, NULL, OPT_UNIT },
		{ "destripe", no_argument, NULL, OPT_DESTRIPE },
		{ "state-dir", required_argument, NULL, OPT_STATE },
		{ "checksum", no_argument, NULL, OPT_CHECKSUM },
		{ "source", no_argument, NULL, OPT_SOURCE },
		{ "log-level", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char prog[32];
	const char *verb = argv[0], *engine = NULL, *bs = NULL, *qd = NULL, *unit = NULL;
	const char *state = NULL;
	bool direct = false, destripe = false, checksum = false;
	struct text t = { 0 };
	uint64_t h = FNV1A_START;	/* the layout's name for its state directory */
	const char *why;
	int c, nfiles, ndst;

	optind = 1;
	/* getopt's own messages name the command: "iou-offloadd copy: unrecognized option" */
	snprintf(prog, sizeof(prog), "iou-offloadd %s", verb);
	argv[0] = prog;
	while ((c = getopt_long(argc, argv, "l:h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_ENGINE: engine = optarg; break;
		case OPT_BS: bs = optarg; break;
		case OPT_QD: qd = optarg; break;
		case OPT_DIRECT: direct = true; break;
		case OPT_UNIT: unit = optarg; break;
		case OPT_DESTRIPE: destripe = true; break;
		case OPT_STATE: state = optarg; break;
		case OPT_CHECKSUM: checksum = true; break;
		case OPT_SOURCE: opts->verify_source = true; break;
		case 'l':
			if (daemon_options_log_level(opts, optarg))
				return DAEMON_EXIT_USAGE;
			break;
		case 'h':
			printf("iou-offloadd %s: one pipeline, run once (see iou-offloadd --help "
			       "and iou-offloadd(8), ONE-SHOT COMMANDS)\n", verb);
			return DAEMON_EXIT_OK;
		default:
			usage_line(verb);
			return DAEMON_EXIT_USAGE;
		}
	}
	argv[0] = (char *)verb;
	nfiles = argc - optind;
	/* say which rule the line broke: the usage line alone leaves it to guess */
	why = destripe && strcmp(verb, "gather") ? "--destripe is for gather" :
	      (!strcmp(verb, "stripe") || destripe) && !unit ?
		"--unit SIZE is required (the stripe unit)" :
	      unit && strcmp(verb, "stripe") && !destripe ?
		(strcmp(verb, "gather") ? "--unit is for stripe and gather --destripe" :
		 "--unit goes with --destripe") :
	      nfiles < 2 ? "a source and a destination are required" :
	      !strcmp(verb, "copy") && nfiles != 2 ? "copy takes one source and one destination" :
	      strcmp(verb, "copy") && nfiles < 3 ?
		(strcmp(verb, "gather") ? "it takes one source and at least two destinations" :
		 "it takes at least two sources and one destination") :
	      nfiles - 1 > CONFIG_MAX_FILES ? "too many files: at most 16 on the side that has "
					      "several" :
	      NULL;
	_Static_assert(CONFIG_MAX_FILES == 16, "the message above says 16");
	if (why) {
		fprintf(stderr, "iou-offloadd %s: %s\n", verb, why);
		usage_line(verb);
		return DAEMON_EXIT_USAGE;
	}
	/* a value is one line of the text: a newline in it would add lines of its own */
	const char *const values[][2] = {
		{ "--engine", engine }, { "--block-size", bs }, { "--queue-depth", qd },
		{ "--unit", unit },
	};
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		const char *unfit = values[i][1] ? value_unfit(values[i][1]) : NULL;

		if (unfit) {
			fprintf(stderr, "iou-offloadd %s: %s: %s\n", verb, values[i][0], unfit);
			return DAEMON_EXIT_USAGE;
		}
	}
	/* gather reads many and writes one; the others read one and write many */
	ndst = !strcmp(verb, "gather") ? 1 : nfiles - 1;

	if (state) {
		char *p = *state ? config_absolute_path(state) : NULL;
		const char *unfit = !*state ? "an empty path is not taken" :
				    p ? value_unfit(p) : strerror(ENOMEM);

		if (unfit) {
			fprintf(stderr, "iou-offloadd %s: --state-dir '%s': %s\n", verb, state,
				unfit);
			free(p);
			free(t.buf);
			return p || !*state ? DAEMON_EXIT_USAGE : DAEMON_EXIT_FAILED;
		}
		/* the status file beside the checkpoint: nothing under /run */
		add(&t, "--state-dir", "[daemon]\nstate_dir = %s\nruntime_dir = %s\n", p, p);
		free(p);
	}
	add(&t, verb, "[pipeline %s]\ntransform = %s\n", verb, verb);
	h = fnv1a_str(h, verb);
	if (destripe)
		add(&t, "--destripe", "gather = destripe\n");
	if (unit) {
		add(&t, "--unit", "stripe_unit = %s\n", unit);
		h = fnv1a_str(h, unit);
	}
	if (engine)
		add(&t, "--engine", "engine = %s\n", engine);
	if (bs)
		add(&t, "--block-size", "block_size = %s\n", bs);
	if (qd)
		add(&t, "--queue-depth", "queue_depth = %s\n", qd);
	if (direct)
		add(&t, "--direct", "direct = yes\n");
	if (checksum)
		add(&t, "--checksum", "checksum = crc32c\n");
	/* the destinations of a one-shot are made, and cut to what was copied */
	add(&t, verb, "create = yes\ntruncate = yes\n");
	for (int i = optind; i < argc; i++) {
		bool dst = i >= argc - ndst;
		char *p = canonical(argv[i]);
		const char *unfit = p ? value_unfit(p) : strerror(ENOMEM);

		if (unfit) {
			fprintf(stderr, "iou-offloadd %s: %s: %s\n", verb, argv[i], unfit);
			free(p);
			free(t.buf);
			return p ? DAEMON_EXIT_USAGE : DAEMON_EXIT_FAILED;
		}
		add(&t, dst ? "DST" : "SRC", "%s = %s\n", dst ? "destination" : "source", p);
		h = fnv1a_str(fnv1a_str(h, dst ? ">" : "<"), p);
		free(p);
	}
	if (t.oom) {
		free(t.buf);
		return DAEMON_EXIT_FAILED;
	}
	opts->config_text = t.buf;
	/* for the messages about its lines: one one-shot a process */
	static const char *origins[MAX_LINES];
	memcpy(origins, t.origin, sizeof(origins));
	opts->config_origins = origins;
	opts->nr_config_origins = t.nr_lines;
	opts->config_path = "command line";
	opts->once = true;
	snprintf(opts->dir_suffix, sizeof(opts->dir_suffix), "%s-%016llx", verb,
		 (unsigned long long)h);
	return -1;
}
