/* kernels/cpu/cpu_fused.c: the CPU backend's fused ops (max pooling with ReLU, the conv backward
 * that may reuse the forward's workspace). They exist so the trainer can call one op on every
 * backend; on the CPU they give exactly what the unfused sequence gives. The pooling work is done
 * by pool.c's parallel kernels (one pass each way, the ReLU folded in). */
#include "par.h"

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

int cpu_maxpool_relu_bwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                         const float *y, const float *dy, const int32_t *idx, float *dx)
{
    return cpu_maxpool_bwd_ex(k, n, c, h, w, size, stride, y, dy, idx, dx);
}
