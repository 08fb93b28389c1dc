/* SPDX-License-Identifier: MIT */
#ifndef IOU_DAEMON_DIRS_H
#define IOU_DAEMON_DIRS_H

/*
 * state_dir and runtime_dir (@key names which, for the messages). Each
 * returns 0, or -errno with what is wrong, and the key that sets it, in @msg.
 */
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * made if missing (@mode), a directory, and a file can be made in it;
 * @oneshot: a one-shot command's, whose messages name --state-dir
 */
int daemon_dir_prepare(const char *key, const char *dir, mode_t mode, bool oneshot, char *msg,
		       size_t len);
/* --check-config --open: what daemon_dir_prepare() would find, changing nothing */
int daemon_dir_check(const char *key, const char *dir, char *msg, size_t len);
/*
 * held by this daemon alone while it runs (an OFD lock on a file in @dir,
 * released when the process ends, kill -9 too); -EBUSY names the holder.
 * @config: the file the daemon runs; NULL for a one-shot command's own
 * directory, which only the same command holds (said in its words)
 */
int daemon_dir_lock(const char *key, const char *dir, const char *config, int *fd_out,
		    char *msg, size_t len);

#endif
