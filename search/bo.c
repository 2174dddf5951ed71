/* Gaussian-process Bayesian optimisation: random initial points, a GP fitted to the (warped,
 * standardised) observations, log expected improvement maximised by random and local candidates,
 * and kriging-believer batches. Stateless: every suggestion is a function of the data and rng. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gp.h"
#include "space_internal.h"

/* Tuning knobs, overridable at compile time (-D) for bench/search.c experiments. The defaults were
 * chosen on bench_search (5 functions x 20 seeds, regret at 50 evaluations); see bench/README.md.
 * HONE_BO_WARP: 0 never log-warp targets, 1 always, 2 when they are skewed past HONE_BO_SKEW. */
#ifndef HONE_BO_N_INIT
#define HONE_BO_N_INIT 10
#endif
#ifndef HONE_BO_REFINE_ITERS
#define HONE_BO_REFINE_ITERS 50
#endif
#ifndef HONE_BO_N_REFINE
#define HONE_BO_N_REFINE 5
#endif
#ifndef HONE_BO_LOCAL_DIV /* 1/DIV of the pool are local candidates around the best points */
#define HONE_BO_LOCAL_DIV 4
#endif
#ifndef HONE_BO_SKEW
#define HONE_BO_SKEW 1.0
#endif
#ifndef HONE_BO_WARP
#define HONE_BO_WARP 2
#endif

void hone_bo_opts_default(hone_bo_opts *o)
{
    o->n_init = HONE_BO_N_INIT;
    o->n_candidates = 2000;
    o->n_restarts = 3;
}

/* Work shared by the steps of one suggestion. */
typedef struct bo_ctx {
    const hone_space *s;
    int np, nf; /* parameters, features */
    hone_rng *r;
    gp g;
    double best; /* best transformed target so far (minimisation) */
    /* configs already observed, pending or chosen: (values form), for duplicate checks */
    const double *X;
    int n;
    const double *pending;
    int m;
    double *chosen;
    int nchosen;
} bo_ctx;

static int is_taken(const bo_ctx *c, const double *v)
{
    for (int i = 0; i < c->n; i++)
        if (space__same(c->s, v, c->X + (size_t)i * c->np))
            return 1;
    for (int i = 0; i < c->m; i++)
        if (space__same(c->s, v, c->pending + (size_t)i * c->np))
            return 1;
    for (int i = 0; i < c->nchosen; i++)
        if (space__same(c->s, v, c->chosen + (size_t)i * c->np))
            return 1;
    return 0;
}

/* Initial design and fallback: uniform random configs, skipping ones already taken. Random rather
 * than greedy maximin on purpose: maximin piles points onto the faces and corners of the cube,
 * which in 4+ dimensions measurably slowed the search (bench/search.c, Ackley and Rosenbrock). */
static void suggest_random(bo_ctx *c, double *out)
{
    for (int t = 0; t < 50; t++) {
        hone_space_sample(c->s, c->r, out);
        if (!is_taken(c, out))
            return;
    }
}

/* Log expected improvement of m configs (features F) under the current GP. */
static void log_ei(bo_ctx *c, const double *F, int m, double *acq, double *mu, double *var)
{
    gp_predict(&c->g, F, m, mu, var);
    for (int i = 0; i < m; i++) {
        double sd = sqrt(var[i]);
        acq[i] = log(sd) + gp_log_h((c->best - mu[i]) / sd);
    }
}

/* Moves a config by a Gaussian step of size sigma in the unit cube; categoricals and bools flip
 * with probability pflip. */
static void perturb(const bo_ctx *c, const double *v, double sigma, double pflip, double *out,
                    double *unit)
{
    hone_space_to_unit(c->s, v, unit);
    for (int i = 0; i < c->np; i++) {
        hone_param_type t = hone_space_param_type(c->s, i);
        if (t == HONE_PARAM_FLOAT || t == HONE_PARAM_INT) {
            double u = unit[i] + sigma * hone_rng_normal(c->r);
            /* reflect at the walls so points near a bound are not piled onto it */
            if (u < 0)
                u = -u;
            if (u > 1)
                u = 2 - u;
            unit[i] = u;
        } else if (hone_rng_uniform(c->r) < pflip) {
            unit[i] = hone_rng_uniform(c->r);
        }
    }
    hone_space_from_unit(c->s, unit, out);
}

typedef struct pool {
    int cap, m;
    double *V, *F, *acq, *mu, *var;
} pool;

static void pool_init(pool *p, int cap, int np, int nf)
{
    p->cap = cap;
    p->m = 0;
    p->V = hone_xmalloc(sizeof(double) * (size_t)cap * (size_t)np);
    p->F = hone_xmalloc(sizeof(double) * (size_t)cap * (size_t)nf);
    p->acq = hone_xmalloc(sizeof(double) * (size_t)cap);
    p->mu = hone_xmalloc(sizeof(double) * (size_t)cap);
    p->var = hone_xmalloc(sizeof(double) * (size_t)cap);
}

static void pool_free(pool *p)
{
    free(p->V);
    free(p->F);
    free(p->acq);
    free(p->mu);
    free(p->var);
}

/* Local refinement: a (1+8) evolution strategy with step adaptation, from one start. */
static void refine(bo_ctx *c, double *v, double *acq, int iters)
{
    enum { LAMBDA = 8 };
    pool q;
    pool_init(&q, LAMBDA, c->np, c->nf);
    double *unit = hone_xmalloc(sizeof(double) * (size_t)c->np);
    double sigma = 0.05, pflip = 1.0 / (c->np + 1);
    for (int it = 0; it < iters && sigma > 1e-5; it++) {
        for (int j = 0; j < LAMBDA; j++) {
            perturb(c, v, sigma, pflip, q.V + (size_t)j * c->np, unit);
            space__features(c->s, q.V + (size_t)j * c->np, q.F + (size_t)j * c->nf);
        }
        log_ei(c, q.F, LAMBDA, q.acq, q.mu, q.var);
        int bj = -1;
        for (int j = 0; j < LAMBDA; j++)
            if (q.acq[j] > *acq && (bj < 0 || q.acq[j] > q.acq[bj]))
                bj = j;
        if (bj >= 0) {
            *acq = q.acq[bj];
            memcpy(v, q.V + (size_t)bj * c->np, sizeof(double) * (size_t)c->np);
            sigma *= 1.5;
        } else {
            sigma *= 0.4;
        }
    }
    free(unit);
    pool_free(&q);
}

#define N_REFINE HONE_BO_N_REFINE
#define N_TOP_OBS 5

/* One model-based suggestion into out. */
static void suggest_model(bo_ctx *c, const hone_bo_opts *o, const double *ytr, double *out)
{
    /* The pool shrinks as 1/n past 50 observations: each prediction costs O(n^2), and with many
     * observations the local candidates around the best points matter more than random ones. */
    int nrand = o->n_candidates > 10 ? o->n_candidates : 10;
    if (c->n > 50)
        nrand = (int)((double)nrand * 50.0 / c->n) > 200 ? (int)((double)nrand * 50.0 / c->n)
                                                         : (nrand < 200 ? nrand : 200);
    int nloc_each = nrand / (HONE_BO_LOCAL_DIV * N_TOP_OBS);
    int cap = nrand + N_TOP_OBS * nloc_each;
    pool p;
    pool_init(&p, cap, c->np, c->nf);
    double *unit = hone_xmalloc(sizeof(double) * (size_t)c->np);
    for (int i = 0; i < nrand; i++)
        hone_space_sample(c->s, c->r, p.V + (size_t)(p.m++) * c->np);
    /* local candidates around the best observations (exploitation the random pool misses) */
    int top[N_TOP_OBS], ntop = 0;
    for (int t = 0; t < N_TOP_OBS && t < c->n; t++) {
        int bi = -1;
        for (int i = 0; i < c->n; i++) {
            int used = 0;
            for (int u = 0; u < ntop; u++)
                used |= top[u] == i;
            if (!used && (bi < 0 || ytr[i] < ytr[bi]))
                bi = i;
        }
        top[ntop++] = bi;
    }
    for (int t = 0; t < ntop; t++)
        for (int j = 0; j < nloc_each; j++) {
            double sigma = exp(log(1e-3) + hone_rng_uniform(c->r) * (log(0.3) - log(1e-3)));
            perturb(c, c->X + (size_t)top[t] * c->np, sigma, 1.0 / (c->np + 1),
                    p.V + (size_t)(p.m++) * c->np, unit);
        }
    for (int i = 0; i < p.m; i++)
        space__features(c->s, p.V + (size_t)i * c->np, p.F + (size_t)i * c->nf);
    log_ei(c, p.F, p.m, p.acq, p.mu, p.var);
    /* refine the best few distinct, untaken candidates in place */
    int nref = 0, refined[N_REFINE];
    int iters = c->n > 50 ? HONE_BO_REFINE_ITERS * 50 / c->n : HONE_BO_REFINE_ITERS;
    iters = iters < 15 ? 15 : iters;
    int nrefine = c->n > 100 ? 3 : N_REFINE; /* keeps a suggestion under ~50 ms at n = 200 */
    for (int t = 0; t < nrefine; t++) {
        int bi = -1;
        for (int i = 0; i < p.m; i++) {
            int used = 0;
            for (int u = 0; u < nref; u++)
                used |= refined[u] == i;
            if (!used && (bi < 0 || p.acq[i] > p.acq[bi]))
                bi = i;
        }
        if (bi < 0)
            break;
        refined[nref++] = bi;
        refine(c, p.V + (size_t)bi * c->np, &p.acq[bi], iters);
    }
    /* best untaken candidate */
    int bi = -1;
    for (int i = 0; i < p.m; i++)
        if ((bi < 0 || p.acq[i] > p.acq[bi]) && !is_taken(c, p.V + (size_t)i * c->np))
            bi = i;
    if (bi >= 0)
        memcpy(out, p.V + (size_t)bi * c->np, sizeof(double) * (size_t)c->np);
    else
        suggest_random(c, out);
    free(unit);
    pool_free(&p);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Targets for the GP: failed trials get the worst finite value, then a log warp when the values
 * are heavily skewed (e.g. Rosenbrock) so the model sees the region near the optimum, then
 * standardisation. */
static void transform_targets(const double *y, int n, double *out)
{
    double worst = -INFINITY, lo = INFINITY;
    for (int i = 0; i < n; i++)
        if (isfinite(y[i])) {
            worst = y[i] > worst ? y[i] : worst;
            lo = y[i] < lo ? y[i] : lo;
        }
    for (int i = 0; i < n; i++)
        out[i] = isfinite(y[i]) ? y[i] : worst;
    /* y' = log(y - min + delta), delta = median - min, when the values have a long tail of bad
     * results (skewness > 1, e.g. Rosenbrock): it expands the region near the best values and
     * tames huge ranges (Rosenbrock: 10-30x lower regret at 50 evaluations). Not when the tail is
     * on the good side (Ackley, Hartmann-6), where it made the model chase small bumps. */
    double *tmp = hone_xmalloc(sizeof(double) * (size_t)n);
    memcpy(tmp, out, sizeof(double) * (size_t)n);
    qsort(tmp, (size_t)n, sizeof(double), cmp_double);
    double delta = tmp[n / 2] - lo;
    if (delta < 0.01 * (tmp[n - 1] - lo))
        delta = 0.01 * (tmp[n - 1] - lo);
    double m1 = 0, m2 = 0, m3 = 0;
    for (int i = 0; i < n; i++)
        m1 += out[i] / n;
    for (int i = 0; i < n; i++) {
        double t = out[i] - m1;
        m2 += t * t / n;
        m3 += t * t * t / n;
    }
    double skew = m2 > 0 ? m3 / (m2 * sqrt(m2)) : 0;
    int warp = HONE_BO_WARP == 1 || (HONE_BO_WARP == 2 && skew > HONE_BO_SKEW);
    if (warp && delta > 0 && isfinite(delta))
        for (int i = 0; i < n; i++)
            out[i] = log(out[i] - lo + delta);
    free(tmp);
    double mean = 0, sd = 0;
    for (int i = 0; i < n; i++)
        mean += out[i];
    mean /= n;
    for (int i = 0; i < n; i++)
        sd += (out[i] - mean) * (out[i] - mean);
    sd = sqrt(sd / (n > 1 ? n - 1 : 1));
    if (!(sd > 1e-12 * (fabs(mean) + 1e-300)) || !isfinite(sd))
        sd = 1.0;
    for (int i = 0; i < n; i++)
        out[i] = (out[i] - mean) / sd;
}

#define FIT_SUBSET 80

/* Fits the kernel hyperparameters, on a subset when there are many observations (the fit is
 * O(n^3) per step): the best third plus an even spread of the rest, chosen deterministically.
 * The posterior then uses every observation. */
static int fit_hypers(bo_ctx *c, const double *F, const double *ytr, int n, const gp_fit_opts *fo)
{
    if (n <= FIT_SUBSET)
        return gp_fit(&c->g, F, ytr, n, NULL, fo, c->r);
    int nbest = FIT_SUBSET / 3, nf = c->nf;
    int *idx = hone_xmalloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)
        idx[i] = i;
    /* partial selection sort of the best nbest by target (ties by index: deterministic) */
    for (int t = 0; t < nbest; t++) {
        int bi = t;
        for (int i = t + 1; i < n; i++)
            if (ytr[idx[i]] < ytr[idx[bi]])
                bi = i;
        int tmp = idx[t];
        idx[t] = idx[bi];
        idx[bi] = tmp;
    }
    double *Fs = hone_xmalloc(sizeof(double) * FIT_SUBSET * (size_t)nf);
    double *ys = hone_xmalloc(sizeof(double) * FIT_SUBSET);
    int rest = n - nbest, want = FIT_SUBSET - nbest;
    for (int t = 0; t < FIT_SUBSET; t++) {
        int i = t < nbest ? idx[t] : idx[nbest + (int)((long)(t - nbest) * rest / want)];
        memcpy(Fs + (size_t)t * nf, F + (size_t)i * nf, sizeof(double) * (size_t)nf);
        ys[t] = ytr[i];
    }
    int rc = gp_fit(&c->g, Fs, ys, FIT_SUBSET, NULL, fo, c->r);
    if (rc == 0) {
        double *theta = hone_xmalloc(sizeof(double) * (size_t)(nf + 2));
        memcpy(theta, c->g.theta, sizeof(double) * (size_t)(nf + 2));
        rc = gp_set(&c->g, F, ytr, n, theta);
        free(theta);
    }
    free(idx);
    free(Fs);
    free(ys);
    return rc;
}

int hone_bo_suggest(const hone_space *s, const hone_bo_opts *o, const double *X, const double *y,
                    int n, const double *pending, int m, int k, hone_rng *r, double *out)
{
    hone_bo_opts def;
    if (!o) {
        hone_bo_opts_default(&def);
        o = &def;
    }
    if (!s || !r || !out || k < 1 || n < 0 || m < 0 || (n > 0 && (!X || !y)) || (m > 0 && !pending))
        return HONE_EINVAL;
    bo_ctx c = {.s = s,
                .np = hone_space_nparams(s),
                .nf = space__nfeat(s),
                .r = r,
                .X = X,
                .n = n,
                .pending = pending,
                .m = m,
                .chosen = out,
                .nchosen = 0};
    int nfinite = 0;
    for (int i = 0; i < n; i++)
        nfinite += isfinite(y[i]) != 0;
    if (n + m < o->n_init || nfinite < 2) {
        for (int j = 0; j < k; j++) {
            suggest_random(&c, out + (size_t)j * c.np);
            c.nchosen++;
        }
        return 0;
    }
    int rc = 0;
    double *ytr = hone_xmalloc(sizeof(double) * (size_t)n);
    double *F = hone_xmalloc(sizeof(double) * (size_t)n * (size_t)c.nf);
    double *f = hone_xmalloc(sizeof(double) * (size_t)c.nf);
    transform_targets(y, n, ytr);
    for (int i = 0; i < n; i++)
        space__features(s, X + (size_t)i * c.np, F + (size_t)i * c.nf);
    gp_init(&c.g, c.nf, n + m + k);
    gp_fit_opts fo = {.restarts = o->n_restarts, .max_iter = 30};
    rc = fit_hypers(&c, F, ytr, n, &fo);
    if (rc != 0) { /* no usable model: fall back to spreading points */
        for (int j = 0; j < k; j++) {
            suggest_random(&c, out + (size_t)j * c.np);
            c.nchosen++;
        }
        rc = 0;
        goto fail;
    }
    c.best = INFINITY;
    for (int i = 0; i < n; i++)
        c.best = ytr[i] < c.best ? ytr[i] : c.best;
    for (int i = 0; i < m; i++) { /* kriging believer: pending points at their predicted mean */
        double mu, var;
        space__features(s, pending + (size_t)i * c.np, f);
        gp_predict(&c.g, f, 1, &mu, &var);
        gp_append(&c.g, f, mu);
    }
    for (int j = 0; j < k; j++) {
        double *v = out + (size_t)j * c.np;
        suggest_model(&c, o, ytr, v);
        c.nchosen++;
        if (j + 1 < k) {
            double mu, var;
            space__features(s, v, f);
            gp_predict(&c.g, f, 1, &mu, &var);
            gp_append(&c.g, f, mu);
        }
    }
fail:
    gp_free(&c.g);
    free(ytr);
    free(F);
    free(f);
    return rc;
}
