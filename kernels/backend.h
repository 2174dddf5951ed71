/* kernels/backend.h: private contract between dispatch.c and the two backends. Every op is listed
 * once (HONE_BACKEND_OPS); each backend implements it as cpu_xxx (kernels/cpu/) or cuda_xxx
 * (kernels/cuda/), in the file of the same name in both, and dispatch.c calls it through the
 * context's backend table with the public hone_k_xxx's arguments, already validated. Not public.
 * The random streams below are defined here, bit for bit, so both backends draw the same masks. */
#ifndef HONE_KERNELS_BACKEND_H
#define HONE_KERNELS_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

#ifdef __CUDACC__
#define HONE_HD __host__ __device__ __forceinline__
#else
#define HONE_HD static inline
#endif

struct hone_kbackend;

struct hone_kctx {
    hone_device dev;
    int threads;    /* CPU worker threads (>= 1) */
    hone_math math; /* set by hone_k_set_math; the CUDA backend reads it at each GEMM/conv */
    void *cuda;     /* backend state, owned by its ctx_init/ctx_release: the CUDA stream, cuBLAS
                       handle, ... (cuda_ctx_*), or the CPU worker pool (cpu/par.c) */
    const struct hone_kbackend *ops; /* the device's backend: dispatch.c's table */
};

struct hone_kgraph {
    hone_kctx *k;
    void (*fn)(void *arg);
    void *arg;
    void *cuda; /* CUDA backend state (cudaGraphExec_t, ...): owned by cuda_graph_* */
};

/* ------------------------------------------------------------------ shared random streams
 * Every random draw is a pure function of (seed, counter, index):
 *   hone_rng_u32(seed, ctr, i) = (uint32_t)(hone_mix64(seed ^ hone_mix64(ctr * A + i * B + C)) >>
 * 32) with A, B, C the constants below and hone_mix64 the splitmix64 finaliser. hone_rng_unit(seed,
 * ctr, i) = (hone_rng_u32(...) >> 8) * 2^-24, in [0, 1).
 *
 * dropout_fwd: c = *counter; for element i: keep = hone_rng_unit(seed, c, i) >= p;
 *   mask[i] = keep; y[i] = keep ? x[i] * (1.0f / (1.0f - p)) : 0 (the scale computed in float);
 *   then *counter = c + 1 (after every element has read c). p == 0: mask all 1, counter advances.
 *   dropout_bwd: dx[i] = mask[i] ? dy[i] * (1.0f / (1.0f - p)) : 0.
 * augment: c = *counter; for image j: u = hone_rng_u32(seed, c, j);
 *   flip = flip_enabled && (u & 1); dx = (int)((u >> 1) % (2*shift+1)) - shift;
 *   dy = (int)((u >> 17) % (2*shift+1)) - shift   (shift == 0: dx = dy = 0);
 *   out[y][x] = in[y - dy][flip ? (w - 1 - (x - dx)) : (x - dx)], zero outside; i.e. shift first
 *   by (dx, dy), then mirror the source column. Applied to every channel; then *counter = c + 1.
 * permutation(seed, epoch): key[i] = hone_rng_u32(seed, epoch, i); idx = 0..n-1 sorted by
 *   (key ascending, i ascending) -- a stable radix sort of (key, i) pairs gives the same answer. */
#define HONE_RNG_A 0x9E3779B97F4A7C15ULL
#define HONE_RNG_B 0xD1B54A32D192ED03ULL
#define HONE_RNG_C 0x8CB92BA72F3D8DD7ULL

HONE_HD uint64_t hone_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

HONE_HD uint32_t hone_rng_u32(uint64_t seed, uint64_t ctr, uint64_t i)
{
    return (
        uint32_t)(hone_mix64(seed ^ hone_mix64(ctr * HONE_RNG_A + i * HONE_RNG_B + HONE_RNG_C)) >>
                  32);
}

HONE_HD float hone_rng_unit(uint64_t seed, uint64_t ctr, uint64_t i)
{
    return (float)(hone_rng_u32(seed, ctr, i) >> 8) * (1.0f / 16777216.0f);
}

/* ------------------------------------------------------------------ op semantics both backends
 * keep maxpool: p = (h - size) / stride + 1 (q likewise); idx[n,c,p,q] = the argmax's offset i*w +
 * j inside its (n,c) plane, the first maximum in row-major window order wins. batchnorm (training):
 * mean and biased var over (n, hw); save_invstd = 1/sqrt(var + eps); running_mean =
 * (1-momentum)*running_mean + momentum*mean; running_var = (1-momentum)*running_var +
 * momentum*var*m/(m-1), m = n*hw (unbiased; m==1: var). bwd overwrites dgamma, dbeta. softmax_xent:
 * dlogits rows with label < 0 are zero; the divisor is the n passed in. conv: the workspace is
 * hone_k_conv_workspace bytes of device memory, no other scratch. maxpool_pad: p = (h + 2*pad -
 * size) / stride + 1 (pad < size), padding never wins (windows see only real pixels), idx and ties
 * as maxpool; bwd sums dy over the windows whose argmax is the pixel. add_relu_bwd: da = db = dy *
 * (y > 0), db may be NULL. */

/* ------------------------------------------------------------------ the ops of a backend
 * Every op a backend provides, once: X(P, return type, name, parameters), grouped by the file that
 * holds it in both backends (kernels/cpu/gemm.c beside kernels/cuda/gemm.cu, ...). Each backend
 * defines P_name for every entry (cpu_gemm, cuda_gemm); dispatch.c builds one hone_kbackend table
 * per backend from this list. Adding an op: one line here, one function per backend, one public
 * wrapper in dispatch.c. */
#define HONE_BACKEND_OPS(X, P)                                                                     \
    /* context.{c,cu}: context, memory, graphs, device queries */                                  \
    X(P, int, ctx_init, (hone_kctx * k))                                                           \
    X(P, void, ctx_release, (hone_kctx * k))                                                       \
    X(P, void *, alloc, (hone_kctx * k, size_t bytes))                                             \
    X(P, void, free, (hone_kctx * k, void *p))                                                     \
    X(P, int, upload, (hone_kctx * k, void *dst, const void *host_src, size_t bytes))              \
    X(P, int, download, (hone_kctx * k, void *host_dst, const void *src, size_t bytes))            \
    X(P, int, copy, (hone_kctx * k, void *dst, const void *src, size_t bytes))                     \
    X(P, int, fill, (hone_kctx * k, float *x, float v, size_t n))                                  \
    X(P, int, sync, (hone_kctx * k))                                                               \
    X(P, int, graph_capture, (hone_kctx * k, hone_kgraph * g))                                     \
    X(P, int, graph_launch, (hone_kctx * k, hone_kgraph * g))                                      \
    X(P, void, graph_release, (hone_kgraph * g))                                                   \
    X(P, int, device_count, (void))                                                                \
    X(P, int, device_name, (int i, char *buf, size_t len, size_t *mem_bytes))                      \
    /* gemm.{c,cu}: dense layers */                                                                \
    X(P, int, gemm,                                                                                \
      (hone_kctx * k, int transA, int transB, int M, int N, int K, float alpha, const float *A,    \
       int lda, const float *B, int ldb, float beta, float *C, int ldc))                           \
    X(P, int, bias_add, (hone_kctx * k, float *y, const float *b, int n, int c))                   \
    X(P, int, bias_grad,                                                                           \
      (hone_kctx * k, float *db, const float *dy, int n, int c, int accumulate))                   \
    /* conv.{c,cu}: convolution */                                                                 \
    X(P, size_t, conv_workspace, (hone_kctx * k, const hone_conv_desc *d))                         \
    X(P, int, conv_fwd,                                                                            \
      (hone_kctx * k, const hone_conv_desc *d, const float *x, const float *w, const float *b,     \
       float *y, void *ws))                                                                        \
    X(P, int, conv_bwd,                                                                            \
      (hone_kctx * k, const hone_conv_desc *d, const float *x, const float *w, const float *dy,    \
       float *dx, float *dw, float *db, void *ws))                                                 \
    X(P, int, conv_bwd_reuse,                                                                      \
      (hone_kctx * k, const hone_conv_desc *d, const float *x, const float *w, const float *dy,    \
       float *dx, float *dw, float *db, void *ws))                                                 \
    X(P, int, conv_bwd_acc,                                                                        \
      (hone_kctx * k, const hone_conv_desc *d, const float *x, const float *w, const float *dy,    \
       float *dx, float *dw, float *db, void *ws, int reuse))                                      \
    /* pool.{c,cu}: pooling, resampling */                                                         \
    X(P, int, maxpool_fwd,                                                                         \
      (hone_kctx * k, int n, int c, int h, int w, int size, int stride, const float *x, float *y,  \
       int32_t *idx))                                                                              \
    X(P, int, maxpool_bwd,                                                                         \
      (hone_kctx * k, int n, int c, int h, int w, int size, int stride, const float *dy,           \
       const int32_t *idx, float *dx))                                                             \
    X(P, int, maxpool_relu_fwd,                                                                    \
      (hone_kctx * k, int n, int c, int h, int w, int size, int stride, const float *x, float *y,  \
       int32_t *idx))                                                                              \
    X(P, int, maxpool_relu_bwd,                                                                    \
      (hone_kctx * k, int n, int c, int h, int w, int size, int stride, const float *y,            \
       const float *dy, const int32_t *idx, float *dx))                                            \
    X(P, int, maxpool_pad_fwd,                                                                     \
      (hone_kctx * k, int n, int c, int h, int w, int size, int stride, int pad, const float *x,   \
       float *y, int32_t *idx))                                                                    \
    X(P, int, maxpool_pad_bwd,                                                                     \
      (hone_kctx * k, int n, int c, int h, int w, int size, int stride, int pad, const float *dy,  \
       const int32_t *idx, float *dx))                                                             \
    X(P, int, avgpool_global_fwd,                                                                  \
      (hone_kctx * k, int n, int c, int h, int w, const float *x, float *y))                       \
    X(P, int, avgpool_global_bwd,                                                                  \
      (hone_kctx * k, int n, int c, int h, int w, const float *dy, float *dx))                     \
    X(P, int, upsample_fwd,                                                                        \
      (hone_kctx * k, int n, int c, int h, int w, int factor, const float *x, float *y))           \
    X(P, int, upsample_bwd,                                                                        \
      (hone_kctx * k, int n, int c, int h, int w, int factor, const float *dy, float *dx))         \
    /* elementwise.{c,cu} */                                                                       \
    X(P, int, relu_fwd, (hone_kctx * k, const float *x, float *y, size_t n))                       \
    X(P, int, relu_bwd, (hone_kctx * k, const float *y, const float *dy, float *dx, size_t n))     \
    X(P, int, sigmoid_fwd, (hone_kctx * k, const float *x, float *y, size_t n))                    \
    X(P, int, sigmoid_bwd, (hone_kctx * k, const float *y, const float *dy, float *dx, size_t n))  \
    X(P, int, dropout_fwd,                                                                         \
      (hone_kctx * k, const float *x, float *y, uint8_t *mask, size_t n, float p, uint64_t seed,   \
       uint64_t *counter))                                                                         \
    X(P, int, dropout_bwd,                                                                         \
      (hone_kctx * k, const float *dy, const uint8_t *mask, float *dx, size_t n, float p))         \
    X(P, int, add_relu_fwd, (hone_kctx * k, const float *a, const float *b, float *y, size_t n))   \
    X(P, int, add_relu_bwd,                                                                        \
      (hone_kctx * k, const float *y, const float *dy, float *da, float *db, size_t n))            \
    X(P, int, axpy, (hone_kctx * k, float a, const float *x, float *y, size_t n))                  \
    X(P, int, scale, (hone_kctx * k, float *x, float a, size_t n))                                 \
    /* norm.{c,cu}: batch norm */                                                                  \
    X(P, int, batchnorm_fwd,                                                                       \
      (hone_kctx * k, int n, int c, int hw, const float *x, const float *gamma, const float *beta, \
       float *running_mean, float *running_var, float momentum, float eps, int training,           \
       float *save_mean, float *save_invstd, float *y))                                            \
    X(P, int, batchnorm_bwd,                                                                       \
      (hone_kctx * k, int n, int c, int hw, const float *x, const float *dy, const float *gamma,   \
       const float *save_mean, const float *save_invstd, float *dx, float *dgamma, float *dbeta))  \
    /* loss.{c,cu}: loss and reductions */                                                         \
    X(P, int, softmax_xent,                                                                        \
      (hone_kctx * k, const float *logits, const int32_t *labels, int n, int classes,              \
       float *dlogits, float *loss_sum, float *correct))                                           \
    X(P, int, sum, (hone_kctx * k, const float *x, size_t n, float *out))                          \
    /* data.{c,cu}: data on the device */                                                          \
    X(P, int, gather_rows,                                                                         \
      (hone_kctx * k, const float *src, const int32_t *src_labels, const int32_t *idx,             \
       const int32_t *base_dev, int base, int n, int row, float *dst, int32_t *dst_labels))        \
    X(P, int, counter_add, (hone_kctx * k, int32_t * counter, int step))                           \
    X(P, int, permutation, (hone_kctx * k, int32_t * idx, int n, uint64_t seed, uint64_t epoch))   \
    X(P, int, augment,                                                                             \
      (hone_kctx * k, float *x, int n, int c, int h, int w, int flip, int shift, uint64_t seed,    \
       uint64_t *counter))                                                                         \
    /* optim.{c,cu}: optimisers */                                                                 \
    X(P, int, sgd_step,                                                                            \
      (hone_kctx * k, float *w, const float *grad, float *v, size_t n, float lr,                   \
       const float *lr_dev, float momentum, float wd, int nesterov))                               \
    X(P, int, adamw_step,                                                                          \
      (hone_kctx * k, float *w, const float *grad, float *m, float *v, size_t n, float lr,         \
       const float *lr_dev, float beta1, float beta2, float eps, float wd, int t,                  \
       const int32_t *t_dev))

/* A backend: one function pointer per op of the list above, named as the op. */
#define HONE_BACKEND_FIELD(P, ret, name, params) ret(*name) params;
typedef struct hone_kbackend {
    HONE_BACKEND_OPS(HONE_BACKEND_FIELD, _)
} hone_kbackend;

#ifdef __cplusplus
extern "C" {
#endif

/* The backends' functions: cpu_xxx in kernels/cpu/, cuda_xxx in kernels/cuda/. */
#define HONE_BACKEND_PROTO(P, ret, name, params) ret P##_##name params;
/* cpu_device_count() returns 0 and cpu_device_name HONE_ENOTSUP; they exist for symmetry. */
HONE_BACKEND_OPS(HONE_BACKEND_PROTO, cpu)
#ifdef HONE_HAVE_CUDA
/* cuda_ctx_init: pick the current device, create stream/handles, store them in k->cuda; return
 * HONE_ENOTSUP when no GPU is visible. cuda_device_count() must return 0 (not fail) then. */
HONE_BACKEND_OPS(HONE_BACKEND_PROTO, cuda)
#endif

#ifdef __cplusplus
}
#endif

#endif
