/* tests/kernels/ref.c: naive double-precision references for kernels.h ops (see ref.h). Direct
 * loops straight from the definitions; no cleverness, so a disagreement points at the kernel. */
#include <math.h>
#include <stdio.h>

#include "ref.h"

void ref_fill_uniform(float *x, size_t n, uint64_t seed, float lo, float hi)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (size_t i = 0; i < n; i++) {
        uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        z ^= z >> 31;
        x[i] = lo + (hi - lo) * (float)((z >> 40) * (1.0 / 16777216.0));
    }
}

void ref_poison(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = NAN;
}

double ref_rel_err(const float *out, const double *ref, size_t n)
{
    double e = 0.0, r = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(out[i]))
            return INFINITY;
        e += (out[i] - ref[i]) * (out[i] - ref[i]);
        r += ref[i] * ref[i];
    }
    return sqrt(e) / fmax(sqrt(r), 1e-30);
}

double ref_rel_err_d(const double *out, const double *ref, size_t n)
{
    double e = 0.0, r = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(out[i]))
            return INFINITY;
        e += (out[i] - ref[i]) * (out[i] - ref[i]);
        r += ref[i] * ref[i];
    }
    return sqrt(e) / fmax(sqrt(r), 1e-30);
}

int ref_check(const char *name, const float *out, const double *ref, size_t n, double tol)
{
    double e = ref_rel_err(out, ref, n);
    if (e <= tol)
        return 0;
    fprintf(stderr, "%s: rel err %g (tol %g)\n", name, e, tol);
    return 1;
}

void ref_gemm(int ta, int tb, int M, int N, int K, double alpha, const float *A, int lda,
              const float *B, int ldb, double beta, const float *C0, int ldc, double *out)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0;
            for (int k = 0; k < K; k++) {
                double a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                double b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                s += a * b;
            }
            out[(size_t)i * N + j] = alpha * s + (beta != 0.0 ? beta * C0[(size_t)i * ldc + j] : 0);
        }
}

#define X4(t, a, b, c, d, B, C, D) (t)[(((size_t)(a) * (B) + (b)) * (C) + (c)) * (D) + (d)]

void ref_conv_fwd(const hone_conv_desc *d, const float *x, const float *w, const float *b,
                  double *y)
{
    for (int n = 0; n < d->n; n++)
        for (int k = 0; k < d->k; k++)
            for (int p = 0; p < d->p; p++)
                for (int q = 0; q < d->q; q++) {
                    double s = b ? b[k] : 0.0;
                    for (int c = 0; c < d->c; c++)
                        for (int r = 0; r < d->r; r++)
                            for (int t = 0; t < d->s; t++) {
                                int ih = p * d->stride - d->pad + r,
                                    iw = q * d->stride - d->pad + t;
                                if (ih < 0 || ih >= d->h || iw < 0 || iw >= d->w)
                                    continue;
                                s += (double)X4(x, n, c, ih, iw, d->c, d->h, d->w) *
                                     X4(w, k, c, r, t, d->c, d->r, d->s);
                            }
                    X4(y, n, k, p, q, d->k, d->p, d->q) = s;
                }
}

void ref_conv_bwd(const hone_conv_desc *d, const float *x, const float *w, const float *dy,
                  double *dx, double *dw, double *db)
{
    size_t nx = (size_t)d->n * d->c * d->h * d->w, nw = (size_t)d->k * d->c * d->r * d->s;
    if (dx)
        for (size_t i = 0; i < nx; i++)
            dx[i] = 0.0;
    for (size_t i = 0; i < nw; i++)
        dw[i] = 0.0;
    if (db)
        for (int k = 0; k < d->k; k++)
            db[k] = 0.0;
    for (int n = 0; n < d->n; n++)
        for (int k = 0; k < d->k; k++)
            for (int p = 0; p < d->p; p++)
                for (int q = 0; q < d->q; q++) {
                    double g = X4(dy, n, k, p, q, d->k, d->p, d->q);
                    if (db)
                        db[k] += g;
                    for (int c = 0; c < d->c; c++)
                        for (int r = 0; r < d->r; r++)
                            for (int t = 0; t < d->s; t++) {
                                int ih = p * d->stride - d->pad + r,
                                    iw = q * d->stride - d->pad + t;
                                if (ih < 0 || ih >= d->h || iw < 0 || iw >= d->w)
                                    continue;
                                X4(dw, k, c, r, t, d->c, d->r, d->s) +=
                                    g * X4(x, n, c, ih, iw, d->c, d->h, d->w);
                                if (dx)
                                    X4(dx, n, c, ih, iw, d->c, d->h, d->w) +=
                                        g * X4(w, k, c, r, t, d->c, d->r, d->s);
                            }
                }
}

/* Returns the argmax offset inside the plane (first maximum wins). */
static int ref_pool_arg(const float *plane, int w, int size, int stride, int p, int q)
{
    int best = p * stride * w + q * stride;
    for (int i = 0; i < size; i++)
        for (int j = 0; j < size; j++) {
            int o = (p * stride + i) * w + q * stride + j;
            if (plane[o] > plane[best])
                best = o;
        }
    return best;
}

void ref_maxpool_fwd(int n, int c, int h, int w, int size, int stride, const float *x, double *y)
{
    int P = (h - size) / stride + 1, Q = (w - size) / stride + 1;
    for (size_t pl = 0; pl < (size_t)n * c; pl++)
        for (int p = 0; p < P; p++)
            for (int q = 0; q < Q; q++) {
                const float *plane = x + pl * h * w;
                y[pl * P * Q + (size_t)p * Q + q] =
                    plane[ref_pool_arg(plane, w, size, stride, p, q)];
            }
}

void ref_maxpool_bwd(int n, int c, int h, int w, int size, int stride, const float *x,
                     const float *dy, double *dx)
{
    int P = (h - size) / stride + 1, Q = (w - size) / stride + 1;
    for (size_t i = 0; i < (size_t)n * c * h * w; i++)
        dx[i] = 0.0;
    for (size_t pl = 0; pl < (size_t)n * c; pl++)
        for (int p = 0; p < P; p++)
            for (int q = 0; q < Q; q++) {
                const float *plane = x + pl * h * w;
                dx[pl * h * w + ref_pool_arg(plane, w, size, stride, p, q)] +=
                    dy[pl * P * Q + (size_t)p * Q + q];
            }
}

void ref_avgpool_global_fwd(int n, int c, int h, int w, const float *x, double *y)
{
    for (size_t pl = 0; pl < (size_t)n * c; pl++) {
        double s = 0.0;
        for (int i = 0; i < h * w; i++)
            s += x[pl * h * w + i];
        y[pl] = s / (h * w);
    }
}

void ref_upsample_fwd(int n, int c, int h, int w, int factor, const float *x, double *y)
{
    int H = h * factor, W = w * factor;
    for (size_t pl = 0; pl < (size_t)n * c; pl++)
        for (int i = 0; i < H; i++)
            for (int j = 0; j < W; j++)
                y[pl * H * W + (size_t)i * W + j] = x[pl * h * w + (i / factor) * w + j / factor];
}

void ref_batchnorm_fwd(int n, int c, int hw, const float *x, const float *gamma, const float *beta,
                       double eps, double *y, double *mean, double *var)
{
    double m = (double)n * hw;
    for (int ch = 0; ch < c; ch++) {
        double s = 0.0, s2 = 0.0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < hw; j++)
                s += x[((size_t)i * c + ch) * hw + j];
        double mu = s / m;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < hw; j++) {
                double dlt = x[((size_t)i * c + ch) * hw + j] - mu;
                s2 += dlt * dlt;
            }
        double v = s2 / m;
        mean[ch] = mu;
        var[ch] = v;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < hw; j++) {
                size_t o = ((size_t)i * c + ch) * hw + j;
                y[o] = gamma[ch] * (x[o] - mu) / sqrt(v + eps) + beta[ch];
            }
    }
}

void ref_batchnorm_bwd(int n, int c, int hw, const float *x, const float *dy, const float *gamma,
                       double eps, double *dx, double *dgamma, double *dbeta)
{
    double m = (double)n * hw;
    for (int ch = 0; ch < c; ch++) {
        double s = 0.0, s2 = 0.0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < hw; j++)
                s += x[((size_t)i * c + ch) * hw + j];
        double mu = s / m;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < hw; j++) {
                double dlt = x[((size_t)i * c + ch) * hw + j] - mu;
                s2 += dlt * dlt;
            }
        double inv = 1.0 / sqrt(s2 / m + eps);
        double sdy = 0.0, sdyx = 0.0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < hw; j++) {
                size_t o = ((size_t)i * c + ch) * hw + j;
                sdy += dy[o];
                sdyx += dy[o] * (x[o] - mu) * inv;
            }
        dgamma[ch] = sdyx;
        dbeta[ch] = sdy;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < hw; j++) {
                size_t o = ((size_t)i * c + ch) * hw + j;
                double xhat = (x[o] - mu) * inv;
                dx[o] = gamma[ch] * inv / m * (m * dy[o] - sdy - xhat * sdyx);
            }
    }
}

void ref_softmax_xent(const float *logits, const int32_t *labels, int n, int classes, double eps,
                      double *dlogits, double *loss_sum, int *correct)
{
    *loss_sum = 0.0;
    *correct = 0;
    for (int i = 0; i < n; i++) {
        const float *z = logits + (size_t)i * classes;
        int y = labels[i];
        if (y < 0 || y >= classes) {
            if (dlogits)
                for (int j = 0; j < classes; j++)
                    dlogits[(size_t)i * classes + j] = 0.0;
            continue;
        }
        double mx = z[0];
        int arg = 0;
        for (int j = 1; j < classes; j++)
            if (z[j] > mx) {
                mx = z[j];
                arg = j;
            }
        double s = 0.0;
        for (int j = 0; j < classes; j++)
            s += exp(z[j] - mx);
        *correct += arg == y;
        for (int j = 0; j < classes; j++) { /* the targets' cross-entropy, term by term */
            double t = (1.0 - eps) * (j == y) + eps / classes;
            *loss_sum -= t * (z[j] - mx - log(s));
            if (dlogits)
                dlogits[(size_t)i * classes + j] = (exp(z[j] - mx) / s - t) / n;
        }
    }
}

void ref_sgd_step(double *w, const float *grad, double *v, size_t n, double lr, double mu,
                  double wd, int nesterov)
{
    for (size_t i = 0; i < n; i++) {
        double g = grad[i] + wd * w[i];
        v[i] = mu * v[i] + g;
        w[i] -= lr * (nesterov ? g + mu * v[i] : v[i]);
    }
}

void ref_adamw_step(double *w, const float *grad, double *m, double *v, size_t n, double lr,
                    double b1, double b2, double eps, double wd, int t)
{
    for (size_t i = 0; i < n; i++) {
        double g = grad[i];
        m[i] = b1 * m[i] + (1 - b1) * g;
        v[i] = b2 * v[i] + (1 - b2) * g * g;
        double mh = m[i] / (1 - pow(b1, t)), vh = v[i] / (1 - pow(b2, t));
        w[i] -= lr * (mh / (sqrt(vh) + eps) + wd * w[i]);
    }
}

/* The random ops below use backend.h's hash directly: it is the contract both backends keep. */
#include <stdlib.h>

#include "backend.h"

void ref_dropout_fwd(const float *x, size_t n, float p, uint64_t seed, uint64_t ctr, double *y,
                     uint8_t *mask)
{
    for (size_t i = 0; i < n; i++) {
        int keep = p == 0.0f || hone_rng_unit(seed, ctr, i) >= p;
        mask[i] = (uint8_t)keep;
        y[i] = keep ? (double)(x[i] * (1.0f / (1.0f - p))) : 0.0;
    }
}

static float clamp01(float v)
{
    return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
}

void ref_gather_images(const uint8_t *src, const int32_t *idx, int base, int n, int c, int h, int w,
                       const float *mean, const float *inv_std, const hone_kaugment *a,
                       uint64_t ctr, float *y)
{
    size_t hw = (size_t)h * w;
    for (int i = 0; i < n; i++) {
        const uint8_t *img = src + (size_t)(idx ? idx[base + i] : base + i) * hw * c;
        uint64_t j = (uint64_t)i * 8;
        int flip = 0, dx = 0, dy = 0, cy = 0, cx = 0, cut = 0;
        float ab = 1, ac = 1, as = 1, m = 0;
        if (a) {
            uint32_t u = hone_rng_u32(a->seed, ctr, j);
            flip = a->flip && (u & 1u);
            if (a->crop_padding) {
                dx = (int)((u >> 1) % (uint32_t)(2 * a->crop_padding + 1)) - a->crop_padding;
                dy = (int)((u >> 17) % (uint32_t)(2 * a->crop_padding + 1)) - a->crop_padding;
            }
            if (a->jitter > 0) {
                float lo = 1.0f - a->jitter, sp = 2.0f * a->jitter;
                ab = lo + sp * hone_rng_unit(a->seed, ctr, j + 1);
                ac = lo + sp * hone_rng_unit(a->seed, ctr, j + 2);
                as = lo + sp * hone_rng_unit(a->seed, ctr, j + 3);
            }
            cut = a->cutout;
            cy = (int)(hone_rng_u32(a->seed, ctr, j + 4) % (uint32_t)h);
            cx = (int)(hone_rng_u32(a->seed, ctr, j + 5) % (uint32_t)w);
        }
        /* source pixel of each output pixel, -1 for padding */
        long *from = malloc(sizeof(long) * hw);
        uint64_t g = 0;
        for (int yy = 0; yy < h; yy++)
            for (int xx = 0; xx < w; xx++) {
                int sy = yy - dy, sx = xx - dx;
                if (flip)
                    sx = w - 1 - sx;
                long o = (sy >= 0 && sy < h && sx >= 0 && sx < w) ? (long)sy * w + sx : -1;
                from[(size_t)yy * w + xx] = o;
                if (o >= 0) {
                    const uint8_t *p = img + (size_t)o * c;
                    g += c == 1 ? p[0]
                                : (19595u * p[0] + 38470u * p[1] + 7471u * p[2] + 32768u) >> 16;
                }
            }
        m = (float)((double)g / (255.0 * (double)hw));
        for (size_t px = 0; px < hw; px++) {
            float v[4];
            for (int ch = 0; ch < c; ch++)
                v[ch] =
                    from[px] < 0 ? 0.0f : (float)img[(size_t)from[px] * c + ch] * (1.0f / 255.0f);
            if (a && a->jitter > 0) {
                for (int ch = 0; ch < c; ch++)
                    v[ch] = clamp01(clamp01(m + ac * (v[ch] - m)) * ab);
                if (c == 3) {
                    float gr = 0.299f * v[0] + 0.587f * v[1] + 0.114f * v[2];
                    for (int ch = 0; ch < 3; ch++)
                        v[ch] = clamp01(gr + as * (v[ch] - gr));
                }
            }
            int yy = (int)(px / w), xx = (int)(px % w);
            int in_cut = cut > 0 && yy >= cy - cut / 2 && yy < cy - cut / 2 + cut &&
                         xx >= cx - cut / 2 && xx < cx - cut / 2 + cut;
            for (int ch = 0; ch < c; ch++)
                y[((size_t)i * c + ch) * hw + px] =
                    in_cut ? 0.0f : (v[ch] - mean[ch]) * inv_std[ch];
        }
        free(from);
    }
}

/* Selection by repeated minimum of (key, i): quadratic, but independent of any sort routine. */
void ref_permutation(int32_t *idx, int n, uint64_t seed, uint64_t epoch)
{
    uint8_t *used = calloc((size_t)n, 1);
    for (int out = 0; out < n; out++) {
        int best = -1;
        uint32_t bk = 0;
        for (int i = 0; i < n; i++) {
            if (used[i])
                continue;
            uint32_t key = hone_rng_u32(seed, epoch, (uint64_t)i);
            if (best < 0 || key < bk) {
                best = i;
                bk = key;
            }
        }
        used[best] = 1;
        idx[out] = best;
    }
    free(used);
}

/* One coverage cell's loss in double, from its definition (kernels.h), and the derivative in z
 * by the chain rule through s: dL/ds * s (1 - s). */
static double ref_cov(int mode, double gamma, double z, double t, double *dz)
{
    double s = 1.0 / (1.0 + exp(-z)), ds = s * (1.0 - s);
    if (mode == HONE_KCOV_L2) {
        *dz = 2.0 * (s - t) * ds;
        return (s - t) * (s - t);
    }
    /* -(t log s + (1 - t) log(1 - s)), with log s = -log1p(e^-z), log(1 - s) = -z + log s */
    double log_s = -log1p(exp(-z)), log_1s = -z + log_s;
    if (z < 0) { /* the same, from the other side without overflow */
        log_1s = -log1p(exp(z));
        log_s = z + log_1s;
    }
    double bce = -(t * log_s + (1.0 - t) * log_1s), dbce = s - t; /* d bce / dz */
    if (mode == HONE_KCOV_BCE) {
        *dz = dbce;
        return bce;
    }
    double p = t * s + (1.0 - t) * (1.0 - s), q = 1.0 - p, f = pow(q, gamma);
    double dq = -(2.0 * t - 1.0) * ds; /* dq/dz */
    *dz = f * dbce + (q > 0 ? gamma * pow(q, gamma - 1.0) * dq : 0.0) * bce;
    return f * bce;
}

void ref_detect_loss(const float *pred, const float *target, int n, int classes, int hw,
                     double cov_weight, double bg_weight, double bbox_weight, int cov_loss,
                     double gamma, double *dpred, double *loss_sum)
{
    *loss_sum = 0.0;
    for (int i = 0; i < n; i++)
        for (int c = 0; c < classes; c++)
            for (int q = 0; q < hw; q++) {
                const float *t = target + (size_t)i * 6 * classes * hw;
                size_t pc = ((size_t)i * 5 * classes + c) * hw + q;
                double w = t[(size_t)(5 * classes + c) * hw + q];
                int covered = 0; /* by an object of any class */
                for (int c2 = 0; c2 < classes; c2++)
                    covered |= t[(size_t)c2 * hw + q] > 0;
                double tc = t[(size_t)c * hw + q],
                       m = covered ? cov_weight : cov_weight * bg_weight;
                double dz = 0, l = 0; /* below 0: an ignore cell, no coverage term */
                if (tc >= 0)
                    l = ref_cov(cov_loss, gamma, (double)pred[pc], tc, &dz);
                *loss_sum += m * l;
                if (dpred)
                    dpred[pc] = m * dz / n;
                for (int j = 0; j < 4; j++) {
                    size_t o = (size_t)(classes + 4 * c + j) * hw + q;
                    size_t pb = (size_t)i * 5 * classes * hw + o;
                    double e = (double)pred[pb] - t[o];
                    *loss_sum += bbox_weight * w * fabs(e);
                    if (dpred)
                        dpred[pb] = (e > 0 ? 1.0 : e < 0 ? -1.0 : 0.0) * bbox_weight * w / n;
                }
            }
}
