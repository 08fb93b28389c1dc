// SPDX-License-Identifier: MIT
/*
 * The daemon's main thread: configuration, one thread per pipeline,
 * signals (signalfd), systemd notification and the status file.
 *
 *   SIGTERM/SIGINT  every pipeline drains its chains in flight, checkpoints
 *                   and returns; then the daemon exits 0
 *   SIGHUP          re-read the config: new pipelines start, running ones
 *                   go on as they are, removed ones stop at a checkpoint; a
 *                   config with errors is rejected and the old one kept
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "daemon.h"
#include "daemon_dirs.h"
#include "rlimits.h"
#include "human.h"
#include "log.h"
#include "notify.h"
#include "reload.h"
#include "status.h"

#define TICK_MS		500
#define READY_WAIT_S	120	/* setup of all pipelines, before READY=1 anyway */

int daemon_options_log_level(struct daemon_options *opts, const char *arg)
{
	if (log_level_from_string(arg, &opts->log_level)) {
		fprintf(stderr, "iou-offloadd: --log-level '%s': expected err, warning, notice, "
			"info or debug\n", arg);
		return DAEMON_EXIT_USAGE;
	}
	opts->log_level_set = true;
	return 0;
}

int daemon_config_load(const struct daemon_options *opts, struct daemon_config *cfg,
		       struct config_errors *errs)
{
	char *dirs[2];
	int ret;

	if (!opts->config_text)
		return config_load(opts->config_path, cfg, errs);
	ret = config_parse_generated(opts->config_path, opts->config_text, opts->config_origins,
				     opts->nr_config_origins, cfg, errs);
	if (ret)
		return ret;
	/* a one-shot's own state: the same command again resumes it */
	if (asprintf(&dirs[0], "%s/oneshot/%s", cfg->state_dir, opts->dir_suffix) < 0)
		return -ENOMEM;
	if (asprintf(&dirs[1], "%s/oneshot/%s", cfg->runtime_dir, opts->dir_suffix) < 0) {
		free(dirs[0]);
		return -ENOMEM;
	}
	cfg->oneshot_base[0] = cfg->state_dir;
	cfg->oneshot_base[1] = cfg->runtime_dir;
	cfg->state_dir = dirs[0];
	cfg->runtime_dir = dirs[1];
	return 0;
}

static void daemon_dirs_unlock(struct daemon *d)
{
	for (int i = 0; i < 2; i++)
		if (d->dir_lock[i] >= 0)
			close(d->dir_lock[i]);
}

static void print_config_errors(const struct config_errors *errs)
{
	for (int i = 0; i < errs->nr; i++)
		log_err("%s", errs->msgs[i]);
	if (errs->dropped)
		log_err("... and %d more error(s) not shown", errs->dropped);
	for (int i = 0; i < errs->nr_warnings; i++)
		log_warning("%s", errs->warnings[i]);
}

/* ---- pipelines ---- */

/* idle buffers are kept only while another run may follow */
static size_t daemon_buffer_cache(const struct daemon *d, const struct daemon_config *cfg)
{
	if (d->stopping || d->opts.once || cfg->exit_when_done)
		return 0;
	return cfg->buffer_cache;
}

static int daemon_start_pipeline(struct daemon *d, const struct pipeline_config *pc)
{
	const struct run_env base = {
		.state_dir = d->cfg.state_dir,
		.runtime_dir = d->cfg.runtime_dir,
		.private_dirs = d->cfg.oneshot_base[0] ? (const char *const *)d->cfg.oneshot_base :
			NULL,
		.probe = &d->probe,
		.main_fd = d->event_fd,
		.pool = &d->pool,
		.oneshot = d->opts.config_text,
	};

	return worker_start(&d->workers, pc, &base);
}

/* ---- status ---- */

/* seconds left at the current rate; -1 when unknown */
static double entry_eta(const struct status_entry *e)
{
	if (strcmp(e->state, "running") || e->rate_bps <= 0 || e->bytes_total < e->bytes_done)
		return -1;
	return (e->bytes_total - e->bytes_done) / e->rate_bps;
}

/* "1.2 GiB of 2.8 GiB 43% 120.3 MiB/s ETA 0:13" for a running pipeline, else its state */
static int entry_progress(char *buf, size_t len, const struct status_entry *e)
{
	char eta[32] = "", done[32], total[32];
	double pct = e->bytes_total ? 100.0 * e->bytes_done / e->bytes_total : 0;
	double left = entry_eta(e);

	if (strcmp(e->state, "running"))
		return snprintf(buf, len, "%s: %s", e->name, e->state);
	if (left >= 0)
		snprintf(eta, sizeof(eta), " ETA %u:%02u", (unsigned int)(left / 60),
			 (unsigned int)left % 60);
	human_bytes(e->bytes_done, done, sizeof(done));
	human_bytes(e->bytes_total, total, sizeof(total));
	return snprintf(buf, len, "%s: %s of %s %.0f%% %.1f MiB/s%s (%s)", e->name, done, total,
			pct, e->rate_bps / (1 << 20), eta, e->engine);
}

/*
 * Between "ready" and "finished": on a terminal, --once redraws one line
 * (like dd status=progress); elsewhere (the journal, a log file) an info
 * line every progress_interval seconds while something runs.
 */
static void daemon_show_progress(struct daemon *d, const char *line)
{
	uint64_t now = clock_mono_ns();
	bool running = false;

	for (struct worker *w = d->workers.list; w; w = w->next)
		running |= atomic_load(&w->status.state) == PIPELINE_RUNNING;
	if (d->opts.once && d->tty) {
		if (line && running) {
			fprintf(stderr, "\r\033[K%.200s", line);
			fflush(stderr);
			d->progress_shown = true;
			log_set_progress_line(1);
		}
		return;
	}
	if (!line || !running || !d->cfg.progress_interval ||
	    now - d->last_progress_ns < d->cfg.progress_interval * 1000000000ULL)
		return;
	if (d->last_progress_ns)
		log_info("progress: %s", line);
	d->last_progress_ns = now;
}

/* the progress line is done: clear it, the closing log lines say the rest */
static void daemon_end_progress(struct daemon *d)
{
	if (d->progress_shown)
		fputs("\r\033[K", stderr);
	d->progress_shown = false;
	log_set_progress_line(0);
}

static void daemon_publish_status(struct daemon *d)
{
	struct status_report r = {
		.pid = getpid(), .started = d->started, .updated = time(NULL),
	};
	char line[1024];
	size_t off = 0;
	int n = 0, ret;

	for (struct worker *w = d->workers.list; w; w = w->next)
		n++;
	r.entries = calloc(n ? n : 1, sizeof(*r.entries));
	if (!r.entries)
		return;
	snprintf(r.config, sizeof(r.config), "%s", d->config_file);
	snprintf(r.state_dir, sizeof(r.state_dir), "%s", d->cfg.state_dir);
	if (devices_status(&d->devices, &r))
		log_debug("no memory for the devices' status");
	line[0] = '\0';
	/* oldest first: the list is newest first */
	for (int i = n - 1; i >= 0; i--) {
		struct worker *w = d->workers.list;
		struct status_entry *e = &r.entries[r.nr++];

		for (int k = 0; k < i; k++)
			w = w->next;
		worker_status_entry(w, e);
		if (off < sizeof(line) - 1) {
			off += snprintf(line + off, sizeof(line) - off, "%s", off ? "; " : "");
			if (off < sizeof(line) - 1)
				off += entry_progress(line + off, sizeof(line) - off, e);
		}
	}
	if (d->devices.list && off < sizeof(line) - 3) {
		if (off)
			off += snprintf(line + off, sizeof(line) - off, "; ");
		devices_summary(&d->devices, line + off, sizeof(line) - off);
	}
	notify_status(n || d->devices.list ? line : "no pipelines configured");
	daemon_show_progress(d, n ? line : NULL);
	ret = status_write(d->status_path, &r);
	if (ret)
		log_debug("cannot write %s: %s", d->status_path, strerror(-ret));
	free(r.entries);
	free(r.devices);
}

/* ---- watchdog: ping only while every running pipeline's loop turns ---- */

static void daemon_watchdog(struct daemon *d)
{
	uint64_t now = clock_mono_ns();

	if (!d->watchdog_usec || now - d->last_watchdog_ns < d->watchdog_usec * 1000 / 4)
		return;
	for (struct worker *w = d->workers.list; w; w = w->next) {
		uint64_t hb = atomic_load(&w->status.heartbeat_ns);

		if (atomic_load(&w->status.state) != PIPELINE_RUNNING || !hb)
			continue;
		if (now - hb > d->watchdog_usec * 1000 / 2) {
			log_err("pipeline %s: its loop has not turned for %.1f s; withholding "
				"the watchdog ping", w->cfg.name, (now - hb) / 1e9);
			return;
		}
	}
	notify_watchdog();
	d->last_watchdog_ns = now;
}

/* ---- the kernel probe ---- */

/*
 * Probe the kernel for the bpf and loop engines the first time a
 * configuration names one (auto included): a daemon whose pipelines and
 * devices all run engine = uring never reads the kernel's BTF.
 */
static void daemon_probe(struct daemon *d, const struct daemon_config *cfg)
{
	bool want = false;

	for (int i = 0; i < cfg->nr_pipelines; i++)
		want |= cfg->pipelines[i].s.engine != ENGINE_URING;
	for (int i = 0; i < cfg->nr_devices; i++)
		want |= cfg->devices[i].engine != ENGINE_URING;
	if (d->probe.probed || !want)
		return;
	engine_probe_kernel(&d->probe);
	if (d->probe.bpf_ok)
		log_info("bpf engine available (IORING_OP_BPF, uring_bpf_ops)");
	else
		log_info("bpf engine unavailable: %s", d->probe.why);
}

/* ---- reload ---- */

/* the reload's answer for `iou-offloadd reload` (reload.h); @why "" if all of it took */
static void daemon_reload_answer(struct daemon *d, const char *why)
{
	int ret = reload_answer_write(d->cfg.runtime_dir, getpid(), ++d->reloads, why);

	if (ret)
		log_warning("cannot write the reload's answer in %s: %s", d->cfg.runtime_dir,
			    strerror(-ret));
	notify_ready();
}

static void daemon_reload(struct daemon *d)
{
	struct config_errors errs = { 0 };
	struct daemon_config next;
	char why[1024], refused[4096] = "";
	size_t off;
	int ret;

	notify_reloading();
	if (d->opts.config_text || !strcmp(d->opts.config_path, "-")) {
		log_warning("%s has no file to read again; SIGHUP ignored",
			    d->opts.config_text ? "a one-shot command" : "a configuration from stdin");
		return;
	}
	log_notice("reloading %s", d->opts.config_path);
	ret = config_load(d->opts.config_path, &next, &errs);
	if (ret) {
		print_config_errors(&errs);
		log_err("reload rejected: %s has %d error(s); keeping the running configuration",
			d->opts.config_path, errs.nr);
		snprintf(refused, sizeof(refused), "%s has %d error(s), the running configuration "
			 "is kept: %s", d->opts.config_path, errs.nr,
			 errs.nr ? errs.msgs[0] : "cannot be read");
		config_errors_free(&errs);
		config_free(&next);
		daemon_reload_answer(d, refused);
		return;
	}
	print_config_errors(&errs);	/* the warnings */
	config_errors_free(&errs);
	if (!d->opts.log_level_set)
		log_set_level(next.log_level);
	if (strcmp(next.state_dir, d->cfg.state_dir) || strcmp(next.runtime_dir, d->cfg.runtime_dir))
		log_warning("state_dir and runtime_dir changes take effect on restart only");

	daemon_probe(d, &next);
	bufpool_set_limit(&d->pool, daemon_buffer_cache(d, &next));
	for (struct worker *w = d->workers.list; w; w = w->next) {
		if (config_find_pipeline(&next, w->cfg.name) || atomic_load(&w->exited))
			continue;
		log_notice("pipeline %s: removed from the configuration: stopping it at a "
			   "checkpoint", w->cfg.name);
		worker_stop(w);
	}
	for (int i = 0; i < next.nr_pipelines; i++) {
		const struct pipeline_config *pc = &next.pipelines[i];
		struct worker *w = worker_find(&d->workers, pc->name);

		if (w && !atomic_load(&w->exited)) {
			if (!pipeline_config_same(&w->cfg, pc))
				log_warning("pipeline %s: changed in the configuration; it keeps "
					    "running as it was, the change applies when it starts "
					    "again", pc->name);
			continue;
		}
		if (worker_conflict(&d->workers, pc, why, sizeof(why))) {
			log_err("pipeline %s: not started: %s (still running under the previous "
				"configuration); reload again once it has stopped", pc->name, why);
			off = strlen(refused);
			snprintf(refused + off, sizeof(refused) - off, "%spipeline %s: not started: %s",
				 off ? "; " : "", pc->name, why);
			continue;
		}
		if (w) {
			/* it ended before: start it again, the checkpoint knows what is left */
			workers_reap(&d->workers);
			worker_unlink(&d->workers, w);
			worker_free(w);
		}
		daemon_start_pipeline(d, pc);
	}

	/* keep the directories the running pipelines use */
	free(next.state_dir);
	free(next.runtime_dir);
	next.state_dir = d->cfg.state_dir;
	next.runtime_dir = d->cfg.runtime_dir;
	d->cfg.state_dir = d->cfg.runtime_dir = NULL;
	config_free(&d->cfg);
	d->cfg = next;
	for (struct worker *w = d->workers.list; w; w = w->next) {
		w->env.state_dir = d->cfg.state_dir;
		w->env.runtime_dir = d->cfg.runtime_dir;
	}
	off = strlen(refused);
	devices_reload(&d->devices, &d->cfg, refused + off, sizeof(refused) - off);
	log_notice("reloaded %s: %d pipeline(s), %d device(s)%s", d->opts.config_path,
		   d->cfg.nr_pipelines, d->cfg.nr_devices, refused[0] ? "; not all of it "
		   "took (above)" : "");
	daemon_reload_answer(d, refused);
}

/* ---- main loop ---- */

/* what the main loop reads from its signalfd */
static void daemon_signal_set(sigset_t *mask)
{
	sigemptyset(mask);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGHUP);
	sigaddset(mask, SIGUSR1);
}

/*
 * Blocked first thing, before any thread starts (they all inherit the
 * mask): one that comes while the configuration is read (-c - waits for
 * its end) waits for the main loop, where it reloads or stops. Left to its
 * default, a SIGHUP then killed the daemon.
 */
static void daemon_signals_block(void)
{
	sigset_t mask;

	daemon_signal_set(&mask);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
}

static int daemon_signals(struct daemon *d)
{
	sigset_t mask;

	daemon_signal_set(&mask);
	signal(SIGPIPE, SIG_IGN);
	d->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	return d->sigfd < 0 ? -errno : 0;
}

static void daemon_stop_all(struct daemon *d)
{
	if (d->stopping)
		return;
	d->stopping = true;
	bufpool_set_limit(&d->pool, 0);
	notify_stopping();
	log_notice("stopping: draining in-flight chains and checkpointing");
	for (struct worker *w = d->workers.list; w; w = w->next)
		worker_stop(w);
}

static void daemon_handle_signals(struct daemon *d)
{
	struct signalfd_siginfo si;

	while (read(d->sigfd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGHUP:
			if (!d->stopping)
				daemon_reload(d);
			break;
		case SIGTERM:
		case SIGINT:
			daemon_stop_all(d);
			break;
		case SIGUSR1:
			/* `iou-offloadd scrub NAME`: its request is in runtime_dir */
			if (!d->stopping)
				devices_scrub(&d->devices, d->cfg.runtime_dir);
			break;
		}
	}
}

static void daemon_tick(struct daemon *d, int timeout_ms)
{
	struct pollfd pfd[2] = {
		{ .fd = d->sigfd, .events = POLLIN },
		{ .fd = d->event_fd, .events = POLLIN },
	};
	uint64_t n;

	if (poll(pfd, 2, timeout_ms) > 0) {
		if (pfd[0].revents & POLLIN)
			daemon_handle_signals(d);
		/* a pipeline finished its setup or ended: the checks below see it */
		if ((pfd[1].revents & POLLIN) && read(d->event_fd, &n, sizeof(n)) < 0)
			log_debug("event fd: %s", strerror(errno));
	}
	workers_reap(&d->workers);
	workers_update_rates(&d->workers);
	devices_update_rates(&d->devices, clock_mono_ns());
	daemon_watchdog(d);
}

/*
 * --once answers "is the work done?": a failure beats a stop, a stop beats
 * success. As a service (exit_when_done), a stop request is how systemd
 * ends it, so it is a clean exit there.
 */
static int daemon_exit_status(const struct daemon *d)
{
	bool run_to_end = d->opts.once || d->cfg.exit_when_done;

	if (d->opts.once) {
		if (d->workers.failed)
			return DAEMON_EXIT_FAILED;
		return d->workers.stopped ? DAEMON_EXIT_STOPPED : DAEMON_EXIT_OK;
	}
	return d->workers.failed && !d->stopping && run_to_end ? DAEMON_EXIT_FAILED : DAEMON_EXIT_OK;
}

int daemon_main(const struct daemon_options *opts)
{
	struct config_errors errs = { 0 };
	struct daemon d = { .opts = *opts, .sigfd = -1, .event_fd = -1, .dir_lock = { -1, -1 } };
	uint64_t ready_deadline, last_status = 0;
	bool ready = false;
	char *abs;
	int ret;

	daemon_signals_block();
	/* `reload` compares the file from its own directory: it is named absolute */
	abs = opts->config_text || !strcmp(opts->config_path, "-") ? NULL :
	      config_absolute_path(opts->config_path);
	snprintf(d.config_file, sizeof(d.config_file), "%s", abs ? abs : opts->config_path);
	free(abs);
	ret = daemon_config_load(opts, &d.cfg, &errs);
	if (ret) {
		print_config_errors(&errs);
		log_err("%s: %d error(s); not starting", opts->config_path, errs.nr + errs.dropped);
		config_errors_free(&errs);
		config_free(&d.cfg);
		return DAEMON_EXIT_CONFIG;
	}
	print_config_errors(&errs);	/* the warnings */
	config_errors_free(&errs);
	log_set_level(opts->log_level_set ? opts->log_level : d.cfg.log_level);

	for (int i = 0; i < 2; i++) {
		const char *key = i ? "runtime_dir" : "state_dir";
		const char *dir = i ? d.cfg.runtime_dir : d.cfg.state_dir;
		char msg[4600];
		struct stat a, b;

		ret = daemon_dir_prepare(key, dir, i ? 0755 : 0700, opts->config_text != NULL, msg,
					 sizeof(msg));
		/* one directory for both is held once */
		if (!ret && !(i && stat(d.cfg.state_dir, &a) == 0 && stat(dir, &b) == 0 &&
			      a.st_dev == b.st_dev && a.st_ino == b.st_ino))
			ret = daemon_dir_lock(key, dir, opts->config_text ? NULL : d.config_file,
					      &d.dir_lock[i], msg, sizeof(msg));
		if (ret) {
			log_err("%s", msg);
			daemon_dirs_unlock(&d);
			config_free(&d.cfg);
			return DAEMON_EXIT_FAILED;
		}
	}
	snprintf(d.status_path, sizeof(d.status_path), "%s/%s", d.cfg.runtime_dir,
		 STATUS_FILE_NAME);
	/* 250 pipelines hold over 1000 descriptors: the soft 1024 is not the limit */
	rlimits_raise_nofile();
	d.started = time(NULL);
	d.tty = isatty(STDERR_FILENO) && !getenv("JOURNAL_STREAM");
	d.watchdog_usec = notify_watchdog_usec();
	daemon_probe(&d, &d.cfg);
	bufpool_init(&d.pool, daemon_buffer_cache(&d, &d.cfg));

	ret = daemon_signals(&d);
	if (!ret) {
		d.event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (d.event_fd < 0)
			ret = -errno;
	}
	if (ret) {
		log_err("cannot set up signal handling or the main thread's eventfd: %s",
			strerror(-ret));
		if (d.sigfd >= 0)
			close(d.sigfd);
		daemon_dirs_unlock(&d);
		config_free(&d.cfg);
		bufpool_destroy(&d.pool);
		return DAEMON_EXIT_FAILED;
	}
	log_notice("starting %d pipeline(s) from %s", d.cfg.nr_pipelines, opts->config_path);
	for (int i = 0; i < d.cfg.nr_pipelines; i++)
		daemon_start_pipeline(&d, &d.cfg.pipelines[i]);
	/* before READY=1: a device is there (or has said why not) when the unit is up */
	devices_start(&d.devices, &d.cfg, &d.probe);

	ready_deadline = clock_mono_ns() + READY_WAIT_S * 1000000000ULL;
	for (;;) {
		daemon_tick(&d, TICK_MS);
		if (!ready && (workers_all_set_up(&d.workers) || clock_mono_ns() > ready_deadline)) {
			/* rings, buffers and BPF ops are set up (or failed and said why) */
			notify_ready();
			ready = true;
			log_info("ready");
		}
		if (clock_mono_ns() - last_status >= 1000000000ULL) {
			daemon_publish_status(&d);
			last_status = clock_mono_ns();
		}
		/* devices are served until the daemon is told to stop */
		if (workers_all_exited(&d.workers) && (d.stopping ||
		    ((opts->once || d.cfg.exit_when_done) && !d.devices.list)))
			break;
	}
	devices_stop(&d.devices);
	workers_reap(&d.workers);
	daemon_publish_status(&d);
	daemon_end_progress(&d);
	while (d.workers.list) {
		struct worker *w = d.workers.list;

		d.workers.list = w->next;
		worker_free(w);
	}
	close(d.sigfd);
	close(d.event_fd);
	ret = daemon_exit_status(&d);
	log_notice("exiting%s%s", d.workers.failed ? ": some pipelines failed" : "",
		   ret == DAEMON_EXIT_STOPPED ? ": stopped before every pipeline finished" : "");
	daemon_dirs_unlock(&d);
	config_free(&d.cfg);
	bufpool_destroy(&d.pool);
	return ret;
}
