/* kernels/cpu/data.c: mini-batch gathering, device counters, the shuffling permutation and
 * image augmentation for the CPU backend. Random draws follow backend.h exactly so the CUDA
 * backend produces the same permutation and the same augmented images. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"

int cpu_gather_rows(hone_kctx *k, const float *src, const int32_t *src_labels, const int32_t *idx,
                    const int32_t *base_dev, int base, int n, int row, float *dst,
                    int32_t *dst_labels)
{
    (void)k;
    int b = base_dev ? base_dev[0] : base;
    for (int i = 0; i < n; i++) {
        int32_t r = idx[b + i];
        memcpy(dst + (size_t)i * row, src + (size_t)r * row, sizeof(float) * (size_t)row);
        if (dst_labels)
            dst_labels[i] = src_labels[r];
    }
    return HONE_OK;
}

int cpu_counter_add(hone_kctx *k, int32_t *counter, int step)
{
    (void)k;
    counter[0] += step;
    return HONE_OK;
}

typedef struct {
    uint32_t key;
    int32_t i;
} perm_key;

static int perm_cmp(const void *a, const void *b)
{
    const perm_key *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

int cpu_permutation(hone_kctx *k, int32_t *idx, int n, uint64_t seed, uint64_t epoch)
{
    (void)k;
    perm_key *keys = hone_xmalloc(sizeof(*keys) * (size_t)n);
    for (int i = 0; i < n; i++) {
        keys[i].key = hone_rng_u32(seed, epoch, (uint64_t)i);
        keys[i].i = i;
    }
    qsort(keys, (size_t)n, sizeof(*keys), perm_cmp);
    for (int i = 0; i < n; i++)
        idx[i] = keys[i].i;
    free(keys);
    return HONE_OK;
}

int cpu_augment(hone_kctx *k, float *x, int n, int c, int h, int w, int flip, int shift,
                uint64_t seed, uint64_t *counter)
{
    (void)k;
    uint64_t ctr = *counter;
    size_t hw = (size_t)h * w;
    float *tmp = hone_xmalloc(sizeof(float) * hw);
    for (int j = 0; j < n; j++) {
        uint32_t u = hone_rng_u32(seed, ctr, (uint64_t)j);
        int fl = flip && (u & 1u);
        int dx = 0, dy = 0;
        if (shift > 0) {
            uint32_t span = (uint32_t)(2 * shift + 1);
            dx = (int)((u >> 1) % span) - shift;
            dy = (int)((u >> 17) % span) - shift;
        }
        if (!fl && dx == 0 && dy == 0)
            continue;
        for (int ch = 0; ch < c; ch++) {
            float *img = x + ((size_t)j * c + ch) * hw;
            memcpy(tmp, img, sizeof(float) * hw);
            for (int yy = 0; yy < h; yy++)
                for (int xx = 0; xx < w; xx++) {
                    int sy = yy - dy, sx = xx - dx;
                    if (fl)
                        sx = w - 1 - sx;
                    img[(size_t)yy * w + xx] =
                        (sy >= 0 && sy < h && sx >= 0 && sx < w) ? tmp[(size_t)sy * w + sx] : 0.0f;
                }
        }
    }
    free(tmp);
    *counter = ctr + 1;
    return HONE_OK;
}
