/* tests/train/test_train_detaug.c: detectnet_v2's box-aware augmentation. hone_k_detect_targets
 * against train/detect.h's host encoder (hone_det_encode) on random boxes, bit for bit: as
 * stored, and moved by the affine map of hone_kaugment.affine (flip, shift, zoom; boxes clipped
 * and dropped as backend.h says); the moved targets decoded (hone_det_decode) back to the boxes
 * moved by an independent double-precision map, within a pixel; the warped image's bright
 * rectangle where its moved box is; a flip alone giving exactly the classifier's flipped images;
 * RGB images with colour jitter on the warp (a zoom of at most 0.7 and a shift of at most 0.1
 * leave the corners outside the image: the mean).
 * With the argument "cuda" the CUDA backend's targets and images are compared with the CPU
 * backend's, bit for bit (exit 77 without a GPU: tests/gpu registers it). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "check.h"
#include "detect.h"
#include "kernels.h"

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static double unit(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}

enum { H = 96, W = 128, IMAGES = 24 };

/* n images of random boxes: 0..10 each, some DontCare, some pairs of equal areas overlapping,
 * some reaching the image's edges; box_start as the parts keep it. */
static hone_kbox *random_boxes(int n, int classes, uint32_t *start)
{
    hone_kbox *b = malloc(sizeof(hone_kbox) * (size_t)n * 11);
    uint32_t k = 0;
    for (int i = 0; i < n; i++) {
        start[i] = k;
        int nb = (int)(unit() * 10);
        for (int j = 0; j < nb; j++) {
            if (j > 0 && unit() < 0.25) { /* an integer box and a shifted copy: an area tie */
                float bw = (float)(4 + (int)(unit() * 40)), bh = (float)(4 + (int)(unit() * 40));
                float x1 = (float)(int)(unit() * (W - bw - 8)),
                      y1 = (float)(int)(unit() * (H - bh - 8));
                int cls = (int)(unit() * classes), dx = 1 + (int)(unit() * 8),
                    dy = (int)(unit() * 8);
                b[k++] = (hone_kbox){cls, x1, y1, x1 + bw, y1 + bh};
                b[k++] = (hone_kbox){cls, x1 + dx, y1 + dy, x1 + dx + bw, y1 + dy + bh};
                j++;
                continue;
            }
            float bw = (float)(2 + unit() * 70), bh = (float)(2 + unit() * 60);
            float x1 = (float)(unit() * (W - bw)), y1 = (float)(unit() * (H - bh));
            if (unit() < 0.1)
                x1 = 0;
            b[k].cls = unit() < 0.1 ? -1 : (int)(unit() * classes);
            b[k].x1 = x1;
            b[k].y1 = y1;
            b[k].x2 = x1 + bw;
            b[k].y2 = y1 + bh;
            k++;
        }
    }
    start[n] = k;
    return b;
}

static hone_kdet_grid kgrid(const hone_det_grid_opts *o, int classes, int gh, int gw)
{
    return (hone_kdet_grid){o->stride,
                            o->offset,
                            o->bbox_norm,
                            o->cov_shape,
                            o->cov_center_x,
                            o->cov_center_y,
                            o->cov_radius_x,
                            o->cov_radius_y,
                            o->min_radius,
                            o->normalise_by_area,
                            classes,
                            gh,
                            gw};
}

/* The op's targets for the batch rows idx[base ..] on context k. */
static float *op_targets(hone_kctx *k, const hone_kbox *boxes, const uint32_t *start, int nimg,
                         const int32_t *idx, int base, int n, const hone_kdet_grid *g,
                         const hone_kaugment *aug, uint64_t ctr)
{
    size_t row = (size_t)6 * g->classes * g->grid_h * g->grid_w;
    void *db = hone_k_alloc(k, sizeof(hone_kbox) * (start[nimg] ? start[nimg] : 1));
    void *ds = hone_k_alloc(k, sizeof(uint32_t) * (size_t)(nimg + 1));
    void *di = hone_k_alloc(k, sizeof(int32_t) * (size_t)nimg);
    void *dc = hone_k_alloc(k, sizeof(uint64_t));
    float *dd = hone_k_alloc(k, sizeof(float) * row * (size_t)n);
    if (start[nimg])
        hone_k_upload(k, db, boxes, sizeof(hone_kbox) * start[nimg]);
    hone_k_upload(k, ds, start, sizeof(uint32_t) * (size_t)(nimg + 1));
    hone_k_upload(k, di, idx, sizeof(int32_t) * (size_t)nimg);
    hone_k_upload(k, dc, &ctr, sizeof ctr);
    hone_k_fill(k, dd, NAN, row * (size_t)n);
    CHECK(hone_k_detect_targets(k, db, ds, di, NULL, base, n, H, W, g, aug, dc, dd) == HONE_OK);
    float *out = malloc(sizeof(float) * row * (size_t)n);
    uint64_t after = 0;
    CHECK(hone_k_sync(k) == HONE_OK);
    hone_k_download(k, out, dd, sizeof(float) * row * (size_t)n);
    hone_k_download(k, &after, dc, sizeof after);
    CHECK(after == ctr); /* read, never advanced */
    hone_k_free(k, db), hone_k_free(k, ds), hone_k_free(k, di), hone_k_free(k, dc);
    hone_k_free(k, dd);
    return out;
}

/* Box b moved by image i's draw, in double, independently of backend.h: 1 and o[4] when kept. */
static int moved_box(const hone_aug_draw *d, const hone_kbox *b, double *o)
{
    double cx = W / 2.0, cy = H / 2.0, x1 = b->x1, x2 = b->x2;
    if (d->flip) {
        x1 = W - (double)b->x2;
        x2 = W - (double)b->x1;
    }
    double X1 = cx + (x1 - cx) * d->zoom + d->tx, X2 = cx + (x2 - cx) * d->zoom + d->tx;
    double Y1 = cy + (b->y1 - cy) * d->zoom + d->ty, Y2 = cy + (b->y2 - cy) * d->zoom + d->ty;
    o[0] = fmax(X1, 0), o[1] = fmax(Y1, 0), o[2] = fmin(X2, W), o[3] = fmin(Y2, H);
    double cw = o[2] - o[0], ch = o[3] - o[1];
    return cw >= 2 && ch >= 2 && cw * ch >= 0.3 * (X2 - X1) * (Y2 - Y1);
}

/* hone_det_encode on image r's boxes (moved by draw d when non-NULL) against the op's row t,
 * bit for bit; with d, also the decoded boxes against moved_box. Counts kept and dropped. */
static void check_image(const hone_det_grid_opts *o, int classes, int gh, int gw,
                        const hone_kbox *b, int nb, const hone_aug_draw *d, const float *t,
                        int *kept, int *dropped, int *decoded)
{
    size_t plane = (size_t)classes * gh * gw, row = 6 * plane;
    hone_det_gt *gts = malloc(sizeof(hone_det_gt) * (size_t)(nb ? nb : 1));
    double(*want)[4] = malloc(sizeof(double) * 4 * (size_t)(nb ? nb : 1));
    int m = 0;
    for (int j = 0; j < nb; j++) {
        hone_det_gt g = {{b[j].x1, b[j].y1, b[j].x2, b[j].y2}, b[j].cls, 0};
        if (d && b[j].cls >= 0) {
            float c[4] = {0, 0, 0, 0};
            int k1 = hone_aug_box(d, H, W, b[j].x1, b[j].y1, b[j].x2, b[j].y2, c);
            int k2 = moved_box(d, &b[j], want[m]);
            double area = ((double)b[j].x2 - b[j].x1) * ((double)b[j].y2 - b[j].y1) * d->zoom *
                          d->zoom,
                   vis = (want[m][2] - want[m][0]) * (want[m][3] - want[m][1]);
            /* the float map and the double one agree but at the 30% and 2-pixel edges */
            if (k1 != k2 && fabs(vis - 0.3 * area) > 1e-3 * area &&
                fabs(want[m][2] - want[m][0] - 2) > 1e-3 &&
                fabs(want[m][3] - want[m][1] - 2) > 1e-3)
                CHECK(k1 == k2);
            if (!k1) {
                (*dropped)++;
                continue;
            }
            (*kept)++;
            g.box = (hone_det_box){c[0], c[1], c[2], c[3]};
        } else if (d) { /* DontCare: moved as the op moves it, dropped where it drops a box */
            float c[4] = {b[j].x1, b[j].y1, b[j].x2, b[j].y2};
            if (d->affine && !hone_aug_box(d, H, W, b[j].x1, b[j].y1, b[j].x2, b[j].y2, c))
                continue;
            g.box = (hone_det_box){c[0], c[1], c[2], c[3]};
            want[m][0] = want[m][1] = want[m][2] = want[m][3] = 0;
        }
        gts[m++] = g;
    }
    float *ref = malloc(sizeof(float) * row);
    CHECK(hone_det_encode(o, classes, gh, gw, gts, m, ref, ref + plane, ref + 5 * plane) == 0);
    if (memcmp(ref, t, sizeof(float) * row) != 0) {
        size_t at = 0;
        while (at < row && ref[at] == t[at])
            at++;
        fprintf(stderr, "targets differ at %zu of %zu: encoder %g, op %g (%d boxes)\n", at, row,
                ref[at], t[at], m);
        CHECK(0);
    }
    if (d) { /* every covered cell decodes to its moved box, within a pixel */
        hone_det_cand *cand = malloc(sizeof(hone_det_cand) * plane);
        int nc = 0;
        CHECK(hone_det_decode(o, classes, gh, gw, t, t + plane, 0.5f, cand, (int)plane, &nc) == 0);
        for (int q = 0; q < nc; q++) {
            int match = 0;
            for (int j = 0; j < m && !match; j++)
                match = gts[j].cls == cand[q].cls && fabs(cand[q].box.x1 - want[j][0]) < 1 &&
                        fabs(cand[q].box.y1 - want[j][1]) < 1 &&
                        fabs(cand[q].box.x2 - want[j][2]) < 1 &&
                        fabs(cand[q].box.y2 - want[j][3]) < 1;
            CHECK(match);
        }
        *decoded += nc;
        free(cand);
    }
    free(ref);
    free(gts);
    free(want);
}

static void targets(hone_kctx *k, hone_kctx *cpu)
{
    static const struct {
        int classes, shape, norm;
        float radius, min_radius;
    } cases[] = {{1, HONE_DET_COV_RECT, 1, 1.0f, 1.0f},
                 {3, HONE_DET_COV_RECT, 1, 1.0f, 1.0f},
                 {2, HONE_DET_COV_ELLIPSE, 0, 0.6f, 4.0f},
                 {3, HONE_DET_COV_RECT, 0, 0.4f, 0.0f}};
    hone_kaugment none = {0}, aug = {.flip = 1,
                                     .seed = 77,
                                     .affine = 1,
                                     .translate = 0.3f,
                                     .zoom_min = 0.6f,
                                     .zoom_max = 1.6f};
    int kept = 0, dropped = 0, decoded = 0, flipped = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int a = 0; a < 2; a++) {
            hone_det_grid_opts o;
            hone_det_grid_defaults(&o);
            o.cov_shape = cases[c].shape;
            o.normalise_by_area = cases[c].norm;
            o.cov_radius_x = cases[c].radius;
            o.cov_radius_y = cases[c].radius * 0.8f;
            o.min_radius = cases[c].min_radius;
            o.cov_center_y = 0.45f;
            int classes = cases[c].classes, gh = H / o.stride, gw = W / o.stride;
            hone_kdet_grid g = kgrid(&o, classes, gh, gw);
            uint32_t start[IMAGES + 1];
            hone_kbox *b = random_boxes(IMAGES, classes, start);
            int32_t idx[IMAGES];
            for (int i = 0; i < IMAGES; i++)
                idx[i] = (i * 7 + 3) % IMAGES;
            const hone_kaugment *ap = a ? &aug : NULL;
            uint64_t ctr = 40 + c;
            int base = 2, n = IMAGES - 5;
            float *t = op_targets(k, b, start, IMAGES, idx, base, n, &g, ap, ctr);
            size_t row = (size_t)6 * classes * gh * gw;
            if (cpu) { /* CUDA: the CPU backend's, bit for bit */
                float *tc = op_targets(cpu, b, start, IMAGES, idx, base, n, &g, ap, ctr);
                CHECK(memcmp(t, tc, sizeof(float) * row * (size_t)n) == 0);
                free(tc);
            }
            for (int i = 0; i < n; i++) {
                int r = idx[base + i];
                hone_aug_draw d;
                if (ap) {
                    hone_aug_draw_image(ap, H, W, ctr, i, &d);
                    flipped += d.flip;
                }
                check_image(&o, classes, gh, gw, b + start[r], (int)(start[r + 1] - start[r]),
                            ap ? &d : NULL, t + row * (size_t)i, &kept, &dropped, &decoded);
            }
            /* aug without affine: the boxes as stored */
            if (!a) {
                float *t2 = op_targets(k, b, start, IMAGES, idx, base, n, &g, &none, ctr);
                CHECK(memcmp(t, t2, sizeof(float) * row * (size_t)n) == 0);
                free(t2);
            }
            free(t);
            free(b);
        }
    fprintf(stderr, "moved boxes: %d kept, %d dropped, %d cells decoded, %d images flipped\n", kept,
            dropped, decoded, flipped);
    CHECK(kept > 100 && dropped > 5 && decoded > 100 && flipped > 10);
}

/* Images: one grey image an index, black with a white rectangle where its one box is. */
static float *gather(hone_kctx *k, const uint8_t *img, int n, const hone_kaugment *a, uint64_t ctr)
{
    size_t hw = (size_t)H * W;
    uint8_t *dx = hone_k_alloc(k, hw * (size_t)n);
    float norm[2] = {0.0f, 1.0f};
    float *dn = hone_k_alloc(k, sizeof norm), *dd = hone_k_alloc(k, sizeof(float) * hw * n);
    uint64_t *dc = hone_k_alloc(k, sizeof ctr);
    hone_k_upload(k, dx, img, hw * (size_t)n);
    hone_k_upload(k, dn, norm, sizeof norm);
    hone_k_upload(k, dc, &ctr, sizeof ctr);
    CHECK(hone_k_gather_images(k, dx, NULL, NULL, NULL, 0, n, 1, H, W, dn, dn + 1, a, dc, dd,
                               NULL) == HONE_OK);
    float *out = malloc(sizeof(float) * hw * n);
    CHECK(hone_k_sync(k) == HONE_OK);
    hone_k_download(k, out, dd, sizeof(float) * hw * n);
    hone_k_free(k, dx), hone_k_free(k, dn), hone_k_free(k, dd), hone_k_free(k, dc);
    return out;
}

static void images(hone_kctx *k, hone_kctx *cpu)
{
    enum { N = 16 };
    size_t hw = (size_t)H * W;
    uint8_t *img = calloc(hw, N);
    hone_kbox box[N];
    for (int i = 0; i < N; i++) {
        int x1 = 10 + (int)(unit() * 60), y1 = 8 + (int)(unit() * 40);
        int bw = 12 + (int)(unit() * 40), bh = 10 + (int)(unit() * 30);
        box[i] = (hone_kbox){0, (float)x1, (float)y1, (float)(x1 + bw), (float)(y1 + bh)};
        for (int y = y1; y < y1 + bh; y++)
            for (int x = x1; x < x1 + bw; x++)
                img[hw * i + (size_t)y * W + x] = 255;
    }
    hone_kaugment aug = {
        .flip = 1, .seed = 5, .affine = 1, .translate = 0.2f, .zoom_min = 0.7f, .zoom_max = 1.4f};
    uint64_t ctr = 9;
    float *out = gather(k, img, N, &aug, ctr);
    if (cpu) {
        float *oc = gather(cpu, img, N, &aug, ctr);
        CHECK(memcmp(out, oc, sizeof(float) * hw * N) == 0);
        free(oc);
    }
    int checked = 0;
    for (int i = 0; i < N; i++) {
        hone_aug_draw d;
        hone_aug_draw_image(&aug, H, W, ctr, i, &d);
        double want[4];
        if (!moved_box(&d, &box[i], want))
            continue;
        int x1 = W, y1 = H, x2 = -1, y2 = -1;
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                if (out[hw * i + (size_t)y * W + x] > 0.5f) {
                    x1 = x < x1 ? x : x1, y1 = y < y1 ? y : y1;
                    x2 = x > x2 ? x : x2, y2 = y > y2 ? y : y2;
                }
        /* the pixels more than half white lie within a pixel of the moved box's edges */
        int ok = fabs(x1 - want[0]) <= 1.0 && fabs(y1 - want[1]) <= 1.0 &&
                 fabs(x2 + 1 - want[2]) <= 1.0 && fabs(y2 + 1 - want[3]) <= 1.0;
        if (!ok)
            fprintf(stderr, "image %d: white [%d %d %d %d], box [%.1f %.1f %.1f %.1f]\n", i, x1, y1,
                    x2 + 1, y2 + 1, want[0], want[1], want[2], want[3]);
        CHECK(ok);
        checked++;
    }
    CHECK(checked >= N / 2);
    free(out);
    /* a flip alone: exactly the classifier's flipped images (and unflipped ones untouched) */
    hone_kaugment flip = {.flip = 1, .seed = 5, .zoom_min = 1, .zoom_max = 1}, aff = flip;
    aff.affine = 1;
    float *a = gather(k, img, N, &flip, ctr), *b = gather(k, img, N, &aff, ctr);
    CHECK(memcmp(a, b, sizeof(float) * hw * N) == 0);
    free(a), free(b);
    free(img);
}

/* RGB images with colour jitter on top of the warp: finite, the out-of-image pixels (a zoom
 * below 1 leaves a border) the mean without jitter; on CUDA the CPU backend's, bit for bit. */
static void rgb(hone_kctx *k, hone_kctx *cpu)
{
    enum { N = 8, C = 3 };
    size_t hw = (size_t)H * W, px = hw * C * N;
    uint8_t *img = malloc(px);
    for (size_t i = 0; i < px; i++)
        img[i] = (uint8_t)(unit() * 256);
    float norm[6] = {0.4f, 0.5f, 0.6f, 4.0f, 3.5f, 3.0f};
    for (int jit = 0; jit < 2; jit++) {
        hone_kaugment a = {.flip = 1,
                           .jitter = jit ? 0.4f : 0.0f,
                           .seed = 11,
                           .affine = 1,
                           .translate = 0.1f,
                           .zoom_min = 0.5f,
                           .zoom_max = 0.7f};
        hone_kctx *ks[2] = {k, cpu};
        float *outs[2] = {NULL, NULL};
        for (int b = 0; b < (cpu ? 2 : 1); b++) {
            uint8_t *dx = hone_k_alloc(ks[b], px);
            float *dn = hone_k_alloc(ks[b], sizeof norm);
            float *dd = hone_k_alloc(ks[b], sizeof(float) * hw * C * N);
            uint64_t ctr = 3, *dc = hone_k_alloc(ks[b], sizeof ctr);
            hone_k_upload(ks[b], dx, img, px);
            hone_k_upload(ks[b], dn, norm, sizeof norm);
            hone_k_upload(ks[b], dc, &ctr, sizeof ctr);
            CHECK(hone_k_gather_images(ks[b], dx, NULL, NULL, NULL, 0, N, C, H, W, dn, dn + C, &a,
                                       dc, dd, NULL) == HONE_OK);
            outs[b] = malloc(sizeof(float) * hw * C * N);
            CHECK(hone_k_sync(ks[b]) == HONE_OK);
            hone_k_download(ks[b], outs[b], dd, sizeof(float) * hw * C * N);
            hone_k_free(ks[b], dx), hone_k_free(ks[b], dn), hone_k_free(ks[b], dd);
            hone_k_free(ks[b], dc);
        }
        int finite = 1, border = 1;
        for (size_t i = 0; i < hw * C * N; i++)
            finite &= isfinite(outs[0][i]);
        for (size_t i = 0; i < N * C && !jit; i++) /* the corner pixel of every channel */
            border &= outs[0][i * hw] == 0.0f;
        CHECK(finite && border);
        if (cpu)
            CHECK(memcmp(outs[0], outs[1], sizeof(float) * hw * C * N) == 0);
        free(outs[0]), free(outs[1]);
    }
    free(img);
}

int main(int argc, char **argv)
{
    int cuda = argc > 1 && !strcmp(argv[1], "cuda");
    hone_kctx *k = NULL, *cpu = NULL;
    int rc = hone_kctx_new(cuda ? HONE_DEV_CUDA : HONE_DEV_CPU, 2, &k);
    if (rc == HONE_ENOTSUP) {
        fprintf(stderr, "skipped: device not available\n");
        return 77;
    }
    REQUIRE(rc == HONE_OK);
    if (cuda)
        REQUIRE(hone_kctx_new(HONE_DEV_CPU, 2, &cpu) == HONE_OK);
    targets(k, cpu);
    images(k, cpu);
    rgb(k, cpu);
    hone_kctx_free(k);
    if (cpu)
        hone_kctx_free(cpu);
    return failures ? 1 : 0;
}
