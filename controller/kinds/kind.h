/* kinds/kind.h: what one job kind does at create, lease, report, control and finish, as a row of
 * hooks; one file per kind (train.c, automl.c, convert.c, action.c) and one table (kinds.c). The
 * lifecycle (jobs.c, sched.c, routes_jobs.c, routes_workers.c) calls through a row and never names
 * a kind; a kind depends only downward (store, spec, util, another kind), never on routes or on
 * the lifecycle that calls it. Adding a kind is one new file plus one table row. */
#ifndef HONE_CTL_KIND_H
#define HONE_CTL_KIND_H

#include <jansson.h>
#include <stddef.h>

#include "controller.h"
#include "report_check.h"
#include "wire.h"

typedef struct ctl_kind {
    hone_kind id;
    int user_creates; /* POST /experiments/{id}/jobs may name it */
    int takes_model;  /* its request names a parent model (parent_job_id, dataset_id, folder) */
    int has_trials;   /* its metrics are its trials' (GET /jobs/{id}/metrics) */
    int spread_gpus;  /* leased to the parked worker whose GPU runs the fewest leases */
    ctl_report_form report; /* what its worker's reports carry */
    /* Inside the caller's transaction: a queued job of experiment exp from the request body.
     * HONE_EINVAL with *http (422 or 409), field and msg filled when it cannot be taken. */
    int (*create)(hone_controller *c, const json_t *exp, const json_t *body, const char *owner,
                  char *id_out, size_t idlen, int *http, char *field, size_t fieldlen, char *msg,
                  size_t msglen);
    /* After the commit of a create (NULL: the job waits for a lease). */
    void (*created)(hone_controller *c, const char *id);
    /* The spec a lease carries, resolved (NULL hook: none). */
    int (*lease_spec)(hone_controller *c, const json_t *job, json_t **flat);
    /* The "job" object of its lease reply (new reference); flat: lease_spec's or NULL. */
    json_t *(*lease_job)(hone_controller *c, const json_t *job, const json_t *flat);
    /* Inside the caller's transaction: a leased job ends (complete, or its lease lost after a
     * stop, pause or cancel). */
    int (*finish)(hone_controller *c, const json_t *job, const char *status, const char *log_tail,
                  const json_t *final);
    /* Inside the caller's transaction: cancel the job (not yet over). */
    int (*cancel)(hone_controller *c, const json_t *job);
    /* Inside the caller's transaction: pause a running or queued job, resume a paused one (NULL:
     * this kind cannot pause; it is canceled instead). */
    int (*pause)(hone_controller *c, const json_t *job);
    int (*resume)(hone_controller *c, const json_t *job);
    /* After the commit of a cancel, pause or resume (verb). */
    void (*controlled)(hone_controller *c, const json_t *job, const char *verb);
    /* The spec its trainer runs, resolved (GET /jobs/{id}'s resolved_spec; NULL hook: none). */
    int (*resolved_spec)(hone_controller *c, const json_t *job, json_t **flat);
    /* Its members of the job's API view. */
    void (*view)(hone_controller *c, json_t *o, const json_t *row);
    /* A job ended outside its own hooks (its convert failed): forget what is kept in memory. */
    void (*forget)(hone_controller *c, const char *id);
    /* A kind whose jobs have trials (train jobs with it as parent): a trial's whole budget in
     * epochs (0: unknown), a trial's end (inside the caller's transaction; failed: ranks as
     * failed), and a step of the parent after something happened to a trial. */
    int (*trial_budget)(hone_controller *c, const char *parent_id);
    int (*trial_end)(hone_controller *c, const json_t *trial, int failed);
    void (*trial_step)(hone_controller *c, const char *parent_id);
} ctl_kind;

/* The row of a kind; NULL out of range. */
const ctl_kind *ctl_kind_get(hone_kind k);
/* The row of a job row's action column; a row with no hooks for an unknown name (never NULL). */
const ctl_kind *ctl_kind_of(const json_t *job);
/* The names POST /experiments/{id}/jobs takes, NULL-terminated, in hone_kind order. */
const char *const *ctl_kind_create_names(void);

/* The rows, one per kind file. */
extern const ctl_kind ctl_kind_train, ctl_kind_automl, ctl_kind_convert, ctl_kind_evaluate,
    ctl_kind_inference, ctl_kind_export;

/* Shared by rows: a job that is not over is canceled (queued or paused: ended now, *ended = 1)
 * or told to (running: through its heartbeat and report replies). */
int ctl_kind_cancel_plain(hone_controller *c, const json_t *job, int *ended);

#endif
