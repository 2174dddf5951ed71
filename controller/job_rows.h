/* job_rows.c: a job row and the places it names, below both the lifecycle and the kinds: the row
 * by id, its artifact folder, the dataset it reads. Reads the store only. */
#ifndef HONE_CTL_JOB_ROWS_H
#define HONE_CTL_JOB_ROWS_H

#include <jansson.h>

#include "controller.h"

int ctl_job_row(hone_controller *c, const char *id, json_t **row);
/* The job's artifact folder (malloc'd). */
char *ctl_job_dir(hone_controller *c, const char *job_id);
/* The folder of a job's model (malloc'd): its artifact folder, or an AutoML job's (search)
 * best_model/ in it, where the best trial's files are copied. */
char *ctl_job_model_dir(hone_controller *c, const char *job_id, int search);
/* 1 when dir/name is a plain file (stat, links followed: the controller's own folders). */
int ctl_dir_has_file(const char *dir, const char *name);
/* The id of the dataset a job of an experiment reads (its experiment's first training dataset), as
 * a new JSON string reference, or NULL: a worker that shares no disk downloads it. */
json_t *ctl_job_dataset_id(hone_controller *c, const json_t *job);
/* Workers whose last word is younger than a lease. */
int ctl_live_workers(hone_controller *c);

#endif
