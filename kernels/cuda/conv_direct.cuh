/* Private to the CUDA conv: direct kernels for convolutions with few input taps (C*R*S <= 27,
 * e.g. the first layer on 1- or 3-channel images), where im2col + GEMM wastes its passes over
 * memory on a K-dimension of 9. Forward fuses the bias; the weight grad fuses the bias grad. */
#ifndef HONE_CUDA_CONV_DIRECT_CUH
#define HONE_CUDA_CONV_DIRECT_CUH

#include "common.cuh"

#define HC_BIAS_CHUNKS 32
#define HC_DIRECT_MAX_TAPS 27

static inline int hc_conv_direct_ok(const hone_conv_desc *d)
{
    int taps = d->c * d->r * d->s;
    return taps <= HC_DIRECT_MAX_TAPS && (size_t)d->k * (taps + 1) * sizeof(float) <= 32 * 1024;
}

int hc_conv_direct_fwd(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                       const float *b, float *y);
/* dw (and db when non-NULL) from dy; part is scratch of n*k*(taps+1) floats. */
int hc_conv_direct_bwd_filter(hone_kctx *k, const hone_conv_desc *d, const float *x,
                              const float *dy, float *dw, float *db, float *part);

#endif
