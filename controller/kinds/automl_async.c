/* Model-based AutoML asks (GP fits of Bayesian / BOHB, tens of ms and growing with the trials) run
 * on libuv's thread pool so the loop never blocks. While one runs its search is busy: requests
 * that would feed the search (reports, completes, trial verbs) are held here in arrival order and
 * run again once the answer has been applied and logged, so automl_events keeps the order in which
 * the search saw its events and a replay after a crash rebuilds the same state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "automl.h"
#include "ctl.h"
#include "job_rows.h"
#include "util.h"

/* A request held until the search of job_id is idle. */
struct ctl_deferred {
    char job_id[64];
    hone_http_req *req;
    hone_http_res *res;
    hone_http_handler handler;
    struct ctl_deferred *next;
};

/* The controller's deferred AutoML work (c->asks): the held requests in arrival order, and the
 * asks on the thread pool. */
struct ctl_asks {
    ctl_deferred *head, *tail;
    int inflight;                   /* asks on the thread pool now */
    uint64_t n_offloop, n_deferred; /* since start: asks run off the loop, requests held */
};

ctl_asks *ctl_asks_new(void)
{
    return hone_xcalloc(1, sizeof(ctl_asks));
}

void ctl_asks_free(ctl_asks *a)
{
    free(a); /* ctl_defer_close answered every held request; no ask is in flight */
}

int ctl_asks_inflight(const ctl_asks *a)
{
    return a ? a->inflight : 0;
}

void ctl_asks_stats(const ctl_asks *a, uint64_t *offloop, uint64_t *deferred)
{
    *offloop = a ? a->n_offloop : 0;
    *deferred = a ? a->n_deferred : 0;
}

int ctl_automl_offload(hone_controller *c, ctl_search *s)
{
    if (!s->model_based || c->closing)
        return 0;
    /* Until the random start is over an ask draws at random: cheap, answer it right away. */
    hone_bo_opts bo;
    hone_search_progress p;
    hone_bo_opts_default(&bo);
    hone_search_progress_get(s->search, &p);
    return p.trials_finished + p.trials_failed >= bo.n_init;
}

int ctl_automl_busy(hone_controller *c, const char *job_id)
{
    ctl_search *s = job_id ? ctl_automl_find(c, job_id) : NULL;
    return s && s->busy;
}

/* Takes d (whose predecessor is prev, NULL for the head) out of the held list. */
static void asks_unlink(ctl_asks *a, ctl_deferred *prev, ctl_deferred *d)
{
    if (prev)
        prev->next = d->next;
    else
        a->head = d->next;
    if (a->tail == d)
        a->tail = prev;
}

static void deferred_abort(hone_http_res *res, void *ud)
{
    ctl_asks *a = ((hone_controller *)ud)->asks;
    ctl_deferred *prev = NULL;
    for (ctl_deferred *d = a->head; d; prev = d, d = d->next)
        if (d->res == res) {
            asks_unlink(a, prev, d);
            free(d);
            return;
        }
}

void ctl_defer(hone_controller *c, const char *job_id, hone_http_req *req, hone_http_res *res,
               hone_http_handler handler)
{
    ctl_deferred *d = hone_xcalloc(1, sizeof *d);
    snprintf(d->job_id, sizeof d->job_id, "%s", job_id);
    d->req = req;
    d->res = res;
    d->handler = handler;
    ctl_asks *a = c->asks;
    if (a->tail)
        a->tail->next = d;
    else
        a->head = d;
    a->tail = d;
    a->n_deferred++;
    hone_http_res_on_abort(res, deferred_abort, c);
}

void ctl_defer_close(hone_controller *c)
{
    ctl_asks *a = c->asks;
    while (a && a->head) {
        ctl_deferred *d = a->head;
        a->head = d->next;
        hone_http_res_on_abort(d->res, NULL, NULL);
        hone_http_res_error(d->res, 503, NULL, "controller shutting down");
        free(d);
    }
    if (a)
        a->tail = NULL;
}

/* Runs the requests held for job_id, oldest first, for as long as its search stays idle (one of
 * them may start the next ask: the rest keep waiting, still ahead of newer arrivals). */
static void run_deferred(hone_controller *c, const char *job_id)
{
    for (;;) {
        if (ctl_automl_busy(c, job_id))
            return;
        ctl_asks *a = c->asks;
        ctl_deferred *d = a->head, *prev = NULL;
        while (d && strcmp(d->job_id, job_id) != 0) {
            prev = d;
            d = d->next;
        }
        if (!d)
            return;
        asks_unlink(a, prev, d);
        hone_http_res_on_abort(d->res, NULL, NULL);
        hone_http_req *req = d->req;
        hone_http_res *res = d->res;
        hone_http_handler h = d->handler;
        free(d);
        if (strcmp(hone_http_req_route(req), "/api/v1/jobs/{id}/report") != 0)
            c->kind_up.flush(c); /* what the server's filter does for every other writer */
        h(req, res, c);
    }
}

static void ask_work(uv_work_t *w)
{
    ctl_search *s = w->data;
    s->ask_rc = hone_search_ask(s->search, &s->ask);
}

static void ask_done(uv_work_t *w, int status)
{
    ctl_search *s = w->data;
    hone_controller *c = s->c;
    char job_id[64];
    json_t *job = NULL;
    int made = 0, again;
    snprintf(job_id, sizeof job_id, "%s", s->job_id);
    s->busy = 0;
    c->asks->inflight--;
    if (s->orphan) { /* dropped or rebuilt meanwhile: its answer was never logged, forget it */
        ctl_automl_search_free(s);
        s = NULL;
    }
    if (c->closing) {
        if (s)
            ctl_automl_remaining(s);
        c->kind_up.close_step(c);
        return;
    }
    if (!s) {
        run_deferred(c, job_id);
        ctl_automl_step(c, job_id);
        return;
    }
    c->kind_up.flush(c); /* step_new opens its own transaction */
    again = s->step_again;
    s->step_again = 0;
    if (status != 0 || s->ask_rc != HONE_OK) {
        ctl_log(c, "error", "automl_ask_failed",
                json_pack("{s:s,s:s}", "job", job_id, "error",
                          status ? uv_strerror(status) : hone_strerror(s->ask_rc)));
        ctl_automl_rebuild(c, job_id);
    } else if (ctl_job_row(c, job_id, &job) != HONE_OK ||
               strcmp(jstr(job, "status"), "running") != 0) {
        /* Paused (or gone) while it asked: the answer was not stored, so the search must not
         * keep it either. */
        if (s->ask.kind == HONE_ASK_NEW || s->ask.kind == HONE_ASK_RESUME)
            ctl_automl_rebuild(c, job_id);
    } else {
        int dropped = 0;
        int rc = ctl_automl_apply(c, s, job, &s->ask, &dropped);
        made = rc > 0;
        again |= made;
        if (!dropped)
            ctl_automl_remaining(s);
    }
    json_decref(job);
    run_deferred(c, job_id);
    if (again)
        ctl_automl_step(c, job_id);
    if (made)
        c->kind_up.kick(c);
}

void ctl_automl_ask_async(hone_controller *c, ctl_search *s)
{
    ctl_automl_remaining(s);
    s->busy = 1;
    s->step_again = 0;
    s->work.data = s;
    c->asks->inflight++;
    c->asks->n_offloop++;
    int rc = uv_queue_work(c->loop, &s->work, ask_work, ask_done);
    if (rc) { /* cannot happen with a valid loop; ask here rather than stall */
        s->work.data = s;
        ask_work(&s->work);
        ask_done(&s->work, rc);
    }
}
