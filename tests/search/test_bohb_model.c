/* test_bohb_model: BOHB keeps Hyperband's schedule but, once a budget has n_init+2 results, draws
 * two thirds of its new configs from the GP: its later proposals concentrate on the good region
 * of a synthetic problem where plain Hyperband's stay uniform. Also determinism from the seed. */
#include "search_internal.h"
#include "test_search_sim.h"

/* Same ranking at every budget: the good region is near (0.8, 0.2) in the unit cube. */
static double bowl_final(const double *u)
{
    return 1.0 - (u[0] - 0.8) * (u[0] - 0.8) - (u[1] - 0.2) * (u[1] - 0.2);
}

static double bowl(const double *u, int epoch, int trial)
{
    (void)trial;
    return bowl_final(u) * (1.0 - exp(-epoch / 3.0));
}

static sim run(const hone_space *sp, hone_algo algo, uint64_t seed)
{
    hone_search_opts o;
    hone_search_opts_default(&o);
    o.algo = algo;
    o.seed = seed;
    o.R = 9;
    o.eta = 3;
    o.hb_iterations = 4;
    o.max_parallel = 2;
    hone_search *s;
    REQUIRE(hone_search_new(sp, &o, &s) == 0);
    sim m;
    sim_init(&m, s, sp, 2, bowl);
    while (sim_step(&m))
        ;
    REQUIRE(m.nvals == 4 * (9 + 5 + 3));
    hone_search_free(s);
    m.s = NULL;
    return m;
}

static double mean_final(const hone_space *sp, const sim *m, int from, int to)
{
    double sum = 0;
    for (int t = from; t < to; t++) {
        double u[8];
        hone_space_to_unit(sp, m->vals + (size_t)t * 8, u);
        sum += bowl_final(u);
    }
    return sum / (to - from);
}

int main(void)
{
    hone_space *sp = sim_space();
    double hb_sum = 0, bohb_sum = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        sim h = run(sp, HONE_ALGO_HYPERBAND, seed);
        sim b = run(sp, HONE_ALGO_BOHB, seed);
        sim b2 = run(sp, HONE_ALGO_BOHB, seed);
        REQUIRE(b.nev == b2.nev && memcmp(b.ev, b2.ev, (size_t)b.nev * sizeof(sim_event)) == 0);
        /* iterations 2-4 (trials 17..67): the model has data by then */
        double mh = mean_final(sp, &h, 17, 68), mb = mean_final(sp, &b, 17, 68);
        double eh = mean_final(sp, &h, 0, 9), eb = mean_final(sp, &b, 0, 9);
        printf("seed %d: first rung mean hyperband %.4f bohb %.4f; later hyperband %.4f bohb "
               "%.4f\n",
               (int)seed, eh, eb, mh, mb);
        REQUIRE(mb > mh);
        hb_sum += mh;
        bohb_sum += mb;
        sim_free(&h);
        sim_free(&b);
        sim_free(&b2);
    }
    /* clearly better on average, not by luck of one seed */
    REQUIRE(bohb_sum / 3 > hb_sum / 3 + 0.05);
    hone_space_free(sp);
    printf("ok\n");
    return 0;
}
