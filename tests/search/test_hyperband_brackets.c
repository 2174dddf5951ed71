/* test_hyperband_brackets: bracket sizes (n_i, r_i) against Li et al.'s table and formulas for
 * several (R, eta), including the s=0 bracket TAO drops; then whole Hyperband runs (serial and
 * parallel) checking each rung keeps exactly n_i trials, the top ones, and the epochs add up. */
#include "search_internal.h"
#include "test_search_sim.h"

typedef struct expect {
    int R, eta, nb;
    int n[5][5];
    int ep[5][5]; /* mult = 1 */
} expect;

static const expect tables[] = {
    {81,
     3,
     5,
     {{81, 27, 9, 3, 1}, {34, 11, 3, 1}, {15, 5, 1}, {8, 2}, {5}},
     {{1, 3, 9, 27, 81}, {3, 9, 27, 81}, {9, 27, 81}, {27, 81}, {81}}},
    {27,
     3,
     4,
     {{27, 9, 3, 1}, {12, 4, 1}, {6, 2}, {4}},
     {{1, 3, 9, 27}, {3, 9, 27}, {9, 27}, {27}}},
    {9, 3, 3, {{9, 3, 1}, {5, 1}, {3}}, {{1, 3, 9}, {3, 9}, {9}}},
    {16,
     2,
     5,
     {{16, 8, 4, 2, 1}, {10, 5, 2, 1}, {7, 3, 1}, {5, 2}, {5}},
     {{1, 2, 4, 8, 16}, {2, 4, 8, 16}, {4, 8, 16}, {8, 16}, {16}}},
    /* R not a power of eta: r = 100/64 = 1.5625 epochs, rounded to the nearest epoch */
    {100,
     4,
     4,
     {{64, 16, 4, 1}, {22, 5, 1}, {8, 2}, {4}},
     {{2, 6, 25, 100}, {6, 25, 100}, {25, 100}, {100}}},
};

static void check_tables(void)
{
    for (size_t k = 0; k < HONE_ARRAY_LEN(tables); k++) {
        const expect *x = &tables[k];
        hb_state hb;
        REQUIRE(hb_build(&hb, x->R, x->eta, 1, 1) == 0);
        REQUIRE(hb.nb == x->nb);
        for (int b = 0; b < hb.nb; b++) {
            const hb_bracket *br = &hb.br[b];
            REQUIRE(br->s == hb.smax - b);
            for (int i = 0; i <= br->s; i++) {
                REQUIRE(br->n[i] == x->n[b][i]);
                REQUIRE(br->ep[i] == x->ep[b][i]);
            }
        }
        hb_free(&hb);
    }
}

/* The paper's formulas, computed independently in floating point, for many (R, eta). */
static void check_formulas(void)
{
    for (int eta = 2; eta <= 5; eta++) {
        for (int R = 1; R <= 300; R += 7) {
            hb_state hb;
            REQUIRE(hb_build(&hb, R, eta, 3, 2) == 0);
            int smax = (int)floor(log((double)R) / log((double)eta) + 1e-9);
            REQUIRE(hb.smax == smax);
            REQUIRE(hb.total == 2 * (smax + 1));
            double B = (smax + 1) * (double)R;
            for (int s = smax; s >= 0; s--) {
                const hb_bracket *br = &hb.br[smax - s];
                int n = (int)ceil(B / R * pow(eta, s) / (s + 1) - 1e-9);
                double r = R * pow(eta, -s);
                for (int i = 0; i <= s; i++) {
                    REQUIRE(br->n[i] == (int)floor(n * pow(eta, -i) + 1e-9));
                    REQUIRE(fabs(br->r[i] - r * pow(eta, i)) < 1e-9 * R);
                    REQUIRE(br->ep[i] >= 1 && br->ep[i] <= 3 * R);
                    if (i > 0)
                        REQUIRE(br->ep[i] > br->ep[i - 1]);
                }
                REQUIRE(br->ep[s] == 3 * R);
            }
            hb_free(&hb);
        }
    }
}

static double g_maximize_sign = 1;
static double curve(const double *u, int epoch, int trial)
{
    return g_maximize_sign * sim_curve(u, epoch, trial);
}

/* Runs one Hyperband iteration with P workers and checks every rung against the table. */
static void check_run(int R, int eta, int mult, int P, int maximize)
{
    hone_space *sp = sim_space();
    hone_search_opts o;
    hone_search_opts_default(&o);
    o.algo = HONE_ALGO_HYPERBAND;
    o.R = R;
    o.eta = eta;
    o.epoch_multiplier = mult;
    o.max_parallel = P;
    o.maximize = maximize;
    o.seed = 7;
    g_maximize_sign = maximize ? 1 : -1;
    hone_search *s;
    REQUIRE(hone_search_new(sp, &o, &s) == 0);
    hb_state hb;
    REQUIRE(hb_build(&hb, R, eta, mult, 1) == 0);
    long planned = 0;
    int ntrials = 0;
    for (int b = 0; b < hb.nb; b++) {
        for (int i = 0; i <= hb.br[b].s; i++)
            planned += (long)hb.br[b].n[i] * (hb.br[b].ep[i] - (i ? hb.br[b].ep[i - 1] : 0));
        ntrials += hb.br[b].n[0];
    }
    hone_search_progress pr;
    hone_search_progress_get(s, &pr);
    REQUIRE(pr.epochs_remaining == planned);

    sim m;
    sim_init(&m, s, sp, P, curve);
    int steps = 0;
    while (sim_step(&m))
        steps++;
    REQUIRE(m.epochs == planned);
    REQUIRE(m.nvals == ntrials);

    /* per trial: last epoch trained and the metric at each epoch */
    int *last = calloc((size_t)ntrials, sizeof(int));
    double *met = calloc((size_t)ntrials * (size_t)(R * mult + 1), sizeof(double));
    int running = 0, maxrun = 0;
    for (int k = 0; k < m.nev; k++) {
        const sim_event *e = &m.ev[k];
        if (e->type == EV_ASK && (e->kind == HONE_ASK_NEW || e->kind == HONE_ASK_RESUME))
            running++;
        if (e->type == EV_END)
            running--;
        if (running > maxrun)
            maxrun = running;
        if (e->type != EV_REPORT)
            continue;
        if (e->epoch > last[e->trial])
            last[e->trial] = e->epoch;
        met[(size_t)e->trial * (size_t)(R * mult + 1) + (size_t)e->epoch] = e->metric;
    }
    REQUIRE(maxrun <= P);
    if (P > 1)
        REQUIRE(maxrun == P); /* workers were kept busy */

    /* trials of bracket b are consecutive ids: brackets fill their first rung in order */
    int first = 0, reached_final = 0;
    for (int b = 0; b < hb.nb; b++) {
        const hb_bracket *br = &hb.br[b];
        for (int i = 0; i <= br->s; i++) {
            int cnt = 0;
            for (int t = first; t < first + br->n[0]; t++)
                cnt += last[t] >= br->ep[i];
            REQUIRE(cnt == br->n[i]);
            if (i == br->s)
                break;
            /* those reaching rung i+1 are the best at rung i's epoch */
            for (int t = first; t < first + br->n[0]; t++) {
                if (last[t] < br->ep[i])
                    continue;
                double mt = met[(size_t)t * (size_t)(R * mult + 1) + (size_t)br->ep[i]];
                for (int u = first; u < first + br->n[0]; u++) {
                    if (last[u] < br->ep[i] || u == t)
                        continue;
                    double mu = met[(size_t)u * (size_t)(R * mult + 1) + (size_t)br->ep[i]];
                    int t_up = last[t] >= br->ep[i + 1], u_up = last[u] >= br->ep[i + 1];
                    if (t_up && !u_up)
                        REQUIRE(maximize ? mt >= mu : mt <= mu);
                }
            }
        }
        for (int t = first; t < first + br->n[0]; t++) { /* every trial stops at a rung */
            int at_rung = 0;
            for (int i = 0; i <= br->s; i++)
                at_rung |= last[t] == br->ep[i];
            REQUIRE(at_rung);
        }
        reached_final += br->n[br->s];
        first += br->n[0];
    }
    hone_search_progress_get(s, &pr);
    REQUIRE(pr.trials_created == ntrials);
    REQUIRE(pr.trials_running == 0);
    REQUIRE(pr.trials_finished == ntrials);
    REQUIRE(pr.trials_stopped_early == ntrials - reached_final);
    REQUIRE(pr.trials_failed == 0);
    REQUIRE(pr.epochs_done == planned);
    REQUIRE(pr.epochs_remaining == 0);
    REQUIRE(pr.best_trial >= 0);
    (void)steps;
    free(last);
    free(met);
    sim_free(&m);
    hb_free(&hb);
    hone_search_free(s);
    hone_space_free(sp);
}

static void check_bad_opts(void)
{
    hone_space *sp = sim_space();
    hone_search *s = NULL;
    hone_search_opts o;
    struct {
        hone_algo algo;
        int field; /* 0 R, 1 eta, 2 mult, 3 max_parallel, 4 hb_iterations, 5 max_trials,
                      6 max_epochs */
        int value;
    } bad[] = {
        {HONE_ALGO_HYPERBAND, 0, 0},      {HONE_ALGO_HYPERBAND, 1, 1}, {HONE_ALGO_HYPERBAND, 2, 0},
        {HONE_ALGO_HYPERBAND, 3, 0},      {HONE_ALGO_HYPERBAND, 4, 0}, {HONE_ALGO_BOHB, 1, 0},
        {HONE_ALGO_ASHA, 5, 0},           {HONE_ALGO_ASHA, 0, -3},     {HONE_ALGO_RANDOM, 6, 0},
        {HONE_ALGO_BAYESIAN, 5, 0},       {HONE_ALGO_RANDOM, 3, -1},   {(hone_algo)99, 0, 27},
        {HONE_ALGO_HYPERBAND, 0, 200000},
    };
    for (size_t k = 0; k < HONE_ARRAY_LEN(bad); k++) {
        hone_search_opts_default(&o);
        o.algo = bad[k].algo;
        int *f[] = {
            &o.R,          &o.eta,       &o.epoch_multiplier, &o.max_parallel, &o.hb_iterations,
            &o.max_trials, &o.max_epochs};
        *f[bad[k].field] = bad[k].value;
        REQUIRE(hone_search_new(sp, &o, &s) < 0);
        REQUIRE(s == NULL);
    }
    hone_search_opts_default(&o);
    REQUIRE(hone_search_new(NULL, &o, &s) == HONE_EINVAL);
    REQUIRE(hone_search_new(sp, NULL, &s) == HONE_EINVAL);
    hone_algo a;
    REQUIRE(hone_algo_parse("h", &a) == 0 && a == HONE_ALGO_HYPERBAND);
    REQUIRE(hone_algo_parse("B", &a) == 0 && a == HONE_ALGO_BAYESIAN);
    REQUIRE(hone_algo_parse("asha", &a) == 0 && a == HONE_ALGO_ASHA);
    REQUIRE(hone_algo_parse("bohb", &a) == 0 && a == HONE_ALGO_BOHB);
    REQUIRE(hone_algo_parse("grid", &a) == HONE_EINVAL);
    REQUIRE(strcmp(hone_algo_name(HONE_ALGO_ASHA), "asha") == 0);
    hone_space_free(sp);
}

int main(void)
{
    check_tables();
    check_formulas();
    check_bad_opts();
    check_run(27, 3, 1, 1, 1);
    check_run(27, 3, 2, 4, 0);
    check_run(16, 2, 1, 3, 1);
    check_run(9, 3, 1, 8, 1);
    check_run(100, 4, 1, 6, 1);
    printf("ok\n");
    return 0;
}
