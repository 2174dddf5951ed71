/* kernels/cpu/norm.c: batch normalisation (training and inference, optionally followed by a fused
 * ReLU) for the CPU backend. Statistics are accumulated in double for accuracy; channels are
 * independent, so batch norm is split over the worker pool by channel. */
#include <math.h>

#include "par.h"

/* Sums in double over four lanes (a fixed order, so results are the same on every run): the
 * vectoriser keeps the lanes in one register. */
CPU_SIMD static double sum_d(const float *p, int n)
{
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    int j = 0;
    for (; j + 4 <= n; j += 4) {
        a0 += p[j];
        a1 += p[j + 1];
        a2 += p[j + 2];
        a3 += p[j + 3];
    }
    for (; j < n; j++)
        a0 += p[j];
    return (a0 + a1) + (a2 + a3);
}

CPU_SIMD static double sumsq_dev_d(const float *p, int n, double mu)
{
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    int j = 0;
    for (; j + 4 <= n; j += 4) {
        a0 += (p[j] - mu) * (p[j] - mu);
        a1 += (p[j + 1] - mu) * (p[j + 1] - mu);
        a2 += (p[j + 2] - mu) * (p[j + 2] - mu);
        a3 += (p[j + 3] - mu) * (p[j + 3] - mu);
    }
    for (; j < n; j++)
        a0 += (p[j] - mu) * (p[j] - mu);
    return (a0 + a1) + (a2 + a3);
}

typedef struct {
    int n, c, hw, training, relu;
    const float *x, *y_relu, *dy, *gamma, *beta, *save_mean, *save_invstd;
    float *running_mean, *running_var, *save_mean_out, *save_invstd_out, *y, *dx, *dgamma, *dbeta;
    float momentum, eps;
} bn_job;

/* One channel of the forward (channels are independent: split over the pool). */
CPU_SIMD static void bn_fwd_channel(void *arg, int ch, int slot)
{
    (void)slot;
    const bn_job *j = arg;
    int n = j->n, c = j->c, hw = j->hw;
    size_t m = (size_t)n * hw;
    float mean, invstd;
    if (j->training) {
        double s = 0.0, s2 = 0.0;
        for (int i = 0; i < n; i++)
            s += sum_d(j->x + ((size_t)i * c + ch) * hw, hw);
        double mu = s / (double)m;
        for (int i = 0; i < n; i++)
            s2 += sumsq_dev_d(j->x + ((size_t)i * c + ch) * hw, hw, mu);
        double var = s2 / (double)m;
        double unbiased = m > 1 ? s2 / (double)(m - 1) : var;
        mean = (float)mu;
        invstd = (float)(1.0 / sqrt(var + j->eps));
        j->save_mean_out[ch] = mean;
        j->save_invstd_out[ch] = invstd;
        float mo = j->momentum;
        j->running_mean[ch] = (1.0f - mo) * j->running_mean[ch] + mo * mean;
        j->running_var[ch] = (1.0f - mo) * j->running_var[ch] + mo * (float)unbiased;
    } else {
        mean = j->running_mean[ch];
        invstd = 1.0f / sqrtf(j->running_var[ch] + j->eps);
    }
    float a = j->gamma[ch] * invstd, b = j->beta[ch] - mean * a;
    for (int i = 0; i < n; i++) {
        const float *p = j->x + ((size_t)i * c + ch) * hw;
        float *o = j->y + ((size_t)i * c + ch) * hw;
        if (j->relu)
            for (int t = 0; t < hw; t++)
                o[t] = fmaxf(p[t] * a + b, 0.0f);
        else
            for (int t = 0; t < hw; t++)
                o[t] = p[t] * a + b;
    }
}

int cpu_batchnorm_fwd(hone_kctx *k, int n, int c, int hw, const float *x, const float *gamma,
                      const float *beta, float *running_mean, float *running_var, float momentum,
                      float eps, int training, float *save_mean, float *save_invstd, float *y,
                      int relu)
{
    bn_job j = {.n = n,
                .c = c,
                .hw = hw,
                .training = training,
                .relu = relu,
                .x = x,
                .gamma = gamma,
                .beta = beta,
                .running_mean = running_mean,
                .running_var = running_var,
                .save_mean_out = save_mean,
                .save_invstd_out = save_invstd,
                .y = y,
                .momentum = momentum,
                .eps = eps};
    /* tiny layers (a dense BN's [n, c] with hw 1) stay on the calling thread */
    if ((size_t)n * c * hw < 16384)
        for (int ch = 0; ch < c; ch++)
            bn_fwd_channel(&j, ch, 0);
    else
        cpu_par_run(k, c, bn_fwd_channel, &j);
    return HONE_OK;
}

/* sum(dy * xhat) over one plane: each term in float (as the reference), summed in double. */
CPU_SIMD static double sum_dy_xhat(const float *p, const float *g, int n, float mean, float invstd)
{
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    int j = 0;
    for (; j + 4 <= n; j += 4) {
        float t0 = g[j] * (p[j] - mean) * invstd, t1 = g[j + 1] * (p[j + 1] - mean) * invstd;
        float t2 = g[j + 2] * (p[j + 2] - mean) * invstd,
              t3 = g[j + 3] * (p[j + 3] - mean) * invstd;
        a0 += t0;
        a1 += t1;
        a2 += t2;
        a3 += t3;
    }
    for (; j < n; j++)
        a0 += g[j] * (p[j] - mean) * invstd;
    return (a0 + a1) + (a2 + a3);
}

/* dx = gamma*invstd/m * (m*dy - sum(dy) - xhat*sum(dy*xhat)), xhat = (x - mean)*invstd. */
CPU_SIMD static void bn_bwd_channel(void *arg, int ch, int slot)
{
    (void)slot;
    const bn_job *j = arg;
    int n = j->n, c = j->c, hw = j->hw;
    size_t m = (size_t)n * hw;
    float mean = j->save_mean[ch], invstd = j->save_invstd[ch];
    /* fused relu: the masked dy goes to dx first (this channel's planes only), and is read from
     * there; the last loop reads each element before overwriting it */
    const float *dy = j->dy;
    if (j->y_relu) {
        for (int i = 0; i < n; i++) {
            size_t off = ((size_t)i * c + ch) * hw;
            for (int t = 0; t < hw; t++)
                j->dx[off + t] = j->y_relu[off + t] > 0.0f ? j->dy[off + t] : 0.0f;
        }
        dy = j->dx;
    }
    double sdy = 0.0, sdyx = 0.0;
    for (int i = 0; i < n; i++) {
        size_t off = ((size_t)i * c + ch) * hw;
        sdy += sum_d(dy + off, hw);
        sdyx += sum_dy_xhat(j->x + off, dy + off, hw, mean, invstd);
    }
    j->dgamma[ch] = (float)sdyx;
    j->dbeta[ch] = (float)sdy;
    float a = j->gamma[ch] * invstd / (float)m;
    float mdy = (float)sdy, mdyx = (float)sdyx;
    for (int i = 0; i < n; i++) {
        size_t off = ((size_t)i * c + ch) * hw;
        const float *p = j->x + off, *g = dy + off;
        float *o = j->dx + off;
        for (int t = 0; t < hw; t++) {
            float xhat = (p[t] - mean) * invstd;
            o[t] = a * ((float)m * g[t] - mdy - xhat * mdyx);
        }
    }
}

int cpu_batchnorm_bwd(hone_kctx *k, int n, int c, int hw, const float *x, const float *y_relu,
                      const float *dy, const float *gamma, const float *save_mean,
                      const float *save_invstd, float *dx, float *dgamma, float *dbeta)
{
    bn_job j = {.n = n,
                .c = c,
                .hw = hw,
                .x = x,
                .y_relu = y_relu,
                .dy = dy,
                .gamma = gamma,
                .save_mean = save_mean,
                .save_invstd = save_invstd,
                .dx = dx,
                .dgamma = dgamma,
                .dbeta = dbeta};
    if ((size_t)n * c * hw < 16384)
        for (int ch = 0; ch < c; ch++)
            bn_bwd_channel(&j, ch, 0);
    else
        cpu_par_run(k, c, bn_bwd_channel, &j);
    return HONE_OK;
}
