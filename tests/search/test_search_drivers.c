/* test_search_drivers: the full-budget drivers (random, Bayesian). Scripted asks and reports,
 * max_parallel, failures ranked worst, progress counters, metric direction, determinism from the
 * seed, and the Bayesian driver doing better than random on a smooth problem. */
#include "search_internal.h"
#include "test_search_sim.h"

static hone_search *make(const hone_space *sp, hone_algo algo, uint64_t seed, int trials,
                         int epochs, int P, int maximize)
{
    hone_search_opts o;
    hone_search_opts_default(&o);
    o.algo = algo;
    o.seed = seed;
    o.max_trials = trials;
    o.max_epochs = epochs;
    o.max_parallel = P;
    o.maximize = maximize;
    hone_search *s;
    REQUIRE(hone_search_new(sp, &o, &s) == 0);
    return s;
}

static void scripted_random(const hone_space *sp)
{
    hone_search *s = make(sp, HONE_ALGO_RANDOM, 11, 5, 3, 2, 1);
    hone_search_progress pr;
    hone_search_progress_get(s, &pr);
    REQUIRE(pr.epochs_remaining == 15 && pr.best_trial == -1 && pr.trials_created == 0);
    hone_ask a;
    hone_decision d;
    REQUIRE(hone_search_ask(s, &a) == 0 && a.kind == HONE_ASK_NEW && a.trial == 0 && a.epochs == 3);
    REQUIRE(a.values[0] >= 1e-4 && a.values[0] <= 1 && a.values[1] >= 0 && a.values[1] <= 0.1);
    REQUIRE(hone_search_ask(s, &a) == 0 && a.kind == HONE_ASK_NEW && a.trial == 1);
    REQUIRE(hone_search_ask(s, &a) == 0 && a.kind == HONE_ASK_WAIT);
    REQUIRE(hone_search_report(s, 0, 1, 0.3, &d) == 0 && d == HONE_DECIDE_CONTINUE);
    REQUIRE(hone_search_report(s, 0, 2, 0.6, &d) == 0 && d == HONE_DECIDE_CONTINUE);
    REQUIRE(hone_search_report(s, 0, 2, 0.1, &d) == 0 && d == HONE_DECIDE_CONTINUE);
    REQUIRE(hone_search_report(s, 0, 3, 0.5, &d) == 0 && d == HONE_DECIDE_STOP);
    REQUIRE(hone_search_report(s, 1, 1, 0.9, &d) == 0 && d == HONE_DECIDE_CONTINUE);
    REQUIRE(hone_search_end(s, 0, 0) == 0);
    REQUIRE(hone_search_ask(s, &a) == 0 && a.kind == HONE_ASK_NEW && a.trial == 2);
    REQUIRE(hone_search_end(s, 1, 1) == 0); /* crash: its 0.9 must not count */
    hone_search_progress_get(s, &pr);
    REQUIRE(pr.trials_created == 3 && pr.trials_running == 1 && pr.trials_failed == 1);
    REQUIRE(pr.trials_finished == 1 && pr.trials_stopped_early == 0);
    REQUIRE(pr.best_trial == 0 && pr.best_epoch == 2 && pr.best_metric == 0.6); /* best epoch */
    REQUIRE(pr.epochs_done == 4);
    REQUIRE(pr.epochs_remaining == 2 * 3 + 3);
    REQUIRE(hone_search_ask(s, &a) == 0 && a.kind == HONE_ASK_NEW && a.trial == 3);
    REQUIRE(hone_search_end(s, 2, 1) == 0);
    REQUIRE(hone_search_end(s, 3, 1) == 0);
    REQUIRE(hone_search_ask(s, &a) == 0 && a.kind == HONE_ASK_NEW && a.trial == 4);
    REQUIRE(hone_search_ask(s, &a) == 0 && a.kind == HONE_ASK_WAIT);
    REQUIRE(hone_search_report(s, 4, 3, 0.7, &d) == 0 &&
            d == HONE_DECIDE_STOP); /* skipped epochs */
    REQUIRE(hone_search_ask(s, &a) == 0 && a.kind == HONE_ASK_DONE);
    hone_search_progress_get(s, &pr);
    REQUIRE(pr.best_trial == 4 && pr.trials_failed == 3 && pr.trials_finished == 2);
    REQUIRE(pr.epochs_remaining == 0);
    hone_search_free(s);
}

static double g_sign = 1;
static double curve(const double *u, int epoch, int trial)
{
    return g_sign * sim_curve(u, epoch, trial);
}

/* Runs a search to the end; returns its event log (caller frees) and writes the best final. */
static sim run(const hone_space *sp, hone_algo algo, uint64_t seed, int trials, int P, int maximize)
{
    hone_search *s = make(sp, algo, seed, trials, 2, P, maximize);
    g_sign = maximize ? 1 : -1;
    sim m;
    sim_init(&m, s, sp, P, curve);
    m.fail_every = 5;
    while (sim_step(&m))
        ;
    /* best by the test's own bookkeeping: failed trials excluded, best epoch counts */
    double best = maximize ? -INFINITY : INFINITY;
    int best_t = -1;
    for (int k = 0; k < m.nev; k++) {
        const sim_event *e = &m.ev[k];
        if (e->type != EV_REPORT || e->trial % 5 == 1)
            continue;
        if (maximize ? e->metric > best : e->metric < best) {
            best = e->metric;
            best_t = e->trial;
        }
    }
    hone_search_progress pr;
    hone_search_progress_get(s, &pr);
    REQUIRE(pr.best_trial == best_t && pr.best_metric == best);
    REQUIRE(pr.trials_created == trials && pr.trials_failed == (trials + 3) / 5);
    REQUIRE(pr.trials_finished == trials - pr.trials_failed);
    hone_search_free(s);
    m.s = NULL;
    return m;
}

static int same_log(const sim *a, const sim *b)
{
    if (a->nev != b->nev)
        return 0;
    for (int k = 0; k < a->nev; k++)
        if (memcmp(&a->ev[k], &b->ev[k], sizeof(sim_event)) != 0)
            return 0;
    return 1;
}

static double mean_observed(const hone_space *sp, const sim *m, int from, int to)
{
    double sum = 0;
    for (int t = from; t < to; t++) {
        double u[8];
        hone_space_to_unit(sp, m->vals + (size_t)t * 8, u);
        sum += sim_curve(u, 2, t); /* what the search saw: max_epochs = 2 */
    }
    return sum / (to - from);
}

int main(void)
{
    hone_space *sp = sim_space();
    scripted_random(sp);
    for (int maximize = 0; maximize <= 1; maximize++) {
        sim a = run(sp, HONE_ALGO_RANDOM, 3, 12, 3, maximize);
        sim b = run(sp, HONE_ALGO_RANDOM, 3, 12, 3, maximize);
        sim c = run(sp, HONE_ALGO_RANDOM, 4, 12, 3, maximize);
        REQUIRE(same_log(&a, &b));
        REQUIRE(!same_log(&a, &c));
        sim_free(&a);
        sim_free(&b);
        sim_free(&c);
    }
    /* Bayesian: same seed, same run; later suggestions beat random ones on a smooth bowl */
    sim r = run(sp, HONE_ALGO_RANDOM, 5, 20, 2, 1);
    sim b1 = run(sp, HONE_ALGO_BAYESIAN, 5, 20, 2, 1);
    sim b2 = run(sp, HONE_ALGO_BAYESIAN, 5, 20, 2, 1);
    REQUIRE(same_log(&b1, &b2));
    double mr = mean_observed(sp, &r, 10, 20), mb = mean_observed(sp, &b1, 10, 20);
    printf("mean metric of trials 10-19: random %.4f bayesian %.4f\n", mr, mb);
    REQUIRE(mb > mr);
    sim_free(&r);
    sim_free(&b1);
    sim_free(&b2);
    hone_space_free(sp);
    printf("ok\n");
    return 0;
}
