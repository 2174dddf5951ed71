/* kernels/cpu/data.c: mini-batch gathering (float rows; uint8 images with augmentation and
 * normalisation), device counters and the shuffling permutation for the CPU backend. Random draws
 * and the float steps follow backend.h exactly so the CUDA backend produces the same permutation
 * and the same images. This file must not be built for a target with FMA (no target_clones, no
 * -march): a fused multiply-add would round differently from the CUDA backend's __fmul_rn. */
#include <stdlib.h>
#include <string.h>

#include "par.h"

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

typedef struct {
    const uint8_t *src;
    const int32_t *src_labels, *idx;
    int b, c, h, w;
    const float *mean, *inv_std;
    const hone_kaugment *aug;
    uint64_t c0;
    float *dst;
    int32_t *dst_labels;
} gather_job;

static void gather_image(void *arg, int i, int slot)
{
    (void)slot;
    const gather_job *j = arg;
    int c = j->c, h = j->h, w = j->w;
    size_t hw = (size_t)h * w;
    int32_t r = j->idx ? j->idx[j->b + i] : j->b + i;
    const uint8_t *img = j->src + (size_t)r * hw * c;
    float *out = j->dst + (size_t)i * c * hw;
    if (j->dst_labels)
        j->dst_labels[i] = j->src_labels[r];
    hone_aug_draw d = {0};
    if (j->aug)
        hone_aug_draw_image(j->aug, h, w, j->c0, i, &d);
    int jitter = j->aug && j->aug->jitter > 0.0f;
    float m = 0.0f;
    if (jitter) {
        uint64_t g = 0;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                int o = d.affine ? y * w + x : hone_aug_source(&d, h, w, y, x);
                g += o < 0 ? 0 : hone_aug_luma(img + (size_t)o * c, c);
            }
        m = (float)((double)g / (255.0 * (double)hw));
    }
    if (d.affine) { /* detection: warped (no crop, no cutout) */
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                float v[4];
                hone_aug_warp(img, c, h, w, &d, y, x, j->mean, v);
                hone_aug_finish(v, c, &d, jitter, m, 0, j->mean, j->inv_std,
                                out + (size_t)y * w + x, hw);
            }
        return;
    }
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int o = hone_aug_source(&d, h, w, y, x);
            int cut = d.cut > 0 && y >= d.y0 && y < d.y0 + d.cut && x >= d.x0 && x < d.x0 + d.cut;
            hone_aug_pixel(o < 0 ? NULL : img + (size_t)o * c, c, &d, jitter, m, cut, j->mean,
                           j->inv_std, out + (size_t)y * w + x, hw);
        }
}

int cpu_gather_images(hone_kctx *k, const uint8_t *src, const int32_t *src_labels,
                      const int32_t *idx, const int32_t *base_dev, int base, int n, int c, int h,
                      int w, const float *mean, const float *inv_std, const hone_kaugment *aug,
                      uint64_t *counter, float *dst, int32_t *dst_labels)
{
    gather_job j = {src,
                    src_labels,
                    idx,
                    base_dev ? base_dev[0] : base,
                    c,
                    h,
                    w,
                    mean,
                    inv_std,
                    aug,
                    aug ? *counter : 0,
                    dst,
                    dst_labels};
    if (n > 0)
        cpu_par_run(k, n, gather_image, &j);
    if (aug)
        *counter = j.c0 + 1;
    return HONE_OK;
}
