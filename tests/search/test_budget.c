/* test_budget: a budgeted search driven through a small event simulator with a fake clock and fake
 * epoch times (fast, slow, noisy; per-config speeds), 1, 2 and 4 workers, several algorithms. The
 * governor is budget.h's (hone_budget_gate, hone_budget_must_stop, the estimate), as the
 * controller runs it. Checked: the simulated job ends within the budget and uses most of it; the
 * workers stay busy until the first launch the budget refused (idle below 3% of worker time
 * there); the best model is a finished trial (it trained its whole schedule); the user's count
 * caps (2 trials) never end a budgeted search early; replaying the stored events (drops included)
 * rebuilds the same search. And the planner: more budget never plans worse, bad input refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "test_search_sim.h"

enum { MAXW = 4, MAXT = 4096 };

typedef struct bt_event {
    int kind; /* 0 new, 1 resume, 2 report, 3 end, 4 drop */
    int trial, epoch;
    double metric;
    double values[8];
} bt_event;

typedef struct bworker {
    int trial;   /* -1 idle */
    int ending;  /* in its tail (test pass / checkpoint) */
    int first;   /* next report is the first since launch */
    double next; /* time of its next event */
    double launched, last;
    double idle_since;
} bworker;

typedef struct bsim {
    hone_search *s;
    hone_space *sp;
    int np, P, full;
    double budget, end, base, noise;
    hone_budget_est est;
    bworker w[MAXW];
    double vals[MAXT][8];
    int finished[MAXT]; /* trained its whole schedule (and ran its test pass) */
    int trained[MAXT];  /* epochs reported */
    int budget_stopped[MAXT];
    double best_val[MAXT];
    bt_event *ev;
    int nev, capev;
    double now, hold_at, job_end;
    double idle_before_hold; /* worker-seconds idle before the first refused launch */
    int held, done, drops, stops, launches;
    unsigned long rng;
} bsim;

static void ev_add(bsim *m, int kind, int trial, int epoch, double metric, const double *v)
{
    if (m->nev == m->capev) {
        m->capev = m->capev ? 2 * m->capev : 1024;
        m->ev = realloc(m->ev, (size_t)m->capev * sizeof(*m->ev));
        REQUIRE(m->ev);
    }
    bt_event *e = &m->ev[m->nev++];
    memset(e, 0, sizeof(*e));
    e->kind = kind;
    e->trial = trial;
    e->epoch = epoch;
    e->metric = metric;
    if (v)
        memcpy(e->values, v, (size_t)m->np * sizeof(double));
}

static double uniform(bsim *m)
{
    m->rng = m->rng * 6364136223846793005ul + 1442695040888963407ul;
    return (double)(m->rng >> 11) / 9007199254740992.0;
}

/* One epoch of trial t: base time, a per-config factor (0.7x .. 1.3x, like batch sizes), noise. */
static double epoch_time(bsim *m, int t)
{
    double u[8];
    hone_space_to_unit(m->sp, m->vals[t], u);
    double f = 0.7 + 0.6 * u[0];
    double n = 1 + m->noise * (2 * uniform(m) - 1);
    return m->base * f * n;
}

static const double START_S = 1.5, TAIL_FULL_S = 0.8, TAIL_PAUSE_S = 0.2, FINISH_S = 0.3;

static void launch(bsim *m, const hone_ask *a)
{
    int wi = -1;
    for (int i = 0; i < m->P; i++)
        if (m->w[i].trial < 0) {
            wi = i;
            break;
        }
    REQUIRE(wi >= 0 && a->trial < MAXT);
    bworker *w = &m->w[wi];
    if (a->kind == HONE_ASK_NEW) {
        memcpy(m->vals[a->trial], a->values, (size_t)m->np * sizeof(double));
        m->best_val[a->trial] = -INFINITY;
        ev_add(m, 0, a->trial, a->epochs, NAN, a->values);
    } else {
        ev_add(m, 1, a->trial, a->epochs, NAN, NULL);
    }
    m->idle_before_hold += m->held ? 0 : m->now - w->idle_since;
    w->trial = a->trial;
    w->ending = 0;
    w->first = 1;
    w->launched = m->now;
    w->next = m->now + START_S + epoch_time(m, a->trial);
    m->launches++;
}

static int busy_count(const bsim *m)
{
    int n = 0;
    for (int i = 0; i < m->P; i++)
        n += m->w[i].trial >= 0;
    return n;
}

/* The governor fills free workers. */
static void fill(bsim *m)
{
    for (int guard = 0; guard < 10000 && busy_count(m) < m->P; guard++) {
        hone_ask peek, a;
        hone_budget_gate_verdict v;
        REQUIRE(hone_budget_gate(m->s, &m->est, m->now, m->end, &peek, &v) == 0);
        if (v == HONE_GATE_DROP) {
            REQUIRE(hone_search_drop(m->s, peek.trial) == 0);
            ev_add(m, 4, peek.trial, 0, NAN, NULL);
            m->drops++;
            continue;
        }
        if (v == HONE_GATE_HOLD) {
            if (!m->held) {
                m->held = 1;
                m->hold_at = m->now;
                for (int i = 0; i < m->P;
                     i++) /* idle workers up to now count, then stop counting */
                    if (m->w[i].trial < 0)
                        m->idle_before_hold += m->now - m->w[i].idle_since;
            }
            return;
        }
        REQUIRE(hone_search_ask(m->s, &a) == 0);
        if (a.kind == HONE_ASK_DONE)
            m->done = 1;
        if (a.kind != HONE_ASK_NEW && a.kind != HONE_ASK_RESUME)
            return;
        launch(m, &a);
    }
}

static void on_event(bsim *m, bworker *w)
{
    int t = w->trial;
    if (w->ending) { /* the trial's process ends */
        hone_budget_est_tail(&m->est, m->now - w->last);
        REQUIRE(hone_search_end(m->s, t, 0) == 0);
        ev_add(m, 3, t, 0, NAN, NULL);
        w->trial = -1;
        w->idle_since = m->now;
        return;
    }
    /* a report: the epoch after the last one this trial reported */
    int epoch = ++m->trained[t];
    double u[8];
    hone_space_to_unit(m->sp, m->vals[t], u);
    double metric = sim_curve(u, epoch, t);
    if (metric > m->best_val[t])
        m->best_val[t] = metric;
    if (w->first)
        hone_budget_est_start(&m->est, m->now - w->launched);
    else
        hone_budget_est_epoch(&m->est, m->now - w->last);
    w->first = 0;
    w->last = m->now;
    hone_decision d;
    REQUIRE(hone_search_report(m->s, t, epoch, metric, &d) == 0);
    ev_add(m, 2, t, epoch, metric, NULL);
    if (d == HONE_DECIDE_CONTINUE &&
        hone_budget_must_stop(&m->est, m->now, m->end, hone_budget_trial_left(m->s, t, epoch))) {
        d = HONE_DECIDE_STOP;
        m->budget_stopped[t] = 1;
        m->stops++;
    }
    if (d == HONE_DECIDE_CONTINUE) {
        w->next = m->now + epoch_time(m, t);
        return;
    }
    w->ending = 1;
    int full = d == HONE_DECIDE_STOP && epoch == m->full && !m->budget_stopped[t];
    w->next = m->now + (full ? TAIL_FULL_S : TAIL_PAUSE_S);
    if (full)
        m->finished[t] = 1; /* trained its whole schedule: the test pass runs in the tail */
}

/* Runs one budgeted job; returns the simulated search's end time. */
static void run(bsim *m)
{
    for (int i = 0; i < m->P; i++)
        m->w[i].trial = -1;
    fill(m);
    for (long guard = 0; guard < 2000000; guard++) {
        bworker *w = NULL;
        for (int i = 0; i < m->P; i++)
            if (m->w[i].trial >= 0 && (!w || m->w[i].next < w->next))
                w = &m->w[i];
        if (!w) {
            m->job_end = m->now + FINISH_S;
            return;
        }
        m->now = w->next;
        on_event(m, w);
        fill(m);
    }
    REQUIRE(!"simulation did not end");
}

typedef struct bcase {
    hone_algo algo;
    int P;
    double base, noise, budget;
    double hint; /* the first estimate, as a factor of the true epoch time; 0: none (no plan) */
    const char *name;
} bcase;

/* Replays the stored events into a fresh search (as the controller's rebuild does) and checks it
 * ends up where the simulated one is. */
static void check_replay(bsim *m, const hone_search_opts *o)
{
    hone_search *r = NULL;
    REQUIRE(hone_search_new(m->sp, o, &r) == 0);
    for (int i = 0; i < m->nev; i++) {
        const bt_event *e = &m->ev[i];
        hone_ask a;
        hone_decision d;
        switch (e->kind) {
        case 0:
            CHECK(hone_search_replay_new(r, e->trial, e->values, e->epoch) == 0);
            break;
        case 1:
            CHECK(hone_search_ask(r, &a) == 0 && a.kind == HONE_ASK_RESUME && a.trial == e->trial);
            break;
        case 2:
            CHECK(hone_search_report(r, e->trial, e->epoch, e->metric, &d) == 0);
            break;
        case 3:
            CHECK(hone_search_end(r, e->trial, 0) == 0);
            break;
        default:
            CHECK(hone_search_drop(r, e->trial) == 0);
            break;
        }
    }
    hone_search_progress a, b;
    hone_ask pa, pb;
    hone_search_progress_get(m->s, &a);
    hone_search_progress_get(r, &b);
    CHECK(a.trials_created == b.trials_created && a.trials_finished == b.trials_finished &&
          a.epochs_done == b.epochs_done && a.best_trial == b.best_trial);
    hone_search_peek(m->s, &pa);
    hone_search_peek(r, &pb);
    CHECK(pa.kind == pb.kind && pa.trial == pb.trial && pa.epochs == pb.epochs);
    hone_search_free(r);
}

static void one_case(const bcase *bc)
{
    bsim *m = calloc(1, sizeof(*m));
    REQUIRE(m);
    m->sp = sim_space();
    m->np = hone_space_nparams(m->sp);
    m->P = bc->P;
    m->base = bc->base;
    m->noise = bc->noise;
    m->budget = bc->budget;
    m->end = hone_budget_end(0, bc->budget);
    m->rng = 12345 + (unsigned long)bc->P;

    /* the user's settings: 2 trials at most, R 27 / nu 3, 12 epochs a trial */
    hone_search_opts o;
    hone_search_opts_default(&o);
    o.algo = bc->algo;
    o.seed = 7;
    o.max_trials = 2;
    o.max_epochs = 12;
    o.R = 27;
    o.eta = 3;
    o.max_parallel = bc->P;
    /* the first estimate is off (a hint measured elsewhere): the governor learns */
    int flat = bc->algo == HONE_ALGO_RANDOM || bc->algo == HONE_ALGO_BAYESIAN;
    hone_budget_in in = {
        bc->algo, bc->budget, bc->P, bc->base * bc->hint, START_S + TAIL_FULL_S, flat ? 12 : 27, 3};
    hone_budget_plan plan = {27, 3, 1, flat ? 12 : 27, 0, 0};
    if (bc->hint > 0) {
        REQUIRE(hone_budget_plan_make(&in, &plan) == 0);
        hone_budget_search_opts(&plan, &o);
    } else { /* no first estimate: the user's sizes, the caps lifted, the governor alone */
        hone_budget_search_opts(NULL, &o);
    }
    m->full = plan.full_epochs;
    REQUIRE(m->full >= 1);
    hone_budget_est_init(&m->est, in.epoch_s, 1.0);
    REQUIRE(hone_search_new(m->sp, &o, &m->s) == 0);
    run(m);

    int ntr = 0, nfin = 0, best = -1;
    hone_search_progress p;
    hone_search_progress_get(m->s, &p);
    ntr = p.trials_created;
    for (int t = 0; t < ntr && t < MAXT; t++)
        if (m->finished[t] == 1) {
            nfin++;
            CHECK(!m->budget_stopped[t]);
            if (best < 0 || m->best_val[t] > m->best_val[best])
                best = t;
        }
    double idle = m->held ? m->idle_before_hold / (m->P * m->hold_at) : NAN;
    printf("%-34s P=%d plan R %d eta %d m %d (full %d): %d trials, %d finished, %d budget stops, "
           "%d drops; ends %.1f of %.0f s (%.1f%%), first hold at %.1f s, idle before it %.2f%%\n",
           bc->name, bc->P, plan.R, plan.eta, plan.epoch_multiplier, plan.full_epochs, ntr, nfin,
           m->stops, m->drops, m->job_end, bc->budget, 100 * m->job_end / bc->budget, m->hold_at,
           100 * idle);
    CHECK(m->job_end <= bc->budget);        /* within the budget */
    CHECK(m->job_end >= 0.85 * bc->budget); /* and most of it used */
    CHECK(m->held && !m->done);             /* the budget ended it, not a count */
    CHECK(ntr > 2);                         /* the user's cap of 2 trials was lifted */
    CHECK(idle <= 0.03);                    /* workers busy until the last launch window */
    CHECK(m->hold_at >= bc->budget * 0.6);  /* and that window is the budget's tail */
    CHECK(nfin >= 1 && best >= 0);          /* the best model is a finished trial */
    CHECK(best < 0 || m->trained[best] == m->full);
    check_replay(m, &o);
    hone_search_free(m->s);
    hone_space_free(m->sp);
    free(m->ev);
    free(m);
}

static void test_simulated_jobs(void)
{
    static const bcase cases[] = {
        {HONE_ALGO_ASHA, 1, 2.0, 0.0, 300, 1.3, "asha fast"},
        {HONE_ALGO_ASHA, 2, 2.0, 0.3, 300, 0.7, "asha fast noisy, hint low"},
        {HONE_ALGO_ASHA, 4, 2.0, 0.3, 300, 1.3, "asha fast noisy"},
        {HONE_ALGO_ASHA, 4, 2.0, 0.3, 300, 0, "asha fast noisy, no hint"},
        {HONE_ALGO_ASHA, 2, 40.0, 0.1, 1800, 1.0, "asha slow"},
        {HONE_ALGO_HYPERBAND, 1, 2.0, 0.0, 300, 1.3, "hyperband fast"},
        {HONE_ALGO_HYPERBAND, 4, 2.0, 0.3, 300, 0.7, "hyperband fast noisy, hint low"},
        {HONE_ALGO_HYPERBAND, 2, 40.0, 0.1, 1800, 1.0, "hyperband slow"},
        {HONE_ALGO_RANDOM, 1, 2.0, 0.0, 300, 1.3, "random fast"},
        {HONE_ALGO_RANDOM, 4, 2.0, 0.3, 300, 0.7, "random fast noisy, hint low"},
        {HONE_ALGO_RANDOM, 2, 2.0, 0.3, 300, 0, "random fast noisy, no hint"},
        {HONE_ALGO_BAYESIAN, 2, 40.0, 0.2, 1800, 1.0, "bayesian slow noisy"},
        {HONE_ALGO_BOHB, 2, 2.0, 0.3, 200, 1.3, "bohb fast noisy"},
    };
    for (size_t i = 0; i < HONE_ARRAY_LEN(cases); i++)
        one_case(&cases[i]);
}

static void test_plan(void)
{
    static const hone_algo algos[] = {HONE_ALGO_ASHA, HONE_ALGO_HYPERBAND, HONE_ALGO_BAYESIAN,
                                      HONE_ALGO_BOHB, HONE_ALGO_RANDOM};
    for (size_t a = 0; a < HONE_ARRAY_LEN(algos); a++) {
        hone_budget_plan prev = {0}, p;
        prev.score = -1;
        for (int minutes = 2; minutes <= 60; minutes += 2) {
            hone_budget_in in = {algos[a], minutes * 60.0, 2, 50, 6, 27, 0};
            CHECK(hone_budget_plan_make(&in, &p) == 0);
            CHECK(p.R >= 1 && p.eta >= 2 && p.epoch_multiplier >= 1);
            CHECK(p.full_epochs == p.R * p.epoch_multiplier && p.full_epochs <= 27);
            /* the best trial's epochs run one after another: they must fit */
            CHECK(p.full_epochs * 50.0 <= minutes * 60.0 || p.full_epochs <= 2);
            CHECK(p.score >= prev.score); /* more budget never plans worse */
            prev = p;
        }
    }
    hone_budget_plan p, fast;
    hone_budget_in cpu = {HONE_ALGO_ASHA, 720, 2, 50, 6, 27, 0};
    CHECK(hone_budget_plan_make(&cpu, &p) == 0 && p.full_epochs >= 3);
    /* a GPU host (4 workers, ~0.5 s an epoch each): a wide and long search */
    hone_budget_in gpu = {HONE_ALGO_ASHA, 180, 4, 0.5, 1, 27, 0};
    CHECK(hone_budget_plan_make(&gpu, &fast) == 0);
    CHECK(fast.trials >= 100 && fast.full_epochs >= 12);
    /* the user's largest trial bounds the plan; the user's eta is kept */
    hone_budget_in capped = {HONE_ALGO_HYPERBAND, 3600, 2, 5, 2, 9, 3};
    CHECK(hone_budget_plan_make(&capped, &p) == 0 && p.full_epochs <= 9 && p.eta == 3);
    CHECK(hone_budget_score(12, 24) > hone_budget_score(6, 24));
    CHECK(hone_budget_score(6, 100) > hone_budget_score(6, 24));
    CHECK(hone_budget_score(6, 24) > hone_budget_score(30, 2));
    hone_budget_in bad = cpu;
    bad.budget_s = 0;
    CHECK(hone_budget_plan_make(&bad, &p) == HONE_EINVAL);
    bad = cpu;
    bad.slots = 0;
    CHECK(hone_budget_plan_make(&bad, &p) == HONE_EINVAL);
    bad = cpu;
    bad.epoch_s = NAN;
    CHECK(hone_budget_plan_make(&bad, &p) == HONE_EINVAL);
    /* the estimate: a hint until measured, then the measurements; the first report's start-up
     * does not count as an epoch */
    hone_budget_est e;
    hone_budget_est_init(&e, 0, 2);
    CHECK(isnan(hone_budget_est_epoch_s(&e)));
    CHECK(hone_budget_can_launch(&e, 0, 10, 1000)); /* unknown: the first wave measures it */
    hone_budget_est_start(&e, 5); /* no epoch timed yet: start-up and epoch stand for one */
    CHECK(fabs(hone_budget_est_epoch_s(&e) - 5) < 1e-9);
    hone_budget_est_epoch(&e, 2);
    hone_budget_est_epoch(&e, 2);
    CHECK(fabs(hone_budget_est_epoch_s(&e) - 2) < 1e-9);
    CHECK(!hone_budget_can_launch(&e, 0, 10, 5)); /* 5 epochs of 2 s + start-up > 10 s */
    CHECK(hone_budget_can_launch(&e, 0, 100, 5));
    CHECK(hone_budget_must_stop(&e, 95, 100, 3) && !hone_budget_must_stop(&e, 90, 100, 3));
    CHECK(hone_budget_must_stop(&e, 101, 100, 1) && !hone_budget_must_stop(&e, 101, 100, 0));
    CHECK(hone_budget_end(0, 300) < 300 && hone_budget_end(0, 300) >= 285);
}

int main(void)
{
    test_plan();
    test_simulated_jobs();
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
