/* kernels/cpu/cpu_pool.c: max pooling (with argmax for backward), global average pooling and
 * nearest-neighbour upsampling for the CPU backend. Backward ops overwrite their outputs. */
#include <string.h>

#include "backend.h"

int cpu_maxpool_fwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride, const float *x,
                    float *y, int32_t *idx)
{
    (void)k;
    int P = (h - size) / stride + 1, Q = (w - size) / stride + 1;
    for (size_t plane = 0; plane < (size_t)n * c; plane++) {
        const float *in = x + plane * h * w;
        float *out = y + plane * P * Q;
        int32_t *oi = idx + plane * P * Q;
        if (size == 2 && stride == 2) { /* the common case, unrolled; same tie order */
            for (int p = 0; p < P; p++) {
                const float *r0 = in + (size_t)(2 * p) * w, *r1 = r0 + w;
                for (int q = 0; q < Q; q++) {
                    int o = 2 * p * w + 2 * q;
                    float bv = r0[2 * q];
                    if (r0[2 * q + 1] > bv)
                        bv = r0[2 * q + 1], o = 2 * p * w + 2 * q + 1;
                    if (r1[2 * q] > bv)
                        bv = r1[2 * q], o = (2 * p + 1) * w + 2 * q;
                    if (r1[2 * q + 1] > bv)
                        bv = r1[2 * q + 1], o = (2 * p + 1) * w + 2 * q + 1;
                    out[p * Q + q] = bv;
                    oi[p * Q + q] = o;
                }
            }
            continue;
        }
        for (int p = 0; p < P; p++)
            for (int q = 0; q < Q; q++) {
                int best = (p * stride) * w + q * stride;
                float bv = in[best];
                for (int i = 0; i < size; i++)
                    for (int j = 0; j < size; j++) {
                        int o = (p * stride + i) * w + q * stride + j;
                        if (in[o] > bv) {
                            bv = in[o];
                            best = o;
                        }
                    }
                out[p * Q + q] = bv;
                oi[p * Q + q] = best;
            }
    }
    return HONE_OK;
}

int cpu_maxpool_bwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride, const float *dy,
                    const int32_t *idx, float *dx)
{
    (void)k;
    int P = (h - size) / stride + 1, Q = (w - size) / stride + 1;
    memset(dx, 0, sizeof(float) * (size_t)n * c * h * w);
    for (size_t plane = 0; plane < (size_t)n * c; plane++) {
        float *g = dx + plane * h * w;
        const float *gy = dy + plane * P * Q;
        const int32_t *oi = idx + plane * P * Q;
        for (int j = 0; j < P * Q; j++)
            g[oi[j]] += gy[j];
    }
    return HONE_OK;
}

int cpu_avgpool_global_fwd(hone_kctx *k, int n, int c, int h, int w, const float *x, float *y)
{
    (void)k;
    size_t hw = (size_t)h * w;
    for (size_t plane = 0; plane < (size_t)n * c; plane++) {
        double s = 0.0;
        for (size_t i = 0; i < hw; i++)
            s += x[plane * hw + i];
        y[plane] = (float)(s / (double)hw);
    }
    return HONE_OK;
}

int cpu_avgpool_global_bwd(hone_kctx *k, int n, int c, int h, int w, const float *dy, float *dx)
{
    (void)k;
    size_t hw = (size_t)h * w;
    for (size_t plane = 0; plane < (size_t)n * c; plane++) {
        float g = dy[plane] / (float)hw;
        for (size_t i = 0; i < hw; i++)
            dx[plane * hw + i] = g;
    }
    return HONE_OK;
}

int cpu_upsample_fwd(hone_kctx *k, int n, int c, int h, int w, int factor, const float *x, float *y)
{
    (void)k;
    int H = h * factor, W = w * factor;
    for (size_t plane = 0; plane < (size_t)n * c; plane++)
        for (int i = 0; i < H; i++)
            for (int j = 0; j < W; j++)
                y[plane * H * W + (size_t)i * W + j] =
                    x[plane * h * w + (size_t)(i / factor) * w + j / factor];
    return HONE_OK;
}

int cpu_upsample_bwd(hone_kctx *k, int n, int c, int h, int w, int factor, const float *dy,
                     float *dx)
{
    (void)k;
    int H = h * factor, W = w * factor;
    memset(dx, 0, sizeof(float) * (size_t)n * c * h * w);
    for (size_t plane = 0; plane < (size_t)n * c; plane++)
        for (int i = 0; i < H; i++)
            for (int j = 0; j < W; j++)
                dx[plane * h * w + (size_t)(i / factor) * w + j / factor] +=
                    dy[plane * H * W + (size_t)i * W + j];
    return HONE_OK;
}
