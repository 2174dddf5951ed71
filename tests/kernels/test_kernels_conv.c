/* tests/kernels/test_kernels_conv.c: convolution forward and backward against the double
 * reference for several shapes (padding, stride, 1x1, several workspace chunks), and the backward
 * against central finite differences of the forward. */
#include <math.h>

#include "tk.h"

static void check_conv(hone_kctx *k, int n, int c, int h, int w, int kk, int r, int stride, int pad,
                       int with_bias, int with_dx)
{
    hone_conv_desc d;
    TK_OK(hone_conv_desc_init(&d, n, c, h, w, kk, r, r, stride, pad));
    size_t nx = (size_t)n * c * h * w, nw = (size_t)kk * c * r * r, ny = (size_t)n * kk * d.p * d.q;
    float *x = malloc(sizeof(float) * nx), *wt = malloc(sizeof(float) * nw);
    float *b = malloc(sizeof(float) * kk), *gy = malloc(sizeof(float) * ny);
    ref_fill_uniform(x, nx, 21, -1, 1);
    ref_fill_uniform(wt, nw, 22, -0.5f, 0.5f);
    ref_fill_uniform(b, kk, 23, -1, 1);
    ref_fill_uniform(gy, ny, 24, -1, 1);
    double *ry = malloc(sizeof(double) * ny), *rdx = malloc(sizeof(double) * nx);
    double *rdw = malloc(sizeof(double) * nw), *rdb = malloc(sizeof(double) * kk);
    ref_conv_fwd(&d, x, wt, with_bias ? b : NULL, ry);
    ref_conv_bwd(&d, x, wt, gy, rdx, rdw, rdb);

    size_t wsb = hone_k_conv_workspace(k, &d);
    void *ws = wsb ? hone_k_alloc(k, wsb) : NULL;
    float *dx = tk_dev(k, x, nx), *dw = tk_dev(k, wt, nw), *db = tk_dev(k, b, kk);
    float *dgy = tk_dev(k, gy, ny), *dy = tk_poisoned(k, ny);
    float *ddx = tk_poisoned(k, nx), *ddw = tk_poisoned(k, nw), *ddb = tk_poisoned(k, kk), *out;
    char name[128];
    snprintf(name, sizeof(name), "conv n%d c%d %dx%d k%d r%d s%d p%d", n, c, h, w, kk, r, stride,
             pad);
    TK_OK(hone_k_conv_fwd(k, &d, dx, dw, with_bias ? db : NULL, dy, ws));
    TK_CLOSE(name, out = tk_get(k, dy, ny), ry, ny, 1e-5);
    free(out);
    TK_OK(hone_k_conv_bwd(k, &d, dx, dw, dgy, with_dx ? ddx : NULL, ddw, ddb, ws));
    if (with_dx)
        TK_CLOSE("conv dx", out = tk_get(k, ddx, nx), rdx, nx, 1e-5), free(out);
    TK_CLOSE("conv dw", out = tk_get(k, ddw, nw), rdw, nw, 1e-5);
    free(out);
    TK_CLOSE("conv db", out = tk_get(k, ddb, kk), rdb, kk, 1e-5);
    free(out);

    hone_k_free(k, ws);
    hone_k_free(k, dx);
    hone_k_free(k, dw);
    hone_k_free(k, db);
    hone_k_free(k, dgy);
    hone_k_free(k, dy);
    hone_k_free(k, ddx);
    hone_k_free(k, ddw);
    hone_k_free(k, ddb);
    free(x);
    free(wt);
    free(b);
    free(gy);
    free(ry);
    free(rdx);
    free(rdw);
    free(rdb);
}

/* L = sum(y * gy): dL/dx and dL/dw from conv_bwd vs central differences through conv_fwd. */
static double conv_loss(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                        const float *gy, void *ws)
{
    size_t nx = (size_t)d->n * d->c * d->h * d->w, nw = (size_t)d->k * d->c * d->r * d->s;
    size_t ny = (size_t)d->n * d->k * d->p * d->q;
    float *dx = tk_dev(k, x, nx), *dw = tk_dev(k, w, nw), *dy = tk_poisoned(k, ny);
    hone_k_conv_fwd(k, d, dx, dw, NULL, dy, ws);
    float *y = tk_get(k, dy, ny);
    double s = 0;
    for (size_t i = 0; i < ny; i++)
        s += (double)y[i] * gy[i];
    free(y);
    hone_k_free(k, dx);
    hone_k_free(k, dw);
    hone_k_free(k, dy);
    return s;
}

static void check_conv_fd(hone_kctx *k)
{
    hone_conv_desc d;
    TK_OK(hone_conv_desc_init(&d, 2, 3, 6, 5, 4, 3, 3, 1, 1));
    size_t nx = 2 * 3 * 6 * 5, nw = 4 * 3 * 3 * 3, ny = (size_t)2 * 4 * d.p * d.q;
    float *x = malloc(sizeof(float) * nx), *w = malloc(sizeof(float) * nw);
    float *gy = malloc(sizeof(float) * ny);
    ref_fill_uniform(x, nx, 31, -1, 1);
    ref_fill_uniform(w, nw, 32, -1, 1);
    ref_fill_uniform(gy, ny, 33, -1, 1);
    void *ws = hone_k_alloc(k, hone_k_conv_workspace(k, &d));
    float *dx = tk_dev(k, x, nx), *dw = tk_dev(k, w, nw), *dgy = tk_dev(k, gy, ny);
    float *gx = tk_poisoned(k, nx), *gw = tk_poisoned(k, nw);
    TK_OK(hone_k_conv_bwd(k, &d, dx, dw, dgy, gx, gw, NULL, ws));
    float *hx = tk_get(k, gx, nx), *hw = tk_get(k, gw, nw);
    double *fx = malloc(sizeof(double) * nx), *fw = malloc(sizeof(double) * nw);
    const float eps = 1e-2f;
    for (size_t i = 0; i < nx; i++) {
        float o = x[i];
        x[i] = o + eps;
        double lp = conv_loss(k, &d, x, w, gy, ws);
        x[i] = o - eps;
        double lm = conv_loss(k, &d, x, w, gy, ws);
        x[i] = o;
        fx[i] = (lp - lm) / (2 * eps);
    }
    for (size_t i = 0; i < nw; i++) {
        float o = w[i];
        w[i] = o + eps;
        double lp = conv_loss(k, &d, x, w, gy, ws);
        w[i] = o - eps;
        double lm = conv_loss(k, &d, x, w, gy, ws);
        w[i] = o;
        fw[i] = (lp - lm) / (2 * eps);
    }
    TK_CLOSE("conv dx vs finite differences", hx, fx, nx, 1e-3);
    TK_CLOSE("conv dw vs finite differences", hw, fw, nw, 1e-3);
    hone_k_free(k, ws);
    hone_k_free(k, dx);
    hone_k_free(k, dw);
    hone_k_free(k, dgy);
    hone_k_free(k, gx);
    hone_k_free(k, gw);
    free(x);
    free(w);
    free(gy);
    free(hx);
    free(hw);
    free(fx);
    free(fw);
}

int main(int argc, char **argv)
{
    hone_kctx *k = tk_ctx(argc, argv);
    check_conv(k, 1, 1, 5, 5, 1, 3, 1, 1, 1, 1);
    check_conv(k, 3, 2, 7, 6, 4, 3, 1, 1, 1, 1);
    check_conv(k, 2, 3, 9, 9, 5, 3, 2, 0, 0, 1);
    check_conv(k, 4, 8, 6, 6, 16, 1, 1, 0, 1, 1);    /* 1x1 */
    check_conv(k, 5, 1, 28, 28, 8, 3, 1, 1, 1, 0);   /* first layer: no dx */
    check_conv(k, 2, 4, 8, 8, 6, 5, 2, 2, 1, 1);     /* 5x5 stride 2 pad 2 */
    check_conv(k, 7, 32, 48, 48, 32, 3, 1, 1, 1, 1); /* several workspace chunks on the CPU */
    check_conv_fd(k);
    hone_conv_desc d;
    TK_EXPECT(hone_conv_desc_init(&d, 1, 1, 2, 2, 1, 5, 5, 1, 0) == HONE_EINVAL);
    return tk_finish(k, "test_kernels_conv");
}
