/* worker: the hone-worker daemon as a library. It registers with the controller, long-polls for
 * leases, runs hone-train for each job, relays each epoch's metrics and obeys the reply (continue,
 * stop, pause), runs hone-pack for convert jobs and relays their progress, heartbeats, and
 * completes jobs. The trainer-run part (hone_trun_*) is usable alone.
 * It never decides anything about search: the controller owns every decision. */
#ifndef HONE_WORKER_H
#define HONE_WORKER_H

#include <signal.h>

#include <jansson.h>

#include "args.h"
#include "replay.h"
#include "trainer_argv.h"
#include "trun.h"

/* Runs the daemon until *stop becomes nonzero (set it from a signal handler): stops the running
 * trainer, reports, and returns 0. Returns HONE_EINVAL on bad options. */
int hone_worker_run(const hone_worker_opts *o, volatile sig_atomic_t *stop);

#endif
