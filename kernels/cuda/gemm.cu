/* CUDA backend: dense layers. GEMM goes to cuBLAS (row-major mapped onto column-major by
 * swapping operands) with the context's math mode choosing fp32, TF32 or bf16-operand tensor-core
 * compute (fp32 storage and accumulation throughout); bias add/grad are small kernels. */
#include "common.cuh"

cublasComputeType_t hc_compute_type(hone_kctx *k)
{
    switch (k->math) {
    case HONE_MATH_TF32:
        return CUBLAS_COMPUTE_32F_FAST_TF32;
    case HONE_MATH_BF16:
        return CUBLAS_COMPUTE_32F_FAST_16BF;
    default:
        return CUBLAS_COMPUTE_32F;
    }
}

/* Row-major C = alpha op(A) op(B) + beta C is column-major C^T = op(B)^T op(A)^T. */
extern "C" int cuda_gemm(hone_kctx *k, int transA, int transB, int M, int N, int K, float alpha,
                         const float *A, int lda, const float *B, int ldb, float beta, float *C,
                         int ldc)
{
    if (M == 0 || N == 0)
        return HONE_OK;
    HC_BLAS(cublasGemmEx(hc_of(k)->blas, transB ? CUBLAS_OP_T : CUBLAS_OP_N,
                         transA ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha, B, CUDA_R_32F, ldb, A,
                         CUDA_R_32F, lda, &beta, C, CUDA_R_32F, ldc, hc_compute_type(k),
                         CUBLAS_GEMM_DEFAULT));
    return HONE_OK;
}

/* Packed trials: one strided-batched cuBLAS call, mapped onto column-major as cuda_gemm is. */
extern "C" int cuda_gemm_batched(hone_kctx *k, int transA, int transB, int M, int N, int K,
                                 float alpha, const float *A, int lda, size_t strideA,
                                 const float *B, int ldb, size_t strideB, float beta, float *C,
                                 int ldc, size_t strideC, int count)
{
    if (M == 0 || N == 0 || count == 0)
        return HONE_OK;
    HC_BLAS(cublasGemmStridedBatchedEx(
        hc_of(k)->blas, transB ? CUBLAS_OP_T : CUBLAS_OP_N, transA ? CUBLAS_OP_T : CUBLAS_OP_N, N,
        M, K, &alpha, B, CUDA_R_32F, ldb, (long long)strideB, A, CUDA_R_32F, lda,
        (long long)strideA, &beta, C, CUDA_R_32F, ldc, (long long)strideC, count,
        hc_compute_type(k), CUBLAS_GEMM_DEFAULT));
    return HONE_OK;
}

/* y [count][n][c]: element i belongs to problem i / nc (nc = n * c), whose bias starts at
 * (i / nc) * b_stride (one problem: 0). */
__global__ static void k_bias_add(float *y, const float *b, int total, int c, int nc,
                                  size_t b_stride)
{
    HC_FOR32(i, total) y[i] += b[(size_t)(i / nc) * b_stride + i % c];
}

static int bias_add(hone_kctx *k, float *y, const float *b, size_t b_stride, int n, int c,
                    int count)
{
    size_t total = (size_t)n * c * count;
    if (total == 0)
        return HONE_OK;
    if (total >= (1u << 31))
        return HONE_ERANGE;
    k_bias_add<<<hc_blocks(k, total), HC_THREADS, 0, hc_stream(k)>>>(y, b, (int)total, c, n * c,
                                                                     b_stride);
    HC_LAUNCHED();
    return HONE_OK;
}

extern "C" int cuda_bias_add(hone_kctx *k, float *y, const float *b, int n, int c)
{
    return bias_add(k, y, b, 0, n, c, 1);
}

extern "C" int cuda_bias_add_batched(hone_kctx *k, float *y, const float *b, size_t b_stride, int n,
                                     int c, int count)
{
    return bias_add(k, y, b, b_stride, n, c, count);
}

/* 32 columns per block, 8 row lanes each summing a strided slice, then a shared-memory fold;
 * blockIdx.y is the problem (packed trials: dy_t at t * n * c, db_t at t * db_stride). */
__global__ static void k_bias_grad(float *db, size_t db_stride, const float *dy, int n, int c,
                                   int accumulate)
{
    __shared__ float part[8][33];
    int col = blockIdx.x * 32 + threadIdx.x;
    dy += (size_t)blockIdx.y * n * c;
    db += (size_t)blockIdx.y * db_stride;
    float s = 0.f;
    if (col < c)
        for (int r = threadIdx.y; r < n; r += 8)
            s += dy[(size_t)r * c + col];
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && col < c) {
        for (int j = 1; j < 8; j++)
            s += part[j][threadIdx.x];
        db[col] = accumulate ? db[col] + s : s;
    }
}

static int bias_grad(hone_kctx *k, float *db, size_t db_stride, const float *dy, int n, int c,
                     int accumulate, int count)
{
    if (c == 0 || count == 0)
        return HONE_OK;
    if (count > 65535)
        return HONE_ERANGE;
    k_bias_grad<<<dim3((c + 31) / 32, count), dim3(32, 8), 0, hc_stream(k)>>>(db, db_stride, dy, n,
                                                                              c, accumulate);
    HC_LAUNCHED();
    return HONE_OK;
}

extern "C" int cuda_bias_grad(hone_kctx *k, float *db, const float *dy, int n, int c,
                              int accumulate)
{
    return bias_grad(k, db, 0, dy, n, c, accumulate, 1);
}

extern "C" int cuda_bias_grad_batched(hone_kctx *k, float *db, size_t db_stride, const float *dy,
                                      int n, int c, int accumulate, int count)
{
    return bias_grad(k, db, db_stride, dy, n, c, accumulate, count);
}
