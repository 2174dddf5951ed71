/* kernels/cpu/cpu_fused.c: the CPU backend's fused ops (max pooling with ReLU, the conv backward
 * that may reuse the forward's workspace). They exist so the trainer can call one op on every
 * backend; on the CPU they give exactly what the unfused sequence gives. */
#include <string.h>

#include "cpu_par.h"

int cpu_conv_bwd_reuse(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                       const float *dy, float *dx, float *dw, float *db, void *ws)
{
    /* the CPU convolution does not keep columns across calls: the full backward */
    return cpu_conv_bwd(k, d, x, w, dy, dx, dw, db, ws);
}

int cpu_maxpool_relu_fwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                         const float *x, float *y, int32_t *idx)
{
    return cpu_maxpool_fwd_ex(k, n, c, h, w, size, stride, x, y, idx, 1);
}

typedef struct {
    int h, w, size, stride, P, Q;
    const float *y, *dy;
    const int32_t *idx;
    float *dx;
} mpr_job;

/* Planes [b, e) of dx: the gradient at each window's argmax where the fused output was > 0,
 * zero elsewhere (windows that tile the plane exactly write every pixel once, no memset). */
static void maxpool_relu_bwd_planes(void *arg, size_t b, size_t e)
{
    const mpr_job *j = arg;
    int h = j->h, w = j->w, P = j->P, Q = j->Q, size = j->size;
    int tiled = j->stride == size && P * size == h && Q * size == w;
    for (size_t plane = b; plane < e; plane++) {
        float *g = j->dx + plane * h * w;
        const float *gy = j->dy + plane * P * Q, *yy = j->y + plane * P * Q;
        const int32_t *oi = j->idx + plane * P * Q;
        if (!tiled) {
            memset(g, 0, sizeof(float) * (size_t)h * w);
            for (int t = 0; t < P * Q; t++)
                if (yy[t] > 0.0f)
                    g[oi[t]] += gy[t];
            continue;
        }
        for (int p = 0; p < P; p++)
            for (int q = 0; q < Q; q++) {
                int t = p * Q + q;
                for (int a = 0; a < size; a++)
                    for (int bb = 0; bb < size; bb++)
                        g[(p * size + a) * w + q * size + bb] = 0.0f;
                g[oi[t]] = yy[t] > 0.0f ? gy[t] : 0.0f;
            }
    }
}

int cpu_maxpool_relu_bwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                         const float *y, const float *dy, const int32_t *idx, float *dx)
{
    mpr_job j = {h, w,  size, stride, (h - size) / stride + 1, (w - size) / stride + 1,
                 y, dy, idx,  dx};
    size_t grain = 16384 / ((size_t)h * w) + 1; /* planes per part */
    cpu_par_range(k, (size_t)n * c, grain, maxpool_relu_bwd_planes, &j);
    return HONE_OK;
}
