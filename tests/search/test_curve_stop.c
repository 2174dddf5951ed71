/* test_curve_stop: the learning-curve stopping rule inside the search facade (curve_stop,
 * hyperband_es). Random search with and without it trains the same configurations (each draws
 * from its own stream), so the rule's effect is measured trial by trial: it saves epochs, never
 * stops the trial that ends best, answers STOP only below a trial's target and repeats it; a
 * diverged trial stops; a minimised metric works alike; bad confidences are refused; and a search
 * rebuilt from its events after a crash decides exactly as the original did. */
#include "search_internal.h"
#include "test_search_sim.h"

static double noisy_curve(const double *u, int epoch, int trial)
{
    /* the sim's curve with the noise of a real validation metric (about 0.003) */
    hone_rng r;
    hone_rng_seed2(&r, 99, (uint64_t)trial * 1000u + (uint64_t)epoch);
    return sim_curve(u, epoch, trial) + 0.003 * hone_rng_normal(&r);
}

static double loss_curve(const double *u, int epoch, int trial)
{
    return 1.0 - noisy_curve(u, epoch, trial);
}

static double nan_curve(const double *u, int epoch, int trial)
{
    /* every 5th trial diverges after its 3rd epoch */
    if (trial % 5 == 4 && epoch > 3)
        return NAN;
    return noisy_curve(u, epoch, trial);
}

static void opts(hone_search_opts *o, hone_algo algo, int curve)
{
    hone_search_opts_default(o);
    o->algo = algo;
    o->seed = 5;
    o->max_parallel = 3;
    o->max_trials = 30;
    o->max_epochs = 20;
    o->R = 27;
    o->eta = 3;
    o->curve_stop = curve;
}

static sim run(const hone_space *sp, const hone_search_opts *o,
               double (*f)(const double *, int, int))
{
    hone_search *s;
    REQUIRE(hone_search_new(sp, o, &s) == 0);
    sim m;
    sim_init(&m, s, sp, o->max_parallel, f);
    while (sim_step(&m))
        ;
    return m;
}

/* Every STOP below a trial's target came from the rule, on a trial that had not reached the
 * best of the others; the trial's own report of that epoch repeats STOP, as does a later one. */
static int check_stops(const sim *m, int target, int strict)
{
    int n = 0;
    for (int k = 0; k < m->nev; k++) {
        const sim_event *e = &m->ev[k];
        if (e->type != EV_REPORT || e->kind != HONE_DECIDE_STOP || e->epoch >= target)
            continue;
        double pred, prob, bar;
        int c = hone_search_curve_stopped(m->s, e->trial, &pred, &prob, &bar);
        if (!c && !strict)
            continue; /* a Hyperband rung's loser */
        REQUIRE(c == 1);
        REQUIRE(prob < 0.05 && (m->s->o.maximize ? pred < bar : pred > bar));
        REQUIRE(e->epoch >= hone_curve_min_epochs(m->s->cap));
        hone_decision d;
        REQUIRE(hone_search_report(m->s, e->trial, e->epoch, e->metric, &d) == 0);
        REQUIRE(d == HONE_DECIDE_STOP);
        REQUIRE(hone_search_report(m->s, e->trial, e->epoch + 1, 0.99, &d) == 0);
        REQUIRE(d == HONE_DECIDE_STOP);
        REQUIRE(hone_search_end(m->s, e->trial, 0) == 0);
        n++;
    }
    return n;
}

static void random_same_configs(const hone_space *sp, int maximize)
{
    hone_search_opts o;
    double (*f)(const double *, int, int) = maximize ? noisy_curve : loss_curve;
    opts(&o, HONE_ALGO_RANDOM, 0);
    o.maximize = maximize;
    sim a = run(sp, &o, f);
    o.curve_stop = 1;
    sim b = run(sp, &o, f);
    REQUIRE(a.nvals == b.nvals);
    for (int t = 0; t < a.nvals; t++)
        REQUIRE(memcmp(a.vals + 8 * t, b.vals + 8 * t, (size_t)a.np * sizeof(double)) == 0);
    int stops = check_stops(&b, o.max_epochs, 1);
    REQUIRE(check_stops(&a, o.max_epochs, 1) == 0);
    hone_search_progress pa, pb;
    hone_search_progress_get(a.s, &pa);
    hone_search_progress_get(b.s, &pb);
    printf("random (%s): %ld epochs without the rule, %ld with it (%d trials stopped); best "
           "trial %d %.4f against %d %.4f\n",
           maximize ? "max" : "min", a.epochs, b.epochs, stops, pa.best_trial, pa.best_metric,
           pb.best_trial, pb.best_metric);
    REQUIRE(pb.trials_stopped_early == stops && stops >= 10);
    REQUIRE(b.epochs * 10 < a.epochs * 7); /* at least 30% of the epochs saved */
    /* the trial that ends best without the rule is never stopped by it */
    REQUIRE(!hone_search_curve_stopped(b.s, pa.best_trial, NULL, NULL, NULL));
    REQUIRE(pb.best_trial == pa.best_trial && pb.best_metric == pa.best_metric);
    hone_search_free(a.s);
    hone_search_free(b.s);
    sim_free(&a);
    sim_free(&b);
}

static void diverged(const hone_space *sp)
{
    hone_search_opts o;
    opts(&o, HONE_ALGO_RANDOM, 1);
    sim m = run(sp, &o, nan_curve);
    int nan_stops = 0;
    for (int t = 4; t < m.nvals; t += 5) {
        double pred;
        /* a diverged trial stops at its 5th epoch (two NaN reports), unless it is trial 4 and
         * no other trial had reported yet (never here: three run at once) */
        REQUIRE(hone_search_curve_stopped(m.s, t, &pred, NULL, NULL) == 1);
        REQUIRE(isinf(pred));
        nan_stops++;
    }
    printf("diverged trials stopped: %d\n", nan_stops);
    REQUIRE(nan_stops == 6);
    hone_search_free(m.s);
    sim_free(&m);
}

static void hyperband_es(const hone_space *sp)
{
    hone_search_opts o;
    opts(&o, HONE_ALGO_HYPERBAND, 0);
    sim a = run(sp, &o, noisy_curve);
    opts(&o, HONE_ALGO_HYPERBAND_ES, 0);
    sim b = run(sp, &o, noisy_curve);
    int stops = check_stops(&b, 1 << 30, 0);
    hone_search_progress pa, pb;
    hone_search_progress_get(a.s, &pa);
    hone_search_progress_get(b.s, &pb);
    /* stops between rungs: below a rung's target (the rung's boundary answers PAUSE or STOP of
     * its own, check_stops counts only the rule's) */
    int curve = 0;
    for (int t = 0; t < b.nvals; t++)
        curve += hone_search_curve_stopped(b.s, t, NULL, NULL, NULL);
    printf("hyperband: %ld epochs, best %.4f; hyperband_es: %ld epochs, best %.4f, %d curve "
           "stops\n",
           a.epochs, pa.best_metric, b.epochs, pb.best_metric, curve);
    REQUIRE(stops == curve && curve > 0);
    REQUIRE(b.epochs < a.epochs && pb.best_metric >= pa.best_metric - 0.005);
    REQUIRE(pb.trials_running == 0 && pb.trials_created == pa.trials_created);
    hone_search_free(a.s);
    hone_search_free(b.s);
    sim_free(&a);
    sim_free(&b);
}

static void bad_opts(const hone_space *sp)
{
    hone_search_opts o;
    hone_search *s;
    opts(&o, HONE_ALGO_RANDOM, 1);
    REQUIRE(o.curve_confidence == 0.95);
    o.curve_confidence = 0.3;
    REQUIRE(hone_search_new(sp, &o, &s) == HONE_EINVAL);
    o.curve_confidence = 1.0;
    REQUIRE(hone_search_new(sp, &o, &s) == HONE_EINVAL);
    o.curve_confidence = NAN;
    REQUIRE(hone_search_new(sp, &o, &s) == HONE_EINVAL);
    opts(&o, HONE_ALGO_HYPERBAND_ES, 0);
    o.curve_confidence = 2;
    REQUIRE(hone_search_new(sp, &o, &s) == HONE_EINVAL);
    o.curve_stop = 0;
    o.algo = HONE_ALGO_HYPERBAND; /* the rule off: its confidence is not looked at */
    REQUIRE(hone_search_new(sp, &o, &s) == 0);
    hone_search_free(s);
    hone_algo a;
    REQUIRE(hone_algo_parse("hyperband_es", &a) == 0 && a == HONE_ALGO_HYPERBAND_ES);
    REQUIRE(!strcmp(hone_algo_name(HONE_ALGO_HYPERBAND_ES), "hyperband_es"));
    REQUIRE(hone_algo_multifidelity(HONE_ALGO_HYPERBAND_ES) &&
            !hone_algo_multifidelity(HONE_ALGO_BAYESIAN));
}

/* Crash and rebuild, as test_rebuild_replay does for the other algorithms. */
static void replay(const hone_space *sp, hone_algo algo, int cut)
{
    hone_search_opts o;
    opts(&o, algo, 1);
    o.max_trials = 16;
    hone_search *a, *b, *c;
    REQUIRE(hone_search_new(sp, &o, &a) == 0);
    sim m;
    sim_init(&m, a, sp, 3, noisy_curve);
    m.fail_every = 7;
    for (int i = 0; i < cut; i++)
        REQUIRE(sim_step(&m));
    REQUIRE(hone_search_new(sp, &o, &b) == 0);
    REQUIRE(hone_search_new(sp, &o, &c) == 0);
    for (int k = 0; k < m.nev; k++) {
        if (m.ev[k].type == EV_ASK && m.ev[k].kind == HONE_ASK_WAIT)
            continue;
        sim_mirror(b, m.np, &m.ev[k], 1);
        sim_mirror(c, m.np, &m.ev[k], 0);
    }
    int from = m.nev;
    while (sim_step(&m)) {
        for (int k = from; k < m.nev; k++) {
            sim_mirror(b, m.np, &m.ev[k], 0);
            sim_mirror(c, m.np, &m.ev[k], 0);
        }
        from = m.nev;
    }
    for (int k = from; k < m.nev; k++) {
        sim_mirror(b, m.np, &m.ev[k], 0);
        sim_mirror(c, m.np, &m.ev[k], 0);
    }
    int stops = 0;
    for (int t = 0; t < m.nvals; t++) {
        int sa = hone_search_curve_stopped(a, t, NULL, NULL, NULL);
        REQUIRE(sa == hone_search_curve_stopped(b, t, NULL, NULL, NULL));
        REQUIRE(sa == hone_search_curve_stopped(c, t, NULL, NULL, NULL));
        stops += sa;
    }
    hone_search_progress x, y;
    hone_search_progress_get(a, &x);
    hone_search_progress_get(b, &y);
    REQUIRE(x.epochs_done == y.epochs_done && x.best_trial == y.best_trial &&
            x.trials_stopped_early == y.trials_stopped_early);
    printf("%s with the rule: replayed after %d steps, %d events, %d curve stops\n",
           hone_algo_name(algo), cut, m.nev, stops);
    REQUIRE(stops > 0);
    sim_free(&m);
    hone_search_free(a);
    hone_search_free(b);
    hone_search_free(c);
}

/* The rule on DEHB (automl_early_stop curve with dehb) over three passes, as a budgeted search
 * runs it: a trial the rule stops leaves its rung through DEHB's own bookkeeping. Passes after
 * the first evaluate n_i new offspring at every rung i of every bracket (the paper's DEHB) and
 * resume none, whatever the rule stops; Hyperband's rung check (what a curve stop of a DEHB
 * trial ran before) moved a bracket past a rung DEHB had not finished handing out. */
static void dehb_passes(const hone_space *sp)
{
    hone_search_opts o;
    opts(&o, HONE_ALGO_DEHB, 1);
    o.hb_iterations = 3;
    sim m = run(sp, &o, noisy_curve);
    const hb_state *hb = &m.s->hb;
    int stops = 0, resumes = 0, want = 0, got = 0;
    for (int t = 0; t < m.nvals; t++) {
        stops += hone_search_curve_stopped(m.s, t, NULL, NULL, NULL);
        got += m.s->t[t].bracket >= hb->nb;
    }
    for (int g = hb->nb; g < hb->total; g++)
        for (int i = 0; i <= hb->br[g % hb->nb].s; i++)
            want += hb->br[g % hb->nb].n[i];
    for (int k = 0; k < m.nev; k++) {
        if (m.ev[k].type != EV_ASK || m.ev[k].kind != HONE_ASK_RESUME)
            continue;
        REQUIRE(m.s->t[m.ev[k].trial].bracket < hb->nb); /* first pass only */
        resumes++;
    }
    printf("dehb with the rule, 3 passes: %d trials (%d of the later passes, %d planned), %d curve "
           "stops, %d resumes in the first pass\n",
           m.nvals, got, want, stops, resumes);
    REQUIRE(got == want);
    REQUIRE(stops > 0 && resumes > 0);
    hone_search_free(m.s);
    sim_free(&m);
}

int main(void)
{
    hone_space *sp = sim_space();
    bad_opts(sp);
    random_same_configs(sp, 1);
    random_same_configs(sp, 0);
    diverged(sp);
    hyperband_es(sp);
    replay(sp, HONE_ALGO_RANDOM, 30);
    replay(sp, HONE_ALGO_BAYESIAN, 30);
    replay(sp, HONE_ALGO_HYPERBAND_ES, 40);
    replay(sp, HONE_ALGO_DEHB, 40);
    dehb_passes(sp);
    hone_space_free(sp);
    printf("ok\n");
    return 0;
}
