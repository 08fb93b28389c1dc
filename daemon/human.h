/* SPDX-License-Identifier: MIT */
#ifndef IOU_HUMAN_H
#define IOU_HUMAN_H

/* sizes and durations as people read them, in messages and status tables */
#include <stddef.h>
#include <stdint.h>

/* "8.0 MiB" */
void human_bytes(uint64_t v, char *buf, size_t len);
/* "42s", "3m05s", "2h10m" */
void human_duration(uint64_t s, char *buf, size_t len);

#endif
