/* SPDX-License-Identifier: MIT */
#ifndef IOU_LOG_H
#define IOU_LOG_H

#include <stdarg.h>

/* syslog priorities, so "<N>" prefixes mean the same to journald */
enum log_level {
	LOG_LEVEL_ERR = 3,
	LOG_LEVEL_WARNING = 4,
	LOG_LEVEL_NOTICE = 5,
	LOG_LEVEL_INFO = 6,
	LOG_LEVEL_DEBUG = 7,
};

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* "<N>" prefixes when stderr goes to the journal, level words otherwise */
void log_set_journal(int on);
/* capture hook for tests: when set, messages go here instead of stderr */
typedef void (*log_sink_fn)(enum log_level level, const char *msg, void *arg);
void log_set_sink(log_sink_fn fn, void *arg);
/* a progress line is on the terminal: messages clear it before they print */
void log_set_progress_line(int on);

int log_level_from_string(const char *s, enum log_level *out);
const char *log_level_to_string(enum log_level level);

void log_msg(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_err(...)	 log_msg(LOG_LEVEL_ERR, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_LEVEL_WARNING, __VA_ARGS__)
#define log_notice(...)	 log_msg(LOG_LEVEL_NOTICE, __VA_ARGS__)
#define log_info(...)	 log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...)	 log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
