/* SPDX-License-Identifier: MIT */
#ifndef IOU_FILES_H
#define IOU_FILES_H

#include "pipeline.h"

/* fill size, type and identity of an open file; -EINVAL: neither file nor bdev */
int file_identify(struct file_slot *f);
/*
 * open every source and every existing destination, with the checks that
 * need only stat; a missing destination (create = yes) is created later,
 * by files_create_missing(), once every check has passed
 */
int files_open(struct pipeline_run *pr);
/* room on each destination's file system for what the plan writes there */
int files_check_space(struct pipeline_run *pr);
int files_create_missing(struct pipeline_run *pr);
/* setup failed: remove the (still empty) destinations this attempt created */
void files_remove_created(struct pipeline_run *pr);
void files_close(struct pipeline_run *pr);
/* largest O_DIRECT alignment among the pipeline's files (1 without direct) */
uint32_t files_io_align(const struct pipeline_run *pr);
/* device sizes and O_DIRECT alignment against the plan */
int files_check_plan(struct pipeline_run *pr);
/* the sources have the size and mtime they had at open */
int files_check_unchanged(struct pipeline_run *pr);

#endif
