/* test_space_conditions: conditional parameters. Parsing, printing and re-parsing a space with
 * conditions (chains too), every bad condition refused with a message naming the parameter,
 * sampling and the unit mapping holding an inactive parameter at its fixed value, configs to and
 * from JSON without it, the models' features blind to it, BO and BOHB suggestions that honour the
 * conditions, and a crash rebuild of each algorithm over a conditional space. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"
#include "space_internal.h"
#include "test_search_sim.h"

/* opt: sgd | adam | rms; mom only for sgd, nest (bool) for sgd and only when mom is active; beta
 * for adam or rms; lr always. Chain: nest depends on opt (directly) and is inactive when opt is
 * not sgd; boost depends on nest being true. */
static const char *CSPACE =
    "{\"lr\": {\"type\": \"float\", \"min\": 0.001, \"max\": 1, \"log\": true},"
    " \"opt\": {\"type\": \"categorical\", \"values\": [\"sgd\", \"adam\", \"rms\"],"
    " \"default\": \"sgd\"},"
    " \"mom\": {\"type\": \"float\", \"min\": 0.5, \"max\": 0.99, \"default\": 0.9,"
    " \"condition\": {\"opt\": [\"sgd\"]}},"
    " \"nest\": {\"type\": \"bool\", \"default\": false, \"condition\": {\"opt\": [\"sgd\"]}},"
    " \"boost\": {\"type\": \"int\", \"min\": 1, \"max\": 9, \"default\": 3,"
    " \"condition\": {\"nest\": [true]}},"
    " \"beta\": {\"type\": \"float\", \"min\": 0.8, \"max\": 0.99,"
    " \"condition\": {\"opt\": [\"adam\", \"rms\"]}}}";

enum { LR, OPT, MOM, NEST, BOOST, BETA, NP };

static hone_space *cspace(void)
{
    hone_space *s = NULL;
    char err[256];
    int rc = hone_space_parse(CSPACE, &s, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    REQUIRE(rc == 0);
    return s;
}

/* The fixed values: defaults, and beta (no default) the middle of its range. */
static void fixed(double *f)
{
    f[MOM] = 0.9;
    f[NEST] = 0;
    f[BOOST] = 3;
    f[BETA] = 0.8 + 0.5 * (0.99 - 0.8);
}

/* Every inactive parameter of v holds its fixed value, and activity follows the conditions. */
static void check_valid(const hone_space *s, const double *v)
{
    double f[NP];
    fixed(f);
    int sgd = v[OPT] == 0, nest = sgd && v[NEST] == 1;
    REQUIRE(hone_space_active(s, v, LR) && hone_space_active(s, v, OPT));
    REQUIRE(hone_space_active(s, v, MOM) == sgd && hone_space_active(s, v, NEST) == sgd);
    REQUIRE(hone_space_active(s, v, BOOST) == nest && hone_space_active(s, v, BETA) == !sgd);
    for (int i = MOM; i < NP; i++)
        if (!hone_space_active(s, v, i))
            REQUIRE(fabs(v[i] - f[i]) < 1e-12);
}

static void test_parse_print(void)
{
    char err[256];
    hone_space *s = cspace(), *s2;
    REQUIRE(hone_space_nparams(s) == NP && hone_space_has_conditions(s));
    char *txt = hone_space_to_json(s);
    printf("%s\n", txt);
    REQUIRE(strstr(txt, "\"condition\": {\"opt\": [\"sgd\"]}"));
    REQUIRE(strstr(txt, "\"condition\": {\"nest\": [true]}"));
    REQUIRE(strstr(txt, "\"condition\": {\"opt\": [\"adam\", \"rms\"]}"));
    REQUIRE(hone_space_parse(txt, &s2, err, sizeof err) == 0);
    char *txt2 = hone_space_to_json(s2);
    REQUIRE(strcmp(txt, txt2) == 0);
    free(txt);
    free(txt2);
    hone_space_free(s2);
    /* a parent later in the object than its child, and a condition on a bool's false */
    REQUIRE(hone_space_parse("{\"x\": {\"type\": \"int\", \"min\": 0, \"max\": 4,"
                             " \"condition\": {\"on\": [false]}}, \"on\": {\"type\": \"bool\"}}",
                             &s2, err, sizeof err) == 0);
    double v[2] = {4, 0};
    REQUIRE(hone_space_active(s2, v, 0));
    v[1] = 1;
    REQUIRE(!hone_space_active(s2, v, 0));
    hone_space_free(s2);
    /* the default config is valid: sgd, so mom and nest active; boost and beta not */
    double d[NP];
    hone_space_default(s, d);
    check_valid(s, d);
    REQUIRE(d[OPT] == 0 && d[MOM] == 0.9 && d[NEST] == 0);
    hone_space_free(s);
}

static void expect_bad(const char *json, const char *want)
{
    char err[256] = "";
    hone_space *s = (hone_space *)1;
    int rc = hone_space_parse(json, &s, err, sizeof err);
    printf("%-40s -> %s\n", want, err);
    REQUIRE(rc == HONE_EINVAL && s == NULL);
    REQUIRE(strstr(err, want) != NULL);
}

#define OPT2 "\"opt\": {\"type\": \"categorical\", \"values\": [\"sgd\", \"adam\"]}"
#define LR2 "\"lr\": {\"type\": \"float\", \"min\": 0.001, \"max\": 1}"

static void test_bad_conditions(void)
{
    expect_bad("{" OPT2 ", \"m\": {\"type\": \"float\", \"min\": 0, \"max\": 1,"
               " \"condition\": {\"optim\": [\"sgd\"]}}}",
               "parameter 'm': condition on 'optim', which is not a parameter of the space");
    expect_bad("{" LR2 ", \"m\": {\"type\": \"float\", \"min\": 0, \"max\": 1,"
               " \"condition\": {\"lr\": [0.1]}}}",
               "parameter 'm': condition on 'lr', which is float (a condition needs a "
               "categorical or bool parameter)");
    expect_bad("{" OPT2 ", \"m\": {\"type\": \"float\", \"min\": 0, \"max\": 1,"
               " \"condition\": {\"opt\": [\"sgd\", \"adagrad\"]}}}",
               "parameter 'm': condition value \"adagrad\" is not one of the values of 'opt'");
    expect_bad("{" OPT2 ", \"m\": {\"type\": \"float\", \"min\": 0, \"max\": 1,"
               " \"condition\": {\"opt\": []}}}",
               "parameter 'm': condition on 'opt' must be a non-empty array of its values");
    expect_bad("{" OPT2 ", \"m\": {\"type\": \"float\", \"min\": 0, \"max\": 1,"
               " \"condition\": {\"opt\": \"sgd\"}}}",
               "parameter 'm': condition on 'opt' must be a non-empty array");
    expect_bad("{" OPT2 ", \"m\": {\"type\": \"float\", \"min\": 0, \"max\": 1,"
               " \"condition\": []}}",
               "parameter 'm': \"condition\" must be an object");
    expect_bad("{" OPT2 ", \"m\": {\"type\": \"float\", \"min\": 0, \"max\": 1,"
               " \"condition\": {}}}",
               "parameter 'm': \"condition\" must be an object");
    expect_bad("{\"a\": {\"type\": \"bool\", \"condition\": {\"a\": [true]}}}",
               "parameter 'a': condition on itself");
    expect_bad("{\"a\": {\"type\": \"bool\", \"condition\": {\"b\": [true]}},"
               " \"b\": {\"type\": \"bool\", \"condition\": {\"a\": [true]}}}",
               "parameter 'a': its conditions form a cycle (through 'b')");
    expect_bad("{\"a\": {\"type\": \"bool\", \"condition\": {\"c\": [true]}},"
               " \"b\": {\"type\": \"bool\", \"condition\": {\"a\": [true]}},"
               " \"c\": {\"type\": \"bool\", \"condition\": {\"b\": [false]}}}",
               "its conditions form a cycle");
    /* a bool parent takes true/false, not 1 */
    expect_bad("{\"a\": {\"type\": \"bool\"}, \"m\": {\"type\": \"int\", \"min\": 0, \"max\": 3,"
               " \"condition\": {\"a\": [1]}}}",
               "parameter 'm': condition value 1 is not one of the values of 'a'");
}

static void test_sample_unit(void)
{
    hone_space *s = cspace();
    hone_rng r;
    hone_rng_seed(&r, 7);
    int seen_opt[3] = {0}, boost_active = 0, mom_varies = 0;
    double v[NP], u[NP], v2[NP];
    for (int t = 0; t < 4000; t++) {
        hone_space_sample(s, &r, v);
        check_valid(s, v);
        seen_opt[(int)v[OPT]]++;
        boost_active += hone_space_active(s, v, BOOST);
        mom_varies |= v[OPT] == 0 && v[MOM] != 0.9;
        hone_space_to_unit(s, v, u);
        hone_space_from_unit(s, u, v2);
        REQUIRE(space__same(s, v, v2));
        /* any point of the unit cube maps to a valid config */
        for (int i = 0; i < NP; i++)
            u[i] = hone_rng_uniform(&r);
        hone_space_from_unit(s, u, v2);
        check_valid(s, v2);
    }
    for (int c = 0; c < 3; c++)
        REQUIRE(seen_opt[c] > 1100);
    /* sgd (a third) with nest true (a half of those) */
    REQUIRE(boost_active > 500 && boost_active < 850 && mom_varies);
    /* configs differing only where inactive are the same trial, with the same features */
    double a[NP] = {0.1, 1, 0.6, 1, 8, 0.95}, b[NP] = {0.1, 1, 0.9, 0, 3, 0.95};
    double fa[16], fb[16];
    REQUIRE(space__nfeat(s) <= 16);
    REQUIRE(space__same(s, a, b));
    space__features(s, a, fa);
    space__features(s, b, fb);
    REQUIRE(memcmp(fa, fb, sizeof(double) * (size_t)space__nfeat(s)) == 0);
    b[BETA] = 0.85; /* active for adam: now a different trial */
    REQUIRE(!space__same(s, a, b));
    hone_space_fix_inactive(s, a);
    REQUIRE(a[MOM] == 0.9 && a[NEST] == 0 && a[BOOST] == 3 && a[BETA] == 0.95);
    hone_space_free(s);
}

static void test_config_json(void)
{
    char err[256];
    hone_space *s = cspace();
    double v[NP] = {0.01, 1, 0.6, 1, 8, 0.85}, back[NP];
    char *c = hone_space_config_to_json(s, v);
    printf("%s\n", c);
    REQUIRE(strcmp(c, "{\"lr\": 0.01, \"opt\": \"adam\", \"beta\": 0.85}") == 0);
    REQUIRE(hone_space_config_from_json(s, c, back, err, sizeof err) == 0);
    check_valid(s, back);
    REQUIRE(back[LR] == 0.01 && back[OPT] == 1 && back[BETA] == 0.85 && back[MOM] == 0.9);
    free(c);
    double w[NP] = {0.02, 0, 0.7, 1, 5, 0.85};
    c = hone_space_config_to_json(s, w);
    REQUIRE(strcmp(c, "{\"lr\": 0.02, \"opt\": \"sgd\", \"mom\": 0.7, \"nest\": true, "
                      "\"boost\": 5}") == 0);
    REQUIRE(hone_space_config_from_json(s, c, back, err, sizeof err) == 0);
    REQUIRE(back[MOM] == 0.7 && back[NEST] == 1 && back[BOOST] == 5 &&
            fabs(back[BETA] - 0.895) < 1e-12);
    free(c);
    /* an active parameter missing is refused; an inactive one given is read and fixed */
    REQUIRE(hone_space_config_from_json(s, "{\"lr\": 0.02, \"opt\": \"sgd\", \"nest\": false}",
                                        back, err, sizeof err) == HONE_EINVAL &&
            strstr(err, "parameter 'mom': missing from the config"));
    REQUIRE(hone_space_config_from_json(
                s, "{\"lr\": 0.02, \"opt\": \"sgd\", \"mom\": 0.7, \"nest\": true}", back, err,
                sizeof err) == HONE_EINVAL &&
            strstr(err, "parameter 'boost': missing"));
    REQUIRE(hone_space_config_from_json(
                s, "{\"lr\": 0.02, \"opt\": \"rms\", \"beta\": 0.9, \"mom\": 0.6}", back, err,
                sizeof err) == 0);
    REQUIRE(back[MOM] == 0.9 && back[BETA] == 0.9);
    /* an inactive value given must still be valid */
    REQUIRE(hone_space_config_from_json(
                s, "{\"lr\": 0.02, \"opt\": \"rms\", \"beta\": 0.9, \"mom\": 3}", back, err,
                sizeof err) < 0 &&
            strstr(err, "'mom'"));
    hone_space_free(s);
}

/* The GP's suggestions, random and model-based, are valid configs. */
static void test_bo_suggest(void)
{
    hone_space *s = cspace();
    hone_rng r;
    hone_rng_seed(&r, 11);
    enum { N = 24 };
    double X[N * NP], y[N], out[4 * NP];
    for (int i = 0; i < N; i++) {
        hone_space_sample(s, &r, X + i * NP);
        /* best with sgd, high momentum, nest on, boost 7 */
        const double *v = X + i * NP;
        y[i] = (v[OPT] == 0 ? 0 : 1) + fabs(log10(v[LR]) + 1) +
               (v[OPT] == 0 ? (0.99 - v[MOM]) + (v[NEST] ? fabs(v[BOOST] - 7) / 9 : 1) : 0);
    }
    REQUIRE(hone_bo_suggest(s, NULL, X, y, N, X, 2, 4, &r, out) == 0);
    int sgd = 0;
    for (int j = 0; j < 4; j++) {
        check_valid(s, out + j * NP);
        sgd += out[j * NP + OPT] == 0;
    }
    REQUIRE(sgd >= 2); /* the model learnt that sgd is better */
    hone_space_free(s);
}

static double cond_curve(const double *u, int epoch, int trial)
{
    return sim_curve(u, epoch, trial);
}

static sim run(const hone_space *sp, hone_algo algo, uint64_t seed, int cut, hone_search **out)
{
    hone_search_opts o;
    hone_search_opts_default(&o);
    o.algo = algo;
    o.seed = seed;
    o.max_parallel = 3;
    o.max_trials = algo == HONE_ALGO_ASHA ? 30 : 24;
    o.max_epochs = 3;
    o.R = 9;
    o.eta = 3;
    o.hb_iterations = 3;
    REQUIRE(hone_search_new(sp, &o, out) == 0);
    sim m;
    sim_init(&m, *out, sp, 3, cond_curve);
    for (int i = 0; i < cut && sim_step(&m); i++)
        ;
    return m;
}

/* Every algorithm proposes only valid configs, and a rebuild from the stored events (replayed
 * NEWs and recomputed asks alike) goes on exactly as the original. */
static void test_searches(void)
{
    hone_space *sp = cspace();
    const hone_algo algos[] = {HONE_ALGO_RANDOM, HONE_ALGO_BAYESIAN, HONE_ALGO_HYPERBAND,
                               HONE_ALGO_ASHA, HONE_ALGO_BOHB};
    for (size_t k = 0; k < HONE_ARRAY_LEN(algos); k++) {
        hone_search *a, *b, *c;
        sim m = run(sp, algos[k], 5 + k, 14, &a);
        hone_search_opts o = a->o;
        REQUIRE(hone_search_new(sp, &o, &b) == 0);
        REQUIRE(hone_search_new(sp, &o, &c) == 0);
        for (int e = 0; e < m.nev; e++) {
            if (m.ev[e].type == EV_ASK && m.ev[e].kind == HONE_ASK_WAIT)
                continue;
            sim_mirror(b, m.np, &m.ev[e], 1);
            sim_mirror(c, m.np, &m.ev[e], 0);
        }
        int from = m.nev;
        while (sim_step(&m)) {
            for (int e = from; e < m.nev; e++) {
                sim_mirror(b, m.np, &m.ev[e], 0);
                sim_mirror(c, m.np, &m.ev[e], 0);
            }
            from = m.nev;
        }
        for (int e = from; e < m.nev; e++) {
            sim_mirror(b, m.np, &m.ev[e], 0);
            sim_mirror(c, m.np, &m.ev[e], 0);
        }
        int opts[3] = {0};
        for (int t = 0; t < m.nvals; t++) {
            check_valid(sp, m.vals + (size_t)t * 8);
            opts[(int)m.vals[(size_t)t * 8 + OPT]]++;
        }
        printf("%s: %d trials, opt %d/%d/%d\n", hone_algo_name(algos[k]), m.nvals, opts[0], opts[1],
               opts[2]);
        REQUIRE(opts[0] > 0 && opts[1] + opts[2] > 0);
        sim_free(&m);
        hone_search_free(a);
        hone_search_free(b);
        hone_search_free(c);
    }
    hone_space_free(sp);
}

/* BOHB's model-based proposals honour conditions: once the model is in use, a problem where only
 * sgd with a high momentum is good draws sgd configs more and more, each valid. */
static double sgd_good(const double *u, int epoch, int trial)
{
    (void)trial;
    double fin = u[OPT] < 1.0 / 3 ? 0.9 - 0.3 * (1 - u[MOM]) : 0.5;
    return fin * (1.0 - exp(-epoch / 3.0));
}

static void test_bohb_model(void)
{
    hone_space *sp = cspace();
    hone_search_opts o;
    hone_search_opts_default(&o);
    o.algo = HONE_ALGO_BOHB;
    o.seed = 3;
    o.R = 9;
    o.eta = 3;
    o.hb_iterations = 4;
    o.max_parallel = 2;
    hone_search *s;
    REQUIRE(hone_search_new(sp, &o, &s) == 0);
    sim m;
    sim_init(&m, s, sp, 2, sgd_good);
    while (sim_step(&m))
        ;
    int early = 0, late = 0;
    for (int t = 0; t < m.nvals; t++) {
        check_valid(sp, m.vals + (size_t)t * 8);
        if (m.vals[(size_t)t * 8 + OPT] == 0)
            *(t < 17 ? &early : &late) += 1;
    }
    printf("bohb: sgd in %d of the first 17 trials, %d of the later %d\n", early, late,
           m.nvals - 17);
    REQUIRE((double)late / (m.nvals - 17) > (double)early / 17 + 0.1);
    sim_free(&m);
    hone_search_free(s);
    hone_space_free(sp);
}

int main(void)
{
    test_parse_print();
    test_bad_conditions();
    test_sample_unit();
    test_config_json();
    test_bo_suggest();
    test_searches();
    test_bohb_model();
    printf("ok\n");
    return 0;
}
