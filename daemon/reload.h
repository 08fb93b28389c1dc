/* SPDX-License-Identifier: MIT */
#ifndef IOU_RELOAD_H
#define IOU_RELOAD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * A reload's answer. SIGHUP has none, so `systemctl reload` could not tell
 * a refused reload from one that took: the daemon writes RUNTIME_DIR/reload
 * after each reload (its pid, a sequence number, ok or failed and why), and
 * `iou-offloadd reload` (the unit's ExecReload) sends SIGHUP, waits for
 * that answer and exits with it.
 */
#define RELOAD_FILE_NAME "reload"

/* the daemon: reload number @seq of process @pid ended; @why is "" when all of it took */
int reload_answer_write(const char *runtime_dir, pid_t pid, uint64_t seq, const char *why);

/*
 * The client: check @config_path as this process sees it (under ExecReload,
 * as the service sees it), send SIGHUP to @pid (NULL: the pid in the status
 * file), wait for the answer. 0: reloaded; 1: refused in part or whole (the
 * reasons on stderr); 78: the configuration has errors (not sent).
 */
int reload_request(const char *config_path, const char *pid);
/* the daemon's pid as its status file in @runtime_dir names it; 0 if none (it may be gone) */
pid_t reload_daemon_pid(const char *runtime_dir);

#endif
