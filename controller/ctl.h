/* Private header of the controller: the controller object and the helpers its files share
 * (store access, JSON helpers, logging, spec building, scheduler, AutoML driver). Not installed;
 * only the controller's own .c files include it. Everything runs on the loop thread. */
#ifndef HONE_CTL_H
#define HONE_CTL_H

#include <jansson.h>
#include <stdint.h>
#include <uv.h>

#include "controller.h"
#include "http.h"
#include "search.h"
#include "store.h"

/* One live AutoML search (job status running or paused), rebuilt from automl_events on start.
 * While busy, a thread-pool worker is inside hone_search_ask and nothing else may touch `search`:
 * requests that would feed it wait (ctl_defer), steps are noted in step_again. */
typedef struct ctl_search {
    char job_id[64];
    hone_space *space;
    hone_search *search;
    char metric[64];
    int maximize;
    int max_epochs;
    int full_epochs; /* a trial's whole budget: below it, a stop is an early stop */
    int model_based; /* bayesian / bohb: asks past the random start fit a model */
    int busy, step_again;
    int orphan;     /* dropped while busy: freed when the ask is back */
    long remaining; /* epochs_remaining as of the last time the loop could read the search */
    uv_work_t work;
    hone_ask ask;
    int ask_rc;
    struct hone_controller *c;
    struct ctl_search *next;
} ctl_search;

/* A request held until the search of job_id is idle (automl_async.c). */
typedef struct ctl_deferred {
    char job_id[64];
    hone_http_req *req;
    hone_http_res *res;
    hone_http_handler handler;
    struct ctl_deferred *next;
} ctl_deferred;

/* A worker's lease request parked until work appears or its wait runs out. */
typedef struct ctl_waiter {
    hone_controller *c;
    hone_http_res *res;
    char worker_id[64];
    uv_timer_t timer;
    struct ctl_waiter *prev, *next;
} ctl_waiter;

struct hone_controller {
    uv_loop_t *loop;
    hone_controller_config cfg;
    char *artifacts_dir;
    ctl_db *db;
    hone_http_server *http;
    uv_timer_t tick;
    int tick_open;
    ctl_search *searches;
    ctl_waiter *waiters, *waiters_tail;
    int ready;
    int closing;
    uint64_t id_state;
    uint64_t n_reports, n_leases, n_expired;
    uv_check_t batch_check; /* batch.c: commits the open report batch after each poll */
    int batch_open, check_open;
    void *pending, *pending_tail;           /* replies held until the batch commits */
    ctl_deferred *deferred, *deferred_tail; /* automl_async.c */
    int asks_inflight;
    uint64_t n_asks_offloop, n_deferred;
    void (*close_done)(void *);
    void *close_arg;
    int close_pending;
};

/* ---- store.c: wall-clock time and ids (the store itself: store.h) ---- */
double ctl_now(void);
void ctl_time_str(double t, char *buf, size_t n); /* RFC 3339 UTC */
void ctl_new_id(hone_controller *c, const char *prefix, char *buf, size_t n);

/* ---- batch.c: group commit of reports ---- */
int ctl_batch_begin(hone_controller *c);   /* opens the batch if needed, then a savepoint */
int ctl_batch_release(hone_controller *c); /* the request's changes join the batch */
void ctl_batch_undo(hone_controller *c);   /* the request's changes are dropped */
/* Holds a 200 reply (body stolen) until the batch commits. */
void ctl_batch_reply(hone_controller *c, hone_http_res *res, json_t *body);
/* Commits the batch and sends its replies (500s if the commit failed). Every writer that is not
 * a report calls it first. */
int ctl_batch_flush(hone_controller *c);

/* ---- util.c: JSON accessors and logging ---- */
const char *jstr(const json_t *o, const char *key); /* NULL unless a string */
long long jint(const json_t *o, const char *key);   /* 0 unless a number */
double jnum(const json_t *o, const char *key);      /* NAN unless a number */
json_t *jparse(const char *text);                   /* NULL for NULL or bad JSON */
char *jdump(const json_t *v);                       /* compact, sorted, 17 digits; free() */
void ctl_log(hone_controller *c, const char *level, const char *event, json_t *fields /* stolen */);
/* Answers 500 for a store failure and logs it. */
void ctl_res_store_error(hone_controller *c, hone_http_res *res);

/* ---- spec.c: the trainer spec (hone-train YAML), its keys, defaults and AutoML spaces ---- */
int ctl_network_valid(const char *network);
/* Validates spec overrides (nested or dotted) into a flat object of dotted keys. On error returns
 * HONE_EINVAL and writes the offending field ("<prefix>.train.lr") and a message. */
int ctl_spec_flatten(const json_t *in, const char *prefix, json_t **flat, char *field,
                     size_t fieldlen, char *msg, size_t msglen);
/* A key hone-train understands and users may set (so a search may sweep it). */
int ctl_spec_key_sweepable(const char *key);
/* The default spec for a network as a flat object (new reference). */
json_t *ctl_spec_defaults(const char *network);
/* Emits a flat spec as nested YAML (malloc'd). */
char *ctl_spec_yaml(const json_t *flat);
/* AutoML spaces in search/search.h JSON shape for a network: the default swept set and all. */
json_t *ctl_space_default(const char *network);
json_t *ctl_space_all(const char *network);

/* ---- auth.c: tokens and worker credentials ---- */
/* A fresh worker credential: token "<worker_id>.<secret>" to hand out once, and the SHA-256 (hex)
 * of the secret to store. */
int ctl_worker_credential_new(const char *worker_id, char *token, size_t tokenlen, char hash[65]);
/* The HTTP filter: with auth configured, admin token everywhere, enrolment token for registering,
 * worker credentials on worker routes only (checked there); 401/403 otherwise. */
int ctl_auth_filter(hone_controller *c, hone_http_req *req, hone_http_res *res);
/* Whether the request carries the admin token (never true without auth configured). */
int ctl_auth_is_admin(hone_controller *c, const hone_http_req *req);
/* The request must carry worker wid's credential: 404 (field) for an unknown worker, 401 without
 * or with a bad credential, 403 (field) for another worker's. Answers and returns non-zero. */
int ctl_auth_worker(hone_controller *c, hone_http_req *req, hone_http_res *res, const char *wid,
                    const char *field);
/* The request must carry some worker's valid credential; writes that worker's id. */
int ctl_auth_worker_any(hone_controller *c, hone_http_req *req, hone_http_res *res, char *wid,
                        size_t widlen);

/* ---- report_check.c ---- */
/* Checks a report's metrics object: known names only, numbers (or null) in each one's natural
 * range. On refusal writes the field ("metrics.val_accuracy") and a message. */
int ctl_report_metrics_check(const json_t *metrics, char *field, size_t fieldlen, char *msg,
                             size_t msglen);

/* ---- routes_*.c ---- */
int ctl_routes_datasets(hone_controller *c);
json_t *ctl_dataset_json(const json_t *row);
json_t *ctl_experiment_json(const json_t *row);
int ctl_routes_experiments(hone_controller *c);
int ctl_routes_jobs(hone_controller *c);
int ctl_routes_workers(hone_controller *c);
int ctl_routes_artifacts(hone_controller *c);

/* ---- dataset_check.c ---- */
/* Resolves path inside one of roots (realpath, no '..' component, no symlink escape); writes the
 * resolved path. HONE_EINVAL with msg on refusal. */
int ctl_path_confine(char *const *roots, int nroots, const char *path, char *resolved, size_t n,
                     char *msg, size_t msglen);
/* Checks the dataset files and returns their stats (new reference). */
int ctl_dataset_inspect(const char *format, const char *dir, json_t **stats, char *msg,
                        size_t msglen);

/* ---- jobs.c ---- */
int ctl_job_row(hone_controller *c, const char *id, json_t **row);
json_t *ctl_job_json(hone_controller *c, const json_t *row); /* the API view */
/* Creates a job from an experiment row (inside the caller's transaction). */
int ctl_job_create(hone_controller *c, const json_t *exp, const char *action, const json_t *specs,
                   const char *name, char *id_out, size_t idlen, char *field, size_t fieldlen,
                   char *msg, size_t msglen);
/* Resolved flat spec of a job: network defaults < experiment specs < job specs < trial config. */
int ctl_job_spec(hone_controller *c, const json_t *job, json_t **flat);
/* The job's artifact folder (malloc'd). */
char *ctl_job_dir(hone_controller *c, const char *job_id);
/* Ends a train job (inside the caller's transaction): complete, or lease lost after stop/pause. */
int ctl_job_finish(hone_controller *c, const json_t *job, const char *status, const char *log_tail,
                   const json_t *final);

/* ---- sched.c: leases and long-poll ---- */
int ctl_sched_start(hone_controller *c);
void ctl_sched_stop(hone_controller *c);
/* Something may have become leasable: answer parked lease requests that can now get a job. */
void ctl_sched_kick(hone_controller *c);
/* Tries to lease a job to the worker: 0 with *reply set, HONE_ENOENT when nothing queued. */
int ctl_sched_try_lease(hone_controller *c, const char *worker_id, json_t **reply);
void ctl_sched_park(hone_controller *c, const char *worker_id, hone_http_res *res, int wait_s);
int ctl_live_workers(hone_controller *c);

/* ---- automl.c: the driver tying search/ to jobs ---- */
/* The effective space of an experiment's AutoML settings (defaults +/- add/remove, or
 * automl_hyperparameters); HONE_EINVAL with the field and message when it is not valid. */
int ctl_automl_space_json(const char *network, const json_t *settings, json_t **space, char *field,
                          size_t fieldlen, char *msg, size_t msglen);
ctl_search *ctl_automl_find(hone_controller *c, const char *job_id);
/* Inside the caller's transaction: fixes a new automl job's space and search options (stored in
 * jobs.automl, from which the search is built and rebuilt) and marks it running. Then, after the
 * commit, call ctl_automl_step. */
int ctl_automl_start(hone_controller *c, const char *job_id, char *msg, size_t msglen);
/* Asks the search for work until it waits; creates / requeues trials; finishes the job on DONE. */
int ctl_automl_step(hone_controller *c, const char *job_id);
/* Inside the caller's transaction: feed a trial's metric, log the event (fresh: first report of
 * that epoch; a repeat only fetches the same decision), get the decision. */
int ctl_automl_report(hone_controller *c, const json_t *trial, int epoch, double metric, int fresh,
                      hone_decision *dec);
int ctl_automl_log_new(hone_controller *c, const char *job_id, int trial, int epochs,
                       const double *values, int np);
int ctl_automl_log_resume(hone_controller *c, const char *job_id, int trial, int epochs);
int ctl_automl_end(hone_controller *c, const json_t *trial, int failed);
/* Rebuilds every running/paused AutoML search from automl_events (on start, after a failure). */
int ctl_automl_rebuild_all(hone_controller *c);
int ctl_automl_rebuild(hone_controller *c, const char *job_id);
/* Forgets the live search (freed now, or when its ask is back if busy). */
void ctl_automl_drop(hone_controller *c, const char *job_id);
void ctl_automl_search_free(ctl_search *s);
/* Epochs still to run (cached while the search is busy). */
long ctl_automl_remaining(ctl_search *s);
/* automl_step.c: applies one answer of the search (see there); 1: ask again. */
int ctl_automl_apply(hone_controller *c, ctl_search *s, const json_t *job, const hone_ask *a,
                     int *dropped);

/* ---- automl_async.c: model-based asks on the thread pool ---- */
/* Whether the next ask of s should run on the thread pool (a model fit is likely). */
int ctl_automl_offload(hone_controller *c, ctl_search *s);
/* Marks s busy and runs hone_search_ask on the pool; the answer is applied on the loop, then
 * the requests held for the job run, then the search is stepped again if asked to. */
void ctl_automl_ask_async(hone_controller *c, ctl_search *s);
/* Whether the search of AutoML job job_id (may be NULL) is busy. */
int ctl_automl_busy(hone_controller *c, const char *job_id);
/* Holds a request until the job's search is idle; then handler(req, res, c) runs again. */
void ctl_defer(hone_controller *c, const char *job_id, hone_http_req *req, hone_http_res *res,
               hone_http_handler handler);
/* Answers held requests 503 (shutdown). */
void ctl_defer_close(hone_controller *c);
/* server.c: one of the things hone_controller_close waits for is done. */
void ctl_close_step(hone_controller *c);
json_t *ctl_automl_status(hone_controller *c, const json_t *job);
void ctl_automl_free_all(hone_controller *c);

#endif
