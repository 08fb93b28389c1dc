// SPDX-License-Identifier: MIT
/*
 * iou-offloadd verify [-c FILE] [--source] [NAME...]: read back what the
 * checksum manifest (checksum.h) vouches for, on every destination (each
 * mirror leg apart; a stripe's members put back into the logical stream),
 * and compare each block's CRC32C with it. The pages are dropped from the
 * cache first (POSIX_FADV_DONTNEED), so the bytes come from the device;
 * a hole is compared with the sum of zeros, unread.
 * Mismatches are printed as path, offset, length, expected and found.
 *
 * iou-offloadd scrub [-c FILE] [NAME...] is the same read of every finished
 * pipeline, kept as its last scrub (NAME.scrub): what the monthly
 * iou-offload-scrub@.timer runs, as mdcheck and btrfs-scrub do.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "checkpoint.h"
#include "clock.h"
#include "checksum.h"
#include "config.h"
#include "daemon.h"
#include "plan.h"
#include "kv.h"
#include "ublk_scrub.h"
#include "verify.h"

struct target {
	const char *what;		/* "destination", "mirror leg", "stripe", "source" */
	char *const *paths;
	int nr;
	uint64_t off;			/* where the logical stream starts in each */
	uint32_t unit;			/* stripe: members in units of this; 0: one copy */
	bool zeros_past_end;		/* an unfinished copy's destination (below) */
};

/* an extent of one file as SEEK_DATA / SEEK_HOLE found it: [lo, hi) */
struct extent {
	uint64_t lo, hi;
	bool hole;
};

/* the logical bytes [lo, lo + len) of @t into @buf: 0 or -errno */
static int read_logical(const struct target *t, const int *fds, uint64_t lo, uint32_t len,
			char *buf)
{
	uint64_t done = 0;

	while (done < len) {
		uint64_t o = lo + done, n = len - done, at;
		int f = 0;
		ssize_t r;

		if (t->unit) {
			uint64_t u = o / t->unit;

			f = u % t->nr;
			at = (u / t->nr) * t->unit + o % t->unit;
			if (n > t->unit - o % t->unit)
				n = t->unit - o % t->unit;
		} else {
			at = o;
		}
		r = pread(fds[f], buf + done, n, t->off + at);
		if (r < 0)
			return -errno;
		if (r == 0 && !t->zeros_past_end)
			return -ENODATA;
		if (r == 0)
			memset(buf + done, 0, r = n);
		done += r;
	}
	return 0;
}

#define SUMS_WINDOW	4096

/*
 * Does [@o, @o + @len) of @fd lie in a hole, to be compared with the sum of
 * zeros without reading it (a sparse copy's terabytes of holes read as
 * zeros for minutes)? @c keeps the extent found last: a run of blocks costs
 * one lseek. Past the end is a hole only where it reads as zeros
 * (@past_end); a file system that cannot say is read.
 */
static bool in_hole(int fd, struct extent *c, uint64_t o, uint32_t len, bool past_end)
{
	if (o < c->lo || o >= c->hi) {
		off_t d = lseek(fd, o, SEEK_DATA), h;
		struct stat st;

		if (d < 0 && errno == ENXIO && fstat(fd, &st) == 0) {
			/* no data from @o on: a hole to the end, then past it */
			if (o < (uint64_t)st.st_size)
				*c = (struct extent){ o, st.st_size, true };
			else
				*c = (struct extent){ o, UINT64_MAX, past_end };
		} else if (d < 0) {
			*c = (struct extent){ o, o + len, false };
		} else if ((uint64_t)d > o) {
			*c = (struct extent){ o, d, true };
		} else {
			h = lseek(fd, o, SEEK_HOLE);
			*c = (struct extent){ o, h > d ? (uint64_t)h : o + len, false };
		}
	}
	return c->hole && o + len <= c->hi;
}

/*
 * one target against the manifest: 0, or -errno when a file or the manifest
 * failed; *@checked: the blocks compared (fewer than @blocks after a
 * failure), *@bad: the mismatches among them, counted also when a later
 * read fails
 */
static int verify_target(const char *name, const struct target *t, int sums, uint64_t blocks,
			 const struct checksum_head *h, uint64_t *checked, long *bad)
{
	int fds[CONFIG_MAX_FILES];
	struct extent ext = { 0 };
	uint32_t win[SUMS_WINDOW];
	uint64_t win_first = 0, win_n = 0;
	char *buf = malloc(h->block_size);
	bool tty = isatty(STDERR_FILENO);
	uint64_t shown = 0;
	int ret = 0;

	*checked = 0;
	*bad = 0;
	if (!buf)
		return -ENOMEM;
	for (int i = 0; i < t->nr; i++) {
		fds[i] = open(t->paths[i], O_RDONLY | O_CLOEXEC);
		if (fds[i] < 0) {
			ret = -errno;
			fprintf(stderr, "%s: %s %s: cannot open: %s\n", name, t->what, t->paths[i],
				strerror(-ret));
			while (i--)
				close(fds[i]);
			free(buf);
			return ret;
		}
		/* from the device, not what the page cache kept of the writes */
		posix_fadvise(fds[i], 0, 0, POSIX_FADV_DONTNEED);
	}
	for (uint64_t b = 0; b < blocks && !ret; b++) {
		uint64_t lo = b * h->block_size;

		/* on a terminal, one line redrawn as it goes (like dd status=progress) */
		if (tty && !(b % 256) && clock_mono_ns() - shown > 500000000ULL) {
			shown = clock_mono_ns();
			fprintf(stderr, "\r\033[K%s: %s: block %" PRIu64 " of %" PRIu64, name, t->what,
				b, blocks);
		}
		uint32_t len = h->length - lo < h->block_size ? h->length - lo : h->block_size;
		uint32_t want, got;

		/* the sums a window at a time: a pread each was most of a long hole's time */
		if (b - win_first >= win_n) {
			ssize_t n = checksum_get(sums, b, win, SUMS_WINDOW);

			win_first = b;
			win_n = n > 0 ? n : 0;
		}
		if (b - win_first >= win_n) {
			ret = -ENODATA;
			fprintf(stderr, "%s: the manifest holds no sum for block %" PRIu64 "\n",
				name, b);
			break;
		}
		want = win[b - win_first];
		/* one file maps the stream 1:1: its holes are known without reading */
		if (!t->unit && in_hole(fds[0], &ext, t->off + lo, len, t->zeros_past_end)) {
			got = checksum_zeros(len);
			goto compare;
		}
		ret = read_logical(t, fds, lo, len, buf);
		if (ret) {
			fprintf(stderr, "%s: %s %s: cannot read bytes %" PRIu64 "-%" PRIu64 ": %s\n",
				name, t->what, t->nr == 1 ? t->paths[0] : "(its members)", lo,
				lo + len, ret == -ENODATA ? "it ends before them" : strerror(-ret));
			break;
		}
		got = checksum_crc32c(0, buf, len);
compare:
		*checked = b + 1;
		if (got == want)
			continue;
		(*bad)++;
		if (t->nr == 1)
			printf("%s: mismatch: %s offset %" PRIu64 " length %" PRIu32 ": expected "
			       "crc32c %08x, found %08x\n", name, t->paths[0], t->off + lo, len,
			       want, got);
		else
			printf("%s: mismatch: %s over %d members (%s ...) at logical offset %" PRIu64
			       " length %" PRIu32 ": expected crc32c %08x, found %08x\n", name,
			       t->what, t->nr, t->paths[0], lo, len, want, got);
	}
	if (tty && shown)
		fprintf(stderr, "\r\033[K");
	for (int i = 0; i < t->nr; i++)
		close(fds[i]);
	free(buf);
	return ret;
}

#define VERIFY_MAGIC "iou-offload-verify 1"
#define VF(f, t) KV_FIELD(struct verify_record, f, t)
static const struct kv_field record_fields[] = {
	VF(when, KV_U64), VF(blocks, KV_U64), VF(bytes, KV_U64), VF(mismatches, KV_U64),
	VF(files, KV_INT), VF(complete, KV_INT), VF(failed, KV_INT), VF(repaired, KV_U64),
	VF(seq, KV_U64),
};
#define NR_RECORD (sizeof(record_fields) / sizeof(record_fields[0]))

static int record_path(const char *dir, const char *name, bool scrub, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s.%s", dir, name, scrub ? "scrub" : "verify");

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* what `status` shows of it; not durable: a lost one is verified again */
void verify_record_save(const char *dir, const char *name, bool scrub,
			const struct verify_record *v)
{
	char path[4200];
	struct kv_record r;

	if (record_path(dir, name, scrub, path, sizeof(path)) || kv_record_open(&r, VERIFY_MAGIC))
		return;
	kv_put_fields(r.f, record_fields, NR_RECORD, "", v);
	if (kv_record_replace(&r, path, 0600, false))
		fprintf(stderr, "%s: cannot record the verify in %s\n", name, path);
}

static int record_key(void *arg, const char *key, const char *val)
{
	kv_set_field(record_fields, NR_RECORD, "", arg, key, val);
	return 0;
}

int verify_record_load(const char *state_dir, const char *name, bool scrub,
		       struct verify_record *v)
{
	char path[4200], *text;
	int ret;

	memset(v, 0, sizeof(*v));
	if (record_path(state_dir, name, scrub, path, sizeof(path)))
		return -EINVAL;
	ret = kv_read(path, 1 << 16, &text);
	if (ret)
		return ret;
	ret = kv_parse(text, VERIFY_MAGIC, false, record_key, v);
	free(text);
	return ret;
}

/* 0 verified, 1 mismatch or unreadable, 4 nothing to verify */
static int verify_pipeline(const struct daemon_config *cfg, const struct pipeline_config *pc,
			   bool source, bool scrub)
{
	struct checksum_head h;
	struct checkpoint ck;
	struct target t[CONFIG_MAX_FILES + 1];
	char path[4200];
	uint64_t blocks, vouched;
	bool oneshot = cfg->oneshot_base[0], damaged, lost, ends_later;
	long bad = 0;
	int nt = 0, fd, ret, rc = 0;

	/* a one-shot's verify is not told --checksum again: its manifest says */
	if (pc->s.checksum == CHECKSUM_NONE && !oneshot) {
		fprintf(stderr, "%s: checksum = none: nothing to verify against\n", pc->name);
		return 4;
	}
	checksum_path(cfg->state_dir, pc->name, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ret = fd < 0 ? -errno : checksum_read_head(fd, &h);
	/*
	 * A manifest that is there but unreadable, or gone after a run that
	 * kept one, is a failure: "nothing to verify" would let a scrub pass.
	 */
	damaged = ret && ret != -ENOENT;
	lost = ret == -ENOENT && !oneshot &&
	       checkpoint_load(cfg->state_dir, pc->name, &ck) == 0 && ck.done;
	if (damaged || lost) {
		fprintf(stderr, "%s: the checksum manifest %s is %s: its sums are lost (a run "
			"from 0, repeat = yes, takes them again)\n", pc->name, path,
			lost ? "gone, though the pipeline has run" : "damaged");
		if (fd >= 0)
			close(fd);
		verify_record_save(cfg->state_dir, pc->name, scrub,
				   &(struct verify_record){ .when = time(NULL), .failed = 1 });
		return 1;
	}
	if (ret) {
		if (oneshot)
			fprintf(stderr, "%s: no checksums recorded for it (was it run with "
				"--checksum?)\n", pc->name);
		else
			fprintf(stderr, "%s: no checksum manifest in %s (has it run with "
				"checksum = crc32c?)\n", pc->name, cfg->state_dir);
		if (fd >= 0)
			close(fd);
		return 4;
	}
	if (h.fingerprint != pipeline_config_fingerprint(pc)) {
		fprintf(stderr, "%s: the manifest is of another layout than the configuration's: "
			"run the pipeline again first\n", pc->name);
		close(fd);
		return 1;
	}
	/* what a checkpoint vouches for: whole blocks below its done */
	vouched = 0;
	if (checkpoint_load(cfg->state_dir, pc->name, &ck) == 0)
		vouched = ck.state == CKPT_FINISHED ? h.length : ck.done;
	/* a scrub checks what is done and stays so; a copy in progress is verify's */
	if (scrub && vouched < h.length) {
		printf("%s: not scrubbed: the copy is not finished\n", pc->name);
		close(fd);
		return 4;
	}
	blocks = vouched >= h.length ? (h.length + h.block_size - 1) / h.block_size :
		 vouched / h.block_size;
	if (!blocks) {
		fprintf(stderr, "%s: nothing to verify yet: the checkpoint vouches for no whole "
			"block\n", pc->name);
		close(fd);
		return 4;
	}

	/*
	 * An unfinished copy's destination may end below the checkpoint: a
	 * sparse source's holes are not written, and the end of the copy sets
	 * the size (pipeline.c's finish()). Past its end it reads as the zeros
	 * the end leaves there, not as a file cut short.
	 */
	ends_later = vouched < h.length && (pc->s.sparse || pc->s.truncate);
	if (pc->transform == TRANSFORM_STRIPE) {
		t[nt++] = (struct target){ "stripe", pc->dests, pc->nr_dests, pc->dest_offset,
					   pc->s.stripe_unit, ends_later };
	} else {
		for (int d = 0; d < pc->nr_dests; d++)
			t[nt++] = (struct target){ pc->transform == TRANSFORM_MIRROR ?
						   "mirror leg" : "destination", &pc->dests[d], 1,
						   pc->dest_offset, 0, ends_later };
	}
	if (source)
		t[nt++] = (struct target){ "source", pc->sources, 1, pc->offset, 0 };
	/* what was compared on every file set: a file that could not be read cuts it */
	uint64_t least = blocks;

	for (int i = 0; i < nt; i++) {
		uint64_t checked;
		long found;

		if (verify_target(pc->name, &t[i], fd, blocks, &h, &checked, &found) < 0)
			rc = 1;
		bad += found;
		if (checked < least)
			least = checked;
	}
	close(fd);
	verify_record_save(cfg->state_dir, pc->name, scrub, &(struct verify_record){
		.when = time(NULL), .blocks = least,
		.bytes = least == blocks && vouched >= h.length ? h.length : least * h.block_size,
		.mismatches = bad, .files = nt, .complete = vouched >= h.length && least == blocks,
		.failed = rc,
	});
	printf("%s: %" PRIu64 " block(s) of %" PRIu32 " bytes on %d %s%s: %ld mismatch(es)%s%s\n",
	       pc->name, least, h.block_size, nt, nt == 1 ? "file set" : "file sets",
	       source ? " (the source too)" : "", bad,
	       least < blocks ? "; not all read, a file could not be" : "",
	       vouched < h.length ? " (up to the checkpoint: the copy is not finished)" : "");
	return rc || bad ? 1 : 0;
}

/* one pipeline's or device's answer (0, 1, 4) into the command's: 2 (a bad name) stays */
static void tally(int r, int *left, int *scrubbed, int *rc)
{
	if (r == 4)
		(*left)++;
	else
		(*scrubbed)++;
	if (r == 1 && *rc != 2)
		*rc = 1;
}

int verify_main(const struct daemon_options *opts, bool source, bool scrub,
		char *const *names, int nr_names)
{
	const char *config_path = opts->config_path;
	struct config_errors errs = { 0 };
	struct daemon_config cfg;
	const char *verb = scrub ? "scrub" : "verify";
	int rc = 0, ret, scrubbed = 0, left = 0;

	/* a file, or a one-shot command's text (verify copy SRC DST) */
	ret = daemon_config_load(opts, &cfg, &errs);
	for (int i = 0; i < errs.nr; i++)
		fprintf(stderr, "%s\n", errs.msgs[i]);
	config_errors_free(&errs);
	if (ret) {
		config_free(&cfg);
		return 78;
	}
	for (int n = 0; n < nr_names; n++) {
		bool found = false;

		for (int i = 0; i < cfg.nr_pipelines && !found; i++)
			found = !strcmp(names[n], cfg.pipelines[i].name);
		for (int i = 0; i < cfg.nr_devices && !found; i++)
			found = !strcmp(names[n], cfg.devices[i].name);
		if (!found) {
			fprintf(stderr, "iou-offloadd %s: %s is not a pipeline or device of %s\n",
				verb, names[n], config_path);
			rc = 2;
		}
	}
	for (int i = 0; i < cfg.nr_pipelines; i++) {
		const struct pipeline_config *pc = &cfg.pipelines[i];
		bool named = !nr_names;

		for (int n = 0; n < nr_names; n++)
			named |= !strcmp(names[n], pc->name);
		if (!named)
			continue;
		tally(verify_pipeline(&cfg, pc, source, scrub), &left, &scrubbed, &rc);
	}
	for (int i = 0; i < cfg.nr_devices; i++) {
		bool named = false;

		for (int n = 0; n < nr_names; n++)
			named |= !strcmp(names[n], cfg.devices[i].name);
		if (!named && (nr_names || !scrub))
			continue;
		if (!scrub) {
			left++;
			printf("%s: a device: verify reads back pipelines\n", cfg.devices[i].name);
			continue;
		}
		/* a mirror's legs compared by the daemon that serves it */
		tally(ublk_scrub_request(&cfg, &cfg.devices[i]), &left, &scrubbed, &rc);
	}
	/*
	 * verify: 4 when any named or configured pipeline had nothing to check;
	 * scrub (the timer's): 4 only when nothing at all was scrubbed
	 */
	if (rc == 0 && left && (!scrub || !scrubbed))
		rc = 4;
	config_free(&cfg);
	return rc;
}
