// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the config parser on arbitrary bytes. Any input must
 * parse or fail with messages; never crash, leak or read out of bounds.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "config.h"
#include "log.h"

static void quiet(enum log_level level, const char *msg, void *arg)
{
	(void)level;
	(void)msg;
	(void)arg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config_errors errs = { 0 };
	struct daemon_config cfg;
	int ret;

	log_set_sink(quiet, NULL);
	ret = config_parse_buffer("fuzz.conf", (const char *)data, size, &cfg, &errs);
	/* what callers rely on: errors exactly when the parse failed */
	if ((ret == -EINVAL) != (errs.nr > 0) && ret != -ENOMEM)
		__builtin_trap();
	for (int i = 0; i < errs.nr; i++)
		if (strncmp(errs.msgs[i], "fuzz.conf:", 10))
			__builtin_trap();
	if (!ret) {
		for (int i = 0; i < cfg.nr_pipelines; i++) {
			const struct pipeline_config *pc = &cfg.pipelines[i];
			struct pipeline_config dup;

			if (!pc->nr_sources || !pc->nr_dests || !pc->s.queue_depth ||
			    pc->s.block_size < 512)
				__builtin_trap();
			(void)pipeline_config_fingerprint(pc);
			if (!pipeline_config_dup(pc, &dup))
				pipeline_config_free(&dup);
		}
	}
	config_errors_free(&errs);
	config_free(&cfg);
	return 0;
}
