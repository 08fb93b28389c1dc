// SPDX-License-Identifier: MIT
/*
 * The integrity metadata file's layout and header (see ublk_meta.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ublk_dirty.h"
#include "ublk_meta.h"
#include "ublk_sums.h"

#define MAGIC	"iou-offloadd-integrity 1\n"

static uint64_t page_up(uint64_t v)
{
	return (v + UBLK_META_PAGE - 1) / UBLK_META_PAGE * UBLK_META_PAGE;
}

void ublk_meta_layout(uint64_t dev_size, struct ublk_meta_layout *l)
{
	l->nr_blocks = dev_size / UBLK_SUM_BLOCK;
	l->nr_regions = (dev_size + UBLK_REGION_SIZE - 1) >> UBLK_REGION_SHIFT;
	l->map_off = UBLK_META_PAGE;
	l->map_len = page_up(l->nr_regions);
	l->sums_off = l->map_off + l->map_len;
	l->sums_len = page_up(l->nr_blocks * 4);
	l->size = l->sums_off + l->sums_len;
}

uint64_t ublk_meta_size(uint64_t dev_size)
{
	struct ublk_meta_layout l;

	ublk_meta_layout(dev_size, &l);
	return l.size;
}

void ublk_meta_head_format(const struct ublk_meta_head *h, char page[UBLK_META_PAGE])
{
	memset(page, 0, UBLK_META_PAGE);
	snprintf(page, UBLK_META_PAGE, MAGIC "algorithm=crc32c\nblock_size=%u\nregion_size=%u\n"
		 "size=%" PRIu64 "\nfingerprint=%016" PRIx64 "\n", h->block_size, h->region_size,
		 h->size, h->fingerprint);
}

int ublk_meta_head_parse(const char *page, size_t len, struct ublk_meta_head *h, char *why,
			 size_t why_len)
{
	char text[UBLK_META_PAGE + 1], alg[16] = "";
	const char *line;

	if (len < sizeof(MAGIC) - 1 || memcmp(page, MAGIC, sizeof(MAGIC) - 1)) {
		snprintf(why, why_len, "no integrity header");
		return -EINVAL;
	}
	if (len > UBLK_META_PAGE)
		len = UBLK_META_PAGE;
	memcpy(text, page, len);
	text[len] = 0;
	memset(h, 0, sizeof(*h));
	for (line = text + sizeof(MAGIC) - 1; *line; line = strchr(line, '\n') + 1) {
		/* each line sets one field; an unknown one is left for a later version */
		(void)(sscanf(line, "algorithm=%15[a-z0-9]", alg) == 1 ||
		       sscanf(line, "block_size=%u", &h->block_size) == 1 ||
		       sscanf(line, "region_size=%u", &h->region_size) == 1 ||
		       sscanf(line, "size=%" SCNu64, &h->size) == 1 ||
		       sscanf(line, "fingerprint=%" SCNx64, &h->fingerprint) == 1);
		if (!strchr(line, '\n'))
			break;
	}
	if (strcmp(alg, "crc32c") || h->block_size != UBLK_SUM_BLOCK ||
	    h->region_size != UBLK_REGION_SIZE || !h->size) {
		snprintf(why, why_len, "header of another format (algorithm %s, block %u, "
			 "region %u, size %" PRIu64 ")", alg[0] ? alg : "?", h->block_size,
			 h->region_size, h->size);
		return -EINVAL;
	}
	return 0;
}
