/* kinds/automl.c, automl_step.c, automl_async.c: the AutoML kind, its driver between search/ and
 * jobs. One live search per running or paused AutoML job, rebuilt from its automl_events; asks turn
 * into trials (queued train jobs), reports and trial ends feed it, model-based asks run on the
 * thread pool. */
#ifndef HONE_CTL_AUTOML_H
#define HONE_CTL_AUTOML_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "controller.h"
#include "ctl_spec.h"
#include "http.h"
#include "search.h"

typedef struct ctl_budget ctl_budget; /* a budgeted search's governor (automl_budget.c) */

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
    int max_trials;
    int max_failed;  /* automl_max_failed_trials: failed trials that end the search (0: auto) */
    int failed_seen; /* the search's trials_failed when the limit was last checked */
    int model_based; /* bayesian / bohb: asks past the random start fit a model */
    int busy, step_again;
    int orphan;          /* dropped while busy: freed when the ask is back */
    long remaining;      /* epochs_remaining as of the last time the loop could read the search */
    double gpu_util_sum; /* GPU utilisation samples (% per heartbeat) while the search is live */
    long gpu_util_n;
    ctl_budget *budget; /* automl_budget_minutes: its governor; NULL without a budget */
    uv_work_t work;
    hone_ask ask;
    int ask_rc;
    struct hone_controller *c;
    struct ctl_search *next;
} ctl_search;

typedef struct ctl_deferred ctl_deferred; /* a request held for a busy search (automl_async.c) */
/* The controller's deferred AutoML work (c->asks, automl_async.c): held requests and off-loop
 * asks. server.c makes it before anything runs and frees it last. */
typedef struct ctl_asks ctl_asks;
ctl_asks *ctl_asks_new(void);
void ctl_asks_free(ctl_asks *a);
int ctl_asks_inflight(const ctl_asks *a); /* asks on the thread pool now (0 for NULL) */
void ctl_asks_stats(const ctl_asks *a, uint64_t *offloop, uint64_t *deferred);

/* ---- automl.c ---- */
/* The effective space of an experiment's AutoML settings (defaults +/- add/remove, or
 * automl_hyperparameters; the defaults' batch and lr ranges sized by z, NULL: not); HONE_EINVAL
 * with the field and message when it is not valid. */
int ctl_automl_space_json(const char *network, const ctl_sizing *z, const json_t *settings,
                          json_t **space, char *field, size_t fieldlen, char *msg, size_t msglen);
ctl_search *ctl_automl_find(hone_controller *c, const char *job_id);
/* One worker's heartbeat telemetry (the mean utilisation of its GPUs, in %) counts toward every
 * live search's gpu_util_mean: a GPU idle between trials counts as idle. In memory only (a
 * restarted controller starts the mean again). */
void ctl_automl_gpu_sample(hone_controller *c, double util);
/* Inside the caller's transaction: fixes a new automl job's space and search options (stored in
 * jobs.automl, from which the search is built and rebuilt) and marks it running. Then, after the
 * commit, call ctl_automl_step. */
int ctl_automl_start(hone_controller *c, const char *job_id, char *msg, size_t msglen);
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
void ctl_automl_free_all(hone_controller *c);
/* Epochs still to run (cached while the search is busy). */
long ctl_automl_remaining(ctl_search *s);
/* The failed trials that end a search: max_failed (automl_max_failed_trials), or with 0 (auto) 3
 * while no trial has reported a metric and half of max_trials (at least 3) once one has: a search
 * that cannot work ends within a few trials, one where some configurations fail goes on. */
int ctl_automl_failed_limit(int max_failed, int max_trials, int any_metric);

/* ---- automl_step.c ---- */
/* Asks the search for work until it waits; creates / requeues trials; finishes the job on DONE. */
int ctl_automl_step(hone_controller *c, const char *job_id);
/* Applies one answer of the search (see there); 1: ask again. */
int ctl_automl_apply(hone_controller *c, ctl_search *s, const json_t *job, const hone_ask *a,
                     int *dropped);
/* The "automl" block of an AutoML job's API view: trials, epochs, ETA, best so far. */
json_t *ctl_automl_status(hone_controller *c, const json_t *job);

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

/* ---- automl_budget.c: the governor of a search with a time budget ---- */
/* At start: with automl_budget_minutes in settings, the budget (opts.budget_seconds) and, with
 * automl_epoch_seconds (else history_s > 0: the experiment's earlier jobs' mean trainer seconds
 * per epoch), the planner's sizes (R, eta, epoch_multiplier or max_epochs, over what
 * opts holds as the largest trial) written into opts; msg: a line for the search's log ("" when
 * there is no budget). */
int ctl_budget_plan_opts(const json_t *settings, double history_s, json_t *opts, char *msg,
                         size_t msglen);
/* The governor of a search whose opts have a budget, else NULL. started: the job's start (the
 * budget's clock). */
ctl_budget *ctl_budget_new(const json_t *opts, double started);
void ctl_budget_free(ctl_budget *b);
/* A stored event of the search, replayed: the estimate learnt again from its stored time, and the
 * budget's stops and drops counted for its note (a repeated report keeps its stop). */
void ctl_budget_replay(ctl_budget *b, const json_t *ev);
/* A trial launched (new or resumed) at now: its first report times its start-up. */
void ctl_budget_launched(ctl_search *s, int trial, double now);
/* After the search answered *dec to a report: learns the epoch time (fresh reports) and turns a
 * CONTINUE into STOP when the trial cannot reach its target before the budget's end; returns 1
 * then (*target: the epoch it was training towards), for the caller to store with the report. */
int ctl_budget_report(ctl_search *s, int trial, int epoch, int fresh, double now,
                      hone_decision *dec, int *target);
/* A trial's process ended at now: the time since its last report (test pass, save). */
void ctl_budget_ended(ctl_search *s, int trial, double now);
/* Before each ask: drops promotions that cannot finish (stored as events) and sets *hold when
 * the next new trial cannot: then nothing more launches, and the search ends with its running
 * trials. */
int ctl_budget_gate(hone_controller *c, ctl_search *s, int *hold);
/* What the budget cut, in a sentence; "" without a budget. */
void ctl_budget_note(const ctl_search *s, double now, int search_done, char *buf, size_t len);
/* The ended search's "budget" block of its result (NULL without a budget). */
json_t *ctl_budget_result(const ctl_search *s, double now, int search_done);
/* The budget_* fields of an AutoML job's status (s NULL: the search has ended). */
void ctl_budget_status(const ctl_search *s, const json_t *job, const json_t *opts, json_t *o);

#endif
