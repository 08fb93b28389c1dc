// SPDX-License-Identifier: MIT
/*
 * Where a pipeline resumes, and what it records as durable: the checkpoint
 * policy. A checkpoint names the end of the longest run of blocks from the
 * start that are all written and flushed; never a failed block or anything
 * past it, and after a failed flush never more than the last good one.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "pipeline_int.h"

static void idents(const struct file_slot *f, int n, struct file_ident *out)
{
	for (int i = 0; i < n; i++)
		out[i] = f[i].ident;
}

/* 1: nothing to do, 0: pr->plan.p.start is where to begin */
int ckpt_decide_resume(struct pipeline_run *pr, struct plan_params *pp)
{
	struct file_ident src[CONFIG_MAX_FILES], dst[CONFIG_MAX_FILES];
	struct checkpoint ck;
	enum resume_action act;
	char why[256];
	uint32_t bs;
	int ret;

	idents(pr->fs.src, pr->fs.nr_src, src);
	idents(pr->fs.dst, pr->fs.nr_dst, dst);
	ret = checkpoint_load(pr->env->state_dir, pr->cfg.name, &ck);
	if (ret == -EINVAL)
		log_warning("pipeline %s: checkpoint in %s is unreadable; ignoring it",
			    pr->cfg.name, pr->env->state_dir);
	act = checkpoint_decide(ret ? NULL : &ck, pipeline_config_fingerprint(&pr->cfg),
				(struct ckpt_files){ src, pr->cfg.sources, pr->fs.nr_src },
				(struct ckpt_files){ dst, pr->cfg.dests, pr->fs.nr_dst },
				pr->cfg.s.repeat, why, sizeof(why));
	if (act == RESUME_CONTINUE && ck.total != pp->length) {
		snprintf(why, sizeof(why), "checkpoint was for %" PRIu64 " bytes, now %" PRIu64
			 ": starting at 0", ck.total, pp->length);
		act = RESUME_FRESH;
	}
	/* the block sums go on only where the manifest is this layout's */
	if (act == RESUME_CONTINUE && pr->cfg.s.checksum != CHECKSUM_NONE &&
	    !sums_manifest_matches(pr, pp)) {
		snprintf(why, sizeof(why), "checksum = crc32c: no manifest of these blocks beside "
			 "the checkpoint: starting at 0");
		act = RESUME_FRESH;
	}
	/*
	 * A resume continues the copy as it was begun, its sums too, in the
	 * manifest's blocks: begun with them and resumed without (checksum =
	 * none now, a one-shot without --checksum), the manifest would vouch
	 * for part of the copy and verify take it for the whole.
	 */
	if (act == RESUME_CONTINUE && pr->cfg.s.checksum == CHECKSUM_NONE &&
	    (bs = sums_manifest_block_size(pr, pp))) {
		if (engine_drives_itself(pr))
			return pipeline_fail(pr, -EINVAL, "this copy was begun with checksums, which "
					     "the loop engine cannot take: resume it on the bpf or "
					     "uring engine, or remove its manifest %s/%s.sums to go "
					     "on without them", pr->env->state_dir, pr->cfg.name);
		pr->cfg.s.checksum = CHECKSUM_CRC32C;
		pr->cfg.s.block_size = pp->block_size = bs;
		log_notice("pipeline %s: this copy was begun with checksums: the resume sums "
			   "the rest of it too, for verify (in its blocks of %" PRIu32 " bytes)",
			   pr->cfg.name, bs);
	}
	if (act == RESUME_CONTINUE) {
		uint64_t at = ck.done - ck.done % pp->io_align;

		/* the sums are per block: resume on a block's start */
		if (pr->cfg.s.checksum != CHECKSUM_NONE)
			at -= at % pp->block_size;

		/*
		 * a destination cut short behind our back would leave a hole;
		 * one short only over the source's holes (a crash in one) lost
		 * nothing: the copy writes nothing there
		 */
		for (int d = 0; d < pr->fs.nr_dst && act == RESUME_CONTINUE; d++) {
			const struct file_slot *f = &pr->fs.dst[d];
			uint64_t end = pr->cfg.dest_offset + plan_dest_bytes_at(pp, d, at);

			if (f->is_bdev || f->size >= end)
				continue;
			if (sparse_src_hole(pr, f->size > pr->cfg.dest_offset ?
					    f->size - pr->cfg.dest_offset : 0, at)) {
				log_info("pipeline %s: destination %s ends at byte %" PRIu64 ", and the "
					 "source has only holes from there to the checkpoint: nothing "
					 "below it is missing", pr->cfg.name, f->path, f->size);
				continue;
			}
			snprintf(why, sizeof(why), "destination %s is shorter than the "
				 "checkpoint says: starting at 0", f->path);
			act = RESUME_FRESH;
		}
		if (act == RESUME_CONTINUE) {
			pp->start = at;
			pr->dur.resumed = true;
		}
	}
	if (act == RESUME_SKIP) {
		log_notice("pipeline %s: %s", pr->cfg.name, why);
		return 1;
	}
	if (act == RESUME_FRESH)
		pp->start = 0;
	log_notice("pipeline %s: %s", pr->cfg.name, why);
	return 0;
}

static void ckpt_fill(struct pipeline_run *pr, enum ckpt_state state, uint64_t done)
{
	struct checkpoint *c = &pr->dur.ckpt;

	c->fingerprint = pipeline_config_fingerprint(&pr->cfg);
	c->state = state;
	c->done = done;
	c->total = pr->plan.p.length;
	c->nr_sources = pr->fs.nr_src;
	c->nr_dests = pr->fs.nr_dst;
	idents(pr->fs.src, pr->fs.nr_src, c->src);
	for (int i = 0; i < pr->fs.nr_dst; i++) {
		c->dst[i] = pr->fs.dst[i].ident;
		/* writes may still land: who the file is, not what it holds */
		if (state == CKPT_RUNNING || (state != CKPT_FINISHED && !pr->dur.dests_settled))
			c->dst[i].size = c->dst[i].mtime_ns = c->dst[i].ctime_ns = 0;
	}
	c->updated = time(NULL);
}

/* progress is safe on disk, just not recorded: loud, not fatal */
static void ckpt_unrecorded(struct pipeline_run *pr, int err)
{
	log_warning("pipeline %s: cannot write checkpoint in %s: %s",
		    pr->cfg.name, pr->env->state_dir, strerror(-err));
	atomic_fetch_add(&pr->env->status->errors, 1);
}

static void ckpt_recorded(struct pipeline_run *pr, uint64_t done)
{
	pr->dur.durable = done;
	pr->dur.last_ns = clock_mono_ns();
	atomic_store(&pr->env->status->bytes_durable, done);
	log_debug("pipeline %s: checkpoint: durable up to byte %" PRIu64 " of %" PRIu64,
		  pr->cfg.name, done, pr->plan.p.length);
}

static int ckpt_write_locked(struct pipeline_run *pr, enum ckpt_state state, uint64_t done)
{
	int ret;

	ckpt_fill(pr, state, done);
	ret = checkpoint_save(pr->env->state_dir, pr->cfg.name, &pr->dur.ckpt);
	if (ret) {
		ckpt_unrecorded(pr, ret);
		return ret;
	}
	ckpt_recorded(pr, done);
	return 0;
}

int ckpt_write(struct pipeline_run *pr, enum ckpt_state state, uint64_t done)
{
	int ret;

	pthread_mutex_lock(&pr->dur.lock);
	ret = ckpt_write_locked(pr, state, done);
	pthread_mutex_unlock(&pr->dur.lock);
	return ret;
}

/* from an engine's own thread too: ckpt_write() holds the checkpoint lock */
int pipeline_checkpoint(struct pipeline_run *pr, enum ckpt_state state, uint64_t done)
{
	return ckpt_write(pr, state, done);
}

uint64_t ckpt_watermark_now(const struct pipeline_run *pr)
{
	uint64_t m;

	m = pr->next_block < pr->plan.nr_blocks ?
		plan_block_start(&pr->plan, pr->next_block) : pr->plan.p.length;
	for (int i = 0; i < pr->nr_chains; i++)
		if (pr->chains[i].busy && pr->chains[i].bp.logical_off < m)
			m = pr->chains[i].bp.logical_off;
	return m < pr->failed_off ? m : pr->failed_off;
}

/*
 * A checkpoint is a flush, then its record, both through the ring while the
 * chains move on; they overlap. The next flush starts when the last one
 * completes, not when its record does, and a record names the highest
 * watermark flushed when it starts. (Flush and record in turn, the writes
 * waited for three journal commits per checkpoint at the window's end.)
 *
 * The record is written as checkpoint_save() would, in two halves: prepare
 * (the tmp file's write and fsync; nothing for a record rewritten in place)
 * and commit (the rename over the checkpoint and the directory's fsync; in
 * place, the write and its fdatasync). A record that starts with its flush
 * prepares beside it (the tmp file is not the checkpoint until it is
 * renamed) and commits once both are done; one that starts after its flush
 * does both halves, linked. rec.inflight counts the four steps not yet
 * completed; the files are open exactly while it is not 0. 0, or -errno when
 * the record could not be started.
 */
enum { REC_TMP_WRITE, REC_TMP_FSYNC, REC_COMMIT, REC_COMMIT_FSYNC };

static void ckpt_record_prep_commit(struct pipeline_run *pr, struct io_uring_sqe *sqe[2])
{
	struct kv_pending *kv = &pr->dur.rec.kv;

	if (pr->dur.rec.in_place) {
		io_uring_prep_write(sqe[0], kv->fd, pr->dur.rec.buf, pr->dur.rec.len, 0);
		io_uring_prep_fsync(sqe[1], kv->fd, IORING_FSYNC_DATASYNC);
	} else {
		io_uring_prep_renameat(sqe[0], AT_FDCWD, kv->tmp, AT_FDCWD, kv->path, 0);
		io_uring_prep_fsync(sqe[1], kv->dir_fd, 0);
	}
	sqe[0]->flags |= IOSQE_IO_LINK;
	io_uring_sqe_set_data64(sqe[0], iou_ud(IOU_TAG_RECORD, 0, REC_COMMIT));
	io_uring_sqe_set_data64(sqe[1], iou_ud(IOU_TAG_RECORD, 0, REC_COMMIT_FSYNC));
	pr->dur.rec.committing = true;
}

static void ckpt_record_close(struct pipeline_run *pr, bool failed)
{
	if (pr->dur.rec.in_place) {
		close(pr->dur.rec.kv.fd);
		pr->dur.rec.kv.fd = -1;
	} else {
		kv_replace_close(&pr->dur.rec.kv, failed);
	}
}

void ckpt_record_drop(struct pipeline_run *pr)
{
	if (!pr->dur.rec.inflight)
		return;
	ckpt_record_close(pr, true);
	pr->dur.rec.inflight = 0;
}

static int ckpt_record_begin(struct pipeline_run *pr, uint64_t done, bool flushed)
{
	struct io_uring_sqe *sqe[4];
	char path[sizeof(pr->dur.rec.kv.path)];
	int fd, ret;

	if (io_uring_sq_space_left(&pr->ring.uring) < 4)
		return -EBUSY;
	ret = checkpoint_path(pr->env->state_dir, pr->cfg.name, path, sizeof(path));
	if (ret)
		return ret;
	pthread_mutex_lock(&pr->dur.lock);
	ckpt_fill(pr, CKPT_RUNNING, done);
	ret = checkpoint_format(&pr->dur.ckpt, pr->cfg.name, pr->dur.rec.buf, sizeof(pr->dur.rec.buf));
	pthread_mutex_unlock(&pr->dur.lock);
	if (ret < 0)
		return ret;
	pr->dur.rec.len = ret;
	fd = pr->dur.rec.len == CKPT_SECTOR ? checkpoint_open_in_place(path) : -ENOENT;
	pr->dur.rec.in_place = fd >= 0;
	pr->dur.rec.done = done;
	pr->dur.rec.committing = false;
	pr->dur.rec.failed = false;
	if (pr->dur.rec.in_place) {
		pr->dur.rec.kv.fd = fd;
		pr->dur.rec.inflight = 2;	/* nothing to prepare */
	} else {
		ret = kv_replace_open(&pr->dur.rec.kv, path, 0600);
		if (ret)
			return ret;
		sqe[0] = ring_get_sqe(&pr->ring);
		sqe[1] = ring_get_sqe(&pr->ring);
		io_uring_prep_write(sqe[0], pr->dur.rec.kv.fd, pr->dur.rec.buf, pr->dur.rec.len, 0);
		io_uring_prep_fsync(sqe[1], pr->dur.rec.kv.fd, 0);
		sqe[0]->flags |= IOSQE_IO_LINK;
		io_uring_sqe_set_data64(sqe[0], iou_ud(IOU_TAG_RECORD, 0, REC_TMP_WRITE));
		io_uring_sqe_set_data64(sqe[1], iou_ud(IOU_TAG_RECORD, 0, REC_TMP_FSYNC));
		if (flushed)
			sqe[1]->flags |= IOSQE_IO_LINK;
		pr->dur.rec.inflight = 4;
	}
	if (flushed) {
		sqe[2] = ring_get_sqe(&pr->ring);
		sqe[3] = ring_get_sqe(&pr->ring);
		ckpt_record_prep_commit(pr, &sqe[2]);
	}
	return 0;
}

static void ckpt_record_end(struct pipeline_run *pr)
{
	pr->dur.rec.inflight = 0;
	ckpt_record_close(pr, pr->dur.rec.failed);
	/* a checkpoint's cost: its flush and its record, until the window moves */
	if (pr->dur.pace.flush_ns) {
		uint64_t cost = clock_mono_ns() - pr->dur.pace.flush_ns;

		pr->dur.pace.cost_ns = pr->dur.pace.cost_ns ? (pr->dur.pace.cost_ns + cost) / 2 : cost;
		pr->dur.pace.flush_ns = 0;
	}
	/* recorded or not, the data is on disk: the writes may move on */
	pr->dur.synced = pr->dur.rec.done;
	if (!pr->dur.rec.failed) {
		pthread_mutex_lock(&pr->dur.lock);
		ckpt_recorded(pr, pr->dur.rec.done);
		pthread_mutex_unlock(&pr->dur.lock);
	}
}

/* prepared, and its flush is done: commit the record */
static void ckpt_record_commit(struct pipeline_run *pr)
{
	struct kv_pending *kv = &pr->dur.rec.kv;
	struct io_uring_sqe *sqe[2];

	if (io_uring_sq_space_left(&pr->ring.uring) < 2) {
		/* no room on the ring: the same two steps, here */
		int ret = pr->dur.rec.in_place ? checkpoint_rewrite(kv->fd, pr->dur.rec.buf, pr->dur.rec.len) :
			  rename(kv->tmp, kv->path) < 0 || fsync(kv->dir_fd) < 0 ? -errno : 0;

		if (ret) {
			pr->dur.rec.failed = true;
			ckpt_unrecorded(pr, ret);
		}
		ckpt_record_end(pr);
		return;
	}
	sqe[0] = ring_get_sqe(&pr->ring);
	sqe[1] = ring_get_sqe(&pr->ring);
	ckpt_record_prep_commit(pr, sqe);
}

/* all blocks completed: finish() flushes and records "finished" next */
static bool ckpt_all_done(const struct pipeline_run *pr, uint64_t w)
{
	return w >= pr->plan.p.length;
}

/*
 * Move the checkpoint on after a flush or record step completes: rename a
 * tmp file whose flush is done (or give it up after an error: the wind-down
 * records what is durable), or record what the last flush covered.
 */
static void ckpt_record_step(struct pipeline_run *pr)
{
	if (pr->dur.rec.inflight == 2 && !pr->dur.rec.committing) {
		if (pr->error && !pr->dur.fsyncs) {
			ckpt_record_drop(pr);
			return;
		}
		if (pr->error || pr->dur.flushed < pr->dur.rec.done)
			return;		/* its flush completes later */
		if (pr->dur.rec.failed)
			ckpt_record_end(pr);
		else
			ckpt_record_commit(pr);
		return;
	}
	if (pr->dur.rec.inflight || pr->error || pr->dur.flushed <= pr->dur.synced ||
	    pr->dur.flushed <= pr->dur.durable || ckpt_all_done(pr, ckpt_watermark_now(pr)))
		return;
	if (ckpt_record_begin(pr, pr->dur.flushed, true)) {
		ckpt_write(pr, CKPT_RUNNING, pr->dur.flushed);
		pr->dur.synced = pr->dur.flushed;
	}
}

/*
 * A flush starts half an interval past the last one: the writes may run
 * checkpoint_interval plus a queue depth ahead of the last checkpoint
 * recorded (driver.c), so the copy goes on through the other half while
 * flushes and records run. It is an fdatasync of the range written since
 * the last flush (IORING_OP_FSYNC takes a range; what lies below was
 * flushed before), so it waits for that range's writeback, started as it
 * completed, and not for the writes the chains went on with meanwhile. It
 * still reports any writeback error of the file. Once every block has
 * completed, finish() flushes the rest.
 */
/*
 * Is a flush due at watermark @w? Every CKPT_MAX_NS; before the timings are
 * known, half an interval past the last one; then paced by its cost: when the
 * room left in the writes' window (driver.c: checkpoint_interval plus a
 * queue depth past the last checkpoint) would be used up, at the rate the
 * copy runs, within about one and a half checkpoint times. Each flush then
 * covers nearly an interval and ends before the window does, so the copy
 * does not wait for it; where a flush costs much (a busy disk) the flushes
 * come as late as the window allows. The crash bound stays the window.
 */
static bool ckpt_due(const struct pipeline_run *pr, uint64_t w, uint64_t last)
{
	uint64_t interval = pr->cfg.s.checkpoint_interval;
	uint64_t base = pr->dur.synced > pr->dur.durable ? pr->dur.synced : pr->dur.durable;
	uint64_t end = base + interval + (uint64_t)pr->nr_chains * pr->plan.p.block_size;
	double lead;

	if (clock_mono_ns() - pr->dur.last_ns >= CKPT_MAX_NS || w - last >= interval)
		return true;
	if (!pr->dur.pace.cost_ns || pr->dur.pace.rate <= 0)
		return w - last >= interval / 2;
	lead = pr->dur.pace.rate * pr->dur.pace.cost_ns / 1e9 * 1.5;
	return w >= end || (double)(end - w) <= lead;
}

void ckpt_begin(struct pipeline_run *pr, uint64_t w, bool force)
{
	const struct plan_params *p = &pr->plan.p;
	uint64_t last = pr->dur.flushed > pr->dur.durable ? pr->dur.flushed : pr->dur.durable;
	uint64_t now;

	if (pr->dur.fsyncs || pr->error || w <= last || ckpt_all_done(pr, w))
		return;
	if (!force && !ckpt_due(pr, w, last))
		return;
	/* every destination's flush (and the sums'), or none: a checkpoint covers them all */
	if (io_uring_sq_space_left(&pr->ring.uring) <
	    (unsigned int)pr->fs.nr_dst + (pr->sums_fd >= 0))
		return;
	if (pr->sums_fd >= 0) {
		struct io_uring_sqe *sqe = ring_get_sqe(&pr->ring);

		io_uring_prep_fsync(sqe, pr->sums_fd, IORING_FSYNC_DATASYNC);
		io_uring_sqe_set_data64(sqe, iou_ud(IOU_TAG_FSYNC, 0, pr->fs.nr_dst));
		pr->dur.fsyncs++;
	}
	for (int d = 0; d < pr->fs.nr_dst; d++) {
		struct io_uring_sqe *sqe = ring_get_sqe(&pr->ring);
		uint64_t from = plan_dest_bytes_at(p, d, last);
		uint64_t to = plan_dest_bytes_at(p, d, w);

		io_uring_prep_fsync(sqe, pr->fs.nr_src + d, IORING_FSYNC_DATASYNC);
		/*
		 * The kernel syncs off to off + len, or the whole file when
		 * that sum is 0: len 0 past offset 0 would sync one byte. A
		 * range len cannot hold (or an empty one) takes the whole file.
		 */
		if (to > from && to - from <= UINT32_MAX) {
			sqe->off = pr->cfg.dest_offset + from;
			sqe->len = to - from;
		}
		sqe->flags |= IOSQE_FIXED_FILE;
		io_uring_sqe_set_data64(sqe, iou_ud(IOU_TAG_FSYNC, 0, d));
		pr->dur.fsyncs++;
	}
	log_debug("pipeline %s: flush of bytes %" PRIu64 " to %" PRIu64 " started%s",
		  pr->cfg.name, last, w, pr->dur.rec.inflight ? " beside a record" : "");
	pr->dur.watermark = w;
	now = pr->dur.flush_start_ns = clock_mono_ns();
	/* the copy's rate between flush starts, smoothed */
	if (pr->dur.pace.t_ns && now > pr->dur.pace.t_ns && w > pr->dur.pace.w) {
		double r = (w - pr->dur.pace.w) / ((now - pr->dur.pace.t_ns) / 1e9);

		pr->dur.pace.rate = pr->dur.pace.rate > 0 ? (pr->dur.pace.rate + r) / 2 : r;
	}
	pr->dur.pace.w = w;
	pr->dur.pace.t_ns = now;
	if (!pr->dur.pace.flush_ns)
		pr->dur.pace.flush_ns = now;
	/* no record in flight: this flush's record writes its tmp file beside it */
	if (!pr->dur.rec.inflight)
		ckpt_record_begin(pr, w, false);
}

/*
 * A run of holes moves the watermark with nothing written, so nothing to
 * flush but the record: a checkpoint per interval of holes would be
 * thousands of device flushes per TiB of them, and a crash in a hole costs
 * only the time to skip it again. So in a hole a checkpoint is due by time
 * alone (CKPT_MAX_NS, as for data), and the skipping (driver.c) hands the
 * ring loop back for it, and for the completions of whatever is in flight
 * (a block's moves the watermark, a checkpoint's records it): a kill -9 in
 * a long hole keeps all but its last seconds.
 */
bool ckpt_hole_due(const struct pipeline_run *pr)
{
	return !pr->dur.fsyncs && !pr->dur.rec.inflight &&
	       clock_mono_ns() - pr->dur.last_ns >= CKPT_MAX_NS;
}

bool ckpt_hole_yield(const struct pipeline_run *pr)
{
	return pr->inflight_chains || pr->dur.fsyncs || pr->dur.rec.inflight ||
	       ckpt_hole_due(pr);
}

void ckpt_handle_fsync_cqe(struct pipeline_run *pr, uint64_t data, int res)
{
	int d = iou_ud_op(data);

	if (res < 0) {
		pr->dur.sync_failed = true;
		pipeline_fail(pr, res, "fdatasync of %s %s failed: %s; the checkpoint "
			      "stays at %" PRIu64, d < pr->fs.nr_dst ? "destination" :
			      "the checksum manifest of", d < pr->fs.nr_dst ? pr->fs.dst[d].path :
			      pr->cfg.name, strerror(-res), pr->dur.durable);
	}
	if (--pr->dur.fsyncs)
		return;
	if (!pr->dur.sync_failed) {
		pr->dur.flushed = pr->dur.watermark;
		log_debug("pipeline %s: flush of %d destination(s) up to byte %" PRIu64
			  " took %.3f s", pr->cfg.name, pr->fs.nr_dst, pr->dur.watermark,
			  (clock_mono_ns() - pr->dur.flush_start_ns) / 1e9);
	}
	ckpt_record_step(pr);
}

void ckpt_handle_record_cqe(struct pipeline_run *pr, uint64_t data, int res)
{
	int op = iou_ud_op(data);
	bool write = op == REC_TMP_WRITE || (op == REC_COMMIT && pr->dur.rec.in_place);

	/* a short write cuts the link too; the steps after it end -ECANCELED */
	if (!pr->dur.rec.failed && (res < 0 || (write && res != pr->dur.rec.len))) {
		pr->dur.rec.failed = true;
		ckpt_unrecorded(pr, res < 0 ? res : -EIO);
	}
	if (--pr->dur.rec.inflight == 2) {
		ckpt_record_step(pr);
	} else if (!pr->dur.rec.inflight) {
		ckpt_record_end(pr);
		ckpt_record_step(pr);
	}
}

/*
 * Buffered destinations: start writeback of each range as it completes
 * (sync_file_range WRITE, which neither waits nor consumes a writeback
 * error: the checkpoint's fdatasync still reports it). The disk then works
 * beside the copy, and a checkpoint's flush waits only for the tail.
 */
void ckpt_start_writeback(struct pipeline_run *pr, uint64_t w)
{
	const struct plan_params *p = &pr->plan.p;

	if (pr->cfg.s.direct || pr->dur.wb_inflight || pr->error ||
	    w < pr->dur.wb_started + WB_KICK_BYTES)
		return;
	for (int d = 0; d < pr->fs.nr_dst; d++) {
		uint64_t from = plan_dest_bytes_at(p, d, pr->dur.wb_started);
		uint64_t to = plan_dest_bytes_at(p, d, w);
		struct io_uring_sqe *sqe;

		if (to <= from)
			continue;
		sqe = ring_get_sqe(&pr->ring);
		if (!sqe)
			break;
		io_uring_prep_sync_file_range(sqe, pr->fs.nr_src + d, to - from,
					      pr->cfg.dest_offset + from, SYNC_FILE_RANGE_WRITE);
		sqe->flags |= IOSQE_FIXED_FILE;
		io_uring_sqe_set_data64(sqe, iou_ud(IOU_TAG_WRITEBACK, 0, d));
		pr->dur.wb_inflight++;
	}
	pr->dur.wb_started = w;
}

void ckpt_handle_writeback_cqe(struct pipeline_run *pr, uint64_t data, int res)
{
	int d = iou_ud_op(data);

	pr->dur.wb_inflight--;
	if (res < 0)
		log_debug("pipeline %s: starting writeback of %s: %s (the checkpoint's "
			  "fdatasync decides)", pr->cfg.name,
			  d < pr->fs.nr_dst ? pr->fs.dst[d].path : "?", strerror(-res));
}

int ckpt_sync_dests(struct pipeline_run *pr, bool full)
{
	int ret = 0;

	if (pr->sums_fd >= 0 && fdatasync(pr->sums_fd) < 0) {
		ret = -errno;
		pr->dur.sync_failed = true;
		pipeline_fail(pr, ret, "fdatasync of the checksum manifest failed: %s",
			      strerror(-ret));
	}
	for (int d = 0; d < pr->fs.nr_dst; d++) {
		if ((full ? fsync(pr->fs.dst[d].fd) : fdatasync(pr->fs.dst[d].fd)) < 0 && !ret) {
			ret = -errno;
			pr->dur.sync_failed = true;
			pipeline_fail(pr, ret, "%s of destination %s failed: %s",
				      full ? "fsync" : "fdatasync", pr->fs.dst[d].path,
				      strerror(-ret));
		}
	}
	return ret;
}

/*
 * Stopped or failed: record what is durable, never more. Once an fsync has
 * failed, a later one proves nothing: the kernel reports a writeback error
 * to each open file once, and the pages it lost are clean by then. So after
 * a failed fsync the checkpoint stays where the last good one put it.
 * Every write has completed: flush, and record the destinations as they are
 * left (size, mtime, ctime), so that the next run sees a change made while
 * the pipeline was not running. 0, or -errno when the record was not written.
 */
int ckpt_wind_down(struct pipeline_run *pr, enum ckpt_state state)
{
	uint64_t w = ckpt_watermark_now(pr);

	if (!pr->dur.sync_failed)
		sparse_extend_dests(pr, w > pr->dur.durable ? w : pr->dur.durable);
	if (!pr->dur.sync_failed && ckpt_sync_dests(pr, false) == 0) {
		pr->dur.dests_settled = true;
		for (int d = 0; d < pr->fs.nr_dst && pr->dur.dests_settled; d++)
			if (pr->fs.dst[d].fd >= 0 && file_identify(&pr->fs.dst[d]))
				pr->dur.dests_settled = false;
		if (w > pr->dur.durable)
			return ckpt_write(pr, state, w);
	}
	return ckpt_write(pr, state, pr->dur.durable);
}
