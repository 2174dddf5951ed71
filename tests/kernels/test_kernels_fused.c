/* tests/kernels/test_kernels_fused.c: the fused ops (max pooling with ReLU forward/backward, the
 * conv backward that reuses the forward's im2col workspace) and the ResNet ops (the residual join
 * add + ReLU, padded max pooling, the conv backward that adds to dx) against the double
 * references, on fresh random inputs every run (the seed is printed) with poisoned outputs. */
#include <time.h>

#include "tk.h"

static uint64_t seed;

static void check_pool_relu(hone_kctx *k, int n, int c, int h, int w, int size, int stride)
{
    int P = (h - size) / stride + 1, Q = (w - size) / stride + 1;
    size_t nx = (size_t)n * c * h * w, ny = (size_t)n * c * P * Q;
    float *x = malloc(sizeof(float) * nx), *gy = malloc(sizeof(float) * ny);
    float *gm = malloc(sizeof(float) * ny), *out;
    ref_fill_uniform(x, nx, seed + 1, -2, 0.5f); /* many windows <= 0 */
    ref_fill_uniform(gy, ny, seed + 2, -1, 1);
    double *ry = malloc(sizeof(double) * ny), *rdx = malloc(sizeof(double) * nx);
    ref_maxpool_fwd(n, c, h, w, size, stride, x, ry);
    int pos = 0;
    for (size_t i = 0; i < ny; i++) {
        if (ry[i] < 0)
            ry[i] = 0;
        gm[i] = ry[i] > 0 ? gy[i] : 0.0f;
        pos += ry[i] > 0;
    }
    TK_EXPECT(pos > 0 && (size_t)pos < ny); /* both sides of the ReLU are exercised */
    ref_maxpool_bwd(n, c, h, w, size, stride, x, gm, rdx);
    float *dx = tk_dev(k, x, nx), *dy = tk_poisoned(k, ny), *dgy = tk_dev(k, gy, ny);
    float *ddx = tk_poisoned(k, nx);
    int32_t *idx = hone_k_alloc(k, sizeof(int32_t) * ny);
    char name[96];
    snprintf(name, sizeof(name), "maxpool_relu_fwd n%d c%d %dx%d size %d stride %d", n, c, h, w,
             size, stride);
    TK_OK(hone_k_maxpool_relu_fwd(k, n, c, h, w, size, stride, dx, dy, idx));
    TK_CLOSE(name, out = tk_get(k, dy, ny), ry, ny, 0);
    free(out);
    snprintf(name, sizeof(name), "maxpool_relu_bwd n%d c%d %dx%d size %d stride %d", n, c, h, w,
             size, stride);
    TK_OK(hone_k_maxpool_relu_bwd(k, n, c, h, w, size, stride, dy, dgy, idx, ddx));
    TK_CLOSE(name, out = tk_get(k, ddx, nx), rdx, nx, 1e-6);
    free(out);
    TK_EXPECT(hone_k_maxpool_relu_bwd(k, n, c, h, w, size, stride, NULL, dgy, idx, ddx) ==
              HONE_EINVAL);
    hone_k_free(k, dx);
    hone_k_free(k, dy);
    hone_k_free(k, dgy);
    hone_k_free(k, ddx);
    hone_k_free(k, idx);
    free(x);
    free(gy);
    free(gm);
    free(ry);
    free(rdx);
}

/* conv_fwd then conv_bwd_reuse on the same workspace: the backward must match the reference. */
static void check_conv_reuse(hone_kctx *k, int n, int c, int h, int w, int kk, int stride,
                             int with_dx)
{
    hone_conv_desc d;
    TK_OK(hone_conv_desc_init(&d, n, c, h, w, kk, 3, 3, stride, 1));
    size_t nx = (size_t)n * c * h * w, nw = (size_t)kk * c * 9, ny = (size_t)n * kk * d.p * d.q;
    float *x = malloc(sizeof(float) * nx), *wt = malloc(sizeof(float) * nw);
    float *b = malloc(sizeof(float) * kk), *gy = malloc(sizeof(float) * ny), *out;
    ref_fill_uniform(x, nx, seed + 3, -1, 1);
    ref_fill_uniform(wt, nw, seed + 4, -0.5f, 0.5f);
    ref_fill_uniform(b, kk, seed + 5, -1, 1);
    ref_fill_uniform(gy, ny, seed + 6, -1, 1);
    double *ry = malloc(sizeof(double) * ny), *rdx = malloc(sizeof(double) * nx);
    double *rdw = malloc(sizeof(double) * nw), *rdb = malloc(sizeof(double) * kk);
    ref_conv_fwd(&d, x, wt, b, ry);
    ref_conv_bwd(&d, x, wt, gy, rdx, rdw, rdb);
    size_t wsb = hone_k_conv_workspace(k, &d);
    void *ws = wsb ? hone_k_alloc(k, wsb) : NULL;
    float *dx = tk_dev(k, x, nx), *dw = tk_dev(k, wt, nw), *db = tk_dev(k, b, kk);
    float *dgy = tk_dev(k, gy, ny), *dy = tk_poisoned(k, ny);
    float *ddx = tk_poisoned(k, nx), *ddw = tk_poisoned(k, nw), *ddb = tk_poisoned(k, kk);
    char name[96];
    snprintf(name, sizeof(name), "conv_bwd_reuse n%d c%d %dx%d k%d stride %d", n, c, h, w, kk,
             stride);
    TK_OK(hone_k_conv_fwd(k, &d, dx, dw, db, dy, ws));
    TK_CLOSE(name, out = tk_get(k, dy, ny), ry, ny, 1e-5);
    free(out);
    TK_OK(hone_k_conv_bwd_reuse(k, &d, dx, dw, dgy, with_dx ? ddx : NULL, ddw, ddb, ws));
    if (with_dx)
        TK_CLOSE("conv_bwd_reuse dx", out = tk_get(k, ddx, nx), rdx, nx, 1e-5), free(out);
    TK_CLOSE("conv_bwd_reuse dw", out = tk_get(k, ddw, nw), rdw, nw, 1e-5);
    free(out);
    TK_CLOSE("conv_bwd_reuse db", out = tk_get(k, ddb, kk), rdb, kk, 1e-5);
    free(out);
    void *bufs[] = {ws, dx, dw, db, dgy, dy, ddx, ddw, ddb};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        hone_k_free(k, bufs[i]);
    free(x);
    free(wt);
    free(b);
    free(gy);
    free(ry);
    free(rdx);
    free(rdw);
    free(rdb);
}

/* y = relu(a + b); da = db = dy * (y > 0), and in place (da aliasing dy, no db). */
static void check_add_relu(hone_kctx *k, size_t n)
{
    float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n);
    float *g = malloc(sizeof(float) * n), *out;
    ref_fill_uniform(a, n, seed + 7, -1, 1);
    ref_fill_uniform(b, n, seed + 8, -1, 1);
    ref_fill_uniform(g, n, seed + 9, -1, 1);
    double *ry = malloc(sizeof(double) * n), *rd = malloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++) {
        float v = a[i] + b[i];
        ry[i] = v > 0 ? v : 0;
        rd[i] = v > 0 ? g[i] : 0;
    }
    float *da = tk_dev(k, a, n), *db = tk_dev(k, b, n), *dg = tk_dev(k, g, n);
    float *dy = tk_poisoned(k, n), *dda = tk_poisoned(k, n), *ddb = tk_poisoned(k, n);
    TK_OK(hone_k_add_relu_fwd(k, da, db, dy, n));
    TK_CLOSE("add_relu_fwd", out = tk_get(k, dy, n), ry, n, 0);
    free(out);
    TK_OK(hone_k_add_relu_bwd(k, dy, dg, dda, ddb, n));
    TK_CLOSE("add_relu_bwd da", out = tk_get(k, dda, n), rd, n, 0);
    free(out);
    TK_CLOSE("add_relu_bwd db", out = tk_get(k, ddb, n), rd, n, 0);
    free(out);
    TK_OK(hone_k_add_relu_bwd(k, dy, dg, dg, NULL, n)); /* in place */
    TK_CLOSE("add_relu_bwd in place", out = tk_get(k, dg, n), rd, n, 0);
    free(out);
    TK_EXPECT(hone_k_add_relu_bwd(k, dy, dg, NULL, ddb, n) == HONE_EINVAL);
    float *bufs[] = {da, db, dg, dy, dda, ddb};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        hone_k_free(k, bufs[i]);
    free(a), free(b), free(g), free(ry), free(rd);
}

/* Padded max pooling against a naive reference (windows clipped to the plane, first max wins,
 * the backward summed over overlapping windows). Inputs are rounded to a coarse grid so ties
 * happen and the first-maximum rule is exercised. */
static void check_pool_pad(hone_kctx *k, int n, int c, int h, int w, int size, int stride, int pad)
{
    int P = (h + 2 * pad - size) / stride + 1, Q = (w + 2 * pad - size) / stride + 1;
    size_t nx = (size_t)n * c * h * w, ny = (size_t)n * c * P * Q;
    float *x = malloc(sizeof(float) * nx), *gy = malloc(sizeof(float) * ny), *out;
    ref_fill_uniform(x, nx, seed + 10, -2, 2);
    for (size_t i = 0; i < nx; i++)
        x[i] = (float)(int)(x[i] * 4) / 4;
    ref_fill_uniform(gy, ny, seed + 11, -1, 1);
    double *ry = malloc(sizeof(double) * ny), *rdx = calloc(nx, sizeof(double));
    for (size_t pl = 0; pl < (size_t)n * c; pl++)
        for (int p = 0; p < P; p++)
            for (int q = 0; q < Q; q++) {
                int best = -1;
                for (int i = p * stride - pad; i < p * stride - pad + size; i++)
                    for (int j = q * stride - pad; j < q * stride - pad + size; j++)
                        if (i >= 0 && i < h && j >= 0 && j < w &&
                            (best < 0 || x[pl * h * w + i * w + j] > x[pl * h * w + best]))
                            best = i * w + j;
                ry[(pl * P + p) * Q + q] = x[pl * h * w + best];
                rdx[pl * h * w + best] += gy[(pl * P + p) * Q + q];
            }
    float *dx = tk_dev(k, x, nx), *dy = tk_poisoned(k, ny), *dgy = tk_dev(k, gy, ny);
    float *ddx = tk_poisoned(k, nx);
    int32_t *idx = hone_k_alloc(k, sizeof(int32_t) * ny);
    char name[96];
    snprintf(name, sizeof(name), "maxpool_pad_fwd n%d c%d %dx%d size %d stride %d pad %d", n, c, h,
             w, size, stride, pad);
    TK_OK(hone_k_maxpool_pad_fwd(k, n, c, h, w, size, stride, pad, dx, dy, idx));
    TK_CLOSE(name, out = tk_get(k, dy, ny), ry, ny, 0);
    free(out);
    name[12] = 'b', name[13] = 'w', name[14] = 'd'; /* "maxpool_pad_bwd ..." */
    TK_OK(hone_k_maxpool_pad_bwd(k, n, c, h, w, size, stride, pad, dgy, idx, ddx));
    TK_CLOSE(name, out = tk_get(k, ddx, nx), rdx, nx, 1e-6);
    free(out);
    TK_EXPECT(hone_k_maxpool_pad_fwd(k, n, c, h, w, size, stride, size, dx, dy, idx) ==
              HONE_EINVAL); /* pad >= size: a window of padding only */
    hone_k_free(k, dx), hone_k_free(k, dy), hone_k_free(k, dgy), hone_k_free(k, ddx);
    hone_k_free(k, idx);
    free(x), free(gy), free(ry), free(rdx);
}

/* conv_bwd_acc: dx = dx0 + the reference data gradient; dw, db overwritten as conv_bwd. With
 * reuse, after a forward on the same workspace. The ResNet shapes: 3x3 stride 2, the 1x1 stride-2
 * projection, the 7x7 stride-2 ImageNet stem. */
static void check_conv_acc(hone_kctx *k, int n, int c, int h, int w, int kk, int r, int stride,
                           int pad, int reuse)
{
    hone_conv_desc d;
    TK_OK(hone_conv_desc_init(&d, n, c, h, w, kk, r, r, stride, pad));
    size_t nx = (size_t)n * c * h * w, nw = (size_t)kk * c * r * r, ny = (size_t)n * kk * d.p * d.q;
    float *x = malloc(sizeof(float) * nx), *wt = malloc(sizeof(float) * nw);
    float *gy = malloc(sizeof(float) * ny), *dx0 = malloc(sizeof(float) * nx), *out;
    ref_fill_uniform(x, nx, seed + 12, -1, 1);
    ref_fill_uniform(wt, nw, seed + 13, -0.5f, 0.5f);
    ref_fill_uniform(gy, ny, seed + 14, -1, 1);
    ref_fill_uniform(dx0, nx, seed + 15, -1, 1);
    double *rdx = malloc(sizeof(double) * nx), *rdw = malloc(sizeof(double) * nw);
    ref_conv_bwd(&d, x, wt, gy, rdx, rdw, NULL);
    for (size_t i = 0; i < nx; i++)
        rdx[i] += dx0[i];
    size_t wsb = hone_k_conv_workspace(k, &d);
    void *ws = wsb ? hone_k_alloc(k, wsb) : NULL;
    float *dx = tk_dev(k, x, nx), *dw = tk_dev(k, wt, nw), *dgy = tk_dev(k, gy, ny);
    float *ddx = tk_dev(k, dx0, nx), *ddw = tk_poisoned(k, nw), *dy = tk_poisoned(k, ny);
    if (reuse)
        TK_OK(hone_k_conv_fwd(k, &d, dx, dw, NULL, dy, ws));
    TK_OK(hone_k_conv_bwd_acc(k, &d, dx, dw, dgy, ddx, ddw, NULL, ws, reuse));
    char name[96];
    snprintf(name, sizeof(name), "conv_bwd_acc dx n%d c%d %dx%d k%d r%d s%d p%d%s", n, c, h, w, kk,
             r, stride, pad, reuse ? " reuse" : "");
    TK_CLOSE(name, out = tk_get(k, ddx, nx), rdx, nx, 1e-5);
    free(out);
    name[14] = 'w'; /* "conv_bwd_acc dw ..." */
    TK_CLOSE(name, out = tk_get(k, ddw, nw), rdw, nw, 1e-5);
    free(out);
    TK_EXPECT(hone_k_conv_bwd_acc(k, &d, dx, dw, dgy, NULL, ddw, NULL, ws, 0) == HONE_EINVAL);
    void *bufs[] = {ws, dx, dw, dgy, ddx, ddw, dy};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        hone_k_free(k, bufs[i]);
    free(x), free(wt), free(gy), free(dx0), free(rdx), free(rdw);
}

int main(int argc, char **argv)
{
    hone_kctx *k = tk_ctx(argc, argv);
    seed = (uint64_t)time(NULL) * 2654435761u;
    fprintf(stderr, "test_kernels_fused: seed %llu\n", (unsigned long long)seed);
    check_pool_relu(k, 2, 3, 8, 8, 2, 2);         /* windows tile the plane */
    check_pool_relu(k, 3, 4, 28, 28, 2, 2);       /* the CNN's first pool */
    check_pool_relu(k, 2, 3, 9, 7, 2, 2);         /* odd sizes: a row and column left over */
    check_pool_relu(k, 2, 3, 9, 9, 3, 2);         /* overlapping windows */
    check_pool_relu(k, 2, 3, 10, 10, 2, 3);       /* gaps between windows */
    check_conv_reuse(k, 3, 32, 14, 14, 16, 1, 1); /* im2col path */
    check_conv_reuse(k, 2, 8, 20, 20, 5, 1, 1);   /* more than 256 pixels per plane */
    check_conv_reuse(k, 2, 5, 11, 11, 7, 2, 1);   /* strided */
    check_conv_reuse(k, 2, 4, 9, 9, 6, 1, 0);     /* no dx */
    check_conv_reuse(k, 3, 1, 12, 12, 8, 1, 0);   /* few taps: direct kernels */
    check_add_relu(k, 100003);
    check_pool_pad(k, 2, 3, 16, 16, 3, 2, 1);       /* the ImageNet stem's pool */
    check_pool_pad(k, 2, 4, 9, 7, 3, 2, 1);         /* odd sides */
    check_pool_pad(k, 1, 2, 5, 6, 2, 2, 1);         /* windows of one pixel at the edges */
    check_conv_acc(k, 2, 8, 9, 9, 16, 3, 2, 1, 0);  /* a stage's first conv */
    check_conv_acc(k, 2, 8, 9, 9, 16, 1, 2, 0, 0);  /* the projection */
    check_conv_acc(k, 2, 3, 19, 17, 8, 7, 2, 3, 0); /* the ImageNet stem */
    check_conv_acc(k, 3, 8, 8, 8, 8, 3, 1, 1, 1);   /* reuse */
    check_conv_acc(k, 2, 1, 8, 8, 8, 3, 1, 1, 0);   /* few taps: the CUDA direct path */
    return tk_finish(k, "test_kernels_fused");
}
