/* kernels/cpu/gemm.c: dense layers for the CPU backend: GEMM (OpenBLAS, large products split over
 * the worker pool by rows or columns of C) and the bias add and bias gradient. No allocation. */
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

/* The batched ops are the single ops once per problem, so packed trials on the CPU get exactly
 * the numbers of their solo runs. */
int cpu_gemm_batched(hone_kctx *k, int transA, int transB, int M, int N, int K, float alpha,
                     const float *A, int lda, size_t strideA, const float *B, int ldb,
                     size_t strideB, float beta, float *C, int ldc, size_t strideC, int count)
{
    for (int t = 0; t < count; t++)
        cpu_gemm(k, transA, transB, M, N, K, alpha, A + t * strideA, lda, B + t * strideB, ldb,
                 beta, C + t * strideC, ldc);
    return HONE_OK;
}

int cpu_bias_add_batched(hone_kctx *k, float *y, const float *b, size_t b_stride, int n, int c,
                         int count)
{
    for (int t = 0; t < count; t++)
        cpu_bias_add(k, y + (size_t)t * n * c, b + t * b_stride, n, c);
    return HONE_OK;
}

int cpu_bias_grad_batched(hone_kctx *k, float *db, size_t db_stride, const float *dy, int n, int c,
                          int accumulate, int count)
{
    for (int t = 0; t < count; t++)
        cpu_bias_grad(k, db + t * db_stride, dy + (size_t)t * n * c, n, c, accumulate);
    return HONE_OK;
}
