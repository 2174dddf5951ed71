/* CUDA backend: fused in-place optimiser steps, one launch over a whole (flat) parameter buffer:
 * SGD with momentum/nesterov and L2 decay, AdamW with decoupled decay. lr and t may be read from
 * device memory so a captured step can follow a schedule without re-capturing. */
#include "common.cuh"

__global__ static void k_sgd(float *w, const float *grad, float *v, size_t n, float lr,
                             const float *lr_dev, float mu, float wd, int nesterov)
{
    float a = lr_dev ? *lr_dev : lr;
    HC_FOR(i, n)
    {
        float wi = w[i];
        float g = grad[i] + wd * wi;
        float vi = mu * v[i] + g;
        v[i] = vi;
        w[i] = wi - a * (nesterov ? g + mu * vi : vi);
    }
}

extern "C" int cuda_sgd_step(hone_kctx *k, float *w, const float *grad, float *v, size_t n,
                             float lr, const float *lr_dev, float momentum, float wd, int nesterov)
{
    if (n == 0)
        return HONE_OK;
    k_sgd<<<hc_blocks(k, n), HC_THREADS, 0, hc_stream(k)>>>(w, grad, v, n, lr, lr_dev, momentum, wd,
                                                            nesterov);
    HC_LAUNCHED();
    return HONE_OK;
}

__global__ static void k_adamw(float *w, const float *grad, float *m, float *v, size_t n, float lr,
                               const float *lr_dev, float b1, float b2, float eps, float wd, int t,
                               const int32_t *t_dev)
{
    float a = lr_dev ? *lr_dev : lr;
    int step = t_dev ? *t_dev : t;
    if (step < 1)
        step = 1;
    float c1 = 1.f - powf(b1, (float)step), c2 = 1.f - powf(b2, (float)step);
    HC_FOR(i, n)
    {
        float g = grad[i], wi = w[i];
        float mi = b1 * m[i] + (1.f - b1) * g;
        float vi = b2 * v[i] + (1.f - b2) * g * g;
        m[i] = mi;
        v[i] = vi;
        w[i] = wi - a * ((mi / c1) / (sqrtf(vi / c2) + eps) + wd * wi);
    }
}

extern "C" int cuda_adamw_step(hone_kctx *k, float *w, const float *grad, float *m, float *v,
                               size_t n, float lr, const float *lr_dev, float beta1, float beta2,
                               float eps, float wd, int t, const int32_t *t_dev)
{
    if (n == 0)
        return HONE_OK;
    k_adamw<<<hc_blocks(k, n), HC_THREADS, 0, hc_stream(k)>>>(w, grad, m, v, n, lr, lr_dev, beta1,
                                                              beta2, eps, wd, t, t_dev);
    HC_LAUNCHED();
    return HONE_OK;
}
