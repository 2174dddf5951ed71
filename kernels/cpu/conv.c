/* kernels/cpu/conv.c: 2-D convolution for the CPU backend, split over the worker pool by
 * image. Forward: per image W[K,CRS] x im2col[CRS,PQ] straight into y (NCHW, no transpose), or a
 * hand-written small-K product when CRS is tiny (a first layer; its dW likewise). Backward: dW and
 * db summed per fixed chunk of images (partials added in chunk order, so results do not depend on
 * the thread count), dX as W^T x dY then col2im. All scratch lives in the caller's workspace, and
 * nothing is kept across calls, so the backward that may reuse the forward's columns is the full
 * backward. */
#include <string.h>

#include "par.h"

/* Backward sums dW over this many image chunks (fixed, so numerics ignore the thread count). */
#define CONV_BWD_CHUNKS 8
/* Forward skips BLAS (whose packing would dominate) when a pixel's receptive field is this small.
 */
#define CONV_DIRECT_CRS 32

typedef struct {
    const hone_conv_desc *d;
    size_t crs, pq, chw, kpq; /* rows of col, output pixels, input and output floats per image */
    int direct, one_by_one;   /* small-K forward; 1x1/stride 1/no pad: col is the image itself */
    int chunks;               /* backward chunks */
    int acc_dx;               /* backward: dx += (hone_k_conv_bwd_acc) instead of dx = */
    size_t slot;              /* floats of one im2col buffer */
    const float *x, *w, *b, *dy;
    float *y, *dx, *dw, *db;
    float *cols;     /* per slot: an im2col buffer, then a dcol buffer (backward) */
    float *partials; /* chunks - 1 partial (dW, db) pairs */
} conv_job;

static void plan(conv_job *j, hone_kctx *k, const hone_conv_desc *d, void *ws)
{
    memset(j, 0, sizeof(*j));
    j->d = d;
    j->crs = (size_t)d->c * d->r * d->s;
    j->pq = (size_t)d->p * d->q;
    j->chw = (size_t)d->c * d->h * d->w;
    j->kpq = (size_t)d->k * j->pq;
    j->direct = j->crs <= CONV_DIRECT_CRS;
    j->one_by_one = d->r == 1 && d->s == 1 && d->stride == 1 && d->pad == 0;
    j->chunks = d->n < CONV_BWD_CHUNKS ? d->n : CONV_BWD_CHUNKS;
    j->slot = j->crs * j->pq;
    if (ws) { /* NULL when only the size is asked for */
        j->cols = ws;
        j->partials = j->cols + (size_t)cpu_par_slots(k) * 2 * j->slot;
    }
}

size_t cpu_conv_workspace(hone_kctx *k, const hone_conv_desc *d)
{
    conv_job j;
    plan(&j, k, d, NULL);
    size_t cols = (size_t)cpu_par_slots(k) * 2 * j.slot;
    size_t partials = (size_t)(j.chunks - 1) * ((size_t)d->k * j.crs + (size_t)d->k);
    return (cols + partials) * sizeof(float);
}

/* Output columns q whose input column q*stride - pad + s lies inside [0, w): [*lo, *hi). */
static void q_range(const hone_conv_desc *d, int s, int *lo, int *hi)
{
    int a = d->pad - s, b = d->w - 1 + d->pad - s; /* need a <= q*stride <= b */
    *lo = a <= 0 ? 0 : (a + d->stride - 1) / d->stride;
    *hi = b < 0 ? 0 : b / d->stride + 1;
    if (*hi > d->q)
        *hi = d->q;
    if (*lo > *hi)
        *lo = *hi;
}

/* For stride 1 with Q == W (a "same" width), the col row of tap (c, r, s) is the input plane
 * shifted by (r-pad)*W + (s-pad), so valid rows [plo, phi) are one contiguous span; only the
 * |s-pad| wrapped-around columns per row, [0, lo) and [hi, Q), must be zero. */
typedef struct {
    int plo, phi, lo, hi;
    long shift, n0, n1; /* col indices [n0, n1) map to plane index + shift, inside the plane */
} tap_span;

static int same_width(const hone_conv_desc *d)
{
    return d->stride == 1 && d->q == d->w;
}

static tap_span span_of(const hone_conv_desc *d, int r, int s)
{
    tap_span t;
    long hw = (long)d->h * d->w;
    t.plo = d->pad - r > 0 ? d->pad - r : 0;
    t.phi = d->h + d->pad - r < d->p ? d->h + d->pad - r : d->p;
    if (t.phi < 0)
        t.phi = 0;
    if (t.plo > t.phi)
        t.plo = t.phi;
    q_range(d, s, &t.lo, &t.hi);
    t.shift = (long)(r - d->pad) * d->w + (s - d->pad);
    t.n0 = (long)t.plo * d->q;
    t.n1 = (long)t.phi * d->q;
    if (t.n0 + t.shift < 0) /* only wrapped columns of the first row fall before the plane */
        t.n0 = -t.shift;
    if (t.n1 + t.shift > hw) /* ... or after it in the last row */
        t.n1 = hw - t.shift;
    if (t.n1 < t.n0)
        t.n1 = t.n0;
    return t;
}

/* Zeroes the wrapped-around columns of the valid rows of one col row. Column by column (a strided
 * loop) on purpose: row by row, GCC turns the one-or-two-element loops into memset calls. */
static void zero_wrapped(const hone_conv_desc *d, const tap_span *t, float *out)
{
    size_t Q = (size_t)d->q;
    for (int q = 0; q < t->lo; q++)
        for (int p = t->plo; p < t->phi; p++)
            out[(size_t)p * Q + q] = 0.0f;
    for (int q = t->hi; q < d->q; q++)
        for (int p = t->plo; p < t->phi; p++)
            out[(size_t)p * Q + q] = 0.0f;
}

/* col[(c*R + r)*S + s][p*Q + q] = img[c][p*stride-pad+r][q*stride-pad+s] (0 outside). */
CPU_SIMD static void im2col(const hone_conv_desc *d, const float *img, float *col)
{
    size_t pq = (size_t)d->p * d->q, hw = (size_t)d->h * d->w, rs = (size_t)d->r * d->s;
    if (same_width(d)) {
        for (int r = 0; r < d->r; r++)
            for (int s = 0; s < d->s; s++) {
                tap_span t = span_of(d, r, s);
                size_t head = (size_t)t.plo * d->q, tail = pq - (size_t)t.phi * d->q;
                for (int c = 0; c < d->c; c++) {
                    float *out = col + ((size_t)c * rs + (size_t)r * d->s + s) * pq;
                    const float *plane = img + (size_t)c * hw;
                    if (head)
                        memset(out, 0, sizeof(float) * head);
                    if (tail)
                        memset(out + pq - tail, 0, sizeof(float) * tail);
                    memcpy(out + t.n0, plane + t.n0 + t.shift, sizeof(float) * (t.n1 - t.n0));
                    zero_wrapped(d, &t, out);
                }
            }
        return;
    }
    for (int c = 0; c < d->c; c++)
        for (int r = 0; r < d->r; r++)
            for (int s = 0; s < d->s; s++) {
                float *out = col + ((size_t)(c * d->r + r) * d->s + s) * pq;
                const float *plane = img + (size_t)c * hw;
                int lo, hi, off = s - d->pad; /* input column = q*stride + off */
                q_range(d, s, &lo, &hi);
                for (int p = 0; p < d->p; p++) {
                    int ih = p * d->stride - d->pad + r;
                    float *o = out + (size_t)p * d->q;
                    if (ih < 0 || ih >= d->h) {
                        memset(o, 0, sizeof(float) * d->q);
                        continue;
                    }
                    const float *in = plane + (size_t)ih * d->w;
                    for (int q = 0; q < lo; q++)
                        o[q] = 0.0f;
                    for (int q = lo; q < hi; q++)
                        o[q] = in[q * d->stride + off];
                    for (int q = hi; q < d->q; q++)
                        o[q] = 0.0f;
                }
            }
}

/* The adjoint of im2col: img = sum of the col entries that read each pixel (img overwritten, or
 * added to when acc).
 * col is scratch and is left all zero, so the next GEMM can accumulate into it with beta = 1
 * (BLAS would otherwise zero the whole buffer in a pass of its own); the same-width path zeroes
 * the wrapped-around entries first so one span add covers each tap. */
CPU_SIMD static void col2im(const hone_conv_desc *d, float *col, float *img, int acc)
{
    size_t pq = (size_t)d->p * d->q, hw = (size_t)d->h * d->w, rs = (size_t)d->r * d->s;
    if (!acc)
        memset(img, 0, sizeof(float) * (size_t)d->c * hw);
    if (same_width(d)) {
        for (int r = 0; r < d->r; r++)
            for (int s = 0; s < d->s; s++) {
                tap_span t = span_of(d, r, s);
                long len = t.n1 - t.n0;
                size_t head = (size_t)t.plo * d->q, tail = pq - (size_t)t.phi * d->q;
                for (int c = 0; c < d->c; c++) {
                    float *src = col + ((size_t)c * rs + (size_t)r * d->s + s) * pq;
                    zero_wrapped(d, &t, src);
                    float *restrict o = img + (size_t)c * hw + (t.n0 + t.shift);
                    float *restrict sp = src + t.n0;
                    for (long n = 0; n < len; n++) {
                        o[n] += sp[n];
                        sp[n] = 0.0f;
                    }
                    if (head)
                        memset(src, 0, sizeof(float) * head);
                    if (tail)
                        memset(src + pq - tail, 0, sizeof(float) * tail);
                }
            }
        return;
    }
    for (int c = 0; c < d->c; c++)
        for (int r = 0; r < d->r; r++)
            for (int s = 0; s < d->s; s++) {
                float *src = col + ((size_t)(c * d->r + r) * d->s + s) * pq;
                float *plane = img + (size_t)c * hw;
                int lo, hi, off = s - d->pad;
                q_range(d, s, &lo, &hi);
                for (int p = 0; p < d->p; p++) {
                    int ih = p * d->stride - d->pad + r;
                    if (ih < 0 || ih >= d->h)
                        continue;
                    float *o = plane + (size_t)ih * d->w;
                    const float *sp = src + (size_t)p * d->q;
                    for (int q = lo; q < hi; q++)
                        o[q * d->stride + off] += sp[q];
                }
                memset(src, 0, sizeof(float) * pq);
            }
}

typedef float v8sf __attribute__((vector_size(32)));

/* y[K, PQ] = W[K, CRS] x col[CRS, PQ] + b for a tiny CRS (a first layer), where a BLAS call would
 * spend its time packing: four output channels at a time, eight pixels per vector. */
CPU_SIMD static void small_k_fwd(int K, int crs, size_t pq, const float *w, const float *b,
                                 const float *col, float *y)
{
    int k0 = 0;
    for (; k0 + 4 <= K; k0 += 4) {
        const float *w0 = w + (size_t)k0 * crs, *w1 = w0 + crs, *w2 = w1 + crs, *w3 = w2 + crs;
        float *y0 = y + (size_t)k0 * pq, *y1 = y0 + pq, *y2 = y1 + pq, *y3 = y2 + pq;
        float b0 = b ? b[k0] : 0.0f, b1 = b ? b[k0 + 1] : 0.0f;
        float b2 = b ? b[k0 + 2] : 0.0f, b3 = b ? b[k0 + 3] : 0.0f;
        size_t q = 0;
        for (; q + 8 <= pq; q += 8) {
            v8sf a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
            for (int t = 0; t < crs; t++) {
                v8sf v;
                memcpy(&v, col + (size_t)t * pq + q, sizeof(v));
                a0 += w0[t] * v;
                a1 += w1[t] * v;
                a2 += w2[t] * v;
                a3 += w3[t] * v;
            }
            a0 += b0;
            a1 += b1;
            a2 += b2;
            a3 += b3;
            memcpy(y0 + q, &a0, sizeof(a0));
            memcpy(y1 + q, &a1, sizeof(a1));
            memcpy(y2 + q, &a2, sizeof(a2));
            memcpy(y3 + q, &a3, sizeof(a3));
        }
        for (; q < pq; q++) {
            float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
            for (int t = 0; t < crs; t++) {
                float v = col[(size_t)t * pq + q];
                s0 += w0[t] * v;
                s1 += w1[t] * v;
                s2 += w2[t] * v;
                s3 += w3[t] * v;
            }
            y0[q] = s0 + b0;
            y1[q] = s1 + b1;
            y2[q] = s2 + b2;
            y3[q] = s3 + b3;
        }
    }
    for (; k0 < K; k0++) {
        const float *w0 = w + (size_t)k0 * crs;
        float *y0 = y + (size_t)k0 * pq, b0 = b ? b[k0] : 0.0f;
        for (size_t q = 0; q < pq; q++) {
            float s0 = 0.0f;
            for (int t = 0; t < crs; t++)
                s0 += w0[t] * col[(size_t)t * pq + q];
            y0[q] = s0 + b0;
        }
    }
}

/* dw[K, CRS] (+)= dy[K, PQ] x col[CRS, PQ]^T for a tiny CRS: per output channel, up to eight taps
 * at a time, each an eight-lane dot product over the pixels (BLAS would pack for nothing). */
CPU_SIMD static void small_k_dw(int K, int crs, size_t pq, const float *dy, const float *col,
                                float *dw, int accumulate)
{
    for (int k = 0; k < K; k++) {
        const float *g = dy + (size_t)k * pq;
        float *out = dw + (size_t)k * crs;
        for (int t0 = 0; t0 < crs; t0 += 8) {
            int nt = crs - t0 < 8 ? crs - t0 : 8;
            v8sf a[8] = {{0}};
            size_t q = 0;
            for (; q + 8 <= pq; q += 8) {
                v8sf gv;
                memcpy(&gv, g + q, sizeof(gv));
                for (int t = 0; t < nt; t++) {
                    v8sf cv;
                    memcpy(&cv, col + (size_t)(t0 + t) * pq + q, sizeof(cv));
                    a[t] += gv * cv;
                }
            }
            for (int t = 0; t < nt; t++) {
                const float *c = col + (size_t)(t0 + t) * pq;
                float sum = ((a[t][0] + a[t][4]) + (a[t][1] + a[t][5])) +
                            ((a[t][2] + a[t][6]) + (a[t][3] + a[t][7]));
                for (size_t r = q; r < pq; r++)
                    sum += g[r] * c[r];
                out[t0 + t] = accumulate ? out[t0 + t] + sum : sum;
            }
        }
    }
}

CPU_SIMD static void fill_bias(float *y, const float *b, int k, size_t pq)
{
    for (int kk = 0; kk < k; kk++) {
        float *row = y + (size_t)kk * pq, v = b[kk];
        for (size_t j = 0; j < pq; j++)
            row[j] = v;
    }
}

static void fwd_image(void *arg, int i, int slot)
{
    conv_job *j = arg;
    const hone_conv_desc *d = j->d;
    const float *x = j->x + (size_t)i * j->chw;
    float *y = j->y + (size_t)i * j->kpq;
    const float *col = x;
    if (!j->one_by_one) {
        float *buf = j->cols + (size_t)slot * 2 * j->slot;
        im2col(d, x, buf);
        col = buf;
    }
    if (j->direct) {
        small_k_fwd(d->k, (int)j->crs, j->pq, j->w, j->b, col, y);
        return;
    }
    if (j->b) /* y starts as the bias and the GEMM adds to it: one pass over y, not two */
        fill_bias(y, j->b, d->k, j->pq);
    cpu_gemm1(0, 0, d->k, (int)j->pq, (int)j->crs, 1.0f, j->w, (int)j->crs, col, (int)j->pq,
              j->b ? 1.0f : 0.0f, y, (int)j->pq);
}

int cpu_conv_fwd(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                 const float *b, float *y, void *ws)
{
    conv_job j;
    plan(&j, k, d, ws);
    j.x = x;
    j.w = w;
    j.b = b;
    j.y = y;
    cpu_par_run(k, d->n, fwd_image, &j);
    return HONE_OK;
}

/* db[k] (+)= sum over pixels of dy[k]. */
CPU_SIMD static void row_sums(const float *dy, int k, size_t pq, float *db, int accumulate)
{
    for (int kk = 0; kk < k; kk++) {
        const float *row = dy + (size_t)kk * pq;
        float acc[8] = {0};
        size_t jj = 0;
        for (; jj + 8 <= pq; jj += 8)
            for (int l = 0; l < 8; l++)
                acc[l] += row[jj + l];
        float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
        for (; jj < pq; jj++)
            s += row[jj];
        db[kk] = accumulate ? db[kk] + s : s;
    }
}

/* One backward chunk: its dW/db partial (chunk 0 writes dw/db) and dx of its images. */
static void bwd_chunk(void *arg, int c, int slot)
{
    conv_job *j = arg;
    const hone_conv_desc *d = j->d;
    size_t kcrs = (size_t)d->k * j->crs;
    float *dw = c == 0 ? j->dw : j->partials + (size_t)(c - 1) * (kcrs + d->k);
    float *db = c == 0 ? j->db : j->partials + (size_t)(c - 1) * (kcrs + d->k) + kcrs;
    float *buf = j->cols + (size_t)slot * 2 * j->slot, *dcol = buf + j->slot;
    int i0 = (int)((size_t)d->n * c / j->chunks), i1 = (int)((size_t)d->n * (c + 1) / j->chunks);
    if (j->dx && !j->one_by_one) /* col2im leaves it zero again after each image */
        memset(dcol, 0, sizeof(float) * j->slot);
    for (int i = i0; i < i1; i++) {
        const float *x = j->x + (size_t)i * j->chw, *dy = j->dy + (size_t)i * j->kpq;
        const float *col = x;
        if (!j->one_by_one) {
            im2col(d, x, buf);
            col = buf;
        }
        if (j->direct)
            small_k_dw(d->k, (int)j->crs, j->pq, dy, col, dw, i > i0);
        else
            cpu_gemm1(0, 1, d->k, (int)j->crs, (int)j->pq, 1.0f, dy, (int)j->pq, col, (int)j->pq,
                      i == i0 ? 0.0f : 1.0f, dw, (int)j->crs);
        if (j->db)
            row_sums(dy, d->k, j->pq, db, i > i0);
        if (!j->dx)
            continue;
        float *dx = j->dx + (size_t)i * j->chw;
        if (j->one_by_one) {
            cpu_gemm1(1, 0, (int)j->crs, (int)j->pq, d->k, 1.0f, j->w, (int)j->crs, dy, (int)j->pq,
                      j->acc_dx ? 1.0f : 0.0f, dx, (int)j->pq);
        } else {
            cpu_gemm1(1, 0, (int)j->crs, (int)j->pq, d->k, 1.0f, j->w, (int)j->crs, dy, (int)j->pq,
                      1.0f, dcol, (int)j->pq);
            col2im(d, dcol, dx, j->acc_dx);
        }
    }
}

CPU_SIMD static void add_to(float *restrict dst, const float *restrict src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] += src[i];
}

static int conv_bwd(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                    const float *dy, float *dx, float *dw, float *db, void *ws, int acc_dx)
{
    conv_job j;
    plan(&j, k, d, ws);
    j.acc_dx = acc_dx;
    j.x = x;
    j.w = w;
    j.dy = dy;
    j.dx = dx;
    j.dw = dw;
    j.db = db;
    cpu_par_run(k, j.chunks, bwd_chunk, &j);
    size_t kcrs = (size_t)d->k * j.crs;
    for (int c = 1; c < j.chunks; c++) {
        const float *part = j.partials + (size_t)(c - 1) * (kcrs + d->k);
        add_to(dw, part, kcrs);
        if (db)
            add_to(db, part + kcrs, (size_t)d->k);
    }
    return HONE_OK;
}

int cpu_conv_bwd(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                 const float *dy, float *dx, float *dw, float *db, void *ws)
{
    return conv_bwd(k, d, x, w, dy, dx, dw, db, ws, 0);
}

int cpu_conv_bwd_reuse(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                       const float *dy, float *dx, float *dw, float *db, void *ws)
{
    /* the CPU convolution does not keep columns across calls: the full backward */
    return cpu_conv_bwd(k, d, x, w, dy, dx, dw, db, ws);
}

int cpu_conv_bwd_acc(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                     const float *dy, float *dx, float *dw, float *db, void *ws, int reuse)
{
    (void)reuse; /* no columns kept: as above */
    return conv_bwd(k, d, x, w, dy, dx, dw, db, ws, 1);
}

const char *cpu_conv_impl(hone_kctx *k)
{
    (void)k;
    return "cpu";
}

/* Packed trials: the single convolution once per trial (bit for bit the solo numbers), all of
 * them in the one workspace (each call uses it from the start). */
size_t cpu_conv_workspace_batched(hone_kctx *k, const hone_conv_desc *d, int trials)
{
    (void)trials;
    return cpu_conv_workspace(k, d);
}

int cpu_conv_fwd_batched(hone_kctx *k, const hone_conv_desc *d, int trials, const float *x,
                         const float *w, size_t w_stride, const float *b, size_t b_stride, float *y,
                         void *ws)
{
    size_t nx = (size_t)d->n * d->c * d->h * d->w, ny = (size_t)d->n * d->k * d->p * d->q;
    for (int t = 0; t < trials; t++)
        cpu_conv_fwd(k, d, x + t * nx, w + t * w_stride, b ? b + t * b_stride : NULL, y + t * ny,
                     ws);
    return HONE_OK;
}

int cpu_conv_bwd_batched(hone_kctx *k, const hone_conv_desc *d, int trials, const float *x,
                         const float *w, size_t w_stride, const float *dy, float *dx, float *dw,
                         float *db, size_t b_stride, void *ws, int reuse)
{
    (void)reuse; /* no columns kept (as cpu_conv_bwd_reuse) */
    size_t nx = (size_t)d->n * d->c * d->h * d->w, ny = (size_t)d->n * d->k * d->p * d->q;
    for (int t = 0; t < trials; t++)
        conv_bwd(k, d, x + t * nx, w + t * w_stride, dy + t * ny, dx ? dx + t * nx : NULL,
                 dw + t * w_stride, db ? db + t * b_stride : NULL, ws, 0);
    return HONE_OK;
}
