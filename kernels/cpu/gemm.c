/* kernels/cpu/gemm.c: GEMM (OpenBLAS), bias, elementwise activations, dropout, axpy/scale and
 * the sum reduction for the CPU backend. Large GEMMs and elementwise ops are split over the pool;
 * loops are written for the vectoriser; no allocation. */
#include <math.h>

#include "par.h"

/* GEMMs at least this many multiply-adds are split over the pool (by rows or columns of C). */
#define GEMM_SPLIT_FMAS (1L << 20)

typedef struct {
    int transA, transB, M, N, K, lda, ldb, ldc, by_rows, parts;
    float alpha, beta;
    const float *A, *B;
    float *C;
} gemm_job;

/* Part boundaries are multiples of 16 rows/columns so every part keeps whole register tiles. */
static int split_at(int n, int part, int parts)
{
    long units = (n + 15) / 16, at = units * part / parts * 16;
    return at > n ? n : (int)at;
}

static void gemm_part(void *arg, int part, int slot)
{
    (void)slot;
    gemm_job *g = arg;
    int n = g->by_rows ? g->M : g->N;
    int b = split_at(n, part, g->parts), e = split_at(n, part + 1, g->parts);
    if (e <= b)
        return;
    if (g->by_rows) {
        const float *A = g->transA ? g->A + b : g->A + (size_t)b * g->lda;
        cpu_gemm1(g->transA, g->transB, e - b, g->N, g->K, g->alpha, A, g->lda, g->B, g->ldb,
                  g->beta, g->C + (size_t)b * g->ldc, g->ldc);
    } else {
        const float *B = g->transB ? g->B + (size_t)b * g->ldb : g->B + b;
        cpu_gemm1(g->transA, g->transB, g->M, e - b, g->K, g->alpha, g->A, g->lda, B, g->ldb,
                  g->beta, g->C + b, g->ldc);
    }
}

int cpu_gemm(hone_kctx *k, int transA, int transB, int M, int N, int K, float alpha, const float *A,
             int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    int slots = cpu_par_slots(k);
    if (slots <= 1 || (long)M * N * K < GEMM_SPLIT_FMAS || (M < 32 && N < 32)) {
        cpu_gemm1(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return HONE_OK;
    }
    gemm_job g = {transA, transB, M, N, K, lda, ldb, ldc, M >= N, slots, alpha, beta, A, B, C};
    cpu_par_run(k, slots, gemm_part, &g);
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

/* Elementwise ops below this many elements run on the calling thread. */
#define ELEM_GRAIN 32768

typedef struct {
    const float *x, *dy;
    float *y;
} relu_job;

CPU_SIMD static void relu_fwd_range(void *arg, size_t b, size_t e)
{
    relu_job *j = arg;
    const float *x = j->x; /* may alias y (in place) */
    float *y = j->y;
    for (size_t i = b; i < e; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

/* dx may alias dy, so no restrict on those two. */
CPU_SIMD static void relu_bwd_range(void *arg, size_t b, size_t e)
{
    relu_job *j = arg;
    const float *x = j->x, *dy = j->dy;
    float *dx = j->y;
    for (size_t i = b; i < e; i++)
        dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}

int cpu_relu_fwd(hone_kctx *k, const float *x, float *y, size_t n)
{
    relu_job j = {x, NULL, y};
    cpu_par_range(k, n, ELEM_GRAIN, relu_fwd_range, &j);
    return HONE_OK;
}

int cpu_relu_bwd(hone_kctx *k, const float *y, const float *dy, float *dx, size_t n)
{
    relu_job j = {y, dy, dx};
    cpu_par_range(k, n, ELEM_GRAIN, relu_bwd_range, &j);
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
