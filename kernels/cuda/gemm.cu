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

__global__ static void k_bias_add(float *y, const float *b, int total, int c)
{
    HC_FOR32(i, total) y[i] += b[i % c];
}

extern "C" int cuda_bias_add(hone_kctx *k, float *y, const float *b, int n, int c)
{
    size_t total = (size_t)n * c;
    if (total == 0)
        return HONE_OK;
    if (total >= (1u << 31))
        return HONE_ERANGE;
    k_bias_add<<<hc_blocks(k, total), HC_THREADS, 0, hc_stream(k)>>>(y, b, (int)total, c);
    HC_LAUNCHED();
    return HONE_OK;
}

/* 32 columns per block, 8 row lanes each summing a strided slice, then a shared-memory fold. */
__global__ static void k_bias_grad(float *db, const float *dy, int n, int c, int accumulate)
{
    __shared__ float part[8][33];
    int col = blockIdx.x * 32 + threadIdx.x;
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

extern "C" int cuda_bias_grad(hone_kctx *k, float *db, const float *dy, int n, int c,
                              int accumulate)
{
    if (c == 0)
        return HONE_OK;
    k_bias_grad<<<(c + 31) / 32, dim3(32, 8), 0, hc_stream(k)>>>(db, dy, n, c, accumulate);
    HC_LAUNCHED();
    return HONE_OK;
}
