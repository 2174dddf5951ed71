/* The controller object: struct hone_controller, which server.c creates and takes down, and whose
 * members the controller's .c files reach into (the store, the HTTP server, the searches, the
 * parked lease requests, the report batch, the held requests). A file includes this header only
 * when it reaches into the object, and the headers of what it uses beside it (store.h, util.h,
 * automl.h, ctl_sched.h, ...): the members' types are only named here. Not installed. Everything
 * runs on the loop thread. */
#ifndef HONE_CTL_H
#define HONE_CTL_H

#include <stdint.h>
#include <uv.h>

#include "controller.h"

struct hone_controller {
    uv_loop_t *loop;
    hone_controller_config cfg;
    char *artifacts_dir;
    struct ctl_db *db;             /* store.h: the store */
    struct hone_http_server *http; /* http.h */
    uv_timer_t tick;               /* sched.c: lease expiry, once a second */
    int tick_open;
    struct ctl_search *searches; /* automl.h: the live searches */
    /* What the kinds (kinds/) ask of the layers above them, set by server.c before anything
     * runs: a kind never calls the scheduler, the report batch or the server by name. */
    struct {
        void (*kick)(struct hone_controller *c);       /* work became leasable (ctl_sched_kick) */
        int (*flush)(struct hone_controller *c);       /* commit the open report batch */
        void (*close_step)(struct hone_controller *c); /* an off-loop ask ended while closing */
    } kind_up;
    struct ctl_waiter *waiters, *waiters_tail; /* sched.c: parked lease requests */
    int n_waiters;                             /* how many are parked (GET /metrics) */
    int ready;
    int closing;
    uint64_t id_state;
    uint64_t n_reports, n_leases, n_expired, n_released;
    uint64_t n_file_reads, n_file_bytes; /* routes_transfer.c: dataset file answers, bytes */
    uv_check_t batch_check; /* batch.c: commits the open report batch after each poll */
    int batch_open, check_open;
    void *pending, *pending_tail;                  /* replies held until the batch commits */
    struct ctl_deferred *deferred, *deferred_tail; /* automl_async.c */
    int asks_inflight;
    uint64_t n_asks_offloop, n_deferred;
    void (*close_done)(void *);
    void *close_arg;
    int close_pending;
    struct ctl_stream *streams; /* stream.c: open metrics streams */
    int n_streams;
    char admin_key_hash[65];   /* auth.c: SHA-256 (hex) of cfg.auth_token; "" with no auth */
    struct json_t *walks;      /* routes_transfer.c: users' file-list walks in flight, by owner */
    struct ctl_checkq *checkq; /* checkq.h: users' dataset checks, on threads of their own */
    /* shares.c: the job queue's virtual clock, and the virtual time each owner served ahead of
     * it has reached (JSON {owner: time}) */
    double fair_vclock;
    struct json_t *fair_finish;
    struct json_t *downloads; /* routes_artifacts.c: users' downloads under way, by owner */
};

/* server.c: one of the things hone_controller_close waits for is done. */
void ctl_close_step(hone_controller *c);

#endif
