/* SPDX-License-Identifier: MIT */
#ifndef IOU_UBLK_SCRUB_H
#define IOU_UBLK_SCRUB_H

/*
 * `iou-offloadd scrub NAME` of a mirror device, as md's `check`/`repair`:
 * the legs compared region by region while the device serves, each 1 MiB
 * inside the mirror's window (ublk_mirror.h: the queues hold writes there
 * back until it moves on; reads go on), at scrub_rate bytes a second. A
 * 4 KiB block the legs disagree on is a mismatch (md's mismatch_cnt, here
 * in blocks); with integrity = crc32c the leg whose block agrees with its
 * sum is copied over the others (repaired), without it the mismatch is
 * reported only. The result is kept as STATE_DIR/NAME.scrub (verify.h's
 * record: `status` shows it as last_scrub).
 *
 * The command and the daemon meet in runtime_dir: the command writes
 * scrub-NAME.request (its seq) and sends SIGUSR1; the daemon answers in
 * scrub-NAME.answer (seq, result done or refused, why) when the scrub ends
 * or is refused.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCRUB_REQUEST	"scrub-%s.request"
#define SCRUB_ANSWER	"scrub-%s.answer"
#define SCRUB_MAGIC	"iou-offloadd-scrub 1"	/* the answer's first line */

struct ublk_dev;
struct daemon_config;
struct device_config;

struct ublk_scrub {
	pthread_t thread;
	bool joinable;
	_Atomic bool busy, stop;
	_Atomic uint64_t pos;		/* compared up to here */
	uint64_t seq;
	char *runtime_dir;
};

/* the daemon: a scrub of @d for request @seq; -errno with @why when it is refused */
int ublk_scrub_start(struct ublk_dev *d, const char *runtime_dir, uint64_t seq, char *why,
		     size_t len);
/* true while one runs; @done: bytes compared */
bool ublk_scrub_progress(struct ublk_dev *d, uint64_t *done);
/* end a scrub (the chunk in flight finishes; kept as incomplete) */
void ublk_scrub_stop(struct ublk_dev *d);
/* the answer to request @seq in runtime_dir */
int ublk_scrub_answer(const char *runtime_dir, const char *name, uint64_t seq, bool done,
		      const char *why);

/* the command: scrub device @dc through the daemon; 0, 1 (a mismatch left), 4 (not scrubbed) */
int ublk_scrub_request(const struct daemon_config *cfg, const struct device_config *dc);

#endif
