/* Pins GP-BO behaviour: same seed gives the same suggestions, batches are distinct, failed trials
 * are survived, and BO beats random search on a simple quadratic by a wide margin. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "space_internal.h"
#include "check.h"

static hone_space *parse(const char *json)
{
    char err[256];
    hone_space *s;
    if (hone_space_parse(json, &s, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    return s;
}

static const char *MIXED =
    "{\"x\": {\"type\": \"float\", \"min\": -2, \"max\": 3},"
    " \"lr\": {\"type\": \"float\", \"min\": 1e-4, \"max\": 1, \"log\": true},"
    " \"n\": {\"type\": \"int\", \"min\": 1, \"max\": 9},"
    " \"c\": {\"type\": \"categorical\", \"values\": [\"a\", \"b\", \"c\"]}}";

static double mixed_f(const double *v)
{
    double shift[3] = {0.5, -1.0, 2.0};
    double t = v[0] - shift[(int)v[3]], u = log10(v[1]) + 2, w = v[2] - 4;
    return t * t + u * u + 0.1 * w * w + (v[3] == 1 ? 0 : 0.5);
}

/* Runs `evals` evaluations in batches of k and records every config in hist. */
static double run_bo(const hone_space *s, uint64_t seed, int evals, int k, double *hist,
                     double (*f)(const double *))
{
    int np = hone_space_nparams(s);
    double *y = malloc(sizeof(double) * (size_t)evals);
    hone_rng r;
    hone_rng_seed(&r, seed);
    hone_bo_opts o;
    hone_bo_opts_default(&o);
    o.n_candidates = 500;
    int n = 0;
    double best = INFINITY;
    while (n < evals) {
        int kk = evals - n < k ? evals - n : k;
        REQUIRE(hone_bo_suggest(s, &o, hist, y, n, NULL, 0, kk, &r, hist + (size_t)n * np) == 0);
        for (int j = 0; j < kk; j++) {
            y[n] = f(hist + (size_t)n * np);
            best = y[n] < best ? y[n] : best;
            n++;
        }
    }
    free(y);
    return best;
}

static void test_determinism_and_batches(void)
{
    hone_space *s = parse(MIXED);
    int np = hone_space_nparams(s);
    double h1[16 * 4], h2[16 * 4];
    run_bo(s, 11, 16, 2, h1, mixed_f);
    run_bo(s, 11, 16, 2, h2, mixed_f);
    REQUIRE(memcmp(h1, h2, sizeof h1) == 0);
    double h3[16 * 4];
    run_bo(s, 12, 16, 2, h3, mixed_f);
    REQUIRE(memcmp(h1, h3, sizeof h1) != 0);
    /* every suggestion is distinct from everything before it, and valid */
    for (int i = 0; i < 16; i++) {
        for (int j = 0; j < i; j++)
            REQUIRE(!space__same(s, h1 + i * np, h1 + j * np));
        char *c = hone_space_config_to_json(s, h1 + i * np);
        double back[4];
        char err[128];
        REQUIRE(hone_space_config_from_json(s, c, back, err, sizeof err) == 0);
        free(c);
    }
    /* a model-phase batch of 4 with 2 pending: distinct from all of them */
    double y[16];
    for (int i = 0; i < 16; i++)
        y[i] = mixed_f(h1 + i * np);
    hone_rng r;
    hone_rng_seed(&r, 3);
    double out[4 * 4];
    REQUIRE(hone_bo_suggest(s, NULL, h1, y, 14, h1 + 14 * np, 2, 4, &r, out) == 0);
    for (int j = 0; j < 4; j++) {
        for (int i = 0; i < 16; i++)
            REQUIRE(!space__same(s, out + j * np, h1 + i * np));
        for (int i = 0; i < j; i++)
            REQUIRE(!space__same(s, out + j * np, out + i * np));
    }
    hone_space_free(s);
}

static void test_failures(void)
{
    hone_space *s = parse(MIXED);
    int np = hone_space_nparams(s);
    double X[10 * 4], y[10];
    hone_rng r;
    hone_rng_seed(&r, 4);
    for (int i = 0; i < 10; i++) {
        hone_space_sample(s, &r, X + i * np);
        y[i] = i % 3 == 0 ? (i % 2 ? NAN : INFINITY) : mixed_f(X + i * np);
    }
    double out[3 * 4];
    REQUIRE(hone_bo_suggest(s, NULL, X, y, 10, NULL, 0, 3, &r, out) == 0);
    for (int j = 0; j < 3 * np; j++)
        REQUIRE(isfinite(out[j]));
    /* all failed: still suggests (space filling) */
    for (int i = 0; i < 10; i++)
        y[i] = NAN;
    REQUIRE(hone_bo_suggest(s, NULL, X, y, 10, NULL, 0, 2, &r, out) == 0);
    REQUIRE(hone_bo_suggest(s, NULL, X, y, 10, NULL, 0, 0, &r, out) == HONE_EINVAL);
    hone_space_free(s);
}

static double quad(const double *v)
{
    double c[4] = {0.2, 0.7, 0.35, 0.6}, s = 0;
    for (int i = 0; i < 4; i++)
        s += (v[i] - c[i]) * (v[i] - c[i]);
    return s;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void test_beats_random(void)
{
    hone_space *s = parse("{\"a\": {\"type\": \"float\", \"min\": 0, \"max\": 1},"
                          " \"b\": {\"type\": \"float\", \"min\": 0, \"max\": 1},"
                          " \"c\": {\"type\": \"float\", \"min\": 0, \"max\": 1},"
                          " \"d\": {\"type\": \"float\", \"min\": 0, \"max\": 1}}");
    enum { SEEDS = 5, EVALS = 20 };
    double bo[SEEDS], rnd[SEEDS], hist[EVALS * 4];
    for (int sd = 0; sd < SEEDS; sd++) {
        bo[sd] = run_bo(s, 100 + sd, EVALS, 1, hist, quad);
        hone_rng r;
        hone_rng_seed(&r, 100 + sd);
        rnd[sd] = INFINITY;
        for (int i = 0; i < EVALS; i++) {
            hone_space_sample(s, &r, hist);
            double v = quad(hist);
            rnd[sd] = v < rnd[sd] ? v : rnd[sd];
        }
    }
    qsort(bo, SEEDS, sizeof(double), cmp);
    qsort(rnd, SEEDS, sizeof(double), cmp);
    printf("quadratic 4-D, %d evals: median best BO %.3g, random %.3g\n", EVALS, bo[SEEDS / 2],
           rnd[SEEDS / 2]);
    REQUIRE(bo[SEEDS / 2] < 0.2 * rnd[SEEDS / 2]);
    REQUIRE(bo[SEEDS - 1] < rnd[SEEDS / 2]); /* even the worst BO run beats the median random */
    hone_space_free(s);
}

int main(void)
{
    test_determinism_and_batches();
    test_failures();
    test_beats_random();
    printf("ok\n");
    return 0;
}
