/* tests/kernels/test_kernels_pool_norm.c: max/avg pooling, upsampling, batch norm (training and
 * inference, running statistics) and softmax cross-entropy (one-hot and label-smoothed targets)
 * against the double references, with batch norm and cross-entropy gradients also checked against
 * finite differences. */
#include <math.h>

#include "tk.h"

static void check_pool(hone_kctx *k, int n, int c, int h, int w, int size, int stride)
{
    int P = (h - size) / stride + 1, Q = (w - size) / stride + 1;
    size_t nx = (size_t)n * c * h * w, ny = (size_t)n * c * P * Q;
    float *x = malloc(sizeof(float) * nx), *gy = malloc(sizeof(float) * ny), *out;
    ref_fill_uniform(x, nx, 41, -1, 1);
    ref_fill_uniform(gy, ny, 42, -1, 1);
    double *ry = malloc(sizeof(double) * ny), *rdx = malloc(sizeof(double) * nx);
    ref_maxpool_fwd(n, c, h, w, size, stride, x, ry);
    ref_maxpool_bwd(n, c, h, w, size, stride, x, gy, rdx);
    float *dx = tk_dev(k, x, nx), *dy = tk_poisoned(k, ny), *dgy = tk_dev(k, gy, ny);
    float *ddx = tk_poisoned(k, nx);
    int32_t *idx = hone_k_alloc(k, sizeof(int32_t) * ny);
    TK_OK(hone_k_maxpool_fwd(k, n, c, h, w, size, stride, dx, dy, idx));
    TK_CLOSE("maxpool_fwd", out = tk_get(k, dy, ny), ry, ny, 0);
    free(out);
    TK_OK(hone_k_maxpool_bwd(k, n, c, h, w, size, stride, dgy, idx, ddx));
    TK_CLOSE("maxpool_bwd", out = tk_get(k, ddx, nx), rdx, nx, 1e-6);
    free(out);

    double *ra = malloc(sizeof(double) * n * c);
    ref_avgpool_global_fwd(n, c, h, w, x, ra);
    float *da = tk_poisoned(k, (size_t)n * c);
    TK_OK(hone_k_avgpool_global_fwd(k, n, c, h, w, dx, da));
    TK_CLOSE("avgpool_global_fwd", out = tk_get(k, da, (size_t)n * c), ra, (size_t)n * c, 1e-6);
    free(out);
    TK_OK(hone_k_avgpool_global_bwd(k, n, c, h, w, dgy, ddx)); /* dy[n,c] = first n*c of gy */
    for (size_t i = 0; i < nx; i++)
        rdx[i] = gy[i / ((size_t)h * w)] / (double)(h * w);
    TK_CLOSE("avgpool_global_bwd", out = tk_get(k, ddx, nx), rdx, nx, 1e-6);
    free(out);

    size_t nu = nx * 4;
    double *ru = malloc(sizeof(double) * nu);
    ref_upsample_fwd(n, c, h, w, 2, x, ru);
    float *du = tk_poisoned(k, nu);
    TK_OK(hone_k_upsample_fwd(k, n, c, h, w, 2, dx, du));
    TK_CLOSE("upsample_fwd", out = tk_get(k, du, nu), ru, nu, 0);
    free(out);
    /* upsample_bwd is the adjoint: <up(x), u> == <x, up_bwd(u)> with u = up(x) */
    TK_OK(hone_k_upsample_bwd(k, n, c, h, w, 2, du, ddx));
    for (size_t i = 0; i < nx; i++)
        rdx[i] = 4.0 * x[i];
    TK_CLOSE("upsample_bwd", out = tk_get(k, ddx, nx), rdx, nx, 1e-6);
    free(out);

    hone_k_free(k, dx);
    hone_k_free(k, dy);
    hone_k_free(k, dgy);
    hone_k_free(k, ddx);
    hone_k_free(k, idx);
    hone_k_free(k, da);
    hone_k_free(k, du);
    free(x);
    free(gy);
    free(ry);
    free(rdx);
    free(ra);
    free(ru);
}

static void check_bn(hone_kctx *k, int n, int c, int hw)
{
    size_t nx = (size_t)n * c * hw;
    const float eps = 1e-5f, mom = 0.1f;
    float *x = malloc(sizeof(float) * nx), *gy = malloc(sizeof(float) * nx), *out;
    float *gam = malloc(sizeof(float) * c), *bet = malloc(sizeof(float) * c);
    ref_fill_uniform(x, nx, 51, -2, 3);
    ref_fill_uniform(gy, nx, 52, -1, 1);
    ref_fill_uniform(gam, c, 53, 0.5f, 1.5f);
    ref_fill_uniform(bet, c, 54, -1, 1);
    double *ry = malloc(sizeof(double) * nx), *rdx = malloc(sizeof(double) * nx);
    double *mean = malloc(sizeof(double) * c), *var = malloc(sizeof(double) * c);
    double *rg = malloc(sizeof(double) * c), *rb = malloc(sizeof(double) * c);
    ref_batchnorm_fwd(n, c, hw, x, gam, bet, eps, ry, mean, var);
    ref_batchnorm_bwd(n, c, hw, x, gy, gam, eps, rdx, rg, rb);
    float *dx = tk_dev(k, x, nx), *dgy = tk_dev(k, gy, nx), *dy = tk_poisoned(k, nx);
    float *dg = tk_dev(k, gam, c), *db = tk_dev(k, bet, c);
    float *rm = tk_poisoned(k, c), *rv = tk_poisoned(k, c), *sm = tk_poisoned(k, c);
    float *si = tk_poisoned(k, c), *ddx = tk_poisoned(k, nx), *ddg = tk_poisoned(k, c);
    float *ddb = tk_poisoned(k, c);
    TK_OK(hone_k_fill(k, rm, 0.5f, c));
    TK_OK(hone_k_fill(k, rv, 2.0f, c));
    TK_OK(hone_k_batchnorm_fwd(k, n, c, hw, dx, dg, db, rm, rv, mom, eps, 1, sm, si, dy));
    TK_CLOSE("batchnorm_fwd", out = tk_get(k, dy, nx), ry, nx, 1e-5);
    free(out);
    double *exp_rm = malloc(sizeof(double) * c), *exp_rv = malloc(sizeof(double) * c);
    double m = (double)n * hw;
    for (int i = 0; i < c; i++) {
        exp_rm[i] = 0.9 * 0.5 + 0.1 * mean[i];
        exp_rv[i] = 0.9 * 2.0 + 0.1 * var[i] * (m > 1 ? m / (m - 1) : 1);
    }
    TK_CLOSE("batchnorm running_mean", out = tk_get(k, rm, c), exp_rm, c, 1e-5);
    free(out);
    TK_CLOSE("batchnorm running_var", out = tk_get(k, rv, c), exp_rv, c, 1e-5);
    free(out);
    TK_OK(hone_k_batchnorm_bwd(k, n, c, hw, dx, dgy, dg, sm, si, ddx, ddg, ddb));
    TK_CLOSE("batchnorm_bwd dx", out = tk_get(k, ddx, nx), rdx, nx, 1e-4);
    free(out);
    TK_CLOSE("batchnorm_bwd dgamma", out = tk_get(k, ddg, c), rg, c, 1e-5);
    free(out);
    TK_CLOSE("batchnorm_bwd dbeta", out = tk_get(k, ddb, c), rb, c, 1e-5);
    free(out);

    /* fused with a ReLU: y = max(0, bn(x)); the backward is bn's with dy masked by that y (the
     * mask taken from the op's own y, so a value rounding to either side of 0 cannot flake) */
    {
        double *ryr = malloc(sizeof(double) * nx), *rdxr = malloc(sizeof(double) * nx);
        double *rgr = malloc(sizeof(double) * c), *rbr = malloc(sizeof(double) * c);
        float *gym = malloc(sizeof(float) * nx);
        for (size_t i = 0; i < nx; i++)
            ryr[i] = ry[i] > 0 ? ry[i] : 0;
        float *rm2 = tk_poisoned(k, c), *rv2 = tk_poisoned(k, c); /* keep rm, rv for below */
        TK_OK(hone_k_fill(k, rm2, 0.5f, c));
        TK_OK(hone_k_fill(k, rv2, 2.0f, c));
        TK_OK(
            hone_k_batchnorm_relu_fwd(k, n, c, hw, dx, dg, db, rm2, rv2, mom, eps, 1, sm, si, dy));
        TK_CLOSE("batchnorm_relu_fwd", out = tk_get(k, dy, nx), ryr, nx, 1e-5);
        for (size_t i = 0; i < nx; i++)
            gym[i] = out[i] > 0.0f ? gy[i] : 0.0f;
        free(out);
        ref_batchnorm_bwd(n, c, hw, x, gym, gam, eps, rdxr, rgr, rbr);
        TK_OK(hone_k_batchnorm_relu_bwd(k, n, c, hw, dx, dy, dgy, dg, sm, si, ddx, ddg, ddb));
        TK_CLOSE("batchnorm_relu_bwd dx", out = tk_get(k, ddx, nx), rdxr, nx, 1e-4);
        free(out);
        TK_CLOSE("batchnorm_relu_bwd dgamma", out = tk_get(k, ddg, c), rgr, c, 1e-5);
        free(out);
        TK_CLOSE("batchnorm_relu_bwd dbeta", out = tk_get(k, ddb, c), rbr, c, 1e-5);
        free(out);
        hone_k_free(k, rm2), hone_k_free(k, rv2);
        free(ryr), free(rdxr), free(rgr), free(rbr), free(gym);
    }

    /* inference: running statistics */
    TK_OK(hone_k_batchnorm_fwd(k, n, c, hw, dx, dg, db, rm, rv, mom, eps, 0, NULL, NULL, dy));
    for (size_t i = 0; i < nx; i++) {
        int ch = (int)(i / hw % c);
        ry[i] = gam[ch] * (x[i] - exp_rm[ch]) / sqrt(exp_rv[ch] + eps) + bet[ch];
    }
    TK_CLOSE("batchnorm_fwd inference", out = tk_get(k, dy, nx), ry, nx, 1e-5);
    free(out);

    /* the reference backward against finite differences of the reference forward (L = <y, gy>) */
    if (nx <= 256) {
        double *fd = malloc(sizeof(double) * nx), *yp = malloc(sizeof(double) * nx);
        for (size_t i = 0; i < nx; i++) {
            float o = x[i];
            double l[2];
            for (int sgn = 0; sgn < 2; sgn++) {
                x[i] = o + (sgn ? -1e-3f : 1e-3f);
                ref_batchnorm_fwd(n, c, hw, x, gam, bet, eps, yp, mean, var);
                l[sgn] = 0;
                for (size_t j = 0; j < nx; j++)
                    l[sgn] += yp[j] * gy[j];
            }
            x[i] = o;
            fd[i] = (l[0] - l[1]) / (double)(((o + 1e-3f) - (o - 1e-3f)));
        }
        double e = ref_rel_err_d(rdx, fd, nx);
        if (e > 1e-3) {
            fprintf(stderr, "batchnorm bwd vs finite differences: rel err %g\n", e);
            tk_failures++;
        }
        free(fd);
        free(yp);
    }
    float *bufs[] = {dx, dgy, dy, dg, db, rm, rv, sm, si, ddx, ddg, ddb};
    for (size_t i = 0; i < HONE_ARRAY_LEN(bufs); i++)
        hone_k_free(k, bufs[i]);
    free(x);
    free(gy);
    free(gam);
    free(bet);
    free(ry);
    free(rdx);
    free(mean);
    free(var);
    free(rg);
    free(rb);
    free(exp_rm);
    free(exp_rv);
}

/* Softmax cross-entropy with label smoothing eps (0: one-hot) against the double reference,
 * whose gradient is checked against central differences of its loss. */
static void check_xent(hone_kctx *k, int n, int classes, float eps)
{
    size_t nz = (size_t)n * classes;
    float *z = malloc(sizeof(float) * nz), *out;
    int32_t *lab = malloc(sizeof(int32_t) * n);
    ref_fill_uniform(z, nz, 61 + (uint64_t)(eps * 1000), -4, 4);
    for (int i = 0; i < n; i++)
        lab[i] = i % 7 == 3 ? -1 : (i * 5 + 1) % classes; /* some padding rows */
    double *rdz = malloc(sizeof(double) * nz), loss;
    int correct;
    ref_softmax_xent(z, lab, n, classes, eps, rdz, &loss, &correct);
    float *dz = tk_dev(k, z, nz), *ddz = tk_poisoned(k, nz), *acc = tk_dev(k, NULL, 2);
    int32_t *dl = tk_dev_bytes(k, lab, sizeof(int32_t) * n);
    TK_OK(hone_k_fill(k, acc, 1.0f, 2)); /* accumulates onto what is there */
    TK_OK(hone_k_softmax_xent(k, dz, dl, n, classes, eps, ddz, acc, acc + 1));
    char name[64];
    snprintf(name, sizeof name, "softmax_xent dlogits (eps %g)", eps);
    TK_CLOSE(name, out = tk_get(k, ddz, nz), rdz, nz, 1e-5);
    free(out);
    out = tk_get(k, acc, 2);
    TK_EXPECT(fabs(out[0] - (1 + loss)) <= 1e-5 * (1 + loss));
    TK_EXPECT(out[1] == 1 + correct);
    free(out);
    TK_OK(hone_k_softmax_xent(k, dz, dl, n, classes, eps, NULL, acc, acc + 1)); /* no grad */
    out = tk_get(k, acc, 2);
    TK_EXPECT(fabs(out[0] - (1 + 2 * loss)) <= 1e-5 * (1 + loss));
    free(out);
    if (eps > 0) { /* smoothing moves the loss and the gradient off the one-hot ones */
        double l0;
        double *dz0 = malloc(sizeof(double) * nz);
        ref_softmax_xent(z, lab, n, classes, 0, dz0, &l0, &correct);
        TK_EXPECT(fabs(l0 - loss) > 1e-3 * loss && ref_rel_err_d(dz0, rdz, nz) > 1e-3);
        free(dz0);
    }
    /* reference gradient vs central differences of the reference loss / n */
    double *fd = malloc(sizeof(double) * nz), lp, lm;
    for (size_t i = 0; i < nz && nz <= 512; i++) {
        float o = z[i];
        z[i] = o + 1e-2f;
        ref_softmax_xent(z, lab, n, classes, eps, NULL, &lp, &correct);
        z[i] = o - 1e-2f;
        ref_softmax_xent(z, lab, n, classes, eps, NULL, &lm, &correct);
        z[i] = o;
        fd[i] = (lp - lm) / (double)((o + 1e-2f) - (o - 1e-2f)) / n;
    }
    double e = nz <= 512 ? ref_rel_err_d(rdz, fd, nz) : 0;
    if (e > 1e-3) {
        fprintf(stderr, "xent (eps %g) grad vs finite differences: rel err %g\n", eps, e);
        tk_failures++;
    }
    hone_k_free(k, dz);
    hone_k_free(k, ddz);
    hone_k_free(k, acc);
    hone_k_free(k, dl);
    free(z);
    free(lab);
    free(rdz);
    free(fd);
}

/* eps outside [0, 1) (or NaN) is refused before the backend runs: the accumulators keep their
 * values. */
static void check_xent_refused(hone_kctx *k)
{
    float z[4] = {0.5f, -1, 2, 0}, *out;
    int32_t lab[2] = {0, 1};
    float *dz = tk_dev(k, z, 4), *acc = tk_dev(k, NULL, 2);
    int32_t *dl = tk_dev_bytes(k, lab, sizeof lab);
    TK_OK(hone_k_fill(k, acc, 3.0f, 2));
    const float bad[] = {-0.1f, 1.0f, 1.5f, NAN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        TK_EXPECT(hone_k_softmax_xent(k, dz, dl, 2, 2, bad[i], NULL, acc, acc + 1) == HONE_EINVAL);
    out = tk_get(k, acc, 2);
    TK_EXPECT(out[0] == 3.0f && out[1] == 3.0f);
    free(out);
    hone_k_free(k, dz);
    hone_k_free(k, acc);
    hone_k_free(k, dl);
}

int main(int argc, char **argv)
{
    hone_kctx *k = tk_ctx(argc, argv);
    check_pool(k, 2, 3, 8, 8, 2, 2);
    check_pool(k, 3, 5, 28, 28, 2, 2);
    check_pool(k, 1, 2, 7, 9, 3, 2); /* odd sizes, overlapping windows */
    check_bn(k, 4, 3, 5);
    check_bn(k, 32, 16, 49);
    check_bn(k, 64, 128, 1); /* after a dense layer */
    check_xent(k, 1, 2, 0);
    check_xent(k, 37, 10, 0);
    check_xent(k, 256, 100, 0);
    check_xent(k, 1, 2, 0.3f); /* label smoothing */
    check_xent(k, 37, 10, 0.1f);
    check_xent(k, 256, 100, 0.2f);
    check_xent(k, 40, 10, 0.5f);
    check_xent_refused(k);
    return tk_finish(k, "test_kernels_pool_norm");
}
