// SPDX-License-Identifier: MIT
/*
 * iou-offloadd: command line. Runs the daemon, checks a configuration, or
 * prints the status of a running daemon.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"
#include "config.h"
#include "pipeline.h"
#include "daemon.h"
#include "daemon_dirs.h"
#include "files.h"
#include "oneshot.h"
#include "ublk_meta.h"
#include "verify.h"
#include "rlimits.h"
#include "kv.h"
#include "log.h"
#include "reload.h"
#include "status.h"

#ifndef IOU_VERSION
#define IOU_VERSION "0.1"
#endif

static void usage(FILE *out)
{
	fprintf(out,
"iou-offloadd " IOU_VERSION " - move data between files and block devices with io_uring,\n"
"shuffling it in the kernel with IORING_OP_BPF where the kernel supports it.\n"
"\n"
"Usage:\n"
"  iou-offloadd [OPTIONS]                  run the daemon (in the foreground; systemd Type=notify)\n"
"  iou-offloadd --check-config [FILE]      validate FILE (default: the --config file) and exit\n"
"  iou-offloadd --check-config --open [FILE]  also open its files and check them\n"
"  iou-offloadd status [OPTIONS]           show what a running daemon is doing\n"
"  iou-offloadd reload [PID]               reload the daemon (SIGHUP), wait for its answer;\n"
"                                          fails if it refused any of the change\n"
"  iou-offloadd release                    delete the devices a dead daemon left that no\n"
"                                          daemon serves and nothing holds (after a stop)\n"
"  iou-offloadd udev-name ublkbN           the [device NAME] of /dev/ublkbN (udev: /dev/iou/NAME)\n"
"  iou-offloadd verify [--source] [NAME...] read back what checksum = crc32c recorded and\n"
"                                          compare every block (0 verified, 1 mismatch, 4 none)\n"
"  iou-offloadd scrub [NAME...]            verify every finished pipeline, compare a mirror\n"
"                                          device's legs (in the daemon), kept as its last\n"
"                                          scrub (iou-offload-scrub@NAME.timer: monthly)\n"
"\n"
"One-shot commands (one pipeline, run as --once; the same command again resumes it):\n"
"  iou-offloadd copy [OPT] SRC DST\n"
"  iou-offloadd mirror [OPT] SRC DST...\n"
"  iou-offloadd stripe --unit SIZE [OPT] SRC DST...\n"
"  iou-offloadd gather [--destripe --unit SIZE] [OPT] SRC... DST\n"
"      OPT: --engine=E --block-size=SIZE --queue-depth=N --direct --state-dir=DIR\n"
"           --checksum (then: iou-offloadd verify copy [OPT] SRC DST)\n"
"      (checkpoints in STATE_DIR/oneshot/VERB-HASH; destinations created and cut\n"
"      to size)\n"
"\n"
"Options:\n"
"  -c, --config=FILE       configuration file (default " CONFIG_DEFAULT_PATH "; - reads\n"
"                          it from standard input)\n"
"      --check-config[=FILE]\n"
"                          parse and validate; print every error as FILE:LINE: ...;\n"
"                          exit 0 if the configuration is valid, 78 if not. Syntax,\n"
"                          values and conflicts only: nothing is opened (ExecReload)\n"
"      --open              with --check-config: also open every source and destination\n"
"                          (creating and writing nothing) and check sizes, offsets,\n"
"                          directories, free space, O_DIRECT alignment and locks\n"
"      --once              run every pipeline to its end, then exit (for scripts)\n"
"  -l, --log-level=LEVEL   err, warning, notice, info or debug (overrides log_level)\n"
"  -s, --status-file=PATH  for `status`: read PATH instead of RUNTIME_DIR/status\n"
"      --json              `status` and --check-config: one JSON object (schema 1)\n"
"  -h, --help              this text\n"
"  -V, --version           print the version\n"
"\n"
"Configuration (INI; see iou-offloadd(8) for every key):\n"
"  [daemon]                state_dir, runtime_dir, log_level, exit_when_done,\n"
"                          progress_interval, and defaults\n"
"                          for all pipelines: engine, queue_depth, block_size, stripe_unit,\n"
"                          direct, create, truncate, repeat, sparse, checksum,\n"
"                          checkpoint_interval, retries,\n"
"                          retry_delay\n"
"  [pipeline NAME]         transform = copy | mirror | stripe | gather\n"
"                          source = PATH (repeat for gather), destination = PATH (repeat\n"
"                          for mirror and stripe), offset, dest_offset, length,\n"
"                          gather = concat | destripe, stripe_io = per-unit | gather,\n"
"                          and any default above\n"
"  [device NAME]           a ublk block device /dev/ublkbN: target = linear | stripe |\n"
"                          mirror, backing = PATH (one per member), size, nr_queues,\n"
"                          queue_depth, max_io_size, logical_block_size, stripe_unit,\n"
"                          stripe_io = per-unit | gather, read_policy = round-robin |\n"
"                          primary, engine (needs CAP_SYS_ADMIN and CONFIG_BLK_DEV_UBLK)\n"
"\n"
"Engines (engine = ...):\n"
"  bpf     READ_FIXED -> IORING_OP_BPF -> WRITE_FIXED chains; the shuffle is done in the\n"
"          kernel by uring_bpf_memcpy() (needs the patched kernel)\n"
"  loop    the bpf chains, driven by a bpf-ops loop_step program inside one\n"
"          io_uring_enter() per pipeline (needs the patched kernel; never picked by auto)\n"
"  uring   the same chains, with the shuffle done by memcpy in userspace (any kernel)\n"
"  auto    bpf if the running kernel has it, else uring with a logged warning\n"
"\n"
"Exit status:\n"
"  0   every pipeline finished (or had nothing left to do); a service stopped by SIGTERM\n"
"  1   a pipeline failed (with --once or exit_when_done), or the daemon could not start\n"
"  2   bad command line\n"
"  3   --once: stopped by SIGTERM or SIGINT before every pipeline finished (resumable)\n"
"  78  the configuration is invalid (also for --check-config)\n"
"  `status` exits 0 while the daemon runs, 3 when it does not (as systemctl status).\n"
"\n"
"Signals: SIGHUP re-reads the configuration (a bad one is rejected, the old one kept);\n"
"SIGTERM drains in-flight I/O, writes checkpoints and exits. Progress is checkpointed in\n"
"state_dir, so a restart (also after a crash) resumes where the data was durable.\n"
"\n"
"Examples:\n"
"  iou-offloadd --check-config /etc/iou-offloadd.conf\n"
"  iou-offloadd -c ./copy.conf --once -l debug\n"
"  systemctl reload iou-offloadd; iou-offloadd status\n");
}

/*
 * The line a --open finding is about: the key it starts with, else the source
 * or destination it names, else the first key it names that the pipeline
 * sets, else its header.
 */
static int finding_line(const struct pipeline_config *pc, const char *msg)
{
	const char *lead = !strncmp(msg, "direct = yes: ", 14) ? msg + 14 : msg;
	int line = config_key_line_leading(pc, lead);

	/* "offset 1048576 is beyond ...": the message is about that key */
	if (line)
		return line;
	for (int i = 0; i < pc->nr_sources; i++)
		if (strstr(msg, pc->sources[i]))
			return pc->source_line[i];
	for (int i = 0; i < pc->nr_dests; i++)
		if (strstr(msg, pc->dests[i]))
			return pc->dest_line[i];
	line = config_key_line_named(pc, msg);
	return line ? line : pc->line;
}

static void log_discard(enum log_level level, const char *msg, void *arg)
{
	(void)level;
	(void)msg;
	(void)arg;
}

/*
 * --check-config --open: what a start would find, without starting. Opens
 * each pipeline's files (creates and writes nothing), plans it and runs every
 * check: sizes against offset and length, parent directories, free space,
 * O_DIRECT alignment, files another pipeline or process holds. All findings
 * at once, in the parser's FILE:LINE: [pipeline NAME]: style.
 */
static int check_config_open(const struct daemon_config *cfg, FILE *out)
{
	int bad = 0, bad_dirs = 0;
	uint64_t locked = 0;
	unsigned int fds = 0;
	char msg[2048];

	for (int i = 0; i < 2; i++) {
		char msg[4600];

		if (daemon_dir_check(i ? "runtime_dir" : "state_dir",
				     i ? cfg->runtime_dir : cfg->state_dir, msg, sizeof(msg))) {
			fprintf(out, "%s: [daemon]: %s\n", cfg->path, msg);
			bad_dirs++;
		}
	}
	bad = bad_dirs;
	log_set_sink(log_discard, NULL);	/* the findings are printed below */
	for (int i = 0; i < cfg->nr_pipelines; i++) {
		const struct pipeline_config *pc = &cfg->pipelines[i];
		struct pipeline_status st;
		_Atomic bool stop = false;
		struct run_env env = {
			.state_dir = cfg->state_dir, .runtime_dir = cfg->runtime_dir, .stop = &stop, .wake_fd = -1, .main_fd = -1,
			.status = &st,
		};

		uint64_t bytes = 0;

		pipeline_status_init(&st);
		if (pipeline_check(pc, &env, &bytes, msg, sizeof(msg))) {
			/* one finding a line, each at the line of its key */
			for (char *m = strtok(msg, "\n"); m; m = strtok(NULL, "\n"))
				fprintf(out, "%s:%d: [pipeline %s]: %s\n", cfg->path,
					finding_line(pc, m), pc->name, m);
			bad++;
		}
		locked += bytes;
		fds += rlimits_pipeline_fds(pc);
		pthread_mutex_destroy(&st.lock);
	}
	log_set_sink(NULL, NULL);
	/* all pipelines run at once, in one process: their sum against the limits */
	if (rlimits_check_memlock(locked, msg, sizeof(msg)) ||
	    rlimits_check_nofile(fds, msg, sizeof(msg))) {
		fprintf(out, "%s: %s\n", cfg->path, msg);
		bad_dirs++;
		bad++;
	}
	if (bad > bad_dirs)
		fprintf(out, "%s: %d pipeline(s) would not start\n", cfg->path, bad - bad_dirs);
	/* devices: their members as a device holds them, exclusively */
	int bad_devices = devices_check_open(cfg, out);

	if (bad_devices)
		fprintf(out, "%s: %d device(s) would not start\n", cfg->path, bad_devices);
	return bad || bad_devices ? DAEMON_EXIT_CONFIG : DAEMON_EXIT_OK;
}

/*
 * Without --open too: a source or destination among the daemon's own files
 * would only be refused at start (files_open() checks it again there).
 */
static int check_config_private(const struct daemon_config *cfg, FILE *out)
{
	const char *const dirs[2] = { cfg->state_dir, cfg->runtime_dir };
	char why[PATH_MAX * 2 + 128];
	int bad = 0;

	for (int i = 0; i < cfg->nr_pipelines; i++) {
		const struct pipeline_config *pc = &cfg->pipelines[i];

		for (int j = 0; j < pc->nr_sources + pc->nr_dests; j++) {
			bool dest = j >= pc->nr_sources;
			int n = dest ? j - pc->nr_sources : j;
			const char *file = dest ? pc->dests[n] : pc->sources[n];
			int k = files_private_dir(dirs, file, -1, false);

			if (k < 0)
				continue;
			files_private_why(why, sizeof(why), dest, file, k, dirs[k]);
			fprintf(out, "%s:%d: [pipeline %s]: %s\n", cfg->path,
				dest ? pc->dest_line[n] : pc->source_line[n], pc->name, why);
			bad++;
		}
	}
	if (bad)
		fprintf(out, "%s: %d error(s)\n", cfg->path, bad);
	return bad;
}

static int check_config(const char *path, bool open_files, FILE *out, bool summary)
{
	struct config_errors errs = { 0 };
	struct daemon_config cfg;
	const char *name;
	int ret;

	ret = config_load(path, &cfg, &errs);
	/* the name the findings carry ("-" reads as <stdin>) */
	name = cfg.path ? cfg.path : path;
	/* errors and warnings in the file's order, as a reader goes through them */
	for (int i = 0, w = 0; i < errs.nr || w < errs.nr_warnings;) {
		if (w < errs.nr_warnings &&
		    (i == errs.nr || config_finding_line(errs.warnings[w], name) <
				     config_finding_line(errs.msgs[i], name)))
			fprintf(out, "%s (warning)\n", errs.warnings[w++]);
		else
			fprintf(out, "%s\n", errs.msgs[i++]);
	}
	if (errs.dropped)
		fprintf(out, "%s: ... and %d more error(s) not shown (is it a configuration "
			"file?)\n", path, errs.dropped);
	if (ret) {
		fprintf(out, "%s: %d error(s)\n", path,
			errs.nr ? errs.nr + errs.dropped : 1);
		config_errors_free(&errs);
		config_free(&cfg);
		return DAEMON_EXIT_CONFIG;
	}
	if (!open_files && check_config_private(&cfg, out)) {
		config_errors_free(&errs);
		config_free(&cfg);
		return DAEMON_EXIT_CONFIG;
	}
	if (open_files) {
		ret = check_config_open(&cfg, out);
		if (ret) {
			config_errors_free(&errs);
			config_free(&cfg);
			return ret;
		}
	}
	if (!summary)
		goto done;
	printf("%s: OK%s, %d pipeline(s), %d device(s); state_dir %s, runtime_dir %s\n", path,
	       open_files ? " (files opened and checked)" : "", cfg.nr_pipelines,
	       cfg.nr_devices, cfg.state_dir, cfg.runtime_dir);
	for (int i = 0; i < cfg.nr_pipelines; i++) {
		const struct pipeline_config *pc = &cfg.pipelines[i];

		printf("  %-16s %-6s %d -> %d, engine %s, block_size %u, queue_depth %u%s\n",
		       pc->name, transform_to_string(pc->transform), pc->nr_sources,
		       pc->nr_dests, engine_kind_to_string(pc->s.engine), pc->s.block_size,
		       pc->s.queue_depth, pc->s.direct ? ", direct" : "");
	}
	for (int i = 0; i < cfg.nr_devices; i++) {
		const struct device_config *dc = &cfg.devices[i];

		printf("  %-16s %-6s %d member(s), engine %s, data_path %s, queues %u, "
		       "queue_depth %u\n", dc->name, device_target_to_string(dc->target),
		       dc->nr_backing, engine_kind_to_string(dc->engine),
		       data_path_to_string(dc->data_path), dc->nr_queues, dc->queue_depth);
		/* the metadata file's size: the device's, once the members gave it */
		if (dc->integrity != CHECKSUM_NONE)
			printf("    integrity crc32c: %s/device-%s.integrity, %" PRIu64 " bytes "
			       "(a 4-byte sum per 4 KiB, a byte per 1 MiB region, a 4 KiB header)\n",
			       cfg.state_dir, dc->name, ublk_meta_size(dc->size));
	}
done:
	config_errors_free(&errs);
	config_free(&cfg);
	return 0;
}

/*
 * --check-config --json: the findings the text form prints, one object each
 * ({"line", "message", "severity"}), in {"schema": 1, "file", "valid",
 * "findings": [...]}; the summary lines are left out
 */
static int check_config_json(const char *path, bool open_files)
{
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0, plen = strlen(path);
	FILE *out = open_memstream(&buf, &len);
	int rc, n = 0;

	if (!out)
		return DAEMON_EXIT_FAILED;
	/* the OK summary is the "valid" member */
	rc = check_config(path, open_files, out, false);
	fclose(out);
	printf("{\"schema\": 1, \"file\": ");
	kv_json_str(stdout, path);
	printf(", \"valid\": %s, \"findings\": [", rc ? "false" : "true");
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *m = line, *sev = "error";
		size_t ml;
		int at = 0, k = 0;

		if (!strncmp(m, path, plen) && m[plen] == ':') {
			m += plen + 1;
			if (sscanf(m, "%d:%n", &at, &k) == 1)
				m += k;
			while (*m == ' ')
				m++;
		}
		ml = strlen(m);
		if (strstr(m, "would not start") || (strstr(m, "error(s)") && !strchr(m, '[') &&
						     !strstr(m, "not shown")))
			continue;
		if (ml > 10 && !strcmp(m + ml - 10, " (warning)")) {
			sev = "warning";
			ml -= 10;
		}
		printf("%s{\"line\": %d, \"severity\": \"%s\", \"message\": ", n++ ? ", " : "",
		       at, sev);
		char *msg = strndup(m, ml);

		kv_json_str(stdout, msg ? msg : "");
		free(msg);
		printf("}");
	}
	printf("]}\n");
	free(buf);
	return rc;
}

/*
 * A dead daemon's status file is as old as its last write (once a second);
 * what a restart resumes from is the checkpoint: read that instead
 */
static void status_from_checkpoints(struct status_report *r, const char *state_dir)
{
	struct checkpoint ck;

	for (int i = 0; state_dir && i < r->nr; i++)
		if (checkpoint_load(state_dir, r->entries[i].name, &ck) == 0 &&
		    ck.state != CKPT_FINISHED)
			r->entries[i].bytes_durable = ck.done;
}

/* each pipeline's last `iou-offloadd verify` and `scrub`, from state_dir */
static void status_add_verifies(struct status_report *r, const char *state_dir)
{
	struct verify_record v;

	for (int i = 0; state_dir && i < r->nr; i++) {
		for (int scrub = 0; scrub < 2; scrub++) {
			struct status_check *c = scrub ? &r->entries[i].scrub : &r->entries[i].verify;

			if (verify_record_load(state_dir, r->entries[i].name, scrub, &v))
				continue;
			*c = (struct status_check){
				.known = true, .when = v.when, .blocks = v.blocks, .bytes = v.bytes,
				.mismatches = v.mismatches, .complete = v.complete,
				.failed = v.failed,
			};
		}
	}
}

/* each device's last scrub (a mirror's legs compared), from state_dir */
static void status_add_device_scrubs(struct status_report *r, const char *state_dir)
{
	struct verify_record v;

	for (int i = 0; state_dir && i < r->nr_devices; i++) {
		if (verify_record_load(state_dir, r->devices[i].name, true, &v))
			continue;
		r->devices[i].last_scrub.known = true;
		r->devices[i].last_scrub.when = v.when;
		r->devices[i].last_scrub.blocks = v.blocks;
		r->devices[i].last_scrub.bytes = v.bytes;
		r->devices[i].last_scrub.mismatches = v.mismatches;
		r->devices[i].last_scrub.repaired = v.repaired;
		r->devices[i].last_scrub.legs = v.files;
		r->devices[i].last_scrub.complete = v.complete;
		r->devices[i].last_scrub.failed = v.failed;
	}
}

/* 0: running; 3: not running (as systemctl status); 1: no status to read */
static int show_status(const char *config_path, const char *status_file, bool json)
{
	struct config_errors errs = { 0 };
	struct daemon_config cfg;
	struct status_report r;
	const char *state_dir;
	char path[4200];
	bool alive;
	int ret;

	/* the status file and the checkpoints live in the configured directories */
	ret = config_load(config_path, &cfg, &errs);
	config_errors_free(&errs);
	if (!status_file) {
		snprintf(path, sizeof(path), "%s/%s",
			 cfg.runtime_dir ? cfg.runtime_dir : "/run/iou-offload", STATUS_FILE_NAME);
		status_file = path;
	}
	ret = status_read(status_file, &r);
	if (ret == -ENOENT) {
		/* a daemon that ran under systemd: its runtime directory went with the unit */
		if (json)
			printf("{\"schema\": %d, \"daemon\": {\"running\": false, \"status_file\": "
			       "null}, \"pipelines\": [], \"devices\": []}\n", STATUS_JSON_SCHEMA);
		else
			printf("iou-offloadd: not running (no status file %s)\n", status_file);
		config_free(&cfg);
		return 3;
	}
	if (ret) {
		fprintf(stderr, "iou-offloadd status: cannot read %s: %s (is the daemon "
			"running?)\n", status_file, strerror(-ret));
		config_free(&cfg);
		return ret == -ENOENT ? 3 : 1;
	}
	alive = status_daemon_alive(r.pid);
	/* the daemon's own word (a one-shot's state is not under the config's) */
	state_dir = r.state_dir[0] ? r.state_dir : cfg.state_dir;
	if (!alive)
		status_from_checkpoints(&r, state_dir);
	status_add_verifies(&r, state_dir);
	status_add_device_scrubs(&r, state_dir);
	if (json)
		status_print_json(stdout, &r, time(NULL));
	else
		status_print(stdout, &r, time(NULL));
	status_report_free(&r);
	config_free(&cfg);
	return alive ? 0 : 3;
}

/* stderr is the journal when $JOURNAL_STREAM names it (systemd.exec(5)) */
static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
		return false;
	return st.st_dev == dev && st.st_ino == ino;
}

int main(int argc, char **argv)
{
	enum { OPT_CHECK = 256, OPT_ONCE, OPT_OPEN, OPT_SOURCE, OPT_JSON };
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", optional_argument, NULL, OPT_CHECK },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "open", no_argument, NULL, OPT_OPEN },
		{ "source", no_argument, NULL, OPT_SOURCE },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "log-level", required_argument, NULL, 'l' },
		{ "status-file", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct daemon_options opts = { .config_path = CONFIG_DEFAULT_PATH };
	const char *check = NULL, *status_file = NULL;
	bool do_check = false, do_status = false, do_open = false, do_reload = false;
	bool do_release = false, do_udev = false, do_verify = false, verify_source = false;
	bool do_scrub = false;
	bool json = false;
	int c;

	log_set_journal(stderr_is_journal());
	/* verify copy [OPT] SRC DST: the one-shot command's own pipeline and state */
	if (argc > 2 && !strcmp(argv[1], "verify") && oneshot_verb(argv[2])) {
		int rc = oneshot_parse(argc - 2, argv + 2, &opts);

		if (rc >= 0)
			return rc;
		rc = verify_main(&opts, opts.verify_source, false, NULL, 0);
		free((char *)opts.config_text);
		return rc;
	}
	/* copy, mirror, stripe, gather: one pipeline from the command line */
	if (argc > 1 && oneshot_verb(argv[1])) {
		int rc = oneshot_parse(argc - 1, argv + 1, &opts);

		if (rc >= 0)
			return rc;
		if (opts.log_level_set)
			log_set_level(opts.log_level);
		rc = daemon_main(&opts);
		free((char *)opts.config_text);
		return rc;
	}
	/* the `status`, `reload`, `release`, `udev-name`, `verify` and `scrub` verbs, anywhere among the options */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "status") && strcmp(argv[i], "reload") &&
		    strcmp(argv[i], "release") && strcmp(argv[i], "udev-name") &&
		    strcmp(argv[i], "verify") && strcmp(argv[i], "scrub"))
			continue;
		if (i > 1 && argv[i - 1][0] == '-' && argv[i - 1][1] != '-' &&
		    strchr("cls", argv[i - 1][1]) && !argv[i - 1][2])
			continue;	/* an option's argument, e.g. -c status */
		do_status = !strcmp(argv[i], "status");
		do_reload = !strcmp(argv[i], "reload");
		do_release = !strcmp(argv[i], "release");
		do_udev = !strcmp(argv[i], "udev-name");
		do_verify = !strcmp(argv[i], "verify");
		do_scrub = !strcmp(argv[i], "scrub");
		memmove(&argv[i], &argv[i + 1], (argc - i) * sizeof(*argv));
		argc--;
		break;
	}
	while ((c = getopt_long(argc, argv, "c:l:s:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			opts.config_path = optarg;
			break;
		case OPT_CHECK:
			do_check = true;
			check = optarg;
			break;
		case OPT_ONCE:
			opts.once = true;
			break;
		case OPT_OPEN:
			do_open = true;
			break;
		case OPT_SOURCE:
			verify_source = true;
			break;
		case OPT_JSON:
			json = true;
			break;
		case 'l':
			if (daemon_options_log_level(&opts, optarg))
				return DAEMON_EXIT_USAGE;
			break;
		case 's':
			status_file = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("iou-offloadd %s\n", IOU_VERSION);
			return 0;
		default:
			/* getopt said what was wrong, in one line */
			fprintf(stderr, "iou-offloadd: see --help\n");
			return DAEMON_EXIT_USAGE;
		}
	}
	/* `--check-config FILE` as two words, like people type it */
	if (do_check && !check && optind < argc)
		check = argv[optind++];
	if (do_udev && optind + 1 == argc)
		return devices_udev_name(opts.config_path, argv[optind]);
	if (do_udev && optind == argc) {
		fprintf(stderr, "iou-offloadd udev-name: which disk? (iou-offloadd udev-name ublkbN)\n");
		return DAEMON_EXIT_USAGE;
	}
	if (do_scrub && verify_source) {
		fprintf(stderr, "iou-offloadd scrub: --source is verify's: a scrub reads the "
			"destinations (iou-offloadd verify --source NAME reads the source too)\n");
		return DAEMON_EXIT_USAGE;
	}
	if (do_verify || do_scrub)
		return verify_main(&opts, verify_source && do_verify, do_scrub, argv + optind,
				   argc - optind);
	if (do_release && optind == argc)
		return devices_release(opts.config_path);
	if (do_reload && optind + 1 >= argc)
		return reload_request(opts.config_path, optind < argc ? argv[optind] : NULL);
	if (optind < argc) {
		fprintf(stderr, "iou-offloadd: unexpected argument '%s' (see --help)\n",
			argv[optind]);
		return DAEMON_EXIT_USAGE;
	}
	if (do_open && !do_check) {
		fprintf(stderr, "iou-offloadd: --open goes with --check-config (see --help)\n");
		return DAEMON_EXIT_USAGE;
	}
	/* a word meant for a command must not start the daemon and its pipelines */
	if (json && !do_check && !do_status) {
		fprintf(stderr, "iou-offloadd: --json goes with status or --check-config (see --help)\n");
		return DAEMON_EXIT_USAGE;
	}
	if (status_file && !do_status) {
		fprintf(stderr, "iou-offloadd: -s/--status-file goes with status (see --help)\n");
		return DAEMON_EXIT_USAGE;
	}
	if (do_check)
		return json ? check_config_json(check ? check : opts.config_path, do_open) :
			      check_config(check ? check : opts.config_path, do_open, stderr, true);
	if (do_status)
		return show_status(opts.config_path, status_file, json);
	if (opts.log_level_set)
		log_set_level(opts.log_level);
	return daemon_main(&opts);
}
