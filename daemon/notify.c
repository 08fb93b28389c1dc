// SPDX-License-Identifier: MIT
/*
 * systemd integration: Type=notify readiness, STATUS= lines, the
 * watchdog. READY=1 is sent only after every pipeline's ring, buffers and
 * BPF ops are set up (or have failed and said why).
 */
#include <systemd/sd-daemon.h>

#include "log.h"
#include "notify.h"

static void notify(const char *msg)
{
	int ret = sd_notify(0, msg);

	if (ret < 0)
		log_debug("sd_notify(%s) failed: %d", msg, ret);
}

void notify_ready(void)
{
	notify("READY=1");
}

void notify_reloading(void)
{
	notify("RELOADING=1");
}

void notify_stopping(void)
{
	notify("STOPPING=1");
}

void notify_status(const char *status)
{
	int ret = sd_notifyf(0, "STATUS=%s", status);

	if (ret < 0)
		log_debug("sd_notify(STATUS) failed: %d", ret);
}

void notify_watchdog(void)
{
	notify("WATCHDOG=1");
}

uint64_t notify_watchdog_usec(void)
{
	uint64_t usec = 0;

	/* unset_environment = 0: the value is read again after a reload */
	if (sd_watchdog_enabled(0, &usec) <= 0)
		return 0;
	return usec;
}
