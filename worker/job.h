/* job: the train runner (job.c): one leased training run, from its spec file to its completion. */
#ifndef HONE_WORKER_JOB_H
#define HONE_WORKER_JOB_H

#include "lease.h"
#include "wire.h"

/* Runs one leased train job to the end (spec file, hone-train, epoch reports, outputs) and
 * completes it with the controller. kind is HONE_KIND_TRAIN (the table's row). */
void worker_train_run(hone_worker *w, hone_kind kind, const json_t *lease);

#endif
