/* kernels/dispatch.c: the public hone_k_* API. Validates arguments, then calls the op in the
 * context's backend table (one per backend, built from backend.h's list of ops). Holds no state of
 * its own; a build without CUDA has no CUDA table and answers HONE_ENOTSUP for a CUDA context. */
#include <stdlib.h>
#include <unistd.h>

#include "backend.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            return HONE_EINVAL;                                                                    \
    } while (0)

/* ------------------------------------------------------------------ the backends */

#define OP_ENTRY(P, ret, name, params) .name = P##_##name,
static const hone_kbackend cpu_backend = {HONE_BACKEND_OPS(OP_ENTRY, cpu)};
#ifdef HONE_HAVE_CUDA
static const hone_kbackend cuda_backend = {HONE_BACKEND_OPS(OP_ENTRY, cuda)};
#endif

/* By device; NULL where this build has no backend. */
static const hone_kbackend *const backends[HONE_DEV_CUDA + 1] = {
    [HONE_DEV_CPU] = &cpu_backend,
#ifdef HONE_HAVE_CUDA
    [HONE_DEV_CUDA] = &cuda_backend,
#endif
};

int hone_cuda_available(void)
{
    return hone_cuda_device_count() > 0;
}

int hone_cuda_device_count(void)
{
    const hone_kbackend *cu = backends[HONE_DEV_CUDA];
    return cu ? cu->device_count() : 0;
}

int hone_cuda_device_name(int i, char *buf, size_t len, size_t *mem_bytes)
{
    if (!buf || len == 0 || i < 0)
        return HONE_EINVAL;
    const hone_kbackend *cu = backends[HONE_DEV_CUDA];
    return cu ? cu->device_name(i, buf, len, mem_bytes) : HONE_ENOTSUP;
}

int hone_cuda_device_uuid(int i, char *buf, size_t len)
{
    if (!buf || len == 0 || i < 0)
        return HONE_EINVAL;
    const hone_kbackend *cu = backends[HONE_DEV_CUDA];
    return cu ? cu->device_uuid(i, buf, len) : HONE_ENOTSUP;
}

int hone_kctx_new(hone_device dev, int threads, hone_kctx **out)
{
    *out = NULL;
    if (dev != HONE_DEV_CPU && dev != HONE_DEV_CUDA)
        return HONE_EINVAL;
    if (threads < 0)
        return HONE_EINVAL;
    if (!backends[dev])
        return HONE_ENOTSUP;
    if (threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)n : 1;
    }
    hone_kctx *k = hone_xcalloc(1, sizeof(*k));
    k->dev = dev;
    k->ops = backends[dev];
    k->threads = threads;
    k->math = HONE_MATH_FP32;
    int rc = k->ops->ctx_init(k);
    if (rc < 0) {
        free(k);
        return rc;
    }
    *out = k;
    return HONE_OK;
}

void hone_kctx_free(hone_kctx *k)
{
    if (!k)
        return;
    k->ops->ctx_release(k);
    free(k);
}

hone_device hone_kctx_device(const hone_kctx *k)
{
    return k->dev;
}

void hone_k_set_math(hone_kctx *k, hone_math m)
{
    if (m == HONE_MATH_FP32 || m == HONE_MATH_TF32 || m == HONE_MATH_BF16)
        k->math = m;
}

void *hone_k_alloc(hone_kctx *k, size_t bytes)
{
    return k->ops->alloc(k, bytes);
}

void hone_k_free(hone_kctx *k, void *p)
{
    if (!p)
        return;
    k->ops->free(k, p);
}

int hone_k_upload(hone_kctx *k, void *dst, const void *host_src, size_t bytes)
{
    if (bytes == 0)
        return HONE_OK;
    CHECK(dst && host_src);
    return k->ops->upload(k, dst, host_src, bytes);
}

int hone_k_download(hone_kctx *k, void *host_dst, const void *src, size_t bytes)
{
    if (bytes == 0)
        return HONE_OK;
    CHECK(host_dst && src);
    return k->ops->download(k, host_dst, src, bytes);
}

int hone_k_copy(hone_kctx *k, void *dst, const void *src, size_t bytes)
{
    if (bytes == 0)
        return HONE_OK;
    CHECK(dst && src);
    return k->ops->copy(k, dst, src, bytes);
}

int hone_k_fill(hone_kctx *k, float *x, float v, size_t n)
{
    if (n == 0)
        return HONE_OK;
    CHECK(x);
    return k->ops->fill(k, x, v, n);
}

int hone_k_sync(hone_kctx *k)
{
    return k->ops->sync(k);
}

int hone_kgraph_capture(hone_kctx *k, void (*fn)(void *arg), void *arg, hone_kgraph **out)
{
    *out = NULL;
    CHECK(fn);
    hone_kgraph *g = hone_xcalloc(1, sizeof(*g));
    g->k = k;
    g->fn = fn;
    g->arg = arg;
    int rc = k->ops->graph_capture(k, g);
    if (rc < 0) {
        free(g);
        return rc;
    }
    *out = g;
    return HONE_OK;
}

int hone_kgraph_launch(hone_kctx *k, hone_kgraph *g)
{
    CHECK(g && g->k == k);
    return k->ops->graph_launch(k, g);
}

void hone_kgraph_free(hone_kgraph *g)
{
    if (!g)
        return;
    g->k->ops->graph_release(g);
    free(g);
}

/* ------------------------------------------------------------------ dense */

int hone_k_gemm(hone_kctx *k, int transA, int transB, int M, int N, int K, float alpha,
                const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    CHECK(M >= 0 && N >= 0 && K >= 0);
    if (M == 0 || N == 0)
        return HONE_OK;
    CHECK(A && B && C);
    CHECK(lda >= (transA ? M : K) && lda >= 1);
    CHECK(ldb >= (transB ? K : N) && ldb >= 1);
    CHECK(ldc >= N);
    return k->ops->gemm(k, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

int hone_k_bias_add(hone_kctx *k, float *y, const float *b, int n, int c)
{
    CHECK(n >= 0 && c >= 0 && y && b);
    if (n == 0 || c == 0)
        return HONE_OK;
    return k->ops->bias_add(k, y, b, n, c);
}

int hone_k_bias_grad(hone_kctx *k, float *db, const float *dy, int n, int c, int accumulate)
{
    CHECK(n >= 0 && c > 0 && db && dy);
    return k->ops->bias_grad(k, db, dy, n, c, accumulate);
}

/* Packed trials: each problem is checked as its single op would be; the strides are the
 * caller's (problems may interleave, as long as no two write the same element). */
int hone_k_gemm_batched(hone_kctx *k, int transA, int transB, int M, int N, int K, float alpha,
                        const float *A, int lda, size_t strideA, const float *B, int ldb,
                        size_t strideB, float beta, float *C, int ldc, size_t strideC, int count)
{
    CHECK(M >= 0 && N >= 0 && K >= 0 && count >= 0);
    if (M == 0 || N == 0 || count == 0)
        return HONE_OK;
    CHECK(A && B && C);
    CHECK(lda >= (transA ? M : K) && lda >= 1);
    CHECK(ldb >= (transB ? K : N) && ldb >= 1);
    CHECK(ldc >= N);
    return k->ops->gemm_batched(k, transA, transB, M, N, K, alpha, A, lda, strideA, B, ldb, strideB,
                                beta, C, ldc, strideC, count);
}

int hone_k_bias_add_batched(hone_kctx *k, float *y, const float *b, size_t b_stride, int n, int c,
                            int count)
{
    CHECK(n >= 0 && c >= 0 && count >= 0 && y && b);
    if (n == 0 || c == 0 || count == 0)
        return HONE_OK;
    CHECK(count == 1 || b_stride >= (size_t)c);
    return k->ops->bias_add_batched(k, y, b, b_stride, n, c, count);
}

int hone_k_bias_grad_batched(hone_kctx *k, float *db, size_t db_stride, const float *dy, int n,
                             int c, int accumulate, int count)
{
    CHECK(n >= 0 && c > 0 && count >= 0 && db && dy);
    if (count == 0)
        return HONE_OK;
    CHECK(count == 1 || db_stride >= (size_t)c);
    return k->ops->bias_grad_batched(k, db, db_stride, dy, n, c, accumulate, count);
}

/* ------------------------------------------------------------------ convolution */

int hone_conv_desc_init(hone_conv_desc *d, int n, int c, int h, int w, int k, int r, int s,
                        int stride, int pad)
{
    CHECK(d && n > 0 && c > 0 && h > 0 && w > 0 && k > 0 && r > 0 && s > 0 && stride > 0 &&
          pad >= 0);
    CHECK(h + 2 * pad >= r && w + 2 * pad >= s);
    d->n = n;
    d->c = c;
    d->h = h;
    d->w = w;
    d->k = k;
    d->r = r;
    d->s = s;
    d->stride = stride;
    d->pad = pad;
    d->p = (h + 2 * pad - r) / stride + 1;
    d->q = (w + 2 * pad - s) / stride + 1;
    return HONE_OK;
}

static int conv_desc_ok(const hone_conv_desc *d)
{
    hone_conv_desc e;
    return d &&
           hone_conv_desc_init(&e, d->n, d->c, d->h, d->w, d->k, d->r, d->s, d->stride, d->pad) ==
               0 &&
           e.p == d->p && e.q == d->q;
}

size_t hone_k_conv_workspace(hone_kctx *k, const hone_conv_desc *d)
{
    if (!conv_desc_ok(d))
        return 0;
    return k->ops->conv_workspace(k, d);
}

int hone_k_conv_fwd(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                    const float *b, float *y, void *ws)
{
    CHECK(conv_desc_ok(d) && x && w && y);
    CHECK(ws || hone_k_conv_workspace(k, d) == 0);
    return k->ops->conv_fwd(k, d, x, w, b, y, ws);
}

int hone_k_conv_bwd(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                    const float *dy, float *dx, float *dw, float *db, void *ws)
{
    CHECK(conv_desc_ok(d) && x && w && dy && dw);
    CHECK(ws || hone_k_conv_workspace(k, d) == 0);
    return k->ops->conv_bwd(k, d, x, w, dy, dx, dw, db, ws);
}

int hone_k_conv_bwd_reuse(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                          const float *dy, float *dx, float *dw, float *db, void *ws)
{
    CHECK(conv_desc_ok(d) && x && w && dy && dw);
    CHECK(ws || hone_k_conv_workspace(k, d) == 0);
    return k->ops->conv_bwd_reuse(k, d, x, w, dy, dx, dw, db, ws);
}

int hone_k_conv_bwd_acc(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                        const float *dy, float *dx, float *dw, float *db, void *ws, int reuse)
{
    CHECK(conv_desc_ok(d) && x && w && dy && dx && dw);
    CHECK(ws || hone_k_conv_workspace(k, d) == 0);
    return k->ops->conv_bwd_acc(k, d, x, w, dy, dx, dw, db, ws, reuse != 0);
}

const char *hone_k_conv_impl(hone_kctx *k)
{
    return k->ops->conv_impl(k);
}

size_t hone_k_conv_workspace_batched(hone_kctx *k, const hone_conv_desc *d, int trials)
{
    if (!conv_desc_ok(d) || trials < 1)
        return 0;
    return k->ops->conv_workspace_batched(k, d, trials);
}

/* A trial's filters (k*c*r*s floats) and bias (k) must not overlap the next trial's. */
static int conv_batch_ok(const hone_conv_desc *d, int trials, size_t w_stride, size_t b_stride,
                         int has_b)
{
    size_t nw = (size_t)d->k * d->c * d->r * d->s;
    return trials >= 1 && (trials == 1 || (w_stride >= nw && (!has_b || b_stride >= (size_t)d->k)));
}

int hone_k_conv_fwd_batched(hone_kctx *k, const hone_conv_desc *d, int trials, const float *x,
                            const float *w, size_t w_stride, const float *b, size_t b_stride,
                            float *y, void *ws)
{
    CHECK(conv_desc_ok(d) && x && w && y &&
          conv_batch_ok(d, trials, w_stride, b_stride, b != NULL));
    CHECK(ws || hone_k_conv_workspace_batched(k, d, trials) == 0);
    return k->ops->conv_fwd_batched(k, d, trials, x, w, w_stride, b, b_stride, y, ws);
}

int hone_k_conv_bwd_batched(hone_kctx *k, const hone_conv_desc *d, int trials, const float *x,
                            const float *w, size_t w_stride, const float *dy, float *dx, float *dw,
                            float *db, size_t b_stride, void *ws, int reuse)
{
    CHECK(conv_desc_ok(d) && x && w && dy && dw &&
          conv_batch_ok(d, trials, w_stride, b_stride, db != NULL));
    CHECK(ws || hone_k_conv_workspace_batched(k, d, trials) == 0);
    return k->ops->conv_bwd_batched(k, d, trials, x, w, w_stride, dy, dx, dw, db, b_stride, ws,
                                    reuse != 0);
}

/* ------------------------------------------------------------------ pooling, resampling */

static int pool_ok(int n, int c, int h, int w, int size, int stride)
{
    return n > 0 && c > 0 && size > 0 && stride > 0 && h >= size && w >= size;
}

int hone_k_maxpool_fwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                       const float *x, float *y, int32_t *idx)
{
    CHECK(pool_ok(n, c, h, w, size, stride) && x && y && idx);
    return k->ops->maxpool_fwd(k, n, c, h, w, size, stride, x, y, idx);
}

int hone_k_maxpool_bwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                       const float *dy, const int32_t *idx, float *dx)
{
    CHECK(pool_ok(n, c, h, w, size, stride) && dy && idx && dx);
    return k->ops->maxpool_bwd(k, n, c, h, w, size, stride, dy, idx, dx);
}

int hone_k_maxpool_relu_fwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                            const float *x, float *y, int32_t *idx)
{
    CHECK(pool_ok(n, c, h, w, size, stride) && x && y && idx);
    return k->ops->maxpool_relu_fwd(k, n, c, h, w, size, stride, x, y, idx);
}

int hone_k_maxpool_relu_bwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                            const float *y, const float *dy, const int32_t *idx, float *dx)
{
    CHECK(pool_ok(n, c, h, w, size, stride) && y && dy && idx && dx);
    return k->ops->maxpool_relu_bwd(k, n, c, h, w, size, stride, y, dy, idx, dx);
}

static int pool_pad_ok(int n, int c, int h, int w, int size, int stride, int pad)
{
    return n > 0 && c > 0 && h > 0 && w > 0 && size > 0 && stride > 0 && pad >= 0 && pad < size &&
           h + 2 * pad >= size && w + 2 * pad >= size;
}

int hone_k_maxpool_pad_fwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride, int pad,
                           const float *x, float *y, int32_t *idx)
{
    CHECK(pool_pad_ok(n, c, h, w, size, stride, pad) && x && y && idx);
    return k->ops->maxpool_pad_fwd(k, n, c, h, w, size, stride, pad, x, y, idx);
}

int hone_k_maxpool_pad_bwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride, int pad,
                           const float *dy, const int32_t *idx, float *dx)
{
    CHECK(pool_pad_ok(n, c, h, w, size, stride, pad) && dy && idx && dx);
    return k->ops->maxpool_pad_bwd(k, n, c, h, w, size, stride, pad, dy, idx, dx);
}

int hone_k_avgpool_global_fwd(hone_kctx *k, int n, int c, int h, int w, const float *x, float *y)
{
    CHECK(n > 0 && c > 0 && h > 0 && w > 0 && x && y);
    return k->ops->avgpool_global_fwd(k, n, c, h, w, x, y);
}

int hone_k_avgpool_global_bwd(hone_kctx *k, int n, int c, int h, int w, const float *dy, float *dx)
{
    CHECK(n > 0 && c > 0 && h > 0 && w > 0 && dy && dx);
    return k->ops->avgpool_global_bwd(k, n, c, h, w, dy, dx);
}

int hone_k_upsample_fwd(hone_kctx *k, int n, int c, int h, int w, int factor, const float *x,
                        float *y)
{
    CHECK(n > 0 && c > 0 && h > 0 && w > 0 && factor > 0 && x && y);
    return k->ops->upsample_fwd(k, n, c, h, w, factor, x, y);
}

int hone_k_upsample_bwd(hone_kctx *k, int n, int c, int h, int w, int factor, const float *dy,
                        float *dx)
{
    CHECK(n > 0 && c > 0 && h > 0 && w > 0 && factor > 0 && dy && dx);
    return k->ops->upsample_bwd(k, n, c, h, w, factor, dy, dx);
}

/* ------------------------------------------------------------------ elementwise */

int hone_k_relu_fwd(hone_kctx *k, const float *x, float *y, size_t n)
{
    if (n == 0)
        return HONE_OK;
    CHECK(x && y);
    return k->ops->relu_fwd(k, x, y, n);
}

int hone_k_relu_bwd(hone_kctx *k, const float *y, const float *dy, float *dx, size_t n)
{
    if (n == 0)
        return HONE_OK;
    CHECK(y && dy && dx);
    return k->ops->relu_bwd(k, y, dy, dx, n);
}

int hone_k_sigmoid_fwd(hone_kctx *k, const float *x, float *y, size_t n)
{
    if (n == 0)
        return HONE_OK;
    CHECK(x && y);
    return k->ops->sigmoid_fwd(k, x, y, n);
}

int hone_k_sigmoid_bwd(hone_kctx *k, const float *y, const float *dy, float *dx, size_t n)
{
    if (n == 0)
        return HONE_OK;
    CHECK(y && dy && dx);
    return k->ops->sigmoid_bwd(k, y, dy, dx, n);
}

int hone_k_dropout_fwd(hone_kctx *k, const float *x, float *y, uint8_t *mask, size_t n, float p,
                       uint64_t seed, uint64_t *counter)
{
    CHECK(p >= 0.0f && p < 1.0f && counter);
    CHECK(n == 0 || (x && y && mask));
    return k->ops->dropout_fwd(k, x, y, mask, n, p, seed, counter);
}

int hone_k_dropout_bwd(hone_kctx *k, const float *dy, const uint8_t *mask, float *dx, size_t n,
                       float p)
{
    CHECK(p >= 0.0f && p < 1.0f);
    if (n == 0)
        return HONE_OK;
    CHECK(dy && mask && dx);
    return k->ops->dropout_bwd(k, dy, mask, dx, n, p);
}

int hone_k_add_relu_fwd(hone_kctx *k, const float *a, const float *b, float *y, size_t n)
{
    if (n == 0)
        return HONE_OK;
    CHECK(a && b && y);
    return k->ops->add_relu_fwd(k, a, b, y, n);
}

int hone_k_add_relu_bwd(hone_kctx *k, const float *y, const float *dy, float *da, float *db,
                        size_t n)
{
    if (n == 0)
        return HONE_OK;
    CHECK(y && dy && da);
    return k->ops->add_relu_bwd(k, y, dy, da, db, n);
}

int hone_k_axpy(hone_kctx *k, float a, const float *x, float *y, size_t n)
{
    if (n == 0)
        return HONE_OK;
    CHECK(x && y);
    return k->ops->axpy(k, a, x, y, n);
}

int hone_k_scale(hone_kctx *k, float *x, float a, size_t n)
{
    if (n == 0)
        return HONE_OK;
    CHECK(x);
    return k->ops->scale(k, x, a, n);
}

/* ------------------------------------------------------------------ batch norm */

static int bn_fwd(hone_kctx *k, int n, int c, int hw, const float *x, const float *gamma,
                  const float *beta, float *running_mean, float *running_var, float momentum,
                  float eps, int training, float *save_mean, float *save_invstd, float *y, int relu)
{
    CHECK(n > 0 && c > 0 && hw > 0 && x && gamma && beta && running_mean && running_var && y);
    CHECK(eps > 0.0f && momentum >= 0.0f && momentum <= 1.0f);
    CHECK(!training || (save_mean && save_invstd));
    return k->ops->batchnorm_fwd(k, n, c, hw, x, gamma, beta, running_mean, running_var, momentum,
                                 eps, training, save_mean, save_invstd, y, relu);
}

int hone_k_batchnorm_fwd(hone_kctx *k, int n, int c, int hw, const float *x, const float *gamma,
                         const float *beta, float *running_mean, float *running_var, float momentum,
                         float eps, int training, float *save_mean, float *save_invstd, float *y)
{
    return bn_fwd(k, n, c, hw, x, gamma, beta, running_mean, running_var, momentum, eps, training,
                  save_mean, save_invstd, y, 0);
}

int hone_k_batchnorm_relu_fwd(hone_kctx *k, int n, int c, int hw, const float *x,
                              const float *gamma, const float *beta, float *running_mean,
                              float *running_var, float momentum, float eps, int training,
                              float *save_mean, float *save_invstd, float *y)
{
    return bn_fwd(k, n, c, hw, x, gamma, beta, running_mean, running_var, momentum, eps, training,
                  save_mean, save_invstd, y, 1);
}

int hone_k_batchnorm_bwd(hone_kctx *k, int n, int c, int hw, const float *x, const float *dy,
                         const float *gamma, const float *save_mean, const float *save_invstd,
                         float *dx, float *dgamma, float *dbeta)
{
    CHECK(n > 0 && c > 0 && hw > 0 && x && dy && gamma && save_mean && save_invstd && dx &&
          dgamma && dbeta);
    return k->ops->batchnorm_bwd(k, n, c, hw, x, NULL, dy, gamma, save_mean, save_invstd, dx,
                                 dgamma, dbeta);
}

int hone_k_batchnorm_relu_bwd(hone_kctx *k, int n, int c, int hw, const float *x, const float *y,
                              const float *dy, const float *gamma, const float *save_mean,
                              const float *save_invstd, float *dx, float *dgamma, float *dbeta)
{
    CHECK(n > 0 && c > 0 && hw > 0 && x && y && dy && gamma && save_mean && save_invstd && dx &&
          dgamma && dbeta);
    return k->ops->batchnorm_bwd(k, n, c, hw, x, y, dy, gamma, save_mean, save_invstd, dx, dgamma,
                                 dbeta);
}

/* ------------------------------------------------------------------ bf16 NHWC activations */

/* Elements of an [n, c, hw] tensor; 0 when a count is not positive or the total passes 2^31
 * (the CUDA kernels index with 32 bits). */
static size_t h_elems(int n, int c, int hw)
{
    if (n <= 0 || c <= 0 || hw <= 0)
        return 0;
    size_t t = (size_t)n * (size_t)c * (size_t)hw;
    return t < ((size_t)1 << 31) ? t : 0;
}

int hone_k_to_nhwc_h(hone_kctx *k, int n, int c, int hw, const float *x, hone_bf16 *y)
{
    CHECK(h_elems(n, c, hw) && x && y);
    return k->ops->to_nhwc_h(k, n, c, hw, x, y);
}

int hone_k_from_nhwc_h(hone_kctx *k, int n, int c, int hw, const hone_bf16 *x, float *y)
{
    CHECK(h_elems(n, c, hw) && x && y);
    return k->ops->from_nhwc_h(k, n, c, hw, x, y);
}

int hone_k_conv_weights_h(hone_kctx *k, const hone_conv_desc *d, const float *w, hone_bf16 *wh)
{
    CHECK(conv_desc_ok(d) && w && wh);
    return k->ops->conv_weights_h(k, d, w, wh);
}

/* The bf16 convolutions also need 32-bit element counts for both activations. */
static int conv_h_ok(const hone_conv_desc *d)
{
    return conv_desc_ok(d) && h_elems(d->n, d->c, d->h * d->w) && h_elems(d->n, d->k, d->p * d->q);
}

int hone_k_conv_workspace_h(hone_kctx *k, const hone_conv_desc *d, size_t *bytes)
{
    CHECK(conv_h_ok(d) && bytes);
    *bytes = 0;
    return k->ops->conv_workspace_h(k, d, bytes);
}

int hone_k_conv_fwd_h(hone_kctx *k, const hone_conv_desc *d, const hone_bf16 *x,
                      const hone_bf16 *wh, hone_bf16 *y, void *ws)
{
    CHECK(conv_h_ok(d) && x && wh && y);
    return k->ops->conv_fwd_h(k, d, x, wh, y, ws);
}

int hone_k_conv_bwd_h(hone_kctx *k, const hone_conv_desc *d, const hone_bf16 *x,
                      const hone_bf16 *wh, const hone_bf16 *dy, hone_bf16 *dx, int acc, float *dw,
                      void *ws)
{
    CHECK(conv_h_ok(d) && x && wh && dy && dw && (dx || !acc));
    return k->ops->conv_bwd_h(k, d, x, wh, dy, dx, acc, dw, ws);
}

static int bn_fwd_h(hone_kctx *k, int m, int c, const hone_bf16 *x, const float *gamma,
                    const float *beta, float *running_mean, float *running_var, float momentum,
                    float eps, int training, float *save_mean, float *save_invstd,
                    const hone_bf16 *skip, hone_bf16 *y, int relu)
{
    CHECK(h_elems(m, c, 1) && x && gamma && beta && running_mean && running_var && y);
    CHECK(eps > 0.0f && momentum >= 0.0f && momentum <= 1.0f);
    CHECK(!training || (save_mean && save_invstd));
    return k->ops->batchnorm_fwd_h(k, m, c, x, gamma, beta, running_mean, running_var, momentum,
                                   eps, training, save_mean, save_invstd, skip, y, relu != 0);
}

int hone_k_batchnorm_fwd_h(hone_kctx *k, int m, int c, const hone_bf16 *x, const float *gamma,
                           const float *beta, float *running_mean, float *running_var,
                           float momentum, float eps, int training, float *save_mean,
                           float *save_invstd, hone_bf16 *y, int relu)
{
    return bn_fwd_h(k, m, c, x, gamma, beta, running_mean, running_var, momentum, eps, training,
                    save_mean, save_invstd, NULL, y, relu);
}

int hone_k_batchnorm_add_relu_fwd_h(hone_kctx *k, int m, int c, const hone_bf16 *x,
                                    const float *gamma, const float *beta, float *running_mean,
                                    float *running_var, float momentum, float eps, int training,
                                    float *save_mean, float *save_invstd, const hone_bf16 *skip,
                                    hone_bf16 *y)
{
    CHECK(skip);
    return bn_fwd_h(k, m, c, x, gamma, beta, running_mean, running_var, momentum, eps, training,
                    save_mean, save_invstd, skip, y, 1);
}

int hone_k_batchnorm_bwd_h(hone_kctx *k, int m, int c, const hone_bf16 *x, const hone_bf16 *y_relu,
                           const hone_bf16 *dy, const float *gamma, const float *save_mean,
                           const float *save_invstd, hone_bf16 *dx, float *dgamma, float *dbeta)
{
    CHECK(h_elems(m, c, 1) && x && dy && gamma && save_mean && save_invstd && dx && dgamma &&
          dbeta);
    CHECK(dx != x && dx != dy && dx != y_relu);
    return k->ops->batchnorm_bwd_h(k, m, c, x, y_relu, dy, gamma, save_mean, save_invstd, dx,
                                   dgamma, dbeta);
}

int hone_k_add_relu_fwd_h(hone_kctx *k, const hone_bf16 *a, const hone_bf16 *b, hone_bf16 *y,
                          size_t n)
{
    if (n == 0)
        return HONE_OK;
    CHECK(a && b && y && n < ((size_t)1 << 31));
    return k->ops->add_relu_fwd_h(k, a, b, y, n);
}

int hone_k_add_relu_bwd_h(hone_kctx *k, const hone_bf16 *y, const hone_bf16 *dy, hone_bf16 *da,
                          hone_bf16 *db, size_t n)
{
    if (n == 0)
        return HONE_OK;
    CHECK(y && dy && da && n < ((size_t)1 << 31));
    return k->ops->add_relu_bwd_h(k, y, dy, da, db, n);
}

/* The padded pool's shape: pad < size, positive output sides, 32-bit element counts. */
static int pool_h_ok(int n, int c, int h, int w, int size, int stride, int pad)
{
    if (size <= 0 || stride <= 0 || pad < 0 || pad >= size || !h_elems(n, c, h * w))
        return 0;
    int p = (h + 2 * pad - size) / stride + 1, q = (w + 2 * pad - size) / stride + 1;
    return h + 2 * pad >= size && w + 2 * pad >= size && p > 0 && q > 0;
}

int hone_k_maxpool_pad_fwd_h(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                             int pad, const hone_bf16 *x, hone_bf16 *y, int32_t *idx)
{
    CHECK(pool_h_ok(n, c, h, w, size, stride, pad) && x && y && idx);
    return k->ops->maxpool_pad_fwd_h(k, n, c, h, w, size, stride, pad, x, y, idx);
}

int hone_k_maxpool_pad_bwd_h(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                             int pad, const hone_bf16 *dy, const int32_t *idx, hone_bf16 *dx)
{
    CHECK(pool_h_ok(n, c, h, w, size, stride, pad) && dy && idx && dx);
    return k->ops->maxpool_pad_bwd_h(k, n, c, h, w, size, stride, pad, dy, idx, dx);
}

int hone_k_avgpool_global_fwd_h(hone_kctx *k, int n, int c, int hw, const hone_bf16 *x, float *y)
{
    CHECK(h_elems(n, c, hw) && x && y);
    return k->ops->avgpool_global_fwd_h(k, n, c, hw, x, y);
}

int hone_k_avgpool_global_bwd_h(hone_kctx *k, int n, int c, int hw, const float *dy, hone_bf16 *dx)
{
    CHECK(h_elems(n, c, hw) && dy && dx);
    return k->ops->avgpool_global_bwd_h(k, n, c, hw, dy, dx);
}

/* ------------------------------------------------------------------ losses */

int hone_k_softmax_xent(hone_kctx *k, const float *logits, const int32_t *labels, int n,
                        int classes, float *dlogits, float *loss_sum, float *correct)
{
    CHECK(n > 0 && classes > 0 && logits && labels && loss_sum && correct);
    return k->ops->softmax_xent(k, logits, labels, n, classes, dlogits, loss_sum, correct);
}

int hone_k_detect_loss(hone_kctx *k, const float *pred, const float *target, int n, int classes,
                       int hw, float cov_weight, float bg_weight, float bbox_weight, int cov_loss,
                       float gamma, float *dpred, float *loss_sum)
{
    CHECK(n > 0 && classes > 0 && hw > 0 && pred && target && loss_sum);
    CHECK(cov_loss >= HONE_KCOV_L2 && cov_loss <= HONE_KCOV_FOCAL && gamma >= 0.0f);
    CHECK((size_t)n * 6 * classes * hw <= (size_t)INT32_MAX);
    return k->ops->detect_loss(k, pred, target, n, classes, hw, cov_weight, bg_weight, bbox_weight,
                               cov_loss, gamma, dpred, loss_sum);
}

int hone_k_detect_targets(hone_kctx *k, const hone_kbox *boxes, const uint32_t *box_start,
                          const int32_t *idx, const int32_t *base_dev, int base, int n, int h,
                          int w, const hone_kdet_grid *g, const hone_kaugment *aug,
                          const uint64_t *counter, float *dst)
{
    CHECK(n >= 0 && base >= 0 && h > 0 && w > 0 && boxes && box_start && g && dst);
    CHECK(g->classes > 0 && g->grid_h > 0 && g->grid_w > 0 && g->stride > 0);
    CHECK(g->bbox_norm > 0.0f && g->cov_radius_x > 0.0f && g->cov_radius_y > 0.0f);
    CHECK(g->min_radius >= 0.0f && (g->cov_shape == 0 || g->cov_shape == 1));
    CHECK((size_t)n * 6 * g->classes * g->grid_h * g->grid_w <= (size_t)INT32_MAX);
    if (aug && aug->affine) {
        CHECK(counter && aug->crop_padding == 0 && aug->cutout == 0);
        CHECK(aug->translate >= 0.0f && aug->translate <= 1.0f);
        CHECK(aug->zoom_min > 0.0f && aug->zoom_min <= aug->zoom_max && aug->zoom_max <= 16.0f);
    } else {
        aug = NULL;
    }
    if (n == 0)
        return HONE_OK;
    return k->ops->detect_targets(k, boxes, box_start, idx, base_dev, base, n, h, w, g, aug,
                                  counter, dst);
}

/* ------------------------------------------------------------------ data on the device */

int hone_k_gather_rows(hone_kctx *k, const float *src, const int32_t *src_labels,
                       const int32_t *idx, const int32_t *base_dev, int base, int n, int row,
                       float *dst, int32_t *dst_labels)
{
    CHECK(n >= 0 && row > 0 && src && idx && dst && base >= 0);
    CHECK(!src_labels == !dst_labels);
    if (n == 0)
        return HONE_OK;
    return k->ops->gather_rows(k, src, src_labels, idx, base_dev, base, n, row, dst, dst_labels);
}

int hone_k_counter_add(hone_kctx *k, int32_t *counter, int step)
{
    CHECK(counter);
    return k->ops->counter_add(k, counter, step);
}

int hone_k_permutation(hone_kctx *k, int32_t *idx, int n, uint64_t seed, uint64_t epoch)
{
    CHECK(n >= 0 && (idx || n == 0));
    if (n == 0)
        return HONE_OK;
    return k->ops->permutation(k, idx, n, seed, epoch);
}

int hone_k_gather_images(hone_kctx *k, const uint8_t *src, const int32_t *src_labels,
                         const int32_t *idx, const int32_t *base_dev, int base, int n, int c, int h,
                         int w, const float *mean, const float *inv_std, const hone_kaugment *aug,
                         uint64_t *counter, float *dst, int32_t *dst_labels)
{
    CHECK(n >= 0 && base >= 0 && src && dst && mean && inv_std);
    CHECK(c >= 1 && c <= 4 && h > 0 && w > 0 && (size_t)h * w <= (1u << 24));
    CHECK(!src_labels == !dst_labels);
    if (aug) {
        CHECK(counter && aug->crop_padding >= 0 && aug->crop_padding <= 65535);
        CHECK(aug->jitter >= 0.0f && aug->jitter <= 1.0f);
        CHECK(aug->cutout >= 0 && aug->cutout <= 65535);
        if (aug->affine) {
            CHECK(aug->crop_padding == 0 && aug->cutout == 0);
            CHECK(aug->translate >= 0.0f && aug->translate <= 1.0f);
            CHECK(aug->zoom_min > 0.0f && aug->zoom_min <= aug->zoom_max && aug->zoom_max <= 16.0f);
        }
    }
    return k->ops->gather_images(k, src, src_labels, idx, base_dev, base, n, c, h, w, mean, inv_std,
                                 aug, counter, dst, dst_labels);
}

/* ------------------------------------------------------------------ optimisers */

int hone_k_sgd_step(hone_kctx *k, float *w, const float *grad, float *v, size_t n, float lr,
                    const float *lr_dev, float momentum, float wd, int nesterov)
{
    if (n == 0)
        return HONE_OK;
    CHECK(w && grad && v && momentum >= 0.0f && wd >= 0.0f);
    return k->ops->sgd_step(k, w, grad, v, n, lr, lr_dev, momentum, wd, nesterov);
}

int hone_k_adamw_step(hone_kctx *k, float *w, const float *grad, float *m, float *v, size_t n,
                      float lr, const float *lr_dev, float beta1, float beta2, float eps, float wd,
                      int t, const int32_t *t_dev)
{
    if (n == 0)
        return HONE_OK;
    CHECK(w && grad && m && v && eps > 0.0f && wd >= 0.0f);
    CHECK(beta1 >= 0.0f && beta1 < 1.0f && beta2 >= 0.0f && beta2 < 1.0f);
    CHECK(t_dev || t >= 1);
    return k->ops->adamw_step(k, w, grad, m, v, n, lr, lr_dev, beta1, beta2, eps, wd, t, t_dev);
}

/* ------------------------------------------------------------------ reductions */

int hone_k_sum(hone_kctx *k, const float *x, size_t n, float *out)
{
    CHECK(out && (x || n == 0));
    return k->ops->sum(k, x, n, out);
}
