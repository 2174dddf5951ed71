/* The controller object: struct hone_controller, which server.c creates and takes down: the loop,
 * the config, the store, the HTTP server and the scheduler's state, and one opaque handle per
 * subsystem (the report batch, the streams, the transfer walks, the downloads, the fair-share
 * clock, the dataset check queue), each declared in its own header and reached only through its
 * functions. A file includes this header only when it reaches into the object, and the headers of
 * what it uses beside it (store.h, util.h, automl.h, ctl_sched.h, ...): the members' types are
 * only named here. Not installed. Everything runs on the loop thread. */
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
    int kick_on_tick; /* sched.c: a lease attempt waits for a busy search; try at the next tick */
    void (*on_tick)(hone_controller *c); /* server.c: what else runs each tick (the streams) */
    struct ctl_search *searches;         /* automl.h: the live searches */
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
    struct ctl_batch *batch; /* batch.h: the report batch, its held replies */
    struct ctl_asks *asks;   /* automl.h: requests held for busy searches, asks off the loop */
    void (*close_done)(void *);
    void *close_arg;
    int close_pending;
    struct ctl_streams *streams;     /* stream.h: open metrics and logs streams */
    char admin_key_hash[65];         /* auth.c: SHA-256 (hex) of cfg.auth_token; "" with no auth */
    struct ctl_transfer *transfer;   /* routes_transfer.h: file-list walks, file read counts */
    struct ctl_checkq *checkq;       /* checkq.h: users' dataset checks, on threads of their own */
    struct ctl_fair *fair;           /* shares.h: the job queue's fair-share clock */
    struct ctl_downloads *downloads; /* routes_artifacts.h: users' downloads under way */
};

/* One of the things hone_controller_close (server.c) waits for is done; the last one calls its
 * done. Defined in util.c, below everything that waits, so that no subsystem calls server.c. */
void ctl_close_step(hone_controller *c);

#endif
