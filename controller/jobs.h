/* jobs.c: job rows as the rest of the controller sees them: the API view and ending a leased job,
 * each through its kind's row (kinds/kind.h). The row by id, its folder and dataset: job_rows.h. */
#ifndef HONE_CTL_JOBS_H
#define HONE_CTL_JOBS_H

#include <jansson.h>
#include <stddef.h>

#include "controller.h"
#include "job_rows.h"

json_t *ctl_job_json(hone_controller *c, const json_t *row); /* the API view */
/* The view of one job (GET /jobs/{id}): ctl_job_json and, for a kind that trains, the spec its
 * trainer runs, resolved and sized to the data ("resolved_spec"). */
json_t *ctl_job_json_one(hone_controller *c, const json_t *row);
/* Ends a leased job (inside the caller's transaction) through its kind's finish: complete, or
 * lease lost after stop/pause/cancel. HONE_ESTATE for a row of no known kind. */
int ctl_job_finish(hone_controller *c, const json_t *job, const char *status, const char *log_tail,
                   const json_t *final);

#endif
