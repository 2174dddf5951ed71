/* CUDA backend: max pooling (argmax kept for backward; optionally fused with ReLU), global
 * average pooling and nearest-neighbour upsampling (detection heads). Backward passes are gathers,
 * except max-pool with overlapping windows, which scatters with atomics into a zeroed dx. */
#include "common.cuh"

/* RELU: y = max(0, window max) (maxpool_relu_fwd); idx is the argmax of x either way. */
template <bool RELU>
__global__ static void k_maxpool_fwd(const float *__restrict__ x, float *__restrict__ y,
                                     int32_t *__restrict__ idx, int planes, int h, int w, int size,
                                     int stride, int p, int q)
{
    HC_FOR32(o, planes * p * q)
    {
        int plane = o / (p * q), r = o - plane * p * q;
        int op = r / q, oq = r - op * q;
        const float *xp = x + (size_t)plane * h * w;
        int i0 = op * stride, j0 = oq * stride;
        float best = xp[i0 * w + j0];
        int bi = i0 * w + j0;
        for (int i = i0; i < i0 + size; i++)
            for (int j = j0; j < j0 + size; j++) {
                float v = xp[i * w + j];
                if (v > best) { /* first maximum wins, as on the CPU */
                    best = v;
                    bi = i * w + j;
                }
            }
        y[o] = RELU ? (best > 0.f ? best : 0.f) : best;
        idx[o] = bi;
    }
}

static int maxpool_fwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                       const float *x, float *y, int32_t *idx, bool relu)
{
    int p = (h - size) / stride + 1, q = (w - size) / stride + 1;
    size_t total = (size_t)n * c * p * q;
    if (total == 0)
        return HONE_OK;
    if ((size_t)n * c * h * w >= (1u << 31))
        return HONE_ERANGE;
    unsigned blocks = hc_blocks(k, total);
    if (relu)
        k_maxpool_fwd<true>
            <<<blocks, HC_THREADS, 0, hc_stream(k)>>>(x, y, idx, n * c, h, w, size, stride, p, q);
    else
        k_maxpool_fwd<false>
            <<<blocks, HC_THREADS, 0, hc_stream(k)>>>(x, y, idx, n * c, h, w, size, stride, p, q);
    HC_LAUNCHED();
    return HONE_OK;
}

extern "C" int cuda_maxpool_fwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                                const float *x, float *y, int32_t *idx)
{
    return maxpool_fwd(k, n, c, h, w, size, stride, x, y, idx, false);
}

extern "C" int cuda_maxpool_relu_fwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                                     const float *x, float *y, int32_t *idx)
{
    return maxpool_fwd(k, n, c, h, w, size, stride, x, y, idx, true);
}

/* The backward kernels take the fused forward's output ym (NULL: plain max pooling) and pass a
 * window's gradient only where ym > 0. */
__global__ static void k_maxpool_bwd(const float *dy, const float *ym, const int32_t *idx,
                                     float *dx, int hw, int pq, int total)
{
    HC_FOR32(o, total)
    {
        if (!ym || ym[o] > 0.f)
            atomicAdd(dx + (size_t)(o / pq) * hw + idx[o], dy[o]);
    }
}

/* Windows that tile the input exactly (stride == size, h == p*size, w == q*size): one thread per
 * window writes its size*size dx entries, with no divisions per element. */
__global__ static void k_maxpool_bwd_tile(const float *__restrict__ dy,
                                          const float *__restrict__ ym,
                                          const int32_t *__restrict__ idx, float *__restrict__ dx,
                                          int w, int size, int p, int q, int total)
{
    HC_FOR32(o, total)
    {
        int plane = o / (p * q), r = o - plane * p * q;
        int op = r / q, oq = r - op * q;
        int at = idx[o];
        float g = !ym || ym[o] > 0.f ? dy[o] : 0.f;
        float *dp = dx + (size_t)plane * p * q * size * size;
        for (int a = 0; a < size; a++)
            for (int b = 0; b < size; b++) {
                int off = (op * size + a) * w + oq * size + b;
                dp[off] = off == at ? g : 0.f;
            }
    }
}

/* Non-overlapping windows (stride >= size): every dx element is written once, no memset. */
__global__ static void k_maxpool_bwd_gather(const float *__restrict__ dy,
                                            const float *__restrict__ ym,
                                            const int32_t *__restrict__ idx, float *__restrict__ dx,
                                            int h, int w, int size, int stride, int p, int q,
                                            int total)
{
    HC_FOR32(e, total)
    {
        int plane = e / (h * w), r = e - plane * h * w;
        int i = r / w, j = r - i * w;
        int op = i / stride, oq = j / stride;
        float v = 0.f;
        if (op < p && oq < q && i - op * stride < size && j - oq * stride < size) {
            int o = (plane * p + op) * q + oq;
            if (idx[o] == r && (!ym || ym[o] > 0.f))
                v = dy[o];
        }
        dx[e] = v;
    }
}

static int maxpool_bwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                       const float *ym, const float *dy, const int32_t *idx, float *dx)
{
    int p = (h - size) / stride + 1, q = (w - size) / stride + 1;
    size_t total = (size_t)n * c * p * q, nx = (size_t)n * c * h * w;
    if (nx >= (1u << 31))
        return HONE_ERANGE;
    if (stride == size && p * size == h && q * size == w) {
        k_maxpool_bwd_tile<<<hc_blocks(k, total), HC_THREADS, 0, hc_stream(k)>>>(
            dy, ym, idx, dx, w, size, p, q, (int)total);
        HC_LAUNCHED();
        return HONE_OK;
    }
    if (stride >= size) {
        k_maxpool_bwd_gather<<<hc_blocks(k, nx), HC_THREADS, 0, hc_stream(k)>>>(
            dy, ym, idx, dx, h, w, size, stride, p, q, (int)nx);
        HC_LAUNCHED();
        return HONE_OK;
    }
    HC_CHECK(cudaMemsetAsync(dx, 0, nx * sizeof(float), hc_stream(k)));
    if (total == 0)
        return HONE_OK;
    k_maxpool_bwd<<<hc_blocks(k, total), HC_THREADS, 0, hc_stream(k)>>>(dy, ym, idx, dx, h * w,
                                                                        p * q, (int)total);
    HC_LAUNCHED();
    return HONE_OK;
}

extern "C" int cuda_maxpool_bwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                                const float *dy, const int32_t *idx, float *dx)
{
    return maxpool_bwd(k, n, c, h, w, size, stride, NULL, dy, idx, dx);
}

extern "C" int cuda_maxpool_relu_bwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                                     const float *y, const float *dy, const int32_t *idx, float *dx)
{
    return maxpool_bwd(k, n, c, h, w, size, stride, y, dy, idx, dx);
}

/* One warp per (n, c) plane. */
__global__ static void k_avgpool_fwd(const float *x, float *y, int planes, int hw)
{
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (warp >= planes)
        return;
    const float *xp = x + (size_t)warp * hw;
    float s = 0.f;
    for (int i = lane; i < hw; i += 32)
        s += xp[i];
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0)
        y[warp] = s / (float)hw;
}

extern "C" int cuda_avgpool_global_fwd(hone_kctx *k, int n, int c, int h, int w, const float *x,
                                       float *y)
{
    int planes = n * c;
    if (planes == 0)
        return HONE_OK;
    unsigned blocks = (unsigned)(((size_t)planes * 32 + HC_THREADS - 1) / HC_THREADS);
    k_avgpool_fwd<<<blocks, HC_THREADS, 0, hc_stream(k)>>>(x, y, planes, h * w);
    HC_LAUNCHED();
    return HONE_OK;
}

__global__ static void k_avgpool_bwd(const float *dy, float *dx, int hw, size_t total)
{
    HC_FOR(i, total) dx[i] = dy[i / hw] / (float)hw;
}

extern "C" int cuda_avgpool_global_bwd(hone_kctx *k, int n, int c, int h, int w, const float *dy,
                                       float *dx)
{
    size_t total = (size_t)n * c * h * w;
    if (total == 0)
        return HONE_OK;
    k_avgpool_bwd<<<hc_blocks(k, total), HC_THREADS, 0, hc_stream(k)>>>(dy, dx, h * w, total);
    HC_LAUNCHED();
    return HONE_OK;
}

__global__ static void k_upsample_fwd(const float *x, float *y, int h, int w, int f, size_t total)
{
    int W = w * f, H = h * f;
    HC_FOR(o, total)
    {
        int j = (int)(o % W), i = (int)((o / W) % H);
        size_t plane = o / ((size_t)W * H);
        y[o] = x[(plane * h + i / f) * w + j / f];
    }
}

__global__ static void k_upsample_bwd(const float *dy, float *dx, int h, int w, int f, size_t total)
{
    int W = w * f;
    HC_FOR(o, total)
    {
        int j = (int)(o % w), i = (int)((o / w) % h);
        size_t plane = o / ((size_t)w * h);
        const float *src = dy + (plane * h * f + (size_t)i * f) * W + (size_t)j * f;
        float s = 0.f;
        for (int a = 0; a < f; a++)
            for (int b = 0; b < f; b++)
                s += src[(size_t)a * W + b];
        dx[o] = s;
    }
}

extern "C" int cuda_upsample_fwd(hone_kctx *k, int n, int c, int h, int w, int factor,
                                 const float *x, float *y)
{
    size_t total = (size_t)n * c * h * w * factor * factor;
    if (total == 0)
        return HONE_OK;
    k_upsample_fwd<<<hc_blocks(k, total), HC_THREADS, 0, hc_stream(k)>>>(x, y, h, w, factor, total);
    HC_LAUNCHED();
    return HONE_OK;
}

extern "C" int cuda_upsample_bwd(hone_kctx *k, int n, int c, int h, int w, int factor,
                                 const float *dy, float *dx)
{
    size_t total = (size_t)n * c * h * w;
    if (total == 0)
        return HONE_OK;
    k_upsample_bwd<<<hc_blocks(k, total), HC_THREADS, 0, hc_stream(k)>>>(dy, dx, h, w, factor,
                                                                         total);
    HC_LAUNCHED();
    return HONE_OK;
}

/* ------------------------------------------------------------------ padded max pooling
 * Windows clipped to the plane (padding never wins), first maximum in row-major order as on the
 * CPU. Backward is a gather (one thread per input pixel over the few windows that cover it, in a
 * fixed order): deterministic, no atomics, no zero-fill pass. */
__global__ static void k_maxpool_pad_fwd(const float *__restrict__ x, float *__restrict__ y,
                                         int32_t *__restrict__ idx, int planes, int h, int w,
                                         int size, int stride, int pad, int p, int q)
{
    HC_FOR32(o, planes * p * q)
    {
        int plane = o / (p * q), r = o - plane * p * q;
        int op = r / q, oq = r - op * q;
        const float *xp = x + (size_t)plane * h * w;
        int i0 = op * stride - pad, j0 = oq * stride - pad;
        int i1 = min(i0 + size, h), j1 = min(j0 + size, w);
        i0 = max(i0, 0);
        j0 = max(j0, 0);
        int bi = i0 * w + j0;
        float best = xp[bi];
        for (int i = i0; i < i1; i++)
            for (int j = j0; j < j1; j++) {
                float v = xp[i * w + j];
                if (v > best) {
                    best = v;
                    bi = i * w + j;
                }
            }
        y[o] = best;
        idx[o] = bi;
    }
}

__global__ static void k_maxpool_pad_bwd(const float *__restrict__ dy,
                                         const int32_t *__restrict__ idx, float *__restrict__ dx,
                                         int planes, int h, int w, int size, int stride, int pad,
                                         int p, int q)
{
    HC_FOR32(o, planes * h * w)
    {
        int plane = o / (h * w), at = o - plane * h * w;
        int ih = at / w, iw = at - ih * w;
        /* windows op with op*stride - pad <= ih < op*stride - pad + size */
        int plo = max(0, (ih + pad - size + stride) / stride),
            phi = min(p - 1, (ih + pad) / stride);
        int qlo = max(0, (iw + pad - size + stride) / stride),
            qhi = min(q - 1, (iw + pad) / stride);
        const float *g = dy + (size_t)plane * p * q;
        const int32_t *id = idx + (size_t)plane * p * q;
        float s = 0.f;
        for (int a = plo; a <= phi; a++)
            for (int b = qlo; b <= qhi; b++)
                if (id[a * q + b] == at)
                    s += g[a * q + b];
        dx[o] = s;
    }
}

extern "C" int cuda_maxpool_pad_fwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                                    int pad, const float *x, float *y, int32_t *idx)
{
    int p = (h + 2 * pad - size) / stride + 1, q = (w + 2 * pad - size) / stride + 1;
    size_t total = (size_t)n * c * p * q;
    if ((size_t)n * c * h * w >= (1u << 31))
        return HONE_ERANGE;
    k_maxpool_pad_fwd<<<hc_blocks(k, total), HC_THREADS, 0, hc_stream(k)>>>(
        x, y, idx, n * c, h, w, size, stride, pad, p, q);
    HC_LAUNCHED();
    return HONE_OK;
}

extern "C" int cuda_maxpool_pad_bwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                                    int pad, const float *dy, const int32_t *idx, float *dx)
{
    int p = (h + 2 * pad - size) / stride + 1, q = (w + 2 * pad - size) / stride + 1;
    size_t total = (size_t)n * c * h * w;
    if (total >= (1u << 31))
        return HONE_ERANGE;
    k_maxpool_pad_bwd<<<hc_blocks(k, total), HC_THREADS, 0, hc_stream(k)>>>(
        dy, idx, dx, n * c, h, w, size, stride, pad, p, q);
    HC_LAUNCHED();
    return HONE_OK;
}
