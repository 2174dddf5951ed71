/* job_rows.c: a job row and the places it names, below both the lifecycle and the kinds: the row
 * by id, its artifact folder, the dataset it reads. Reads the store only. */
#ifndef HONE_CTL_JOB_ROWS_H
#define HONE_CTL_JOB_ROWS_H

#include <jansson.h>

#include "controller.h"

int ctl_job_row(hone_controller *c, const char *id, json_t **row);
/* The job's artifact folder (malloc'd). */
char *ctl_job_dir(hone_controller *c, const char *job_id);
/* The id of the dataset a job of an experiment reads (its experiment's first training dataset), as
 * a new JSON string reference, or NULL: a worker that shares no disk downloads it. */
json_t *ctl_job_dataset_id(hone_controller *c, const json_t *job);
/* Workers whose last word is younger than a lease. */
int ctl_live_workers(hone_controller *c);

#endif
