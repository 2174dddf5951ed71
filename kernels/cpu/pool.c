/* kernels/cpu/pool.c: max pooling (with argmax for backward; fused with ReLU too, one pass each
 * way, the same numbers as pool then relu), global average pooling and nearest-neighbour upsampling
 * for the CPU backend. Backward ops overwrite their outputs. Max pooling is split over the pool by
 * planes. */
#include <string.h>

#include "par.h"

typedef struct {
    int h, w, size, stride, P, Q, relu;
    const float *x, *ym; /* ym: backward only, the fused forward's output (NULL: plain) */
    float *y;
    const int32_t *cidx;
    int32_t *idx;
} pool_job;

/* 2x2 stride-2 windows, eight (or four) outputs per step with explicit vectors: the compiler's own
 * vectorisation of these rows (Q = 14 or 7) leaves half of them to a scalar epilogue. A row whose
 * Q is not a multiple of the width ends with one overlapping step (outputs are pure functions of
 * the inputs, so the overlap rewrites equal values). Ties keep the first maximum in row-major
 * window order, exactly as the scalar loop. */
typedef float v8sf __attribute__((vector_size(32)));
typedef int32_t v8si __attribute__((vector_size(32)));
typedef float v4sf __attribute__((vector_size(16)));
typedef int32_t v4si __attribute__((vector_size(16)));
#if defined(__clang__)
#define EVEN8(a, b) __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14)
#define ODD8(a, b) __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15)
#define ZIPLO8(a, b) __builtin_shufflevector(a, b, 0, 8, 1, 9, 2, 10, 3, 11)
#define ZIPHI8(a, b) __builtin_shufflevector(a, b, 4, 12, 5, 13, 6, 14, 7, 15)
#define EVEN4(a, b) __builtin_shufflevector(a, b, 0, 2, 4, 6)
#define ODD4(a, b) __builtin_shufflevector(a, b, 1, 3, 5, 7)
#define ZIPLO4(a, b) __builtin_shufflevector(a, b, 0, 4, 1, 5)
#define ZIPHI4(a, b) __builtin_shufflevector(a, b, 2, 6, 3, 7)
#else
#define EVEN8(a, b) __builtin_shuffle(a, b, (v8si){0, 2, 4, 6, 8, 10, 12, 14})
#define ODD8(a, b) __builtin_shuffle(a, b, (v8si){1, 3, 5, 7, 9, 11, 13, 15})
#define ZIPLO8(a, b) __builtin_shuffle(a, b, (v8si){0, 8, 1, 9, 2, 10, 3, 11})
#define ZIPHI8(a, b) __builtin_shuffle(a, b, (v8si){4, 12, 5, 13, 6, 14, 7, 15})
#define EVEN4(a, b) __builtin_shuffle(a, b, (v4si){0, 2, 4, 6})
#define ODD4(a, b) __builtin_shuffle(a, b, (v4si){1, 3, 5, 7})
#define ZIPLO4(a, b) __builtin_shuffle(a, b, (v4si){0, 4, 1, 5})
#define ZIPHI4(a, b) __builtin_shuffle(a, b, (v4si){2, 6, 3, 7})
#endif

/* One block of L outputs at q: VF/VI the vector types, EVEN/ODD the de-interleaving shuffles. */
#define POOL_FWD_BLOCK(VF, VI, EVEN, ODD, L)                                                       \
    do {                                                                                           \
        VF a0, a1, c0, c1;                                                                         \
        memcpy(&a0, r0 + 2 * q, sizeof(a0));                                                       \
        memcpy(&a1, r0 + 2 * q + L, sizeof(a1));                                                   \
        memcpy(&c0, r1 + 2 * q, sizeof(c0));                                                       \
        memcpy(&c1, r1 + 2 * q + L, sizeof(c1));                                                   \
        VF e0 = EVEN(a0, a1), o0 = ODD(a0, a1), e1 = EVEN(c0, c1), o1 = ODD(c0, c1);               \
        VI o = base + 2 * q + lane2, m;                                                            \
        VF bv = e0;                                                                                \
        m = o0 > bv;                                                                               \
        o = ((o + 1) & m) | (o & ~m);                                                              \
        bv = (VF)(((VI)o0 & m) | ((VI)bv & ~m));                                                   \
        m = e1 > bv;                                                                               \
        o = ((base + w + 2 * q + lane2) & m) | (o & ~m);                                           \
        bv = (VF)(((VI)e1 & m) | ((VI)bv & ~m));                                                   \
        m = o1 > bv;                                                                               \
        o = ((base + w + 2 * q + 1 + lane2) & m) | (o & ~m);                                       \
        bv = (VF)(((VI)o1 & m) | ((VI)bv & ~m));                                                   \
        if (relu)                                                                                  \
            bv = (VF)((VI)bv & (bv > 0.0f)); /* !(bv > 0) (NaN too) gives +0 */                    \
        memcpy(out + q, &bv, sizeof(bv));                                                          \
        memcpy(oi + q, &o, sizeof(o));                                                             \
    } while (0)

CPU_SIMD static void pool2_fwd_row(const float *r0, const float *r1, int w, int base, int Q,
                                   int relu, float *out, int32_t *oi)
{
    if (Q >= 8) {
        const v8si lane2 = {0, 2, 4, 6, 8, 10, 12, 14};
        for (int q0 = 0; q0 < Q; q0 += 8) {
            int q = q0 + 8 <= Q ? q0 : Q - 8;
            POOL_FWD_BLOCK(v8sf, v8si, EVEN8, ODD8, 8);
        }
    } else {
        const v4si lane2 = {0, 2, 4, 6};
        for (int q0 = 0; q0 < Q; q0 += 4) {
            int q = q0 + 4 <= Q ? q0 : Q - 4;
            POOL_FWD_BLOCK(v4sf, v4si, EVEN4, ODD4, 4);
        }
    }
}

/* The backward of one block: every pixel of the L windows written once (gradient or +0). */
#define POOL_BWD_BLOCK(VF, VI, ZIPLO, ZIPHI, L)                                                    \
    do {                                                                                           \
        VF v, z = {0};                                                                             \
        VI id;                                                                                     \
        memcpy(&v, gp + q, sizeof(v));                                                             \
        memcpy(&id, op + q, sizeof(id));                                                           \
        v = z + v; /* as 0 += gy: -0 becomes +0 */                                                 \
        if (mp) {                                                                                  \
            VF yv;                                                                                 \
            memcpy(&yv, mp + q, sizeof(yv));                                                       \
            v = (VF)((VI)v & (yv > 0.0f));                                                         \
        }                                                                                          \
        VI rel = id - (base + 2 * q + lane2);                                                      \
        VF e0 = (VF)((VI)v & (rel == 0)), o0 = (VF)((VI)v & (rel == 1));                           \
        VF e1 = (VF)((VI)v & (rel == w)), o1 = (VF)((VI)v & (rel == w + 1));                       \
        VF t;                                                                                      \
        t = ZIPLO(e0, o0);                                                                         \
        memcpy(r0 + 2 * q, &t, sizeof(t));                                                         \
        t = ZIPHI(e0, o0);                                                                         \
        memcpy(r0 + 2 * q + L, &t, sizeof(t));                                                     \
        t = ZIPLO(e1, o1);                                                                         \
        memcpy(r1 + 2 * q, &t, sizeof(t));                                                         \
        t = ZIPHI(e1, o1);                                                                         \
        memcpy(r1 + 2 * q + L, &t, sizeof(t));                                                     \
    } while (0)

CPU_SIMD static void pool2_bwd_row(const float *gp, const float *mp, const int32_t *op, int w,
                                   int base, int Q, float *r0, float *r1)
{
    if (Q >= 8) {
        const v8si lane2 = {0, 2, 4, 6, 8, 10, 12, 14};
        for (int q0 = 0; q0 < Q; q0 += 8) {
            int q = q0 + 8 <= Q ? q0 : Q - 8;
            POOL_BWD_BLOCK(v8sf, v8si, ZIPLO8, ZIPHI8, 8);
        }
    } else {
        const v4si lane2 = {0, 2, 4, 6};
        for (int q0 = 0; q0 < Q; q0 += 4) {
            int q = q0 + 4 <= Q ? q0 : Q - 4;
            POOL_BWD_BLOCK(v4sf, v4si, ZIPLO4, ZIPHI4, 4);
        }
    }
}

CPU_SIMD static void maxpool_fwd_planes(void *arg, size_t b, size_t e)
{
    const pool_job *j = arg;
    int h = j->h, w = j->w, size = j->size, stride = j->stride, P = j->P, Q = j->Q;
    int relu = j->relu;
    for (size_t plane = b; plane < e; plane++) {
        const float *in = j->x + plane * h * w;
        float *out = j->y + plane * P * Q;
        int32_t *oi = j->idx + plane * P * Q;
        if (size == 2 && stride == 2) { /* the common case, unrolled; same tie order */
            for (int p = 0; p < P; p++) {
                const float *r0 = in + (size_t)(2 * p) * w, *r1 = r0 + w;
                int row0 = 2 * p * w;
                if (Q >= 4) {
                    pool2_fwd_row(r0, r1, w, row0, Q, relu, out + (size_t)p * Q,
                                  oi + (size_t)p * Q);
                    continue;
                }
                for (int q = 0; q < Q; q++) { /* branch-free so the loop vectorises */
                    float v1 = r0[2 * q + 1], v2 = r1[2 * q], v3 = r1[2 * q + 1];
                    int o = row0 + 2 * q;
                    float bv = r0[2 * q];
                    o = v1 > bv ? row0 + 2 * q + 1 : o;
                    bv = v1 > bv ? v1 : bv;
                    o = v2 > bv ? row0 + w + 2 * q : o;
                    bv = v2 > bv ? v2 : bv;
                    o = v3 > bv ? row0 + w + 2 * q + 1 : o;
                    bv = v3 > bv ? v3 : bv;
                    out[p * Q + q] = relu && !(bv > 0.0f) ? 0.0f : bv;
                    oi[p * Q + q] = o;
                }
            }
            continue;
        }
        for (int p = 0; p < P; p++)
            for (int q = 0; q < Q; q++) {
                int best = (p * stride) * w + q * stride;
                float bv = in[best];
                for (int i = 0; i < size; i++)
                    for (int jj = 0; jj < size; jj++) {
                        int o = (p * stride + i) * w + q * stride + jj;
                        if (in[o] > bv) {
                            bv = in[o];
                            best = o;
                        }
                    }
                out[p * Q + q] = relu && !(bv > 0.0f) ? 0.0f : bv;
                oi[p * Q + q] = best;
            }
    }
}

static int maxpool_fwd_ex(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                          const float *x, float *y, int32_t *idx, int relu)
{
    pool_job j = {.h = h,
                  .w = w,
                  .size = size,
                  .stride = stride,
                  .P = (h - size) / stride + 1,
                  .Q = (w - size) / stride + 1,
                  .relu = relu,
                  .x = x,
                  .y = y,
                  .idx = idx};
    size_t grain = 16384 / ((size_t)h * w) + 1; /* planes per part */
    cpu_par_range(k, (size_t)n * c, grain, maxpool_fwd_planes, &j);
    return HONE_OK;
}

int cpu_maxpool_fwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride, const float *x,
                    float *y, int32_t *idx)
{
    return maxpool_fwd_ex(k, n, c, h, w, size, stride, x, y, idx, 0);
}

int cpu_maxpool_relu_fwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                         const float *x, float *y, int32_t *idx)
{
    return maxpool_fwd_ex(k, n, c, h, w, size, stride, x, y, idx, 1);
}

/* Each plane of dx is written whole: with non-overlapping 2x2 windows every pixel is set once
 * (the gradient at the argmax, 0 elsewhere; branch-free so it vectorises), so no zero-fill pass;
 * other windows zero the plane, then scatter. ym (the fused forward's output) masks the gradient
 * where max(0, pool) was 0; then dx is exactly maxpool_bwd(dy * (ym > 0)). */
CPU_SIMD static void maxpool_bwd_planes(void *arg, size_t b, size_t e)
{
    const pool_job *j = arg;
    int h = j->h, w = j->w, P = j->P, Q = j->Q;
    int tiled = j->size == 2 && j->stride == 2;
    for (size_t plane = b; plane < e; plane++) {
        float *g = j->y + plane * h * w;
        const float *gy = j->x + plane * P * Q;
        const float *ym = j->ym ? j->ym + plane * P * Q : NULL;
        const int32_t *oi = j->cidx + plane * P * Q;
        if (!tiled) {
            memset(g, 0, sizeof(float) * (size_t)h * w);
            for (int t = 0; t < P * Q; t++)
                g[oi[t]] += ym && !(ym[t] > 0.0f) ? 0.0f : gy[t];
            continue;
        }
        for (int p = 0; p < P; p++) {
            float *r0 = g + (size_t)(2 * p) * w, *r1 = r0 + w;
            const float *gp = gy + (size_t)p * Q;
            const int32_t *op = oi + (size_t)p * Q;
            int base = 2 * p * w;
            if (Q >= 4) {
                pool2_bwd_row(gp, ym ? ym + (size_t)p * Q : NULL, op, w, base, Q, r0, r1);
            } else if (ym) {
                const float *mp = ym + (size_t)p * Q;
                for (int q = 0; q < Q; q++) {
                    /* v = ym > 0 ? 0 + gy : +0 as a bit mask: a branch here mispredicts */
                    float v = 0.0f + gp[q]; /* as 0 += gy: -0 becomes +0 */
                    uint32_t bits;
                    memcpy(&bits, &v, sizeof(bits));
                    bits &= 0u - (uint32_t)(mp[q] > 0.0f);
                    memcpy(&v, &bits, sizeof(v));
                    int rel = op[q] - base - 2 * q;
                    r0[2 * q] = rel == 0 ? v : 0.0f;
                    r0[2 * q + 1] = rel == 1 ? v : 0.0f;
                    r1[2 * q] = rel == w ? v : 0.0f;
                    r1[2 * q + 1] = rel == w + 1 ? v : 0.0f;
                }
            } else {
                for (int q = 0; q < Q; q++) {
                    float v = 0.0f + gp[q];
                    int rel = op[q] - base - 2 * q;
                    r0[2 * q] = rel == 0 ? v : 0.0f;
                    r0[2 * q + 1] = rel == 1 ? v : 0.0f;
                    r1[2 * q] = rel == w ? v : 0.0f;
                    r1[2 * q + 1] = rel == w + 1 ? v : 0.0f;
                }
            }
            for (int x = 2 * Q; x < w; x++) /* odd width: the last column is in no window */
                r0[x] = r1[x] = 0.0f;
        }
        if (2 * P < h) /* odd height: the last row is in no window */
            memset(g + (size_t)(2 * P) * w, 0, sizeof(float) * (size_t)(h - 2 * P) * w);
    }
}

static int maxpool_bwd_ex(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                          const float *ym, const float *dy, const int32_t *idx, float *dx)
{
    pool_job j = {.h = h,
                  .w = w,
                  .size = size,
                  .stride = stride,
                  .P = (h - size) / stride + 1,
                  .Q = (w - size) / stride + 1,
                  .x = dy,
                  .ym = ym,
                  .y = dx,
                  .cidx = idx};
    size_t grain = 16384 / ((size_t)h * w) + 1;
    cpu_par_range(k, (size_t)n * c, grain, maxpool_bwd_planes, &j);
    return HONE_OK;
}

int cpu_maxpool_bwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride, const float *dy,
                    const int32_t *idx, float *dx)
{
    return maxpool_bwd_ex(k, n, c, h, w, size, stride, NULL, dy, idx, dx);
}

int cpu_maxpool_relu_bwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                         const float *y, const float *dy, const int32_t *idx, float *dx)
{
    return maxpool_bwd_ex(k, n, c, h, w, size, stride, y, dy, idx, dx);
}

int cpu_avgpool_global_fwd(hone_kctx *k, int n, int c, int h, int w, const float *x, float *y)
{
    (void)k;
    size_t hw = (size_t)h * w;
    for (size_t plane = 0; plane < (size_t)n * c; plane++) {
        double s = 0.0;
        for (size_t i = 0; i < hw; i++)
            s += x[plane * hw + i];
        y[plane] = (float)(s / (double)hw);
    }
    return HONE_OK;
}

int cpu_avgpool_global_bwd(hone_kctx *k, int n, int c, int h, int w, const float *dy, float *dx)
{
    (void)k;
    size_t hw = (size_t)h * w;
    for (size_t plane = 0; plane < (size_t)n * c; plane++) {
        float g = dy[plane] / (float)hw;
        for (size_t i = 0; i < hw; i++)
            dx[plane * hw + i] = g;
    }
    return HONE_OK;
}

int cpu_upsample_fwd(hone_kctx *k, int n, int c, int h, int w, int factor, const float *x, float *y)
{
    (void)k;
    int H = h * factor, W = w * factor;
    for (size_t plane = 0; plane < (size_t)n * c; plane++)
        for (int i = 0; i < H; i++)
            for (int j = 0; j < W; j++)
                y[plane * H * W + (size_t)i * W + j] =
                    x[plane * h * w + (size_t)(i / factor) * w + j / factor];
    return HONE_OK;
}

int cpu_upsample_bwd(hone_kctx *k, int n, int c, int h, int w, int factor, const float *dy,
                     float *dx)
{
    (void)k;
    int H = h * factor, W = w * factor;
    memset(dx, 0, sizeof(float) * (size_t)n * c * h * w);
    for (size_t plane = 0; plane < (size_t)n * c; plane++)
        for (int i = 0; i < H; i++)
            for (int j = 0; j < W; j++)
                dx[plane * h * w + (size_t)(i / factor) * w + j / factor] +=
                    dy[plane * H * W + (size_t)i * W + j];
    return HONE_OK;
}

/* ------------------------------------------------------------------ padded max pooling
 * (the ImageNet stem's 3x3 stride-2 pad-1 pool). Windows are clipped to the plane, so padding
 * never wins; the first maximum in row-major window order wins as above. Backward zeroes each
 * plane and scatters (windows overlap). */
typedef struct {
    int h, w, size, stride, pad, P, Q;
    const float *x;
    float *y;
    const int32_t *cidx;
    int32_t *idx;
} pool_pad_job;

static void maxpool_pad_fwd_planes(void *arg, size_t b, size_t e)
{
    const pool_pad_job *j = arg;
    int h = j->h, w = j->w, P = j->P, Q = j->Q;
    for (size_t plane = b; plane < e; plane++) {
        const float *in = j->x + plane * h * w;
        float *out = j->y + plane * P * Q;
        int32_t *oi = j->idx + plane * P * Q;
        for (int p = 0; p < P; p++) {
            int i0 = p * j->stride - j->pad, i1 = i0 + j->size;
            i0 = i0 < 0 ? 0 : i0;
            i1 = i1 > h ? h : i1;
            for (int q = 0; q < Q; q++) {
                int c0 = q * j->stride - j->pad, c1 = c0 + j->size;
                c0 = c0 < 0 ? 0 : c0;
                c1 = c1 > w ? w : c1;
                int best = i0 * w + c0;
                float bv = in[best];
                for (int i = i0; i < i1; i++)
                    for (int c = c0; c < c1; c++)
                        if (in[i * w + c] > bv) {
                            bv = in[i * w + c];
                            best = i * w + c;
                        }
                out[p * Q + q] = bv;
                oi[p * Q + q] = best;
            }
        }
    }
}

static void maxpool_pad_bwd_planes(void *arg, size_t b, size_t e)
{
    const pool_pad_job *j = arg;
    size_t hw = (size_t)j->h * j->w, pq = (size_t)j->P * j->Q;
    for (size_t plane = b; plane < e; plane++) {
        float *g = j->y + plane * hw;
        const float *gy = j->x + plane * pq;
        const int32_t *oi = j->cidx + plane * pq;
        memset(g, 0, sizeof(float) * hw);
        for (size_t t = 0; t < pq; t++)
            g[oi[t]] += gy[t];
    }
}

int cpu_maxpool_pad_fwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride, int pad,
                        const float *x, float *y, int32_t *idx)
{
    pool_pad_job j = {.h = h,
                      .w = w,
                      .size = size,
                      .stride = stride,
                      .pad = pad,
                      .P = (h + 2 * pad - size) / stride + 1,
                      .Q = (w + 2 * pad - size) / stride + 1,
                      .x = x,
                      .y = y,
                      .idx = idx};
    cpu_par_range(k, (size_t)n * c, 16384 / ((size_t)h * w) + 1, maxpool_pad_fwd_planes, &j);
    return HONE_OK;
}

int cpu_maxpool_pad_bwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride, int pad,
                        const float *dy, const int32_t *idx, float *dx)
{
    pool_pad_job j = {.h = h,
                      .w = w,
                      .size = size,
                      .stride = stride,
                      .pad = pad,
                      .P = (h + 2 * pad - size) / stride + 1,
                      .Q = (w + 2 * pad - size) / stride + 1,
                      .x = dy,
                      .y = dx,
                      .cidx = idx};
    cpu_par_range(k, (size_t)n * c, 16384 / ((size_t)h * w) + 1, maxpool_pad_bwd_planes, &j);
    return HONE_OK;
}
