/* tests/kernels/test_kernels_fused.c: the fused ops (max pooling with ReLU forward/backward, the
 * conv backward that reuses the forward's im2col workspace) against the double references, on
 * fresh random inputs every run (the seed is printed) with poisoned outputs. */
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
    return tk_finish(k, "test_kernels_fused");
}
