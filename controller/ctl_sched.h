/* sched.c: leases and long-poll. Queued train jobs go to workers under a lease; lease requests
 * wait (parked) until a job is queued or their wait runs out; a once-a-second tick expires leases
 * whose heartbeats stopped. Named ctl_sched.h, not sched.h: controller/ is on the include path
 * and would hide the system <sched.h> that pthread.h includes. */
#ifndef HONE_CTL_CTL_SCHED_H
#define HONE_CTL_CTL_SCHED_H

#include <jansson.h>

#include "controller.h"
#include "http.h"
#include "job_rows.h" /* ctl_live_workers, once here */

typedef struct ctl_waiter ctl_waiter; /* a parked lease request (sched.c) */

int ctl_sched_start(hone_controller *c);
void ctl_sched_stop(hone_controller *c);
/* Something may have become leasable: answer parked lease requests that can now get a job. */
void ctl_sched_kick(hone_controller *c);
/* Inside the caller's transaction: the worker holding job hands its lease back (it is shutting
 * down): the job is queued again at once, resuming from its last checkpoint, as when a lease
 * lapses; one told to stop or pause, or canceled, ends as a lapsed one would. */
int ctl_sched_release(hone_controller *c, const json_t *job);
/* Tries to lease a job to the worker: 0 with *reply set, HONE_ENOENT when nothing queued. */
int ctl_sched_try_lease(hone_controller *c, const char *worker_id, json_t **reply);
void ctl_sched_park(hone_controller *c, const char *worker_id, hone_http_res *res, int wait_s);

#endif
