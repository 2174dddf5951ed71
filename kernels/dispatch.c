/* kernels/dispatch.c: the public hone_k_* API's backends, contexts, memory, graphs, dense and
 * convolution ops (dispatch.h names the files with the rest). Validates arguments, then calls the
 * op in the context's backend table (one per backend, built from backend.h's list of ops). Holds
 * no state of its own; a build without CUDA has no CUDA table and answers HONE_ENOTSUP for a CUDA
 * context. */
#include <stdlib.h>
#include <unistd.h>

#include "dispatch.h"

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

int dispatch__conv_desc_ok(const hone_conv_desc *d)
{
    hone_conv_desc e;
    return d &&
           hone_conv_desc_init(&e, d->n, d->c, d->h, d->w, d->k, d->r, d->s, d->stride, d->pad) ==
               0 &&
           e.p == d->p && e.q == d->q;
}

size_t hone_k_conv_workspace(hone_kctx *k, const hone_conv_desc *d)
{
    if (!dispatch__conv_desc_ok(d))
        return 0;
    return k->ops->conv_workspace(k, d);
}

int hone_k_conv_fwd(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                    const float *b, float *y, void *ws)
{
    CHECK(dispatch__conv_desc_ok(d) && x && w && y);
    CHECK(ws || hone_k_conv_workspace(k, d) == 0);
    return k->ops->conv_fwd(k, d, x, w, b, y, ws);
}

int hone_k_conv_bwd(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                    const float *dy, float *dx, float *dw, float *db, void *ws)
{
    CHECK(dispatch__conv_desc_ok(d) && x && w && dy && dw);
    CHECK(ws || hone_k_conv_workspace(k, d) == 0);
    return k->ops->conv_bwd(k, d, x, w, dy, dx, dw, db, ws);
}

int hone_k_conv_bwd_reuse(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                          const float *dy, float *dx, float *dw, float *db, void *ws)
{
    CHECK(dispatch__conv_desc_ok(d) && x && w && dy && dw);
    CHECK(ws || hone_k_conv_workspace(k, d) == 0);
    return k->ops->conv_bwd_reuse(k, d, x, w, dy, dx, dw, db, ws);
}

int hone_k_conv_bwd_acc(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                        const float *dy, float *dx, float *dw, float *db, void *ws, int reuse)
{
    CHECK(dispatch__conv_desc_ok(d) && x && w && dy && dx && dw);
    CHECK(ws || hone_k_conv_workspace(k, d) == 0);
    return k->ops->conv_bwd_acc(k, d, x, w, dy, dx, dw, db, ws, reuse != 0);
}

const char *hone_k_conv_impl(hone_kctx *k)
{
    return k->ops->conv_impl(k);
}

size_t hone_k_conv_workspace_batched(hone_kctx *k, const hone_conv_desc *d, int trials)
{
    if (!dispatch__conv_desc_ok(d) || trials < 1)
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
    CHECK(dispatch__conv_desc_ok(d) && x && w && y &&
          conv_batch_ok(d, trials, w_stride, b_stride, b != NULL));
    CHECK(ws || hone_k_conv_workspace_batched(k, d, trials) == 0);
    return k->ops->conv_fwd_batched(k, d, trials, x, w, w_stride, b, b_stride, y, ws);
}

int hone_k_conv_bwd_batched(hone_kctx *k, const hone_conv_desc *d, int trials, const float *x,
                            const float *w, size_t w_stride, const float *dy, float *dx, float *dw,
                            float *db, size_t b_stride, void *ws, int reuse)
{
    CHECK(dispatch__conv_desc_ok(d) && x && w && dy && dw &&
          conv_batch_ok(d, trials, w_stride, b_stride, db != NULL));
    CHECK(ws || hone_k_conv_workspace_batched(k, d, trials) == 0);
    return k->ops->conv_bwd_batched(k, d, trials, x, w, w_stride, dy, dx, dw, db, b_stride, ws,
                                    reuse != 0);
}
