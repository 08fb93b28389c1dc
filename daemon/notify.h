/* SPDX-License-Identifier: MIT */
#ifndef IOU_NOTIFY_H
#define IOU_NOTIFY_H

#include <stdint.h>

/* sd_notify(3) wrappers; all are no-ops outside systemd ($NOTIFY_SOCKET unset) */
void notify_ready(void);
void notify_reloading(void);
void notify_stopping(void);
void notify_status(const char *status);
void notify_watchdog(void);
/* WatchdogSec= in microseconds, 0 when the watchdog is off */
uint64_t notify_watchdog_usec(void);

#endif
