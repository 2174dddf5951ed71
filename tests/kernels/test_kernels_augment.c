/* tests/kernels/test_kernels_augment.c: hone_k_gather_images, the uint8 mini-batch gather with
 * augmentation and normalisation: exact against ref_gather_images (backend.h's definition written
 * out on its own), then properties that hold whatever the draws: flipping twice is the identity,
 * crop padding 0 and jitter 0 change nothing, the cutout square is 0, and the draws (flip, crop
 * offsets, jitter factors, cutout centres) have the frequencies they should. Runs on the CPU, or
 * on CUDA with the argument "cuda" (tests/gpu registers that). */
#include <math.h>

#include "tk.h"

/* An image batch with every pixel distinct enough to locate it: random bytes. */
static uint8_t *random_images(int n, int c, int h, int w, uint64_t seed)
{
    size_t len = (size_t)n * c * h * w;
    uint8_t *p = malloc(len);
    uint64_t s = seed;
    for (size_t i = 0; i < len; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        p[i] = (uint8_t)(s >> 56);
    }
    return p;
}

typedef struct {
    hone_kctx *k;
    uint8_t *src;
    int32_t *lab, *idx, *base;
    float *norm; /* mean[c] then inv_std[c] */
    uint64_t *ctr;
    float *dst;
    int32_t *dlab;
    int rows, c, h, w;
} gdev;

static gdev gdev_new(hone_kctx *k, const uint8_t *src, int rows, int c, int h, int w,
                     const float *mean, const float *inv_std, int batch)
{
    gdev g = {.k = k, .rows = rows, .c = c, .h = h, .w = w};
    size_t row = (size_t)c * h * w;
    g.src = tk_dev_bytes(k, src, (size_t)rows * row);
    int32_t *lab = malloc(sizeof(int32_t) * rows), zero = 0;
    for (int i = 0; i < rows; i++)
        lab[i] = (i * 7 + 3) % 10;
    g.lab = tk_dev_bytes(k, lab, sizeof(int32_t) * rows);
    free(lab);
    g.idx = hone_k_alloc(k, sizeof(int32_t) * rows);
    g.base = tk_dev_bytes(k, &zero, sizeof(int32_t));
    float nm[8];
    memcpy(nm, mean, sizeof(float) * c);
    memcpy(nm + c, inv_std, sizeof(float) * c);
    g.norm = tk_dev(k, nm, 2 * (size_t)c);
    g.ctr = tk_dev_bytes(k, NULL, sizeof(uint64_t));
    g.dst = tk_poisoned(k, (size_t)batch * row);
    g.dlab = hone_k_alloc(k, sizeof(int32_t) * batch);
    return g;
}

static void gdev_free(gdev *g)
{
    void *p[] = {g->src, g->lab, g->idx, g->base, g->norm, g->ctr, g->dst, g->dlab};
    for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++)
        hone_k_free(g->k, p[i]);
}

/* Runs the op for n images from base (host base, idx on the device when use_idx) with the
 * counter set to ctr; returns the host copy of the output (caller frees). */
static float *run(gdev *g, int use_idx, int base, int n, const hone_kaugment *a, uint64_t ctr)
{
    hone_k_upload(g->k, g->ctr, &ctr, sizeof(ctr));
    TK_OK(hone_k_gather_images(g->k, g->src, g->lab, use_idx ? g->idx : NULL, NULL, base, n, g->c,
                               g->h, g->w, g->norm, g->norm + g->c, a, g->ctr, g->dst, g->dlab));
    uint64_t after = 0;
    hone_k_sync(g->k);
    hone_k_download(g->k, &after, g->ctr, sizeof(after));
    TK_EXPECT(after == (a ? ctr + 1 : ctr));
    return tk_get(g->k, g->dst, (size_t)n * g->c * g->h * g->w);
}

static double *widen(const float *x, size_t n)
{
    double *d = malloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++)
        d[i] = x[i];
    return d;
}

/* The op against the reference, with and without an index, for one augmentation. */
static void check_exact(hone_kctx *k, int c, int h, int w, const hone_kaugment *a, double tol)
{
    int rows = 40, n = 17;
    uint8_t *src = random_images(rows, c, h, w, 11 + c);
    float mean[3] = {0.5f, 0.25f, 0.75f}, istd[3] = {3.0f, 2.5f, 4.0f};
    gdev g = gdev_new(k, src, rows, c, h, w, mean, istd, n);
    int32_t perm[40];
    for (int i = 0; i < rows; i++)
        perm[i] = (i * 13 + 5) % rows;
    hone_k_upload(k, g.idx, perm, sizeof(perm));
    size_t len = (size_t)n * c * h * w;
    float *ref = malloc(sizeof(float) * len);
    for (int use_idx = 0; use_idx < 2; use_idx++) {
        int base = use_idx ? 9 : 4;
        float *out = run(&g, use_idx, base, n, a, 1234);
        ref_gather_images(src, use_idx ? perm : NULL, base, n, c, h, w, mean, istd, a, 1234, ref);
        double *r = widen(ref, len);
        char name[96];
        snprintf(name, sizeof name, "gather_images c%d %dx%d flip%d pad%d jitter%g cut%d idx%d", c,
                 h, w, a ? a->flip : 0, a ? a->crop_padding : 0, a ? a->jitter : 0.0,
                 a ? a->cutout : 0, use_idx);
        TK_CLOSE(name, out, r, len, tol);
        int32_t lab[17];
        hone_k_download(k, lab, g.dlab, sizeof(lab));
        for (int i = 0; i < n; i++)
            TK_EXPECT(lab[i] == ((use_idx ? perm[base + i] : base + i) * 7 + 3) % 10);
        free(out);
        free(r);
    }
    /* the base read from the device */
    int32_t b = 9;
    hone_k_upload(k, g.base, &b, sizeof(b));
    uint64_t c0 = 1234;
    hone_k_upload(k, g.ctr, &c0, sizeof(c0));
    TK_OK(hone_k_gather_images(k, g.src, NULL, g.idx, g.base, 0, n, c, h, w, g.norm, g.norm + c, a,
                               g.ctr, g.dst, NULL));
    float *out = tk_get(k, g.dst, len);
    ref_gather_images(src, perm, 9, n, c, h, w, mean, istd, a, 1234, ref);
    double *r = widen(ref, len);
    TK_CLOSE("gather_images base_dev", out, r, len, tol);
    free(out), free(r), free(ref), free(src);
    gdev_free(&g);
}

/* Output back to HWC uint8 when it was normalised with mean 0, inv_std 255. */
static void to_u8(const float *x, int n, int c, int h, int w, uint8_t *out)
{
    size_t hw = (size_t)h * w;
    for (int i = 0; i < n; i++)
        for (int ch = 0; ch < c; ch++)
            for (size_t p = 0; p < hw; p++) {
                long v = lrintf(x[((size_t)i * c + ch) * hw + p]);
                out[((size_t)i * hw + p) * c + ch] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
}

/* Identities: flip twice (same draws) is the identity; padding 0 and jitter 0 change nothing;
 * with jitter, pixels stay in [0, 255]. */
static void check_identities(hone_kctx *k)
{
    int n = 64, c = 3, h = 9, w = 12;
    size_t len = (size_t)n * c * h * w;
    uint8_t *src = random_images(n, c, h, w, 77), *once = malloc(len), *twice = malloc(len);
    float mean[3] = {0, 0, 0}, istd[3] = {255, 255, 255};
    gdev g = gdev_new(k, src, n, c, h, w, mean, istd, n);
    hone_kaugment flip = {.flip = 1, .seed = 5};
    float *plain = run(&g, 0, 0, n, NULL, 0), *a = run(&g, 0, 0, n, &flip, 42);
    uint8_t *plain8 = malloc(len);
    to_u8(plain, n, c, h, w, plain8);
    TK_EXPECT(memcmp(plain8, src, len) == 0); /* un-normalising gives the source back */
    to_u8(a, n, c, h, w, once);
    TK_EXPECT(memcmp(once, src, len) != 0); /* some images were flipped */
    hone_k_upload(k, g.src, once, len);
    float *b = run(&g, 0, 0, n, &flip, 42);
    to_u8(b, n, c, h, w, twice);
    TK_EXPECT(memcmp(twice, src, len) == 0);
    hone_k_upload(k, g.src, src, len);

    hone_kaugment pad0 = {.crop_padding = 0, .seed = 5}, jit0 = {.jitter = 0.0f, .seed = 9};
    float *p0 = run(&g, 0, 0, n, &pad0, 7), *j0 = run(&g, 0, 0, n, &jit0, 8);
    TK_EXPECT(memcmp(p0, plain, sizeof(float) * len) == 0);
    TK_EXPECT(memcmp(j0, plain, sizeof(float) * len) == 0);
    hone_kaugment jit = {.jitter = 1.0f, .seed = 3};
    float *jj = run(&g, 0, 0, n, &jit, 8);
    int in_range = 1, changed = 0;
    for (size_t i = 0; i < len; i++) {
        in_range &= jj[i] >= 0.0f && jj[i] <= 255.0f;
        changed += jj[i] != plain[i];
    }
    TK_EXPECT(in_range && changed > (int)(len / 2));
    free(plain), free(a), free(b), free(p0), free(j0), free(jj);
    free(src), free(once), free(twice), free(plain8);
    gdev_free(&g);
}

/* |count - n p| within 5 standard deviations of a binomial draw (a failure by chance: < 1e-6). */
static int binomial_ok(long count, long n, double p)
{
    double sd = sqrt((double)n * p * (1 - p));
    return fabs((double)count - (double)n * p) <= 5 * sd + 1;
}

/* The draws, read back from what the op did to images built to reveal them. */
static void check_draws(hone_kctx *k)
{
    int n = 4000, h = 8, w = 8, pad = 2;
    /* grey images whose pixel (y, x) holds 1 + y*w + x: the output's first non-zero pixels give
     * the crop offset, and a mirrored row gives the flip */
    uint8_t *src = malloc((size_t)n * h * w);
    for (int i = 0; i < n; i++)
        for (int p = 0; p < h * w; p++)
            src[(size_t)i * h * w + p] = (uint8_t)(1 + p);
    float mean[1] = {0}, istd[1] = {255};
    gdev g = gdev_new(k, src, n, 1, h, w, mean, istd, n);
    hone_kaugment a = {.flip = 1, .crop_padding = pad, .seed = 99};
    float *o = run(&g, 0, 0, n, &a, 5);
    long flips = 0, offs[2][5] = {{0}}, bad = 0;
    for (int i = 0; i < n; i++) {
        const float *img = o + (size_t)i * h * w;
        /* the source pixel of output (4, 4) is always inside (|offset| <= 2) */
        int v = (int)lrintf(img[4 * w + 4]) - 1, sy = v / w, sx = v % w;
        int right = (int)lrintf(img[4 * w + 5]) - 1; /* its right neighbour's source */
        int fl = right == v - 1;
        int dy = 4 - sy, dx = fl ? 4 - (w - 1 - sx) : 4 - sx;
        if (dx < -pad || dx > pad || dy < -pad || dy > pad || (!fl && right != v + 1)) {
            bad++;
            continue;
        }
        flips += fl;
        offs[0][dx + pad]++;
        offs[1][dy + pad]++;
    }
    TK_EXPECT(bad == 0);
    TK_EXPECT(binomial_ok(flips, n, 0.5));
    for (int d = 0; d < 2; d++)
        for (int v = 0; v <= 2 * pad; v++)
            TK_EXPECT(binomial_ok(offs[d][v], n, 1.0 / (2 * pad + 1)));
    free(o);

    /* jitter on a constant grey image: contrast leaves it alone (it is its own mean) and the
     * brightness factor is out / in, uniform on [1-j, 1+j] */
    memset(src, 100, (size_t)n * h * w);
    hone_k_upload(k, g.src, src, (size_t)n * h * w);
    float j = 0.4f;
    hone_kaugment ja = {.jitter = j, .seed = 17};
    o = run(&g, 0, 0, n, &ja, 1);
    double s = 0, s2 = 0, lo = 2, hi = 0;
    long quart[4] = {0};
    for (int i = 0; i < n; i++) {
        double f = o[(size_t)i * h * w] / 100.0;
        TK_EXPECT(o[(size_t)i * h * w + h * w - 1] == o[(size_t)i * h * w]);
        s += f;
        s2 += f * f;
        lo = f < lo ? f : lo;
        hi = f > hi ? f : hi;
        int q = (int)((f - (1 - j)) / (2 * j) * 4);
        quart[q < 0 ? 0 : q > 3 ? 3 : q]++;
    }
    double mean_f = s / n, var = s2 / n - mean_f * mean_f;
    TK_EXPECT(lo >= 1 - j - 1e-4 && hi <= 1 + j + 1e-4);
    TK_EXPECT(fabs(mean_f - 1.0) < 5 * (2 * j / sqrt(12.0)) / sqrt((double)n));
    TK_EXPECT(fabs(var - (2 * j) * (2 * j) / 12) < 0.1 * (2 * j) * (2 * j) / 12);
    for (int q = 0; q < 4; q++)
        TK_EXPECT(binomial_ok(quart[q], n, 0.25));
    free(o);

    /* cutout on a constant image: the zeros form one square of the side (clipped at the edges)
     * around a centre that is uniform over the image */
    int cut = 3;
    hone_kaugment ca = {.cutout = cut, .seed = 23};
    o = run(&g, 0, 0, n, &ca, 2);
    long cy[8] = {0}, cx[8] = {0};
    for (int i = 0; i < n; i++) {
        const float *img = o + (size_t)i * h * w;
        int y0 = h, y1 = -1, x0 = w, x1 = -1, zeros = 0;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                if (img[y * w + x] == 0.0f) {
                    zeros++;
                    y0 = y < y0 ? y : y0, y1 = y > y1 ? y : y1;
                    x0 = x < x0 ? x : x0, x1 = x > x1 ? x : x1;
                } else {
                    TK_EXPECT(lrintf(img[y * w + x]) == 100);
                }
        TK_EXPECT(zeros > 0 && zeros == (y1 - y0 + 1) * (x1 - x0 + 1));
        /* unclipped side: cut; the centre is y0 + cut/2 unless clipped at the top */
        int ccy = y1 - y0 + 1 == cut || y0 > 0 ? y0 + cut / 2 : y1 - (cut - 1 - cut / 2);
        int ccx = x1 - x0 + 1 == cut || x0 > 0 ? x0 + cut / 2 : x1 - (cut - 1 - cut / 2);
        if (ccy >= 0 && ccy < h && ccx >= 0 && ccx < w) {
            cy[ccy]++;
            cx[ccx]++;
        } else {
            TK_EXPECT(!"cutout centre outside the image");
        }
    }
    for (int v = 0; v < 8; v++)
        TK_EXPECT(binomial_ok(cy[v], n, 1.0 / h) && binomial_ok(cx[v], n, 1.0 / w));
    free(o), free(src);
    gdev_free(&g);
}

/* Everything on at once, after normalisation: the cutout square is exactly 0. */
static void check_cutout_zero(hone_kctx *k)
{
    int n = 50, c = 3, h = 16, w = 16;
    uint8_t *src = random_images(n, c, h, w, 5);
    float mean[3] = {0.4f, 0.5f, 0.6f}, istd[3] = {4, 4, 4};
    gdev g = gdev_new(k, src, n, c, h, w, mean, istd, n);
    hone_kaugment a = {.flip = 1, .crop_padding = 4, .jitter = 0.5f, .cutout = 6, .seed = 8};
    float *o = run(&g, 0, 0, n, &a, 3);
    float *r = malloc(sizeof(float) * (size_t)n * c * h * w);
    ref_gather_images(src, NULL, 0, n, c, h, w, mean, istd, &a, 3, r);
    long zeros = 0, want = 0;
    for (size_t i = 0; i < (size_t)n * c * h * w; i++) {
        zeros += o[i] == 0.0f;
        want += r[i] == 0.0f;
    }
    /* at least the unclipped squares' worth of the smallest (corner) case: 3x3 per image */
    TK_EXPECT(zeros == want && zeros >= (long)n * c * 9);
    free(o), free(r), free(src);
    gdev_free(&g);
}

int main(int argc, char **argv)
{
    hone_kctx *k = tk_ctx(argc, argv);
    /* the CPU backend computes exactly the reference's floats; CUDA the same operations with
     * __fmul_rn/__fadd_rn, so exact too (a tiny tolerance would still point at a real bug) */
    double tol = hone_kctx_device(k) == HONE_DEV_CPU ? 0.0 : 1e-6;
    hone_kaugment all = {.flip = 1, .crop_padding = 3, .jitter = 0.4f, .cutout = 5, .seed = 77};
    hone_kaugment flip = {.flip = 1, .seed = 1}, crop = {.crop_padding = 4, .seed = 2};
    hone_kaugment jit = {.jitter = 0.8f, .seed = 3}, cut = {.cutout = 7, .seed = 4};
    int shapes[4][3] = {{1, 28, 28}, {3, 32, 32}, {3, 10, 12}, {1, 64, 48}};
    for (int s = 0; s < 4; s++) {
        int c = shapes[s][0], h = shapes[s][1], w = shapes[s][2];
        check_exact(k, c, h, w, NULL, tol);
        check_exact(k, c, h, w, &flip, tol);
        check_exact(k, c, h, w, &crop, tol);
        check_exact(k, c, h, w, &jit, tol);
        check_exact(k, c, h, w, &cut, tol);
        check_exact(k, c, h, w, &all, tol);
    }
    check_identities(k);
    check_draws(k);
    check_cutout_zero(k);
    return tk_finish(k, "test_kernels_augment");
}
