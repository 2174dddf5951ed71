/* kinds/finetune.c: fine-tuning from a parent job (issue 30): a train or AutoML job whose request
 * names parent_job_id starts from that job's model, a done train job's or a done AutoML job's
 * best_model/. Checked at create, kept as the row's from_job (migration 013), told to the worker
 * at every lease as the folder the controller resolved itself (never a path from a user) and as
 * the job whose artifacts hold it (workers without shared disk). */
#ifndef HONE_CTL_FINETUNE_H
#define HONE_CTL_FINETUNE_H

#include <jansson.h>
#include <stddef.h>

#include "controller.h"

/* Inside the caller's transaction: whether job pid (of owner; NULL: the admin, any user's) may
 * start a job of experiment exp with job_flat (its flat specs): a done train or AutoML job of
 * owner's with a model on record, of a compatible network, with at least one layer that fits.
 * HONE_OK, or HONE_EINVAL with *http (404 or 422) and msg; HONE_ESQL. */
int ctl_finetune_check(hone_controller *c, const json_t *exp, const json_t *job_flat,
                       const char *pid, const char *owner, int *http, char *msg, size_t msglen);
/* The lease's "pretrained" member for a job (a trial: its search's parent), a new reference:
 * {job_id, subdir ("best_model" or ""), dir}, or NULL when it starts from random weights. */
json_t *ctl_finetune_lease(hone_controller *c, const json_t *job);
/* The job view's parent_job_id of a train or AutoML row (null when none). */
void ctl_finetune_json(json_t *o, const json_t *row);

#endif
