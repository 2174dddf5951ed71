/* CUDA backend: 2-D convolution, NCHW. Layers with few input taps (C*R*S <= 27: the first layer
 * of an image net) run direct kernels (conv_direct.cu). Otherwise, with cuDNN (a build with
 * HONE_HAVE_CUDNN and a handle at run time), every shape cuDNN has algorithms for goes there
 * (conv_cudnn.cu). General path: im2col into a [C*R*S, N*P*Q] buffer, one cuBLAS GEMM per pass
 * (forward, weight grad, data grad) over the whole batch, and a transpose back to NCHW with the
 * bias fused in. Workspace only, no allocation. */
#include "common.cuh"
#include "conv_cudnn.cuh"
#include "conv_direct.cuh"

/* Workspace: col[CRS * NPQ], t[K * NPQ], then the small partial-sum area used by the direct
 * weight-grad kernel and the bias reduction fused into the dy transpose. */
static size_t partial_floats(const hone_conv_desc *d)
{
    size_t a = (size_t)d->n * d->k * (d->c * d->r * d->s + 1);
    size_t b = (size_t)d->n * d->k * ((d->p * d->q + HC_THREADS - 1) / HC_THREADS);
    return a > b ? a : b;
}

/* The cuDNN plan for a shape, or NULL for our own kernels. Few-tap layers (the first layer on 1-
 * or 3-channel images) stay on the direct kernels even where cuDNN has algorithms: on the H100 the
 * small CNN's epoch (tf32) was 0.138 s at batch 128 and 0.113 s at 512 with cuDNN's heuristic
 * picks for its 1-channel first layer, 0.109 s and 0.079 s with the direct kernels, and ResNet-18
 * at batch 128 (1-channel stem) 2.77 s against 2.70 s (bench_train_gpu, 2026-11-28). */
static const hc_dnn_conv *dnn_for(hone_kctx *k, const hone_conv_desc *d)
{
    return hc_conv_direct_ok(d) ? NULL : hc_dnn_conv_find(k, d);
}

extern "C" size_t cuda_conv_workspace(hone_kctx *k, const hone_conv_desc *d)
{
    const hc_dnn_conv *e = dnn_for(k, d);
    if (e)
        return hc_dnn_conv_workspace(e);
    size_t npq = (size_t)d->n * d->p * d->q;
    size_t crs = (size_t)d->c * d->r * d->s;
    return ((crs + (size_t)d->k) * npq + partial_floats(d)) * sizeof(float);
}

/* grid (ceil(PQ/128), C, N): one thread per (n, c, output pixel) writes all R*S taps of its
 * column (each store coalesced across the warp); enough work per thread to hide the load latency
 * that a thread-per-element version (6x slower) was bound by. */
__global__ static void k_im2col(const float *__restrict__ x, float *__restrict__ col,
                                hone_conv_desc d, int npq)
{
    int pq = blockIdx.x * blockDim.x + threadIdx.x, PQ = d.p * d.q;
    if (pq >= PQ)
        return;
    int c = blockIdx.y, n = blockIdx.z;
    int p = pq / d.q, q = pq - p * d.q;
    int h0 = p * d.stride - d.pad, w0 = q * d.stride - d.pad;
    const float *xc = x + ((size_t)n * d.c + c) * d.h * d.w;
    float *out = col + (size_t)c * d.r * d.s * npq + n * PQ + pq;
    for (int r = 0; r < d.r; r++) {
        int ih = h0 + r;
        bool rok = ih >= 0 && ih < d.h;
        for (int s = 0; s < d.s; s++) {
            int iw = w0 + s;
            out[(size_t)(r * d.s + s) * npq] =
                rok && iw >= 0 && iw < d.w ? __ldg(xc + ih * d.w + iw) : 0.f;
        }
    }
}

/* grid (ceil(HW/256), C, N): dx[n,c,h,w] (+)= sum over (r,s) of dcol[(c,r,s), (n,p,q)] where
 * h = p*stride - pad + r; acc adds to dx (hone_k_conv_bwd_acc) in the same pass. */
__global__ static void k_col2im(const float *__restrict__ dcol, float *__restrict__ dx,
                                hone_conv_desc d, int npq, int acc)
{
    int hw = blockIdx.x * blockDim.x + threadIdx.x;
    if (hw >= d.h * d.w)
        return;
    int c = blockIdx.y, n = blockIdx.z;
    int ih = hw / d.w, iw = hw - ih * d.w, PQ = d.p * d.q;
    const float *base = dcol + (size_t)c * d.r * d.s * npq + n * PQ;
    float sum = 0.f;
    if (d.stride == 1) { /* no divisions: p = h + pad - r */
        for (int r = 0; r < d.r; r++) {
            int p = ih + d.pad - r;
            if (p < 0 || p >= d.p)
                continue;
            for (int s = 0; s < d.s; s++) {
                int q = iw + d.pad - s;
                if (q >= 0 && q < d.q)
                    sum += base[(size_t)(r * d.s + s) * npq + p * d.q + q];
            }
        }
        float *o = dx + ((size_t)(n * d.c + c) * d.h) * d.w + hw;
        *o = acc ? *o + sum : sum;
        return;
    }
    for (int r = 0; r < d.r; r++) {
        int ph = ih + d.pad - r;
        if (ph < 0)
            break;
        int p = ph / d.stride;
        if (p * d.stride != ph || p >= d.p)
            continue;
        for (int s = 0; s < d.s; s++) {
            int qw = iw + d.pad - s;
            if (qw < 0)
                break;
            int q = qw / d.stride;
            if (q * d.stride != qw || q >= d.q)
                continue;
            sum += base[(size_t)(r * d.s + s) * npq + p * d.q + q];
        }
    }
    float *o = dx + ((size_t)(n * d.c + c) * d.h) * d.w + hw;
    *o = acc ? *o + sum : sum;
}

/* grid (ceil(PQ/256), K, N): y[n,k,pq] = t[k, n*PQ + pq] + b[k]; packed trials (N = trials *
 * per_trial images): image n's bias is trial n / per_trial's, at b + (n / per_trial) * b_stride. */
__global__ static void k_kn_to_nk(const float *__restrict__ t, const float *__restrict__ b,
                                  float *__restrict__ y, int npq, int pq, int per_trial,
                                  size_t b_stride)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= pq)
        return;
    int ch = blockIdx.y, n = blockIdx.z;
    float v = t[(size_t)ch * npq + n * pq + j];
    y[((size_t)n * gridDim.y + ch) * pq + j] =
        b ? v + b[(size_t)(n / per_trial) * b_stride + ch] : v;
}

/* grid (ceil(PQ/256), K, N): t[k, n*PQ + pq] = dy[n,k,pq]. With part != NULL each block also
 * writes the sum of the dy values it moved to part[(k*N + n)*gridDim.x + blockIdx.x], so the bias
 * gradient needs no second pass over dy (hc_fold_rows folds each k's row in a fixed order). */
__global__ static void k_nk_to_kn(const float *__restrict__ dy, float *__restrict__ t,
                                  float *__restrict__ part, int npq, int pq)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int ch = blockIdx.y, n = blockIdx.z;
    float v = 0.f;
    if (j < pq) {
        v = dy[((size_t)n * gridDim.y + ch) * pq + j];
        t[(size_t)ch * npq + n * pq + j] = v;
    }
    if (part) { /* uniform over the block, so the barriers inside hc_block_sum are safe */
        v = hc_block_sum(v);
        if (threadIdx.x == 0)
            part[((size_t)ch * gridDim.z + n) * gridDim.x + blockIdx.x] = v;
    }
}

/* One warp per row (t, k) of the k_nk_to_kn partials, t < trials, k < K: row (t, k) is the cols
 * partials at part + (k * trials + t) * cols (channel k's images of trial t), and its sum (lanes,
 * then a fixed tree) goes to out[t * out_stride + k]. One trial: out[k] = the sum of row k. */
__global__ static void hc_fold_rows(const float *__restrict__ part, int cols,
                                    float *__restrict__ out, int K, int trials, size_t out_stride)
{
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= K * trials)
        return;
    int t = row / K, ch = row - t * K;
    const float *src = part + ((size_t)ch * trials + t) * cols;
    float s = 0.f;
    for (int j = lane; j < cols; j += 32)
        s += src[j];
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0)
        out[(size_t)t * out_stride + ch] = s;
}

static int check_size(const hone_conv_desc *d)
{
    size_t npq = (size_t)d->n * d->p * d->q, nx = (size_t)d->n * d->c * d->h * d->w;
    size_t ny = npq * d->k;
    if (npq >= (1u << 31) || nx >= (1u << 31) || ny >= (1u << 31) || d->n > 65535 || d->k > 65535 ||
        d->c * d->r * d->s > 65535)
        return HONE_ERANGE;
    return HONE_OK;
}

static int launch_im2col(hone_kctx *k, const hone_conv_desc *d, const float *x, float *col, int npq)
{
    int pq = d->p * d->q;
    dim3 grid((pq + 127) / 128, d->c, d->n);
    k_im2col<<<grid, 128, 0, hc_stream(k)>>>(x, col, *d, npq);
    HC_LAUNCHED();
    return HONE_OK;
}

extern "C" int cuda_conv_fwd(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                             const float *b, float *y, void *ws)
{
    int rc;
    if ((rc = check_size(d)) < 0)
        return rc;
    const hc_dnn_conv *e = dnn_for(k, d);
    if (e)
        return hc_dnn_conv_fwd(k, e, x, w, b, y, ws);
    if (hc_conv_direct_ok(d))
        return hc_conv_direct_fwd(k, d, x, w, b, y);
    int npq = d->n * d->p * d->q, crs = d->c * d->r * d->s, pq = d->p * d->q;
    float *col = (float *)ws, *t = col + (size_t)crs * npq;
    if ((rc = launch_im2col(k, d, x, col, npq)) < 0)
        return rc;
    /* t[K, NPQ] = w[K, CRS] . col[CRS, NPQ] */
    if ((rc = cuda_gemm(k, 0, 0, d->k, npq, crs, 1.f, w, crs, col, npq, 0.f, t, npq)) < 0)
        return rc;
    dim3 grid((pq + HC_THREADS - 1) / HC_THREADS, d->k, d->n);
    k_kn_to_nk<<<grid, HC_THREADS, 0, hc_stream(k)>>>(t, b, y, npq, pq, d->n, 0);
    HC_LAUNCHED();
    return HONE_OK;
}

/* reuse: ws still holds im2col(x) from this layer's forward (hone_k_conv_bwd_reuse). */
static int conv_bwd(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                    const float *dy, float *dx, float *dw, float *db, void *ws, bool reuse,
                    bool acc)
{
    int rc;
    if ((rc = check_size(d)) < 0)
        return rc;
    const hc_dnn_conv *e = dnn_for(k, d);
    if (e) /* no columns to reuse: the same calls either way */
        return hc_dnn_conv_bwd(k, e, x, w, dy, dx, dw, db, ws, acc);
    int npq = d->n * d->p * d->q, crs = d->c * d->r * d->s, pq = d->p * d->q;
    float *col = (float *)ws, *t = col + (size_t)crs * npq;
    float *part = t + (size_t)d->k * npq;
    bool direct = hc_conv_direct_ok(d);
    if (direct) {
        if ((rc = hc_conv_direct_bwd_filter(k, d, x, dy, dw, db, part)) < 0)
            return rc;
        if (!dx)
            return HONE_OK;
    }
    dim3 grid((pq + HC_THREADS - 1) / HC_THREADS, d->k, d->n);
    float *bpart = !direct && db ? part : NULL;
    k_nk_to_kn<<<grid, HC_THREADS, 0, hc_stream(k)>>>(dy, t, bpart, npq, pq);
    HC_LAUNCHED();
    if (!direct) {
        if (bpart) {
            int cols = (int)(grid.x * grid.z);
            hc_fold_rows<<<(d->k + 7) / 8, 256, 0, hc_stream(k)>>>(bpart, cols, db, d->k, 1, 0);
            HC_LAUNCHED();
        }
        if (!reuse && (rc = launch_im2col(k, d, x, col, npq)) < 0)
            return rc;
        /* dw[K, CRS] = t[K, NPQ] . col[CRS, NPQ]^T */
        if ((rc = cuda_gemm(k, 0, 1, d->k, crs, npq, 1.f, t, npq, col, npq, 0.f, dw, crs)) < 0)
            return rc;
        if (!dx)
            return HONE_OK;
    }
    /* dcol[CRS, NPQ] = w[K, CRS]^T . t[K, NPQ], written over col */
    if ((rc = cuda_gemm(k, 1, 0, crs, npq, d->k, 1.f, w, crs, t, npq, 0.f, col, npq)) < 0)
        return rc;
    dim3 g2((d->h * d->w + HC_THREADS - 1) / HC_THREADS, d->c, d->n);
    k_col2im<<<g2, HC_THREADS, 0, hc_stream(k)>>>(col, dx, *d, npq, acc ? 1 : 0);
    HC_LAUNCHED();
    return HONE_OK;
}

extern "C" int cuda_conv_bwd(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                             const float *dy, float *dx, float *dw, float *db, void *ws)
{
    return conv_bwd(k, d, x, w, dy, dx, dw, db, ws, false, false);
}

extern "C" int cuda_conv_bwd_reuse(hone_kctx *k, const hone_conv_desc *d, const float *x,
                                   const float *w, const float *dy, float *dx, float *dw, float *db,
                                   void *ws)
{
    return conv_bwd(k, d, x, w, dy, dx, dw, db, ws, true, false);
}

extern "C" int cuda_conv_bwd_acc(hone_kctx *k, const hone_conv_desc *d, const float *x,
                                 const float *w, const float *dy, float *dx, float *dw, float *db,
                                 void *ws, int reuse)
{
    return conv_bwd(k, d, x, w, dy, dx, dw, db, ws, reuse != 0, true);
}

/* ------------------------------------------------------------------ packed trials
 * trials x d->n images as one im2col batch dd (dd.n = trials * d->n): trial t's columns are the
 * NPQ = d->n * P * Q columns at t * NPQ of col[CRS, trials * NPQ] (and of t[K, trials * NPQ]), so
 * every product is one strided-batched GEMM with the trial's filters at w + t * w_stride. Always
 * im2col (cuDNN cannot step filters by a trial stride; the direct small-CRS kernels do one
 * filter set). */
typedef struct {
    hone_conv_desc dd;     /* every trial's images as one batch */
    int npq, all, crs, pq; /* one trial's columns, all trials' columns, rows of col, pixels */
    float *col, *t, *part; /* the workspace: col[crs, all], t[k, all], then the partial sums */
} trials_plan;

static int plan_trials(const hone_conv_desc *d, int trials, void *ws, trials_plan *p)
{
    p->dd = *d;
    p->dd.n = d->n * trials;
    int rc = check_size(&p->dd);
    p->pq = d->p * d->q;
    p->npq = d->n * p->pq;
    p->all = p->dd.n * p->pq;
    p->crs = d->c * d->r * d->s;
    p->col = (float *)ws;
    p->t = p->col ? p->col + (size_t)p->crs * p->all : NULL;
    p->part = p->t ? p->t + (size_t)d->k * p->all : NULL;
    return rc;
}

/* The filter gradient of one trial, dw_t[K, CRS] = t_t[K, NPQ] . col_t[CRS, NPQ]^T, has a small
 * K x CRS and an inner dimension of every pixel of the batch (25k-100k), so one GEMM per trial
 * keeps a handful of CTAs busy and the SMs idle. Split-K: each trial's NPQ columns split into S
 * equal chunks (S divides NPQ, chunks of at least 512 columns, S <= 64); chunk s of trial t is
 * batch t * S + s, at column (t * S + s) * chunk of the [., trials * NPQ] matrices, so ONE
 * strided-batched GEMM writes wpart[trials * S][K * CRS] (after the partial sums) and a
 * fixed-order sum over s gives dw_t, the same on every run. */
static int wgrad_splits(int npq)
{
    int best = 1;
    for (int s = 2; s <= 64; s++)
        if (npq % s == 0 && npq / s >= 512)
            best = s;
    return best;
}

/* grid (ceil(len / 256), trials): dw[t * w_stride + i] = sum over s of part[(t * S + s) * len + i]
 */
__global__ static void k_sum_splits(const float *__restrict__ part, int splits, int len,
                                    float *__restrict__ dw, size_t w_stride)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x, t = blockIdx.y;
    if (i >= len)
        return;
    const float *src = part + (size_t)t * splits * len + i;
    float sum = 0.f;
    for (int s = 0; s < splits; s++)
        sum += src[(size_t)s * len];
    dw[(size_t)t * w_stride + i] = sum;
}

extern "C" size_t cuda_conv_workspace_batched(hone_kctx *k, const hone_conv_desc *d, int trials)
{
    (void)k;
    trials_plan p;
    plan_trials(d, trials, NULL, &p);
    size_t all = (size_t)p.dd.n * d->p * d->q, crs = (size_t)p.crs;
    size_t splits = (size_t)wgrad_splits(p.npq);
    size_t wpart = splits > 1 ? (size_t)trials * splits * d->k * crs : 0;
    return ((crs + (size_t)d->k) * all + partial_floats(&p.dd) + wpart) * sizeof(float);
}

extern "C" int cuda_conv_fwd_batched(hone_kctx *k, const hone_conv_desc *d, int trials,
                                     const float *x, const float *w, size_t w_stride,
                                     const float *b, size_t b_stride, float *y, void *ws)
{
    trials_plan p;
    int rc;
    if ((rc = plan_trials(d, trials, ws, &p)) < 0)
        return rc;
    if ((rc = launch_im2col(k, &p.dd, x, p.col, p.all)) < 0)
        return rc;
    /* t_t[K, NPQ] = w_t[K, CRS] . col_t[CRS, NPQ], leading dimension all */
    if ((rc = cuda_gemm_batched(k, 0, 0, d->k, p.npq, p.crs, 1.f, w, p.crs, w_stride, p.col, p.all,
                                (size_t)p.npq, 0.f, p.t, p.all, (size_t)p.npq, trials)) < 0)
        return rc;
    dim3 grid((p.pq + HC_THREADS - 1) / HC_THREADS, d->k, p.dd.n);
    k_kn_to_nk<<<grid, HC_THREADS, 0, hc_stream(k)>>>(p.t, b, y, p.all, p.pq, d->n, b_stride);
    HC_LAUNCHED();
    return HONE_OK;
}

extern "C" int cuda_conv_bwd_batched(hone_kctx *k, const hone_conv_desc *d, int trials,
                                     const float *x, const float *w, size_t w_stride,
                                     const float *dy, float *dx, float *dw, float *db,
                                     size_t b_stride, void *ws, int reuse)
{
    trials_plan p;
    int rc;
    if ((rc = plan_trials(d, trials, ws, &p)) < 0)
        return rc;
    dim3 grid((p.pq + HC_THREADS - 1) / HC_THREADS, d->k, p.dd.n);
    k_nk_to_kn<<<grid, HC_THREADS, 0, hc_stream(k)>>>(dy, p.t, db ? p.part : NULL, p.all, p.pq);
    HC_LAUNCHED();
    if (db) { /* row (t, k): trial t's d->n images of channel k, grid.x partials each */
        int cols = (int)(grid.x * d->n);
        hc_fold_rows<<<(d->k * trials + 7) / 8, 256, 0, hc_stream(k)>>>(p.part, cols, db, d->k,
                                                                        trials, b_stride);
        HC_LAUNCHED();
    }
    if (!reuse && (rc = launch_im2col(k, &p.dd, x, p.col, p.all)) < 0)
        return rc;
    /* dw_t[K, CRS] = t_t[K, NPQ] . col_t[CRS, NPQ]^T, split over chunks of NPQ */
    int splits = wgrad_splits(p.npq);
    if (splits > 1) {
        int chunk = p.npq / splits, len = d->k * p.crs;
        float *wpart = p.part + partial_floats(&p.dd);
        if ((rc = cuda_gemm_batched(k, 0, 1, d->k, p.crs, chunk, 1.f, p.t, p.all, (size_t)chunk,
                                    p.col, p.all, (size_t)chunk, 0.f, wpart, p.crs, (size_t)len,
                                    trials * splits)) < 0)
            return rc;
        dim3 gs((len + HC_THREADS - 1) / HC_THREADS, trials);
        k_sum_splits<<<gs, HC_THREADS, 0, hc_stream(k)>>>(wpart, splits, len, dw, w_stride);
        HC_LAUNCHED();
    } else if ((rc = cuda_gemm_batched(k, 0, 1, d->k, p.crs, p.npq, 1.f, p.t, p.all, (size_t)p.npq,
                                       p.col, p.all, (size_t)p.npq, 0.f, dw, p.crs, w_stride,
                                       trials)) < 0)
        return rc;
    if (!dx)
        return HONE_OK;
    /* dcol_t[CRS, NPQ] = w_t[K, CRS]^T . t_t[K, NPQ], written over col */
    if ((rc = cuda_gemm_batched(k, 1, 0, p.crs, p.npq, d->k, 1.f, w, p.crs, w_stride, p.t, p.all,
                                (size_t)p.npq, 0.f, p.col, p.all, (size_t)p.npq, trials)) < 0)
        return rc;
    dim3 g2((d->h * d->w + HC_THREADS - 1) / HC_THREADS, d->c, p.dd.n);
    k_col2im<<<g2, HC_THREADS, 0, hc_stream(k)>>>(p.col, dx, p.dd, p.all, 0);
    HC_LAUNCHED();
    return HONE_OK;
}

extern "C" const char *cuda_conv_impl(hone_kctx *k)
{
    return hc_of(k)->dnn ? hc_dnn_name(hc_of(k)->dnn) : "cuda im2col + cublas";
}
