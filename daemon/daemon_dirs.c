// SPDX-License-Identifier: MIT
/*
 * The daemon's own directories, state_dir and runtime_dir: made, proven
 * writable before a byte is copied (a checkpoint that cannot be written
 * leaves nothing to resume from), and held by one daemon at a time (two
 * daemons on one state_dir overwrite each other's checkpoints).
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon_dirs.h"

#define LOCK_NAME	"iou-offloadd.lock"

static int mkdir_p(const char *path, mode_t mode)
{
	char buf[4096];
	size_t len = strlen(path);

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* can a file be made in @dir? Tried for real: root passes every mode check */
static int probe_writable(const char *dir)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/.iou-probe-XXXXXX", dir);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	close(fd);
	unlink(path);
	return 0;
}

/*
 * what sets @key's directory: a one-shot command has no [daemon] section,
 * its --state-dir sets both
 */
static const char *set_by(const char *key, bool oneshot, char *buf, size_t len)
{
	if (oneshot)
		return "give another with --state-dir=DIR";
	snprintf(buf, len, "set %s in [daemon]", key);
	return buf;
}

static int usable(const char *key, const char *dir, bool oneshot, char *msg, size_t len)
{
	char how[64];
	struct stat st;
	int ret;

	if (stat(dir, &st) < 0) {
		ret = -errno;
		snprintf(msg, len, "%s %s: %s (%s)", key, dir, strerror(-ret),
			 set_by(key, oneshot, how, sizeof(how)));
		return ret;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(msg, len, "%s %s is not a directory (%s)", key, dir,
			 set_by(key, oneshot, how, sizeof(how)));
		return -ENOTDIR;
	}
	ret = probe_writable(dir);
	if (ret)
		snprintf(msg, len, "%s %s cannot hold the daemon's files: %s (%s, or run as a "
			 "user who can write there)", key, dir, strerror(-ret),
			 set_by(key, oneshot, how, sizeof(how)));
	return ret;
}

int daemon_dir_prepare(const char *key, const char *dir, mode_t mode, bool oneshot, char *msg,
		       size_t len)
{
	int ret = mkdir_p(dir, mode);
	char how[64];

	if (ret && ret != -ENOTDIR && ret != -EEXIST) {
		snprintf(msg, len, "cannot create %s %s: %s (%s, or run as a user who can write "
			 "there)", key, dir, strerror(-ret), set_by(key, oneshot, how, sizeof(how)));
		return ret;
	}
	return usable(key, dir, oneshot, msg, len);
}

int daemon_dir_check(const char *key, const char *dir, char *msg, size_t len)
{
	char *up = strdup(dir), *slash;
	struct stat st;
	int ret = 0;

	if (!up)
		return -ENOMEM;
	if (stat(dir, &st) == 0 || errno != ENOENT) {
		free(up);
		return usable(key, dir, false, msg, len);
	}
	/* not there yet: the start makes it in the nearest directory that is */
	while ((slash = strrchr(up, '/')) && slash != up) {
		*slash = '\0';
		if (stat(up, &st) == 0)
			break;
	}
	if (slash == up)
		strcpy(up, "/");
	if (stat(up, &st) < 0 || !S_ISDIR(st.st_mode) || access(up, W_OK | X_OK) < 0) {
		ret = S_ISDIR(st.st_mode) ? -errno : -ENOTDIR;
		snprintf(msg, len, "cannot create %s %s: %s %s (set %s in [daemon])", key, dir, up,
			 ret == -ENOTDIR ? "is not a directory" : strerror(-ret), key);
	}
	free(up);
	return ret;
}

int daemon_dir_lock(const char *key, const char *dir, const char *config, int *fd_out,
		    char *msg, size_t len)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char path[4200], owner[512] = "";
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, LOCK_NAME);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		snprintf(msg, len, "cannot open %s: %s", path, strerror(errno));
		return -errno;
	}
	if (fcntl(fd, F_OFD_SETLK, &fl) < 0) {
		int err = errno;

		n = pread(fd, owner, sizeof(owner) - 1, 0);
		owner[n > 0 ? n : 0] = '\0';
		owner[strcspn(owner, "\n")] = '\0';
		close(fd);
		if (err != EAGAIN && err != EACCES) {
			snprintf(msg, len, "cannot lock %s: %s", path, strerror(err));
			return -err;
		}
		if (!config)	/* a one-shot's own directory: only the same command holds it */
			snprintf(msg, len, "the same command is already running on these files "
				 "(%s): wait for it to end, or stop it (SIGTERM) and run the command "
				 "again, which resumes it", owner[0] ? owner : "pid unknown");
		else
			snprintf(msg, len, "%s %s is in use by another iou-offloadd (%s): give "
				 "each daemon its own %s", key, dir, owner[0] ? owner : "pid unknown",
				 key);
		return -EBUSY;
	}
	/* who holds it, for the message above: OFD locks report no pid */
	n = config ? snprintf(owner, sizeof(owner), "pid %d, config %s\n", (int)getpid(), config) :
		     snprintf(owner, sizeof(owner), "pid %d\n", (int)getpid());
	if (ftruncate(fd, 0) == 0)
		n = pwrite(fd, owner, n, 0);	/* the lock holds without the note */
	*fd_out = fd;
	return 0;
}
