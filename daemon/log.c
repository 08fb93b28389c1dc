// SPDX-License-Identifier: MIT
/*
 * Logging to stderr. Under systemd, stderr is a journal stream
 * ($JOURNAL_STREAM), and a "<N>" prefix sets the message priority.
 *
 * The log settings are the one piece of process-wide state outside the
 * daemon context: every thread logs, and threading a context pointer into
 * each message would buy nothing.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static struct {
	_Atomic int level;
	_Atomic int journal;
	_Atomic int progress;	/* a progress line sits on the terminal */
	log_sink_fn sink;
	void *sink_arg;
} log_state = { .level = LOG_LEVEL_INFO };

static const char *const level_names[] = {
	[LOG_LEVEL_ERR] = "err",
	[LOG_LEVEL_WARNING] = "warning",
	[LOG_LEVEL_NOTICE] = "notice",
	[LOG_LEVEL_INFO] = "info",
	[LOG_LEVEL_DEBUG] = "debug",
};

void log_set_level(enum log_level level)
{
	atomic_store(&log_state.level, level);
}

enum log_level log_get_level(void)
{
	return atomic_load(&log_state.level);
}

void log_set_journal(int on)
{
	atomic_store(&log_state.journal, !!on);
}

void log_set_progress_line(int on)
{
	atomic_store(&log_state.progress, !!on);
}

void log_set_sink(log_sink_fn fn, void *arg)
{
	log_state.sink = fn;
	log_state.sink_arg = arg;
}

int log_level_from_string(const char *s, enum log_level *out)
{
	for (int l = LOG_LEVEL_ERR; l <= LOG_LEVEL_DEBUG; l++) {
		if (!strcmp(s, level_names[l])) {
			*out = l;
			return 0;
		}
	}
	/* the spellings people type from syslog habits */
	if (!strcmp(s, "error")) {
		*out = LOG_LEVEL_ERR;
		return 0;
	}
	if (!strcmp(s, "warn")) {
		*out = LOG_LEVEL_WARNING;
		return 0;
	}
	return -1;
}

const char *log_level_to_string(enum log_level level)
{
	if (level < LOG_LEVEL_ERR || level > LOG_LEVEL_DEBUG)
		return "?";
	return level_names[level];
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if ((int)level > atomic_load(&log_state.level))
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);

	if (log_state.sink) {
		log_state.sink(level, buf, log_state.sink_arg);
		return;
	}
	/* one fprintf per message: stdio locks the stream, lines don't mix */
	if (atomic_load(&log_state.journal))
		fprintf(stderr, "<%d>%s\n", level, buf);
	else
		fprintf(stderr, "%siou-offloadd: %s%s%s\n",
			/* over the progress line; it is drawn again below */
			atomic_load(&log_state.progress) ? "\r\033[K" : "",
			level <= LOG_LEVEL_WARNING ? level_names[level] : "",
			level <= LOG_LEVEL_WARNING ? ": " : "", buf);
}
