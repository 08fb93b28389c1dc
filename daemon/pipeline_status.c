// SPDX-License-Identifier: MIT
/*
 * What a pipeline shares with the daemon's main thread (states, the error,
 * the note, the engine name), and pipeline_fail(): the first error of a run
 * is the one recorded and shown.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "pipeline_run.h"
#include "pipeline_status.h"

const char *pipeline_state_to_string(enum pipeline_state s)
{
	static const char *const names[] = {
		"pending", "running", "finished", "stopped", "failed", "retrying",
	};

	return (unsigned int)s < 6 ? names[s] : "?";
}

void pipeline_status_init(struct pipeline_status *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_init(&st->lock, NULL);
	snprintf(st->engine, sizeof(st->engine), "-");
}

void pipeline_status_set_error(struct pipeline_status *st, const char *msg)
{
	pthread_mutex_lock(&st->lock);
	snprintf(st->last_error, sizeof(st->last_error), "%s", msg);
	pthread_mutex_unlock(&st->lock);
}

void pipeline_status_get_error(struct pipeline_status *st, char *buf, size_t len)
{
	pthread_mutex_lock(&st->lock);
	snprintf(buf, len, "%s", st->last_error);
	pthread_mutex_unlock(&st->lock);
}

void pipeline_status_set_note(struct pipeline_status *st, const char *msg)
{
	pthread_mutex_lock(&st->lock);
	snprintf(st->note, sizeof(st->note), "%s", msg);
	pthread_mutex_unlock(&st->lock);
}

void pipeline_status_get_note(struct pipeline_status *st, char *buf, size_t len)
{
	pthread_mutex_lock(&st->lock);
	snprintf(buf, len, "%s", st->note);
	pthread_mutex_unlock(&st->lock);
}

void pipeline_status_set_engine(struct pipeline_status *st, const char *name)
{
	pthread_mutex_lock(&st->lock);
	snprintf(st->engine, sizeof(st->engine), "%s", name);
	pthread_mutex_unlock(&st->lock);
}

void pipeline_status_get_engine(struct pipeline_status *st, char *buf, size_t len)
{
	pthread_mutex_lock(&st->lock);
	snprintf(buf, len, "%s", st->engine);
	pthread_mutex_unlock(&st->lock);
}

void run_env_wake_main(const struct run_env *env)
{
	uint64_t one = 1;

	/* EAGAIN: the counter is full, so the main thread is awake anyway */
	if (env->main_fd >= 0 && write(env->main_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_debug("wake main thread: %s", strerror(errno));
}

bool run_env_stop_requested(const struct run_env *env)
{
	return env->stop && atomic_load(env->stop);
}

int pipeline_fail(struct pipeline_run *pr, int err, const char *fmt, ...)
{
	char body[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(body, sizeof(body), fmt, ap);
	va_end(ap);
	/* the first error is the one that matters; later ones are fallout */
	if (!pr->error) {
		pr->error = err;
		snprintf(pr->msg, sizeof(pr->msg), "%s", body);
		pipeline_status_set_error(pr->env->status, body);
	}
	atomic_fetch_add(&pr->env->status->errors, 1);
	log_err("pipeline %s: %s", pr->cfg.name, body);
	return err;
}
