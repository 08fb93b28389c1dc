// SPDX-License-Identifier: MIT
/*
 * A mirror's stale members, recorded, and their resync (ublk_mirror.h).
 *
 * The record is a key=value file written whole and fsynced (kv_replace),
 * only when a member's state changes and every 32 MiB of a resync: a
 * member that failed is recorded stale before the queue that saw the
 * failure completes the write, so no acknowledged write exists that a
 * restarted daemon could read back stale from it. The last in-sync member
 * is never recorded stale: it holds the newest data there is.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "full_io.h"
#include "human.h"
#include "kv.h"
#include "log.h"
#include "ublk_dev.h"
#include "ublk_mirror.h"
#include "ublk_queue.h"

#define MIRROR_MAGIC	"iou-offloadd-mirror 1"
#define CHUNK		(1u << 20)
#define RECORD_EVERY	(32ull << 20)	/* resync progress kept this often */

/* ---- the record ---- */

struct record {
	const struct device_config *cfg;
	uint64_t size;
	int member;			/* the member the lines are about; -1: none */
	bool found[CONFIG_MAX_FILES], stale[CONFIG_MAX_FILES];
	uint64_t synced[CONFIG_MAX_FILES];
};

static int record_key(void *arg, const char *key, const char *v)
{
	struct record *r = arg;

	if (!strcmp(key, "size")) {
		r->size = strtoull(v, NULL, 10);
	} else if (!strcmp(key, "member")) {
		r->member = -1;
		for (int i = 0; i < r->cfg->nr_backing; i++)
			if (!strcmp(r->cfg->backing[i], v))
				r->member = i;
		if (r->member >= 0)
			r->found[r->member] = true;
	} else if (r->member >= 0 && !strcmp(key, "state")) {
		r->stale[r->member] = strcmp(v, "clean");
	} else if (r->member >= 0 && !strcmp(key, "synced")) {
		r->synced[r->member] = strtoull(v, NULL, 10);
	}
	return 0;
}

/* 0, -ENOENT (none yet), or another -errno */
static int record_read(const struct ublk_mirror *m, struct record *r)
{
	char *text;
	int ret = kv_read(m->path, 1 << 16, &text);

	if (ret)
		return ret;
	r->member = -1;
	ret = kv_parse(text, MIRROR_MAGIC, false, record_key, r);
	free(text);
	return ret;
}

/* under m->lock */
static int record_write(const struct ublk_dev *d)
{
	const struct ublk_mirror *m = &d->mirror;
	struct kv_record r;
	int ret = kv_record_open(&r, MIRROR_MAGIC);

	if (ret)
		return ret;
	fprintf(r.f, "size=%" PRIu64 "\n", d->cfg.size);
	for (int i = 0; i < d->cfg.nr_backing; i++) {
		kv_put(r.f, "member", d->cfg.backing[i]);
		fprintf(r.f, "state=%s\nsynced=%" PRIu64 "\n", m->stale[i] ? "stale" : "clean",
			m->stale[i] ? m->synced[i] : d->cfg.size);
	}
	return kv_record_replace(&r, m->path, 0600, true);
}

int ublk_mirror_open(struct ublk_dev *d, const char *state_dir, char *msg, size_t len)
{
	struct ublk_mirror *m = &d->mirror;
	struct record r = { .cfg = &d->cfg };
	int ret, fresh = 0;

	pthread_mutex_init(&m->lock, NULL);
	atomic_store(&m->source, -1);
	if (d->cfg.target != TARGET_MIRROR || !state_dir)
		return 0;
	if (asprintf(&m->path, "%s/device-%s.mirror", state_dir, d->cfg.name) < 0) {
		m->path = NULL;
		return -ENOMEM;
	}
	ret = record_read(m, &r);
	if (ret && ret != -ENOENT)
		log_warning("device %s: %s cannot be read (%s): every member but the first is "
			    "synced from it again", d->cfg.name, m->path, strerror(-ret));
	if (ret || r.size != d->cfg.size)
		memset(r.found, 0, sizeof(r.found));
	for (int i = 0; i < d->cfg.nr_backing; i++) {
		fresh += !r.found[i];
		/* a new mirror: the first member is the one the others copy */
		m->stale[i] = r.found[i] ? r.stale[i] : true;
		m->synced[i] = r.found[i] && r.stale[i] ? r.synced[i] : 0;
	}
	if (fresh == d->cfg.nr_backing)
		m->stale[0] = false;
	for (int i = 0; i < d->cfg.nr_backing; i++) {
		if (!m->stale[i])
			continue;
		atomic_store(&d->member_failed[i], true);
		log_notice("device %s: member %s is %s: it is resynced from an in-sync member, "
			   "and read only once it is in sync", d->cfg.name, d->cfg.backing[i],
			   r.found[i] ? "stale (recorded when it failed)" :
			   fresh == d->cfg.nr_backing ? "not synced yet (a new mirror)" :
			   "new to the mirror");
	}
	pthread_mutex_lock(&m->lock);
	ret = record_write(d);
	pthread_mutex_unlock(&m->lock);
	if (ret)
		snprintf(msg, len, "cannot write %s: %s (a mirror records which member is stale "
			 "before it acknowledges a write)", m->path, strerror(-ret));
	return ret;
}

void ublk_mirror_member_failed(struct ublk_dev *d, int i)
{
	struct ublk_mirror *m = &d->mirror;
	int others = 0, ret;

	atomic_store(&m->syncing[i], false);
	if (!m->path)
		return;
	pthread_mutex_lock(&m->lock);
	for (int j = 0; j < d->cfg.nr_backing; j++)
		others += j != i && !m->stale[j];
	/* stale now, or again: what a resync had copied to it may be short */
	if ((!m->stale[i] && others) || (m->stale[i] && m->synced[i])) {
		m->stale[i] = true;
		m->synced[i] = 0;
		ret = record_write(d);
		if (ret)
			log_err("device %s: cannot record member %s stale in %s: %s; after a restart "
				"it could be read before it is resynced", d->cfg.name,
				d->cfg.backing[i], m->path, strerror(-ret));
	}
	pthread_mutex_unlock(&m->lock);
}

/* ---- the resync ---- */

static uint64_t window_set(struct ublk_dev *d, uint64_t lo, uint64_t hi)
{
	struct ublk_mirror *m = &d->mirror;
	uint64_t seq;

	atomic_store(&m->win_lo, lo);
	atomic_store(&m->win_hi, hi);
	seq = atomic_fetch_add(&m->win_seq, 1) + 1;
	ublk_dev_wake(d);
	return seq;
}

uint64_t ublk_mirror_window(struct ublk_dev *d, uint64_t lo, uint64_t hi)
{
	return window_set(d, lo, hi);
}

bool ublk_mirror_window_acked(struct ublk_dev *d, uint64_t seq)
{
	bool all = true;

	for (int i = 0; i < d->nr_queues; i++)
		all &= atomic_load(&d->queues[i].win_ack) >= seq;
	return all;
}

/* until every queue has no write of its own left in the window */
static bool window_wait(struct ublk_dev *d, uint64_t seq)
{
	for (;;) {
		if (ublk_mirror_window_acked(d, seq))
			return true;
		if (atomic_load(&d->mirror.stop))
			return false;
		usleep(200);
	}
}

static int targets_left(struct ublk_dev *d)
{
	int n = 0;

	for (int i = 0; i < d->cfg.nr_backing; i++)
		n += atomic_load(&d->mirror.syncing[i]);
	return n;
}

/* the members synced up to @pos, durably: their data, then the record */
static void resync_record(struct ublk_dev *d, uint64_t pos, bool done)
{
	struct ublk_mirror *m = &d->mirror;
	int ret;

	for (int i = 0; i < d->cfg.nr_backing; i++)
		if (atomic_load(&m->syncing[i]) && fdatasync(d->member_fd[i]) < 0) {
			log_err("device %s: member %s: fdatasync after the resync: %s",
				d->cfg.name, d->cfg.backing[i], strerror(errno));
			ublk_mirror_member_failed(d, i);
		}
	pthread_mutex_lock(&m->lock);
	for (int i = 0; i < d->cfg.nr_backing; i++) {
		if (!atomic_load(&m->syncing[i]))
			continue;
		m->synced[i] = pos;
		if (done)
			m->stale[i] = false;
	}
	ret = m->path ? record_write(d) : 0;
	pthread_mutex_unlock(&m->lock);
	if (!ret || !done)
		return;
	/* not recorded in sync: it stays out until the next resync */
	log_err("device %s: cannot record the resync in %s: %s", d->cfg.name, m->path,
		strerror(-ret));
	pthread_mutex_lock(&m->lock);
	for (int i = 0; i < d->cfg.nr_backing; i++)
		if (atomic_load(&m->syncing[i]))
			m->stale[i] = true;
	pthread_mutex_unlock(&m->lock);
	for (int i = 0; i < d->cfg.nr_backing; i++)
		atomic_store(&m->syncing[i], false);
}

static void *resync_thread(void *arg)
{
	struct ublk_dev *d = arg;
	struct ublk_mirror *m = &d->mirror;
	int src = atomic_load(&m->source), ret = 0;
	uint64_t pos = atomic_load(&m->sync_pos), size = d->cfg.size, last = pos;
	char *buf = NULL, sz[32];

	human_bytes(size, sz, sizeof(sz));
	if (posix_memalign((void **)&buf, 4096, CHUNK)) {
		log_err("device %s: resync: out of memory", d->cfg.name);
		goto out;
	}
	while (pos < size && targets_left(d) && !atomic_load(&m->stop)) {
		uint32_t len = size - pos < CHUNK ? size - pos : CHUNK;

		if (!window_wait(d, window_set(d, pos, pos + len)))
			break;
		ret = full_pread(d->member_fd[src], buf, len, pos);
		if (ret) {
			log_err("device %s: resync: reading member %s at %" PRIu64 ": %s; the "
				"resync stops", d->cfg.name, d->cfg.backing[src], pos, strerror(-ret));
			break;
		}
		for (int i = 0; i < d->cfg.nr_backing; i++) {
			if (!atomic_load(&m->syncing[i]))
				continue;
			ret = full_pwrite(d->member_fd[i], buf, len, pos);
			if (ret) {
				log_err("device %s: resync: writing member %s at %" PRIu64 ": %s; "
					"it stays out", d->cfg.name, d->cfg.backing[i], pos,
					strerror(-ret));
				ublk_mirror_member_failed(d, i);
			}
		}
		pos += len;
		atomic_store(&m->sync_pos, pos);
		if (pos - last >= RECORD_EVERY && pos < size) {
			resync_record(d, pos, false);
			last = pos;
		}
	}
	if (pos == size && targets_left(d)) {
		resync_record(d, pos, true);
		for (int i = 0; i < d->cfg.nr_backing; i++) {
			if (!atomic_exchange(&m->syncing[i], false))
				continue;
			atomic_store(&d->member_failed[i], false);
			log_notice("device %s: member %s resynced from %s (%s): in sync, read again",
				   d->cfg.name, d->cfg.backing[i], d->cfg.backing[src], sz);
		}
	} else if (targets_left(d)) {
		resync_record(d, pos, false);
	}
out:
	for (int i = 0; i < d->cfg.nr_backing; i++)
		atomic_store(&m->syncing[i], false);
	window_set(d, 0, 0);
	free(buf);
	atomic_store(&m->source, -1);
	return NULL;
}

void ublk_mirror_resync(struct ublk_dev *d)
{
	struct ublk_mirror *m = &d->mirror;
	uint64_t from = UINT64_MAX;
	int src = -1, n = 0;

	if (d->cfg.target != TARGET_MIRROR || atomic_load(&m->source) >= 0)
		return;
	if (m->running) {
		pthread_join(m->thread, NULL);	/* the last one, ended */
		m->running = false;
	}
	for (int i = 0; i < d->cfg.nr_backing && src < 0; i++)
		if (!atomic_load(&d->member_failed[i]))
			src = i;
	if (src < 0) {
		log_err("device %s: no member is in sync: nothing to resync from", d->cfg.name);
		return;
	}
	pthread_mutex_lock(&m->lock);
	for (int i = 0; i < d->cfg.nr_backing; i++) {
		if (!atomic_load(&d->member_failed[i]))
			continue;
		/* a member that failed while the daemon ran starts over */
		if (!m->stale[i])
			m->synced[i] = 0;
		if (m->synced[i] < from)
			from = m->synced[i];
		n++;
	}
	pthread_mutex_unlock(&m->lock);
	if (!n)
		return;
	from = from >= d->cfg.size ? 0 : from - from % CHUNK;
	atomic_store(&m->sync_pos, from);
	for (int i = 0; i < d->cfg.nr_backing; i++)
		if (atomic_load(&d->member_failed[i])) {
			atomic_store(&m->syncing[i], true);
			log_notice("device %s: resyncing member %s from %s, from byte %" PRIu64,
				   d->cfg.name, d->cfg.backing[i], d->cfg.backing[src], from);
		}
	atomic_store(&m->stop, false);
	atomic_store(&m->source, src);
	if (pthread_create(&m->thread, NULL, resync_thread, d)) {
		log_err("device %s: cannot start the resync thread", d->cfg.name);
		for (int i = 0; i < d->cfg.nr_backing; i++)
			atomic_store(&m->syncing[i], false);
		atomic_store(&m->source, -1);
		return;
	}
	m->running = true;
}

void ublk_mirror_stop(struct ublk_dev *d)
{
	struct ublk_mirror *m = &d->mirror;

	if (!m->running)
		return;
	atomic_store(&m->stop, true);
	pthread_join(m->thread, NULL);
	m->running = false;
}

void ublk_mirror_close(struct ublk_dev *d)
{
	ublk_mirror_stop(d);
	free(d->mirror.path);
	d->mirror.path = NULL;
	pthread_mutex_destroy(&d->mirror.lock);
}

bool ublk_mirror_progress(struct ublk_dev *d, uint64_t *done, uint64_t *total)
{
	*done = atomic_load(&d->mirror.sync_pos);
	*total = d->cfg.size;
	return atomic_load(&d->mirror.source) >= 0;
}

int ublk_mirror_read_leg(struct ublk_dev *d, uint64_t *rr)
{
	int n = d->layout.nr, first = 0;

	if (d->cfg.read_policy == READ_ROUND_ROBIN)
		first = (*rr)++ % n;
	for (int k = 0; k < n; k++) {
		int m = (first + k) % n;

		if (!atomic_load(&d->member_failed[m]))
			return m;
	}
	return -1;
}

int ublk_mirror_retry_leg(struct ublk_dev *d, int op, uint64_t *rr)
{
	return op == UBLK_IO_OP_READ ? ublk_mirror_read_leg(d, rr) : -1;
}

bool ublk_mirror_stands(const struct ublk_dev *d, int op, unsigned int ok)
{
	return d->layout.target == TARGET_MIRROR && op != UBLK_IO_OP_READ && ok;
}
