/* kernels/dispatch_half.c: the hone_k_* bf16 NHWC ops: arguments checked, then the backend's op
 * (dispatch.h). */
#include "dispatch.h"

/* ------------------------------------------------------------------ bf16 NHWC activations */

/* Elements of an [n, c, hw] tensor; 0 when a count is not positive or the total passes 2^31
 * (the CUDA kernels index with 32 bits). */
static size_t h_elems(int n, int c, int hw)
{
    if (n <= 0 || c <= 0 || hw <= 0)
        return 0;
    size_t t = (size_t)n * (size_t)c * (size_t)hw;
    return t < ((size_t)1 << 31) ? t : 0;
}

int hone_k_to_nhwc_h(hone_kctx *k, int n, int c, int hw, const float *x, hone_bf16 *y)
{
    CHECK(h_elems(n, c, hw) && x && y);
    return k->ops->to_nhwc_h(k, n, c, hw, x, y);
}

int hone_k_from_nhwc_h(hone_kctx *k, int n, int c, int hw, const hone_bf16 *x, float *y)
{
    CHECK(h_elems(n, c, hw) && x && y);
    return k->ops->from_nhwc_h(k, n, c, hw, x, y);
}

int hone_k_conv_weights_h(hone_kctx *k, const hone_conv_desc *d, const float *w, hone_bf16 *wh)
{
    CHECK(dispatch__conv_desc_ok(d) && w && wh);
    return k->ops->conv_weights_h(k, d, w, wh);
}

/* The bf16 convolutions also need 32-bit element counts for both activations. */
static int conv_h_ok(const hone_conv_desc *d)
{
    return dispatch__conv_desc_ok(d) && h_elems(d->n, d->c, d->h * d->w) &&
           h_elems(d->n, d->k, d->p * d->q);
}

int hone_k_conv_workspace_h(hone_kctx *k, const hone_conv_desc *d, size_t *bytes)
{
    CHECK(conv_h_ok(d) && bytes);
    *bytes = 0;
    return k->ops->conv_workspace_h(k, d, bytes);
}

int hone_k_conv_fwd_h(hone_kctx *k, const hone_conv_desc *d, const hone_bf16 *x,
                      const hone_bf16 *wh, hone_bf16 *y, void *ws)
{
    CHECK(conv_h_ok(d) && x && wh && y);
    return k->ops->conv_fwd_h(k, d, x, wh, y, ws);
}

int hone_k_conv_bwd_h(hone_kctx *k, const hone_conv_desc *d, const hone_bf16 *x,
                      const hone_bf16 *wh, const hone_bf16 *dy, hone_bf16 *dx, int acc, float *dw,
                      void *ws)
{
    CHECK(conv_h_ok(d) && x && wh && dy && dw && (dx || !acc));
    return k->ops->conv_bwd_h(k, d, x, wh, dy, dx, acc, dw, ws);
}

static int bn_fwd_h(hone_kctx *k, int m, int c, const hone_bf16 *x, const float *gamma,
                    const float *beta, float *running_mean, float *running_var, float momentum,
                    float eps, int training, float *save_mean, float *save_invstd,
                    const hone_bf16 *skip, hone_bf16 *y, int relu)
{
    CHECK(h_elems(m, c, 1) && x && gamma && beta && running_mean && running_var && y);
    CHECK(eps > 0.0f && momentum >= 0.0f && momentum <= 1.0f);
    CHECK(!training || (save_mean && save_invstd));
    return k->ops->batchnorm_fwd_h(k, m, c, x, gamma, beta, running_mean, running_var, momentum,
                                   eps, training, save_mean, save_invstd, skip, y, relu != 0);
}

int hone_k_batchnorm_fwd_h(hone_kctx *k, int m, int c, const hone_bf16 *x, const float *gamma,
                           const float *beta, float *running_mean, float *running_var,
                           float momentum, float eps, int training, float *save_mean,
                           float *save_invstd, hone_bf16 *y, int relu)
{
    return bn_fwd_h(k, m, c, x, gamma, beta, running_mean, running_var, momentum, eps, training,
                    save_mean, save_invstd, NULL, y, relu);
}

int hone_k_batchnorm_add_relu_fwd_h(hone_kctx *k, int m, int c, const hone_bf16 *x,
                                    const float *gamma, const float *beta, float *running_mean,
                                    float *running_var, float momentum, float eps, int training,
                                    float *save_mean, float *save_invstd, const hone_bf16 *skip,
                                    hone_bf16 *y)
{
    CHECK(skip);
    return bn_fwd_h(k, m, c, x, gamma, beta, running_mean, running_var, momentum, eps, training,
                    save_mean, save_invstd, skip, y, 1);
}

int hone_k_batchnorm_bwd_h(hone_kctx *k, int m, int c, const hone_bf16 *x, const hone_bf16 *y_relu,
                           const hone_bf16 *dy, const float *gamma, const float *save_mean,
                           const float *save_invstd, hone_bf16 *dx, float *dgamma, float *dbeta)
{
    CHECK(h_elems(m, c, 1) && x && dy && gamma && save_mean && save_invstd && dx && dgamma &&
          dbeta);
    CHECK(dx != x && dx != dy && dx != y_relu);
    return k->ops->batchnorm_bwd_h(k, m, c, x, y_relu, dy, gamma, save_mean, save_invstd, dx,
                                   dgamma, dbeta);
}

int hone_k_add_relu_fwd_h(hone_kctx *k, const hone_bf16 *a, const hone_bf16 *b, hone_bf16 *y,
                          size_t n)
{
    if (n == 0)
        return HONE_OK;
    CHECK(a && b && y && n < ((size_t)1 << 31));
    return k->ops->add_relu_fwd_h(k, a, b, y, n);
}

int hone_k_add_relu_bwd_h(hone_kctx *k, const hone_bf16 *y, const hone_bf16 *dy, hone_bf16 *da,
                          hone_bf16 *db, size_t n)
{
    if (n == 0)
        return HONE_OK;
    CHECK(y && dy && da && n < ((size_t)1 << 31));
    return k->ops->add_relu_bwd_h(k, y, dy, da, db, n);
}

/* The padded pool's shape: pad < size, positive output sides, 32-bit element counts. */
static int pool_h_ok(int n, int c, int h, int w, int size, int stride, int pad)
{
    if (size <= 0 || stride <= 0 || pad < 0 || pad >= size || !h_elems(n, c, h * w))
        return 0;
    int p = (h + 2 * pad - size) / stride + 1, q = (w + 2 * pad - size) / stride + 1;
    return h + 2 * pad >= size && w + 2 * pad >= size && p > 0 && q > 0;
}

int hone_k_maxpool_pad_fwd_h(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                             int pad, const hone_bf16 *x, hone_bf16 *y, int32_t *idx)
{
    CHECK(pool_h_ok(n, c, h, w, size, stride, pad) && x && y && idx);
    return k->ops->maxpool_pad_fwd_h(k, n, c, h, w, size, stride, pad, x, y, idx);
}

int hone_k_maxpool_pad_bwd_h(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                             int pad, const hone_bf16 *dy, const int32_t *idx, hone_bf16 *dx)
{
    CHECK(pool_h_ok(n, c, h, w, size, stride, pad) && dy && idx && dx);
    return k->ops->maxpool_pad_bwd_h(k, n, c, h, w, size, stride, pad, dy, idx, dx);
}

int hone_k_avgpool_global_fwd_h(hone_kctx *k, int n, int c, int hw, const hone_bf16 *x, float *y)
{
    CHECK(h_elems(n, c, hw) && x && y);
    return k->ops->avgpool_global_fwd_h(k, n, c, hw, x, y);
}

int hone_k_avgpool_global_bwd_h(hone_kctx *k, int n, int c, int hw, const float *dy, hone_bf16 *dx)
{
    CHECK(h_elems(n, c, hw) && dy && dx);
    return k->ops->avgpool_global_bwd_h(k, n, c, hw, dy, dx);
}
