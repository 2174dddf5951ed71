/* CUDA backend: the bf16 NHWC ops (kernels.h, "bf16 NHWC activations"): layout and type
 * conversions, the convolutions (cuDNN's tensor-core kernels, conv_cudnn.cu), batch norm over
 * rows of channels, the residual join and global average pooling. Values are read as bf16, computed
 * in float and rounded once on store with backend.h's functions, as the CPU reference
 * (kernels/cpu/half.c) does. Memory-bound passes move 8 values (16 bytes) a thread where the
 * channel count and the pointers allow it. */
#include "common.cuh"
#include "conv_cudnn.cuh"

/* 8 bf16 values in one 16-byte access. */
struct __align__(16) h8
{
    hone_bf16 v[8];
};

/* Group i of V values (V = 8: one 16-byte access; V = 1: one value). v, a local array of only
 * 2-byte alignment, is copied element by element through an aligned h8 (kept in registers), never
 * accessed as one. */
template <int V>
__device__ static inline void hload(const hone_bf16 *__restrict__ p, int i, hone_bf16 *v)
{
    if constexpr (V == 8) {
        h8 t = ((const h8 *)p)[i];
#pragma unroll
        for (int j = 0; j < 8; j++)
            v[j] = t.v[j];
    } else {
        v[0] = p[i];
    }
}

template <int V>
__device__ static inline void hstore(hone_bf16 *__restrict__ p, int i, const hone_bf16 *v)
{
    if constexpr (V == 8) {
        h8 t;
#pragma unroll
        for (int j = 0; j < 8; j++)
            t.v[j] = v[j];
        ((h8 *)p)[i] = t;
    } else {
        p[i] = v[0];
    }
}

static inline int aligned16(const void *p)
{
    return ((uintptr_t)p & 15u) == 0;
}

static int h_total(size_t n, int *total)
{
    if (n >= (1u << 31))
        return HONE_ERANGE;
    *total = (int)n;
    return HONE_OK;
}

/* ------------------------------------------------------------------ layout */

/* y[i][p][ch] = x[i][ch][p]: one thread per output value (writes coalesced). */
__global__ static void k_to_nhwc_h(int total, int c, int hw, const float *__restrict__ x,
                                   hone_bf16 *__restrict__ y)
{
    HC_FOR32(o, total)
    {
        int ch = o % c, ip = o / c, i = ip / hw, p = ip - i * hw;
        y[o] = hone_f32_to_bf16(x[((size_t)i * c + ch) * hw + p]);
    }
}

/* dw[kk][ch][j] = dwh[kk][j][ch] for ch < c (KRSC bf16 of cp >= c channels -> KCRS float). */
__global__ static void k_from_krsc(int total, int c, int cp, int rs,
                                   const hone_bf16 *__restrict__ wh, float *__restrict__ w)
{
    HC_FOR32(o, total)
    {
        int j = o % rs, kc = o / rs, ch = kc % c, kk = kc / c;
        w[o] = hone_bf16_to_f32(wh[((size_t)kk * rs + j) * cp + ch]);
    }
}

/* Rows of c channels to rows of cp > c, the extra channels 0. */
__global__ static void k_pad_rows(int total, int c, int cp, const hone_bf16 *__restrict__ x,
                                  hone_bf16 *__restrict__ y)
{
    HC_FOR32(o, total)
    {
        int r = o / cp, j = o - r * cp;
        y[o] = j < c ? x[(size_t)r * c + j] : (hone_bf16)0;
    }
}

/* Back: y (rows of c) = (acc ? y + : ) the first c channels of x (rows of cp). */
__global__ static void k_unpad_rows(int total, int c, int cp, const hone_bf16 *__restrict__ x,
                                    hone_bf16 *__restrict__ y, int acc)
{
    HC_FOR32(o, total)
    {
        int r = o / c, j = o - r * c;
        float v = hone_bf16_to_f32(x[(size_t)r * cp + j]);
        y[o] = hone_f32_to_bf16(acc ? hone_bf16_to_f32(y[o]) + v : v);
    }
}

static int to_nhwc(hone_kctx *k, int n, int c, int hw, const float *x, hone_bf16 *y)
{
    int total, rc;
    if ((rc = h_total((size_t)n * c * hw, &total)) < 0)
        return rc;
    k_to_nhwc_h<<<hc_blocks(k, (size_t)total), HC_THREADS, 0, hc_stream(k)>>>(total, c, hw, x, y);
    HC_LAUNCHED();
    return HONE_OK;
}

extern "C" int cuda_to_nhwc_h(hone_kctx *k, int n, int c, int hw, const float *x, hone_bf16 *y)
{
    return to_nhwc(k, n, c, hw, x, y);
}

/* y[i][ch][p] = x[i][p][ch]: one thread per output value. */
__global__ static void k_from_nhwc_h(int total, int c, int hw, const hone_bf16 *__restrict__ x,
                                     float *__restrict__ y)
{
    HC_FOR32(o, total)
    {
        int p = o % hw, ic = o / hw, ch = ic % c, i = ic / c;
        y[o] = hone_bf16_to_f32(x[((size_t)i * hw + p) * c + ch]);
    }
}

extern "C" int cuda_from_nhwc_h(hone_kctx *k, int n, int c, int hw, const hone_bf16 *x, float *y)
{
    int total, rc;
    if ((rc = h_total((size_t)n * c * hw, &total)) < 0)
        return rc;
    k_from_nhwc_h<<<hc_blocks(k, (size_t)total), HC_THREADS, 0, hc_stream(k)>>>(total, c, hw, x, y);
    HC_LAUNCHED();
    return HONE_OK;
}

extern "C" int cuda_conv_weights_h(hone_kctx *k, const hone_conv_desc *d, const float *w,
                                   hone_bf16 *wh)
{
    return to_nhwc(k, d->k, d->c, d->r * d->s, w, wh); /* [k][c][rs] -> [k][rs][c] */
}

/* ------------------------------------------------------------------ convolution
 * The workspace is cuDNN's for the shape, then the bf16 filter gradient (cuDNN writes it in the
 * filters' type and layout; it is widened to the fp32 KCRS gradient after). Inputs of c % 8 != 0
 * channels (the 3-channel stem) are padded here to the next multiple of 8 with zero channels and
 * zero filters, which the tensor-core kernels take: left to itself, cuDNN padded them with slower
 * kernels of its own (the stem's forward and filter gradient took 317 us of a 8.0 ms ResNet-18
 * step at batch 512 on an H100). The padded input, filters and data gradient follow in the
 * workspace. */

static size_t al256(size_t b)
{
    return (b + 255) & ~(size_t)255;
}

/* d with its channels rounded up to a multiple of 8 (the shape cuDNN runs). */
static hone_conv_desc padded(const hone_conv_desc *d)
{
    hone_conv_desc p = *d;
    p.c = (d->c + 7) / 8 * 8;
    return p;
}

/* The workspace's parts for d: cuDNN's scratch, then the filter gradient, then (padded shapes
 * only) the padded input, filters and data gradient. */
struct conv_ws {
    const hc_dnn_conv *e;
    hone_conv_desc p; /* padded d (p.c == d->c: not padded) */
    size_t dnn, dwh, x, w, dx, total;
};

static int conv_ws_of(hone_kctx *k, const hone_conv_desc *d, conv_ws *c)
{
    c->p = padded(d);
    c->e = hc_dnn_conv_find_h(k, &c->p);
    if (!c->e)
        return HONE_ENOTSUP;
    size_t rs = (size_t)d->r * d->s, in = (size_t)d->n * d->h * d->w * c->p.c;
    int pad = c->p.c != d->c;
    if (pad && in >= ((size_t)1 << 31))
        return HONE_ERANGE; /* the padded input passes the 32-bit kernels (the caller: fp32) */
    c->dnn = 0;
    c->dwh = al256(hc_dnn_conv_workspace(c->e));
    c->x = c->dwh + al256((size_t)d->k * rs * c->p.c * sizeof(hone_bf16));
    c->w = c->x + (pad ? al256(in * sizeof(hone_bf16)) : 0);
    c->dx = c->w + (pad ? al256((size_t)d->k * rs * c->p.c * sizeof(hone_bf16)) : 0);
    c->total = c->dx + (pad ? al256(in * sizeof(hone_bf16)) : 0);
    return HONE_OK;
}

static int pad_rows(hone_kctx *k, size_t rows, int c, int cp, const hone_bf16 *x, hone_bf16 *y)
{
    int total, rc;
    if ((rc = h_total(rows * cp, &total)) < 0)
        return rc;
    k_pad_rows<<<hc_blocks(k, (size_t)total), HC_THREADS, 0, hc_stream(k)>>>(total, c, cp, x, y);
    HC_LAUNCHED();
    return HONE_OK;
}

extern "C" int cuda_conv_workspace_h(hone_kctx *k, const hone_conv_desc *d, size_t *bytes)
{
    conv_ws c;
    int rc = conv_ws_of(k, d, &c);
    if (rc == HONE_OK)
        *bytes = c.total;
    return rc;
}

extern "C" int cuda_conv_fwd_h(hone_kctx *k, const hone_conv_desc *d, const hone_bf16 *x,
                               const hone_bf16 *wh, hone_bf16 *y, void *ws)
{
    conv_ws c;
    int rc = conv_ws_of(k, d, &c);
    if (rc < 0)
        return rc;
    if (c.p.c != d->c) {
        hone_bf16 *xp = (hone_bf16 *)((char *)ws + c.x), *wp = (hone_bf16 *)((char *)ws + c.w);
        if ((rc = pad_rows(k, (size_t)d->n * d->h * d->w, d->c, c.p.c, x, xp)) < 0 ||
            (rc = pad_rows(k, (size_t)d->k * d->r * d->s, d->c, c.p.c, wh, wp)) < 0)
            return rc;
        x = xp;
        wh = wp;
    }
    return hc_dnn_conv_fwd_h(k, c.e, x, wh, y, ws);
}

extern "C" int cuda_conv_bwd_h(hone_kctx *k, const hone_conv_desc *d, const hone_bf16 *x,
                               const hone_bf16 *wh, const hone_bf16 *dy, hone_bf16 *dx, int acc,
                               float *dw, void *ws)
{
    conv_ws c;
    int rc = conv_ws_of(k, d, &c);
    if (rc < 0)
        return rc;
    int pad = c.p.c != d->c;
    hone_bf16 *dwh = (hone_bf16 *)((char *)ws + c.dwh), *dxp = dx;
    if (pad) {
        hone_bf16 *xp = (hone_bf16 *)((char *)ws + c.x), *wp = (hone_bf16 *)((char *)ws + c.w);
        if ((rc = pad_rows(k, (size_t)d->n * d->h * d->w, d->c, c.p.c, x, xp)) < 0 ||
            (dx && (rc = pad_rows(k, (size_t)d->k * d->r * d->s, d->c, c.p.c, wh, wp)) < 0))
            return rc;
        x = xp;
        wh = wp;
        dxp = dx ? (hone_bf16 *)((char *)ws + c.dx) : NULL;
    }
    if ((rc = hc_dnn_conv_bwd_h(k, c.e, x, wh, dy, dxp, acc && !pad, dwh, ws)) < 0)
        return rc;
    if (pad && dx) {
        int total = d->n * d->h * d->w * d->c;
        k_unpad_rows<<<hc_blocks(k, (size_t)total), HC_THREADS, 0, hc_stream(k)>>>(
            total, d->c, c.p.c, dxp, dx, acc);
        HC_LAUNCHED();
    }
    int total = d->k * d->c * d->r * d->s;
    k_from_krsc<<<hc_blocks(k, (size_t)total), HC_THREADS, 0, hc_stream(k)>>>(total, d->c, c.p.c,
                                                                              d->r * d->s, dwh, dw);
    HC_LAUNCHED();
    return HONE_OK;
}

/* ------------------------------------------------------------------ batch norm over rows
 * m rows of c channels. Reductions: grid (channel tiles, S row chunks), block TX x TY = 256
 * threads: TX threads across the tile's channels, V neighbouring channels each (V = 8: one
 * 16-byte load; c % 8 == 0), TY rows at a time; the TY partial sums of a channel are then added
 * in row order. Each block writes its chunk's partials, chunk-major, in the layout norm.cu's folds
 * read (they add the chunks in order: deterministic, no atomics). */
#define BNH_THREADS 256
#define BNH_TILE 512 /* channels a block at most */
#define BNH_MAX_CHUNKS 1024

struct bnh_grid {
    int S, len; /* row chunks */
    int V, tx;  /* channels a thread, threads across the tile */
    int tiles;  /* channel tiles */
};

static int bnh_grid_of(hone_kctx *k, int m, int c, int v8, bnh_grid *g)
{
    hone_cuda *cu = hc_of(k);
    g->V = v8 ? 8 : 1;
    int tile = v8 ? (c < BNH_TILE ? c : BNH_TILE) : 32;
    g->tx = tile / g->V;
    g->tiles = (c + tile - 1) / tile;
    long S = ((long)cu->sms * 8 + g->tiles - 1) / g->tiles;
    long by_size = (m + 63) / 64; /* at least 64 rows a chunk */
    if (S > by_size)
        S = by_size;
    if (S > BNH_MAX_CHUNKS)
        S = BNH_MAX_CHUNKS;
    if (S * c * 2 > (long)cu->bn_part_floats)
        S = (long)cu->bn_part_floats / (2L * c);
    if (S < 1)
        return HONE_ERANGE;
    g->len = (int)((m + S - 1) / S);
    g->S = (m + g->len - 1) / g->len;
    return HONE_OK;
}

/* V values at p + at (a multiple of V) as floats. */
template <int V>
__device__ static inline void bnh_load(const hone_bf16 *__restrict__ p, size_t at, float *f)
{
    hone_bf16 h[V];
    hload<V>(p + at, 0, h);
#pragma unroll
    for (int j = 0; j < V; j++)
        f[j] = hone_bf16_to_f32(h[j]);
}

/* Adds the TY rows' (a, b) per channel of the tile in row order into sh (dynamic shared memory,
 * 2 * TY * TX * V floats); on return tot[2 * j + {0,1}] for tile channel j < TX * V. */
template <int V>
__device__ static inline float *bnh_block_sums(const float *a, const float *b, float *sh)
{
    int w = blockDim.x * V, at = threadIdx.y * w + threadIdx.x * V;
    float *sa = sh, *sb = sh + blockDim.y * w;
#pragma unroll
    for (int j = 0; j < V; j++) {
        sa[at + j] = a[j];
        sb[at + j] = b[j];
    }
    __syncthreads();
    int lin = threadIdx.y * blockDim.x + threadIdx.x, nt = blockDim.x * blockDim.y;
    float *tot = sb + blockDim.y * w; /* 2 * w more floats */
    for (int j = lin; j < w; j += nt) {
        float ta = 0.f, tb = 0.f;
        for (int t = 0; t < (int)blockDim.y; t++) {
            ta += sa[t * w + j];
            tb += sb[t * w + j];
        }
        tot[2 * j] = ta;
        tot[2 * j + 1] = tb;
    }
    __syncthreads();
    return tot;
}

/* MODE 0 (statistics): part = the chunk's mean and sum of squared deviations from it, from sums
 * shifted by the chunk's first row (one pass; the shift keeps the difference of squares exact
 * enough). MODE 1 (backward): the chunk's sum of g and of g * xhat, g = dy (where y_relu > 0 when
 * fused). */
template <int V, int MODE>
__global__ static void k_bnh_reduce(int m, int c, int len, const hone_bf16 *__restrict__ x,
                                    const hone_bf16 *__restrict__ y_relu,
                                    const hone_bf16 *__restrict__ dy,
                                    const float *__restrict__ save_mean,
                                    const float *__restrict__ save_invstd, float *__restrict__ part)
{
    extern __shared__ float sh[];
    int tile0 = blockIdx.x * blockDim.x * V, ch0 = tile0 + threadIdx.x * V, s = blockIdx.y;
    int r0 = s * len, r1 = min(m, r0 + len);
    float a[V], b[V], k0[V], k1[V], xv[V], gv[V], yv[V];
#pragma unroll
    for (int j = 0; j < V; j++)
        a[j] = b[j] = k0[j] = k1[j] = 0.f;
    if (ch0 < c) {
        if constexpr (MODE == 0) {
            bnh_load<V>(x, (size_t)r0 * c + ch0, k0);
        } else {
#pragma unroll
            for (int j = 0; j < V; j++) {
                k0[j] = save_mean[ch0 + j];
                k1[j] = save_invstd[ch0 + j];
            }
        }
#pragma unroll 4
        for (int r = r0 + threadIdx.y; r < r1; r += blockDim.y) {
            size_t at = (size_t)r * c + ch0;
            bnh_load<V>(x, at, xv);
            if constexpr (MODE == 0) {
#pragma unroll
                for (int j = 0; j < V; j++) {
                    float d = xv[j] - k0[j];
                    a[j] += d;
                    b[j] += d * d;
                }
            } else {
                bnh_load<V>(dy, at, gv);
                if (y_relu)
                    bnh_load<V>(y_relu, at, yv);
#pragma unroll
                for (int j = 0; j < V; j++) {
                    float g = !y_relu || yv[j] > 0.f ? gv[j] : 0.f;
                    a[j] += g;
                    b[j] += g * (xv[j] - k0[j]) * k1[j];
                }
            }
        }
    }
    const float *tot = bnh_block_sums<V>(a, b, sh);
    int w = blockDim.x * V, lin = threadIdx.y * blockDim.x + threadIdx.x;
    for (int j = lin; j < w && tile0 + j < c; j += blockDim.x * blockDim.y) {
        int ch = tile0 + j;
        float *p = part + ((size_t)s * c + ch) * 2;
        float ta = tot[2 * j], tb = tot[2 * j + 1];
        if constexpr (MODE == 0) {
            float n = (float)(r1 - r0), dm = ta / n;
            p[0] = hone_bf16_to_f32(x[(size_t)r0 * c + ch]) + dm;
            p[1] = fmaxf(tb - ta * dm, 0.f);
        } else {
            p[0] = ta;
            p[1] = tb;
        }
    }
}

/* Launches the reduction of mode `mode` over g's grid. */
static int bnh_reduce(hone_kctx *k, const bnh_grid *g, int mode, int m, int c, const hone_bf16 *x,
                      const hone_bf16 *y_relu, const hone_bf16 *dy, const float *save_mean,
                      const float *save_invstd)
{
    dim3 grid(g->tiles, g->S), block(g->tx, BNH_THREADS / g->tx);
    size_t shb = (2 * (size_t)block.y + 2) * g->tx * g->V * sizeof(float);
    float *part = hc_of(k)->bn_part;
    cudaStream_t st = hc_stream(k);
    if (g->V == 8 && mode == 0)
        k_bnh_reduce<8, 0><<<grid, block, shb, st>>>(m, c, g->len, x, NULL, NULL, NULL, NULL, part);
    else if (g->V == 8)
        k_bnh_reduce<8, 1>
            <<<grid, block, shb, st>>>(m, c, g->len, x, y_relu, dy, save_mean, save_invstd, part);
    else if (mode == 0)
        k_bnh_reduce<1, 0><<<grid, block, shb, st>>>(m, c, g->len, x, NULL, NULL, NULL, NULL, part);
    else
        k_bnh_reduce<1, 1>
            <<<grid, block, shb, st>>>(m, c, g->len, x, y_relu, dy, save_mean, save_invstd, part);
    HC_LAUNCHED();
    return HONE_OK;
}

/* Per-channel affine coefficients in shared memory (2 or 3 floats a channel), computed by each
 * block from the saved statistics. mode 0: training forward y = a x + b from the batch
 * statistics; 1: inference, from the running ones; 2: backward dx = a g + b x + e. */
__device__ static void bnh_coef(int c, int mode, float m, const float *gamma, const float *beta,
                                const float *mean, const float *var_or_invstd, float eps,
                                const float *dgamma, const float *dbeta, float *sh)
{
    for (int ch = threadIdx.x; ch < c; ch += blockDim.x) {
        float g = gamma[ch];
        float is = mode == 1 ? rsqrtf(var_or_invstd[ch] + eps) : var_or_invstd[ch];
        float a = g * is;
        if (mode < 2) {
            sh[ch] = a;
            sh[c + ch] = beta[ch] - mean[ch] * a;
        } else {
            /* dx = a (g - dbeta/m - xhat dgamma/m), xhat = (x - mean) is */
            float bx = -a * is * dgamma[ch] / m;
            sh[ch] = a;
            sh[c + ch] = bx;
            sh[2 * c + ch] = -a * dbeta[ch] / m - bx * mean[ch];
        }
    }
    __syncthreads();
}

/* Forward apply: y = relu?(a x + b (+ skip)), V values a thread (V = 8: c % 8 == 0, 16-byte
 * aligned). */
template <int V>
__global__ static void k_bnh_apply(int total, int c, int mode, const hone_bf16 *__restrict__ x,
                                   const float *__restrict__ gamma, const float *__restrict__ beta,
                                   const float *__restrict__ mean, const float *__restrict__ vis,
                                   float eps, const hone_bf16 *__restrict__ skip,
                                   hone_bf16 *__restrict__ y, int relu)
{
    extern __shared__ float sh[];
    bnh_coef(c, mode, 0.f, gamma, beta, mean, vis, eps, NULL, NULL, sh);
    HC_FOR32(i, total / V)
    {
        int ch0 = (i * V) % c;
        hone_bf16 in[V], sk[V], out[V];
        hload<V>(x, i, in);
        if (skip)
            hload<V>(skip, i, sk);
#pragma unroll
        for (int j = 0; j < V; j++) {
            float v = hone_bf16_to_f32(in[j]) * sh[ch0 + j] + sh[c + ch0 + j];
            if (skip)
                v += hone_bf16_to_f32(sk[j]);
            out[j] = hone_f32_to_bf16(relu ? fmaxf(v, 0.f) : v);
        }
        hstore<V>(y, i, out);
    }
}

/* Backward apply: dx = a g + b x + e, g = dy (where y_relu > 0 when fused). */
template <int V>
__global__ static void
k_bnh_bwd_apply(int total, int c, float m, const hone_bf16 *__restrict__ x,
                const hone_bf16 *__restrict__ y_relu, const hone_bf16 *__restrict__ dy,
                const float *__restrict__ gamma, const float *__restrict__ save_mean,
                const float *__restrict__ save_invstd, const float *__restrict__ dgamma,
                const float *__restrict__ dbeta, hone_bf16 *__restrict__ dx)
{
    extern __shared__ float sh[];
    bnh_coef(c, 2, m, gamma, NULL, save_mean, save_invstd, 0.f, dgamma, dbeta, sh);
    HC_FOR32(i, total / V)
    {
        int ch0 = (i * V) % c;
        hone_bf16 xi[V], yi[V], gi[V], out[V];
        hload<V>(x, i, xi);
        hload<V>(dy, i, gi);
        if (y_relu)
            hload<V>(y_relu, i, yi);
#pragma unroll
        for (int j = 0; j < V; j++) {
            float g = !y_relu || hone_bf16_to_f32(yi[j]) > 0.f ? hone_bf16_to_f32(gi[j]) : 0.f;
            int ch = ch0 + j;
            out[j] = hone_f32_to_bf16(sh[ch] * g + sh[c + ch] * hone_bf16_to_f32(xi[j]) +
                                      sh[2 * c + ch]);
        }
        hstore<V>(dx, i, out);
    }
}

/* 8 values a thread when every row holds whole groups of 8 and the pointers are 16-byte aligned. */
static int vec8(int c, const void *a, const void *b, const void *d, const void *e)
{
    return c % 8 == 0 && aligned16(a) && aligned16(b) && (!d || aligned16(d)) &&
           (!e || aligned16(e));
}

extern "C" int cuda_batchnorm_fwd_h(hone_kctx *k, int m, int c, const hone_bf16 *x,
                                    const float *gamma, const float *beta, float *running_mean,
                                    float *running_var, float momentum, float eps, int training,
                                    float *save_mean, float *save_invstd, const hone_bf16 *skip,
                                    hone_bf16 *y, int relu)
{
    int total, rc;
    if ((rc = h_total((size_t)m * c, &total)) < 0)
        return rc;
    int v8 = vec8(c, x, y, skip, NULL);
    const float *mean = running_mean, *vis = running_var;
    if (training) {
        bnh_grid g;
        if ((rc = bnh_grid_of(k, m, c, v8, &g)) < 0 ||
            (rc = bnh_reduce(k, &g, 0, m, c, x, NULL, NULL, NULL, NULL)) < 0 ||
            (rc = hc_bn_fold_stats(k, c, m, g.S, g.len, running_mean, running_var, momentum, eps,
                                   save_mean, save_invstd)) < 0)
            return rc;
        mean = save_mean;
        vis = save_invstd;
    }
    size_t shb = 2 * (size_t)c * sizeof(float);
    unsigned blocks = hc_blocks(k, (size_t)total / (v8 ? 8 : 1));
    if (v8)
        k_bnh_apply<8><<<blocks, HC_THREADS, shb, hc_stream(k)>>>(
            total, c, !training, x, gamma, beta, mean, vis, eps, skip, y, relu);
    else
        k_bnh_apply<1><<<blocks, HC_THREADS, shb, hc_stream(k)>>>(
            total, c, !training, x, gamma, beta, mean, vis, eps, skip, y, relu);
    HC_LAUNCHED();
    return HONE_OK;
}

extern "C" int cuda_batchnorm_bwd_h(hone_kctx *k, int m, int c, const hone_bf16 *x,
                                    const hone_bf16 *y_relu, const hone_bf16 *dy,
                                    const float *gamma, const float *save_mean,
                                    const float *save_invstd, hone_bf16 *dx, float *dgamma,
                                    float *dbeta)
{
    int total, rc;
    bnh_grid g;
    int v8 = vec8(c, x, dy, y_relu, dx);
    if ((rc = h_total((size_t)m * c, &total)) < 0 || (rc = bnh_grid_of(k, m, c, v8, &g)) < 0 ||
        (rc = bnh_reduce(k, &g, 1, m, c, x, y_relu, dy, save_mean, save_invstd)) < 0 ||
        (rc = hc_bn_fold_grads(k, c, g.S, dgamma, dbeta)) < 0)
        return rc;
    size_t shb = 3 * (size_t)c * sizeof(float);
    unsigned blocks = hc_blocks(k, (size_t)total / (v8 ? 8 : 1));
    if (v8)
        k_bnh_bwd_apply<8><<<blocks, HC_THREADS, shb, hc_stream(k)>>>(
            total, c, (float)m, x, y_relu, dy, gamma, save_mean, save_invstd, dgamma, dbeta, dx);
    else
        k_bnh_bwd_apply<1><<<blocks, HC_THREADS, shb, hc_stream(k)>>>(
            total, c, (float)m, x, y_relu, dy, gamma, save_mean, save_invstd, dgamma, dbeta, dx);
    HC_LAUNCHED();
    return HONE_OK;
}

/* ------------------------------------------------------------------ residual join */

template <int V>
__global__ static void k_add_relu_fwd_h(int total, const hone_bf16 *__restrict__ a,
                                        const hone_bf16 *__restrict__ b, hone_bf16 *__restrict__ y)
{
    HC_FOR32(i, total / V)
    {
        hone_bf16 av[V], bv[V], out[V];
        hload<V>(a, i, av);
        hload<V>(b, i, bv);
#pragma unroll
        for (int j = 0; j < V; j++)
            out[j] =
                hone_f32_to_bf16(fmaxf(hone_bf16_to_f32(av[j]) + hone_bf16_to_f32(bv[j]), 0.f));
        hstore<V>(y, i, out);
    }
}

template <int V>
__global__ static void k_add_relu_bwd_h(int total, const hone_bf16 *__restrict__ y,
                                        const hone_bf16 *__restrict__ dy,
                                        hone_bf16 *__restrict__ da, hone_bf16 *__restrict__ db)
{
    HC_FOR32(i, total / V)
    {
        hone_bf16 yv[V], gv[V];
        hload<V>(y, i, yv);
        hload<V>(dy, i, gv);
#pragma unroll
        for (int j = 0; j < V; j++)
            gv[j] = hone_bf16_to_f32(yv[j]) > 0.f ? gv[j] : (hone_bf16)0;
        hstore<V>(da, i, gv);
        if (db)
            hstore<V>(db, i, gv);
    }
}

extern "C" int cuda_add_relu_fwd_h(hone_kctx *k, const hone_bf16 *a, const hone_bf16 *b,
                                   hone_bf16 *y, size_t n)
{
    int total, rc;
    if ((rc = h_total(n, &total)) < 0)
        return rc;
    if (vec8(total, a, b, y, NULL))
        k_add_relu_fwd_h<8><<<hc_blocks(k, n / 8), HC_THREADS, 0, hc_stream(k)>>>(total, a, b, y);
    else
        k_add_relu_fwd_h<1><<<hc_blocks(k, n), HC_THREADS, 0, hc_stream(k)>>>(total, a, b, y);
    HC_LAUNCHED();
    return HONE_OK;
}

extern "C" int cuda_add_relu_bwd_h(hone_kctx *k, const hone_bf16 *y, const hone_bf16 *dy,
                                   hone_bf16 *da, hone_bf16 *db, size_t n)
{
    int total, rc;
    if ((rc = h_total(n, &total)) < 0)
        return rc;
    if (vec8(total, y, dy, da, db))
        k_add_relu_bwd_h<8>
            <<<hc_blocks(k, n / 8), HC_THREADS, 0, hc_stream(k)>>>(total, y, dy, da, db);
    else
        k_add_relu_bwd_h<1><<<hc_blocks(k, n), HC_THREADS, 0, hc_stream(k)>>>(total, y, dy, da, db);
    HC_LAUNCHED();
    return HONE_OK;
}

/* ------------------------------------------------------------------ padded max pooling */

static int pool_side(int in, int size, int stride, int pad)
{
    return (in + 2 * pad - size) / stride + 1;
}

/* A thread per output value [n][p][q][c]; the window in row-major order, the first maximum wins. */
__global__ static void k_maxpool_pad_fwd_h(int total, int c, int h, int w, int P, int Q, int size,
                                           int stride, int pad, const hone_bf16 *__restrict__ x,
                                           hone_bf16 *__restrict__ y, int32_t *__restrict__ idx)
{
    HC_FOR32(o, total)
    {
        int ch = o % c, t = o / c, q = t % Q, t2 = t / Q, p = t2 % P, i = t2 / P;
        float best = 0.f;
        int at = -1;
        for (int r = 0; r < size; r++) {
            int yy = p * stride - pad + r;
            if (yy < 0 || yy >= h)
                continue;
            for (int s = 0; s < size; s++) {
                int xx = q * stride - pad + s;
                if (xx < 0 || xx >= w)
                    continue;
                float v = hone_bf16_to_f32(x[(((size_t)i * h + yy) * w + xx) * c + ch]);
                if (at < 0 || v > best) {
                    best = v;
                    at = yy * w + xx;
                }
            }
        }
        y[o] = hone_f32_to_bf16(best);
        idx[o] = at;
    }
}

/* A thread per input value: the dy of the windows that chose it, added in the outputs' row-major
 * order (the CPU reference's order: the same sums bit for bit). */
__global__ static void k_maxpool_pad_bwd_h(int total, int c, int h, int w, int P, int Q, int size,
                                           int stride, int pad, const hone_bf16 *__restrict__ dy,
                                           const int32_t *__restrict__ idx,
                                           hone_bf16 *__restrict__ dx)
{
    HC_FOR32(o, total)
    {
        int ch = o % c, t = o / c, xx = t % w, t2 = t / w, yy = t2 % h, i = t2 / h;
        int me = yy * w + xx;
        /* windows p with p*stride - pad <= yy <= p*stride - pad + size - 1 */
        int p0 = max(0, (yy + pad - size + stride) / stride), p1 = min(P - 1, (yy + pad) / stride);
        int q0 = max(0, (xx + pad - size + stride) / stride), q1 = min(Q - 1, (xx + pad) / stride);
        float acc = 0.f;
        for (int p = p0; p <= p1; p++)
            for (int q = q0; q <= q1; q++) {
                size_t at = (((size_t)i * P + p) * Q + q) * c + ch;
                if (idx[at] == me)
                    acc += hone_bf16_to_f32(dy[at]);
            }
        dx[o] = hone_f32_to_bf16(acc);
    }
}

extern "C" int cuda_maxpool_pad_fwd_h(hone_kctx *k, int n, int c, int h, int w, int size,
                                      int stride, int pad, const hone_bf16 *x, hone_bf16 *y,
                                      int32_t *idx)
{
    int P = pool_side(h, size, stride, pad), Q = pool_side(w, size, stride, pad), total, rc;
    if ((rc = h_total((size_t)n * P * Q * c, &total)) < 0)
        return rc;
    k_maxpool_pad_fwd_h<<<hc_blocks(k, (size_t)total), HC_THREADS, 0, hc_stream(k)>>>(
        total, c, h, w, P, Q, size, stride, pad, x, y, idx);
    HC_LAUNCHED();
    return HONE_OK;
}

extern "C" int cuda_maxpool_pad_bwd_h(hone_kctx *k, int n, int c, int h, int w, int size,
                                      int stride, int pad, const hone_bf16 *dy, const int32_t *idx,
                                      hone_bf16 *dx)
{
    int P = pool_side(h, size, stride, pad), Q = pool_side(w, size, stride, pad);
    int total = n * h * w * c; /* below 2^31: dispatch checked */
    k_maxpool_pad_bwd_h<<<hc_blocks(k, (size_t)total), HC_THREADS, 0, hc_stream(k)>>>(
        total, c, h, w, P, Q, size, stride, pad, dy, idx, dx);
    HC_LAUNCHED();
    return HONE_OK;
}

/* ------------------------------------------------------------------ global average pooling */

/* y[i][ch] = mean over p of x[i][p][ch]: a thread per (i, ch), neighbours read neighbours. */
__global__ static void k_gap_fwd_h(int total, int c, int hw, const hone_bf16 *__restrict__ x,
                                   float *__restrict__ y)
{
    HC_FOR32(o, total)
    {
        int i = o / c, ch = o - i * c;
        const hone_bf16 *p = x + (size_t)i * hw * c + ch;
        float s = 0.f;
        for (int j = 0; j < hw; j++)
            s += hone_bf16_to_f32(p[(size_t)j * c]);
        y[o] = s / (float)hw;
    }
}

__global__ static void k_gap_bwd_h(int total, int c, int hw, float inv,
                                   const float *__restrict__ dy, hone_bf16 *__restrict__ dx)
{
    HC_FOR32(o, total)
    {
        int ch = o % c, i = o / c / hw;
        dx[o] = hone_f32_to_bf16(dy[(size_t)i * c + ch] * inv);
    }
}

extern "C" int cuda_avgpool_global_fwd_h(hone_kctx *k, int n, int c, int hw, const hone_bf16 *x,
                                         float *y)
{
    int total = n * c; /* below 2^31: dispatch checked n * c * hw */
    k_gap_fwd_h<<<hc_blocks(k, (size_t)total), HC_THREADS, 0, hc_stream(k)>>>(total, c, hw, x, y);
    HC_LAUNCHED();
    return HONE_OK;
}

extern "C" int cuda_avgpool_global_bwd_h(hone_kctx *k, int n, int c, int hw, const float *dy,
                                         hone_bf16 *dx)
{
    int total = n * c * hw;
    k_gap_bwd_h<<<hc_blocks(k, (size_t)total), HC_THREADS, 0, hc_stream(k)>>>(
        total, c, hw, 1.0f / (float)hw, dy, dx);
    HC_LAUNCHED();
    return HONE_OK;
}
