// SPDX-License-Identifier: MIT
/*
 * A mirror device's scrub, in the daemon (ublk_scrub.h): a thread of the
 * device compares the legs inside the mirror's window, repairs from the
 * leg that agrees with the sums (integrity = crc32c) or reports only, and
 * keeps the result.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checksum.h"
#include "clock.h"
#include "full_io.h"
#include "human.h"
#include "kv.h"
#include "log.h"
#include "ublk_dev.h"
#include "ublk_queue.h"
#include "ublk_scrub.h"
#include "ublk_sums.h"
#include "verify.h"

#define CHUNK		(1u << 20)
/* mismatches named one by one in the journal; the rest are counted */
#define LOG_MAX		32

int ublk_scrub_answer(const char *runtime_dir, const char *name, uint64_t seq, bool done,
		      const char *why)
{
	char path[4200], file[300], head[128];

	snprintf(file, sizeof(file), SCRUB_ANSWER, name);
	snprintf(path, sizeof(path), "%s/%s", runtime_dir, file);
	snprintf(head, sizeof(head), "%s\nseq=%" PRIu64 "\nresult=%s\n", SCRUB_MAGIC, seq,
		 done ? "done" : "refused");
	return kv_answer_write(path, head, why);
}

/* the legs in sync, into @legs; how many */
static int scrub_legs(struct ublk_dev *d, int *legs)
{
	int n = 0;

	for (int m = 0; m < d->layout.nr; m++)
		if (!atomic_load(&d->member_failed[m]))
			legs[n++] = m;
	return n;
}

/*
 * Block @b (at @off) that legs @a (bytes @pa) and @x (@px) disagree on: with
 * the sums, the one that agrees is written over the other; true if repaired.
 */
static bool scrub_repair(struct ublk_dev *d, uint64_t off, int a, const char *pa, int x,
			 const char *px)
{
	uint32_t want, prev, ca, cx;
	int to, ret;
	const char *from;

	if (!d->sums || !ublk_sums_expected(d, off / UBLK_SUM_BLOCK, &want, &prev))
		return false;
	ca = checksum_crc32c(0, pa, UBLK_SUM_BLOCK);
	cx = checksum_crc32c(0, px, UBLK_SUM_BLOCK);
	if (ca == want && cx != want) {
		to = x;
		from = pa;
	} else if (cx == want && ca != want) {
		to = a;
		from = px;
	} else {
		return false;
	}
	ret = full_pwrite(d->member_fd[to], from, UBLK_SUM_BLOCK, off);
	if (ret) {
		log_err("device %s: scrub: rewriting %s at %" PRIu64 ": %s", d->cfg.name,
			d->cfg.backing[to], off, strerror(-ret));
		return false;
	}
	log_notice("device %s: scrub: %s at %" PRIu64 " rewritten from %s (crc32c %08x agrees "
		   "with its sum)", d->cfg.name, d->cfg.backing[to], off,
		   d->cfg.backing[to == a ? x : a], want);
	return true;
}

static void *scrub_thread(void *arg)
{
	struct ublk_dev *d = arg;
	struct ublk_scrub *s = &d->scrub;
	struct verify_record v = { .when = (uint64_t)time(NULL), .seq = s->seq };
	uint64_t pos = 0, size = d->cfg.size, t0 = clock_mono_ns(), logged = 0;
	int legs[CONFIG_MAX_FILES], nr = scrub_legs(d, legs);
	char *a = NULL, *x = NULL, why[256] = "", done[32];
	int ret;

	v.files = nr;
	if (posix_memalign((void **)&a, 4096, CHUNK) || posix_memalign((void **)&x, 4096, CHUNK)) {
		snprintf(why, sizeof(why), "out of memory");
		v.failed = 1;
		goto out;
	}
	while (pos < size && !atomic_load(&s->stop)) {
		uint32_t len = size - pos < CHUNK ? size - pos : CHUNK;
		uint64_t seq = ublk_mirror_window(d, pos, pos + len), want_ns;
		bool acked;

		while (!(acked = ublk_mirror_window_acked(d, seq)) && !atomic_load(&s->stop))
			usleep(200);
		if (!acked)
			break;
		if ((ret = full_pread(d->member_fd[legs[0]], a, len, pos))) {
			snprintf(why, sizeof(why), "reading %s at %" PRIu64 " failed: %s",
				 d->cfg.backing[legs[0]], pos, strerror(-ret));
			v.failed = 1;
			break;
		}
		for (int k = 1; k < nr && !v.failed; k++) {
			if ((ret = full_pread(d->member_fd[legs[k]], x, len, pos))) {
				snprintf(why, sizeof(why), "reading %s at %" PRIu64 " failed: %s",
					 d->cfg.backing[legs[k]], pos, strerror(-ret));
				v.failed = 1;
				break;
			}
			for (uint32_t o = 0; o < len; o += UBLK_SUM_BLOCK) {
				if (!memcmp(a + o, x + o, UBLK_SUM_BLOCK))
					continue;
				v.mismatches++;
				if (scrub_repair(d, pos + o, legs[0], a + o, legs[k], x + o)) {
					v.repaired++;
					continue;
				}
				if (logged++ < LOG_MAX)
					log_warning("device %s: scrub: %s and %s differ at %" PRIu64
						    "%s", d->cfg.name, d->cfg.backing[legs[0]],
						    d->cfg.backing[legs[k]], pos + o,
						    d->sums ? ": neither agrees with its sum, left" :
						    " (no integrity: reported only)");
			}
		}
		if (v.failed)
			break;
		pos += len;
		v.blocks += len / UBLK_SUM_BLOCK;
		v.bytes += len;
		atomic_store(&s->pos, pos);
		/* scrub_rate: the next chunk no sooner than the rate allows */
		if (d->cfg.scrub_rate) {
			want_ns = (uint64_t)((double)pos / d->cfg.scrub_rate * 1e9);
			uint64_t el = clock_mono_ns() - t0;

			if (want_ns > el)
				usleep((want_ns - el) / 1000);
		}
	}
	/* the repairs durable before the record says so */
	for (int k = 0; k < nr; k++)
		fdatasync(d->member_fd[legs[k]]);
	v.complete = pos == size;
out:
	ublk_mirror_window(d, 0, 0);
	free(a);
	free(x);
	human_bytes(v.bytes, done, sizeof(done));
	log_notice("device %s: scrub %s: %s of %d legs compared in %.1f s, %" PRIu64 " block(s) "
		   "differed, %" PRIu64 " repaired%s%s", d->cfg.name, v.complete ? "done" :
		   "stopped", done, nr, (clock_mono_ns() - t0) / 1e9, v.mismatches, v.repaired,
		   why[0] ? ": " : "", why);
	if (d->state_dir)
		verify_record_save(d->state_dir, d->cfg.name, true, &v);
	if (s->runtime_dir)
		ublk_scrub_answer(s->runtime_dir, d->cfg.name, s->seq, true, why);
	atomic_store(&s->busy, false);
	return NULL;
}

int ublk_scrub_start(struct ublk_dev *d, const char *runtime_dir, uint64_t seq, char *why,
		     size_t len)
{
	struct ublk_scrub *s = &d->scrub;
	int legs[CONFIG_MAX_FILES], n = scrub_legs(d, legs);

	if (d->cfg.target != TARGET_MIRROR) {
		snprintf(why, len, "scrub compares a mirror's legs (target = %s)",
			 device_target_to_string(d->cfg.target));
		return -EOPNOTSUPP;
	}
	if (atomic_load(&s->busy)) {
		snprintf(why, len, "a scrub is running");
		return -EBUSY;
	}
	if (atomic_load(&d->mirror.source) >= 0) {
		snprintf(why, len, "a resync is running: it writes the legs the scrub compares");
		return -EBUSY;
	}
	if (n < 2) {
		snprintf(why, len, "degraded: fewer than two legs in sync to compare");
		return -ENODEV;
	}
	if (s->joinable)
		pthread_join(s->thread, NULL);
	s->joinable = false;
	free(s->runtime_dir);
	s->runtime_dir = runtime_dir ? strdup(runtime_dir) : NULL;
	s->seq = seq;
	atomic_store(&s->pos, 0);
	atomic_store(&s->stop, false);
	atomic_store(&s->busy, true);
	if (pthread_create(&s->thread, NULL, scrub_thread, d)) {
		atomic_store(&s->busy, false);
		snprintf(why, len, "cannot start the scrub thread");
		return -EAGAIN;
	}
	s->joinable = true;
	log_notice("device %s: scrubbing its %d legs (scrub_rate %" PRIu64 " bytes/s; 0: as fast "
		   "as they read)", d->cfg.name, n, d->cfg.scrub_rate);
	return 0;
}

bool ublk_scrub_progress(struct ublk_dev *d, uint64_t *done)
{
	*done = atomic_load(&d->scrub.pos);
	return atomic_load(&d->scrub.busy);
}

void ublk_scrub_stop(struct ublk_dev *d)
{
	struct ublk_scrub *s = &d->scrub;

	if (s->joinable) {
		atomic_store(&s->stop, true);
		pthread_join(s->thread, NULL);
	}
	s->joinable = false;
	free(s->runtime_dir);
	s->runtime_dir = NULL;
}
