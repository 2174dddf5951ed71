/* kernels/cpu/cpu_norm.c: batch normalisation (training and inference) and the softmax
 * cross-entropy loss for the CPU backend. Statistics are accumulated in double for accuracy. */
#include <math.h>

#include "backend.h"

int cpu_batchnorm_fwd(hone_kctx *k, int n, int c, int hw, const float *x, const float *gamma,
                      const float *beta, float *running_mean, float *running_var, float momentum,
                      float eps, int training, float *save_mean, float *save_invstd, float *y)
{
    (void)k;
    size_t m = (size_t)n * hw;
    for (int ch = 0; ch < c; ch++) {
        float mean, invstd;
        if (training) {
            double s = 0.0, s2 = 0.0;
            for (int i = 0; i < n; i++) {
                const float *p = x + ((size_t)i * c + ch) * hw;
                for (int j = 0; j < hw; j++)
                    s += p[j];
            }
            double mu = s / (double)m;
            for (int i = 0; i < n; i++) {
                const float *p = x + ((size_t)i * c + ch) * hw;
                for (int j = 0; j < hw; j++)
                    s2 += (p[j] - mu) * (p[j] - mu);
            }
            double var = s2 / (double)m;
            double unbiased = m > 1 ? s2 / (double)(m - 1) : var;
            mean = (float)mu;
            invstd = (float)(1.0 / sqrt(var + eps));
            save_mean[ch] = mean;
            save_invstd[ch] = invstd;
            running_mean[ch] = (1.0f - momentum) * running_mean[ch] + momentum * mean;
            running_var[ch] = (1.0f - momentum) * running_var[ch] + momentum * (float)unbiased;
        } else {
            mean = running_mean[ch];
            invstd = 1.0f / sqrtf(running_var[ch] + eps);
        }
        float a = gamma[ch] * invstd, b = beta[ch] - mean * a;
        for (int i = 0; i < n; i++) {
            const float *p = x + ((size_t)i * c + ch) * hw;
            float *o = y + ((size_t)i * c + ch) * hw;
            for (int j = 0; j < hw; j++)
                o[j] = p[j] * a + b;
        }
    }
    return HONE_OK;
}

/* dx = gamma*invstd/m * (m*dy - sum(dy) - xhat*sum(dy*xhat)), xhat = (x - mean)*invstd. */
int cpu_batchnorm_bwd(hone_kctx *k, int n, int c, int hw, const float *x, const float *dy,
                      const float *gamma, const float *save_mean, const float *save_invstd,
                      float *dx, float *dgamma, float *dbeta)
{
    (void)k;
    size_t m = (size_t)n * hw;
    for (int ch = 0; ch < c; ch++) {
        float mean = save_mean[ch], invstd = save_invstd[ch];
        double sdy = 0.0, sdyx = 0.0;
        for (int i = 0; i < n; i++) {
            const float *p = x + ((size_t)i * c + ch) * hw;
            const float *g = dy + ((size_t)i * c + ch) * hw;
            for (int j = 0; j < hw; j++) {
                sdy += g[j];
                sdyx += g[j] * (p[j] - mean) * invstd;
            }
        }
        dgamma[ch] = (float)sdyx;
        dbeta[ch] = (float)sdy;
        float a = gamma[ch] * invstd / (float)m;
        float mdy = (float)sdy, mdyx = (float)sdyx;
        for (int i = 0; i < n; i++) {
            const float *p = x + ((size_t)i * c + ch) * hw;
            const float *g = dy + ((size_t)i * c + ch) * hw;
            float *o = dx + ((size_t)i * c + ch) * hw;
            for (int j = 0; j < hw; j++) {
                float xhat = (p[j] - mean) * invstd;
                o[j] = a * ((float)m * g[j] - mdy - xhat * mdyx);
            }
        }
    }
    return HONE_OK;
}

int cpu_softmax_xent(hone_kctx *k, const float *logits, const int32_t *labels, int n, int classes,
                     float *dlogits, float *loss_sum, float *correct)
{
    (void)k;
    double loss = 0.0;
    int right = 0;
    for (int i = 0; i < n; i++) {
        const float *z = logits + (size_t)i * classes;
        float *dz = dlogits ? dlogits + (size_t)i * classes : NULL;
        int y = labels[i];
        if (y < 0 || y >= classes) {
            if (dz)
                for (int j = 0; j < classes; j++)
                    dz[j] = 0.0f;
            continue;
        }
        int arg = 0;
        float mx = z[0];
        for (int j = 1; j < classes; j++)
            if (z[j] > mx) {
                mx = z[j];
                arg = j;
            }
        double s = 0.0;
        for (int j = 0; j < classes; j++)
            s += exp((double)(z[j] - mx));
        loss += log(s) - (double)(z[y] - mx);
        right += arg == y;
        if (dz) {
            float inv_n = 1.0f / (float)n;
            for (int j = 0; j < classes; j++) {
                float pj = (float)(exp((double)(z[j] - mx)) / s);
                dz[j] = (pj - (j == y ? 1.0f : 0.0f)) * inv_n;
            }
        }
    }
    loss_sum[0] += (float)loss;
    correct[0] += (float)right;
    return HONE_OK;
}
