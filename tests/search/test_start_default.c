/* test_start_default: hone_search_opts.start_default. The space's default config (each
 * parameter's "default") is handed out exactly once: as trial 0 of the full-budget drivers and
 * ASHA, as the first trial of the first pass's s = 0 bracket (the full budget) under Hyperband,
 * BOHB and DEHB; every other trial is drawn as without it; a space missing a default is refused;
 * and a search rebuilt from its log continues the same. */
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

static int first; /* hone_search_opts.default_first for the searches asks() makes */

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
    o->default_first = first;
}

/* Asks until WAIT or DONE, keeping every NEW trial's values (4 a trial) in vals; returns the
 * count. */
static int asks(const hone_space *sp, hone_algo algo, int start, double *vals, int *epochs)
{
    hone_search_opts o;
    opts(&o, algo, start);
    hone_search *s;
    REQUIRE(hone_search_new(sp, &o, &s) == 0);
    int n = 0;
    hone_ask a;
    for (;;) {
        REQUIRE(hone_search_ask(s, &a) == 0);
        if (a.kind != HONE_ASK_NEW)
            break;
        REQUIRE(a.trial == n && n < 64);
        memcpy(vals + 4 * n, a.values, 4 * sizeof(double));
        epochs[n++] = a.epochs;
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
    static const hone_algo algos[] = {HONE_ALGO_RANDOM,    HONE_ALGO_BAYESIAN, HONE_ALGO_ASHA,
                                      HONE_ALGO_HYPERBAND, HONE_ALGO_BOHB,     HONE_ALGO_DEHB};
    for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++) {
        double on[64 * 4], off[64 * 4];
        int eon[64], eoff[64], trial = -1;
        int n = asks(sp, algos[i], 1, on, eon), m = asks(sp, algos[i], 0, off, eoff);
        REQUIRE(n == m && n > 1);
        for (int t = 0; t < n; t++) {
            if (is_default(on + 4 * t)) {
                REQUIRE(trial < 0); /* exactly once */
                trial = t;
            } else { /* every other trial drawn exactly as without the option */
                REQUIRE(memcmp(on + 4 * t, off + 4 * t, 4 * sizeof(double)) == 0);
            }
            REQUIRE(!is_default(off + 4 * t) && eon[t] == eoff[t]);
        }
        if (algos[i] == HONE_ALGO_HYPERBAND || algos[i] == HONE_ALGO_BOHB ||
            algos[i] == HONE_ALGO_DEHB) {
            /* R 9, eta 3: brackets s = 2, 1, 0 of 9, 5 and 3 trials; s = 0 starts at trial 14 */
            REQUIRE(trial == 14 && eon[trial] == 9);
        } else {
            REQUIRE(trial == 0 && eon[trial] == (algos[i] == HONE_ALGO_ASHA ? 1 : 5));
        }
        printf("%s: the default config is trial %d of %d, to epoch %d\n", hone_algo_name(algos[i]),
               trial, n, eon[trial]);
    }
    /* default_first (a search a time budget may cut): the multi-fidelity searches hand out the
     * default config first, as trial 0 to the full budget, and the brackets after it */
    first = 1;
    for (size_t i = 3; i < sizeof algos / sizeof algos[0]; i++) {
        double on[64 * 4], off[64 * 4];
        int eon[64], eoff[64], defaults = 0;
        int n = asks(sp, algos[i], 1, on, eon), m = asks(sp, algos[i], 0, off, eoff);
        REQUIRE(n == m && n > 1);
        REQUIRE(is_default(on) && eon[0] == 9);
        for (int t = 0; t < n; t++)
            defaults += is_default(on + 4 * t);
        REQUIRE(defaults == 1);
        /* then the s = 2 bracket's first rung, as without it */
        REQUIRE(eon[1] == 1 && eoff[0] == 1);
        printf("%s, default_first: the default config is trial 0 of %d, to epoch %d\n",
               hone_algo_name(algos[i]), n, eon[0]);
    }
    first = 0;
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
    /* rebuilt from its log (NEW from the logged values, as the controller replays), a search ends
     * in the same state */
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
            if (!(m.ev[k].type == EV_ASK && m.ev[k].kind == HONE_ASK_WAIT))
                sim_mirror(b, m.np, &m.ev[k], 1); /* as the controller replays: logged values */
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
