/* tests/kernels/test_kernels_detect.c: the DetectNet_v2 head loss (hone_k_detect_loss) against the
 * double-precision reference: gradient and loss on random heads and targets shaped as
 * hone_det_encode writes them (coverage 0/1, weights 1/area on covered cells, offsets there), the
 * loss added to the accumulator, the evaluation form (no gradient), a zero box error giving a zero
 * gradient, a covered cell's other classes weighed in full (background damped), and the reference's
 * gradient against central differences of its own loss; for each coverage loss (sigmoid + L2, BCE,
 * focal), and BCE and focal at logits of +-40. Runs on the CPU, or on CUDA with the argument "cuda"
 * (tests/gpu). */
#include <math.h>

#include "tk.h"

static float *rnd(size_t n, uint64_t seed, float lo, float hi)
{
    float *x = malloc(sizeof(float) * (n ? n : 1));
    ref_fill_uniform(x, n, seed, lo, hi);
    return x;
}

/* Targets [n, 6 * classes, hw] as the encoder makes them: a cell of class c is covered with
 * probability ~1/4, its box offsets and weight (1/area) set there, zero elsewhere. */
static float *targets(int n, int classes, int hw, uint64_t seed)
{
    size_t nc = (size_t)classes * hw, per = 6 * nc;
    float *u = rnd((size_t)n * nc, seed, 0, 1), *b = rnd((size_t)n * 4 * nc, seed + 1, -2, 2);
    float *t = calloc((size_t)n * per, sizeof(float));
    for (size_t i = 0; i < (size_t)n; i++)
        for (size_t cq = 0; cq < nc; cq++) {
            if (u[i * nc + cq] >= 0.25f) {
                if (u[i * nc + cq] < 0.35f) /* an ignore cell (DontCare, crowd) */
                    t[i * per + cq] = -1.0f;
                continue;
            }
            size_t c = cq / hw, q = cq % hw;
            t[i * per + cq] = 1.0f;
            t[i * per + 5 * nc + cq] = 1.0f / (1.0f + (float)(cq % 5));
            for (size_t j = 0; j < 4; j++)
                t[i * per + nc + (4 * c + j) * hw + q] = b[(i * nc + cq) * 4 + j];
        }
    free(u), free(b);
    return t;
}

static void check_loss(hone_kctx *k, int n, int classes, int hw, float cw, float bg, float bw,
                       int mode, float gamma)
{
    size_t np = (size_t)n * 5 * classes * hw, nt = (size_t)n * 6 * classes * hw;
    uint64_t seed = 1000u * (uint64_t)n + (uint64_t)classes * 7u + (uint64_t)hw;
    float *pred = rnd(np, seed, -3, 3), *tg = targets(n, classes, hw, seed + 3);
    /* one box prediction a class plane exactly on its target: L1's gradient there is 0 */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < 4; j++) {
            size_t o = (size_t)(classes + j) * hw;
            pred[(size_t)i * 5 * classes * hw + o] = tg[(size_t)i * 6 * classes * hw + o];
        }
    double *rd = malloc(sizeof(double) * np), rloss;
    ref_detect_loss(pred, tg, n, classes, hw, cw, bg, bw, mode, gamma, rd, &rloss);

    float acc0 = 2.5f;
    float *dp = tk_dev(k, pred, np), *dt = tk_dev(k, tg, nt);
    float *dd = tk_poisoned(k, np), *dacc = tk_dev(k, &acc0, 1);
    TK_OK(hone_k_detect_loss(k, dp, dt, n, classes, hw, cw, bg, bw, mode, gamma, dd, dacc));
    TK_OK(hone_k_detect_loss(k, dp, dt, n, classes, hw, cw, bg, bw, mode, gamma, NULL,
                             dacc)); /* eval form */
    float *out = tk_get(k, dd, np), *acc = tk_get(k, dacc, 1);
    char name[96];
    snprintf(name, sizeof name, "detect_loss dpred n=%d classes=%d hw=%d mode=%d gamma=%g", n,
             classes, hw, mode, gamma);
    TK_CLOSE(name, out, rd, np, 1e-5);
    double want = 2.5 + 2 * rloss;
    TK_EXPECT(fabs(acc[0] - want) <= 1e-4 * fabs(want));
    if (fabs(acc[0] - want) > 1e-4 * fabs(want))
        fprintf(stderr, "%s: loss %g want %g\n", name, acc[0], want);
    for (int i = 0; i < n; i++) /* the exact box predictions */
        for (int j = 0; j < 4; j++)
            TK_EXPECT(out[(size_t)i * 5 * classes * hw + (size_t)(classes + j) * hw] == 0.0f);
    free(out), free(acc);
    hone_k_free(k, dp), hone_k_free(k, dt), hone_k_free(k, dd), hone_k_free(k, dacc);
    free(pred), free(tg), free(rd);
}

/* The reference's gradient is the derivative of its loss / n (so the kernels' is too), for every
 * coverage loss; some coverage targets fractional (the definitions allow t in [0, 1]). */
static void check_reference_gradient(int mode, double gamma)
{
    int n = 2, classes = 3, hw = 6;
    size_t np = (size_t)n * 5 * classes * hw;
    float *pred = rnd(np, 77, -2, 2), *tg = targets(n, classes, hw, 78);
    for (int q = 0; q < hw; q += 3)
        tg[q] = 0.3f; /* image 0, class 0 */
    double *rd = malloc(sizeof(double) * np), l0, lp, lm, worst = 0;
    ref_detect_loss(pred, tg, n, classes, hw, 1.5, 0.2, 4.0, mode, gamma, rd, &l0);
    for (size_t i = 0; i < np; i++) {
        float keep = pred[i], h = 1e-2f;
        pred[i] = keep + h;
        double up = pred[i];
        ref_detect_loss(pred, tg, n, classes, hw, 1.5, 0.2, 4.0, mode, gamma, NULL, &lp);
        pred[i] = keep - h;
        double down = pred[i];
        ref_detect_loss(pred, tg, n, classes, hw, 1.5, 0.2, 4.0, mode, gamma, NULL, &lm);
        pred[i] = keep;
        double fd = (lp - lm) / (up - down) / n;
        double e = fabs(fd - rd[i]) / (fabs(rd[i]) + 1e-3);
        if (e > worst)
            worst = e;
    }
    TK_EXPECT(worst < 2e-2);
    if (worst >= 2e-2)
        fprintf(stderr, "detect_loss reference gradient (mode %d) vs differences: rel err %g\n",
                mode, worst);
    free(pred), free(tg), free(rd);
}

/* BCE and focal from large logits: finite, and the focal loss of a confident right cell far below
 * its BCE (the point of it). */
static void check_extremes(hone_kctx *k)
{
    int n = 1, classes = 1, hw = 4;
    float pred[20] = {40.f, -40.f, 4.f, -4.f}, tg[24] = {1.f, 0.f, 1.f, 1.f};
    for (int mode = HONE_KCOV_BCE; mode <= HONE_KCOV_FOCAL; mode++) {
        float z = 0.f, *dp = tk_dev(k, pred, 20), *dt = tk_dev(k, tg, 24);
        float *dd = tk_poisoned(k, 20), *acc = tk_dev(k, &z, 1);
        TK_OK(hone_k_detect_loss(k, dp, dt, n, classes, hw, 1.f, 1.f, 0.f, mode, 2.f, dd, acc));
        float *g = tk_get(k, dd, 20), *l = tk_get(k, acc, 1);
        double rd[20], rl;
        ref_detect_loss(pred, tg, n, classes, hw, 1, 1, 0, mode, 2, rd, &rl);
        TK_EXPECT(isfinite(l[0]) && fabs(l[0] - rl) <= 1e-5 * rl + 1e-6);
        for (int i = 0; i < 4; i++)
            TK_EXPECT(isfinite(g[i]) && fabs(g[i] - rd[i]) <= 1e-5 * fabs(rd[i]) + 1e-7);
        free(g), free(l);
        hone_k_free(k, dp), hone_k_free(k, dt), hone_k_free(k, dd), hone_k_free(k, acc);
    }
    double bce, focal;
    ref_detect_loss(pred + 2, tg + 2, 1, 1, 1, 1, 1, 0, HONE_KCOV_BCE, 2, NULL, &bce);
    ref_detect_loss(pred + 2, tg + 2, 1, 1, 1, 1, 1, 0, HONE_KCOV_FOCAL, 2, NULL, &focal);
    TK_EXPECT(focal < 1e-3 * bce);
}

/* Two classes, two cells, logits 0 (BCE log 2 a term): cell 0 holds an object of class 0, cell 1
 * nothing. Class 1's term at cell 0 is a wrong class on an object and keeps the full weight;
 * only cell 1's two terms take bg = 0.1: 2 + 2 * 0.1 = 2.2 terms of log 2 (the rule before stop 14
 * damped class 1 at cell 0 too: 1.3). */
static void check_covered_weight(hone_kctx *k)
{
    float pred[20] = {0}, tg[24] = {0}, z = 0.f;
    tg[0] = 1.f; /* class 0, cell 0 */
    float *dp = tk_dev(k, pred, 20), *dt = tk_dev(k, tg, 24), *acc = tk_dev(k, &z, 1);
    float *dd = tk_poisoned(k, 20);
    TK_OK(hone_k_detect_loss(k, dp, dt, 1, 2, 2, 1.f, 0.1f, 0.f, HONE_KCOV_BCE, 0.f, dd, acc));
    float *l = tk_get(k, acc, 1), *g = tk_get(k, dd, 20);
    double want = 2.2 * log(2.0);
    TK_EXPECT(fabs(l[0] - want) <= 1e-5 * want);
    /* gradients s - t times m: class 0 cell 0 -0.5, class 1 cell 0 +0.5, background 0.05 */
    TK_EXPECT(fabsf(g[0] + 0.5f) < 1e-6f && fabsf(g[2] - 0.5f) < 1e-6f);
    TK_EXPECT(fabsf(g[1] - 0.05f) < 1e-6f && fabsf(g[3] - 0.05f) < 1e-6f);
    if (fabs(l[0] - want) > 1e-5 * want)
        fprintf(stderr, "detect_loss covered weight: loss %g want %g\n", l[0], want);
    double rl;
    ref_detect_loss(pred, tg, 1, 2, 2, 1, 0.1, 0, HONE_KCOV_BCE, 0, NULL, &rl);
    TK_EXPECT(fabs(rl - want) <= 1e-12);
    free(l), free(g);
    hone_k_free(k, dp), hone_k_free(k, dt), hone_k_free(k, dd), hone_k_free(k, acc);
}

int main(int argc, char **argv)
{
    hone_kctx *k = tk_ctx(argc, argv);
    static const float gammas[3] = {0.f, 0.f, 2.f};
    for (int mode = HONE_KCOV_L2; mode <= HONE_KCOV_FOCAL; mode++) {
        float g = gammas[mode];
        check_reference_gradient(mode, g);
        check_loss(k, 1, 1, 1, 1.0f, 1.0f, 10.0f, mode, g);
        check_loss(k, 3, 10, 64, 1.0f, 0.1f, 10.0f, mode, g); /* 128 px at stride 16, 10 classes */
        check_loss(k, 5, 4, 81, 0.5f, 1.0f, 2.0f, mode, g);
        check_loss(k, 4, 2, 50, 2.0f, 0.0f, 1.0f, mode, g);
        check_loss(k, 2, 3, 300, 0.0f, 0.5f, 1.0f, mode, g);
    }
    check_reference_gradient(HONE_KCOV_FOCAL, 0.5);
    check_loss(k, 3, 10, 64, 1.0f, 0.1f, 10.0f, HONE_KCOV_FOCAL, 0.5f);
    check_extremes(k);
    check_covered_weight(k);
    float z = 0.f, *acc = tk_dev(k, &z, 1);
    TK_EXPECT(hone_k_detect_loss(k, acc, acc, 0, 1, 1, 1, 1, 1, 0, 0, NULL, acc) == HONE_EINVAL);
    TK_EXPECT(hone_k_detect_loss(k, acc, acc, 1, 1, 1, 1, 1, 1, 3, 0, NULL, acc) == HONE_EINVAL);
    hone_k_free(k, acc);
    return tk_finish(k, "test_kernels_detect");
}
