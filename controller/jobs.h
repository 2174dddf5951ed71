/* jobs.c: job rows as the rest of the controller sees them: creating one from an experiment, the
 * resolved trainer spec, the API view, the artifact folder, and ending a train job. */
#ifndef HONE_CTL_JOBS_H
#define HONE_CTL_JOBS_H

#include <jansson.h>
#include <stddef.h>

#include "controller.h"

int ctl_job_row(hone_controller *c, const char *id, json_t **row);
json_t *ctl_job_json(hone_controller *c, const json_t *row); /* the API view */
/* Creates a job from an experiment row (inside the caller's transaction). */
int ctl_job_create(hone_controller *c, const json_t *exp, const char *action, const json_t *specs,
                   const char *name, char *id_out, size_t idlen, char *field, size_t fieldlen,
                   char *msg, size_t msglen);
/* Resolved flat spec of a job: network defaults < experiment specs < job specs < trial config. */
int ctl_job_spec(hone_controller *c, const json_t *job, json_t **flat);
/* The job's artifact folder (malloc'd). */
char *ctl_job_dir(hone_controller *c, const char *job_id);
/* The id of the dataset a job of an experiment reads (its experiment's first training dataset), as
 * a new JSON string reference, or NULL: a worker that shares no disk downloads it. */
json_t *ctl_job_dataset_id(hone_controller *c, const json_t *job);
/* Ends a train job (inside the caller's transaction): complete, or lease lost after stop/pause.
 * A convert job goes to ctl_convert_finish (convert.h). */
int ctl_job_finish(hone_controller *c, const json_t *job, const char *status, const char *log_tail,
                   const json_t *final);

#endif
