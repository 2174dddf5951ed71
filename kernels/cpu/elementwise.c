/* kernels/cpu/elementwise.c: elementwise ops for the CPU backend (relu, sigmoid, dropout with
 * backend.h's counter-based random stream, axpy, scale). Large relu passes are split over the
 * worker pool; loops are written for the vectoriser; no allocation. */
#include <math.h>

#include "par.h"

/* Elementwise ops below this many elements run on the calling thread. */
#define ELEM_GRAIN 32768

typedef struct {
    const float *x, *dy;
    float *y;
} relu_job;

CPU_SIMD static void relu_fwd_range(void *arg, size_t b, size_t e)
{
    relu_job *j = arg;
    const float *x = j->x; /* may alias y (in place) */
    float *y = j->y;
    for (size_t i = b; i < e; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

/* dx may alias dy, so no restrict on those two. */
CPU_SIMD static void relu_bwd_range(void *arg, size_t b, size_t e)
{
    relu_job *j = arg;
    const float *x = j->x, *dy = j->dy;
    float *dx = j->y;
    for (size_t i = b; i < e; i++)
        dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}

int cpu_relu_fwd(hone_kctx *k, const float *x, float *y, size_t n)
{
    relu_job j = {x, NULL, y};
    cpu_par_range(k, n, ELEM_GRAIN, relu_fwd_range, &j);
    return HONE_OK;
}

int cpu_relu_bwd(hone_kctx *k, const float *y, const float *dy, float *dx, size_t n)
{
    relu_job j = {y, dy, dx};
    cpu_par_range(k, n, ELEM_GRAIN, relu_bwd_range, &j);
    return HONE_OK;
}

/* ------------------------------------------------------------------ residual join */
typedef struct {
    const float *a, *b;
    float *y, *da, *db;
} add_relu_job;

CPU_SIMD static void add_relu_fwd_range(void *arg, size_t b, size_t e)
{
    add_relu_job *j = arg;
    const float *x0 = j->a, *x1 = j->b; /* either may alias y */
    float *y = j->y;
    for (size_t i = b; i < e; i++) {
        float v = x0[i] + x1[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

/* da may alias dy (no restrict); db is a separate buffer. */
CPU_SIMD static void add_relu_bwd_range(void *arg, size_t b, size_t e)
{
    add_relu_job *j = arg;
    const float *y = j->a, *dy = j->b;
    float *da = j->da, *db = j->db;
    if (db) {
        for (size_t i = b; i < e; i++) {
            float g = y[i] > 0.0f ? dy[i] : 0.0f;
            db[i] = g;
            da[i] = g;
        }
        return;
    }
    for (size_t i = b; i < e; i++)
        da[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

int cpu_add_relu_fwd(hone_kctx *k, const float *a, const float *b, float *y, size_t n)
{
    add_relu_job j = {.a = a, .b = b, .y = y};
    cpu_par_range(k, n, ELEM_GRAIN, add_relu_fwd_range, &j);
    return HONE_OK;
}

int cpu_add_relu_bwd(hone_kctx *k, const float *y, const float *dy, float *da, float *db, size_t n)
{
    add_relu_job j = {.a = y, .b = dy, .da = da, .db = db};
    cpu_par_range(k, n, ELEM_GRAIN, add_relu_bwd_range, &j);
    return HONE_OK;
}

int cpu_sigmoid_fwd(hone_kctx *k, const float *x, float *y, size_t n)
{
    (void)k;
    for (size_t i = 0; i < n; i++)
        y[i] = 1.0f / (1.0f + expf(-x[i]));
    return HONE_OK;
}

int cpu_sigmoid_bwd(hone_kctx *k, const float *y, const float *dy, float *dx, size_t n)
{
    (void)k;
    for (size_t i = 0; i < n; i++)
        dx[i] = dy[i] * y[i] * (1.0f - y[i]);
    return HONE_OK;
}

int cpu_dropout_fwd(hone_kctx *k, const float *x, float *y, uint8_t *mask, size_t n, float p,
                    uint64_t seed, uint64_t *counter)
{
    (void)k;
    uint64_t c = *counter;
    float scale = 1.0f / (1.0f - p);
    for (size_t i = 0; i < n; i++) {
        int keep = p == 0.0f || hone_rng_unit(seed, c, i) >= p;
        mask[i] = (uint8_t)keep;
        y[i] = keep ? x[i] * scale : 0.0f;
    }
    *counter = c + 1;
    return HONE_OK;
}

int cpu_dropout_bwd(hone_kctx *k, const float *dy, const uint8_t *mask, float *dx, size_t n,
                    float p)
{
    (void)k;
    float scale = 1.0f / (1.0f - p);
    for (size_t i = 0; i < n; i++)
        dx[i] = mask[i] ? dy[i] * scale : 0.0f;
    return HONE_OK;
}

int cpu_axpy(hone_kctx *k, float a, const float *x, float *y, size_t n)
{
    (void)k;
    for (size_t i = 0; i < n; i++)
        y[i] += a * x[i];
    return HONE_OK;
}

int cpu_scale(hone_kctx *k, float *x, float a, size_t n)
{
    (void)k;
    for (size_t i = 0; i < n; i++)
        x[i] *= a;
    return HONE_OK;
}
