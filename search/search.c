/* search: the hone_search facade. Trials, idempotent reports, progress and replay, plus the two
 * full-budget drivers (random, Bayesian); Hyperband/BOHB live in hyperband.c and ASHA in asha.c.
 * Pure: no I/O, no clock. Every answer is a function of the seed and the events fed in. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "budget.h"
#include "search_internal.h"

const char *const hone_algo_names[] = {
    "bayesian", "hyperband", "asha", "bohb", "dehb", "random", "hyperband_es", NULL,
};

int hone_algo_parse(const char *name, hone_algo *out)
{
    static const struct {
        const char *name;
        hone_algo algo;
    } names[] = {
        {"random", HONE_ALGO_RANDOM},
        {"bayesian", HONE_ALGO_BAYESIAN},
        {"b", HONE_ALGO_BAYESIAN},
        {"hyperband", HONE_ALGO_HYPERBAND},
        {"h", HONE_ALGO_HYPERBAND},
        {"asha", HONE_ALGO_ASHA},
        {"bohb", HONE_ALGO_BOHB},
        {"dehb", HONE_ALGO_DEHB},
        {"hyperband_es", HONE_ALGO_HYPERBAND_ES},
    };
    if (!name || !out)
        return HONE_EINVAL;
    for (size_t i = 0; i < HONE_ARRAY_LEN(names); i++) {
        if (strcasecmp(name, names[i].name) == 0) {
            *out = names[i].algo;
            return HONE_OK;
        }
    }
    return HONE_EINVAL;
}

const char *hone_algo_name(hone_algo a)
{
    switch (a) {
    case HONE_ALGO_RANDOM:
        return "random";
    case HONE_ALGO_BAYESIAN:
        return "bayesian";
    case HONE_ALGO_HYPERBAND:
        return "hyperband";
    case HONE_ALGO_ASHA:
        return "asha";
    case HONE_ALGO_BOHB:
        return "bohb";
    case HONE_ALGO_DEHB:
        return "dehb";
    case HONE_ALGO_HYPERBAND_ES:
        return "hyperband_es";
    }
    return "unknown";
}

void hone_search_opts_default(hone_search_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->algo = HONE_ALGO_BAYESIAN; /* TAO's default */
    o->seed = 0;
    o->maximize = 1;
    o->max_trials = 20; /* TAO automl_max_recommendations */
    o->max_epochs = 10;
    o->R = 27;  /* TAO automl_R */
    o->eta = 3; /* TAO automl_nu */
    o->epoch_multiplier = 1;
    o->max_parallel = 1;
    o->hb_iterations = 1;
    o->curve_confidence = 0.95;
}

int hone_algo_multifidelity(hone_algo a)
{
    return sr_is_bracketed(a) || a == HONE_ALGO_ASHA;
}

/* Limits keep per-trial arrays (one slot per epoch) and bracket tables small. */
enum { SR_MAX_EPOCHS = 100000, SR_MAX_TRIALS = 1000000 };

static int opts_check(const hone_search_opts *o)
{
    if (o->max_parallel < 1)
        return HONE_EINVAL;
    if ((o->curve_stop || o->algo == HONE_ALGO_HYPERBAND_ES) &&
        !(o->curve_confidence >= 0.5 && o->curve_confidence < 1))
        return HONE_EINVAL;
    switch (o->algo) {
    case HONE_ALGO_RANDOM:
    case HONE_ALGO_BAYESIAN:
        if (o->max_trials < 1 || o->max_epochs < 1)
            return HONE_EINVAL;
        if (o->max_trials > SR_MAX_TRIALS || o->max_epochs > SR_MAX_EPOCHS)
            return HONE_ERANGE;
        return HONE_OK;
    case HONE_ALGO_HYPERBAND:
    case HONE_ALGO_HYPERBAND_ES:
    case HONE_ALGO_BOHB:
    case HONE_ALGO_ASHA:
    case HONE_ALGO_DEHB:
        if (o->R < 1 || o->eta < 2 || o->epoch_multiplier < 1)
            return HONE_EINVAL;
        if (o->algo == HONE_ALGO_ASHA && o->max_trials < 1)
            return HONE_EINVAL;
        if (o->algo != HONE_ALGO_ASHA && o->hb_iterations < 1)
            return HONE_EINVAL;
        if ((long)o->R * o->epoch_multiplier > SR_MAX_EPOCHS || o->max_trials > SR_MAX_TRIALS)
            return HONE_ERANGE;
        return HONE_OK;
    }
    return HONE_EINVAL;
}

int hone_search_new(const hone_space *space, const hone_search_opts *o, hone_search **out)
{
    hone_search *s = NULL;
    int rc;
    if (!space || !o || !out)
        return HONE_EINVAL;
    *out = NULL;
    rc = opts_check(o);
    if (rc)
        return rc;
    if (o->start_default && !hone_space_has_defaults(space))
        return HONE_EINVAL;
    s = hone_xcalloc(1, sizeof(*s));
    s->space = space;
    s->o = *o;
    hone_bo_opts_default(&s->bo);
    s->np = hone_space_nparams(space);
    s->bo_max_obs = 100;
    s->nrungs = 1;
    s->cap = o->max_epochs;
    s->top[0] = s->top[1] = -1;
    if (hone_algo_multifidelity(o->algo)) {
        int iters = o->algo == HONE_ALGO_ASHA ? 1 : o->hb_iterations;
        rc = hb_build(&s->hb, o->R, o->eta, o->epoch_multiplier, iters);
        if (rc)
            goto fail;
        s->nrungs = s->hb.smax + 1;
        s->cap = o->R * o->epoch_multiplier;
        if (o->algo == HONE_ALGO_DEHB && (rc = dehb_new(s)))
            goto fail;
    }
    s->ask_values = hone_xcalloc((size_t)(s->np > 0 ? s->np : 1), sizeof(double));
    *out = s;
    return HONE_OK;
fail:
    hone_search_free(s);
    return rc;
}

void hone_search_free(hone_search *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->nt; i++) {
        free(s->t[i].values);
        free(s->t[i].metric);
        free(s->t[i].dec);
        free(s->t[i].rungm);
    }
    free(s->t);
    free(s->ask_values);
    dehb_free(s);
    hb_free(&s->hb);
    free(s);
}

void hone_search__asha_set_stop(hone_search *s, int stop)
{
    s->asha_stop = stop ? 1 : 0;
}

double sr_goodness(const hone_search *s, double metric)
{
    if (!isfinite(metric))
        return -INFINITY;
    return s->o.maximize ? metric : -metric;
}

sr_trial *sr_trial_add(hone_search *s, const double *values)
{
    if (s->nt == s->capt) {
        s->capt = s->capt ? s->capt * 2 : 16;
        s->t = hone_xrealloc(s->t, (size_t)s->capt * sizeof(*s->t));
    }
    sr_trial *t = &s->t[s->nt];
    memset(t, 0, sizeof(*t));
    t->id = s->nt++;
    t->bracket = -1;
    t->reached = -1;
    t->bestg = -INFINITY;
    t->values = hone_xmalloc((size_t)(s->np > 0 ? s->np : 1) * sizeof(double));
    if (s->np > 0)
        memcpy(t->values, values, (size_t)s->np * sizeof(double));
    t->metric = hone_xmalloc((size_t)(s->cap + 1) * sizeof(double));
    t->dec = hone_xmalloc((size_t)(s->cap + 1));
    for (int e = 0; e <= s->cap; e++) {
        t->metric[e] = NAN;
        t->dec[e] = -1;
    }
    t->rungm = hone_xmalloc((size_t)s->nrungs * sizeof(double));
    for (int k = 0; k < s->nrungs; k++)
        t->rungm[k] = NAN;
    return t;
}

/* Best goodness over a trial's epochs; -inf when it failed or reported nothing finite. */
static double trial_best(const hone_search *s, const sr_trial *t, int *epoch)
{
    double best = -INFINITY;
    if (epoch)
        *epoch = 0;
    if (t->state == SR_FAILED)
        return -INFINITY;
    for (int e = 1; e <= t->last_epoch; e++) {
        double g = sr_goodness(s, t->metric[e]);
        if (g > best) {
            best = g;
            if (epoch)
                *epoch = e;
        }
    }
    return best;
}

int sr_collect(const hone_search *s, int epoch, double **X, double **y)
{
    int n = 0, first = 0;
    *X = NULL;
    *y = NULL;
    /* count first so the most recent bo_max_obs are kept */
    for (int i = 0; i < s->nt; i++) {
        const sr_trial *t = &s->t[i];
        if (epoch > 0 ? !isnan(t->metric[epoch]) : (t->state == SR_DONE || t->state == SR_FAILED))
            n++;
    }
    if (n == 0)
        return 0;
    if (n > s->bo_max_obs)
        first = n - s->bo_max_obs;
    *X = hone_xmalloc((size_t)n * (size_t)(s->np > 0 ? s->np : 1) * sizeof(double));
    *y = hone_xmalloc((size_t)n * sizeof(double));
    int k = 0, seen = 0;
    for (int i = 0; i < s->nt; i++) {
        const sr_trial *t = &s->t[i];
        double g;
        if (epoch > 0) {
            if (isnan(t->metric[epoch]))
                continue;
            g = t->state == SR_FAILED ? -INFINITY : sr_goodness(s, t->metric[epoch]);
        } else {
            if (t->state != SR_DONE && t->state != SR_FAILED)
                continue;
            g = trial_best(s, t, NULL);
            if (t->curve && t->curve_pred > g)
                g = t->curve_pred; /* stopped by its curve: the model learns its forecast */
        }
        if (seen++ < first)
            continue;
        memcpy(*X + (size_t)k * s->np, t->values, (size_t)s->np * sizeof(double));
        (*y)[k] = isfinite(g) ? -g : NAN; /* the model minimises; failures stay non-finite */
        k++;
    }
    return k;
}

int sr_collect_pending(const hone_search *s, double **P)
{
    int m = 0;
    *P = hone_xmalloc((size_t)(s->running > 0 ? s->running : 1) * (size_t)(s->np > 0 ? s->np : 1) *
                      sizeof(double));
    for (int i = 0; i < s->nt && m < s->running; i++) {
        if (s->t[i].state != SR_RUNNING)
            continue;
        memcpy(*P + (size_t)m * s->np, s->t[i].values, (size_t)s->np * sizeof(double));
        m++;
    }
    return m;
}

/* Random and Bayesian: max_trials full-budget trials, max_parallel at a time. */
static void flat_plan(const hone_search *s, sr_plan *p)
{
    if (s->running >= s->o.max_parallel) {
        p->kind = HONE_ASK_WAIT;
    } else if (s->nt < s->o.max_trials) {
        p->kind = HONE_ASK_NEW;
        p->trial = s->nt;
        p->epochs = s->o.max_epochs;
    } else {
        p->kind = s->running > 0 ? HONE_ASK_WAIT : HONE_ASK_DONE;
    }
}

static void plan(const hone_search *s, sr_plan *p)
{
    memset(p, 0, sizeof(*p));
    p->trial = -1;
    p->bracket = -1;
    switch (s->o.algo) {
    case HONE_ALGO_HYPERBAND:
    case HONE_ALGO_HYPERBAND_ES:
    case HONE_ALGO_BOHB:
        hb_plan(s, p);
        break;
    case HONE_ALGO_ASHA:
        asha_plan(s, p);
        break;
    case HONE_ALGO_DEHB:
        dehb_plan(s, p);
        break;
    default:
        flat_plan(s, p);
        break;
    }
}

/* The trial that start_default gives the space's default config (see hone_search_opts). */
static int is_start_trial(const hone_search *s, const sr_plan *p)
{
    if (!s->o.start_default)
        return 0;
    if (sr_is_bracketed(s->o.algo))
        return p->bracket == s->hb.nb - 1 && s->hb.created[p->bracket] == 0;
    return p->trial == 0;
}

/* Config for new trial `trial`. Its random draws come from its own stream (seed, trial), so a
 * replayed search that skips proposals (replay_new) keeps every later draw the same. */
static void propose(hone_search *s, const sr_plan *p, double *values)
{
    hone_rng r;
    int trial = p->trial;
    if (is_start_trial(s, p)) {
        hone_space_default(s->space, values);
        return;
    }
    if (s->o.algo == HONE_ALGO_BOHB) {
        hb_propose_bohb(s, trial, values);
        return;
    }
    if (s->o.algo == HONE_ALGO_DEHB) {
        dehb_propose(s, p, values);
        return;
    }
    hone_rng_seed2(&r, s->o.seed, (uint64_t)trial);
    if (s->o.algo == HONE_ALGO_BAYESIAN) {
        double *X, *y, *P;
        int n = sr_collect(s, 0, &X, &y);
        int m = sr_collect_pending(s, &P);
        int rc = hone_bo_suggest(s->space, &s->bo, X, y, n, P, m, 1, &r, values);
        free(X);
        free(y);
        free(P);
        if (rc == HONE_OK)
            return;
        hone_rng_seed2(&r, s->o.seed, (uint64_t)trial); /* model failed: fall back to random */
    }
    hone_space_sample(s->space, &r, values);
}

static void commit_new(hone_search *s, const sr_plan *p, const double *values)
{
    sr_trial *t = sr_trial_add(s, values);
    t->state = SR_RUNNING;
    t->target = p->epochs;
    t->rung = 0;
    s->running++;
    if (sr_is_hb(s->o.algo))
        hb_commit_new(s, t, p);
    else if (s->o.algo == HONE_ALGO_DEHB)
        dehb_commit_new(s, t, p);
}

static void commit_resume(hone_search *s, const sr_plan *p)
{
    sr_trial *t = &s->t[p->trial];
    if (!t->promoted)
        t->rung++; /* asha promotion decided by this ask */
    t->promoted = 0;
    t->state = SR_RUNNING;
    t->target = p->epochs;
    s->running++;
}

/* The next plan, and what an ask answers with it (values aside). */
static void plan_ask(const hone_search *s, sr_plan *p, hone_ask *out)
{
    memset(out, 0, sizeof(*out));
    plan(s, p);
    out->kind = p->kind;
    out->trial = p->trial;
    out->epochs = p->epochs;
}

int hone_search_ask(hone_search *s, hone_ask *out)
{
    sr_plan p;
    if (!s || !out)
        return HONE_EINVAL;
    plan_ask(s, &p, out);
    if (p.kind == HONE_ASK_NEW) {
        propose(s, &p, s->ask_values);
        commit_new(s, &p, s->ask_values);
        out->values = s->ask_values;
    } else if (p.kind == HONE_ASK_RESUME) {
        commit_resume(s, &p);
    }
    return HONE_OK;
}

/* budget.h's hooks: what the next ask answers, and giving up a promotion the budget cannot
 * afford. */
int hone_search_peek(const hone_search *s, hone_ask *out)
{
    sr_plan p;
    if (!s || !out)
        return HONE_EINVAL;
    plan_ask(s, &p, out);
    return HONE_OK;
}

int hone_search_drop(hone_search *s, int trial)
{
    if (!s)
        return HONE_EINVAL;
    if (trial < 0 || trial >= s->nt)
        return HONE_ENOENT;
    sr_trial *t = &s->t[trial];
    if (t->state != SR_PAUSED)
        return HONE_ESTATE;
    t->state = SR_DONE;
    t->stopped_early = 1;
    t->promoted = 0;
    sr_after_end(s, t);
    return HONE_OK;
}

int hone_search_replay_new(hone_search *s, int trial, const double *values, int epochs)
{
    sr_plan p;
    if (!s || (!values && s->np > 0))
        return HONE_EINVAL;
    plan(s, &p);
    if (p.kind != HONE_ASK_NEW || p.trial != trial || p.epochs != epochs)
        return HONE_ESTATE;
    commit_new(s, &p, values);
    return HONE_OK;
}

/* A bracketed trial finished short of its rung (ended, stopped by its curve, or dropped): its
 * bracket's rung goes on without it. */
void sr_after_end(hone_search *s, sr_trial *t)
{
    if (t->bracket < 0)
        return;
    if (s->o.algo == HONE_ALGO_DEHB)
        dehb_after_end(s, t);
    else
        hb_after_end(s, t);
}

static hone_decision boundary(hone_search *s, sr_trial *t, double metric)
{
    s->running--;
    if (t->rung < s->nrungs) {
        t->rungm[t->rung] = metric;
        t->reached = t->rung;
    }
    switch (s->o.algo) {
    case HONE_ALGO_HYPERBAND:
    case HONE_ALGO_HYPERBAND_ES:
    case HONE_ALGO_BOHB:
        return hb_boundary(s, t);
    case HONE_ALGO_ASHA:
        return asha_boundary(s, t);
    case HONE_ALGO_DEHB:
        return dehb_boundary(s, t);
    default:
        t->state = SR_DONE;
        return HONE_DECIDE_STOP;
    }
}

/* The learning-curve rule stopped a running trial short of its target: it is finished, stopped
 * early, and its bracket's rung goes on without it (as for a trial that ended on its own). */
static hone_decision curve_stop(hone_search *s, sr_trial *t)
{
    s->running--;
    t->state = SR_DONE;
    t->stopped_early = 1;
    t->curve = 1;
    sr_after_end(s, t);
    return HONE_DECIDE_STOP;
}

int hone_search_report(hone_search *s, int trial, int epoch, double metric, hone_decision *out)
{
    if (!s || !out)
        return HONE_EINVAL;
    if (trial < 0 || trial >= s->nt)
        return HONE_ENOENT;
    if (epoch < 1 || epoch > s->cap)
        return HONE_ERANGE;
    sr_trial *t = &s->t[trial];
    if (t->dec[epoch] >= 0) {
        *out = (hone_decision)t->dec[epoch];
        return HONE_OK;
    }
    if (t->state != SR_RUNNING) {
        /* a straggling report after the trial was told to stop: repeat that answer */
        *out = t->state == SR_PAUSED ? HONE_DECIDE_PAUSE : HONE_DECIDE_STOP;
        return HONE_OK;
    }
    t->metric[epoch] = metric;
    if (epoch > t->last_epoch)
        t->last_epoch = epoch;
    sr_best_note(s, t, epoch);
    if (epoch < t->target)
        *out =
            sr_curve_on(s) && sr_curve_judge(s, t, epoch) ? curve_stop(s, t) : HONE_DECIDE_CONTINUE;
    else
        *out = boundary(s, t, metric);
    t->dec[epoch] = (signed char)*out;
    return HONE_OK;
}

int hone_search_end(hone_search *s, int trial, int failed)
{
    if (!s)
        return HONE_EINVAL;
    if (trial < 0 || trial >= s->nt)
        return HONE_ENOENT;
    sr_trial *t = &s->t[trial];
    if (t->state != SR_RUNNING)
        return HONE_OK; /* already told to stop or pause: bookkeeping only */
    s->running--;
    t->state = failed ? SR_FAILED : SR_DONE; /* ended on its own before its target */
    if (failed)
        sr_best_rebuild(s); /* its results no longer count as a bar */
    sr_after_end(s, t);
    return HONE_OK;
}

void hone_search_progress_get(const hone_search *s, hone_search_progress *out)
{
    sr_plan p;
    memset(out, 0, sizeof(*out));
    out->best_trial = -1;
    out->best_metric = NAN;
    plan(s, &p);
    int finished = p.kind == HONE_ASK_DONE;
    double best = -INFINITY;
    for (int i = 0; i < s->nt; i++) {
        const sr_trial *t = &s->t[i];
        int e;
        out->epochs_done += t->last_epoch;
        if (t->state == SR_RUNNING)
            out->trials_running++;
        else if (t->state == SR_FAILED)
            out->trials_failed++;
        else if (t->state == SR_DONE)
            out->trials_finished++;
        else if (finished) /* paused and never resumed: it stopped early */
            out->trials_finished++;
        if ((t->state == SR_DONE && t->stopped_early) || (t->state == SR_PAUSED && finished))
            out->trials_stopped_early++;
        double g = trial_best(s, t, &e);
        if (g > best) {
            best = g;
            out->best_trial = t->id;
            out->best_epoch = e;
            out->best_metric = t->metric[e];
        }
    }
    out->trials_created = s->nt;
    switch (s->o.algo) {
    case HONE_ALGO_HYPERBAND:
    case HONE_ALGO_HYPERBAND_ES:
    case HONE_ALGO_BOHB:
        out->epochs_remaining = hb_epochs_remaining(s);
        break;
    case HONE_ALGO_ASHA:
        out->epochs_remaining = asha_epochs_remaining(s);
        break;
    case HONE_ALGO_DEHB:
        out->epochs_remaining = dehb_epochs_remaining(s);
        break;
    default:
        out->epochs_remaining = (long)(s->o.max_trials - s->nt) * s->o.max_epochs;
        for (int i = 0; i < s->nt; i++)
            if (s->t[i].state == SR_RUNNING)
                out->epochs_remaining += s->t[i].target - s->t[i].last_epoch;
        break;
    }
}
