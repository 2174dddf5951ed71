/* Private helpers shared by the CUDA backend's files: the per-context CUDA state (stream, cuBLAS
 * handle, math mode, scratch), launch helpers and the error-checking macros. Every CUDA/cuBLAS
 * call's status is checked; nothing here synchronises the stream (ops must stay capturable). */
#ifndef HONE_CUDA_COMMON_CUH
#define HONE_CUDA_COMMON_CUH

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

extern "C" {
#include "backend.h"
}

/* The cuDNN state (conv_cudnn.cu): handle and per-shape table; NULL without cuDNN. */
typedef struct hc_dnn hc_dnn;

/* What k->cuda points at. Owned by the context (created in context.cu). */
struct hone_cuda {
    int device;
    int sms;
    cudaStream_t stream;
    cublasHandle_t blas;
    void *blas_ws; /* cuBLAS workspace set once, so capture never allocates */
    size_t blas_ws_bytes;
    hc_dnn *dnn;    /* NULL: convolutions use im2col + cuBLAS (conv.cu) */
    float *bn_part; /* batch norm's per-chunk partial statistics (norm.cu), fixed size */
    size_t bn_part_floats;
    hone_math math;
    void *scratch; /* grows on demand outside capture (permutation sort keys) */
    size_t scratch_bytes;
    int err; /* first asynchronous error seen, reported by sync */
};

static inline hone_cuda *hc_of(hone_kctx *k)
{
    return (hone_cuda *)k->cuda;
}
static inline cudaStream_t hc_stream(hone_kctx *k)
{
    return ((hone_cuda *)k->cuda)->stream;
}

int hc_fail(const char *file, int line, const char *what, const char *msg);
/* Per-channel bias of an [n, c, hw] tensor (norm.cu): out[ch] = the sum of x over n and hw, in a
 * fixed order (chunks, then the chunks in order); y[n, ch, :] += b[ch]. */
int hc_channel_sum(hone_kctx *k, int n, int c, int hw, const float *x, float *out);
int hc_channel_add(hone_kctx *k, int n, int c, int hw, const float *b, float *y);
/* Batch norm's per-channel folds of the S chunk partials in the bn_part area (norm.cu): the
 * statistics (chunk mean and squared deviations, as k_bn_stats writes them) into the saved and
 * running ones, or the gradient sums (sum dy, sum dy * xhat) into dbeta and dgamma. */
int hc_bn_fold_stats(hone_kctx *k, int c, int m, int S, int len, float *running_mean,
                     float *running_var, float momentum, float eps, float *save_mean,
                     float *save_invstd);
int hc_bn_fold_grads(hone_kctx *k, int c, int S, float *dgamma, float *dbeta);
/* cuBLAS compute type for the context's math mode (gemm.cu). */
cublasComputeType_t hc_compute_type(hone_kctx *k);

#define HC_CHECK(call)                                                                             \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            return hc_fail(__FILE__, __LINE__, #call, cudaGetErrorString(e_));                     \
    } while (0)

#define HC_BLAS(call)                                                                              \
    do {                                                                                           \
        cublasStatus_t s_ = (call);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                           \
            return hc_fail(__FILE__, __LINE__, #call, cublasGetStatusString(s_));                  \
    } while (0)

/* After a kernel launch: reports launch-configuration errors without synchronising. */
#define HC_LAUNCHED()                                                                              \
    do {                                                                                           \
        cudaError_t e_ = cudaGetLastError();                                                       \
        if (e_ != cudaSuccess)                                                                     \
            return hc_fail(__FILE__, __LINE__, "kernel launch", cudaGetErrorString(e_));           \
    } while (0)

#define HC_THREADS 256

/* Blocks for a grid-stride loop over n items: enough to fill the chip, no more. */
static inline unsigned hc_blocks(hone_kctx *k, size_t n)
{
    size_t b = (n + HC_THREADS - 1) / HC_THREADS;
    size_t cap = (size_t)hc_of(k)->sms * 16;
    if (b > cap)
        b = cap;
    return b ? (unsigned)b : 1u;
}

#define HC_FOR(i, n)                                                                               \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)(n);                \
         i += (size_t)gridDim.x * blockDim.x)

/* 32-bit grid-stride loop for kernels whose index arithmetic divides: 64-bit division is a long
 * software sequence on the GPU (it made im2col 6x slower). Callers check n < 2^31. */
#define HC_FOR32(i, n)                                                                             \
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (int)(n); i += gridDim.x * blockDim.x)

/* Block-wide sum; every thread gets the total. blockDim.x must be a multiple of 32, <= 1024. */
__device__ static inline float hc_block_sum(float v)
{
    __shared__ float part[32];
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0)
        part[wid] = v;
    __syncthreads();
    int nw = (blockDim.x + 31) >> 5;
    v = lane < nw ? part[lane] : 0.f;
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

#endif
