/* kernels/cpu/cpu_conv.c: 2-D convolution for the CPU backend as im2col + one OpenBLAS GEMM per
 * chunk of images (batched, so the GEMM is large enough to thread well), backward as two GEMMs and
 * col2im. All scratch lives in the caller's workspace; the chunk size is a pure function of shape.
 */
#include <string.h>

#include "backend.h"

/* Workspace budget per chunk, in floats (16 MiB). */
#define CONV_WS_FLOATS ((size_t)1 << 22)

typedef struct {
    size_t crs, pq, g; /* rows of col, pixels per image, images per chunk */
} conv_plan;

static conv_plan plan_of(const hone_conv_desc *d)
{
    conv_plan pl;
    pl.crs = (size_t)d->c * d->r * d->s;
    pl.pq = (size_t)d->p * d->q;
    size_t per_image = (pl.crs + (size_t)d->k) * pl.pq;
    size_t g = CONV_WS_FLOATS / per_image;
    if (g < 1)
        g = 1;
    if (g > (size_t)d->n)
        g = (size_t)d->n;
    pl.g = g;
    return pl;
}

size_t cpu_conv_workspace(hone_kctx *k, const hone_conv_desc *d)
{
    (void)k;
    conv_plan pl = plan_of(d);
    return (pl.crs + (size_t)d->k) * pl.g * pl.pq * sizeof(float);
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

/* col[(c*R + r)*S + s][g*PQ + p*Q + q] = x[n0+g][c][p*stride-pad+r][q*stride-pad+s] (0 outside). */
static void im2col(const hone_conv_desc *d, const float *x, size_t n0, size_t g, float *col)
{
    size_t pq = (size_t)d->p * d->q, ld = g * pq, hw = (size_t)d->h * d->w;
    for (int c = 0; c < d->c; c++)
        for (int r = 0; r < d->r; r++)
            for (int s = 0; s < d->s; s++) {
                float *row = col + ((size_t)(c * d->r + r) * d->s + s) * ld;
                int lo, hi;
                q_range(d, s, &lo, &hi);
                for (size_t i = 0; i < g; i++) {
                    const float *img = x + ((n0 + i) * d->c + c) * hw;
                    float *out = row + i * pq;
                    for (int p = 0; p < d->p; p++) {
                        int ih = p * d->stride - d->pad + r;
                        float *o = out + (size_t)p * d->q;
                        if (ih < 0 || ih >= d->h) {
                            memset(o, 0, sizeof(float) * d->q);
                            continue;
                        }
                        const float *in = img + (size_t)ih * d->w;
                        int off = s - d->pad; /* in column = q*stride + off, >= 0 for q >= lo */
                        for (int q = 0; q < lo; q++)
                            o[q] = 0.0f;
                        if (d->stride == 1 && hi > lo)
                            memcpy(o + lo, in + lo + off, sizeof(float) * (size_t)(hi - lo));
                        else
                            for (int q = lo; q < hi; q++)
                                o[q] = in[q * d->stride + off];
                        for (int q = hi; q < d->q; q++)
                            o[q] = 0.0f;
                    }
                }
            }
}

/* The adjoint of im2col: dx[n0+g][c][ih][iw] += col[...]; dx for the chunk is zeroed first. */
static void col2im(const hone_conv_desc *d, const float *col, size_t n0, size_t g, float *dx)
{
    size_t pq = (size_t)d->p * d->q, ld = g * pq, hw = (size_t)d->h * d->w;
    memset(dx + n0 * d->c * hw, 0, sizeof(float) * g * d->c * hw);
    for (int c = 0; c < d->c; c++)
        for (int r = 0; r < d->r; r++)
            for (int s = 0; s < d->s; s++) {
                const float *row = col + ((size_t)(c * d->r + r) * d->s + s) * ld;
                int lo, hi;
                q_range(d, s, &lo, &hi);
                for (size_t i = 0; i < g; i++) {
                    float *img = dx + ((n0 + i) * d->c + c) * hw;
                    const float *src = row + i * pq;
                    for (int p = 0; p < d->p; p++) {
                        int ih = p * d->stride - d->pad + r;
                        if (ih < 0 || ih >= d->h)
                            continue;
                        float *o = img + (size_t)ih * d->w;
                        const float *sp = src + (size_t)p * d->q;
                        int off = s - d->pad;
                        for (int q = lo; q < hi; q++)
                            o[q * d->stride + off] += sp[q];
                    }
                }
            }
}

int cpu_conv_fwd(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                 const float *b, float *y, void *ws)
{
    conv_plan pl = plan_of(d);
    float *col = ws, *tmp = col + pl.crs * pl.g * pl.pq;
    for (size_t n0 = 0; n0 < (size_t)d->n; n0 += pl.g) {
        size_t g = (size_t)d->n - n0 < pl.g ? (size_t)d->n - n0 : pl.g;
        size_t cols = g * pl.pq;
        im2col(d, x, n0, g, col);
        cpu_gemm(k, 0, 0, d->k, (int)cols, (int)pl.crs, 1.0f, w, (int)pl.crs, col, (int)cols, 0.0f,
                 tmp, (int)cols);
        for (size_t i = 0; i < g; i++)
            for (int kk = 0; kk < d->k; kk++) {
                const float *src = tmp + (size_t)kk * cols + i * pl.pq;
                float *dst = y + ((n0 + i) * d->k + kk) * pl.pq;
                float bias = b ? b[kk] : 0.0f;
                for (size_t j = 0; j < pl.pq; j++)
                    dst[j] = src[j] + bias;
            }
    }
    return HONE_OK;
}

int cpu_conv_bwd(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                 const float *dy, float *dx, float *dw, float *db, void *ws)
{
    conv_plan pl = plan_of(d);
    float *col = ws, *tmp = col + pl.crs * pl.g * pl.pq;
    if (db)
        memset(db, 0, sizeof(float) * d->k);
    for (size_t n0 = 0; n0 < (size_t)d->n; n0 += pl.g) {
        size_t g = (size_t)d->n - n0 < pl.g ? (size_t)d->n - n0 : pl.g;
        size_t cols = g * pl.pq;
        /* tmp[k][i*PQ + j] = dy[n0+i][k][j] */
        for (size_t i = 0; i < g; i++)
            for (int kk = 0; kk < d->k; kk++) {
                const float *src = dy + ((n0 + i) * d->k + kk) * pl.pq;
                float *dst = tmp + (size_t)kk * cols + i * pl.pq;
                float s = 0.0f;
                for (size_t j = 0; j < pl.pq; j++) {
                    dst[j] = src[j];
                    s += src[j];
                }
                if (db)
                    db[kk] += s;
            }
        im2col(d, x, n0, g, col);
        cpu_gemm(k, 0, 1, d->k, (int)pl.crs, (int)cols, 1.0f, tmp, (int)cols, col, (int)cols,
                 n0 == 0 ? 0.0f : 1.0f, dw, (int)pl.crs);
        if (dx) {
            cpu_gemm(k, 1, 0, (int)pl.crs, (int)cols, d->k, 1.0f, w, (int)pl.crs, tmp, (int)cols,
                     0.0f, col, (int)cols);
            col2im(d, col, n0, g, dx);
        }
    }
    return HONE_OK;
}
