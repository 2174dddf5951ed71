/* test_start_default: hone_search_opts.start_default. The space's default config (each
 * parameter's "default") is handed out exactly once: as trial 0 of the full-budget drivers and
 * ASHA, as the first trial of the first pass's s = 0 bracket (the full budget) under Hyperband and
 * BOHB; every other trial is drawn as without it; a space missing a default is refused; and a
 * search rebuilt from its log continues the same. */
#include "search_internal.h"
#include "test_search_sim.h"

static const char *space_json =
    "{\"lr\": {\"type\": \"float\", \"min\": 1e-4, \"max\": 1, \"log\": true, \"default\": 0.05},"
    " \"batch\": {\"type\": \"int\", \"min\": 16, \"max\": 512, \"log\": true, \"default\": 128},"
    " \"opt\": {\"type\": \"categorical\", \"values\": [\"sgd\", \"adamw\", \"lion\"],"
    " \"default\": \"adamw\"},"
    " \"nesterov\": {\"type\": \"bool\", \"default\": true}}";

static int is_default(const double *v)
{
    return v[0] == 0.05 && v[1] == 128 && v[2] == 1 && v[3] == 1;
}

static void opts(hone_search_opts *o, hone_algo algo, int start)
{
    hone_search_opts_default(o);
    o->algo = algo;
    o->seed = 7;
    o->max_parallel = 1000; /* every rung-0 trial of every bracket is handed out at once */
    o->max_trials = 12;
    o->max_epochs = 5;
    o->R = 9;
    o->eta = 3;
    o->hb_iterations = 2;
    o->start_default = start;
}

/* Asks until WAIT or DONE; returns how many NEW trials were the default config, and where. */
static int count_defaults(const hone_space *sp, hone_algo algo, int start, int *trial, int *epochs,
                          double *first_other)
{
    hone_search_opts o;
    opts(&o, algo, start);
    hone_search *s;
    REQUIRE(hone_search_new(sp, &o, &s) == 0);
    int n = 0, others = 0;
    hone_ask a;
    for (;;) {
        REQUIRE(hone_search_ask(s, &a) == 0);
        if (a.kind != HONE_ASK_NEW)
            break;
        if (is_default(a.values)) {
            n++;
            *trial = a.trial;
            *epochs = a.epochs;
        } else if (others++ == 0) {
            memcpy(first_other, a.values, 4 * sizeof(double));
        }
    }
    hone_search_free(s);
    return n;
}

int main(void)
{
    char err[256];
    hone_space *sp;
    REQUIRE(hone_space_parse(space_json, &sp, err, sizeof err) == 0);
    REQUIRE(hone_space_has_defaults(sp));
    static const hone_algo algos[] = {HONE_ALGO_RANDOM, HONE_ALGO_BAYESIAN, HONE_ALGO_ASHA,
                                      HONE_ALGO_HYPERBAND, HONE_ALGO_BOHB};
    for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++) {
        int trial = -1, epochs = -1, t2 = -1, e2 = -1;
        double other_on[4], other_off[4];
        int n = count_defaults(sp, algos[i], 1, &trial, &epochs, other_on);
        REQUIRE(n == 1);
        if (algos[i] == HONE_ALGO_HYPERBAND || algos[i] == HONE_ALGO_BOHB) {
            /* R 9, eta 3: brackets s = 2, 1, 0 of 9, 5 and 3 trials; s = 0 starts at trial 14 */
            REQUIRE(trial == 14 && epochs == 9);
        } else {
            REQUIRE(trial == 0 && epochs == (algos[i] == HONE_ALGO_ASHA ? 1 : 5));
        }
        /* without it, no trial is the default and the draws are the same ones */
        REQUIRE(count_defaults(sp, algos[i], 0, &t2, &e2, other_off) == 0);
        if (trial > 0) /* hyperband: trial 0 is drawn in both */
            REQUIRE(memcmp(other_on, other_off, sizeof other_on) == 0);
        printf("%s: the default config is trial %d, to epoch %d\n", hone_algo_name(algos[i]), trial,
               epochs);
    }
    /* a parameter without a default: refused */
    hone_space *partial;
    REQUIRE(hone_space_parse("{\"lr\": {\"type\": \"float\", \"min\": 0.001, \"max\": 1,"
                             " \"default\": 0.1}, \"wd\": {\"type\": \"float\", \"min\": 0,"
                             " \"max\": 0.1}}",
                             &partial, err, sizeof err) == 0);
    REQUIRE(!hone_space_has_defaults(partial));
    hone_search_opts o;
    opts(&o, HONE_ALGO_RANDOM, 1);
    hone_search *s = NULL;
    REQUIRE(hone_search_new(partial, &o, &s) == HONE_EINVAL && s == NULL);
    o.start_default = 0;
    REQUIRE(hone_search_new(partial, &o, &s) == 0);
    hone_search_free(s);
    hone_space_free(partial);
    /* rebuilt from its log (every ask recomputed), a started search continues identically */
    for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++) {
        hone_search *a, *b;
        opts(&o, algos[i], 1);
        o.max_parallel = 3;
        REQUIRE(hone_search_new(sp, &o, &a) == 0 && hone_search_new(sp, &o, &b) == 0);
        sim m;
        sim_init(&m, a, sp, 3, sim_curve);
        int defaults = 0;
        while (sim_step(&m)) {
        }
        for (int k = 0; k < m.nev; k++) {
            if (m.ev[k].type == EV_ASK && m.ev[k].kind == HONE_ASK_NEW &&
                is_default(m.ev[k].values))
                defaults++;
            sim_mirror(b, m.np, &m.ev[k], 0);
        }
        REQUIRE(defaults == 1);
        hone_search_progress x, y;
        hone_search_progress_get(a, &x);
        hone_search_progress_get(b, &y);
        REQUIRE(x.trials_created == y.trials_created && x.best_trial == y.best_trial);
        sim_free(&m);
        hone_search_free(a);
        hone_search_free(b);
    }
    hone_space_free(sp);
    printf("ok\n");
    return 0;
}
