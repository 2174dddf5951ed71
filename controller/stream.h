/* stream.c: the live metrics and logs of a job as Server-Sent Events
 * (GET /api/v1/jobs/{id}/metrics/stream and /logs/stream). Each stored epoch or log line (of the
 * job, and of every trial of an AutoML job) is one event whose id is its row's place in its table
 * (metrics, job_logs), so a client that reconnects with Last-Event-ID gets every later row once;
 * a final "end" event when the job is over. Loop thread only. */
#ifndef HONE_CTL_STREAM_H
#define HONE_CTL_STREAM_H

#include "controller.h"

/* The open streams: c->streams, made by server.c before the routes, freed after they end. */
typedef struct ctl_streams ctl_streams;
ctl_streams *ctl_streams_new(void);
void ctl_streams_free(ctl_streams *set); /* after ctl_streams_close */

int ctl_routes_stream(hone_controller *c);
/* After the report batch commits: the new epochs and lines go out to every open stream. */
void ctl_streams_pump(hone_controller *c);
/* Once a second (the scheduler tick): new rows, ends of jobs, keep-alive comments. */
void ctl_streams_tick(hone_controller *c);
/* Shutdown: every stream ends (without "end": its client reconnects and resumes). */
void ctl_streams_close(hone_controller *c);

#endif
