/* tests/kernels/test_kernels_half.c: the bf16 NHWC ops (kernels.h) against the double references
 * of ref.c run on the same bf16 inputs widened to float. Inputs are exact bf16 values, so the only
 * error allowed is the one rounding of each stored output (2^-9 relative) plus float accumulation:
 * 4e-3 on the norm-relative error. Run with "cuda" by tests/gpu (gpu_kernels_half), where the
 * convolutions are cuDNN's; a context without a bf16 convolution (CUDA without cuDNN) skips
 * those checks, saying so. Shapes cover the 8-wide and the scalar paths (channels a multiple of 8
 * or not). */
#include <math.h>

#include "backend.h" /* hone_f32_to_bf16 / hone_bf16_to_f32 */
#include "tk.h"

#define TOL_H 4e-3

/* Random bf16 values in [lo, hi): the host copy as floats (exact) and as bf16. */
static hone_bf16 *rand_h(size_t n, uint64_t seed, float lo, float hi, float **f)
{
    float *x = malloc(sizeof(float) * (n ? n : 1));
    hone_bf16 *h = malloc(sizeof(hone_bf16) * (n ? n : 1));
    ref_fill_uniform(x, n, seed, lo, hi);
    for (size_t i = 0; i < n; i++) {
        h[i] = hone_f32_to_bf16(x[i]);
        x[i] = hone_bf16_to_f32(h[i]);
    }
    *f = x;
    return h;
}

static hone_bf16 *dev_h(hone_kctx *k, const hone_bf16 *h, size_t n)
{
    return tk_dev_bytes(k, h, n * sizeof(hone_bf16));
}

/* A device bf16 buffer of n NaNs. */
static hone_bf16 *poison_h(hone_kctx *k, size_t n)
{
    hone_bf16 *h = malloc(sizeof(hone_bf16) * (n ? n : 1));
    for (size_t i = 0; i < n; i++)
        h[i] = 0x7fc0;
    hone_bf16 *d = dev_h(k, h, n);
    free(h);
    return d;
}

/* The device bf16 values widened to host floats (caller frees). */
static float *get_h(hone_kctx *k, const hone_bf16 *dev, size_t n)
{
    hone_bf16 *h = malloc(sizeof(hone_bf16) * (n ? n : 1));
    float *f = malloc(sizeof(float) * (n ? n : 1));
    hone_k_sync(k);
    hone_k_download(k, h, dev, n * sizeof(hone_bf16));
    for (size_t i = 0; i < n; i++)
        f[i] = hone_bf16_to_f32(h[i]);
    free(h);
    return f;
}

/* Compares n device floats with ref. */
static void close_dev(hone_kctx *k, const char *name, const float *dev, const double *ref, size_t n,
                      double tol)
{
    float *h = tk_get(k, dev, n);
    TK_CLOSE(name, h, ref, n, tol);
    free(h);
}

/* [n][hw][c] <-> [n][c][hw] on host floats. */
static float *to_nchw(const float *x, int n, int c, int hw)
{
    float *y = malloc(sizeof(float) * (size_t)n * c * hw);
    for (int i = 0; i < n; i++)
        for (int p = 0; p < hw; p++)
            for (int ch = 0; ch < c; ch++)
                y[((size_t)i * c + ch) * hw + p] = x[((size_t)i * hw + p) * c + ch];
    return y;
}

static void to_nhwc_d(double *y, int n, int c, int hw)
{
    size_t t = (size_t)n * c * hw;
    double *tmp = malloc(sizeof(double) * t);
    memcpy(tmp, y, sizeof(double) * t);
    for (int i = 0; i < n; i++)
        for (int p = 0; p < hw; p++)
            for (int ch = 0; ch < c; ch++)
                y[((size_t)i * hw + p) * c + ch] = tmp[((size_t)i * c + ch) * hw + p];
    free(tmp);
}

static void check_rounding(void)
{
    /* 1 + 2^-8 ties to 1.0 (even), 1 + 3 * 2^-8 to 1 + 2^-6 (even), the largest float overflows to
     * inf, NaN stays NaN, bits survive a round trip */
    TK_EXPECT(hone_f32_to_bf16(1.0f) == 0x3f80);
    TK_EXPECT(hone_f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80);
    TK_EXPECT(hone_f32_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82);
    TK_EXPECT(hone_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81);
    TK_EXPECT(hone_f32_to_bf16(-2.0f) == 0xc000);
    TK_EXPECT(hone_f32_to_bf16(3.4028235e38f) == 0x7f80);
    TK_EXPECT(isnan(hone_bf16_to_f32(hone_f32_to_bf16(NAN))));
    for (uint32_t h = 0; h < 0x10000; h += 7)
        if ((h & 0x7f80) != 0x7f80) /* finite */
            TK_EXPECT(hone_f32_to_bf16(hone_bf16_to_f32((hone_bf16)h)) == h);
}

static void check_layout(hone_kctx *k)
{
    int n = 3, c = 5, hw = 7;
    size_t t = (size_t)n * c * hw;
    float *x = malloc(sizeof(float) * t);
    ref_fill_uniform(x, t, 11, -3.0f, 3.0f);
    float *dx = tk_dev(k, x, t);
    hone_bf16 *dy = poison_h(k, t);
    TK_OK(hone_k_to_nhwc_h(k, n, c, hw, dx, dy));
    float *y = get_h(k, dy, t);
    double *ref = malloc(sizeof(double) * t);
    for (size_t i = 0; i < t; i++)
        ref[i] = hone_bf16_to_f32(hone_f32_to_bf16(x[i]));
    to_nhwc_d(ref, n, c, hw);
    TK_CLOSE("to_nhwc_h", y, ref, t, 0.0);
    /* and back, exactly: the rounded values in NCHW order */
    float *back = tk_poisoned(k, t);
    TK_OK(hone_k_from_nhwc_h(k, n, c, hw, dy, back));
    double *rb = malloc(sizeof(double) * t);
    for (size_t i = 0; i < t; i++)
        rb[i] = hone_bf16_to_f32(hone_f32_to_bf16(x[i]));
    close_dev(k, "from_nhwc_h", back, rb, t, 0.0);
    free(rb);
    hone_k_free(k, back);
    /* the filters of a conv: [k][c][r][s] -> [k][r][s][c] */
    hone_conv_desc d;
    TK_OK(hone_conv_desc_init(&d, 1, c, 8, 4, n, 7, 1, 1, 0)); /* k = n, r*s = 7 = hw */
    TK_OK(hone_k_conv_weights_h(k, &d, dx, dy));
    free(y);
    y = get_h(k, dy, t);
    TK_CLOSE("conv_weights_h", y, ref, t, 0.0);
    free(ref), free(y), free(x);
    hone_k_free(k, dx), hone_k_free(k, dy);
}

/* Forward and backward (with and without accumulation into dx) of one shape. */
static void check_conv(hone_kctx *k, int n, int c, int h, int w, int kk, int r, int stride, int pad,
                       uint64_t seed)
{
    hone_conv_desc d;
    TK_OK(hone_conv_desc_init(&d, n, c, h, w, kk, r, r, stride, pad));
    size_t ws_bytes = 0;
    int rc = hone_k_conv_workspace_h(k, &d, &ws_bytes);
    if (rc == HONE_ENOTSUP) {
        fprintf(stderr, "conv_h n%d c%d %dx%d k%d r%d: no bf16 convolution here, skipped\n", n, c,
                h, w, kk, r);
        return;
    }
    TK_OK(rc);
    size_t nx = (size_t)n * c * h * w, ny = (size_t)n * kk * d.p * d.q, nw = (size_t)kk * c * r * r;
    float *xf, *wf_nhwc, *dyf, *dx0f;
    hone_bf16 *xh = rand_h(nx, seed, -1.0f, 1.0f, &xf);
    hone_bf16 *wh = rand_h(nw, seed + 1, -0.5f, 0.5f, &wf_nhwc); /* KRSC */
    hone_bf16 *dyh = rand_h(ny, seed + 2, -1.0f, 1.0f, &dyf);
    hone_bf16 *dx0h = rand_h(nx, seed + 3, -1.0f, 1.0f, &dx0f);
    float *xn = to_nchw(xf, n, c, h * w), *wn = to_nchw(wf_nhwc, kk, c, r * r),
          *dyn = to_nchw(dyf, n, kk, d.p * d.q);
    void *ws = ws_bytes ? hone_k_alloc(k, ws_bytes) : NULL;
    hone_bf16 *dxd = dev_h(k, xh, nx), *dwd = dev_h(k, wh, nw), *dyd = dev_h(k, dyh, ny);
    hone_bf16 *y = poison_h(k, ny), *dxo = poison_h(k, nx), *dxa = dev_h(k, dx0h, nx);
    float *dw = tk_poisoned(k, nw), *dw2 = tk_poisoned(k, nw);

    TK_OK(hone_k_conv_fwd_h(k, &d, dxd, dwd, y, ws));
    TK_OK(hone_k_conv_bwd_h(k, &d, dxd, dwd, dyd, dxo, 0, dw, ws));
    TK_OK(hone_k_conv_bwd_h(k, &d, dxd, dwd, dyd, dxa, 1, dw2, ws));
    double *ry = malloc(sizeof(double) * ny), *rdx = malloc(sizeof(double) * nx),
           *rdw = malloc(sizeof(double) * nw);
    ref_conv_fwd(&d, xn, wn, NULL, ry);
    ref_conv_bwd(&d, xn, wn, dyn, rdx, rdw, NULL);
    to_nhwc_d(ry, n, kk, d.p * d.q);
    to_nhwc_d(rdx, n, c, h * w);
    char name[96];
    float *g = get_h(k, y, ny);
    snprintf(name, sizeof(name), "conv_fwd_h c%d k%d r%d s%d", c, kk, r, stride);
    TK_CLOSE(name, g, ry, ny, TOL_H);
    free(g);
    g = get_h(k, dxo, nx);
    snprintf(name, sizeof(name), "conv_bwd_h dx c%d k%d r%d s%d", c, kk, r, stride);
    TK_CLOSE(name, g, rdx, nx, TOL_H);
    free(g);
    float *gw = tk_get(k, dw, nw), *gw2 = tk_get(k, dw2, nw);
    snprintf(name, sizeof(name), "conv_bwd_h dw c%d k%d r%d s%d", c, kk, r, stride);
    TK_CLOSE(name, gw, rdw, nw, TOL_H);
    TK_EXPECT(memcmp(gw, gw2, sizeof(float) * nw) == 0); /* acc touches dx only */
    for (size_t i = 0; i < nx; i++)
        rdx[i] += dx0f[i];
    g = get_h(k, dxa, nx);
    snprintf(name, sizeof(name), "conv_bwd_h dx+= c%d k%d r%d s%d", c, kk, r, stride);
    TK_CLOSE(name, g, rdx, nx, TOL_H);
    /* the first layer: no data gradient */
    TK_OK(hone_k_conv_bwd_h(k, &d, dxd, dwd, dyd, NULL, 0, dw2, ws));
    free(gw2);
    gw2 = tk_get(k, dw2, nw);
    TK_EXPECT(memcmp(gw, gw2, sizeof(float) * nw) == 0);
    free(g), free(gw), free(gw2), free(ry), free(rdx), free(rdw);
    free(xn), free(wn), free(dyn), free(xf), free(wf_nhwc), free(dyf), free(dx0f);
    free(xh), free(wh), free(dyh), free(dx0h);
    hone_k_free(k, ws), hone_k_free(k, dxd), hone_k_free(k, dwd), hone_k_free(k, dyd);
    hone_k_free(k, y), hone_k_free(k, dxo), hone_k_free(k, dxa), hone_k_free(k, dw);
    hone_k_free(k, dw2);
}

/* Training forward (+ relu), running statistics, inference forward and backward of m rows of c
 * channels, against ref_batchnorm_* on the NCHW view (m images of c channels, 1 pixel). */
static void check_bn(hone_kctx *k, int m, int c, int relu, uint64_t seed)
{
    size_t t = (size_t)m * c;
    float *xf, *dyf, gamma[64], beta[64], rm0[64], rv0[64];
    hone_bf16 *xh = rand_h(t, seed, -2.0f, 3.0f, &xf), *dyh = rand_h(t, seed + 1, -1, 1, &dyf);
    ref_fill_uniform(gamma, (size_t)c, seed + 2, 0.5f, 1.5f);
    ref_fill_uniform(beta, (size_t)c, seed + 3, -0.5f, 0.5f);
    ref_fill_uniform(rm0, (size_t)c, seed + 4, -0.2f, 0.2f);
    ref_fill_uniform(rv0, (size_t)c, seed + 5, 0.5f, 1.5f);
    float *dg = tk_dev(k, gamma, c), *db = tk_dev(k, beta, c), *drm = tk_dev(k, rm0, c),
          *drv = tk_dev(k, rv0, c), *sm = tk_poisoned(k, c), *si = tk_poisoned(k, c),
          *dgam = tk_poisoned(k, c), *dbet = tk_poisoned(k, c);
    hone_bf16 *dx = dev_h(k, xh, t), *ddy = dev_h(k, dyh, t), *y = poison_h(k, t),
              *dxo = poison_h(k, t);
    const float mom = 0.1f, eps = 1e-5f;
    TK_OK(hone_k_batchnorm_fwd_h(k, m, c, dx, dg, db, drm, drv, mom, eps, 1, sm, si, y, relu));
    double *ry = malloc(sizeof(double) * t), mean[64], var[64], rrm[64], rrv[64], rsi[64];
    ref_batchnorm_fwd(m, c, 1, xf, gamma, beta, eps, ry, mean, var);
    for (int ch = 0; ch < c; ch++) {
        rrm[ch] = (1 - mom) * rm0[ch] + mom * mean[ch];
        rrv[ch] = (1 - mom) * rv0[ch] + mom * var[ch] * m / (m - 1);
        rsi[ch] = 1.0 / sqrt(var[ch] + eps);
    }
    for (size_t i = 0; relu && i < t; i++)
        ry[i] = fmax(ry[i], 0.0);
    char name[64];
    float *g = get_h(k, y, t);
    snprintf(name, sizeof(name), "bn_fwd_h m%d c%d relu%d", m, c, relu);
    TK_CLOSE(name, g, ry, t, TOL_H);
    close_dev(k, "bn_fwd_h save_mean", sm, mean, c, 1e-4);
    close_dev(k, "bn_fwd_h save_invstd", si, rsi, c, 1e-4);
    close_dev(k, "bn_fwd_h running_mean", drm, rrm, c, 1e-4);
    close_dev(k, "bn_fwd_h running_var", drv, rrv, c, 1e-4);

    /* backward: with relu, from the gradient masked where the forward's output is 0 */
    float *yfw = g, *dym = malloc(sizeof(float) * t);
    for (size_t i = 0; i < t; i++)
        dym[i] = !relu || yfw[i] > 0.0f ? dyf[i] : 0.0f;
    TK_OK(hone_k_batchnorm_bwd_h(k, m, c, dx, relu ? y : NULL, ddy, dg, sm, si, dxo, dgam, dbet));
    double *rdx = malloc(sizeof(double) * t), rdg[64], rdb[64];
    ref_batchnorm_bwd(m, c, 1, xf, dym, gamma, eps, rdx, rdg, rdb);
    float *gx = get_h(k, dxo, t);
    snprintf(name, sizeof(name), "bn_bwd_h dx m%d c%d relu%d", m, c, relu);
    TK_CLOSE(name, gx, rdx, t, TOL_H);
    close_dev(k, "bn_bwd_h dgamma", dgam, rdg, c, 1e-3);
    close_dev(k, "bn_bwd_h dbeta", dbet, rdb, c, 1e-3);

    /* with the residual join: y = max(0, bn(x) + skip), training statistics from x again */
    float *skf;
    hone_bf16 *skh = rand_h(t, seed + 6, -1.0f, 1.0f, &skf), *dsk = dev_h(k, skh, t);
    TK_OK(hone_k_batchnorm_add_relu_fwd_h(k, m, c, dx, dg, db, drm, drv, mom, eps, 1, sm, si, dsk,
                                          y));
    ref_batchnorm_fwd(m, c, 1, xf, gamma, beta, eps, ry, mean, var);
    for (size_t i = 0; i < t; i++)
        ry[i] = fmax(ry[i] + skf[i], 0.0);
    float *gs = get_h(k, y, t);
    snprintf(name, sizeof(name), "bn_add_relu_fwd_h m%d c%d", m, c);
    TK_CLOSE(name, gs, ry, t, TOL_H);
    TK_EXPECT(hone_k_batchnorm_add_relu_fwd_h(k, m, c, dx, dg, db, drm, drv, mom, eps, 1, sm, si,
                                              NULL, y) == HONE_EINVAL);
    for (int ch = 0; ch < c; ch++) { /* the running statistics moved a second time */
        rrm[ch] = (1 - mom) * rrm[ch] + mom * mean[ch];
        rrv[ch] = (1 - mom) * rrv[ch] + mom * var[ch] * m / (m - 1);
    }
    free(gs), free(skf), free(skh);
    hone_k_free(k, dsk);

    /* inference: the running statistics */
    TK_OK(hone_k_batchnorm_fwd_h(k, m, c, dx, dg, db, drm, drv, mom, eps, 0, NULL, NULL, y, relu));
    for (size_t i = 0; i < t; i++) {
        int ch = (int)(i % (size_t)c);
        double v = (xf[i] - rrm[ch]) / sqrt(rrv[ch] + eps) * gamma[ch] + beta[ch];
        ry[i] = relu ? fmax(v, 0.0) : v;
    }
    free(g);
    g = get_h(k, y, t);
    snprintf(name, sizeof(name), "bn_infer_h m%d c%d relu%d", m, c, relu);
    TK_CLOSE(name, g, ry, t, TOL_H);
    free(g), free(gx), free(dym), free(rdx), free(ry), free(xf), free(dyf), free(xh), free(dyh);
    hone_k_free(k, dg), hone_k_free(k, db), hone_k_free(k, drm), hone_k_free(k, drv);
    hone_k_free(k, sm), hone_k_free(k, si), hone_k_free(k, dgam), hone_k_free(k, dbet);
    hone_k_free(k, dx), hone_k_free(k, ddy), hone_k_free(k, y), hone_k_free(k, dxo);
}

static void check_add_relu(hone_kctx *k, size_t n, uint64_t seed)
{
    float *af, *bf, *gf;
    hone_bf16 *ah = rand_h(n, seed, -1, 1, &af), *bh = rand_h(n, seed + 1, -1, 1, &bf),
              *gh = rand_h(n, seed + 2, -1, 1, &gf);
    hone_bf16 *a = dev_h(k, ah, n), *b = dev_h(k, bh, n), *dy = dev_h(k, gh, n),
              *y = poison_h(k, n), *da = poison_h(k, n), *db = poison_h(k, n);
    TK_OK(hone_k_add_relu_fwd_h(k, a, b, y, n));
    TK_OK(hone_k_add_relu_bwd_h(k, y, dy, da, db, n));
    double *ry = malloc(sizeof(double) * n), *rg = malloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++) {
        ry[i] = fmax((double)af[i] + bf[i], 0.0);
        rg[i] = ry[i] > 0.0 ? gf[i] : 0.0; /* a sum rounding to 0 in bf16 does not occur here */
    }
    float *g = get_h(k, y, n), *g1 = get_h(k, da, n), *g2 = get_h(k, db, n);
    TK_CLOSE("add_relu_fwd_h", g, ry, n, TOL_H);
    TK_CLOSE("add_relu_bwd_h da", g1, rg, n, 0.0);
    TK_CLOSE("add_relu_bwd_h db", g2, rg, n, 0.0);
    free(g), free(g1), free(g2), free(ry), free(rg), free(af), free(bf), free(gf);
    free(ah), free(bh), free(gh);
    hone_k_free(k, a), hone_k_free(k, b), hone_k_free(k, dy), hone_k_free(k, y);
    hone_k_free(k, da), hone_k_free(k, db);
}

/* The padded max pool against the fp32 NCHW op (tests/kernels/test_kernels_pool_norm.c checks
 * that one against its reference) on the same values: few distinct values, so windows tie and the
 * first-maximum rule is exercised. */
static void check_maxpool(hone_kctx *k, int n, int c, int h, int w, int size, int stride, int pad,
                          uint64_t seed)
{
    int P = (h + 2 * pad - size) / stride + 1, Q = (w + 2 * pad - size) / stride + 1;
    size_t nx = (size_t)n * c * h * w, ny = (size_t)n * c * P * Q;
    float *xf, *dyf;
    hone_bf16 *xh = rand_h(nx, seed, -2.0f, 2.0f, &xf), *dyh = rand_h(ny, seed + 1, -1, 1, &dyf);
    for (size_t i = 0; i < nx; i++) { /* 5 levels */
        xf[i] = floorf(xf[i] * 1.25f) / 1.25f;
        xh[i] = hone_f32_to_bf16(xf[i]);
        xf[i] = hone_bf16_to_f32(xh[i]);
    }
    float *xn = to_nchw(xf, n, c, h * w), *dyn = to_nchw(dyf, n, c, P * Q);
    hone_bf16 *x = dev_h(k, xh, nx), *dy = dev_h(k, dyh, ny), *y = poison_h(k, ny),
              *dx = poison_h(k, nx);
    int32_t *idx = tk_dev_bytes(k, NULL, ny * sizeof(int32_t)),
            *idxf = tk_dev_bytes(k, NULL, ny * sizeof(int32_t));
    float *dxn = tk_dev(k, xn, nx), *yf = tk_poisoned(k, ny), *dyd = tk_dev(k, dyn, ny),
          *dxf = tk_poisoned(k, nx);
    TK_OK(hone_k_maxpool_pad_fwd_h(k, n, c, h, w, size, stride, pad, x, y, idx));
    TK_OK(hone_k_maxpool_pad_bwd_h(k, n, c, h, w, size, stride, pad, dy, idx, dx));
    TK_OK(hone_k_maxpool_pad_fwd(k, n, c, h, w, size, stride, pad, dxn, yf, idxf));
    TK_OK(hone_k_maxpool_pad_bwd(k, n, c, h, w, size, stride, pad, dyd, idxf, dxf));
    float *ry = tk_get(k, yf, ny), *rdx = tk_get(k, dxf, nx);
    int32_t *ih = malloc(sizeof(int32_t) * ny), *iref = malloc(sizeof(int32_t) * ny);
    hone_k_download(k, ih, idx, sizeof(int32_t) * ny);
    hone_k_download(k, iref, idxf, sizeof(int32_t) * ny);
    double *ryd = malloc(sizeof(double) * ny), *rdxd = malloc(sizeof(double) * nx);
    int idx_bad = 0;
    for (int i = 0; i < n; i++)
        for (int ch = 0; ch < c; ch++)
            for (int pq = 0; pq < P * Q; pq++) {
                size_t nchw = ((size_t)i * c + ch) * P * Q + pq,
                       nhwc = ((size_t)i * P * Q + pq) * c + ch;
                ryd[nhwc] = ry[nchw];
                idx_bad += ih[nhwc] != iref[nchw];
            }
    for (size_t i = 0; i < nx; i++)
        rdxd[i] = rdx[i];
    to_nhwc_d(rdxd, n, c, h * w);
    char name[64];
    float *g = get_h(k, y, ny), *gx = get_h(k, dx, nx);
    snprintf(name, sizeof(name), "maxpool_pad_fwd_h c%d %dx%d", c, h, w);
    TK_CLOSE(name, g, ryd, ny, 0.0);
    TK_EXPECT(idx_bad == 0);
    snprintf(name, sizeof(name), "maxpool_pad_bwd_h c%d %dx%d", c, h, w);
    TK_CLOSE(name, gx, rdxd, nx, TOL_H);
    free(g), free(gx), free(ry), free(rdx), free(ih), free(iref), free(ryd), free(rdxd);
    free(xf), free(dyf), free(xh), free(dyh), free(xn), free(dyn);
    hone_k_free(k, x), hone_k_free(k, dy), hone_k_free(k, y), hone_k_free(k, dx);
    hone_k_free(k, idx), hone_k_free(k, idxf), hone_k_free(k, dxn), hone_k_free(k, yf);
    hone_k_free(k, dyd), hone_k_free(k, dxf);
}

static void check_gap(hone_kctx *k, int n, int c, int hw, uint64_t seed)
{
    size_t t = (size_t)n * c * hw, o = (size_t)n * c;
    float *xf;
    hone_bf16 *xh = rand_h(t, seed, -1, 2, &xf);
    float *dyv = malloc(sizeof(float) * o);
    ref_fill_uniform(dyv, o, seed + 1, -1, 1);
    hone_bf16 *x = dev_h(k, xh, t), *dx = poison_h(k, t);
    float *y = tk_poisoned(k, o), *dy = tk_dev(k, dyv, o);
    TK_OK(hone_k_avgpool_global_fwd_h(k, n, c, hw, x, y));
    TK_OK(hone_k_avgpool_global_bwd_h(k, n, c, hw, dy, dx));
    float *xn = to_nchw(xf, n, c, hw);
    double *ry = malloc(sizeof(double) * o), *rdx = malloc(sizeof(double) * t);
    ref_avgpool_global_fwd(n, c, hw, 1, xn, ry);
    for (int i = 0; i < n; i++)
        for (int p = 0; p < hw; p++)
            for (int ch = 0; ch < c; ch++)
                rdx[((size_t)i * hw + p) * c + ch] = dyv[(size_t)i * c + ch] / hw;
    float *g = tk_get(k, y, o), *gx = get_h(k, dx, t);
    TK_CLOSE("avgpool_global_fwd_h", g, ry, o, 1e-5);
    TK_CLOSE("avgpool_global_bwd_h", gx, rdx, t, TOL_H);
    free(g), free(gx), free(ry), free(rdx), free(xn), free(xf), free(xh), free(dyv);
    hone_k_free(k, x), hone_k_free(k, dx), hone_k_free(k, y), hone_k_free(k, dy);
}

static void check_refusals(hone_kctx *k)
{
    hone_bf16 *b = poison_h(k, 64);
    float *f = tk_poisoned(k, 64);
    hone_conv_desc d;
    size_t ws;
    TK_OK(hone_conv_desc_init(&d, 1, 4, 4, 4, 4, 1, 1, 1, 0));
    TK_EXPECT(hone_k_to_nhwc_h(k, 0, 4, 4, f, b) == HONE_EINVAL);
    TK_EXPECT(hone_k_conv_workspace_h(k, &d, NULL) == HONE_EINVAL);
    TK_EXPECT(hone_k_conv_bwd_h(k, &d, b, b, b, NULL, 1, f, NULL) == HONE_EINVAL); /* acc, no dx */
    TK_EXPECT(hone_k_batchnorm_bwd_h(k, 8, 8, b, NULL, b, f, f, f, b, f, f) == HONE_EINVAL);
    TK_EXPECT(hone_k_batchnorm_fwd_h(k, 8, 8, b, f, f, f, f, 0.1f, 0.0f, 0, f, f, b, 0) ==
              HONE_EINVAL);
    TK_EXPECT(hone_k_avgpool_global_fwd_h(k, 2, 0, 4, b, f) == HONE_EINVAL);
    TK_EXPECT(hone_k_maxpool_pad_fwd_h(k, 1, 4, 4, 4, 3, 2, 3, b, b, (int32_t *)f) == HONE_EINVAL);
    (void)ws;
    hone_k_free(k, b), hone_k_free(k, f);
}

int main(int argc, char **argv)
{
    hone_kctx *k = tk_ctx(argc, argv);
    check_rounding();
    check_layout(k);
    /* ResNet-like: a stage's 3x3, a strided 3x3 and its 1x1 projection, the 3-channel stem; and
     * channel counts off the 8-wide path */
    check_conv(k, 4, 16, 8, 8, 16, 3, 1, 1, 100);
    check_conv(k, 4, 16, 8, 8, 32, 3, 2, 1, 200);
    check_conv(k, 4, 16, 8, 8, 32, 1, 2, 0, 300);
    check_conv(k, 2, 3, 12, 12, 16, 3, 1, 1, 400);
    check_bn(k, 4 * 6 * 6, 24, 0, 500);
    check_bn(k, 4 * 6 * 6, 24, 1, 600);
    check_bn(k, 37, 5, 1, 700);
    check_bn(k, 2 * 32 * 32, 64, 1, 800); /* several row chunks */
    check_add_relu(k, 4096, 900);
    check_add_relu(k, 1001, 1000);
    check_maxpool(k, 2, 16, 9, 9, 3, 2, 1, 1050); /* the ImageNet stem's pool, odd side */
    check_maxpool(k, 2, 5, 8, 6, 3, 2, 1, 1060);
    check_gap(k, 3, 24, 16, 1100);
    check_gap(k, 2, 5, 9, 1200);
    check_refusals(k);
    return tk_finish(k, "test_kernels_half");
}
