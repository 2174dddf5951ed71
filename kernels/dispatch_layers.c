/* kernels/dispatch_layers.c: the hone_k_* pooling, resampling, elementwise and batch-norm ops:
 * arguments checked, then the backend's op (dispatch.h). */
#include "dispatch.h"

/* ------------------------------------------------------------------ pooling, resampling */

static int pool_ok(int n, int c, int h, int w, int size, int stride)
{
    return n > 0 && c > 0 && size > 0 && stride > 0 && h >= size && w >= size;
}

int hone_k_maxpool_fwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                       const float *x, float *y, int32_t *idx)
{
    CHECK(pool_ok(n, c, h, w, size, stride) && x && y && idx);
    return k->ops->maxpool_fwd(k, n, c, h, w, size, stride, x, y, idx);
}

int hone_k_maxpool_bwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                       const float *dy, const int32_t *idx, float *dx)
{
    CHECK(pool_ok(n, c, h, w, size, stride) && dy && idx && dx);
    return k->ops->maxpool_bwd(k, n, c, h, w, size, stride, dy, idx, dx);
}

int hone_k_maxpool_relu_fwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                            const float *x, float *y, int32_t *idx)
{
    CHECK(pool_ok(n, c, h, w, size, stride) && x && y && idx);
    return k->ops->maxpool_relu_fwd(k, n, c, h, w, size, stride, x, y, idx);
}

int hone_k_maxpool_relu_bwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                            const float *y, const float *dy, const int32_t *idx, float *dx)
{
    CHECK(pool_ok(n, c, h, w, size, stride) && y && dy && idx && dx);
    return k->ops->maxpool_relu_bwd(k, n, c, h, w, size, stride, y, dy, idx, dx);
}

static int pool_pad_ok(int n, int c, int h, int w, int size, int stride, int pad)
{
    return n > 0 && c > 0 && h > 0 && w > 0 && size > 0 && stride > 0 && pad >= 0 && pad < size &&
           h + 2 * pad >= size && w + 2 * pad >= size;
}

int hone_k_maxpool_pad_fwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride, int pad,
                           const float *x, float *y, int32_t *idx)
{
    CHECK(pool_pad_ok(n, c, h, w, size, stride, pad) && x && y && idx);
    return k->ops->maxpool_pad_fwd(k, n, c, h, w, size, stride, pad, x, y, idx);
}

int hone_k_maxpool_pad_bwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride, int pad,
                           const float *dy, const int32_t *idx, float *dx)
{
    CHECK(pool_pad_ok(n, c, h, w, size, stride, pad) && dy && idx && dx);
    return k->ops->maxpool_pad_bwd(k, n, c, h, w, size, stride, pad, dy, idx, dx);
}

int hone_k_avgpool_global_fwd(hone_kctx *k, int n, int c, int h, int w, const float *x, float *y)
{
    CHECK(n > 0 && c > 0 && h > 0 && w > 0 && x && y);
    return k->ops->avgpool_global_fwd(k, n, c, h, w, x, y);
}

int hone_k_avgpool_global_bwd(hone_kctx *k, int n, int c, int h, int w, const float *dy, float *dx)
{
    CHECK(n > 0 && c > 0 && h > 0 && w > 0 && dy && dx);
    return k->ops->avgpool_global_bwd(k, n, c, h, w, dy, dx);
}

int hone_k_upsample_fwd(hone_kctx *k, int n, int c, int h, int w, int factor, const float *x,
                        float *y)
{
    CHECK(n > 0 && c > 0 && h > 0 && w > 0 && factor > 0 && x && y);
    return k->ops->upsample_fwd(k, n, c, h, w, factor, x, y);
}

int hone_k_upsample_bwd(hone_kctx *k, int n, int c, int h, int w, int factor, const float *dy,
                        float *dx)
{
    CHECK(n > 0 && c > 0 && h > 0 && w > 0 && factor > 0 && dy && dx);
    return k->ops->upsample_bwd(k, n, c, h, w, factor, dy, dx);
}

/* ------------------------------------------------------------------ elementwise */

int hone_k_relu_fwd(hone_kctx *k, const float *x, float *y, size_t n)
{
    if (n == 0)
        return HONE_OK;
    CHECK(x && y);
    return k->ops->relu_fwd(k, x, y, n);
}

int hone_k_relu_bwd(hone_kctx *k, const float *y, const float *dy, float *dx, size_t n)
{
    if (n == 0)
        return HONE_OK;
    CHECK(y && dy && dx);
    return k->ops->relu_bwd(k, y, dy, dx, n);
}

int hone_k_sigmoid_fwd(hone_kctx *k, const float *x, float *y, size_t n)
{
    if (n == 0)
        return HONE_OK;
    CHECK(x && y);
    return k->ops->sigmoid_fwd(k, x, y, n);
}

int hone_k_sigmoid_bwd(hone_kctx *k, const float *y, const float *dy, float *dx, size_t n)
{
    if (n == 0)
        return HONE_OK;
    CHECK(y && dy && dx);
    return k->ops->sigmoid_bwd(k, y, dy, dx, n);
}

int hone_k_dropout_fwd(hone_kctx *k, const float *x, float *y, uint8_t *mask, size_t n, float p,
                       uint64_t seed, uint64_t *counter)
{
    CHECK(p >= 0.0f && p < 1.0f && counter);
    CHECK(n == 0 || (x && y && mask));
    return k->ops->dropout_fwd(k, x, y, mask, n, p, seed, counter);
}

int hone_k_dropout_bwd(hone_kctx *k, const float *dy, const uint8_t *mask, float *dx, size_t n,
                       float p)
{
    CHECK(p >= 0.0f && p < 1.0f);
    if (n == 0)
        return HONE_OK;
    CHECK(dy && mask && dx);
    return k->ops->dropout_bwd(k, dy, mask, dx, n, p);
}

int hone_k_add_relu_fwd(hone_kctx *k, const float *a, const float *b, float *y, size_t n)
{
    if (n == 0)
        return HONE_OK;
    CHECK(a && b && y);
    return k->ops->add_relu_fwd(k, a, b, y, n);
}

int hone_k_add_relu_bwd(hone_kctx *k, const float *y, const float *dy, float *da, float *db,
                        size_t n)
{
    if (n == 0)
        return HONE_OK;
    CHECK(y && dy && da);
    return k->ops->add_relu_bwd(k, y, dy, da, db, n);
}

int hone_k_axpy(hone_kctx *k, float a, const float *x, float *y, size_t n)
{
    if (n == 0)
        return HONE_OK;
    CHECK(x && y);
    return k->ops->axpy(k, a, x, y, n);
}

int hone_k_scale(hone_kctx *k, float *x, float a, size_t n)
{
    if (n == 0)
        return HONE_OK;
    CHECK(x);
    return k->ops->scale(k, x, a, n);
}

/* ------------------------------------------------------------------ batch norm */

static int bn_fwd(hone_kctx *k, int n, int c, int hw, const float *x, const float *gamma,
                  const float *beta, float *running_mean, float *running_var, float momentum,
                  float eps, int training, float *save_mean, float *save_invstd, float *y, int relu)
{
    CHECK(n > 0 && c > 0 && hw > 0 && x && gamma && beta && running_mean && running_var && y);
    CHECK(eps > 0.0f && momentum >= 0.0f && momentum <= 1.0f);
    CHECK(!training || (save_mean && save_invstd));
    return k->ops->batchnorm_fwd(k, n, c, hw, x, gamma, beta, running_mean, running_var, momentum,
                                 eps, training, save_mean, save_invstd, y, relu);
}

int hone_k_batchnorm_fwd(hone_kctx *k, int n, int c, int hw, const float *x, const float *gamma,
                         const float *beta, float *running_mean, float *running_var, float momentum,
                         float eps, int training, float *save_mean, float *save_invstd, float *y)
{
    return bn_fwd(k, n, c, hw, x, gamma, beta, running_mean, running_var, momentum, eps, training,
                  save_mean, save_invstd, y, 0);
}

int hone_k_batchnorm_relu_fwd(hone_kctx *k, int n, int c, int hw, const float *x,
                              const float *gamma, const float *beta, float *running_mean,
                              float *running_var, float momentum, float eps, int training,
                              float *save_mean, float *save_invstd, float *y)
{
    return bn_fwd(k, n, c, hw, x, gamma, beta, running_mean, running_var, momentum, eps, training,
                  save_mean, save_invstd, y, 1);
}

int hone_k_batchnorm_bwd(hone_kctx *k, int n, int c, int hw, const float *x, const float *dy,
                         const float *gamma, const float *save_mean, const float *save_invstd,
                         float *dx, float *dgamma, float *dbeta)
{
    CHECK(n > 0 && c > 0 && hw > 0 && x && dy && gamma && save_mean && save_invstd && dx &&
          dgamma && dbeta);
    return k->ops->batchnorm_bwd(k, n, c, hw, x, NULL, dy, gamma, save_mean, save_invstd, dx,
                                 dgamma, dbeta);
}

int hone_k_batchnorm_relu_bwd(hone_kctx *k, int n, int c, int hw, const float *x, const float *y,
                              const float *dy, const float *gamma, const float *save_mean,
                              const float *save_invstd, float *dx, float *dgamma, float *dbeta)
{
    CHECK(n > 0 && c > 0 && hw > 0 && x && y && dy && gamma && save_mean && save_invstd && dx &&
          dgamma && dbeta);
    return k->ops->batchnorm_bwd(k, n, c, hw, x, y, dy, gamma, save_mean, save_invstd, dx, dgamma,
                                 dbeta);
}
