/* convert: the convert runner (convert.c): hone-pack on a dataset, its progress relayed. */
#ifndef HONE_WORKER_CONVERT_H
#define HONE_WORKER_CONVERT_H

#include "lease.h"
#include "wire.h"

/* Runs a convert job (hone-pack --json), relays its progress, completes it. */
void worker_convert_run(hone_worker *w, hone_kind kind, const json_t *lease);

#endif
