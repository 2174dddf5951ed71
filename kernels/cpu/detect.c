/* kernels/cpu/detect.c: the DetectNet_v2 grid head's loss for the CPU backend (kernels.h has its
 * definition): sigmoid + L2 on coverage, coverage-weighted L1 on box offsets. The loss is summed
 * in double on the calling thread in a fixed order; the gradient is written element by element. */
#include <math.h>

#include "par.h"

int cpu_detect_loss(hone_kctx *k, const float *pred, const float *target, int n, int classes,
                    int hw, float cov_weight, float bg_weight, float bbox_weight, float *dpred,
                    float *loss_sum)
{
    (void)k;
    double loss = 0.0;
    float inv_n = 1.0f / (float)n;
    size_t plane = (size_t)hw, kc = (size_t)classes;
    for (size_t i = 0; i < (size_t)n; i++) {
        const float *p = pred + i * 5 * kc * plane, *t = target + i * 6 * kc * plane;
        float *dp = dpred ? dpred + i * 5 * kc * plane : NULL;
        for (size_t c = 0; c < kc; c++)
            for (size_t q = 0; q < plane; q++) {
                float z = p[c * plane + q];
                float s = 1.0f / (1.0f + expf(-z));
                float tc = t[c * plane + q], d = s - tc,
                      m = tc > 0.0f ? cov_weight : cov_weight * bg_weight;
                loss += (double)m * (double)d * (double)d;
                if (dp)
                    dp[c * plane + q] = m * 2.0f * d * s * (1.0f - s) * inv_n;
                float w = t[(5 * kc + c) * plane + q];
                for (size_t j = 0; j < 4; j++) {
                    size_t o = (kc + 4 * c + j) * plane + q;
                    float e = p[o] - t[o];
                    loss += (double)bbox_weight * (double)w * fabs((double)e);
                    if (dp)
                        dp[o] = e > 0.0f   ? bbox_weight * w * inv_n
                                : e < 0.0f ? -bbox_weight * w * inv_n
                                           : 0.0f;
                }
            }
    }
    loss_sum[0] += (float)loss;
    return HONE_OK;
}
