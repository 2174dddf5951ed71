/* budget: sizing a search to a wall-clock budget, the epoch-time estimate, and the clock-driven
 * decisions of a budgeted search (budget.h). Pure arithmetic: times are arguments, never read. */
#include <math.h>
#include <string.h>

#include "budget.h"
#include "search_internal.h"

/* Beyond this many trials a plan is worth no more (the score's long tail). */
enum { BUDGET_SCORE_TRIALS = 120 };

double hone_budget_score(int full_epochs, int trials)
{
    double e = full_epochs, n = trials;
    return 5.0 * fmin(e, 6) + 1.0 * fmin(fmax(e - 6, 0), 6) + 0.5 * fmin(n, 24) +
           0.1 * fmin(fmax(n - 24, 0), BUDGET_SCORE_TRIALS - 24);
}

/* Epochs one full Hyperband pass costs with resume (a promoted trial trains only the epochs it
 * lacks): brackets s = smax..0 with n = ceil((smax+1)/(s+1) * eta^s) trials at R/eta^s units. */
static double hyperband_units(int R, int eta, int *trials)
{
    int smax = 0;
    double total = 0;

    while (pow(eta, smax + 1) <= R)
        smax++;
    *trials = 0;
    for (int s = smax; s >= 0; s--) {
        double n = ceil((double)(smax + 1) / (s + 1) * pow(eta, s));
        double r = (double)R / pow(eta, s), prev = 0;
        *trials += (int)n;
        for (int i = 0; i <= s; i++) {
            double ni = floor(n / pow(eta, i)), ri = r * pow(eta, i);
            total += ni * (ri - prev);
            prev = ri;
        }
    }
    return total;
}

/* ASHA with rungs at m, m*eta, .., m*eta^s epochs: the epochs n trials cost when each rung keeps
 * its top 1/eta. */
static double asha_epochs(int n, int eta, int s, int m)
{
    double total = 0, prev = 0;
    int k_n = n;

    for (int k = 0; k <= s; k++) {
        double r = m * pow(eta, k);
        total += k_n * (r - prev);
        prev = r;
        k_n /= eta;
        if (k_n < 1)
            k_n = 1;
    }
    return total;
}

static void keep(hone_budget_plan *p, double sc, int R, int eta, int m, int trials)
{
    p->score = sc;
    p->R = R;
    p->eta = eta;
    p->epoch_multiplier = m;
    p->full_epochs = R * m;
    p->trials = trials;
}

static void plan_flat(const hone_budget_in *in, double usable, hone_budget_plan *p)
{
    /* Full-schedule trials: at least two rounds over the slots so a model has data. */
    for (int e = 1; e <= in->max_full && e <= 1000; e++) {
        int n = (int)floor(usable * in->slots / (e * in->epoch_s + in->launch_s));
        if (e * in->epoch_s + in->launch_s > usable || (n < 2 * in->slots && e > 1))
            continue;
        double sc = hone_budget_score(e, n);
        if (sc > p->score)
            keep(p, sc, e, in->eta >= 2 ? in->eta : 3, 1, n);
    }
}

static void plan_asha(const hone_budget_in *in, double usable, hone_budget_plan *p)
{
    double capacity = usable * in->slots / in->epoch_s;
    double t = in->epoch_s + in->launch_s / 2; /* an epoch, with start-up spread over a few */
    int lo = in->eta >= 2 ? in->eta : 2, hi = in->eta >= 2 ? in->eta : 3;
    /* Rungs m, m*eta, .. ; the first trial reaches the top rung once eta^s trials have passed
     * the first rung, eta^(s-1) the second, ...: rung k takes ceil(eta^(s-k) / slots) rounds of
     * its epochs. That path within 70% of the budget, so the best trials finish their whole
     * schedule with time to spare. */
    for (int eta = lo; eta <= hi; eta++)
        for (int s = 1; s <= 3; s++)
            for (int m = 1; m <= 10; m++) {
                int full = m * (int)lround(pow(eta, s)), n;
                double crit = 0, prev = 0;
                for (int k = 0; k <= s; k++) {
                    double need = pow(eta, s - k), r = m * pow(eta, k);
                    crit += ceil(need / in->slots) * (r - prev) * t;
                    prev = r;
                }
                if (crit > 0.7 * usable || full > in->max_full)
                    continue;
                for (n = eta + 1; n < HONE_BUDGET_MAX_TRIALS; n++)
                    if (asha_epochs(n + 1, eta, s, m) + (n + 1) * in->launch_s / in->epoch_s >
                        capacity)
                        break;
                if (asha_epochs(n, eta, s, m) + n * in->launch_s / in->epoch_s > capacity)
                    continue;
                double sc = hone_budget_score(full, n);
                if (sc > p->score)
                    keep(p, sc, (int)lround(pow(eta, s)), eta, m, n);
            }
}

static void plan_hyperband(const hone_budget_in *in, double usable, hone_budget_plan *p)
{
    double capacity = usable * in->slots / in->epoch_s;
    double t = in->epoch_s + in->launch_s / 2;
    int lo = in->eta >= 2 ? in->eta : 2, hi = in->eta >= 2 ? in->eta : 3;
    for (int eta = lo; eta <= hi; eta++)
        for (int R = eta; R <= 81 && R <= in->max_full; R++)
            for (int m = 1; m <= 6 && R * m <= in->max_full; m++) {
                int n;
                double units = hyperband_units(R, eta, &n);
                double pass = units * m + n * in->launch_s / in->epoch_s;
                if (pass > capacity || R * m * t > usable)
                    continue;
                int passes = (int)floor(capacity / pass);
                double sc = hone_budget_score(R * m, n * passes);
                if (sc > p->score)
                    keep(p, sc, R, eta, m, n * passes);
            }
}

int hone_budget_plan_make(const hone_budget_in *in, hone_budget_plan *out)
{
    memset(out, 0, sizeof(*out));
    out->score = -1;
    if (!in || !(in->budget_s > 0) || in->slots < 1 || !(in->epoch_s > 0) || in->max_full < 1 ||
        !(in->launch_s >= 0) || (in->eta != 0 && in->eta < 2))
        return HONE_EINVAL;
    /* the finish reserve, and a trial's tail of stragglers */
    double usable = hone_budget_end(0, in->budget_s) * 0.95;
    switch (in->algo) {
    case HONE_ALGO_RANDOM:
    case HONE_ALGO_BAYESIAN:
        plan_flat(in, usable, out);
        break;
    case HONE_ALGO_ASHA:
        plan_asha(in, usable, out);
        break;
    default:
        plan_hyperband(in, usable, out);
        break;
    }
    if (out->score < 0) /* nothing fits: the smallest search there is, trials of one epoch */
        keep(out, hone_budget_score(1, in->slots), 1, in->eta >= 2 ? in->eta : 2, 1, in->slots);
    return HONE_OK;
}

void hone_budget_search_opts(const hone_budget_plan *plan, hone_search_opts *o)
{
    int flat = !hone_algo_multifidelity(o->algo); /* random, bayesian */
    if (plan) {
        if (flat) {
            o->max_epochs = plan->full_epochs;
        } else {
            o->R = plan->R;
            o->eta = plan->eta;
            o->epoch_multiplier = plan->epoch_multiplier;
        }
    }
    o->max_trials = HONE_BUDGET_MAX_TRIALS;
    if (!flat && o->algo != HONE_ALGO_ASHA) {
        /* passes of the brackets: as many as the search's limit of a million trials allows, at
         * most 1000 (its bookkeeping is a few ints a bracket) */
        long per = 0, pw = 1;
        int smax = 0;
        while (pw * o->eta <= o->R) {
            pw *= o->eta;
            smax++;
        }
        for (int s = 0; s <= smax; s++) {
            long es = 1;
            for (int i = 0; i < s; i++)
                es *= o->eta;
            per += ((long)(smax + 1) * es + s) / (s + 1);
        }
        long passes = per > 0 ? 1000000 / per : 1;
        o->hb_iterations = (int)(passes > 1000 ? 1000 : passes < 1 ? 1 : passes);
    }
}

/* ------------------------------------------------------------------- the estimate */

/* Weight of the newest epoch in the recent average. */
#define BUDGET_EWMA 0.25

void hone_budget_est_init(hone_budget_est *e, double epoch_hint, double launch_hint)
{
    memset(e, 0, sizeof(*e));
    e->epoch_s = epoch_hint > 0 ? epoch_hint : NAN;
    e->ewma = e->epoch_s;
    e->start_s = launch_hint > 0 ? launch_hint : 0;
    e->tail_s = 0;
}

void hone_budget_est_epoch(hone_budget_est *e, double seconds)
{
    if (!(seconds > 0) || !isfinite(seconds))
        return;
    e->sum += seconds;
    e->n_epoch++;
    e->ewma = e->n_epoch == 1 ? seconds : BUDGET_EWMA * seconds + (1 - BUDGET_EWMA) * e->ewma;
    e->epoch_s = e->sum / (double)e->n_epoch; /* measured: the hint no longer counts */
}

/* A running mean that starts from the first sample (the prior only stands in until then). */
static void mean_in(double *m, long *n, double x)
{
    *m = *n == 0 ? x : *m + (x - *m) / (double)(*n + 1);
    (*n)++;
}

void hone_budget_est_start(hone_budget_est *e, double seconds)
{
    if (!(seconds >= 0) || !isfinite(seconds))
        return;
    double ep = hone_budget_est_epoch_s(e);
    if (isnan(ep)) {
        /* nothing timed an epoch yet (trials whose first rung is one epoch report once before
         * they pause): start-up and epoch together stand for an epoch until one is measured */
        e->epoch_s = e->ewma = seconds > 0 ? seconds : NAN;
        return;
    }
    double extra = seconds - ep;
    mean_in(&e->start_s, &e->n_start, extra > 0 ? extra : 0);
}

void hone_budget_est_tail(hone_budget_est *e, double seconds)
{
    if (!(seconds >= 0) || !isfinite(seconds))
        return;
    mean_in(&e->tail_s, &e->n_tail, seconds);
}

double hone_budget_est_epoch_s(const hone_budget_est *e)
{
    if (isnan(e->epoch_s))
        return NAN;
    return e->n_epoch > 0 && e->ewma > e->epoch_s ? e->ewma : e->epoch_s;
}

/* ------------------------------------------------------------------- the decisions */

double hone_budget_end(double start, double budget_s)
{
    double reserve = budget_s * 0.01;
    reserve = reserve < 1 ? 1 : reserve > 15 ? 15 : reserve;
    if (reserve > budget_s / 4)
        reserve = budget_s / 4;
    return start + budget_s - reserve;
}

int hone_budget_can_launch(const hone_budget_est *e, double now, double end, int epochs)
{
    double ep = hone_budget_est_epoch_s(e);
    if (now >= end)
        return 0;
    if (isnan(ep))
        return 1;
    return now + e->start_s + e->tail_s + epochs * ep * HONE_BUDGET_SAFETY <= end;
}

int hone_budget_must_stop(const hone_budget_est *e, double now, double end, int left)
{
    double ep = hone_budget_est_epoch_s(e);
    if (now >= end)
        return left > 0;
    if (left <= 0 || isnan(ep))
        return 0;
    return now + left * ep + e->tail_s > end;
}

int hone_budget_trial_left(const hone_search *s, int trial, int epoch)
{
    if (!s || trial < 0 || trial >= s->nt || s->t[trial].state != SR_RUNNING)
        return 0;
    int left = s->t[trial].target - epoch;
    return left > 0 ? left : 0;
}

int hone_budget_gate(const hone_search *s, const hone_budget_est *e, double now, double end,
                     hone_ask *peeked, hone_budget_gate_verdict *verdict)
{
    int rc = hone_search_peek(s, peeked);
    *verdict = HONE_GATE_ASK;
    if (rc)
        return rc;
    if (peeked->kind == HONE_ASK_NEW) {
        if (!hone_budget_can_launch(e, now, end, peeked->epochs))
            *verdict = HONE_GATE_HOLD;
    } else if (peeked->kind == HONE_ASK_RESUME) {
        int from = peeked->trial >= 0 && peeked->trial < s->nt ? s->t[peeked->trial].last_epoch : 0;
        if (!hone_budget_can_launch(e, now, end, peeked->epochs - from))
            *verdict = HONE_GATE_DROP;
    }
    return HONE_OK;
}
