/* kinds: the worker's job-kind table (kinds.c), the mirror of the controller's: each kind a lease
 * can carry, and the runner that runs it. The daemon loop hands every lease here. */
#ifndef HONE_WORKER_KINDS_H
#define HONE_WORKER_KINDS_H

#include "lease.h"

/* Runs one leased job to the end through its kind's runner: the lease's `action` parsed once (none:
 * train). A kind this worker cannot run fails the job, with a message naming it. */
void worker_kind_run(hone_worker *w, const json_t *lease);

#endif
