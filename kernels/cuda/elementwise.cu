/* CUDA backend: elementwise ops (relu, sigmoid, dropout with the shared counter-based RNG of
 * backend.h, axpy, scale). Dropout reads its counter on the device and advances it in a second
 * tiny launch, so replays of a captured graph draw fresh masks. */
#include "common.cuh"

__global__ static void k_relu_fwd(const float *x, float *y, size_t n)
{
    HC_FOR(i, n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
__global__ static void k_relu_bwd(const float *y, const float *dy, float *dx, size_t n)
{
    HC_FOR(i, n) dx[i] = y[i] > 0.f ? dy[i] : 0.f;
}
__global__ static void k_sigmoid_fwd(const float *x, float *y, size_t n)
{
    HC_FOR(i, n) y[i] = 1.f / (1.f + expf(-x[i]));
}
__global__ static void k_sigmoid_bwd(const float *y, const float *dy, float *dx, size_t n)
{
    HC_FOR(i, n) dx[i] = dy[i] * y[i] * (1.f - y[i]);
}
__global__ static void k_axpy(float a, const float *x, float *y, size_t n)
{
    HC_FOR(i, n) y[i] += a * x[i];
}
__global__ static void k_scale(float *x, float a, size_t n)
{
    HC_FOR(i, n) x[i] *= a;
}

/* residual join: one read of each summand, one write */
__global__ static void k_add_relu_fwd(const float *a, const float *b, float *y, size_t n)
{
    HC_FOR(i, n)
    {
        float v = a[i] + b[i];
        y[i] = v > 0.f ? v : 0.f;
    }
}
/* da may alias dy: each thread reads dy[i] before writing da[i] */
__global__ static void k_add_relu_bwd(const float *y, const float *dy, float *da, float *db,
                                      size_t n)
{
    HC_FOR(i, n)
    {
        float g = y[i] > 0.f ? dy[i] : 0.f;
        if (db)
            db[i] = g;
        da[i] = g;
    }
}

#define HC_EW(kern, n, ...)                                                                        \
    do {                                                                                           \
        if ((n) == 0)                                                                              \
            return HONE_OK;                                                                        \
        kern<<<hc_blocks(k, n), HC_THREADS, 0, hc_stream(k)>>>(__VA_ARGS__);                       \
        HC_LAUNCHED();                                                                             \
        return HONE_OK;                                                                            \
    } while (0)

extern "C" int cuda_relu_fwd(hone_kctx *k, const float *x, float *y, size_t n)
{
    HC_EW(k_relu_fwd, n, x, y, n);
}
extern "C" int cuda_relu_bwd(hone_kctx *k, const float *y, const float *dy, float *dx, size_t n)
{
    HC_EW(k_relu_bwd, n, y, dy, dx, n);
}
extern "C" int cuda_sigmoid_fwd(hone_kctx *k, const float *x, float *y, size_t n)
{
    HC_EW(k_sigmoid_fwd, n, x, y, n);
}
extern "C" int cuda_sigmoid_bwd(hone_kctx *k, const float *y, const float *dy, float *dx, size_t n)
{
    HC_EW(k_sigmoid_bwd, n, y, dy, dx, n);
}
extern "C" int cuda_axpy(hone_kctx *k, float a, const float *x, float *y, size_t n)
{
    HC_EW(k_axpy, n, a, x, y, n);
}
extern "C" int cuda_scale(hone_kctx *k, float *x, float a, size_t n)
{
    HC_EW(k_scale, n, x, a, n);
}

__global__ static void k_dropout_fwd(const float *x, float *y, uint8_t *mask, size_t n, float p,
                                     uint64_t seed, const uint64_t *counter)
{
    uint64_t c = *counter;
    float inv = p > 0.f ? 1.f / (1.f - p) : 1.f;
    HC_FOR(i, n)
    {
        int keep = p > 0.f ? hone_rng_unit(seed, c, i) >= p : 1;
        mask[i] = (uint8_t)keep;
        y[i] = keep ? (p > 0.f ? x[i] * inv : x[i]) : 0.f;
    }
}

__global__ static void k_dropout_bwd(const float *dy, const uint8_t *mask, float *dx, size_t n,
                                     float p)
{
    float inv = p > 0.f ? 1.f / (1.f - p) : 1.f;
    HC_FOR(i, n) dx[i] = mask[i] ? (p > 0.f ? dy[i] * inv : dy[i]) : 0.f;
}

__global__ static void hc_counter64_inc(uint64_t *counter)
{
    *counter += 1;
}

extern "C" int cuda_dropout_fwd(hone_kctx *k, const float *x, float *y, uint8_t *mask, size_t n,
                                float p, uint64_t seed, uint64_t *counter)
{
    if (n > 0) {
        k_dropout_fwd<<<hc_blocks(k, n), HC_THREADS, 0, hc_stream(k)>>>(x, y, mask, n, p, seed,
                                                                        counter);
        HC_LAUNCHED();
    }
    hc_counter64_inc<<<1, 1, 0, hc_stream(k)>>>(counter);
    HC_LAUNCHED();
    return HONE_OK;
}

extern "C" int cuda_dropout_bwd(hone_kctx *k, const float *dy, const uint8_t *mask, float *dx,
                                size_t n, float p)
{
    HC_EW(k_dropout_bwd, n, dy, mask, dx, n, p);
}

extern "C" int cuda_add_relu_fwd(hone_kctx *k, const float *a, const float *b, float *y, size_t n)
{
    HC_EW(k_add_relu_fwd, n, a, b, y, n);
}

extern "C" int cuda_add_relu_bwd(hone_kctx *k, const float *y, const float *dy, float *da,
                                 float *db, size_t n)
{
    HC_EW(k_add_relu_bwd, n, y, dy, da, db, n);
}
