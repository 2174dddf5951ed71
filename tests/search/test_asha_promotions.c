/* test_asha_promotions: ASHA on scripted reports. A paused trial is promoted as soon as it is in
 * the top 1/eta of its rung, highest rung first, nobody waits for stragglers, reports are
 * idempotent, failures never promote, and the stop variant stops losers on arrival. */
#include "search_internal.h"
#include "test_search_sim.h"

static hone_search *make(hone_space *sp, int maximize, int max_trials)
{
    hone_search_opts o;
    hone_search_opts_default(&o);
    o.algo = HONE_ALGO_ASHA;
    o.R = 9;
    o.eta = 3; /* rungs at 1, 3, 9 epochs */
    o.max_trials = max_trials;
    o.max_parallel = 10;
    o.maximize = maximize;
    hone_search *s;
    REQUIRE(hone_search_new(sp, &o, &s) == 0);
    return s;
}

static void ask_is(hone_search *s, hone_ask_kind kind, int trial, int epochs)
{
    hone_ask a;
    REQUIRE(hone_search_ask(s, &a) == 0);
    int runs = kind == HONE_ASK_NEW || kind == HONE_ASK_RESUME;
    if (a.kind != kind || (runs && (a.trial != trial || a.epochs != epochs)))
        fprintf(stderr, "ask: got kind %d trial %d epochs %d, want %d %d %d\n", a.kind, a.trial,
                a.epochs, kind, trial, epochs);
    REQUIRE(a.kind == kind);
    if (runs) {
        REQUIRE(a.trial == trial);
        REQUIRE(a.epochs == epochs);
    }
}

static void report_is(hone_search *s, int trial, int epoch, double metric, hone_decision want)
{
    hone_decision d;
    REQUIRE(hone_search_report(s, trial, epoch, metric, &d) == 0);
    REQUIRE(d == want);
}

/* sign = 1 maximises; sign = -1 runs the same script minimising negated metrics. */
static void script_promote(hone_space *sp, double sign)
{
    hone_search *s = make(sp, sign > 0, 9);
    const hone_decision P = HONE_DECIDE_PAUSE, C = HONE_DECIDE_CONTINUE, S = HONE_DECIDE_STOP;
    ask_is(s, HONE_ASK_NEW, 0, 1);
    ask_is(s, HONE_ASK_NEW, 1, 1);
    ask_is(s, HONE_ASK_NEW, 2, 1);
    report_is(s, 0, 1, sign * 0.5, P);
    ask_is(s, HONE_ASK_NEW, 3, 1); /* rung 0 has one result: top 1/3 of 1 is nobody */
    report_is(s, 1, 1, sign * 0.7, P);
    report_is(s, 2, 1, sign * 0.6, P);
    ask_is(s, HONE_ASK_RESUME, 1, 3); /* 3 results: the best one goes up at once */
    ask_is(s, HONE_ASK_NEW, 4, 1);
    report_is(s, 3, 1, sign * 0.9, P);
    ask_is(s, HONE_ASK_RESUME, 3, 3); /* 4 results, top 1: trial 3 */
    ask_is(s, HONE_ASK_NEW, 5, 1);
    report_is(s, 4, 1, sign * 0.8, P);
    report_is(s, 5, 1, sign * 0.1, P);
    ask_is(s, HONE_ASK_RESUME, 4, 3); /* 6 results, top 2: trials 3 and 4 */
    /* idempotent: the same (trial, epoch) answers the same and changes nothing */
    report_is(s, 0, 1, sign * 0.99, P);
    hone_search_progress pr;
    hone_search_progress_get(s, &pr);
    REQUIRE(pr.best_trial == 3);
    report_is(s, 1, 2, sign * 0.71, C);
    report_is(s, 1, 3, sign * 0.75, P);
    report_is(s, 1, 3, sign * 0.75, P);
    report_is(s, 3, 2, sign * 0.91, C);
    report_is(s, 3, 3, sign * 0.95, P);
    report_is(s, 4, 3, sign * 0.5, P);
    ask_is(s, HONE_ASK_RESUME, 3, 9); /* rung 1 has 3 results: trial 3 goes to the last rung */
    ask_is(s, HONE_ASK_NEW, 6, 1);
    ask_is(s, HONE_ASK_NEW, 7, 1);
    ask_is(s, HONE_ASK_NEW, 8, 1);
    ask_is(s, HONE_ASK_WAIT, 0, 0); /* max_trials reached, nothing promotable */
    report_is(s, 3, 9, sign * 0.97, S);
    report_is(s, 3, 9, sign * 0.97, S);
    REQUIRE(hone_search_end(s, 6, 1) == 0); /* crash: worst, never promoted */
    report_is(s, 6, 1, sign * 1.0, S);      /* a late report after the crash changes nothing */
    report_is(s, 7, 1, sign * 0.2, P);
    report_is(s, 8, 1, sign * 0.3, P);
    REQUIRE(hone_search_end(s, 3, 0) == 0);
    REQUIRE(hone_search_end(s, 3, 0) == 0);
    /* rung 0: 8 results, top 2 = trials 3, 4 (both promoted); nothing left to run */
    ask_is(s, HONE_ASK_DONE, 0, 0);
    hone_search_progress_get(s, &pr);
    REQUIRE(pr.trials_created == 9);
    REQUIRE(pr.trials_running == 0);
    REQUIRE(pr.trials_failed == 1);
    REQUIRE(pr.trials_finished == 8);
    REQUIRE(pr.trials_stopped_early == 7); /* all but trial 3, which reached the full budget */
    REQUIRE(pr.best_trial == 3);
    REQUIRE(pr.best_epoch == 9);
    REQUIRE(pr.best_metric == sign * 0.97);
    REQUIRE(pr.epochs_done == 5 * 1 + 3 + 9 + 3); /* trials 0,2,5,7,8; 1; 3; 4 */
    REQUIRE(pr.epochs_remaining == 0);
    hone_search_free(s);
}

static void script_stop_variant(hone_space *sp)
{
    hone_search *s = make(sp, 1, 6);
    hone_search__asha_set_stop(s, 1);
    ask_is(s, HONE_ASK_NEW, 0, 1);
    ask_is(s, HONE_ASK_NEW, 1, 1);
    ask_is(s, HONE_ASK_NEW, 2, 1);
    report_is(s, 0, 1, 0.5, HONE_DECIDE_PAUSE); /* first arrival is the best so far: goes on */
    report_is(s, 1, 1, 0.4, HONE_DECIDE_STOP);  /* 2nd of 2: not in the top max(1, 2/3) */
    report_is(s, 2, 1, 0.6, HONE_DECIDE_PAUSE); /* best of 3 */
    ask_is(s, HONE_ASK_RESUME, 0, 3);           /* promotions go out in order */
    ask_is(s, HONE_ASK_RESUME, 2, 3);
    ask_is(s, HONE_ASK_NEW, 3, 1);
    report_is(s, 0, 3, 0.7, HONE_DECIDE_PAUSE);
    report_is(s, 2, 3, 0.8, HONE_DECIDE_PAUSE);
    ask_is(s, HONE_ASK_RESUME, 0, 9);
    ask_is(s, HONE_ASK_RESUME, 2, 9);
    report_is(s, 3, 1, 0.1, HONE_DECIDE_STOP);
    report_is(s, 0, 9, 0.75, HONE_DECIDE_STOP);
    report_is(s, 2, 9, 0.85, HONE_DECIDE_STOP);
    hone_search_progress pr;
    hone_search_progress_get(s, &pr);
    REQUIRE(pr.trials_stopped_early == 2);
    REQUIRE(pr.best_trial == 2);
    hone_search_free(s);
}

/* Errors: unknown trial, epoch out of range, NULLs. */
static void check_errors(hone_space *sp)
{
    hone_search *s = make(sp, 1, 3);
    hone_decision d;
    REQUIRE(hone_search_report(s, 0, 1, 0.5, &d) == HONE_ENOENT);
    ask_is(s, HONE_ASK_NEW, 0, 1);
    REQUIRE(hone_search_report(s, 0, 0, 0.5, &d) == HONE_ERANGE);
    REQUIRE(hone_search_report(s, 0, 10, 0.5, &d) == HONE_ERANGE);
    REQUIRE(hone_search_report(s, -1, 1, 0.5, &d) == HONE_ENOENT);
    REQUIRE(hone_search_end(s, 5, 0) == HONE_ENOENT);
    REQUIRE(hone_search_ask(NULL, NULL) == HONE_EINVAL);
    REQUIRE(hone_search_replay_new(s, 0, NULL, 1) == HONE_EINVAL);
    double v[3] = {0.01, 0.0, 0};
    REQUIRE(hone_search_replay_new(s, 0, v, 1) == HONE_ESTATE); /* trial 0 exists: next is 1 */
    REQUIRE(hone_search_replay_new(s, 1, v, 3) == HONE_ESTATE); /* new trials start at rung 0 */
    REQUIRE(hone_search_replay_new(s, 1, v, 1) == 0);
    hone_search_free(s);
}

int main(void)
{
    hone_space *sp = sim_space();
    script_promote(sp, 1);
    script_promote(sp, -1);
    script_stop_variant(sp);
    check_errors(sp);
    hone_space_free(sp);
    printf("ok\n");
    return 0;
}
