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
 * gather_images (one pass per output pixel; every step in float, in this order, products and sums
 *   rounded separately: the CUDA backend uses __fmul_rn/__fadd_rn so nothing is fused):
 *   b = base_dev ? *base_dev : base; image i < n reads source row r = idx ? idx[b + i] : b + i
 *   (h*w*c uint8, HWC) and writes dst[i] as c planes of h*w floats (NCHW). Without aug no draws
 *   are made and the counter is not touched. With aug: c0 = *counter, u_s = hone_rng_u32(seed,
 *   c0, 8*i + s), f_s = hone_rng_unit(seed, c0, 8*i + s); after every image has read c0,
 *   *counter = c0 + 1.
 *   - crop and flip: p = crop_padding; dx = (int)((u_0 >> 1) % (2p+1)) - p, dy = (int)((u_0 >>
 *     17) % (2p+1)) - p (p == 0: 0); flip = aug.flip && (u_0 & 1). Output (y, x) reads source
 *     (sy, sx) = (y - dy, x - dx), then sx = w - 1 - sx when flipped; outside the image every
 *     channel is 0 (a black pixel: the image is padded before normalisation, as torchvision's
 *     RandomCrop(padding) does). v = pixel * (1.0f / 255.0f).
 *   - jitter j > 0: a_s = (1.0f - j) + (2.0f * j) * f_s, s = 1 (brightness), 2 (contrast), 3
 *     (saturation); G = the sum over all output pixels of their integer luma (c == 1: the value;
 *     c == 3: (19595 R + 38470 G + 7471 B + 32768) >> 16; padding 0); m = (float)((double)G /
 *     (255.0 * h * w)). Per channel value, clamped to [0, 1] after each step: contrast v = m +
 *     a_2 * (v - m); brightness v = v * a_1; then for c == 3 saturation: g = 0.299f r + 0.587f g
 *     + 0.114f b (left to right) and v = g + a_3 * (v - g). Grey images: contrast, brightness.
 *   - normalise: out = (v - mean[ch]) * inv_std[ch].
 *   - cutout s > 0: cy = u_4 % h, cx = u_5 % w; output pixels with cy - s/2 <= y < cy - s/2 + s
 *     and cx - s/2 <= x < cx - s/2 + s are 0 in every channel (the mean, after normalisation).
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

/* ------------------------------------------------------------------ gather_images, shared
 * The per-image draws and the per-pixel arithmetic of gather_images (described above), written
 * once for both backends. Float products and sums go through HONE_FMUL/HONE_FADD: round-to-nearest
 * intrinsics in CUDA device code, where nvcc would otherwise fuse a*b+c into one FMA and round
 * once; plain operators on the host (the build targets no FMA there: see cpu/data.c). */
#ifdef __CUDA_ARCH__
#define HONE_FMUL(a, b) __fmul_rn((a), (b))
#define HONE_FADD(a, b) __fadd_rn((a), (b))
#else
#define HONE_FMUL(a, b) ((float)((a) * (b)))
#define HONE_FADD(a, b) ((float)((a) + (b)))
#endif

typedef struct hone_aug_draw {
    int flip, dx, dy;    /* mirror, crop offset */
    int y0, x0, cut;     /* cutout square: rows [y0, y0+cut), columns [x0, x0+cut); cut 0: none */
    float a_b, a_c, a_s; /* brightness, contrast, saturation factors (jitter) */
} hone_aug_draw;

HONE_HD void hone_aug_draw_image(const hone_kaugment *a, int h, int w, uint64_t c0, int i,
                                 hone_aug_draw *d)
{
    uint64_t s = a->seed, j = (uint64_t)i * 8;
    uint32_t u = hone_rng_u32(s, c0, j);
    d->flip = a->flip && (u & 1u);
    d->dx = d->dy = 0;
    if (a->crop_padding > 0) {
        uint32_t span = (uint32_t)(2 * a->crop_padding + 1);
        d->dx = (int)((u >> 1) % span) - a->crop_padding;
        d->dy = (int)((u >> 17) % span) - a->crop_padding;
    }
    d->a_b = d->a_c = d->a_s = 1.0f;
    if (a->jitter > 0.0f) {
        float lo = 1.0f - a->jitter, span = 2.0f * a->jitter;
        d->a_b = HONE_FADD(lo, HONE_FMUL(span, hone_rng_unit(s, c0, j + 1)));
        d->a_c = HONE_FADD(lo, HONE_FMUL(span, hone_rng_unit(s, c0, j + 2)));
        d->a_s = HONE_FADD(lo, HONE_FMUL(span, hone_rng_unit(s, c0, j + 3)));
    }
    d->cut = a->cutout;
    d->y0 = d->x0 = 0;
    if (d->cut > 0) {
        d->y0 = (int)(hone_rng_u32(s, c0, j + 4) % (uint32_t)h) - d->cut / 2;
        d->x0 = (int)(hone_rng_u32(s, c0, j + 5) % (uint32_t)w) - d->cut / 2;
    }
}

/* Offset of output (y, x)'s source pixel inside its image (in pixels), or -1 for padding. */
HONE_HD int hone_aug_source(const hone_aug_draw *d, int h, int w, int y, int x)
{
    int sy = y - d->dy, sx = x - d->dx;
    if (d->flip)
        sx = w - 1 - sx;
    return sy >= 0 && sy < h && sx >= 0 && sx < w ? sy * w + sx : -1;
}

/* Integer luma of one pixel (c == 1: its value; c >= 3: ITU-R 601-2 as data/ converts). */
HONE_HD uint32_t hone_aug_luma(const uint8_t *p, int c)
{
    if (c < 3)
        return p[0];
    return (19595u * p[0] + 38470u * p[1] + 7471u * p[2] + 32768u) >> 16;
}

HONE_HD float hone_aug_clamp01(float v)
{
    return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
}

/* One output pixel's c values into out[ch * plane]: p is the source pixel (NULL: padding), m the
 * image's contrast mean (used when jitter), mean/inv_std the normalisation. */
HONE_HD void hone_aug_pixel(const uint8_t *p, int c, const hone_aug_draw *d, int jitter, float m,
                            int cut, const float *mean, const float *inv_std, float *out,
                            size_t plane)
{
    float v[4];
    for (int ch = 0; ch < c; ch++)
        v[ch] = p ? HONE_FMUL((float)p[ch], 1.0f / 255.0f) : 0.0f;
    if (jitter) {
        for (int ch = 0; ch < c; ch++) {
            float t = HONE_FADD(m, HONE_FMUL(d->a_c, HONE_FADD(v[ch], -m)));
            v[ch] = hone_aug_clamp01(HONE_FMUL(hone_aug_clamp01(t), d->a_b));
        }
        if (c == 3) {
            float g = HONE_FADD(HONE_FADD(HONE_FMUL(0.299f, v[0]), HONE_FMUL(0.587f, v[1])),
                                HONE_FMUL(0.114f, v[2]));
            for (int ch = 0; ch < 3; ch++)
                v[ch] = hone_aug_clamp01(HONE_FADD(g, HONE_FMUL(d->a_s, HONE_FADD(v[ch], -g))));
        }
    }
    for (int ch = 0; ch < c; ch++)
        out[(size_t)ch * plane] = cut ? 0.0f : HONE_FMUL(HONE_FADD(v[ch], -mean[ch]), inv_std[ch]);
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
 * (y > 0), db may be NULL. batchnorm with relu (fwd relu = 1, bwd y_relu non-NULL): y =
 * max(0, bn(x)); bwd runs as with dy[i] replaced by y_relu[i] > 0 ? dy[i] : 0 (a select). */

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
    X(P, int, device_uuid, (int i, char *buf, size_t len))                                         \
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
    X(P, const char *, conv_impl, (hone_kctx * k))                                                 \
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
       float *save_mean, float *save_invstd, float *y, int relu))                                  \
    X(P, int, batchnorm_bwd,                                                                       \
      (hone_kctx * k, int n, int c, int hw, const float *x, const float *y_relu, const float *dy,  \
       const float *gamma, const float *save_mean, const float *save_invstd, float *dx,            \
       float *dgamma, float *dbeta))                                                               \
    /* loss.{c,cu}: loss and reductions */                                                         \
    X(P, int, softmax_xent,                                                                        \
      (hone_kctx * k, const float *logits, const int32_t *labels, int n, int classes,              \
       float *dlogits, float *loss_sum, float *correct))                                           \
    X(P, int, sum, (hone_kctx * k, const float *x, size_t n, float *out))                          \
    /* detect.{c,cu}: the DetectNet_v2 grid head's loss */                                         \
    X(P, int, detect_loss,                                                                         \
      (hone_kctx * k, const float *pred, const float *target, int n, int classes, int hw,          \
       float cov_weight, float bg_weight, float bbox_weight, float *dpred, float *loss_sum))       \
    /* data.{c,cu}: data on the device */                                                          \
    X(P, int, gather_rows,                                                                         \
      (hone_kctx * k, const float *src, const int32_t *src_labels, const int32_t *idx,             \
       const int32_t *base_dev, int base, int n, int row, float *dst, int32_t *dst_labels))        \
    X(P, int, counter_add, (hone_kctx * k, int32_t * counter, int step))                           \
    X(P, int, permutation, (hone_kctx * k, int32_t * idx, int n, uint64_t seed, uint64_t epoch))   \
    X(P, int, gather_images,                                                                       \
      (hone_kctx * k, const uint8_t *src, const int32_t *src_labels, const int32_t *idx,           \
       const int32_t *base_dev, int base, int n, int c, int h, int w, const float *mean,           \
       const float *inv_std, const hone_kaugment *aug, uint64_t *counter, float *dst,              \
       int32_t *dst_labels))                                                                       \
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
/* cpu_device_count() returns 0, cpu_device_name and cpu_device_uuid HONE_ENOTSUP; they exist for
 * symmetry. */
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
