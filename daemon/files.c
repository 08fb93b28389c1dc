// SPDX-License-Identifier: MIT
/*
 * Sources and destinations: open them, find out what they are (regular
 * file or block device, size, O_DIRECT alignment, identity), and check
 * everything that can be checked before the first byte moves.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <libgen.h>
#include <stdlib.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "claims.h"
#include "files.h"
#include "log.h"

/* files.h */
int files_fail(struct file_set *fs, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fs->msg, sizeof(fs->msg), fmt, ap);
	va_end(ap);
	return err;
}

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

int file_identify(struct file_slot *f)
{
	struct stat st;

	if (fstat(f->fd, &st) < 0)
		return -errno;
	if (S_ISBLK(st.st_mode)) {
		uint64_t bytes;

		if (ioctl(f->fd, BLKGETSIZE64, &bytes) < 0)
			return -errno;
		f->is_bdev = true;
		f->size = bytes;
		/* the device node's inode changes across boots; the device does not */
		f->ident = (struct file_ident){ .dev = 0, .ino = st.st_rdev, .size = bytes };
		return 0;
	}
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	f->is_bdev = false;
	f->size = st.st_size;
	f->ident = (struct file_ident){
		.dev = st.st_dev, .ino = st.st_ino, .size = st.st_size,
		.mtime_ns = ts_ns(&st.st_mtim), .ctime_ns = ts_ns(&st.st_ctim),
	};
	return 0;
}

/* what O_DIRECT needs here: statx() knows for most file systems and devices */
static uint32_t dio_alignment(const struct file_slot *f)
{
	struct statx stx;
	uint32_t a = 0;
	int lbs;

#ifdef STATX_DIOALIGN
	if (!statx(f->fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) &&
	    (stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align) {
		a = stx.stx_dio_offset_align;
		if (stx.stx_dio_mem_align > a)
			a = stx.stx_dio_mem_align;
	}
#else
	(void)stx;
#endif
	if (!a && f->is_bdev && !ioctl(f->fd, BLKSSZGET, &lbs) && lbs > 0)
		a = lbs;
	/* unknown: the page size is what every file system accepts */
	return a ? a : 4096;
}

static int dest_dir_writable(const char *path)
{
	char *copy = strdup(path);
	int ret;

	if (!copy)
		return -ENOMEM;
	ret = access(dirname(copy), W_OK | X_OK) ? -errno : 0;
	free(copy);
	return ret;
}

/* file systems whose files have no size before they are read (procfs, sysfs...) */
static const char *pseudo_fs(int fd)
{
	static const struct { unsigned long magic; const char *name; } fs[] = {
		{ 0x9fa0, "procfs" }, { 0x62656572, "sysfs" }, { 0x64626720, "debugfs" },
		{ 0x74726163, "tracefs" }, { 0x63677270, "cgroup2" }, { 0x27e0eb, "cgroup" },
		{ 0xcafe4a11, "bpffs" }, { 0xf97cff8c, "selinuxfs" }, { 0x73636673, "securityfs" },
	};
	struct statfs sfs;

	if (fstatfs(fd, &sfs) < 0)
		return NULL;
	for (size_t i = 0; i < sizeof(fs) / sizeof(fs[0]); i++)
		if ((unsigned long)sfs.f_type == fs[i].magic)
			return fs[i].name;
	return NULL;
}

static const char *special_kind(mode_t m)
{
	return S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" :
	       S_ISCHR(m) ? "a character device" : S_ISDIR(m) ? "a directory" : NULL;
}

/*
 * What is there, before it is opened: opening a FIFO blocks until the other
 * end comes (no SIGTERM would end the daemon then), and a character device
 * may act on an open. A dangling symbolic link is named as one, not as a
 * file that "exists" when it is created.
 */
static int check_kind(struct file_set *fs, const char *path, bool dest)
{
	const char *what = dest ? "destination" : "source";
	const char *kind;
	struct stat st;
	char target[256];
	ssize_t n;

	if (stat(path, &st) == 0) {
		kind = special_kind(st.st_mode);
		if (kind)
			return files_fail(fs, -EINVAL, "%s %s is %s: only regular files and "
					     "block devices are copied", what, path, kind);
		return 0;
	}
	if (errno == ENOENT && (n = readlink(path, target, sizeof(target) - 1)) >= 0) {
		target[n] = '\0';
		return files_fail(fs, -ENOENT, "%s %s is a dangling symbolic link (to %s): "
				     "make its target, or remove the link", what, path, target);
	}
	return 0;	/* open() says what is wrong */
}

static int open_one(struct file_set *fs, struct file_slot *f, const char *path,
		    bool dest)
{
	const struct pipeline_settings *s = &fs->cfg->s;
	/* O_NONBLOCK: a FIFO put in place after the check must not block the open */
	int flags = O_CLOEXEC | O_NONBLOCK | (s->direct ? O_DIRECT : 0), ret;

	f->path = path;
	f->fd = -1;
	f->missing = f->created = false;
	ret = check_kind(fs, path, dest);
	if (ret)
		return ret;
	flags |= dest ? O_WRONLY : O_RDONLY;
	f->fd = open(path, flags);
	/* io_uring returns -EAGAIN for an O_NONBLOCK file instead of waiting */
	if (f->fd >= 0 && fcntl(f->fd, F_SETFL, fcntl(f->fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		ret = -errno;
		close(f->fd);
		f->fd = -1;
		return files_fail(fs, ret, "cannot open %s %s: %s",
				     dest ? "destination" : "source", path, strerror(-ret));
	}
	if (f->fd < 0) {
		ret = -errno;
		if (dest && ret == -ENOENT && s->create) {
			/* created after the checks, so a refused pipeline leaves nothing */
			ret = dest_dir_writable(path);
			if (ret)
				return files_fail(fs, ret, "cannot create destination %s: its "
						     "directory %s", path, ret == -ENOENT ?
						     "does not exist" : "is not writable");
			f->missing = true;
			f->size = 0;
			f->ident = (struct file_ident){ 0 };
			f->dio_align = s->direct ? 512 : 1;
			return 0;
		}
		if (dest && ret == -ENOENT && !s->create)
			return files_fail(fs, ret, "destination %s does not exist and create = no",
					     path);
		if (ret == -EINVAL && s->direct)
			return files_fail(fs, ret, "%s %s: direct = yes, but O_DIRECT is not "
					     "supported there", dest ? "destination" : "source", path);
		return files_fail(fs, ret, "cannot open %s %s: %s",
				     dest ? "destination" : "source", path, strerror(-ret));
	}
	ret = file_identify(f);
	if (ret == -EINVAL)
		return files_fail(fs, ret, "%s %s is neither a regular file nor a block device",
				     dest ? "destination" : "source", path);
	if (!ret && !dest && !f->is_bdev && !f->size && pseudo_fs(f->fd))
		return files_fail(fs, -EINVAL, "source %s is on %s, whose files say 0 bytes "
				     "until they are read: the daemon copies the size stat() "
				     "gives, so copy it with cp", path, pseudo_fs(f->fd));
	if (ret)
		return files_fail(fs, ret, "cannot stat %s: %s", path, strerror(-ret));
	f->dio_align = s->direct ? dio_alignment(f) : 1;
	if (s->direct)
		file_queue_limits(f);
	return 0;
}

static bool same_file(const struct file_slot *a, const struct file_slot *b)
{
	if (a->fd < 0 || b->fd < 0)
		return false;	/* not created yet: the config compared the paths */
	return a->ident.dev == b->ident.dev && a->ident.ino == b->ident.ino;
}

void files_close(struct file_set *fs)
{
	for (int i = 0; i < fs->nr_src; i++)
		if (fs->src[i].fd >= 0)
			close(fs->src[i].fd);
	for (int i = 0; i < fs->nr_dst; i++)
		if (fs->dst[i].fd >= 0)
			close(fs->dst[i].fd);
	fs->nr_src = fs->nr_dst = 0;
}

/*
 * A new open of a file whose page cache failed writeback earlier, unseen
 * (say the last close of a block device flushed it into an EIO), is told
 * of that error by its first fsync: errseq_sample() hands unseen errors to
 * new openers. It is about writes no checkpoint ever vouched for: those
 * below the checkpoint were flushed by an fdatasync that succeeded, those
 * above it are written again. So flush once here and take the old error
 * as a warning, or the first checkpoint flush would fail the pipeline for
 * a fault already cleared. A fault still there fails the new writes.
 */
static void files_consume_old_wb_errors(struct file_set *fs)
{
	for (int i = 0; i < fs->nr_dst; i++) {
		if (fs->dst[i].fd < 0)
			continue;
		/* only writeback errors; the checkpoint flushes report the rest */
		if (fdatasync(fs->dst[i].fd) == 0 || (errno != EIO && errno != ENOSPC))
			continue;
		log_warning("pipeline %s: destination %s: an earlier writeback error (%s) "
			    "was pending when it was opened; what it lost lies past the "
			    "checkpoint and is written again", fs->cfg->name,
			    fs->dst[i].path, strerror(errno));
	}
}

/*
 * Open file description locks (per open, so they also part two pipelines
 * of one daemon): a writer excludes every other user of its bytes, so two
 * pipelines, or two daemons, never write one file or read what another
 * writes. Regular files are locked whole, block devices by range.
 */
#define LOCK_WAIT_MS	3000
#define LOCK_POLL_MS	20

static int lock_claim(struct file_set *fs, struct file_slot *f, bool dest, int i)
{
	const struct pipeline_config *pc = fs->cfg;
	uint64_t len = claim_len(pc, dest, i), start = dest ? pc->dest_offset : pc->offset;
	struct flock fl = {
		.l_type = dest ? F_WRLCK : F_RDLCK,
		.l_whence = SEEK_SET,
	};
	int ret, waited = 0;

	if (f->is_bdev) {
		if (!len)
			return 0;	/* an empty range touches nothing; l_len 0 is "to the end" */
		fl.l_start = start;
		fl.l_len = len == UINT64_MAX || len > INT64_MAX - start ? 0 : len;
	}
	/*
	 * A daemon killed a moment ago still holds its locks: its ring keeps the
	 * registered files open until the kernel's ring teardown has run
	 */
	while ((ret = fcntl(f->fd, F_OFD_SETLK, &fl)) < 0 &&
	       (errno == EAGAIN || errno == EACCES) && waited < LOCK_WAIT_MS) {
		/* SIGTERM ends the wait: a stop never waits for someone else's lock */
		if (fs->stop && atomic_load(fs->stop))
			return files_fail(fs, -EINTR, "stopped while waiting for the lock on %s",
					     f->path);
		usleep(LOCK_POLL_MS * 1000);
		waited += LOCK_POLL_MS;
	}
	if (!ret)
		return 0;
	if (errno == EAGAIN || errno == EACCES)
		return files_fail(fs, -EBUSY, "%s %s is in use: another pipeline or process "
				     "%s it (an open file description lock is held on %s)",
				     dest ? "destination" : "source", f->path,
				     dest ? "reads or writes" : "writes",
				     f->is_bdev ? "the same byte range" : "the file");
	/* file systems without locks: the config checks are all there is */
	log_debug("pipeline %s: cannot lock %s: %s", pc->name, f->path, strerror(errno));
	return 0;
}

static bool same_inode(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* is @st one of the files in directory @dir (a hard link to it, say)? */
static bool is_entry_of(const char *dir, const struct stat *st)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat es;
	bool found = false;

	if (!d)
		return false;
	while (!found && (e = readdir(d)))
		found = fstatat(dirfd(d), e->d_name, &es, AT_SYMLINK_NOFOLLOW) == 0 &&
			S_ISREG(es.st_mode) && same_inode(&es, st);
	closedir(d);
	return found;
}

/* is the directory that holds @path (through any links) @dir or below it? */
static bool is_inside(const char *path, const struct stat *dir)
{
	char *copy = strdup(path), *real;
	struct stat st;
	bool inside = false;

	if (!copy)
		return false;
	real = realpath(dirname(copy), NULL);
	free(copy);
	if (!real)
		return false;
	for (char *end; !inside; *end = '\0') {
		inside = stat(real[0] ? real : "/", &st) == 0 && same_inode(&st, dir);
		end = strrchr(real, '/');
		if (!end || (end == real && !real[1]))
			break;
	}
	free(real);
	return inside;
}

void files_private_why(char *msg, size_t len, bool dest, const char *path, int k,
		       const char *dir)
{
	snprintf(msg, len, "%s %s is in %s %s, the daemon's own files (checkpoints, device "
		 "ids, status): choose a path outside it", dest ? "destination" : "source", path,
		 k ? "runtime_dir" : "state_dir", dir);
}

int files_private_dir(const char *const dirs[2], const char *path, int fd, bool is_bdev)
{
	struct stat dir, st;

	for (int k = 0; k < 2; k++) {
		if (!dirs[k] || stat(dirs[k], &dir) < 0 || !S_ISDIR(dir.st_mode))
			continue;
		if (is_inside(path, &dir))
			return k;
		if (!is_bdev && (fd >= 0 ? fstat(fd, &st) : stat(path, &st)) == 0 &&
		    S_ISREG(st.st_mode) && is_entry_of(dirs[k], &st))
			return k;
	}
	return -1;
}

/*
 * The daemon's own files (checkpoints, device ids, the status file) are
 * never data: a copy onto a checkpoint would report success and hold the
 * checkpoint. By identity, so no other path to them gets through.
 */
static int check_private(struct file_set *fs, const struct file_slot *f, bool dest)
{
	int k = files_private_dir(fs->private_dirs, f->path, f->fd, f->is_bdev);

	if (k < 0)
		return 0;
	files_private_why(fs->msg, sizeof(fs->msg), dest, f->path, k, fs->private_dirs[k]);
	return -EINVAL;
}

int files_open(struct file_set *fs)
{
	const struct pipeline_config *pc = fs->cfg;
	int ret;

	for (int i = 0; i < pc->nr_sources; i++) {
		fs->nr_src = i + 1;
		ret = open_one(fs, &fs->src[i], pc->sources[i], false);
		if (ret)
			return ret;
	}
	for (int i = 0; i < pc->nr_dests; i++) {
		fs->nr_dst = i + 1;
		ret = open_one(fs, &fs->dst[i], pc->dests[i], true);
		if (ret)
			return ret;
	}
	for (int i = 0; i < fs->nr_src; i++) {
		ret = check_private(fs, &fs->src[i], false);
		if (ret)
			return ret;
	}
	for (int i = 0; i < fs->nr_dst; i++) {
		ret = check_private(fs, &fs->dst[i], true);
		if (ret)
			return ret;
	}
	/* paths may differ and still name one file (links, /dev aliases) */
	for (int i = 0; i < fs->nr_dst; i++) {
		for (int j = 0; j < fs->nr_src; j++)
			if (same_file(&fs->dst[i], &fs->src[j]))
				return files_fail(fs, -EINVAL,
						     "destination %s is the same file as source %s",
						     fs->dst[i].path, fs->src[j].path);
		for (int j = 0; j < i; j++)
			if (same_file(&fs->dst[i], &fs->dst[j]))
				return files_fail(fs, -EINVAL,
						     "destinations %s and %s are the same file",
						     fs->dst[j].path, fs->dst[i].path);
	}
	for (int i = 0; i < fs->nr_src; i++) {
		ret = lock_claim(fs, &fs->src[i], false, i);
		if (ret)
			return ret;
	}
	for (int i = 0; i < fs->nr_dst; i++) {
		if (fs->dst[i].missing)
			continue;
		ret = lock_claim(fs, &fs->dst[i], true, i);
		if (ret)
			return ret;
	}
	/* a check must not take the warning from the run that follows it */
	if (!fs->check_only)
		files_consume_old_wb_errors(fs);
	for (int i = 0; i < fs->nr_src; i++)
		if (pc->offset > fs->src[i].size)
			return files_fail(fs, -EINVAL,
					     "offset %" PRIu64 " is beyond the end of source %s "
					     "(%" PRIu64 " bytes)",
					     pc->offset, fs->src[i].path, fs->src[i].size);
	return 0;
}

uint32_t files_io_align(const struct file_set *fs)
{
	uint32_t a = 1;

	for (int i = 0; i < fs->nr_src; i++)
		if (fs->src[i].dio_align > a)
			a = fs->src[i].dio_align;
	for (int i = 0; i < fs->nr_dst; i++)
		if (fs->dst[i].dio_align > a)
			a = fs->dst[i].dio_align;
	return a;
}

/*
 * a finding of files_check_plan(): the first is its error (fs->msg), the
 * others wait in fs->more, so --check-config --open names every one
 */
__attribute__((format(printf, 3, 4)))
static void plan_finding(struct file_set *fs, int *ret, const char *fmt, ...)
{
	size_t n = strlen(fs->more);
	char m[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	if (!*ret) {
		snprintf(fs->msg, sizeof(fs->msg), "%s", m);
		*ret = -EINVAL;
	} else if (n + 1 < sizeof(fs->more)) {
		snprintf(fs->more + n, sizeof(fs->more) - n, "%s%s", n ? "\n" : "", m);
	}
}

/* after the plan exists: sizes and O_DIRECT alignment, all up front */
int files_check_plan(struct file_set *fs, const struct plan *pl)
{
	const struct pipeline_config *pc = fs->cfg;
	const struct plan_params *p = &pl->p;
	uint32_t a = p->io_align;
	bool striped = p->transform == TRANSFORM_STRIPE ||
		       (p->transform == TRANSFORM_GATHER && p->gather == GATHER_DESTRIPE);
	int ret = 0;

	fs->more[0] = '\0';
	for (int d = 0; d < fs->nr_dst; d++) {
		const struct file_slot *f = &fs->dst[d];
		uint64_t end = pc->dest_offset + plan_dest_bytes(pl, d);

		if (f->is_bdev && end > f->size)
			return files_fail(fs, -ENOSPC,
					     "destination %s is %" PRIu64 " bytes, but the pipeline "
					     "writes up to byte %" PRIu64,
					     f->path, f->size, end);
	}
	if (a <= 1)
		return 0;

	/* O_DIRECT: every offset and length on the device must be aligned; each said */
	if (pc->offset % a)
		plan_finding(fs, &ret, "direct = yes: offset %" PRIu64 " is not a multiple of "
			     "the O_DIRECT alignment %u", pc->offset, a);
	if (pc->dest_offset % a)
		plan_finding(fs, &ret, "direct = yes: dest_offset %" PRIu64 " is not a multiple "
			     "of the O_DIRECT alignment %u", pc->dest_offset, a);
	if (p->block_size % a)
		plan_finding(fs, &ret, "direct = yes: block_size %u is not a multiple of the "
			     "O_DIRECT alignment %u", p->block_size, a);
	if (striped && p->stripe_unit % a)
		plan_finding(fs, &ret, "direct = yes: stripe_unit %u is not a multiple of the "
			     "O_DIRECT alignment %u", p->stripe_unit, a);
	if (p->transform == TRANSFORM_GATHER && p->gather == GATHER_CONCAT) {
		for (int s = 0; s + 1 < fs->nr_src; s++)
			if (plan_src_bytes(p, s) % a && plan_src_bytes(p, s + 1))
				plan_finding(fs, &ret, "direct = yes: source %s contributes %" PRIu64
					     " bytes, not a multiple of the O_DIRECT alignment %u; "
					     "only the last source may end unaligned",
					     fs->src[s].path, plan_src_bytes(p, s), a);
	}
	/* an unaligned end is written padded, then cut back: files only */
	for (int d = 0; d < fs->nr_dst; d++) {
		const struct file_slot *f = &fs->dst[d];

		if (!(plan_dest_bytes(pl, d) % a))
			continue;
		if (f->is_bdev)
			plan_finding(fs, &ret, "direct = yes: destination %s is a block device and "
				     "would end at an unaligned byte; use a length that is a "
				     "multiple of %u", f->path, a);
		else if (!pc->s.truncate)
			plan_finding(fs, &ret, "direct = yes: destination %s would end at an "
				     "unaligned byte; that needs truncate = yes (the padded tail is "
				     "cut back) or a length that is a multiple of %u", f->path, a);
	}
	return ret;
}

int files_create_missing(struct file_set *fs)
{
	const struct pipeline_settings *s = &fs->cfg->s;
	int ret;

	for (int d = 0; d < fs->nr_dst; d++) {
		struct file_slot *f = &fs->dst[d];

		if (!f->missing)
			continue;
		f->fd = open(f->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
			     (s->direct ? O_DIRECT : 0), 0644);
		if (f->fd < 0) {
			ret = -errno;
			if (ret == -EINVAL && s->direct)
				return files_fail(fs, ret, "destination %s: direct = yes, but "
						     "O_DIRECT is not supported there", f->path);
			return files_fail(fs, ret, "cannot create destination %s: %s", f->path,
					     strerror(-ret));
		}
		f->missing = false;
		f->created = true;
		ret = file_identify(f);
		if (ret)
			return files_fail(fs, ret, "cannot stat %s: %s", f->path,
					     strerror(-ret));
		if (s->direct)
			f->dio_align = dio_alignment(f);
		ret = lock_claim(fs, f, true, d);
		if (ret)
			return ret;
	}
	return 0;
}

void files_remove_created(struct file_set *fs)
{
	for (int d = 0; d < fs->nr_dst; d++) {
		struct file_slot *f = &fs->dst[d];
		struct stat st;

		/* nothing is written during setup; a file with data is not ours to drop */
		if (!f->created || fstat(f->fd, &st) < 0 || st.st_size)
			continue;
		if (unlink(f->path) < 0)
			log_warning("pipeline %s: cannot remove %s, created for a run that did "
				    "not start: %s", fs->cfg->name, f->path, strerror(errno));
		f->created = false;
	}
}

/* what was true at open must still be true at the end */
int files_check_unchanged(struct file_set *fs)
{
	for (int i = 0; i < fs->nr_src; i++) {
		struct file_slot now = fs->src[i];
		int ret = file_identify(&now);

		if (ret)
			return files_fail(fs, ret, "cannot stat source %s: %s",
					     fs->src[i].path, strerror(-ret));
		if (now.ident.size != fs->src[i].ident.size ||
		    now.ident.mtime_ns != fs->src[i].ident.mtime_ns)
			return now.ident.size != fs->src[i].ident.size ?
			       files_fail(fs, -ESTALE, "source %s changed while it was being "
					  "copied (size %" PRIu64 " -> %" PRIu64 "); the "
					  "destination is not a consistent copy", fs->src[i].path,
					  fs->src[i].ident.size, now.ident.size) :
			       files_fail(fs, -ESTALE, "source %s changed while it was being "
					  "copied (written to: its mtime moved, same size); the "
					  "destination is not a consistent copy", fs->src[i].path);
	}
	return 0;
}
