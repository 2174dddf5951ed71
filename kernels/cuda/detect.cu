/* CUDA backend: the DetectNet_v2 grid head's loss (kernels.h has its definition): one thread per
 * (image, class, cell) computes the coverage term and its 4 box terms and their gradients; the
 * block's loss is summed and added to the device accumulator with one atomic, as softmax_xent.
 * And a batch's grid targets from its (augmented) boxes: one block per image runs backend.h's
 * three steps, threads over cells, then boxes, then cells, a barrier between them. */
#include "common.cuh"

__global__ static void k_detect_loss(const float *pred, const float *target, int n, int classes,
                                     int hw, float cov_weight, float bg_weight, float bbox_weight,
                                     int cov_loss, float gamma, float *dpred, float *loss_sum)
{
    int total = n * classes * hw, kc = classes; /* < 2^31: dispatch.c checks */
    float inv_n = 1.f / (float)n, part = 0.f;
    HC_FOR32(u, total)
    {
        int q = u % hw, ic = u / hw, c = ic % kc, i = ic / kc;
        const float *p = pred + (size_t)i * 5 * kc * hw, *t = target + (size_t)i * 6 * kc * hw;
        float *dp = dpred ? dpred + (size_t)i * 5 * kc * hw : NULL;
        float z = p[c * hw + q];
        float tc = t[c * hw + q], m = hone_kdet_cov_mass(t, kc, hw, q, cov_weight, bg_weight);
        if (tc < 0.f) { /* an ignore cell: no coverage term */
            if (dp)
                dp[c * hw + q] = 0.f;
        } else if (cov_loss == HONE_KCOV_L2) {
            float s = 1.f / (1.f + expf(-z)), d = s - tc;
            part += m * d * d;
            if (dp)
                dp[c * hw + q] = m * 2.f * d * s * (1.f - s) * inv_n;
        } else {
            float dz, l = hone_kdet_cov(cov_loss, gamma, z, tc, &dz);
            part += m * l;
            if (dp)
                dp[c * hw + q] = m * dz * inv_n;
        }
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
                                float bbox_weight, int cov_loss, float gamma, float *dpred,
                                float *loss_sum)
{
    size_t total = (size_t)n * classes * hw;
    k_detect_loss<<<hc_blocks(k, total), HC_THREADS, 0, hc_stream(k)>>>(
        pred, target, n, classes, hw, cov_weight, bg_weight, bbox_weight, cov_loss, gamma, dpred,
        loss_sum);
    HC_LAUNCHED();
    return HONE_OK;
}

__global__ static void k_detect_targets(const hone_kbox *boxes, const uint32_t *box_start,
                                        const int32_t *idx, const int32_t *base_dev, int base,
                                        int n, int h, int w, hone_kdet_grid g, hone_kaugment aug,
                                        int augment, const uint64_t *counter, float *dst)
{
    int b = base_dev ? *base_dev : base;
    uint64_t c0 = augment ? *counter : 0;
    int plane = g.grid_h * g.grid_w, kc = g.classes, cells = kc * plane;
    for (int i = blockIdx.x; i < n; i += gridDim.x) {
        int32_t r = idx ? idx[b + i] : b + i;
        const hone_kbox *bx = boxes + box_start[r];
        int nb = (int)(box_start[r + 1] - box_start[r]);
        float *cov = dst + (size_t)i * 6 * cells, *bbox = cov + cells, *weight = cov + 5 * cells;
        hone_aug_draw d = {0}, *dp = NULL;
        if (augment) {
            hone_aug_draw_image(&aug, h, w, c0, i, &d);
            dp = &d;
        }
        for (int u = threadIdx.x; u < 6 * cells; u += blockDim.x)
            if (u >= cells)
                cov[u] = 0.0f;
        for (int u = threadIdx.x; u < cells; u += blockDim.x) { /* (1) owners */
            int c = u / plane, q = u % plane;
            cov[u] = (float)hone_kdet_owner(&g, bx, nb, dp, h, w, c, q % g.grid_w, q / g.grid_w);
        }
        __syncthreads();
        for (int q = threadIdx.x; q < nb; q += blockDim.x) { /* (2) weights */
            float o[4] = {0, 0, 0, 0};
            if (hone_kdet_box(&bx[q], dp, h, w, kc, o))
                hone_kdet_weights(&g, o, q, cov + (size_t)bx[q].cls * plane,
                                  weight + (size_t)bx[q].cls * plane);
        }
        __syncthreads();
        for (int u = threadIdx.x; u < cells; u += blockDim.x) { /* (3) offsets */
            int c = u / plane, q = u % plane;
            if (cov[u] <= 0.0f) {
                if (hone_kdet_ignored(&g, bx, nb, dp, h, w, q % g.grid_w, q / g.grid_w))
                    cov[u] = -1.0f;
                continue;
            }
            float o[4] = {0, 0, 0, 0};
            hone_kdet_box(&bx[(int)cov[u] - 1], dp, h, w, kc, o);
            hone_kdet_offsets(&g, o, q % g.grid_w, q / g.grid_w, bbox + (size_t)4 * c * plane,
                              (size_t)plane);
            cov[u] = 1.0f;
        }
        __syncthreads(); /* the next image's threads start only after this one is whole */
    }
}

extern "C" int cuda_detect_targets(hone_kctx *k, const hone_kbox *boxes, const uint32_t *box_start,
                                   const int32_t *idx, const int32_t *base_dev, int base, int n,
                                   int h, int w, const hone_kdet_grid *g, const hone_kaugment *aug,
                                   const uint64_t *counter, float *dst)
{
    hone_kaugment a = {0, 0, 0.0f, 0, 0, 0, 0.0f, 1.0f, 1.0f};
    if (aug)
        a = *aug;
    unsigned blocks = (unsigned)(n < 65535 ? n : 65535);
    k_detect_targets<<<blocks, 128, 0, hc_stream(k)>>>(boxes, box_start, idx, base_dev, base, n, h,
                                                       w, *g, a, aug != NULL, counter, dst);
    HC_LAUNCHED();
    return HONE_OK;
}
