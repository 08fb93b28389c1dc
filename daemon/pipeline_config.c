// SPDX-License-Identifier: MIT
/*
 * A parsed configuration as data: copy a pipeline's config (each worker
 * owns one, so reloads can free theirs), free, look up, compare, and the
 * fingerprint a checkpoint records of the keys that shape the data layout.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_int.h"
#include "fnv.h"

void pipeline_config_free(struct pipeline_config *pc)
{
	for (int i = 0; i < pc->nr_sources; i++)
		free(pc->sources[i]);
	for (int i = 0; i < pc->nr_dests; i++)
		free(pc->dests[i]);
	pc->nr_sources = pc->nr_dests = 0;
}

int pipeline_config_dup(const struct pipeline_config *src, struct pipeline_config *dst)
{
	*dst = *src;
	dst->nr_sources = dst->nr_dests = 0;
	for (int i = 0; i < src->nr_sources; i++) {
		if (!(dst->sources[i] = strdup(src->sources[i])))
			goto oom;
		dst->nr_sources++;
	}
	for (int i = 0; i < src->nr_dests; i++) {
		if (!(dst->dests[i] = strdup(src->dests[i])))
			goto oom;
		dst->nr_dests++;
	}
	return 0;
oom:
	pipeline_config_free(dst);
	return -ENOMEM;
}

void config_free(struct daemon_config *cfg)
{
	for (int i = 0; i < cfg->nr_pipelines; i++)
		pipeline_config_free(&cfg->pipelines[i]);
	free(cfg->pipelines);
	for (int i = 0; i < cfg->nr_devices; i++)
		device_config_free(&cfg->devices[i]);
	free(cfg->devices);
	free(cfg->path);
	free(cfg->state_dir);
	free(cfg->runtime_dir);
	free(cfg->oneshot_base[0]);
	free(cfg->oneshot_base[1]);
	memset(cfg, 0, sizeof(*cfg));
}

void config_errors_free(struct config_errors *errs)
{
	for (int i = 0; i < errs->nr; i++)
		free(errs->msgs[i]);
	free(errs->msgs);
	errs->msgs = NULL;
	errs->nr = 0;
	errs->dropped = 0;
	for (int i = 0; i < errs->nr_warnings; i++)
		free(errs->warnings[i]);
	errs->nr_warnings = 0;
}

const struct pipeline_config *config_find_pipeline(const struct daemon_config *cfg,
						   const char *name)
{
	for (int i = 0; i < cfg->nr_pipelines; i++)
		if (!strcmp(cfg->pipelines[i].name, name))
			return &cfg->pipelines[i];
	return NULL;
}

static uint64_t fnv_str(uint64_t h, const char *s)
{
	return fnv1a_str(h, s);
}

static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return fnv_str(h, buf);
}

uint64_t pipeline_config_fingerprint(const struct pipeline_config *pc)
{
	uint64_t h = FNV1A_START;

	/* only what decides where each byte goes: not engine, depth, block size */
	h = fnv_str(h, "iou-offload layout 1");
	h = fnv_str(h, transform_to_string(pc->transform));
	if (pc->transform == TRANSFORM_GATHER)
		h = fnv_str(h, gather_layout_to_string(pc->gather));
	for (int i = 0; i < pc->nr_sources; i++)
		h = fnv_str(h, pc->sources[i]);
	h = fnv_str(h, "->");
	for (int i = 0; i < pc->nr_dests; i++)
		h = fnv_str(h, pc->dests[i]);
	h = fnv_u64(h, pc->offset);
	h = fnv_u64(h, pc->dest_offset);
	h = fnv_u64(h, pc->length);
	if (pc->transform == TRANSFORM_STRIPE ||
	    (pc->transform == TRANSFORM_GATHER && pc->gather == GATHER_DESTRIPE))
		h = fnv_u64(h, pc->s.stripe_unit);
	return h;
}

bool pipeline_config_same(const struct pipeline_config *a, const struct pipeline_config *b)
{
	/* the layout by its fingerprint, every other key by the table */
	return pipeline_config_fingerprint(a) == pipeline_config_fingerprint(b) &&
	       config_same_but_layout(a, b);
}
