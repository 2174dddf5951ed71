/* kernels/cpu/cpu_optim.c: fused in-place optimiser steps (SGD with momentum/nesterov and L2
 * decay; AdamW with decoupled decay) for the CPU backend. lr and t may come from device memory so
 * a captured training step can follow a schedule. */
#include <math.h>

#include "backend.h"

int cpu_sgd_step(hone_kctx *k, float *w, const float *grad, float *v, size_t n, float lr,
                 const float *lr_dev, float momentum, float wd, int nesterov)
{
    (void)k;
    float a = lr_dev ? lr_dev[0] : lr;
    for (size_t i = 0; i < n; i++) {
        float g = grad[i] + wd * w[i];
        float vi = momentum * v[i] + g;
        v[i] = vi;
        w[i] -= a * (nesterov ? g + momentum * vi : vi);
    }
    return HONE_OK;
}

/* m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2; w -= lr*(mhat/(sqrt(vhat)+eps) + wd*w) with
 * mhat = m/(1-b1^t), vhat = v/(1-b2^t). */
int cpu_adamw_step(hone_kctx *k, float *w, const float *grad, float *m, float *v, size_t n,
                   float lr, const float *lr_dev, float beta1, float beta2, float eps, float wd,
                   int t, const int32_t *t_dev)
{
    (void)k;
    float a = lr_dev ? lr_dev[0] : lr;
    int step = t_dev ? t_dev[0] : t;
    if (step < 1)
        step = 1;
    float c1 = 1.0f - powf(beta1, (float)step), c2 = 1.0f - powf(beta2, (float)step);
    for (size_t i = 0; i < n; i++) {
        float g = grad[i];
        float mi = beta1 * m[i] + (1.0f - beta1) * g;
        float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        w[i] -= a * ((mi / c1) / (sqrtf(vi / c2) + eps) + wd * w[i]);
    }
    return HONE_OK;
}
