/* test_rebuild_replay: crash rebuild. Runs a search part way with parallel workers and crashes,
 * records its event log, rebuilds fresh searches by replaying the log (once through
 * hone_search_replay_new, once by recomputing every ask), then continues all three side by side
 * and checks they give identical asks and decisions to the end, for every algorithm. */
#include "search_internal.h"
#include "test_search_sim.h"

static void replay(hone_search *b, int np, const sim_event *e, int use_replay_new)
{
    if (e->type == EV_ASK && e->kind == HONE_ASK_WAIT)
        return; /* a controller does not store WAITs: they change nothing */
    sim_mirror(b, np, e, use_replay_new);
}

static void same_progress(const hone_search *a, const hone_search *b)
{
    hone_search_progress x, y;
    hone_search_progress_get(a, &x);
    hone_search_progress_get(b, &y);
    REQUIRE(x.trials_created == y.trials_created && x.trials_running == y.trials_running);
    REQUIRE(x.trials_finished == y.trials_finished && x.trials_failed == y.trials_failed);
    REQUIRE(x.trials_stopped_early == y.trials_stopped_early);
    REQUIRE(x.epochs_done == y.epochs_done && x.epochs_remaining == y.epochs_remaining);
    REQUIRE(x.best_trial == y.best_trial && x.best_epoch == y.best_epoch);
}

static void check_algo(const hone_space *sp, hone_algo algo, int cut)
{
    hone_search_opts o;
    hone_search_opts_default(&o);
    o.algo = algo;
    o.seed = 42 + (uint64_t)algo;
    o.max_parallel = 3;
    o.max_trials = algo == HONE_ALGO_ASHA ? 30 : 12;
    o.max_epochs = 3;
    o.R = 9;
    o.eta = 3;
    o.hb_iterations = 2;
    hone_search *a, *b, *c;
    REQUIRE(hone_search_new(sp, &o, &a) == 0);
    sim m;
    sim_init(&m, a, sp, 3, sim_curve);
    m.fail_every = 7;
    for (int i = 0; i < cut; i++)
        REQUIRE(sim_step(&m)); /* still mid-search at the crash */
    /* the crash: rebuild from the stored events */
    REQUIRE(hone_search_new(sp, &o, &b) == 0);
    REQUIRE(hone_search_new(sp, &o, &c) == 0);
    for (int k = 0; k < m.nev; k++) {
        replay(b, m.np, &m.ev[k], 1);
        replay(c, m.np, &m.ev[k], 0);
    }
    same_progress(a, b);
    same_progress(a, c);
    int from = m.nev, steps = cut;
    while (sim_step(&m)) {
        for (int k = from; k < m.nev; k++) {
            sim_mirror(b, m.np, &m.ev[k], 0);
            sim_mirror(c, m.np, &m.ev[k], 0);
        }
        from = m.nev;
        steps++;
    }
    for (int k = from; k < m.nev; k++) {
        sim_mirror(b, m.np, &m.ev[k], 0);
        sim_mirror(c, m.np, &m.ev[k], 0);
    }
    REQUIRE(steps > cut + 3); /* the crash really was mid-search */
    same_progress(a, b);
    same_progress(a, c);
    hone_search_progress pr;
    hone_search_progress_get(a, &pr);
    REQUIRE(pr.trials_failed > 0 && pr.trials_running == 0);
    printf("%s: %d events, crash after %d of %d steps, %d trials\n", hone_algo_name(algo), m.nev,
           cut, steps, pr.trials_created);
    /* a stored NEW that does not match the search is refused, not trusted */
    hone_search *d;
    REQUIRE(hone_search_new(sp, &o, &d) == 0);
    REQUIRE(hone_search_replay_new(d, 1, m.vals, m.ev[0].epoch) == HONE_ESTATE);
    REQUIRE(hone_search_replay_new(d, 0, m.vals, m.ev[0].epoch + 1) == HONE_ESTATE);
    hone_search_free(d);
    sim_free(&m);
    hone_search_free(a);
    hone_search_free(b);
    hone_search_free(c);
}

int main(void)
{
    hone_space *sp = sim_space();
    check_algo(sp, HONE_ALGO_HYPERBAND, 12);
    check_algo(sp, HONE_ALGO_BOHB, 25);
    check_algo(sp, HONE_ALGO_DEHB, 40); /* in the second pass: DE offspring at every rung */
    check_algo(sp, HONE_ALGO_ASHA, 10);
    check_algo(sp, HONE_ALGO_RANDOM, 5);
    check_algo(sp, HONE_ALGO_BAYESIAN, 8);
    hone_space_free(sp);
    printf("ok\n");
    return 0;
}
