// SPDX-License-Identifier: MIT
/*
 * Checks across keys, after the whole file is read: what a pipeline
 * inherits from [daemon], required keys, keys that only make sense
 * together, and pipelines that would write each other's files (claims.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "claims.h"
#include "config_int.h"

/* the line that set @k for @pc: its own, else the [daemon] line it inherited */
static int setting_line(const struct parse_state *st, const struct pipeline_config *pc, int k)
{
	return pc->key_line[k] ?: st->cfg->key_line[k];
}

void pipeline_resolve(struct parse_state *st, struct pipeline_config *pc)
{
	struct daemon_config *cfg = st->cfg;
	uint64_t units;

	config_inherit_settings(pc, &cfg->defaults);

	st->sec = SEC_PIPELINE;
	st->cur = pc;
	if (!pc->key_line[K_TRANSFORM])
		add_error(st, pc->line, "missing required key 'transform' "
			  "(copy, mirror, stripe or gather)");
	if (!pc->nr_sources && !pc->key_line[K_SOURCE])
		add_error(st, pc->line, "missing required key 'source'");
	if (!pc->nr_dests && !pc->key_line[K_DESTINATION])
		add_error(st, pc->line, "missing required key 'destination'");
	/* the checks below need a valid transform and both file lists */
	if (!(pc->key_valid & (1ull << K_TRANSFORM)) || !pc->nr_sources || !pc->nr_dests)
		return;
	if (pc->key_line[K_STRIPE_IO] && pc->transform != TRANSFORM_STRIPE &&
	    !(pc->transform == TRANSFORM_GATHER && pc->gather == GATHER_DESTRIPE))
		add_error(st, pc->key_line[K_STRIPE_IO],
			  "key 'stripe_io' is only valid with transform = stripe or "
			  "gather = destripe");
	if (pc->key_line[K_GATHER] && pc->transform != TRANSFORM_GATHER)
		add_error(st, pc->key_line[K_GATHER],
			  "key 'gather' is only valid with transform = gather");
	/* sums.c sums the read area of copy, mirror and stripe blocks in the daemon */
	if (pc->s.checksum != CHECKSUM_NONE && pc->transform == TRANSFORM_GATHER)
		add_error(st, setting_line(st, pc, K_CHECKSUM) ?: pc->key_line[K_TRANSFORM],
			  "checksum = crc32c is for copy, mirror and stripe (a gather's blocks "
			  "are not summed yet)");
	if (pc->s.checksum != CHECKSUM_NONE && pc->s.engine == ENGINE_LOOP)
		add_error(st, setting_line(st, pc, K_CHECKSUM) ?: setting_line(st, pc, K_ENGINE) ?:
			  pc->line,
			  "checksum = crc32c needs engine = bpf, uring or auto (the loop engine's "
			  "blocks complete inside its program, where nothing sums them yet)");

	switch (pc->transform) {
	case TRANSFORM_COPY:
		if (pc->nr_sources != 1)
			add_error(st, pc->line,
				  "transform = copy needs exactly 1 source, got %d",
				  pc->nr_sources);
		if (pc->nr_dests != 1)
			add_error(st, pc->line,
				  "transform = copy needs exactly 1 destination, got %d "
				  "(use mirror or stripe for more)", pc->nr_dests);
		break;
	case TRANSFORM_MIRROR:
	case TRANSFORM_STRIPE:
		if (pc->nr_sources != 1)
			add_error(st, pc->line,
				  "transform = %s needs exactly 1 source, got %d",
				  transform_to_string(pc->transform), pc->nr_sources);
		if (pc->nr_dests < 2)
			add_error(st, pc->line,
				  "transform = %s needs at least 2 destinations, got %d "
				  "(use copy for one)",
				  transform_to_string(pc->transform), pc->nr_dests);
		break;
	case TRANSFORM_GATHER:
		if (pc->nr_sources < 2)
			add_error(st, pc->line,
				  "transform = gather needs at least 2 sources, got %d "
				  "(use copy for one)", pc->nr_sources);
		if (pc->nr_dests != 1)
			add_error(st, pc->line,
				  "transform = gather needs exactly 1 destination, got %d",
				  pc->nr_dests);
		break;
	}

	/* at the destination's own line, as a device's repeated backing is */
	for (int i = 0; i < pc->nr_dests; i++) {
		for (int j = 0; j < pc->nr_sources; j++)
			if (!strcmp(pc->dests[i], pc->sources[j]))
				add_error_pair(st, pc->dest_line[i] ?: pc->line, "", pc->source_line[j],
					       "destination '%s' is also a source", pc->dests[i]);
		for (int j = 0; j < i; j++)
			if (!strcmp(pc->dests[i], pc->dests[j]))
				add_error_pair(st, pc->dest_line[i] ?: pc->line, "first at ",
					       pc->dest_line[j], "destination '%s' is listed twice",
					       pc->dests[i]);
	}

	if (pc->transform == TRANSFORM_STRIPE ||
	    (pc->transform == TRANSFORM_GATHER && pc->gather == GATHER_DESTRIPE)) {
		units = pc->s.block_size / pc->s.stripe_unit;
		if (units > UNITS_PER_BLOCK_MAX)
			add_error(st, pc->key_line[K_STRIPE_UNIT] ?: pc->line,
				  "stripe_unit = %u is too small for block_size = %u: "
				  "expected at most %d stripe units per block",
				  pc->s.stripe_unit, pc->s.block_size, UNITS_PER_BLOCK_MAX);
		/*
		 * Unset: per-unit, which copies nothing and measured faster
		 * than the gather on brd and null_blk (tests/bench/README.md),
		 * where a block's units fit its chain; else the gather.
		 */
		if (!pc->key_line[K_STRIPE_IO])
			pc->stripe_io = units > PER_UNIT_MAX ? STRIPE_IO_GATHER :
							       STRIPE_IO_PER_UNIT;
		/* one request per unit: a block's chain and the ring stay small */
		else if (pc->stripe_io == STRIPE_IO_PER_UNIT && units > PER_UNIT_MAX)
			add_error(st, pc->key_line[K_STRIPE_IO],
				  "stripe_io = per-unit: block_size = %u holds %" PRIu64 " stripe "
				  "units of %u, expected at most %d (one request each)",
				  pc->s.block_size, (uint64_t)units, pc->s.stripe_unit,
				  PER_UNIT_MAX);
	}
}

/* no two pipelines may write one file, or write what another reads */
int pipelines_check_claims(struct parse_state *st, struct daemon_config *cfg)
{
	struct pipeline_claims *cl;
	char why[1024];
	int line, first, ret = 0;

	if (!cfg->nr_pipelines)
		return 0;
	cl = calloc(cfg->nr_pipelines, sizeof(*cl));
	if (!cl)
		return -ENOMEM;
	for (int i = 0; i < cfg->nr_pipelines && !ret; i++)
		ret = claims_of(&cfg->pipelines[i], &cl[i]);
	for (int i = 0; i < cfg->nr_pipelines && !ret; i++) {
		st->sec = SEC_PIPELINE;
		st->cur = &cfg->pipelines[i];
		if (claims_self_conflict(&cl[i], &line, &first, why, sizeof(why)))
			add_error_pair(st, line, "", first, "%s", why);
		for (int j = 0; j < i; j++)
			if (claims_conflict(&cl[i], &cl[j], &line, why, sizeof(why)))
				add_error(st, line, "%s", why);
	}
	for (int i = 0; i < cfg->nr_pipelines; i++)
		claims_free(&cl[i]);
	free(cl);
	return ret;
}
