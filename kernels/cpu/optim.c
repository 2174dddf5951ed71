/* kernels/cpu/optim.c: fused in-place optimiser steps (SGD with momentum/nesterov and L2
 * decay; AdamW with decoupled decay) for the CPU backend. lr and t may come from device memory so
 * a captured training step can follow a schedule. */
#include <math.h>

#include "par.h"

/* Parameters per part: the steps are memory bound, so parts are large. */
#define OPT_GRAIN 65536

typedef struct {
    float *w, *v, *m;
    const float *grad;
    float lr, momentum, wd, beta1, beta2, eps, c1, c2;
    int nesterov;
} opt_job;

CPU_SIMD static void sgd_range(void *arg, size_t b, size_t e)
{
    const opt_job *j = arg;
    float *restrict w = j->w, *restrict v = j->v;
    const float *restrict grad = j->grad;
    float a = j->lr, momentum = j->momentum, wd = j->wd;
    if (j->nesterov)
        for (size_t i = b; i < e; i++) {
            float g = grad[i] + wd * w[i];
            float vi = momentum * v[i] + g;
            v[i] = vi;
            w[i] -= a * (g + momentum * vi);
        }
    else
        for (size_t i = b; i < e; i++) {
            float g = grad[i] + wd * w[i];
            float vi = momentum * v[i] + g;
            v[i] = vi;
            w[i] -= a * vi;
        }
}

int cpu_sgd_step(hone_kctx *k, float *w, const float *grad, float *v, size_t n, float lr,
                 const float *lr_dev, float momentum, float wd, int nesterov)
{
    opt_job j = {.w = w,
                 .v = v,
                 .grad = grad,
                 .lr = lr_dev ? lr_dev[0] : lr,
                 .momentum = momentum,
                 .wd = wd,
                 .nesterov = nesterov};
    cpu_par_range(k, n, OPT_GRAIN, sgd_range, &j);
    return HONE_OK;
}

CPU_SIMD static void adamw_range(void *arg, size_t b, size_t e)
{
    const opt_job *j = arg;
    float *restrict w = j->w, *restrict m = j->m, *restrict v = j->v;
    const float *restrict grad = j->grad;
    float a = j->lr, beta1 = j->beta1, beta2 = j->beta2, eps = j->eps, wd = j->wd;
    float c1 = j->c1, c2 = j->c2;
    for (size_t i = b; i < e; i++) {
        float g = grad[i];
        float mi = beta1 * m[i] + (1.0f - beta1) * g;
        float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        w[i] -= a * ((mi / c1) / (sqrtf(vi / c2) + eps) + wd * w[i]);
    }
}

/* m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2; w -= lr*(mhat/(sqrt(vhat)+eps) + wd*w) with
 * mhat = m/(1-b1^t), vhat = v/(1-b2^t). */
int cpu_adamw_step(hone_kctx *k, float *w, const float *grad, float *m, float *v, size_t n,
                   float lr, const float *lr_dev, float beta1, float beta2, float eps, float wd,
                   int t, const int32_t *t_dev)
{
    int step = t_dev ? t_dev[0] : t;
    if (step < 1)
        step = 1;
    opt_job j = {.w = w,
                 .v = v,
                 .m = m,
                 .grad = grad,
                 .lr = lr_dev ? lr_dev[0] : lr,
                 .wd = wd,
                 .beta1 = beta1,
                 .beta2 = beta2,
                 .eps = eps,
                 .c1 = 1.0f - powf(beta1, (float)step),
                 .c2 = 1.0f - powf(beta2, (float)step)};
    cpu_par_range(k, n, OPT_GRAIN, adamw_range, &j);
    return HONE_OK;
}
