/* kernels/cpu/half.c: the bf16 NHWC ops (kernels.h, "bf16 NHWC activations") on the CPU: the
 * reference the CUDA backend's half.cu is tested against. Each op widens its bf16 inputs to
 * float, runs the CPU backend's own fp32 op on them (an NHWC tensor of m = n*h*w rows of c
 * channels is an NCHW tensor of m images of c channels of 1 pixel, so batch norm needs no
 * transpose), and rounds each output once. Clear rather than fast: the trainer uses these ops
 * only on CUDA. */
#include <stdlib.h>
#include <string.h>

#include "par.h"

static float *widen(const hone_bf16 *x, size_t n)
{
    float *f = hone_xmalloc((n ? n : 1) * sizeof(float));
    for (size_t i = 0; i < n; i++)
        f[i] = hone_bf16_to_f32(x[i]);
    return f;
}

static void narrow(const float *f, hone_bf16 *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = hone_f32_to_bf16(f[i]);
}

/* [n][hw][c] bf16 -> [n][c][hw] float. */
static float *nhwc_to_nchw(const hone_bf16 *x, int n, int c, int hw)
{
    float *f = hone_xmalloc((size_t)n * c * hw * sizeof(float));
    for (int i = 0; i < n; i++)
        for (int p = 0; p < hw; p++)
            for (int ch = 0; ch < c; ch++)
                f[((size_t)i * c + ch) * hw + p] =
                    hone_bf16_to_f32(x[((size_t)i * hw + p) * c + ch]);
    return f;
}

/* [n][c][hw] float -> [n][hw][c] bf16, adding the old value first when acc. */
static void nchw_to_nhwc(const float *f, int n, int c, int hw, hone_bf16 *y, int acc)
{
    for (int i = 0; i < n; i++)
        for (int p = 0; p < hw; p++)
            for (int ch = 0; ch < c; ch++) {
                size_t at = ((size_t)i * hw + p) * c + ch;
                float v = f[((size_t)i * c + ch) * hw + p];
                y[at] = hone_f32_to_bf16(acc ? hone_bf16_to_f32(y[at]) + v : v);
            }
}

int cpu_to_nhwc_h(hone_kctx *k, int n, int c, int hw, const float *x, hone_bf16 *y)
{
    (void)k;
    nchw_to_nhwc(x, n, c, hw, y, 0);
    return HONE_OK;
}

int cpu_from_nhwc_h(hone_kctx *k, int n, int c, int hw, const hone_bf16 *x, float *y)
{
    (void)k;
    float *f = nhwc_to_nchw(x, n, c, hw);
    memcpy(y, f, (size_t)n * c * hw * sizeof(float));
    free(f);
    return HONE_OK;
}

int cpu_conv_weights_h(hone_kctx *k, const hone_conv_desc *d, const float *w, hone_bf16 *wh)
{
    (void)k;
    nchw_to_nhwc(w, d->k, d->c, d->r * d->s, wh, 0); /* [k][c][rs] -> [k][rs][c] */
    return HONE_OK;
}

int cpu_conv_workspace_h(hone_kctx *k, const hone_conv_desc *d, size_t *bytes)
{
    (void)k;
    (void)d;
    *bytes = 0; /* the ops below allocate their own */
    return HONE_OK;
}

int cpu_conv_fwd_h(hone_kctx *k, const hone_conv_desc *d, const hone_bf16 *x, const hone_bf16 *wh,
                   hone_bf16 *y, void *ws)
{
    (void)ws;
    float *xf = nhwc_to_nchw(x, d->n, d->c, d->h * d->w);
    float *wf = nhwc_to_nchw(wh, d->k, d->c, d->r * d->s);
    float *yf = hone_xmalloc((size_t)d->n * d->k * d->p * d->q * sizeof(float));
    size_t wsb = cpu_conv_workspace(k, d);
    void *cws = wsb ? hone_xmalloc(wsb) : NULL;
    int rc = cpu_conv_fwd(k, d, xf, wf, NULL, yf, cws);
    if (rc == HONE_OK)
        nchw_to_nhwc(yf, d->n, d->k, d->p * d->q, y, 0);
    free(cws);
    free(yf);
    free(wf);
    free(xf);
    return rc;
}

int cpu_conv_bwd_h(hone_kctx *k, const hone_conv_desc *d, const hone_bf16 *x, const hone_bf16 *wh,
                   const hone_bf16 *dy, hone_bf16 *dx, int acc, float *dw, void *ws)
{
    (void)ws;
    size_t nw = (size_t)d->k * d->c * d->r * d->s;
    float *xf = nhwc_to_nchw(x, d->n, d->c, d->h * d->w);
    float *wf = nhwc_to_nchw(wh, d->k, d->c, d->r * d->s);
    float *dyf = nhwc_to_nchw(dy, d->n, d->k, d->p * d->q);
    float *dxf = dx ? hone_xmalloc((size_t)d->n * d->c * d->h * d->w * sizeof(float)) : NULL;
    size_t wsb = cpu_conv_workspace(k, d);
    void *cws = wsb ? hone_xmalloc(wsb) : NULL;
    int rc = cpu_conv_bwd(k, d, xf, wf, dyf, dxf, dw, NULL, cws);
    if (rc == HONE_OK) {
        for (size_t i = 0; i < nw; i++) /* to bf16 precision, as cuDNN's bf16 filter gradient */
            dw[i] = hone_bf16_to_f32(hone_f32_to_bf16(dw[i]));
        if (dx)
            nchw_to_nhwc(dxf, d->n, d->c, d->h * d->w, dx, acc);
    }
    free(cws);
    free(dxf);
    free(dyf);
    free(wf);
    free(xf);
    return rc;
}

int cpu_batchnorm_fwd_h(hone_kctx *k, int m, int c, const hone_bf16 *x, const float *gamma,
                        const float *beta, float *running_mean, float *running_var, float momentum,
                        float eps, int training, float *save_mean, float *save_invstd,
                        const hone_bf16 *skip, hone_bf16 *y, int relu)
{
    size_t n = (size_t)m * c;
    float *xf = widen(x, n), *yf = hone_xmalloc(n * sizeof(float));
    int rc = cpu_batchnorm_fwd(k, m, c, 1, xf, gamma, beta, running_mean, running_var, momentum,
                               eps, training, save_mean, save_invstd, yf, relu && !skip);
    for (size_t i = 0; rc == HONE_OK && skip && i < n; i++) { /* the join: relu(bn + skip) */
        float v = yf[i] + hone_bf16_to_f32(skip[i]);
        yf[i] = relu && v < 0.0f ? 0.0f : v;
    }
    if (rc == HONE_OK)
        narrow(yf, y, n);
    free(yf);
    free(xf);
    return rc;
}

int cpu_batchnorm_bwd_h(hone_kctx *k, int m, int c, const hone_bf16 *x, const hone_bf16 *y_relu,
                        const hone_bf16 *dy, const float *gamma, const float *save_mean,
                        const float *save_invstd, hone_bf16 *dx, float *dgamma, float *dbeta)
{
    size_t n = (size_t)m * c;
    float *xf = widen(x, n), *dyf = widen(dy, n), *yf = y_relu ? widen(y_relu, n) : NULL;
    float *dxf = hone_xmalloc(n * sizeof(float));
    int rc = cpu_batchnorm_bwd(k, m, c, 1, xf, yf, dyf, gamma, save_mean, save_invstd, dxf, dgamma,
                               dbeta);
    if (rc == HONE_OK)
        narrow(dxf, dx, n);
    free(dxf);
    free(yf);
    free(dyf);
    free(xf);
    return rc;
}

int cpu_add_relu_fwd_h(hone_kctx *k, const hone_bf16 *a, const hone_bf16 *b, hone_bf16 *y, size_t n)
{
    (void)k;
    for (size_t i = 0; i < n; i++) {
        float v = hone_bf16_to_f32(a[i]) + hone_bf16_to_f32(b[i]);
        y[i] = hone_f32_to_bf16(v > 0.0f ? v : 0.0f);
    }
    return HONE_OK;
}

int cpu_add_relu_bwd_h(hone_kctx *k, const hone_bf16 *y, const hone_bf16 *dy, hone_bf16 *da,
                       hone_bf16 *db, size_t n)
{
    (void)k;
    for (size_t i = 0; i < n; i++) {
        hone_bf16 g = hone_bf16_to_f32(y[i]) > 0.0f ? dy[i] : 0;
        da[i] = g;
        if (db)
            db[i] = g;
    }
    return HONE_OK;
}

/* Output side of the padded pool (dispatch checked it is positive). */
static int pool_side(int in, int size, int stride, int pad)
{
    return (in + 2 * pad - size) / stride + 1;
}

int cpu_maxpool_pad_fwd_h(hone_kctx *k, int n, int c, int h, int w, int size, int stride, int pad,
                          const hone_bf16 *x, hone_bf16 *y, int32_t *idx)
{
    (void)k;
    int P = pool_side(h, size, stride, pad), Q = pool_side(w, size, stride, pad);
    for (int i = 0; i < n; i++)
        for (int p = 0; p < P; p++)
            for (int q = 0; q < Q; q++)
                for (int ch = 0; ch < c; ch++) {
                    float best = 0.0f;
                    int at = -1;
                    for (int r = 0; r < size; r++)
                        for (int s = 0; s < size; s++) {
                            int yy = p * stride - pad + r, xx = q * stride - pad + s;
                            if (yy < 0 || yy >= h || xx < 0 || xx >= w)
                                continue; /* padding never wins */
                            float v = hone_bf16_to_f32(x[(((size_t)i * h + yy) * w + xx) * c + ch]);
                            if (at < 0 || v > best) {
                                best = v;
                                at = yy * w + xx;
                            }
                        }
                    size_t o = (((size_t)i * P + p) * Q + q) * c + ch;
                    y[o] = hone_f32_to_bf16(best);
                    idx[o] = at;
                }
    return HONE_OK;
}

int cpu_maxpool_pad_bwd_h(hone_kctx *k, int n, int c, int h, int w, int size, int stride, int pad,
                          const hone_bf16 *dy, const int32_t *idx, hone_bf16 *dx)
{
    (void)k;
    int P = pool_side(h, size, stride, pad), Q = pool_side(w, size, stride, pad);
    size_t plane = (size_t)h * w * c;
    float *acc = hone_xcalloc(plane, sizeof(float));
    for (int i = 0; i < n; i++) {
        memset(acc, 0, plane * sizeof(float));
        /* outputs in row-major order: each pixel's sum adds its windows in that order */
        for (int p = 0; p < P; p++)
            for (int q = 0; q < Q; q++)
                for (int ch = 0; ch < c; ch++) {
                    size_t o = (((size_t)i * P + p) * Q + q) * c + ch;
                    if (idx[o] >= 0)
                        acc[(size_t)idx[o] * c + ch] += hone_bf16_to_f32(dy[o]);
                }
        narrow(acc, dx + (size_t)i * plane, plane);
    }
    free(acc);
    return HONE_OK;
}

int cpu_avgpool_global_fwd_h(hone_kctx *k, int n, int c, int hw, const hone_bf16 *x, float *y)
{
    (void)k;
    for (int i = 0; i < n; i++)
        for (int ch = 0; ch < c; ch++) {
            double s = 0.0;
            for (int p = 0; p < hw; p++)
                s += hone_bf16_to_f32(x[((size_t)i * hw + p) * c + ch]);
            y[(size_t)i * c + ch] = (float)(s / hw);
        }
    return HONE_OK;
}

int cpu_avgpool_global_bwd_h(hone_kctx *k, int n, int c, int hw, const float *dy, hone_bf16 *dx)
{
    (void)k;
    float inv = 1.0f / (float)hw;
    for (int i = 0; i < n; i++)
        for (int p = 0; p < hw; p++)
            for (int ch = 0; ch < c; ch++)
                dx[((size_t)i * hw + p) * c + ch] = hone_f32_to_bf16(dy[(size_t)i * c + ch] * inv);
    return HONE_OK;
}
