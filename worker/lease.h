/* lease: what a runner needs of the worker while it runs one lease: the worker's state, its log,
 * and what is said to the controller about the job (post, complete, the job the heartbeat keeps
 * leased, cancel and stop). Below every runner and the daemon loop (worker.c); calls none of them.
 * Not part of the public API. */
#ifndef HONE_WORKER_LEASE_H
#define HONE_WORKER_LEASE_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include "args.h"
#include "rest.h"
#include "trun.h"

typedef struct worker_nvml worker_nvml;

typedef struct hone_worker {
    const hone_worker_opts *o;
    char name[256];
    char work_dir[4096];
    char trainer[4096 + 256];
    char packer[4096 + 512];   /* hone-pack, for convert jobs */
    int http_storage;          /* --storage http: datasets downloaded, outputs uploaded */
    char cache_dir[4096 + 16]; /* http storage's download cache (absolute) */
    volatile sig_atomic_t *stop;

    pthread_mutex_t mu; /* guards id, token, job_id, registered */
    char id[128];       /* worker id from the controller ("" until registered) */
    char token[256];    /* this worker's credential, issued with the id */
    char job_id[128];   /* the job being run ("" when idle) */
    unsigned job_gen;   /* counts worker_set_job calls: which lease a heartbeat spoke of */
    int heartbeat_s;
    atomic_int cancel;  /* the controller asked to stop job_id */
    atomic_int quit_hb; /* tells the heartbeat thread to end */
    unsigned int seed;  /* jitter for backoff (per worker, not global) */

    hone_rest *rest;          /* main thread's handle */
    hone_rest *hb_rest;       /* heartbeat thread's handle */
    worker_nvml *nvml;        /* GPU telemetry for heartbeats (NULL: none; nvml.c) */
    int resident;             /* train jobs go to server (opts.resident resolved) */
    hone_trun_server *server; /* the resident trainer, NULL until a job starts it */
    hone_trun_sock *sock;     /* --trainer-socket: the shared trainer server (NULL: none) */
} hone_worker;

/* Logs one line to stderr: "hone-worker[name] <text>". */
void worker_log(hone_worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* mkdir -p of path (parent_only: of the folder holding it). HONE_EIO, HONE_EINVAL for a path of
 * 4096 bytes or more. */
int worker_mkdirs(const char *path, int parent_only);
/* Sleeps about ms milliseconds, waking early when *w->stop is set. Returns nonzero when stopping.
 */
int worker_sleep(hone_worker *w, int ms);
/* Next backoff delay in ms: doubles from 250 ms up to 15 s, with +-25% jitter. */
int worker_backoff(hone_worker *w, int *delay_ms);

/* Copies the current worker id into buf under the lock, and makes rest (the calling thread's
 * handle) send this worker's credential. */
void worker_id_auth(hone_worker *w, hone_rest *rest, char *buf, size_t len);

/* POSTs body to path until an HTTP answer comes, backing off while the controller is away;
 * gives up (HONE_EIO) only when the worker is stopping and `patient` is 0. */
int worker_post(hone_worker *w, const char *path, json_t *body, int patient, hone_rest_resp *resp);
/* completes the job with status, res's log tail and its "done" line as final. */
void worker_job_complete(hone_worker *w, const char *job_id, const char *status,
                         const hone_trun_result *res);
/* the job the heartbeat keeps leased (NULL: none); clears the cancel flag. */
void worker_set_job(hone_worker *w, const char *id);
/* Whether the worker is shutting down (its stop flag), and whether the controller canceled the
 * current job (the heartbeat's answer; cleared by worker_set_job). */
int worker_stopping(const hone_worker *w);
int worker_canceled(hone_worker *w);

#endif
