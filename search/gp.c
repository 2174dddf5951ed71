/* Gaussian-process regression for bo.c: Matern-5/2 ARD kernel, Cholesky with a jitter fallback,
 * the log marginal likelihood with analytic gradients, and a MAP fit of the kernel
 * hyperparameters by multi-start L-BFGS (lbfgs.c). Pure maths: no I/O, no globals,
 * deterministic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gp.h"
#include "lbfgs.h"

#define SQRT5 2.23606797749979

/* Bounds of theta (features in [0,1], targets standardised). A lengthscale of 50 switches a
 * feature off; noise keeps a floor so noise-free data stays well conditioned. */
static const double LOG_LS_LO = -5.298317366548036;  /* log 0.005 */
static const double LOG_LS_HI = 3.912023005428146;   /* log 50 */
static const double LOG_SF_LO = -2.995732273553991;  /* log 0.05 */
static const double LOG_SF_HI = 2.995732273553991;   /* log 20 */
static const double LOG_SN_LO = -13.815510557964274; /* log 1e-6 */
static const double LOG_SN_HI = 0.0;                 /* log 1 */

static void theta_bounds(int d, int i, double *lo, double *hi)
{
    if (i < d) {
        *lo = LOG_LS_LO;
        *hi = LOG_LS_HI;
    } else if (i == d) {
        *lo = LOG_SF_LO;
        *hi = LOG_SF_HI;
    } else {
        *lo = LOG_SN_LO;
        *hi = LOG_SN_HI;
    }
}

/* Prior means/sds: lengthscales follow the dimension-scaled log-normal of Hvarfner et al. (2024),
 * which keeps high-dimensional fits from overfitting; signal variance near 1 (standardised y);
 * noise small but free to grow when the data says so. The knobs exist for bench/search.c. */
#ifndef HONE_GP_LS_SHIFT
#define HONE_GP_LS_SHIFT -1.0
#endif
#ifndef HONE_GP_LS_SD
#define HONE_GP_LS_SD 1.7320508075688772
#endif
#ifndef HONE_GP_NOISE_MEAN
#define HONE_GP_NOISE_MEAN -9.0
#endif
#ifndef HONE_GP_NOISE_SD
#define HONE_GP_NOISE_SD 3.0
#endif
static void prior_params(int d, int i, double *mean, double *sd)
{
    if (i < d) {
        *mean = 1.4142135623730951 + 0.5 * log((double)d) + HONE_GP_LS_SHIFT;
        *sd = HONE_GP_LS_SD;
    } else if (i == d) {
        *mean = 0.0;
        *sd = 1.5;
    } else {
        *mean = HONE_GP_NOISE_MEAN;
        *sd = HONE_GP_NOISE_SD;
    }
}

double gp_log_prior(int d, const double *theta, double *grad)
{
    double lp = 0;
    for (int i = 0; i < d + 2; i++) {
        double m, s;
        prior_params(d, i, &m, &s);
        double z = (theta[i] - m) / s;
        lp -= 0.5 * z * z;
        if (grad)
            grad[i] -= z / s;
    }
    return lp;
}

void gp_init(gp *g, int d, int cap)
{
    memset(g, 0, sizeof(*g));
    g->d = d;
    g->cap = cap;
    g->X = hone_xmalloc(sizeof(double) * (size_t)(cap > 0 ? cap : 1) * (size_t)(d > 0 ? d : 1));
    g->y = hone_xmalloc(sizeof(double) * (size_t)(cap > 0 ? cap : 1));
    g->theta = hone_xcalloc((size_t)d + 2, sizeof(double));
    g->L = hone_xmalloc(sizeof(double) * (size_t)(cap > 0 ? cap : 1) * (size_t)(cap > 0 ? cap : 1));
    g->alpha = hone_xmalloc(sizeof(double) * (size_t)(cap > 0 ? cap : 1));
}

void gp_free(gp *g)
{
    free(g->X);
    free(g->y);
    free(g->theta);
    free(g->L);
    free(g->alpha);
    memset(g, 0, sizeof(*g));
}

/* Matern-5/2 correlation at scaled distance r. */
static double matern(double r)
{
    double s = SQRT5 * r;
    return (1.0 + s + s * s / 3.0) * exp(-s);
}

static double scaled_dist(const double *a, const double *b, const double *inv_ls, int d)
{
    double r2 = 0;
    for (int l = 0; l < d; l++) {
        double t = (a[l] - b[l]) * inv_ls[l];
        r2 += t * t;
    }
    return sqrt(r2);
}

/* Fills the lower triangle of K (n x n, row stride ld) with sf2 * matern + diag. */
static void kernel_matrix(const double *X, int n, int d, const double *theta, double diag,
                          double *K, int ld)
{
    double inv_ls[d > 0 ? d : 1];
    for (int l = 0; l < d; l++)
        inv_ls[l] = exp(-theta[l]);
    double sf2 = exp(theta[d]);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < i; j++)
            K[(size_t)i * ld + j] =
                sf2 * matern(scaled_dist(X + (size_t)i * d, X + (size_t)j * d, inv_ls, d));
        K[(size_t)i * ld + i] = sf2 + diag;
    }
}

/* In-place Cholesky of the lower triangle (row stride ld). Returns HONE_ENUMERIC if not PD. */
static int cholesky(double *A, int n, int ld)
{
    for (int i = 0; i < n; i++) {
        double *ai = A + (size_t)i * ld;
        for (int j = 0; j <= i; j++) {
            const double *aj = A + (size_t)j * ld;
            double s0 = ai[j], s1 = 0, s2 = 0, s3 = 0;
            int k = 0;
            for (; k + 4 <= j; k += 4) {
                s0 -= ai[k] * aj[k];
                s1 -= ai[k + 1] * aj[k + 1];
                s2 -= ai[k + 2] * aj[k + 2];
                s3 -= ai[k + 3] * aj[k + 3];
            }
            for (; k < j; k++)
                s0 -= ai[k] * aj[k];
            double s = (s0 + s1) + (s2 + s3);
            if (j == i) {
                if (!(s > 0) || !isfinite(s))
                    return HONE_ENUMERIC;
                ai[i] = sqrt(s);
            } else {
                ai[j] = s / aj[j];
            }
        }
    }
    return 0;
}

/* Solves L x = b in place (forward substitution). */
static void solve_lower(const double *L, int n, int ld, double *b)
{
    for (int i = 0; i < n; i++) {
        const double *li = L + (size_t)i * ld;
        double s = b[i];
        for (int k = 0; k < i; k++)
            s -= li[k] * b[k];
        b[i] = s / li[i];
    }
}

/* Solves L^T x = b in place (back substitution). */
static void solve_upper_t(const double *L, int n, int ld, double *b)
{
    for (int i = n - 1; i >= 0; i--) {
        b[i] /= L[(size_t)i * ld + i];
        double bi = b[i];
        const double *li = L + (size_t)i * ld;
        for (int k = 0; k < i; k++)
            b[k] -= li[k] * bi;
    }
}

/* Factors K + (noise + jitter) I into L (stride ld) with jitter escalation; writes the jitter. */
static int factor_with_jitter(const double *X, int n, int d, const double *theta, double *L, int ld,
                              double *jitter_out)
{
    double noise = exp(theta[d + 1]), sf2 = exp(theta[d]);
    double jitter = 0;
    for (int attempt = 0; attempt < 7; attempt++) {
        kernel_matrix(X, n, d, theta, noise + jitter, L, ld);
        if (cholesky(L, n, ld) == 0) {
            *jitter_out = jitter;
            return 0;
        }
        jitter = jitter == 0 ? 1e-9 * sf2 : jitter * 10;
    }
    return HONE_ENUMERIC;
}

int gp_factor(gp *g)
{
    int rc = factor_with_jitter(g->X, g->n, g->d, g->theta, g->L, g->cap, &g->jitter);
    if (rc != 0)
        return rc;
    memcpy(g->alpha, g->y, sizeof(double) * (size_t)g->n);
    solve_lower(g->L, g->n, g->cap, g->alpha);
    solve_upper_t(g->L, g->n, g->cap, g->alpha);
    return 0;
}

int gp_set(gp *g, const double *X, const double *y, int n, const double *theta)
{
    if (n > g->cap || n < 0)
        return HONE_EINVAL;
    g->n = n;
    memcpy(g->X, X, sizeof(double) * (size_t)n * (size_t)g->d);
    memcpy(g->y, y, sizeof(double) * (size_t)n);
    memcpy(g->theta, theta, sizeof(double) * (size_t)(g->d + 2));
    return gp_factor(g);
}

int gp_append(gp *g, const double *x, double y)
{
    int n = g->n, d = g->d;
    if (n >= g->cap)
        return HONE_ELIMIT;
    double inv_ls[d > 0 ? d : 1];
    for (int l = 0; l < d; l++)
        inv_ls[l] = exp(-g->theta[l]);
    double sf2 = exp(g->theta[d]), noise = exp(g->theta[d + 1]);
    double *row = g->L + (size_t)n * g->cap;
    for (int j = 0; j < n; j++)
        row[j] = sf2 * matern(scaled_dist(x, g->X + (size_t)j * d, inv_ls, d));
    solve_lower(g->L, n, g->cap, row);
    double s = sf2 + noise + g->jitter;
    for (int j = 0; j < n; j++)
        s -= row[j] * row[j];
    if (!(s > 1e-12 * sf2))
        s = 1e-12 * sf2 + noise; /* a near-duplicate point: keep the factor usable */
    row[n] = sqrt(s);
    memcpy(g->X + (size_t)n * d, x, sizeof(double) * (size_t)d);
    g->y[n] = y;
    g->n = n + 1;
    memcpy(g->alpha, g->y, sizeof(double) * (size_t)g->n);
    solve_lower(g->L, g->n, g->cap, g->alpha);
    solve_upper_t(g->L, g->n, g->cap, g->alpha);
    return 0;
}

/* Predicts in blocks of PRED_BLOCK points: V = L^-1 K(X, Xs) row by row, the block row kept in a
 * fixed-size accumulator so the compiler holds it in registers. Short blocks are zero-padded. */
#define PRED_BLOCK 16
void gp_predict(const gp *g, const double *Xs, int m, double *mu, double *var)
{
    int n = g->n, d = g->d;
    double inv_ls[d > 0 ? d : 1];
    for (int l = 0; l < d; l++)
        inv_ls[l] = exp(-g->theta[l]);
    double sf2 = exp(g->theta[d]);
    double *V = hone_xmalloc(sizeof(double) * (size_t)(n > 0 ? n : 1) * PRED_BLOCK);
    for (int b0 = 0; b0 < m; b0 += PRED_BLOCK) {
        int B = m - b0 < PRED_BLOCK ? m - b0 : PRED_BLOCK;
        double mub[PRED_BLOCK] = {0}, ss[PRED_BLOCK] = {0};
        for (int i = 0; i < n; i++) {
            const double *li = g->L + (size_t)i * g->cap;
            double *vi = V + (size_t)i * PRED_BLOCK;
            double acc[PRED_BLOCK];
            for (int c = 0; c < PRED_BLOCK; c++) {
                double k = c < B ? sf2 * matern(scaled_dist(g->X + (size_t)i * d,
                                                            Xs + (size_t)(b0 + c) * d, inv_ls, d))
                                 : 0.0;
                acc[c] = k;
                mub[c] += k * g->alpha[i];
            }
            for (int k = 0; k < i; k++) {
                const double *vk = V + (size_t)k * PRED_BLOCK;
                double lik = li[k];
                for (int c = 0; c < PRED_BLOCK; c++)
                    acc[c] -= lik * vk[c];
            }
            double inv = 1.0 / li[i];
            for (int c = 0; c < PRED_BLOCK; c++) {
                vi[c] = acc[c] * inv;
                ss[c] += vi[c] * vi[c];
            }
        }
        for (int c = 0; c < B; c++) {
            double v = sf2 - ss[c];
            mu[b0 + c] = mub[c];
            var[b0 + c] = v > 1e-12 * sf2 ? v : 1e-12 * sf2;
        }
    }
    free(V);
}

/* LML = -1/2 y^T a - sum log L_ii - n/2 log 2 pi; dLML/dtheta = 1/2 tr((a a^T - K^-1) dK). */
int gp_lml(const double *X, const double *y, int n, int d, const double *theta, double *lml,
           double *grad)
{
    size_t nn = (size_t)n * (size_t)n;
    double *L = hone_xmalloc(sizeof(double) * (nn > 0 ? nn : 1));
    double *a = hone_xmalloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    double *W = NULL;
    double *inv_ls = hone_xmalloc(sizeof(double) * (size_t)(d > 0 ? d : 1));
    double jitter;
    int rc = factor_with_jitter(X, n, d, theta, L, n, &jitter);
    if (rc != 0)
        goto fail;
    memcpy(a, y, sizeof(double) * (size_t)n);
    solve_lower(L, n, n, a);
    double quad = 0, logdet = 0;
    for (int i = 0; i < n; i++) {
        quad += a[i] * a[i];
        logdet += log(L[(size_t)i * n + i]);
    }
    *lml = -0.5 * quad - logdet - 0.5 * n * log(2 * M_PI);
    if (!grad)
        goto fail;
    solve_upper_t(L, n, n, a);
    /* L^-1 in place of L (lower), row by row: Li[i][j] = -(sum_k L[i][k] Li[k][j]) / L[i][i]. */
    W = hone_xcalloc(nn > 0 ? nn : 1, sizeof(double));
    double *Li = W; /* reuse: first L^-1 in W, then K^-1 into L's storage */
    for (int i = 0; i < n; i++) {
        const double *l = L + (size_t)i * n;
        double *li = Li + (size_t)i * n;
        for (int k = 0; k < i; k++) {
            const double *lk = Li + (size_t)k * n;
            double c = l[k];
            for (int j = 0; j <= k; j++)
                li[j] -= c * lk[j];
        }
        double inv = 1.0 / l[i];
        for (int j = 0; j < i; j++)
            li[j] *= inv;
        li[i] = inv;
    }
    /* K^-1 = Li^T Li, lower triangle, into L. */
    memset(L, 0, sizeof(double) * nn);
    for (int k = 0; k < n; k++) {
        const double *lk = Li + (size_t)k * n;
        for (int i = 0; i <= k; i++) {
            double c = lk[i];
            double *ki = L + (size_t)i * n;
            for (int j = 0; j <= i; j++)
                ki[j] += c * lk[j];
        }
    }
    for (int l = 0; l < d; l++) {
        inv_ls[l] = exp(-theta[l]);
        grad[l] = 0;
    }
    double sf2 = exp(theta[d]), noise = exp(theta[d + 1]);
    double gsf = 0, gsn = 0;
    for (int i = 0; i < n; i++) {
        const double *xi = X + (size_t)i * d;
        const double *ki = L + (size_t)i * n;
        for (int j = 0; j < i; j++) {
            double w = a[i] * a[j] - ki[j];
            const double *xj = X + (size_t)j * d;
            double r = scaled_dist(xi, xj, inv_ls, d);
            double e = exp(-SQRT5 * r);
            gsf += w * sf2 * (1.0 + SQRT5 * r + 5.0 * r * r / 3.0) * e; /* x2 pairs, x1/2 */
            double gcommon = w * sf2 * (5.0 / 3.0) * (1.0 + SQRT5 * r) * e;
            for (int l = 0; l < d; l++) {
                double t = (xi[l] - xj[l]) * inv_ls[l];
                grad[l] += gcommon * t * t;
            }
        }
        double wii = a[i] * a[i] - ki[i];
        gsf += 0.5 * wii * sf2;
        gsn += 0.5 * wii * noise;
    }
    grad[d] = gsf;
    grad[d + 1] = gsn;
fail:
    free(L);
    free(a);
    free(W);
    free(inv_ls);
    return rc;
}

/* Negative log posterior and its gradient; returns +inf when K cannot be factored. */
static double neg_post(const double *X, const double *y, int n, int d, const double *theta,
                       double *grad)
{
    double lml;
    if (gp_lml(X, y, n, d, theta, &lml, grad) != 0 || !isfinite(lml))
        return INFINITY;
    if (grad) {
        double lp = gp_log_prior(d, theta, grad);
        for (int i = 0; i < d + 2; i++)
            grad[i] = -grad[i];
        return -(lml + lp);
    }
    return -(lml + gp_log_prior(d, theta, NULL));
}

static void clamp_theta(int d, double *theta)
{
    for (int i = 0; i < d + 2; i++) {
        double lo, hi;
        theta_bounds(d, i, &lo, &hi);
        theta[i] = theta[i] < lo ? lo : (theta[i] > hi ? hi : theta[i]);
    }
}

/* neg_post over theta for lbfgs_minimize. */
typedef struct {
    const double *X, *y;
    int n, d;
} post_ctx;

static double neg_post_fn(const double *theta, double *grad, void *ctx)
{
    const post_ctx *c = ctx;
    return neg_post(c->X, c->y, c->n, c->d, theta, grad);
}

int gp_fit(gp *g, const double *X, const double *y, int n, const double *start,
           const gp_fit_opts *o, hone_rng *r)
{
    int d = g->d, p = d + 2;
    double best[p], cand[p];
    double fbest = INFINITY;
    /* Deterministic start: lengthscales 0.5 of the cube, unit signal, small noise. */
    for (int l = 0; l < d; l++)
        cand[l] = log(0.5);
    cand[d] = 0.0;
    cand[d + 1] = log(1e-3);
    int nstarts = 1 + (start ? 1 : 0) + (o->restarts > 0 ? o->restarts : 0);
    for (int s = 0; s < nstarts; s++) {
        if (s == 1 && start) {
            memcpy(cand, start, sizeof(double) * (size_t)p);
        } else if (s > 0) {
            for (int i = 0; i < p; i++) {
                double m, sd;
                prior_params(d, i, &m, &sd);
                cand[i] = m + 0.5 * sd * hone_rng_normal(r);
            }
        }
        clamp_theta(d, cand);
        double f = neg_post(X, y, n, d, cand, NULL);
        if (f < fbest) {
            fbest = f;
            memcpy(best, cand, sizeof(double) * (size_t)p);
        }
    }
    if (!isfinite(fbest)) {
        for (int l = 0; l < d; l++)
            best[l] = log(0.5);
        best[d] = 0.0;
        best[d + 1] = LOG_SN_HI - 2.0;
    } else {
        double lo[p], hi[p];
        for (int i = 0; i < p; i++)
            theta_bounds(d, i, &lo[i], &hi[i]);
        post_ctx c = {X, y, n, d};
        lbfgs_minimize(p, best, lo, hi, o->max_iter, neg_post_fn, &c);
    }
    return gp_set(g, X, y, n, best);
}

/* log(phi(z) + z Phi(z)). Direct for z > -20 (erfc of a positive argument keeps Phi accurate;
 * the cancellation costs about z^2 ulps), else the asymptotic series
 * phi(z)/z^2 (1 - 3/z^2 + 15/z^4 - 105/z^6 + 945/z^8 - 10395/z^10), within ~1e-10 there. */
double gp_log_h(double z)
{
    const double log_sqrt_2pi = 0.9189385332046727;
    if (z > -20.0) {
        double Phi = 0.5 * erfc(-z / 1.4142135623730951);
        double phi = exp(-0.5 * z * z - log_sqrt_2pi);
        double h = phi + z * Phi;
        return log(h > 1e-300 ? h : 1e-300);
    }
    double iz2 = 1.0 / (z * z);
    double series =
        1.0 -
        3.0 * iz2 * (1.0 - 5.0 * iz2 * (1.0 - 7.0 * iz2 * (1.0 - 9.0 * iz2 * (1.0 - 11.0 * iz2))));
    return -0.5 * z * z - log_sqrt_2pi + log(iz2) + log(series);
}
