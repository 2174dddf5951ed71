/* trun: running a trainer (or packer) and relaying its lines: a child per run (trun.c), a resident
 * `hone-train --serve` on pipes, or a shared server over a unix socket (trun_socket.c). Knows
 * nothing of leases or of the controller: hooks carry each line out and a decision back. */
#ifndef HONE_WORKER_TRUN_H
#define HONE_WORKER_TRUN_H

#include <jansson.h>

#include "hone.h"

typedef enum {
    HONE_WDECISION_CONTINUE = 0,
    HONE_WDECISION_STOP = 1,
    HONE_WDECISION_PAUSE = 2,
} hone_wdecision;

/* Parses "continue" / "stop" / "pause"; anything else reads as continue. */
hone_wdecision hone_wdecision_parse(const char *s);

/* ---------------------------------------------------------------- trainer runs (trun.c) */

typedef struct hone_trun_hooks {
    /* Each epoch line ({"epoch": N, ...}); the line is borrowed. trun adds "log": an array of
     * the stderr lines seen since the previous epoch line (the newest 50, within 8 KiB). Returns
     * what to do next. */
    hone_wdecision (*on_epoch)(void *arg, int epoch, json_t *line);
    /* Other JSON lines (e.g. {"event": "done", ...}); borrowed. May be NULL. */
    void (*on_event)(void *arg, json_t *line);
    /* Polled about every 200 ms; nonzero stops the trainer now (cancel, shutdown). May be NULL. */
    int (*should_stop)(void *arg);
    void *arg;
} hone_trun_hooks;

typedef enum {
    HONE_TRUN_DONE = 0,    /* exited 0 on its own */
    HONE_TRUN_FAILED = 1,  /* exited non-zero or died of a signal we did not send */
    HONE_TRUN_STOPPED = 2, /* a report answered stop */
    HONE_TRUN_PAUSED = 3,  /* a report answered pause (the checkpoint of that epoch exists) */
    HONE_TRUN_ABORTED = 4, /* should_stop said so */
} hone_trun_outcome;

const char *hone_trun_outcome_name(hone_trun_outcome o);

typedef struct hone_trun_opts {
    double grace_s; /* SIGTERM, then SIGKILL after this many seconds (0 = 10) */
    /* The epoch after which the trainer exits by itself (0 = unknown): a stop or pause answered
     * on that epoch lets it finish (and print its test accuracy) instead of killing it. */
    int last_epoch;
    int log_lines; /* stderr lines kept for log_tail (0 = 50) */
    /* hone_trun_run_resident: a server that writes nothing (no line, not even its
     * {"event":"accepted"} or {"event":"alive"}) for this many seconds is killed (0 = never) */
    double silence_s;
} hone_trun_opts;

typedef struct hone_trun_result {
    hone_trun_outcome outcome;
    int exit_code;   /* exit status, or 128 + signal */
    int last_epoch;  /* last epoch line seen (0 = none) */
    int epochs_seen; /* number of epoch lines */
    json_t *done;    /* the {"event":"done"} line, or NULL (owned) */
    char *log_tail;  /* the last stderr lines, '\n'-joined (owned, never NULL after a run) */
} hone_trun_result;

/* Runs argv[0] (searched in PATH when it has no '/') in its own process group, reads its stdout
 * line by line and its stderr into a ring of lines, and calls the hooks. Blocks until the child
 * is gone. Returns HONE_EIO when it could not be started (res->log_tail says why). */
int hone_trun_run(char *const argv[], const hone_trun_opts *o, const hone_trun_hooks *h,
                  hone_trun_result *res);
void hone_trun_result_clear(hone_trun_result *res);

/* A resident trainer: one `hone-train --serve` kept between jobs (train/main.c says its
 * protocol). hone_trun_run_resident runs argv (argv[0]: hone-train; the rest: one job's
 * arguments) on *srv, starting it when *srv is NULL or has died, with the same hooks, options and
 * result as hone_trun_run: a stop or abort sends the server's group SIGTERM, which ends the job
 * (exit code 143) and not the server; SIGKILL after the grace ends the server too. The job ends
 * at the server's {"event":"exit","code"} line. When the server dies mid-job (crash, kill -9),
 * the job is FAILED with 128 + the signal, as a hone-train child's would be, and *srv becomes
 * NULL: the next job starts a new one; the same after an exit line with "restart": true. */
typedef struct hone_trun_server hone_trun_server;
int hone_trun_run_resident(hone_trun_server **srv, char *const argv[], const hone_trun_opts *o,
                           const hone_trun_hooks *h, hone_trun_result *res);
/* Closes the server's stdin (it exits after its job), waits up to 2 s, then kills it. */
void hone_trun_server_free(hone_trun_server *s);
/* The server's process id (its process group's too). */
int hone_trun_server_pid(const hone_trun_server *s);

/* A shared trainer server (trun_socket.c): one `hone-train --serve --listen PATH` that several
 * workers reach over the unix socket PATH, each connection running one job at a time (train/main.c
 * says its protocol), so that the trials of workers sharing a GPU overlap on it. The server sees
 * the GPUs of the worker that started it (its CUDA_VISIBLE_DEVICES): workers that share a socket
 * must share a GPU. hone_trun_sock_new names the socket and the log file of a server this worker
 * starts; nothing is connected yet. */
typedef struct hone_trun_sock hone_trun_sock;
hone_trun_sock *hone_trun_sock_new(const char *path, const char *log_path);
/* Runs argv (argv[0]: hone-train; the rest: one job's arguments) on the server at the socket,
 * with the same hooks, options and result as hone_trun_run_resident. It connects when not yet
 * connected (the connection is kept between jobs); when nobody listens it starts
 * `argv[0] --serve --listen PATH --idle-exit 60` detached (under flock(PATH.lock): workers starting
 * at once start one), stdio to log_path. A stop or abort writes {"cancel":true} (the job ends with
 * exit code 143); past the grace the connection is closed (which cancels the job too) and the
 * server left alone. A connection that ends mid-job fails the job (as a dead trainer's); a server
 * silent for silence_s is killed (SIGKILL to the pid of its hello) and the job failed. */
int hone_trun_run_socket(hone_trun_sock *c, char *const argv[], const hone_trun_opts *o,
                         const hone_trun_hooks *h, hone_trun_result *res);
/* The connected server's pid (from its hello), -1 when not connected. */
int hone_trun_sock_pid(const hone_trun_sock *c);
/* How many servers this client has started (it starts one only when nobody listens). */
int hone_trun_sock_started(const hone_trun_sock *c);
/* Closes the connection (the server cancels a job it still runs, and stays); frees. */
void hone_trun_sock_free(hone_trun_sock *c);

#endif
