/* CUDA backend: batch normalisation over (n, hw) per channel, training and inference, and its
 * backward. One block per channel walks that channel's n*hw values (two passes for the variance,
 * as the CPU reference); inference is a plain elementwise affine map. */
#include "common.cuh"

#define BN_THREADS 512

__device__ static inline size_t bn_at(int i, int hw, int c, int ch)
{
    return ((size_t)(i / hw) * c + ch) * hw + (i % hw);
}

__global__ static void k_bn_train(int n, int c, int hw, const float *x, const float *gamma,
                                  const float *beta, float *rmean, float *rvar, float momentum,
                                  float eps, float *save_mean, float *save_invstd, float *y)
{
    int ch = blockIdx.x;
    int m = n * hw;
    float s = 0.f;
    for (int i = threadIdx.x; i < m; i += blockDim.x)
        s += x[bn_at(i, hw, c, ch)];
    float mean = hc_block_sum(s) / (float)m;
    float s2 = 0.f;
    for (int i = threadIdx.x; i < m; i += blockDim.x) {
        float d = x[bn_at(i, hw, c, ch)] - mean;
        s2 += d * d;
    }
    s2 = hc_block_sum(s2);
    float var = s2 / (float)m;
    float unbiased = m > 1 ? s2 / (float)(m - 1) : var;
    float invstd = rsqrtf(var + eps);
    if (threadIdx.x == 0) {
        save_mean[ch] = mean;
        save_invstd[ch] = invstd;
        rmean[ch] = (1.f - momentum) * rmean[ch] + momentum * mean;
        rvar[ch] = (1.f - momentum) * rvar[ch] + momentum * unbiased;
    }
    float a = gamma[ch] * invstd, b = beta[ch] - mean * a;
    for (int i = threadIdx.x; i < m; i += blockDim.x) {
        size_t at = bn_at(i, hw, c, ch);
        y[at] = x[at] * a + b;
    }
}

__global__ static void k_bn_infer(size_t total, int c, int hw, const float *x, const float *gamma,
                                  const float *beta, const float *rmean, const float *rvar,
                                  float eps, float *y)
{
    HC_FOR(i, total)
    {
        int ch = (int)((i / hw) % c);
        float a = gamma[ch] * rsqrtf(rvar[ch] + eps);
        y[i] = x[i] * a + (beta[ch] - rmean[ch] * a);
    }
}

extern "C" int cuda_batchnorm_fwd(hone_kctx *k, int n, int c, int hw, const float *x,
                                  const float *gamma, const float *beta, float *running_mean,
                                  float *running_var, float momentum, float eps, int training,
                                  float *save_mean, float *save_invstd, float *y)
{
    if ((size_t)n * c * hw == 0)
        return HONE_OK;
    if (training) {
        k_bn_train<<<c, BN_THREADS, 0, hc_stream(k)>>>(n, c, hw, x, gamma, beta, running_mean,
                                                       running_var, momentum, eps, save_mean,
                                                       save_invstd, y);
    } else {
        size_t total = (size_t)n * c * hw;
        k_bn_infer<<<hc_blocks(k, total), HC_THREADS, 0, hc_stream(k)>>>(
            total, c, hw, x, gamma, beta, running_mean, running_var, eps, y);
    }
    HC_LAUNCHED();
    return HONE_OK;
}

__global__ static void k_bn_bwd(int n, int c, int hw, const float *x, const float *dy,
                                const float *gamma, const float *save_mean,
                                const float *save_invstd, float *dx, float *dgamma, float *dbeta)
{
    int ch = blockIdx.x;
    int m = n * hw;
    float mean = save_mean[ch], invstd = save_invstd[ch];
    float sdy = 0.f, sdyx = 0.f;
    for (int i = threadIdx.x; i < m; i += blockDim.x) {
        size_t at = bn_at(i, hw, c, ch);
        float g = dy[at];
        sdy += g;
        sdyx += g * (x[at] - mean) * invstd;
    }
    sdy = hc_block_sum(sdy);
    sdyx = hc_block_sum(sdyx);
    if (threadIdx.x == 0) {
        dgamma[ch] = sdyx;
        dbeta[ch] = sdy;
    }
    float a = gamma[ch] * invstd / (float)m;
    for (int i = threadIdx.x; i < m; i += blockDim.x) {
        size_t at = bn_at(i, hw, c, ch);
        float xhat = (x[at] - mean) * invstd;
        dx[at] = a * ((float)m * dy[at] - sdy - xhat * sdyx);
    }
}

extern "C" int cuda_batchnorm_bwd(hone_kctx *k, int n, int c, int hw, const float *x,
                                  const float *dy, const float *gamma, const float *save_mean,
                                  const float *save_invstd, float *dx, float *dgamma, float *dbeta)
{
    if ((size_t)n * c * hw == 0)
        return HONE_OK;
    k_bn_bwd<<<c, BN_THREADS, 0, hc_stream(k)>>>(n, c, hw, x, dy, gamma, save_mean, save_invstd, dx,
                                                 dgamma, dbeta);
    HC_LAUNCHED();
    return HONE_OK;
}
