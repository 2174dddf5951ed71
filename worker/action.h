/* action: the runner of the kinds that act on a trained model (action.c): evaluate, inference,
 * export. */
#ifndef HONE_WORKER_ACTION_H
#define HONE_WORKER_ACTION_H

#include "lease.h"
#include "wire.h"

/* Runs an evaluate, inference or export job (hone-train --evaluate / --infer / --export, as kind
 * says), completes it. */
void worker_action_run(hone_worker *w, hone_kind kind, const json_t *lease);

#endif
