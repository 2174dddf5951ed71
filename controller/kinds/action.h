/* kinds/action.c: the evaluate, inference and export kinds (TAO's action names): hone-train
 * --evaluate /
 * --infer / --export run by a worker on the model of a parent job, a done train job (its model.bin)
 * or an AutoML job (its best_model/, TAO's best_model). The job row keeps what to run in config:
 * {parent_job_id, model_dir, sets (the --set data overrides of evaluate on another dataset), folder
 * (inference)}; its result is hone-train's JSON line; inference's labels are the job's artifact
 * labels.jsonl, export's ONNX file its artifact model.onnx. */
#ifndef HONE_CTL_ACTIONS_H
#define HONE_CTL_ACTIONS_H

#include <jansson.h>
#include <stddef.h>

#include "controller.h"

/* Inside the caller's transaction: a queued evaluate or inference job of experiment exp from the
 * request body (parent_job_id; evaluate: dataset_id optional; inference: folder; export: neither).
 * owner (a user id, NULL: anyone's): the parent job and dataset must be theirs, else "no job" /
 * "no dataset" as for an unknown id.
 * HONE_EINVAL with *http (422 or 409), field and msg filled when the request cannot be taken. */
int ctl_action_create(hone_controller *c, const json_t *exp, const json_t *body, const char *owner,
                      char *id_out, size_t idlen, int *http, char *field, size_t fieldlen,
                      char *msg, size_t msglen);
/* The "job" object of its lease reply (new reference): action, model_dir, sets, folder, out_dir
 * (the job's artifact folder, created here). */
json_t *ctl_action_lease_job(hone_controller *c, const json_t *job);
/* Inside the caller's transaction: the job ends done (result: final without "event"), failed or
 * canceled; never retried (it has nothing to resume). */
int ctl_action_finish(hone_controller *c, const json_t *job, const char *status,
                      const char *log_tail, const json_t *final);
/* Its members of the job's API view: parent_job_id. */
void ctl_action_json(json_t *o, const json_t *row);

#endif
