/* CUDA backend: the DetectNet_v2 grid head's loss (kernels.h has its definition): one thread per
 * (image, class, cell) computes the coverage term and its 4 box terms and their gradients; the
 * block's loss is summed and added to the device accumulator with one atomic, as softmax_xent. */
#include "common.cuh"

__global__ static void k_detect_loss(const float *pred, const float *target, int n, int classes,
                                     int hw, float cov_weight, float bg_weight, float bbox_weight,
                                     float *dpred, float *loss_sum)
{
    int total = n * classes * hw, kc = classes; /* < 2^31: dispatch.c checks */
    float inv_n = 1.f / (float)n, part = 0.f;
    HC_FOR32(u, total)
    {
        int q = u % hw, ic = u / hw, c = ic % kc, i = ic / kc;
        const float *p = pred + (size_t)i * 5 * kc * hw, *t = target + (size_t)i * 6 * kc * hw;
        float *dp = dpred ? dpred + (size_t)i * 5 * kc * hw : NULL;
        float z = p[c * hw + q];
        float s = 1.f / (1.f + expf(-z));
        float tc = t[c * hw + q], d = s - tc, m = tc > 0.f ? cov_weight : cov_weight * bg_weight;
        part += m * d * d;
        if (dp)
            dp[c * hw + q] = m * 2.f * d * s * (1.f - s) * inv_n;
        float w = t[(5 * kc + c) * hw + q];
        for (int j = 0; j < 4; j++) {
            int o = (kc + 4 * c + j) * hw + q;
            float e = p[o] - t[o];
            part += bbox_weight * w * fabsf(e);
            if (dp)
                dp[o] = e > 0.f   ? bbox_weight * w * inv_n
                        : e < 0.f ? -bbox_weight * w * inv_n
                                  : 0.f;
        }
    }
    float b = hc_block_sum(part);
    if (threadIdx.x == 0)
        atomicAdd(loss_sum, b);
}

extern "C" int cuda_detect_loss(hone_kctx *k, const float *pred, const float *target, int n,
                                int classes, int hw, float cov_weight, float bg_weight,
                                float bbox_weight, float *dpred, float *loss_sum)
{
    size_t total = (size_t)n * classes * hw;
    k_detect_loss<<<hc_blocks(k, total), HC_THREADS, 0, hc_stream(k)>>>(
        pred, target, n, classes, hw, cov_weight, bg_weight, bbox_weight, dpred, loss_sum);
    HC_LAUNCHED();
    return HONE_OK;
}
