/* kernels/backend.h: private contract between dispatch.c and the two backends. Every op is listed
 * once (HONE_BACKEND_OPS); each backend implements it as cpu_xxx (kernels/cpu/) or cuda_xxx
 * (kernels/cuda/), in the file of the same name in both, and dispatch.c calls it through the
 * context's backend table with the public hone_k_xxx's arguments, already validated. Not public.
 * The random streams below are defined here, bit for bit, so both backends draw the same masks. */
#ifndef HONE_KERNELS_BACKEND_H
#define HONE_KERNELS_BACKEND_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

#ifdef __CUDACC__
#define HONE_HD __host__ __device__ __forceinline__
#else
#define HONE_HD static inline
#endif

struct hone_kbackend;

struct hone_kctx {
    hone_device dev;
    int threads;    /* CPU worker threads (>= 1) */
    hone_math math; /* set by hone_k_set_math; the CUDA backend reads it at each GEMM/conv */
    void *cuda;     /* backend state, owned by its ctx_init/ctx_release: the CUDA stream, cuBLAS
                       handle, ... (cuda_ctx_*), or the CPU worker pool (cpu/par.c) */
    const struct hone_kbackend *ops; /* the device's backend: dispatch.c's table */
};

struct hone_kgraph {
    hone_kctx *k;
    void (*fn)(void *arg);
    void *arg;
    void *cuda; /* CUDA backend state (cudaGraphExec_t, ...): owned by cuda_graph_* */
};

/* ------------------------------------------------------------------ shared random streams
 * Every random draw is a pure function of (seed, counter, index):
 *   hone_rng_u32(seed, ctr, i) = (uint32_t)(hone_mix64(seed ^ hone_mix64(ctr * A + i * B + C)) >>
 * 32) with A, B, C the constants below and hone_mix64 the splitmix64 finaliser. hone_rng_unit(seed,
 * ctr, i) = (hone_rng_u32(...) >> 8) * 2^-24, in [0, 1).
 *
 * dropout_fwd: c = *counter; for element i: keep = hone_rng_unit(seed, c, i) >= p;
 *   mask[i] = keep; y[i] = keep ? x[i] * (1.0f / (1.0f - p)) : 0 (the scale computed in float);
 *   then *counter = c + 1 (after every element has read c). p == 0: mask all 1, counter advances.
 *   dropout_bwd: dx[i] = mask[i] ? dy[i] * (1.0f / (1.0f - p)) : 0.
 * gather_images (one pass per output pixel; every step in float, in this order, products and sums
 *   rounded separately: the CUDA backend uses __fmul_rn/__fadd_rn so nothing is fused):
 *   b = base_dev ? *base_dev : base; image i < n reads source row r = idx ? idx[b + i] : b + i
 *   (h*w*c uint8, HWC) and writes dst[i] as c planes of h*w floats (NCHW). Without aug no draws
 *   are made and the counter is not touched. With aug: c0 = *counter, u_s = hone_rng_u32(seed,
 *   c0, 8*i + s), f_s = hone_rng_unit(seed, c0, 8*i + s); after every image has read c0,
 *   *counter = c0 + 1.
 *   - crop and flip: p = crop_padding; dx = (int)((u_0 >> 1) % (2p+1)) - p, dy = (int)((u_0 >>
 *     17) % (2p+1)) - p (p == 0: 0); flip = aug.flip && (u_0 & 1). Output (y, x) reads source
 *     (sy, sx) = (y - dy, x - dx), then sx = w - 1 - sx when flipped; outside the image every
 *     channel is 0 (a black pixel: the image is padded before normalisation, as torchvision's
 *     RandomCrop(padding) does). v = pixel * (1.0f / 255.0f).
 *   - jitter j > 0: a_s = (1.0f - j) + (2.0f * j) * f_s, s = 1 (brightness), 2 (contrast), 3
 *     (saturation); G = the sum over all output pixels of their integer luma (c == 1: the value;
 *     c == 3: (19595 R + 38470 G + 7471 B + 32768) >> 16; padding 0); m = (float)((double)G /
 *     (255.0 * h * w)). Per channel value, clamped to [0, 1] after each step: contrast v = m +
 *     a_2 * (v - m); brightness v = v * a_1; then for c == 3 saturation: g = 0.299f r + 0.587f g
 *     + 0.114f b (left to right) and v = g + a_3 * (v - g). Grey images: contrast, brightness.
 *   - normalise: out = (v - mean[ch]) * inv_std[ch].
 *   - cutout s > 0: cy = u_4 % h, cx = u_5 % w; output pixels with cy - s/2 <= y < cy - s/2 + s
 *     and cx - s/2 <= x < cx - s/2 + s are 0 in every channel (the mean, after normalisation).
 *   - affine (detection; crop and cutout are 0): flip as above; with S = seed ^
 *     HONE_AUG_AFFINE_SALT and g_s = hone_rng_unit(S, c0, 8*i + s): zoom z = zoom_min +
 *     (zoom_max - zoom_min) * g_0, izoom = 1.0f / z, shift tx = (2 g_1 - 1) * (translate * w),
 *     ty = (2 g_2 - 1) * (translate * h). With (cx, cy) = (w/2, h/2), a point (X, Y) of the
 *     source goes to (cx + (F(X) - cx) * z + tx, cy + (Y - cy) * z + ty), F(X) = w - X when
 *     flipped, else X. Output pixel (y, x) samples the source at (sx, sy): sx = cx + ((x + 0.5)
 *     - cx - tx) * izoom, then sx = w - sx when flipped; sy = cy + ((y + 0.5) - cy - ty) * izoom.
 *     Outside 0 <= sx < w, 0 <= sy < h the pixel is the mean (v = mean[ch] before jitter: 0
 *     after normalisation without jitter); else bilinear: fx = sx - 0.5, x0 = floorf(fx), ax =
 *     fx - x0 (y likewise), neighbours x0, x0 + 1 clamped to the image, v = ((p00 (1 - ax) + p01
 *     ax) (1 - ay) + (p10 (1 - ax) + p11 ax) ay) * (1.0f / 255.0f). The contrast mean m is the
 *     unwarped source image's (its integer luma summed over all its pixels). Zoom 1, no shift:
 *     sx = x + 0.5 exactly, so a flip alone gives exactly the images of the non-affine flip.
 *     A box goes through the same map (hone_aug_box): corners (F(x2), F(x1)) when flipped, then
 *     clipped to [0, w] x [0, h]; kept when its clipped width and height are >= 2 pixels and its
 *     clipped area is >= 30% of its mapped area (HONE_AUG_BOX_MIN, HONE_AUG_BOX_KEEP).
 * permutation(seed, epoch): key[i] = hone_rng_u32(seed, epoch, i); idx = 0..n-1 sorted by
 *   (key ascending, i ascending) -- a stable radix sort of (key, i) pairs gives the same answer. */
#define HONE_RNG_A 0x9E3779B97F4A7C15ULL
#define HONE_RNG_B 0xD1B54A32D192ED03ULL
#define HONE_RNG_C 0x8CB92BA72F3D8DD7ULL

HONE_HD uint64_t hone_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

HONE_HD uint32_t hone_rng_u32(uint64_t seed, uint64_t ctr, uint64_t i)
{
    return (
        uint32_t)(hone_mix64(seed ^ hone_mix64(ctr * HONE_RNG_A + i * HONE_RNG_B + HONE_RNG_C)) >>
                  32);
}

HONE_HD float hone_rng_unit(uint64_t seed, uint64_t ctr, uint64_t i)
{
    return (float)(hone_rng_u32(seed, ctr, i) >> 8) * (1.0f / 16777216.0f);
}

/* ------------------------------------------------------------------ gather_images, shared
 * The per-image draws and the per-pixel arithmetic of gather_images (described above), written
 * once for both backends. Float products and sums go through HONE_FMUL/HONE_FADD: round-to-nearest
 * intrinsics in CUDA device code, where nvcc would otherwise fuse a*b+c into one FMA and round
 * once; plain operators on the host (the build targets no FMA there: see cpu/data.c). */
#ifdef __CUDA_ARCH__
#define HONE_FMUL(a, b) __fmul_rn((a), (b))
#define HONE_FADD(a, b) __fadd_rn((a), (b))
#define HONE_DMUL(a, b) __dmul_rn((a), (b))
#define HONE_DADD(a, b) __dadd_rn((a), (b))
#else
#define HONE_FMUL(a, b) ((float)((a) * (b)))
#define HONE_FADD(a, b) ((float)((a) + (b)))
#define HONE_DMUL(a, b) ((double)((a) * (b)))
#define HONE_DADD(a, b) ((double)((a) + (b)))
#endif

#define HONE_AUG_AFFINE_SALT 0xAFF1DE7EC7ULL /* the affine draws' own stream */
#define HONE_AUG_BOX_KEEP 0.3f /* a mapped box is dropped below this visible fraction */
#define HONE_AUG_BOX_MIN 2.0f  /* ... or below this width or height, in pixels */

typedef struct hone_aug_draw {
    int flip, dx, dy;    /* mirror, crop offset */
    int y0, x0, cut;     /* cutout square: rows [y0, y0+cut), columns [x0, x0+cut); cut 0: none */
    float a_b, a_c, a_s; /* brightness, contrast, saturation factors (jitter) */
    int affine;          /* detection's warp: zoom (and its inverse) and shift, with flip */
    float zoom, izoom, tx, ty;
} hone_aug_draw;

HONE_HD void hone_aug_draw_image(const hone_kaugment *a, int h, int w, uint64_t c0, int i,
                                 hone_aug_draw *d)
{
    uint64_t s = a->seed, j = (uint64_t)i * 8;
    uint32_t u = hone_rng_u32(s, c0, j);
    d->flip = a->flip && (u & 1u);
    d->dx = d->dy = 0;
    if (a->crop_padding > 0) {
        uint32_t span = (uint32_t)(2 * a->crop_padding + 1);
        d->dx = (int)((u >> 1) % span) - a->crop_padding;
        d->dy = (int)((u >> 17) % span) - a->crop_padding;
    }
    d->a_b = d->a_c = d->a_s = 1.0f;
    if (a->jitter > 0.0f) {
        float lo = 1.0f - a->jitter, span = 2.0f * a->jitter;
        d->a_b = HONE_FADD(lo, HONE_FMUL(span, hone_rng_unit(s, c0, j + 1)));
        d->a_c = HONE_FADD(lo, HONE_FMUL(span, hone_rng_unit(s, c0, j + 2)));
        d->a_s = HONE_FADD(lo, HONE_FMUL(span, hone_rng_unit(s, c0, j + 3)));
    }
    d->cut = a->cutout;
    d->y0 = d->x0 = 0;
    if (d->cut > 0) {
        d->y0 = (int)(hone_rng_u32(s, c0, j + 4) % (uint32_t)h) - d->cut / 2;
        d->x0 = (int)(hone_rng_u32(s, c0, j + 5) % (uint32_t)w) - d->cut / 2;
    }
    d->affine = a->affine;
    d->zoom = d->izoom = 1.0f;
    d->tx = d->ty = 0.0f;
    if (a->affine) {
        uint64_t s2 = s ^ HONE_AUG_AFFINE_SALT;
        float span = HONE_FADD(a->zoom_max, -a->zoom_min);
        d->zoom = HONE_FADD(a->zoom_min, HONE_FMUL(span, hone_rng_unit(s2, c0, j)));
        d->izoom = 1.0f / d->zoom;
        float mx = HONE_FMUL(a->translate, (float)w), my = HONE_FMUL(a->translate, (float)h);
        d->tx = HONE_FMUL(HONE_FADD(HONE_FMUL(2.0f, hone_rng_unit(s2, c0, j + 1)), -1.0f), mx);
        d->ty = HONE_FMUL(HONE_FADD(HONE_FMUL(2.0f, hone_rng_unit(s2, c0, j + 2)), -1.0f), my);
    }
}

/* The affine warp's value of output pixel (y, x), channels 0..1 into v[c] (the mean where its
 * source lies outside the image). img: the source image, HWC. */
HONE_HD void hone_aug_warp(const uint8_t *img, int c, int h, int w, const hone_aug_draw *d, int y,
                           int x, const float *mean, float *v)
{
    float cx = HONE_FMUL((float)w, 0.5f), cy = HONE_FMUL((float)h, 0.5f);
    float qx = HONE_FADD((float)x, 0.5f), qy = HONE_FADD((float)y, 0.5f);
    float sx = HONE_FADD(cx, HONE_FMUL(HONE_FADD(HONE_FADD(qx, -cx), -d->tx), d->izoom));
    float sy = HONE_FADD(cy, HONE_FMUL(HONE_FADD(HONE_FADD(qy, -cy), -d->ty), d->izoom));
    if (d->flip)
        sx = HONE_FADD((float)w, -sx);
    if (!(sx >= 0.0f && sx < (float)w && sy >= 0.0f && sy < (float)h)) {
        for (int ch = 0; ch < c; ch++)
            v[ch] = mean[ch];
        return;
    }
    float fx = HONE_FADD(sx, -0.5f), fy = HONE_FADD(sy, -0.5f);
    float flx = floorf(fx), fly = floorf(fy);
    float ax = HONE_FADD(fx, -flx), ay = HONE_FADD(fy, -fly);
    float bx = HONE_FADD(1.0f, -ax), by = HONE_FADD(1.0f, -ay);
    int x0 = (int)flx, y0 = (int)fly;
    int xa = x0 < 0 ? 0 : x0, xb = x0 + 1 > w - 1 ? w - 1 : x0 + 1;
    int ya = y0 < 0 ? 0 : y0, yb = y0 + 1 > h - 1 ? h - 1 : y0 + 1;
    const uint8_t *p00 = img + ((size_t)ya * w + xa) * c, *p01 = img + ((size_t)ya * w + xb) * c;
    const uint8_t *p10 = img + ((size_t)yb * w + xa) * c, *p11 = img + ((size_t)yb * w + xb) * c;
    for (int ch = 0; ch < c; ch++) {
        float top = HONE_FADD(HONE_FMUL((float)p00[ch], bx), HONE_FMUL((float)p01[ch], ax));
        float bot = HONE_FADD(HONE_FMUL((float)p10[ch], bx), HONE_FMUL((float)p11[ch], ax));
        v[ch] = HONE_FMUL(HONE_FADD(HONE_FMUL(top, by), HONE_FMUL(bot, ay)), 1.0f / 255.0f);
    }
}

/* Box (x1, y1, x2, y2) through the affine map of d, clipped to the h x w image: 1 and its
 * corners in o[4] when kept (see above), else 0. */
HONE_HD int hone_aug_box(const hone_aug_draw *d, int h, int w, float x1, float y1, float x2,
                         float y2, float *o)
{
    float cx = HONE_FMUL((float)w, 0.5f), cy = HONE_FMUL((float)h, 0.5f);
    if (d->flip) {
        float t = HONE_FADD((float)w, -x2);
        x2 = HONE_FADD((float)w, -x1);
        x1 = t;
    }
    float X1 = HONE_FADD(HONE_FADD(cx, HONE_FMUL(HONE_FADD(x1, -cx), d->zoom)), d->tx);
    float X2 = HONE_FADD(HONE_FADD(cx, HONE_FMUL(HONE_FADD(x2, -cx), d->zoom)), d->tx);
    float Y1 = HONE_FADD(HONE_FADD(cy, HONE_FMUL(HONE_FADD(y1, -cy), d->zoom)), d->ty);
    float Y2 = HONE_FADD(HONE_FADD(cy, HONE_FMUL(HONE_FADD(y2, -cy), d->zoom)), d->ty);
    float tw = HONE_FADD(X2, -X1), th = HONE_FADD(Y2, -Y1);
    if (!(tw > 0.0f && th > 0.0f))
        return 0;
    float c1 = X1 < 0.0f ? 0.0f : X1, c2 = X2 > (float)w ? (float)w : X2;
    float d1 = Y1 < 0.0f ? 0.0f : Y1, d2 = Y2 > (float)h ? (float)h : Y2;
    float cw = HONE_FADD(c2, -c1), ch = HONE_FADD(d2, -d1);
    if (!(cw >= HONE_AUG_BOX_MIN && ch >= HONE_AUG_BOX_MIN))
        return 0;
    if (HONE_FMUL(cw, ch) < HONE_FMUL(HONE_AUG_BOX_KEEP, HONE_FMUL(tw, th)))
        return 0;
    o[0] = c1;
    o[1] = d1;
    o[2] = c2;
    o[3] = d2;
    return 1;
}

/* Offset of output (y, x)'s source pixel inside its image (in pixels), or -1 for padding. */
HONE_HD int hone_aug_source(const hone_aug_draw *d, int h, int w, int y, int x)
{
    int sy = y - d->dy, sx = x - d->dx;
    if (d->flip)
        sx = w - 1 - sx;
    return sy >= 0 && sy < h && sx >= 0 && sx < w ? sy * w + sx : -1;
}

/* Integer luma of one pixel (c == 1: its value; c >= 3: ITU-R 601-2 as data/ converts). */
HONE_HD uint32_t hone_aug_luma(const uint8_t *p, int c)
{
    if (c < 3)
        return p[0];
    return (19595u * p[0] + 38470u * p[1] + 7471u * p[2] + 32768u) >> 16;
}

HONE_HD float hone_aug_clamp01(float v)
{
    return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
}

/* One output pixel's c values v (0..1, changed in place) jittered and normalised into
 * out[ch * plane]: m the image's contrast mean (used when jitter), mean/inv_std the
 * normalisation. */
HONE_HD void hone_aug_finish(float *v, int c, const hone_aug_draw *d, int jitter, float m, int cut,
                             const float *mean, const float *inv_std, float *out, size_t plane)
{
    if (jitter) {
        for (int ch = 0; ch < c; ch++) {
            float t = HONE_FADD(m, HONE_FMUL(d->a_c, HONE_FADD(v[ch], -m)));
            v[ch] = hone_aug_clamp01(HONE_FMUL(hone_aug_clamp01(t), d->a_b));
        }
        if (c == 3) {
            float g = HONE_FADD(HONE_FADD(HONE_FMUL(0.299f, v[0]), HONE_FMUL(0.587f, v[1])),
                                HONE_FMUL(0.114f, v[2]));
            for (int ch = 0; ch < 3; ch++)
                v[ch] = hone_aug_clamp01(HONE_FADD(g, HONE_FMUL(d->a_s, HONE_FADD(v[ch], -g))));
        }
    }
    for (int ch = 0; ch < c; ch++)
        out[(size_t)ch * plane] = cut ? 0.0f : HONE_FMUL(HONE_FADD(v[ch], -mean[ch]), inv_std[ch]);
}

/* One output pixel's c values into out[ch * plane]: p is the source pixel (NULL: padding), the
 * rest as hone_aug_finish. */
HONE_HD void hone_aug_pixel(const uint8_t *p, int c, const hone_aug_draw *d, int jitter, float m,
                            int cut, const float *mean, const float *inv_std, float *out,
                            size_t plane)
{
    float v[4];
    for (int ch = 0; ch < c; ch++)
        v[ch] = p ? HONE_FMUL((float)p[ch], 1.0f / 255.0f) : 0.0f;
    hone_aug_finish(v, c, d, jitter, m, cut, mean, inv_std, out, plane);
}

/* ------------------------------------------------------------------ detect_targets, shared
 * hone_k_detect_targets encodes each image as train/detect.h's hone_det_encode does, without its
 * sort: a cell of class c belongs to the covering box of class c that hone_det_encode draws
 * last, the one of smallest area (double, (x2 - x1) * (y2 - y1)), the later one in the image's
 * list on ties. Both backends run, per image: (1) every cell's owner (its index + 1, 0 for none)
 * into the coverage planes, the other planes zeroed; (2) for each box, the cells it owns counted
 * in its scanned range and their weights written; (3) each owned cell's box offsets, its coverage
 * set to 1. The arithmetic below is cover_cells's in detect_boxes.c, step for step, in double. */
typedef struct hone_kdet_geom {
    double cx, cy, rx, ry;  /* the coverage region's centre and half-axes */
    int gx0, gx1, gy0, gy1; /* the cells scanned, clamped to the grid */
    int mx, my;             /* the cell holding the centre (may lie off the grid) */
} hone_kdet_geom;

HONE_HD int hone_kdet_clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

HONE_HD void hone_kdet_geom_of(const hone_kdet_grid *g, const float *b, hone_kdet_geom *q)
{
    double w = (double)b[2] - b[0], h = (double)b[3] - b[1];
    q->cx = HONE_DADD((double)b[0], HONE_DMUL((double)g->cov_center_x, w));
    q->cy = HONE_DADD((double)b[1], HONE_DMUL((double)g->cov_center_y, h));
    q->rx = fmax(HONE_DMUL((double)g->cov_radius_x, w) / 2, (double)g->min_radius);
    q->ry = fmax(HONE_DMUL((double)g->cov_radius_y, h) / 2, (double)g->min_radius);
    double half = g->stride / 2.0, st = (double)g->stride;
    q->gx0 = hone_kdet_clampi((int)floor((q->cx - q->rx - half) / st), 0, g->grid_w - 1);
    q->gx1 = hone_kdet_clampi((int)ceil((q->cx + q->rx - half) / st), 0, g->grid_w - 1);
    q->gy0 = hone_kdet_clampi((int)floor((q->cy - q->ry - half) / st), 0, g->grid_h - 1);
    q->gy1 = hone_kdet_clampi((int)ceil((q->cy + q->ry - half) / st), 0, g->grid_h - 1);
    q->mx = (int)floor(q->cx / st);
    q->my = (int)floor(q->cy / st);
}

/* Whether the box of geometry q covers grid cell (gx, gy). */
HONE_HD int hone_kdet_covers(const hone_kdet_grid *g, const hone_kdet_geom *q, int gx, int gy)
{
    if (gx == q->mx && gy == q->my)
        return 1;
    if (gx < q->gx0 || gx > q->gx1 || gy < q->gy0 || gy > q->gy1)
        return 0;
    double half = g->stride / 2.0;
    double px = HONE_DADD(HONE_DMUL((double)gx, (double)g->stride), half);
    double py = HONE_DADD(HONE_DMUL((double)gy, (double)g->stride), half);
    double dx = (px - q->cx) / q->rx, dy = (py - q->cy) / q->ry;
    if (g->cov_shape == 1)
        return HONE_DADD(HONE_DMUL(dx, dx), HONE_DMUL(dy, dy)) <= 1.0;
    return fabs(dx) <= 1.0 && fabs(dy) <= 1.0;
}

/* Whether the centre of cell (gx, gy) lies inside an ignore region of the image: a box of class
 * -1 (KITTI's DontCare, COCO's iscrowd), moved by the affine map of d when d is non-NULL and
 * affine (and dropped where that map drops a box), edges [x1, x2) x [y1, y2). Step (3) then marks
 * the cell's coverage target -1 in every class that no object owns there: the loss gives such a
 * cell no coverage term (kernels.h), so a detector is neither rewarded nor penalised inside a
 * region whose objects are not labelled one by one. */
HONE_HD int hone_kdet_ignored(const hone_kdet_grid *g, const hone_kbox *bx, int nb,
                              const hone_aug_draw *d, int h, int w, int gx, int gy)
{
    double half = g->stride / 2.0;
    double px = HONE_DADD(HONE_DMUL((double)gx, (double)g->stride), half);
    double py = HONE_DADD(HONE_DMUL((double)gy, (double)g->stride), half);
    for (int j = 0; j < nb; j++) {
        if (bx[j].cls != -1)
            continue;
        float o[4] = {bx[j].x1, bx[j].y1, bx[j].x2, bx[j].y2};
        if (d && d->affine && !hone_aug_box(d, h, w, bx[j].x1, bx[j].y1, bx[j].x2, bx[j].y2, o))
            continue;
        if (px >= (double)o[0] && px < (double)o[2] && py >= (double)o[1] && py < (double)o[3])
            return 1;
    }
    return 0;
}

/* Box bx as the encoder sees it: 1 when it writes targets (a class below classes, kept by the
 * affine map of d when d is non-NULL and affine, not empty), its corners in o[4]. */
HONE_HD int hone_kdet_box(const hone_kbox *bx, const hone_aug_draw *d, int h, int w, int classes,
                          float *o)
{
    if (bx->cls < 0 || bx->cls >= classes)
        return 0;
    o[0] = bx->x1;
    o[1] = bx->y1;
    o[2] = bx->x2;
    o[3] = bx->y2;
    if (d && d->affine && !hone_aug_box(d, h, w, bx->x1, bx->y1, bx->x2, bx->y2, o))
        return 0;
    return o[2] > o[0] && o[3] > o[1];
}

/* The owner (box index + 1, 0: none) of cell (gx, gy) of class c among the image's nb boxes. */
HONE_HD int hone_kdet_owner(const hone_kdet_grid *g, const hone_kbox *bx, int nb,
                            const hone_aug_draw *d, int h, int w, int c, int gx, int gy)
{
    int best = 0;
    double best_area = 0.0;
    for (int j = 0; j < nb; j++) {
        float o[4] = {0, 0, 0, 0};
        if (bx[j].cls != c || !hone_kdet_box(&bx[j], d, h, w, g->classes, o))
            continue;
        hone_kdet_geom q;
        hone_kdet_geom_of(g, o, &q);
        if (!hone_kdet_covers(g, &q, gx, gy))
            continue;
        double area = ((double)o[2] - o[0]) * ((double)o[3] - o[1]);
        if (!best || area <= best_area) {
            best = j + 1;
            best_area = area;
        }
    }
    return best;
}

/* Step (2) for box j of class c (o: its corners): counts the cells of plane cov (coverage of its
 * class) that it owns and writes their weights into plane weight. */
HONE_HD void hone_kdet_weights(const hone_kdet_grid *g, const float *o, int j, const float *cov,
                               float *weight)
{
    hone_kdet_geom q;
    hone_kdet_geom_of(g, o, &q);
    float id = (float)(j + 1);
    int count = 0, gw = g->grid_w;
    int centre_out = q.mx >= 0 && q.mx < gw && q.my >= 0 && q.my < g->grid_h &&
                     (q.mx < q.gx0 || q.mx > q.gx1 || q.my < q.gy0 || q.my > q.gy1);
    for (int gy = q.gy0; gy <= q.gy1; gy++)
        for (int gx = q.gx0; gx <= q.gx1; gx++)
            count += cov[gy * gw + gx] == id;
    if (centre_out)
        count += cov[q.my * gw + q.mx] == id;
    if (!count)
        return;
    float wv = g->normalise_by_area ? 1.0f / (float)count : 1.0f;
    for (int gy = q.gy0; gy <= q.gy1; gy++)
        for (int gx = q.gx0; gx <= q.gx1; gx++)
            if (cov[gy * gw + gx] == id)
                weight[gy * gw + gx] = wv;
    if (centre_out && cov[q.my * gw + q.mx] == id)
        weight[q.my * gw + q.mx] = wv;
}

/* Step (3) for owned cell (gx, gy) of class plane c: its 4 box offsets from box o into bbox (the
 * class's first offset plane; the others follow at plane strides). */
HONE_HD void hone_kdet_offsets(const hone_kdet_grid *g, const float *o, int gx, int gy, float *bbox,
                               size_t plane)
{
    float px = HONE_FADD(HONE_FMUL((float)gx, (float)g->stride), g->offset);
    float py = HONE_FADD(HONE_FMUL((float)gy, (float)g->stride), g->offset);
    size_t at = (size_t)gy * g->grid_w + gx;
    bbox[at] = HONE_FADD(px, -o[0]) / g->bbox_norm;
    bbox[plane + at] = HONE_FADD(py, -o[1]) / g->bbox_norm;
    bbox[2 * plane + at] = HONE_FADD(o[2], -px) / g->bbox_norm;
    bbox[3 * plane + at] = HONE_FADD(o[3], -py) / g->bbox_norm;
}

/* ------------------------------------------------------------------ detect_loss, shared
 * The weight m of cell q's coverage terms (kernels.h): cov_weight where an object of any class
 * covers the cell (t holds the image's target planes, cov first), else cov_weight * bg_weight. So a
 * wrong class on an object costs as much as a missed one; only the empty background is damped. */
HONE_HD float hone_kdet_cov_mass(const float *t, int classes, int hw, int q, float cov_weight,
                                 float bg_weight)
{
    for (int c = 0; c < classes; c++)
        if (t[(size_t)c * hw + q] > 0.0f)
            return cov_weight;
    return cov_weight * bg_weight;
}

/* One coverage cell's loss L(z, t) for HONE_KCOV_BCE and HONE_KCOV_FOCAL (kernels.h), and its
 * derivative in z in *dz (both before the weight m and the batch mean). BCE from z stably:
 * softplus(z) - t z = max(z, 0) + log1p(exp(-|z|)) - t z, derivative s - t. Focal: q^gamma BCE
 * with q = 1 - p, p = t s + (1 - t)(1 - s), dq/dz = (1 - 2t) s (1 - s), so the derivative is
 * q^gamma (s - t) + gamma q^(gamma - 1) (1 - 2t) s (1 - s) BCE (its second term 0 at q = 0).
 * HONE_KCOV_L2 stays in each backend as written before (bit for bit: the CPU sums it in double). */
HONE_HD float hone_kdet_cov(int mode, float gamma, float z, float t, float *dz)
{
    float s = 1.0f / (1.0f + expf(-z));
    float bce = fmaxf(z, 0.0f) + log1pf(expf(-fabsf(z))) - t * z;
    if (mode != HONE_KCOV_FOCAL) {
        *dz = s - t;
        return bce;
    }
    float q = 1.0f - (t * s + (1.0f - t) * (1.0f - s));
    if (q < 0.0f)
        q = 0.0f;
    float qg = gamma > 0.0f ? powf(q, gamma) : 1.0f;
    float dqg = gamma > 0.0f && q > 0.0f ? gamma * powf(q, gamma - 1.0f) : 0.0f;
    *dz = qg * (s - t) + dqg * (1.0f - 2.0f * t) * s * (1.0f - s) * bce;
    return qg * bce;
}

/* ------------------------------------------------------------------ bfloat16
 * The bf16 NHWC ops (half.{c,cu}) store bfloat16 as its 16 bits: the high half of the float's.
 * Float to bf16 rounds to nearest, ties to even (a NaN stays a NaN); both backends use these two
 * functions, so a value is rounded the same everywhere. */
typedef union {
    float f;
    uint32_t u;
} hone_f32_bits;

HONE_HD float hone_bf16_to_f32(hone_bf16 h)
{
    hone_f32_bits b;
    b.u = (uint32_t)h << 16;
    return b.f;
}

HONE_HD hone_bf16 hone_f32_to_bf16(float f)
{
    hone_f32_bits b;
    b.f = f;
    if ((b.u & 0x7fffffffu) > 0x7f800000u)
        return (hone_bf16)((b.u >> 16) | 0x40u);
    b.u += 0x7fffu + ((b.u >> 16) & 1u);
    return (hone_bf16)(b.u >> 16);
}

/* ------------------------------------------------------------------ op semantics both backends
 * keep maxpool: p = (h - size) / stride + 1 (q likewise); idx[n,c,p,q] = the argmax's offset i*w +
 * j inside its (n,c) plane, the first maximum in row-major window order wins. batchnorm (training):
 * mean and biased var over (n, hw); save_invstd = 1/sqrt(var + eps); running_mean =
 * (1-momentum)*running_mean + momentum*mean; running_var = (1-momentum)*running_var +
 * momentum*var*m/(m-1), m = n*hw (unbiased; m==1: var). bwd overwrites dgamma, dbeta. softmax_xent:
 * dlogits rows with label < 0 are zero; the divisor is the n passed in. conv: the workspace is
 * hone_k_conv_workspace bytes of device memory, no other scratch. maxpool_pad: p = (h + 2*pad -
 * size) / stride + 1 (pad < size), padding never wins (windows see only real pixels), idx and ties
 * as maxpool; bwd sums dy over the windows whose argmax is the pixel. add_relu_bwd: da = db = dy *
 * (y > 0), db may be NULL. batchnorm with relu (fwd relu = 1, bwd y_relu non-NULL): y =
 * max(0, bn(x)); bwd runs as with dy[i] replaced by y_relu[i] > 0 ? dy[i] : 0 (a select). */

/* ------------------------------------------------------------------ the ops of a backend
 * Every op a backend provides, once: X(P, return type, name, parameters), grouped by the file that
 * holds it in both backends (kernels/cpu/gemm.c beside kernels/cuda/gemm.cu, ...). Each backend
 * defines P_name for every entry (cpu_gemm, cuda_gemm); dispatch.c builds one hone_kbackend table
 * per backend from this list. Adding an op: one line here, one function per backend, one public
 * wrapper in dispatch.c. */
#define HONE_BACKEND_OPS(X, P)                                                                     \
    /* context.{c,cu}: context, memory, graphs, device queries */                                  \
    X(P, int, ctx_init, (hone_kctx * k))                                                           \
    X(P, void, ctx_release, (hone_kctx * k))                                                       \
    X(P, void *, alloc, (hone_kctx * k, size_t bytes))                                             \
    X(P, void, free, (hone_kctx * k, void *p))                                                     \
    X(P, int, upload, (hone_kctx * k, void *dst, const void *host_src, size_t bytes))              \
    X(P, int, download, (hone_kctx * k, void *host_dst, const void *src, size_t bytes))            \
    X(P, int, copy, (hone_kctx * k, void *dst, const void *src, size_t bytes))                     \
    X(P, int, fill, (hone_kctx * k, float *x, float v, size_t n))                                  \
    X(P, int, sync, (hone_kctx * k))                                                               \
    X(P, int, graph_capture, (hone_kctx * k, hone_kgraph * g))                                     \
    X(P, int, graph_launch, (hone_kctx * k, hone_kgraph * g))                                      \
    X(P, void, graph_release, (hone_kgraph * g))                                                   \
    X(P, int, device_count, (void))                                                                \
    X(P, int, device_name, (int i, char *buf, size_t len, size_t *mem_bytes))                      \
    X(P, int, device_uuid, (int i, char *buf, size_t len))                                         \
    /* gemm.{c,cu}: dense layers */                                                                \
    X(P, int, gemm,                                                                                \
      (hone_kctx * k, int transA, int transB, int M, int N, int K, float alpha, const float *A,    \
       int lda, const float *B, int ldb, float beta, float *C, int ldc))                           \
    X(P, int, bias_add, (hone_kctx * k, float *y, const float *b, int n, int c))                   \
    X(P, int, bias_grad,                                                                           \
      (hone_kctx * k, float *db, const float *dy, int n, int c, int accumulate))                   \
    X(P, int, gemm_batched,                                                                        \
      (hone_kctx * k, int transA, int transB, int M, int N, int K, float alpha, const float *A,    \
       int lda, size_t strideA, const float *B, int ldb, size_t strideB, float beta, float *C,     \
       int ldc, size_t strideC, int count))                                                        \
    X(P, int, bias_add_batched,                                                                    \
      (hone_kctx * k, float *y, const float *b, size_t b_stride, int n, int c, int count))         \
    X(P, int, bias_grad_batched,                                                                   \
      (hone_kctx * k, float *db, size_t db_stride, const float *dy, int n, int c, int accumulate,  \
       int count))                                                                                 \
    /* conv.{c,cu}: convolution */                                                                 \
    X(P, size_t, conv_workspace, (hone_kctx * k, const hone_conv_desc *d))                         \
    X(P, int, conv_fwd,                                                                            \
      (hone_kctx * k, const hone_conv_desc *d, const float *x, const float *w, const float *b,     \
       float *y, void *ws))                                                                        \
    X(P, int, conv_bwd,                                                                            \
      (hone_kctx * k, const hone_conv_desc *d, const float *x, const float *w, const float *dy,    \
       float *dx, float *dw, float *db, void *ws))                                                 \
    X(P, int, conv_bwd_reuse,                                                                      \
      (hone_kctx * k, const hone_conv_desc *d, const float *x, const float *w, const float *dy,    \
       float *dx, float *dw, float *db, void *ws))                                                 \
    X(P, int, conv_bwd_acc,                                                                        \
      (hone_kctx * k, const hone_conv_desc *d, const float *x, const float *w, const float *dy,    \
       float *dx, float *dw, float *db, void *ws, int reuse))                                      \
    X(P, const char *, conv_impl, (hone_kctx * k))                                                 \
    X(P, size_t, conv_workspace_batched, (hone_kctx * k, const hone_conv_desc *d, int trials))     \
    X(P, int, conv_fwd_batched,                                                                    \
      (hone_kctx * k, const hone_conv_desc *d, int trials, const float *x, const float *w,         \
       size_t w_stride, const float *b, size_t b_stride, float *y, void *ws))                      \
    X(P, int, conv_bwd_batched,                                                                    \
      (hone_kctx * k, const hone_conv_desc *d, int trials, const float *x, const float *w,         \
       size_t w_stride, const float *dy, float *dx, float *dw, float *db, size_t b_stride,         \
       void *ws, int reuse))                                                                       \
    /* pool.{c,cu}: pooling, resampling */                                                         \
    X(P, int, maxpool_fwd,                                                                         \
      (hone_kctx * k, int n, int c, int h, int w, int size, int stride, const float *x, float *y,  \
       int32_t *idx))                                                                              \
    X(P, int, maxpool_bwd,                                                                         \
      (hone_kctx * k, int n, int c, int h, int w, int size, int stride, const float *dy,           \
       const int32_t *idx, float *dx))                                                             \
    X(P, int, maxpool_relu_fwd,                                                                    \
      (hone_kctx * k, int n, int c, int h, int w, int size, int stride, const float *x, float *y,  \
       int32_t *idx))                                                                              \
    X(P, int, maxpool_relu_bwd,                                                                    \
      (hone_kctx * k, int n, int c, int h, int w, int size, int stride, const float *y,            \
       const float *dy, const int32_t *idx, float *dx))                                            \
    X(P, int, maxpool_pad_fwd,                                                                     \
      (hone_kctx * k, int n, int c, int h, int w, int size, int stride, int pad, const float *x,   \
       float *y, int32_t *idx))                                                                    \
    X(P, int, maxpool_pad_bwd,                                                                     \
      (hone_kctx * k, int n, int c, int h, int w, int size, int stride, int pad, const float *dy,  \
       const int32_t *idx, float *dx))                                                             \
    X(P, int, avgpool_global_fwd,                                                                  \
      (hone_kctx * k, int n, int c, int h, int w, const float *x, float *y))                       \
    X(P, int, avgpool_global_bwd,                                                                  \
      (hone_kctx * k, int n, int c, int h, int w, const float *dy, float *dx))                     \
    X(P, int, upsample_fwd,                                                                        \
      (hone_kctx * k, int n, int c, int h, int w, int factor, const float *x, float *y))           \
    X(P, int, upsample_bwd,                                                                        \
      (hone_kctx * k, int n, int c, int h, int w, int factor, const float *dy, float *dx))         \
    /* elementwise.{c,cu} */                                                                       \
    X(P, int, relu_fwd, (hone_kctx * k, const float *x, float *y, size_t n))                       \
    X(P, int, relu_bwd, (hone_kctx * k, const float *y, const float *dy, float *dx, size_t n))     \
    X(P, int, sigmoid_fwd, (hone_kctx * k, const float *x, float *y, size_t n))                    \
    X(P, int, sigmoid_bwd, (hone_kctx * k, const float *y, const float *dy, float *dx, size_t n))  \
    X(P, int, dropout_fwd,                                                                         \
      (hone_kctx * k, const float *x, float *y, uint8_t *mask, size_t n, float p, uint64_t seed,   \
       uint64_t *counter))                                                                         \
    X(P, int, dropout_bwd,                                                                         \
      (hone_kctx * k, const float *dy, const uint8_t *mask, float *dx, size_t n, float p))         \
    X(P, int, add_relu_fwd, (hone_kctx * k, const float *a, const float *b, float *y, size_t n))   \
    X(P, int, add_relu_bwd,                                                                        \
      (hone_kctx * k, const float *y, const float *dy, float *da, float *db, size_t n))            \
    X(P, int, axpy, (hone_kctx * k, float a, const float *x, float *y, size_t n))                  \
    X(P, int, scale, (hone_kctx * k, float *x, float a, size_t n))                                 \
    /* norm.{c,cu}: batch norm */                                                                  \
    X(P, int, batchnorm_fwd,                                                                       \
      (hone_kctx * k, int n, int c, int hw, const float *x, const float *gamma, const float *beta, \
       float *running_mean, float *running_var, float momentum, float eps, int training,           \
       float *save_mean, float *save_invstd, float *y, int relu))                                  \
    X(P, int, batchnorm_bwd,                                                                       \
      (hone_kctx * k, int n, int c, int hw, const float *x, const float *y_relu, const float *dy,  \
       const float *gamma, const float *save_mean, const float *save_invstd, float *dx,            \
       float *dgamma, float *dbeta))                                                               \
    /* loss.{c,cu}: loss and reductions */                                                         \
    X(P, int, softmax_xent,                                                                        \
      (hone_kctx * k, const float *logits, const int32_t *labels, int n, int classes,              \
       float smoothing, float *dlogits, float *loss_sum, float *correct))                          \
    X(P, int, sum, (hone_kctx * k, const float *x, size_t n, float *out))                          \
    /* detect.{c,cu}: the DetectNet_v2 grid head's loss and targets */                             \
    X(P, int, detect_loss,                                                                         \
      (hone_kctx * k, const float *pred, const float *target, int n, int classes, int hw,          \
       float cov_weight, float bg_weight, float bbox_weight, int cov_loss, float gamma,            \
       float *dpred, float *loss_sum))                                                             \
    X(P, int, detect_targets,                                                                      \
      (hone_kctx * k, const hone_kbox *boxes, const uint32_t *box_start, const int32_t *idx,       \
       const int32_t *base_dev, int base, int n, int h, int w, const hone_kdet_grid *g,            \
       const hone_kaugment *aug, const uint64_t *counter, float *dst))                             \
    /* data.{c,cu}: data on the device */                                                          \
    X(P, int, gather_rows,                                                                         \
      (hone_kctx * k, const float *src, const int32_t *src_labels, const int32_t *idx,             \
       const int32_t *base_dev, int base, int n, int row, float *dst, int32_t *dst_labels))        \
    X(P, int, counter_add, (hone_kctx * k, int32_t * counter, int step))                           \
    X(P, int, permutation, (hone_kctx * k, int32_t * idx, int n, uint64_t seed, uint64_t epoch))   \
    X(P, int, gather_images,                                                                       \
      (hone_kctx * k, const uint8_t *src, const int32_t *src_labels, const int32_t *idx,           \
       const int32_t *base_dev, int base, int n, int c, int h, int w, const float *mean,           \
       const float *inv_std, const hone_kaugment *aug, uint64_t *counter, float *dst,              \
       int32_t *dst_labels))                                                                       \
    /* half.{c,cu}: bf16 NHWC activations (conv through cuDNN on CUDA) */                          \
    X(P, int, to_nhwc_h, (hone_kctx * k, int n, int c, int hw, const float *x, hone_bf16 *y))      \
    X(P, int, from_nhwc_h, (hone_kctx * k, int n, int c, int hw, const hone_bf16 *x, float *y))    \
    X(P, int, conv_weights_h,                                                                      \
      (hone_kctx * k, const hone_conv_desc *d, const float *w, hone_bf16 *wh))                     \
    X(P, int, conv_workspace_h, (hone_kctx * k, const hone_conv_desc *d, size_t *bytes))           \
    X(P, int, conv_fwd_h,                                                                          \
      (hone_kctx * k, const hone_conv_desc *d, const hone_bf16 *x, const hone_bf16 *wh,            \
       hone_bf16 *y, void *ws))                                                                    \
    X(P, int, conv_bwd_h,                                                                          \
      (hone_kctx * k, const hone_conv_desc *d, const hone_bf16 *x, const hone_bf16 *wh,            \
       const hone_bf16 *dy, hone_bf16 *dx, int acc, float *dw, void *ws))                          \
    X(P, int, batchnorm_fwd_h,                                                                     \
      (hone_kctx * k, int m, int c, const hone_bf16 *x, const float *gamma, const float *beta,     \
       float *running_mean, float *running_var, float momentum, float eps, int training,           \
       float *save_mean, float *save_invstd, const hone_bf16 *skip, hone_bf16 *y, int relu))       \
    X(P, int, batchnorm_bwd_h,                                                                     \
      (hone_kctx * k, int m, int c, const hone_bf16 *x, const hone_bf16 *y_relu,                   \
       const hone_bf16 *dy, const float *gamma, const float *save_mean, const float *save_invstd,  \
       hone_bf16 *dx, float *dgamma, float *dbeta))                                                \
    X(P, int, add_relu_fwd_h,                                                                      \
      (hone_kctx * k, const hone_bf16 *a, const hone_bf16 *b, hone_bf16 *y, size_t n))             \
    X(P, int, add_relu_bwd_h,                                                                      \
      (hone_kctx * k, const hone_bf16 *y, const hone_bf16 *dy, hone_bf16 *da, hone_bf16 *db,       \
       size_t n))                                                                                  \
    X(P, int, maxpool_pad_fwd_h,                                                                   \
      (hone_kctx * k, int n, int c, int h, int w, int size, int stride, int pad,                   \
       const hone_bf16 *x, hone_bf16 *y, int32_t *idx))                                            \
    X(P, int, maxpool_pad_bwd_h,                                                                   \
      (hone_kctx * k, int n, int c, int h, int w, int size, int stride, int pad,                   \
       const hone_bf16 *dy, const int32_t *idx, hone_bf16 *dx))                                    \
    X(P, int, avgpool_global_fwd_h,                                                                \
      (hone_kctx * k, int n, int c, int hw, const hone_bf16 *x, float *y))                         \
    X(P, int, avgpool_global_bwd_h,                                                                \
      (hone_kctx * k, int n, int c, int hw, const float *dy, hone_bf16 *dx))                       \
    /* optim.{c,cu}: optimisers */                                                                 \
    X(P, int, sgd_step,                                                                            \
      (hone_kctx * k, float *w, const float *grad, float *v, size_t n, float lr,                   \
       const float *lr_dev, float momentum, float wd, int nesterov))                               \
    X(P, int, adamw_step,                                                                          \
      (hone_kctx * k, float *w, const float *grad, float *m, float *v, size_t n, float lr,         \
       const float *lr_dev, float beta1, float beta2, float eps, float wd, int t,                  \
       const int32_t *t_dev))

/* A backend: one function pointer per op of the list above, named as the op. */
#define HONE_BACKEND_FIELD(P, ret, name, params) ret(*name) params;
typedef struct hone_kbackend {
    HONE_BACKEND_OPS(HONE_BACKEND_FIELD, _)
} hone_kbackend;

#ifdef __cplusplus
extern "C" {
#endif

/* The backends' functions: cpu_xxx in kernels/cpu/, cuda_xxx in kernels/cuda/. */
#define HONE_BACKEND_PROTO(P, ret, name, params) ret P##_##name params;
/* cpu_device_count() returns 0, cpu_device_name and cpu_device_uuid HONE_ENOTSUP; they exist for
 * symmetry. */
HONE_BACKEND_OPS(HONE_BACKEND_PROTO, cpu)
#ifdef HONE_HAVE_CUDA
/* cuda_ctx_init: pick the current device, create stream/handles, store them in k->cuda; return
 * HONE_ENOTSUP when no GPU is visible. cuda_device_count() must return 0 (not fail) then. */
HONE_BACKEND_OPS(HONE_BACKEND_PROTO, cuda)
#endif

#ifdef __cplusplus
}
#endif

#endif
