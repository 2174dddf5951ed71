/* The AutoML driver, part 4: the governor of a search with a time budget (automl_budget_minutes).
 * It sizes the search at start (search/budget.h's planner, from automl_epoch_seconds), learns epoch
 * and launch times from the trials' reports on the controller's clock, launches only what can
 * finish before the budget's end (a promotion that cannot is dropped, a new trial that cannot ends
 * the launching), stops running trials that cannot reach their target, and writes what the budget
 * cut. Every decision that changes the search is stored as an automl_events row (a report's data
 * {"budget_stop"}, an end's {"budget_drop"}), so a rebuilt search replays it; the clock only
 * decides, it is never replayed. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "automl.h"
#include "budget.h"
#include "ctl.h"
#include "joblog.h"
#include "store.h"
#include "util.h"

/* Epoch samples shorter than this share of the estimate are replays of checkpointed epochs (a
 * worker reporting what it had not got acknowledged), not training. */
#define BUDGET_REPLAY_SHARE 0.25
/* An epoch of this experiment's earlier jobs, as the trainers timed it, to the governor's clock. */
#define BUDGET_HISTORY_MARGIN 1.1
/* Start-up prior of a launch (seconds) until one is measured: a trainer's start, data load. */
#define BUDGET_LAUNCH_PRIOR 2.0

struct ctl_budget {
    double budget_s, start, end; /* end: trials must end by then (hone_budget_end) */
    double hint;                 /* automl_epoch_seconds, NAN without */
    hone_budget_est est;
    double *launched, *last; /* per trial: its launch, its last report (NAN none) */
    int *last_epoch;
    int cap;
    int stopped, dropped, held; /* trials stopped, promotions dropped, a launch refused */
    int held_epochs;            /* the refused launch's epochs */
    double held_at;             /* when the first launch was refused */
    char stops[192];            /* the first stops, "trial 3 at epoch 4 of 9" */
    int *stop_at;               /* (trial, epoch) pairs answered stop by the budget */
    int nstop_at, capstop_at;
};

int ctl_budget_plan_opts(const json_t *settings, double history_s, json_t *opts, char *msg,
                         size_t msglen)
{
    double minutes = jnum(settings, "automl_budget_minutes");
    double hint = jnum(settings, "automl_epoch_seconds");
    const char *from = "automl_epoch_seconds";
    if (!(hint > 0) && history_s > 0) {
        /* the trainers' own seconds, plus the report's trip and the checkpoint */
        hint = history_s * BUDGET_HISTORY_MARGIN;
        from = "this experiment's earlier epochs";
    }
    hone_algo algo;
    msg[0] = '\0';
    if (!(minutes > 0))
        return HONE_OK;
    if (hone_algo_parse(jstr(opts, "algorithm"), &algo))
        return HONE_OK; /* the caller refuses it */
    json_object_set_new(opts, "budget_seconds", json_real(minutes * 60));
    if (!(hint > 0)) {
        snprintf(msg, msglen,
                 "budget %.1f min: no epoch time known (automl_epoch_seconds, or this "
                 "experiment's earlier jobs), so the search keeps its sizes; trials launch while "
                 "they can finish in time, "
                 "once the first ones have timed an epoch",
                 minutes);
        return HONE_OK;
    }
    json_object_set_new(opts, "epoch_seconds", json_real(hint));
    int flat = !hone_algo_multifidelity(algo); /* random, bayesian */
    int R = (int)jint(opts, "R"), mult = (int)jint(opts, "epoch_multiplier");
    hone_budget_in in = {
        .algo = algo,
        .budget_s = minutes * 60,
        .slots = (int)jint(opts, "max_parallel") > 0 ? (int)jint(opts, "max_parallel") : 1,
        .epoch_s = hint,
        .launch_s = BUDGET_LAUNCH_PRIOR,
        .max_full = flat ? (int)jint(opts, "max_epochs") : R * mult,
        .eta = flat ? 0 : (int)jint(opts, "eta"),
    };
    hone_budget_plan p;
    if (in.max_full < 1 || hone_budget_plan_make(&in, &p) != HONE_OK)
        return HONE_OK; /* the search's own checks refuse what is left */
    if (flat) {
        json_object_set_new(opts, "max_epochs", json_integer(p.full_epochs));
    } else {
        json_object_set_new(opts, "R", json_integer(p.R));
        json_object_set_new(opts, "eta", json_integer(p.eta));
        json_object_set_new(opts, "epoch_multiplier", json_integer(p.epoch_multiplier));
    }
    json_object_set_new(opts, "budget_plan",
                        json_pack("{s:i,s:i,s:i,s:i,s:i}", "R", p.R, "eta", p.eta,
                                  "epoch_multiplier", p.epoch_multiplier, "full_epochs",
                                  p.full_epochs, "trials", p.trials));
    if (flat) {
        snprintf(msg, msglen,
                 "budget %.1f min, ~%.2f s an epoch (%s), %d at once: trials of %d "
                 "epochs (train.epochs %d at most), about %d of them",
                 minutes, hint, from, in.slots, p.full_epochs, in.max_full, p.trials);
        return HONE_OK;
    }
    snprintf(msg, msglen,
             "budget %.1f min, ~%.2f s an epoch (%s), %d at once: R %d, nu %d, epoch "
             "multiplier %d (trials of %d epochs at most, within R x multiplier %d), "
             "about %d trials",
             minutes, hint, from, in.slots, p.R, p.eta, p.epoch_multiplier, p.full_epochs,
             in.max_full, p.trials);
    return HONE_OK;
}

ctl_budget *ctl_budget_new(const json_t *opts, double started)
{
    double budget_s = jnum(opts, "budget_seconds");
    if (!(budget_s > 0))
        return NULL;
    ctl_budget *b = hone_xcalloc(1, sizeof *b);
    b->budget_s = budget_s;
    b->start = isnan(started) ? ctl_now() : started;
    b->end = hone_budget_end(b->start, budget_s);
    b->hint = jnum(opts, "epoch_seconds");
    hone_budget_est_init(&b->est, b->hint, BUDGET_LAUNCH_PRIOR);
    return b;
}

void ctl_budget_free(ctl_budget *b)
{
    if (!b)
        return;
    free(b->launched);
    free(b->last);
    free(b->last_epoch);
    free(b->stop_at);
    free(b);
}

static void grow(ctl_budget *b, int trial)
{
    if (trial < b->cap)
        return;
    int n = b->cap ? b->cap : 16;
    while (n <= trial)
        n *= 2;
    b->launched = hone_xrealloc(b->launched, (size_t)n * sizeof(double));
    b->last = hone_xrealloc(b->last, (size_t)n * sizeof(double));
    b->last_epoch = hone_xrealloc(b->last_epoch, (size_t)n * sizeof(int));
    for (int i = b->cap; i < n; i++) {
        b->launched[i] = b->last[i] = NAN;
        b->last_epoch[i] = 0;
    }
    b->cap = n;
}

static void note_stop(ctl_budget *b, int trial, int epoch, int target)
{
    size_t len = strlen(b->stops);
    if (b->nstop_at == b->capstop_at) {
        b->capstop_at = b->capstop_at ? 2 * b->capstop_at : 8;
        b->stop_at = hone_xrealloc(b->stop_at, (size_t)b->capstop_at * 2 * sizeof(int));
    }
    b->stop_at[2 * b->nstop_at] = trial;
    b->stop_at[2 * b->nstop_at + 1] = epoch;
    b->nstop_at++;
    b->stopped++;
    if (b->stopped <= 3 && len < sizeof b->stops)
        snprintf(b->stops + len, sizeof b->stops - len, "%strial %d at epoch %d of %d",
                 len ? ", " : "", trial, epoch, target);
}

static void launched(ctl_budget *b, int trial, double now)
{
    grow(b, trial);
    b->launched[trial] = now;
    b->last[trial] = NAN;
}

/* A fresh report at `now`: an epoch sample (the time since the trial's last report), or, the first
 * since its launch, a start-up sample. */
static void learn_report(ctl_budget *b, int trial, int epoch, double now)
{
    double ep = hone_budget_est_epoch_s(&b->est);
    grow(b, trial);
    if (!isnan(b->last[trial]) && epoch > b->last_epoch[trial]) {
        double d = (now - b->last[trial]) / (epoch - b->last_epoch[trial]);
        /* the replay filter holds against measured epochs only: a first estimate from a
         * start-up (or a hint) may be many epochs long */
        if (isnan(ep) || b->est.n_epoch == 0 || d >= BUDGET_REPLAY_SHARE * ep)
            hone_budget_est_epoch(&b->est, d);
    } else if (!isnan(b->launched[trial])) {
        hone_budget_est_start(&b->est, now - b->launched[trial]);
    }
    b->launched[trial] = NAN;
    b->last[trial] = now;
    b->last_epoch[trial] = epoch;
}

static void learn_end(ctl_budget *b, int trial, double now)
{
    if (trial < 0 || trial >= b->cap || isnan(b->last[trial]))
        return;
    hone_budget_est_tail(&b->est, now - b->last[trial]);
    b->last[trial] = NAN;
}

void ctl_budget_replay(ctl_budget *b, const json_t *ev)
{
    if (!b)
        return;
    /* the estimate is learnt again from the stored times, as it was learnt live */
    const char *kind = jstr(ev, "kind");
    int trial = (int)jint(ev, "trial");
    double at = jnum(ev, "created");
    json_t *data = jparse(jstr(ev, "data"));
    if (trial < 0 || !kind || isnan(at)) {
    } else if (!strcmp(kind, "new") || !strcmp(kind, "resume")) {
        launched(b, trial, at);
    } else if (!strcmp(kind, "report")) {
        learn_report(b, trial, (int)jint(ev, "epoch"), at);
    } else if (json_is_true(json_object_get(data, "budget_drop"))) {
        b->dropped++;
    } else {
        learn_end(b, trial, at);
    }
    json_t *st = json_object_get(data, "budget_stop");
    if (json_is_object(st))
        note_stop(b, trial, (int)jint(ev, "epoch"), (int)jint(st, "target"));
    json_decref(data);
}

void ctl_budget_launched(ctl_search *s, int trial, double now)
{
    if (s->budget && trial >= 0)
        launched(s->budget, trial, now);
}

static int stopped_at(const ctl_budget *b, int trial, int epoch)
{
    for (int i = 0; i < b->nstop_at; i++)
        if (b->stop_at[2 * i] == trial && b->stop_at[2 * i + 1] == epoch)
            return 1;
    return 0;
}

int ctl_budget_report(ctl_search *s, int trial, int epoch, int fresh, double now,
                      hone_decision *dec, int *target)
{
    ctl_budget *b = s->budget;
    *target = 0;
    if (!b || trial < 0)
        return 0;
    if (fresh)
        learn_report(b, trial, epoch, now);
    if (*dec != HONE_DECIDE_CONTINUE)
        return 0;
    int left = hone_budget_trial_left(s->search, trial, epoch);
    /* a repeated report gets the answer it got (stored with the report, replayed after a
     * restart); a new one, the rule's */
    if (!(!fresh && stopped_at(b, trial, epoch)) &&
        !hone_budget_must_stop(&b->est, now, b->end, left))
        return 0;
    *dec = HONE_DECIDE_STOP;
    *target = epoch + left;
    if (fresh)
        note_stop(b, trial, epoch, *target);
    return 1;
}

void ctl_budget_ended(ctl_search *s, int trial, double now)
{
    if (s->budget)
        learn_end(s->budget, trial, now);
}

/* Drops the promotion the search offers (it cannot finish in time): stored first, then fed. */
static int drop(hone_controller *c, ctl_search *s, const hone_ask *peek)
{
    int rc = HONE_ESQL;
    if (db_begin(c->db))
        return rc;
    if (store_automl_event_append(c->db, s->job_id, "end", peek->trial, 0, NAN,
                                  "{\"budget_drop\":true}", ctl_now()) ||
        ctl_joblog(c, s->job_id,
                   "trial %d not resumed to epoch %d: it cannot finish within the budget "
                   "(~%.1f s an epoch, %.0f s left)",
                   peek->trial, peek->epochs, hone_budget_est_epoch_s(&s->budget->est),
                   s->budget->end - ctl_now()) ||
        db_commit(c->db)) {
        db_rollback(c->db);
        return rc;
    }
    s->budget->dropped++;
    return hone_search_drop(s->search, peek->trial);
}

int ctl_budget_gate(hone_controller *c, ctl_search *s, int *hold)
{
    ctl_budget *b = s->budget;
    *hold = 0;
    for (int guard = 0; b && guard < 100000; guard++) {
        hone_ask peek;
        hone_budget_gate_verdict v;
        int rc = hone_budget_gate(s->search, &b->est, ctl_now(), b->end, &peek, &v);
        if (rc)
            return rc;
        if (v == HONE_GATE_ASK)
            return HONE_OK;
        if (v == HONE_GATE_HOLD) {
            if (!b->held) {
                b->held = 1;
                b->held_epochs = peek.epochs;
                b->held_at = ctl_now();
                ctl_joblog(c, s->job_id,
                           "budget: no new trial launches (one of %d epochs would not finish "
                           "in the %.0f s left, ~%.1f s an epoch); the running ones end it",
                           peek.epochs, b->end - ctl_now(), hone_budget_est_epoch_s(&b->est));
            }
            *hold = 1;
            return HONE_OK;
        }
        if ((rc = drop(c, s, &peek)))
            return rc;
    }
    return HONE_OK;
}

void ctl_budget_note(const ctl_search *s, double now, int search_done, char *buf, size_t len)
{
    const ctl_budget *b = s->budget;
    size_t n;
    buf[0] = '\0';
    if (!b)
        return;
    n = (size_t)snprintf(buf, len, "budget %.0f s, used %.0f s: ", b->budget_s, now - b->start);
    if (n < len && search_done && !b->stopped && !b->dropped)
        n += (size_t)snprintf(buf + n, len - n, "the search finished its plan within the budget");
    else if (n < len && b->held)
        n +=
            (size_t)snprintf(buf + n, len - n,
                             "no new trial after %.0f s (the next, of %d epoch%s, would not have "
                             "finished)",
                             b->held_at - b->start, b->held_epochs, b->held_epochs == 1 ? "" : "s");
    else if (n < len)
        n += (size_t)snprintf(buf + n, len - n, "the search's plan was done");
    if (n < len && b->dropped)
        n += (size_t)snprintf(buf + n, len - n, "; %d promotion%s not run (%s)", b->dropped,
                              b->dropped == 1 ? "" : "s",
                              b->dropped == 1 ? "it would not have finished"
                                              : "they would not have finished");
    if (n < len && b->stopped)
        snprintf(buf + n, len - n, "; %d trial%s stopped by the budget (%s%s)", b->stopped,
                 b->stopped == 1 ? "" : "s", b->stops, b->stopped > 3 ? ", ..." : "");
}

json_t *ctl_budget_result(const ctl_search *s, double now, int search_done)
{
    const ctl_budget *b = s->budget;
    char note[512];
    if (!b)
        return NULL;
    ctl_budget_note(s, now, search_done, note, sizeof note);
    double ep = hone_budget_est_epoch_s(&b->est);
    return json_pack("{s:f,s:f,s:s,s:i,s:i,s:o}", "seconds", b->budget_s, "used_seconds",
                     now - b->start, "note", note, "trials_stopped", b->stopped,
                     "promotions_dropped", b->dropped, "epoch_seconds",
                     isnan(ep) ? json_null() : json_real(ep));
}

void ctl_budget_status(const ctl_search *s, const json_t *job, const json_t *opts, json_t *o)
{
    double budget_s = jnum(opts, "budget_seconds");
    json_t *res = NULL, *kept;
    if (!(budget_s > 0)) {
        json_object_set_new(o, "budget_seconds", json_null());
        return;
    }
    double start = jnum(job, "started"), now = ctl_now();
    res = s ? NULL : jparse(jstr(job, "result"));
    kept = json_object_get(res, "budget");
    double used = json_is_object(kept)            ? jnum(kept, "used_seconds")
                  : isnan(start)                  ? 0
                  : !isnan(jnum(job, "finished")) ? jnum(job, "finished") - start
                                                  : now - start;
    double ep = s && s->budget         ? hone_budget_est_epoch_s(&s->budget->est)
                : json_is_object(kept) ? jnum(kept, "epoch_seconds")
                                       : NAN;
    json_object_set_new(o, "budget_seconds", json_real(budget_s));
    json_object_set(o, "budget_plan",
                    json_is_object(json_object_get(opts, "budget_plan"))
                        ? json_object_get(opts, "budget_plan")
                        : json_null());
    json_object_set_new(o, "budget_used_seconds", json_real(used > 0 ? used : 0));
    json_object_set_new(o, "budget_left_seconds",
                        json_real(budget_s - used > 0 ? budget_s - used : 0));
    json_object_set_new(o, "budget_epoch_seconds", isnan(ep) ? json_null() : json_real(ep));
    json_object_set(o, "budget_note",
                    json_is_string(json_object_get(kept, "note")) ? json_object_get(kept, "note")
                                                                  : json_null());
    json_decref(res);
}
