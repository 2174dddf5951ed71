/* kernels/cpu/cpu_dense.c: GEMM (OpenBLAS), bias, elementwise activations, dropout, axpy/scale and
 * the sum reduction for the CPU backend. Plain loops the compiler vectorises; no allocation. */
#include <math.h>

#include <cblas.h>

#include "backend.h"

int cpu_gemm(hone_kctx *k, int transA, int transB, int M, int N, int K, float alpha, const float *A,
             int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    (void)k;
    if (K == 0) {
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++)
                C[(size_t)i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[(size_t)i * ldc + j];
        return HONE_OK;
    }
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                transB ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return HONE_OK;
}

int cpu_bias_add(hone_kctx *k, float *y, const float *b, int n, int c)
{
    (void)k;
    for (int i = 0; i < n; i++) {
        float *row = y + (size_t)i * c;
        for (int j = 0; j < c; j++)
            row[j] += b[j];
    }
    return HONE_OK;
}

int cpu_bias_grad(hone_kctx *k, float *db, const float *dy, int n, int c, int accumulate)
{
    (void)k;
    if (!accumulate)
        for (int j = 0; j < c; j++)
            db[j] = 0.0f;
    for (int i = 0; i < n; i++) {
        const float *row = dy + (size_t)i * c;
        for (int j = 0; j < c; j++)
            db[j] += row[j];
    }
    return HONE_OK;
}

int cpu_relu_fwd(hone_kctx *k, const float *x, float *y, size_t n)
{
    (void)k;
    for (size_t i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
    return HONE_OK;
}

int cpu_relu_bwd(hone_kctx *k, const float *y, const float *dy, float *dx, size_t n)
{
    (void)k;
    for (size_t i = 0; i < n; i++)
        dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
    return HONE_OK;
}

int cpu_sigmoid_fwd(hone_kctx *k, const float *x, float *y, size_t n)
{
    (void)k;
    for (size_t i = 0; i < n; i++)
        y[i] = 1.0f / (1.0f + expf(-x[i]));
    return HONE_OK;
}

int cpu_sigmoid_bwd(hone_kctx *k, const float *y, const float *dy, float *dx, size_t n)
{
    (void)k;
    for (size_t i = 0; i < n; i++)
        dx[i] = dy[i] * y[i] * (1.0f - y[i]);
    return HONE_OK;
}

int cpu_dropout_fwd(hone_kctx *k, const float *x, float *y, uint8_t *mask, size_t n, float p,
                    uint64_t seed, uint64_t *counter)
{
    (void)k;
    uint64_t c = *counter;
    float scale = 1.0f / (1.0f - p);
    for (size_t i = 0; i < n; i++) {
        int keep = p == 0.0f || hone_rng_unit(seed, c, i) >= p;
        mask[i] = (uint8_t)keep;
        y[i] = keep ? x[i] * scale : 0.0f;
    }
    *counter = c + 1;
    return HONE_OK;
}

int cpu_dropout_bwd(hone_kctx *k, const float *dy, const uint8_t *mask, float *dx, size_t n,
                    float p)
{
    (void)k;
    float scale = 1.0f / (1.0f - p);
    for (size_t i = 0; i < n; i++)
        dx[i] = mask[i] ? dy[i] * scale : 0.0f;
    return HONE_OK;
}

int cpu_axpy(hone_kctx *k, float a, const float *x, float *y, size_t n)
{
    (void)k;
    for (size_t i = 0; i < n; i++)
        y[i] += a * x[i];
    return HONE_OK;
}

int cpu_scale(hone_kctx *k, float *x, float a, size_t n)
{
    (void)k;
    for (size_t i = 0; i < n; i++)
        x[i] *= a;
    return HONE_OK;
}

int cpu_sum(hone_kctx *k, const float *x, size_t n, float *out)
{
    (void)k;
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    out[0] = (float)s;
    return HONE_OK;
}
