/* CUDA backend: the DetectNet_v2 grid head's loss (kernels.h has its definition): one thread per
 * (image, class, cell) computes the coverage term and its 4 box terms and their gradients; the
 * block's loss is summed and added to the device accumulator with one atomic, as softmax_xent. */
#include "common.cuh"

__global__ static void k_detect_loss(const float *pred, const float *cov, const float *bbox,
                                     const float *weight, int n, int classes, int hw,
                                     float cov_weight, float bbox_weight, float *dpred,
                                     float *loss_sum)
{
    size_t total = (size_t)n * classes * hw, plane = (size_t)hw, kc = (size_t)classes;
    float inv_n = 1.f / (float)n, part = 0.f;
    HC_FOR(t, total)
    {
        size_t q = t % plane, ic = t / plane, c = ic % kc, i = ic / kc;
        const float *p = pred + i * 5 * kc * plane;
        float z = p[c * plane + q];
        float s = 1.f / (1.f + expf(-z));
        float d = s - cov[t];
        part += cov_weight * d * d;
        if (dpred)
            dpred[i * 5 * kc * plane + c * plane + q] =
                cov_weight * 2.f * d * s * (1.f - s) * inv_n;
        float w = weight[t];
        for (size_t j = 0; j < 4; j++) {
            size_t o = (kc + 4 * c + j) * plane + q;
            float e = p[o] - bbox[(ic * 4 + j) * plane + q];
            part += bbox_weight * w * fabsf(e);
            if (dpred)
                dpred[i * 5 * kc * plane + o] = e > 0.f   ? bbox_weight * w * inv_n
                                                : e < 0.f ? -bbox_weight * w * inv_n
                                                          : 0.f;
        }
    }
    float b = hc_block_sum(part);
    if (threadIdx.x == 0)
        atomicAdd(loss_sum, b);
}

extern "C" int cuda_detect_loss(hone_kctx *k, const float *pred, const float *cov,
                                const float *bbox, const float *weight, int n, int classes, int hw,
                                float cov_weight, float bbox_weight, float *dpred, float *loss_sum)
{
    size_t total = (size_t)n * classes * hw;
    k_detect_loss<<<hc_blocks(k, total), HC_THREADS, 0, hc_stream(k)>>>(
        pred, cov, bbox, weight, n, classes, hw, cov_weight, bbox_weight, dpred, loss_sum);
    HC_LAUNCHED();
    return HONE_OK;
}
