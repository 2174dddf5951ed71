/* tests/gpu/test_gpu_ops.c: every CUDA op against the double-precision references of
 * tests/kernels/ref.c (or the CPU backend, for permutation at full size), on fresh random inputs
 * each run (seed printed), outputs poisoned with NaN first. GEMM and conv run in fp32, TF32 and
 * bf16 modes with their own tolerances; conv also at ResNet shapes and first run inside a graph
 * capture (the cuDNN path when the build has it: the path is printed). Exits 77 (skipped) when no
 * GPU is visible. */
#include <math.h>
#include <time.h>
#include <unistd.h>

#include "tk.h"

static uint64_t g_seed;
static uint64_t next_seed(void)
{
    return g_seed += 0x9E3779B97F4A7C15ULL;
}

static float *rnd(size_t n, float lo, float hi)
{
    float *x = malloc(sizeof(float) * (n ? n : 1));
    ref_fill_uniform(x, n, next_seed(), lo, hi);
    return x;
}

static const double MATH_TOL[3] = {1e-5, 1.5e-3, 1.5e-2}; /* fp32, tf32, bf16 */
static const char *MATH_NAME[3] = {"fp32", "tf32", "bf16"};

static void check_gemm(hone_kctx *k, hone_math m, int ta, int tb, int M, int N, int K, float beta)
{
    int lda = ta ? M : K, ldb = tb ? K : N, ldc = N;
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    float *A = rnd(na, -1, 1), *B = rnd(nb, -1, 1), *C = rnd(nc, -1, 1);
    double *ref = malloc(sizeof(double) * nc);
    ref_gemm(ta, tb, M, N, K, 0.7, A, lda, B, ldb, beta, C, ldc, ref);
    float *dA = tk_dev(k, A, na), *dB = tk_dev(k, B, nb);
    float *dC = beta == 0.f ? tk_poisoned(k, nc) : tk_dev(k, C, nc);
    hone_k_set_math(k, m);
    TK_OK(hone_k_gemm(k, ta, tb, M, N, K, 0.7f, dA, lda, dB, ldb, beta, dC, ldc));
    hone_k_set_math(k, HONE_MATH_FP32);
    float *out = tk_get(k, dC, nc);
    char name[96];
    snprintf(name, sizeof(name), "gemm %s ta=%d tb=%d %dx%dx%d", MATH_NAME[m], ta, tb, M, N, K);
    TK_CLOSE(name, out, ref, nc, MATH_TOL[m] * (m ? 1 : 10));
    hone_k_free(k, dA);
    hone_k_free(k, dB);
    hone_k_free(k, dC);
    free(A), free(B), free(C), free(ref), free(out);
}

static void check_conv(hone_kctx *k, hone_math m, int n, int c, int h, int w, int kk, int r,
                       int stride, int pad, int with_dx)
{
    hone_conv_desc d;
    TK_OK(hone_conv_desc_init(&d, n, c, h, w, kk, r, r, stride, pad));
    size_t nx = (size_t)n * c * h * w, nw = (size_t)kk * c * r * r, ny = (size_t)n * kk * d.p * d.q;
    float *x = rnd(nx, -1, 1), *wt = rnd(nw, -0.5f, 0.5f), *b = rnd(kk, -1, 1);
    float *dy = rnd(ny, -1, 1);
    double *ry = malloc(sizeof(double) * ny), *rdx = malloc(sizeof(double) * nx);
    double *rdw = malloc(sizeof(double) * nw), *rdb = malloc(sizeof(double) * kk);
    ref_conv_fwd(&d, x, wt, b, ry);
    ref_conv_bwd(&d, x, wt, dy, rdx, rdw, rdb);
    float *gx = tk_dev(k, x, nx), *gw = tk_dev(k, wt, nw), *gb = tk_dev(k, b, kk);
    float *gdy = tk_dev(k, dy, ny), *gy = tk_poisoned(k, ny), *gdx = tk_poisoned(k, nx);
    float *gdw = tk_poisoned(k, nw), *gdb = tk_poisoned(k, kk);
    size_t wsb = hone_k_conv_workspace(k, &d);
    void *ws = wsb ? hone_k_alloc(k, wsb) : NULL;
    hone_k_set_math(k, m);
    TK_OK(hone_k_conv_fwd(k, &d, gx, gw, gb, gy, ws));
    TK_OK(hone_k_conv_bwd(k, &d, gx, gw, gdy, with_dx ? gdx : NULL, gdw, gdb, ws));
    hone_k_set_math(k, HONE_MATH_FP32);
    char name[128];
    double tol = m ? MATH_TOL[m] : 1e-4;
    float *o;
#define CONV_CHECK(what, dev, refv, cnt)                                                           \
    snprintf(name, sizeof(name), "conv %s %s n%d c%d %dx%d k%d r%d s%d p%d", what, MATH_NAME[m],   \
             n, c, h, w, kk, r, stride, pad);                                                      \
    TK_CLOSE(name, o = tk_get(k, dev, cnt), refv, cnt, tol);                                       \
    free(o)
    CONV_CHECK("y", gy, ry, ny);
    if (with_dx) {
        CONV_CHECK("dx", gdx, rdx, nx);
    }
    CONV_CHECK("dw", gdw, rdw, nw);
    CONV_CHECK("db", gdb, rdb, (size_t)kk);
    if (with_dx) { /* bwd_acc adds to dx: start from x itself, expect x + dx */
        double *racc = malloc(sizeof(double) * nx);
        for (size_t i = 0; i < nx; i++)
            racc[i] = x[i] + rdx[i];
        TK_OK(hone_k_upload(k, gdx, x, sizeof(float) * nx));
        hone_k_set_math(k, m);
        TK_OK(hone_k_conv_bwd_acc(k, &d, gx, gw, gdy, gdx, gdw, NULL, ws, 0));
        hone_k_set_math(k, HONE_MATH_FP32);
        CONV_CHECK("dx (acc)", gdx, racc, nx);
        CONV_CHECK("dw (acc)", gdw, rdw, nw);
        free(racc);
    }
    hone_k_free(k, ws);
    float *bufs[] = {gx, gw, gb, gdy, gy, gdx, gdw, gdb};
    for (size_t i = 0; i < HONE_ARRAY_LEN(bufs); i++)
        hone_k_free(k, bufs[i]);
    free(x), free(wt), free(b), free(dy), free(ry), free(rdx), free(rdw), free(rdb);
}

/* A convolution whose shape this context has not seen before, first run inside a graph capture
 * (as hone-train captures its step before running it): the cuDNN path must choose algorithms and
 * enqueue without allocating or synchronising. fwd then bwd_acc onto dx = 1, replayed once. */
typedef struct {
    hone_kctx *k;
    const hone_conv_desc *d;
    float *x, *w, *b, *y, *dy, *dx, *dw, *db;
    void *ws;
    int rc;
} conv_graph_arg;

static void conv_graph_step(void *arg)
{
    conv_graph_arg *a = arg;
    a->rc |= hone_k_conv_fwd(a->k, a->d, a->x, a->w, a->b, a->y, a->ws);
    a->rc |= hone_k_conv_bwd_acc(a->k, a->d, a->x, a->w, a->dy, a->dx, a->dw, a->db, a->ws, 1);
}

static void check_conv_graph(hone_kctx *k, int n, int c, int h, int w, int kk, int r, int stride,
                             int pad)
{
    hone_conv_desc d;
    TK_OK(hone_conv_desc_init(&d, n, c, h, w, kk, r, r, stride, pad));
    size_t nx = (size_t)n * c * h * w, nw = (size_t)kk * c * r * r, ny = (size_t)n * kk * d.p * d.q;
    float *x = rnd(nx, -1, 1), *wt = rnd(nw, -0.5f, 0.5f), *b = rnd(kk, -1, 1);
    float *dy = rnd(ny, -1, 1), *o;
    double *ry = malloc(sizeof(double) * ny), *rdx = malloc(sizeof(double) * nx);
    double *rdw = malloc(sizeof(double) * nw), *rdb = malloc(sizeof(double) * kk);
    ref_conv_fwd(&d, x, wt, b, ry);
    ref_conv_bwd(&d, x, wt, dy, rdx, rdw, rdb);
    for (size_t i = 0; i < nx; i++)
        rdx[i] += 1.0;
    conv_graph_arg a = {k,
                        &d,
                        tk_dev(k, x, nx),
                        tk_dev(k, wt, nw),
                        tk_dev(k, b, kk),
                        tk_poisoned(k, ny),
                        tk_dev(k, dy, ny),
                        tk_poisoned(k, nx),
                        tk_poisoned(k, nw),
                        tk_poisoned(k, kk),
                        NULL,
                        0};
    TK_OK(hone_k_fill(k, a.dx, 1.0f, nx));
    size_t wsb = hone_k_conv_workspace(k, &d); /* as net_new does, before capture */
    a.ws = wsb ? hone_k_alloc(k, wsb) : NULL;
    hone_kgraph *g = NULL;
    TK_OK(hone_kgraph_capture(k, conv_graph_step, &a, &g));
    TK_EXPECT(a.rc == 0);
    if (g) {
        TK_OK(hone_kgraph_launch(k, g));
        TK_CLOSE("conv graph y", o = tk_get(k, a.y, ny), ry, ny, 1e-4);
        free(o);
        TK_CLOSE("conv graph dx (acc)", o = tk_get(k, a.dx, nx), rdx, nx, 1e-4);
        free(o);
        TK_CLOSE("conv graph dw", o = tk_get(k, a.dw, nw), rdw, nw, 1e-4);
        free(o);
        TK_CLOSE("conv graph db", o = tk_get(k, a.db, kk), rdb, kk, 1e-4);
        free(o);
        hone_kgraph_free(g);
    }
    float *bufs[] = {a.x, a.w, a.b, a.y, a.dy, a.dx, a.dw, a.db};
    for (size_t i = 0; i < HONE_ARRAY_LEN(bufs); i++)
        hone_k_free(k, bufs[i]);
    hone_k_free(k, a.ws);
    free(x), free(wt), free(b), free(dy), free(ry), free(rdx), free(rdw), free(rdb);
}

static void check_pool(hone_kctx *k, int n, int c, int h, int w, int size, int stride)
{
    int p = (h - size) / stride + 1, q = (w - size) / stride + 1;
    size_t nx = (size_t)n * c * h * w, ny = (size_t)n * c * p * q;
    float *x = rnd(nx, -2, 2), *dy = rnd(ny, -1, 1), *o;
    double *ry = malloc(sizeof(double) * ny), *rdx = malloc(sizeof(double) * nx);
    ref_maxpool_fwd(n, c, h, w, size, stride, x, ry);
    ref_maxpool_bwd(n, c, h, w, size, stride, x, dy, rdx);
    float *gx = tk_dev(k, x, nx), *gy = tk_poisoned(k, ny), *gdy = tk_dev(k, dy, ny);
    float *gdx = tk_poisoned(k, nx);
    int32_t *idx = hone_k_alloc(k, sizeof(int32_t) * ny);
    TK_OK(hone_k_maxpool_fwd(k, n, c, h, w, size, stride, gx, gy, idx));
    TK_OK(hone_k_maxpool_bwd(k, n, c, h, w, size, stride, gdy, idx, gdx));
    TK_CLOSE("maxpool_fwd", o = tk_get(k, gy, ny), ry, ny, 1e-6);
    free(o);
    TK_CLOSE("maxpool_bwd", o = tk_get(k, gdx, nx), rdx, nx, 1e-6);
    free(o);
    /* global average pool and nearest upsampling by 2, with hand-written backward refs */
    double *ra = malloc(sizeof(double) * (size_t)n * c), *rad = malloc(sizeof(double) * nx);
    float *ga = tk_poisoned(k, (size_t)n * c), *gad = tk_poisoned(k, nx);
    ref_avgpool_global_fwd(n, c, h, w, x, ra);
    float *dya = rnd((size_t)n * c, -1, 1), *gdyc = tk_dev(k, dya, (size_t)n * c);
    for (size_t i = 0; i < nx; i++)
        rad[i] = dya[i / ((size_t)h * w)] / ((double)h * w);
    TK_OK(hone_k_avgpool_global_fwd(k, n, c, h, w, gx, ga));
    TK_CLOSE("avgpool_fwd", o = tk_get(k, ga, (size_t)n * c), ra, (size_t)n * c, 1e-5);
    free(o);
    TK_OK(hone_k_avgpool_global_bwd(k, n, c, h, w, gdyc, gad));
    TK_CLOSE("avgpool_bwd", o = tk_get(k, gad, nx), rad, nx, 1e-5);
    free(o);
    free(dya);
    size_t nu = nx * 4;
    double *ru = malloc(sizeof(double) * nu), *rub = malloc(sizeof(double) * nx);
    float *du = rnd(nu, -1, 1), *gu = tk_poisoned(k, nu), *gdu = tk_dev(k, du, nu);
    float *gub = tk_poisoned(k, nx);
    ref_upsample_fwd(n, c, h, w, 2, x, ru);
    for (size_t i = 0; i < nx; i++) {
        size_t pl = i / ((size_t)h * w);
        int yy = (int)((i / w) % h), xx = (int)(i % w);
        double s = 0;
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++)
                s += du[pl * 4 * h * w + (size_t)(2 * yy + a) * 2 * w + 2 * xx + b];
        rub[i] = s;
    }
    TK_OK(hone_k_upsample_fwd(k, n, c, h, w, 2, gx, gu));
    TK_OK(hone_k_upsample_bwd(k, n, c, h, w, 2, gdu, gub));
    TK_CLOSE("upsample_fwd", o = tk_get(k, gu, nu), ru, nu, 1e-6);
    free(o);
    TK_CLOSE("upsample_bwd", o = tk_get(k, gub, nx), rub, nx, 1e-6);
    free(o);
    float *bufs[] = {gx, gy, gdy, gdx, ga, gad, gdyc, gu, gdu, gub};
    for (size_t i = 0; i < HONE_ARRAY_LEN(bufs); i++)
        hone_k_free(k, bufs[i]);
    hone_k_free(k, idx);
    free(x), free(dy), free(ry), free(rdx), free(ra), free(rad), free(ru), free(rub), free(du);
}

static void check_elementwise(hone_kctx *k, size_t n)
{
    float *x = rnd(n, -3, 3), *g = rnd(n, -1, 1), *o;
    double *ref = malloc(sizeof(double) * n);
    float *gx = tk_dev(k, x, n), *gg = tk_dev(k, g, n), *gy = tk_poisoned(k, n);
    float *gz = tk_poisoned(k, n);
    TK_OK(hone_k_sigmoid_fwd(k, gx, gy, n));
    for (size_t i = 0; i < n; i++)
        ref[i] = 1.0 / (1.0 + exp(-(double)x[i]));
    TK_CLOSE("sigmoid_fwd", o = tk_get(k, gy, n), ref, n, 1e-6);
    for (size_t i = 0; i < n; i++)
        ref[i] = g[i] * (double)o[i] * (1.0 - (double)o[i]);
    free(o);
    TK_OK(hone_k_sigmoid_bwd(k, gy, gg, gz, n));
    TK_CLOSE("sigmoid_bwd", o = tk_get(k, gz, n), ref, n, 1e-6);
    free(o);
    TK_OK(hone_k_relu_fwd(k, gx, gy, n));
    TK_OK(hone_k_relu_bwd(k, gy, gg, gz, n));
    for (size_t i = 0; i < n; i++)
        ref[i] = x[i] > 0 ? g[i] : 0;
    TK_CLOSE("relu_fwd+bwd", o = tk_get(k, gz, n), ref, n, 1e-7);
    free(o);
    TK_OK(hone_k_copy(k, gz, gg, sizeof(float) * n));
    TK_OK(hone_k_axpy(k, -0.5f, gx, gz, n));
    TK_OK(hone_k_scale(k, gz, 3.0f, n));
    for (size_t i = 0; i < n; i++)
        ref[i] = 3.0 * (g[i] - 0.5 * x[i]);
    TK_CLOSE("copy+axpy+scale", o = tk_get(k, gz, n), ref, n, 1e-6);
    free(o);
    float *gs = tk_poisoned(k, 1);
    TK_OK(hone_k_sum(k, gx, n, gs));
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    o = tk_get(k, gs, 1);
    TK_EXPECT(fabs(o[0] - s) <= 1e-4 * (fabs(s) + sqrt((double)n)));
    free(o);
    /* dropout: masks must equal the reference bit for bit; the counter advances by one */
    uint64_t seed = next_seed(), ctr = next_seed() >> 40;
    uint64_t *gctr = tk_dev_bytes(k, &ctr, sizeof(ctr));
    uint8_t *mask = hone_k_alloc(k, n), *rmask = malloc(n), *hmask = malloc(n);
    TK_OK(hone_k_dropout_fwd(k, gx, gy, mask, n, 0.3f, seed, gctr));
    ref_dropout_fwd(x, n, 0.3f, seed, ctr, ref, rmask);
    TK_CLOSE("dropout_fwd", o = tk_get(k, gy, n), ref, n, 1e-7);
    free(o);
    TK_OK(hone_k_download(k, hmask, mask, n));
    TK_EXPECT(memcmp(hmask, rmask, n) == 0);
    uint64_t after = 0;
    TK_OK(hone_k_download(k, &after, gctr, sizeof(after)));
    TK_EXPECT(after == ctr + 1);
    TK_OK(hone_k_dropout_bwd(k, gg, mask, gz, n, 0.3f));
    for (size_t i = 0; i < n; i++)
        ref[i] = rmask[i] ? (double)(g[i] * (1.0f / 0.7f)) : 0.0;
    TK_CLOSE("dropout_bwd", o = tk_get(k, gz, n), ref, n, 1e-7);
    free(o);
    hone_k_free(k, gctr), hone_k_free(k, mask), hone_k_free(k, gs);
    hone_k_free(k, gx), hone_k_free(k, gg), hone_k_free(k, gy), hone_k_free(k, gz);
    free(x), free(g), free(ref), free(rmask), free(hmask);
}

static void check_dense_misc(hone_kctx *k, int n, int c)
{
    size_t nn = (size_t)n * c;
    float *y = rnd(nn, -1, 1), *b = rnd(c, -1, 1), *db0 = rnd(c, -1, 1), *o;
    double *ref = malloc(sizeof(double) * nn);
    float *gy = tk_dev(k, y, nn), *gb = tk_dev(k, b, c), *gdb = tk_dev(k, db0, c);
    TK_OK(hone_k_bias_add(k, gy, gb, n, c));
    for (size_t i = 0; i < nn; i++)
        ref[i] = (double)y[i] + b[i % c];
    TK_CLOSE("bias_add", o = tk_get(k, gy, nn), ref, nn, 1e-7);
    free(o);
    TK_OK(hone_k_bias_grad(k, gdb, gy, n, c, 1));
    for (int j = 0; j < c; j++) {
        double s = db0[j];
        for (int i = 0; i < n; i++)
            s += (double)y[(size_t)i * c + j] + b[j];
        ref[j] = s;
    }
    TK_CLOSE("bias_grad accumulate", o = tk_get(k, gdb, c), ref, c, 1e-5);
    free(o);
    hone_k_free(k, gy), hone_k_free(k, gb), hone_k_free(k, gdb);
    free(y), free(b), free(db0), free(ref);
}

static void check_batchnorm(hone_kctx *k, int n, int c, int hw)
{
    size_t nx = (size_t)n * c * hw;
    float *x = rnd(nx, -2, 3), *dy = rnd(nx, -1, 1), *gamma = rnd(c, 0.5f, 1.5f);
    float *beta = rnd(c, -1, 1), *rm0 = rnd(c, -1, 1), *rv0 = rnd(c, 0.5f, 2), *o;
    double *ry = malloc(sizeof(double) * nx), *rdx = malloc(sizeof(double) * nx);
    double *mean = malloc(sizeof(double) * c), *var = malloc(sizeof(double) * c);
    double *rdg = malloc(sizeof(double) * c), *rdb = malloc(sizeof(double) * c);
    double *rrm = malloc(sizeof(double) * c), *rrv = malloc(sizeof(double) * c);
    const double eps = 1e-5, mom = 0.1, m = (double)n * hw;
    ref_batchnorm_fwd(n, c, hw, x, gamma, beta, eps, ry, mean, var);
    ref_batchnorm_bwd(n, c, hw, x, dy, gamma, eps, rdx, rdg, rdb);
    for (int j = 0; j < c; j++) {
        rrm[j] = (1 - mom) * rm0[j] + mom * mean[j];
        rrv[j] = (1 - mom) * rv0[j] + mom * var[j] * m / (m - 1);
    }
    float *gx = tk_dev(k, x, nx), *gdy = tk_dev(k, dy, nx), *gg = tk_dev(k, gamma, c);
    float *gb = tk_dev(k, beta, c), *grm = tk_dev(k, rm0, c), *grv = tk_dev(k, rv0, c);
    float *gy = tk_poisoned(k, nx), *gdx = tk_poisoned(k, nx), *gsm = tk_poisoned(k, c);
    float *gsi = tk_poisoned(k, c), *gdg = tk_poisoned(k, c), *gdb = tk_poisoned(k, c);
    TK_OK(hone_k_batchnorm_fwd(k, n, c, hw, gx, gg, gb, grm, grv, (float)mom, (float)eps, 1, gsm,
                               gsi, gy));
    TK_OK(hone_k_batchnorm_bwd(k, n, c, hw, gx, gdy, gg, gsm, gsi, gdx, gdg, gdb));
    TK_CLOSE("bn y", o = tk_get(k, gy, nx), ry, nx, 1e-5);
    free(o);
    TK_CLOSE("bn save_mean", o = tk_get(k, gsm, c), mean, c, 1e-5);
    free(o);
    TK_CLOSE("bn running_mean", o = tk_get(k, grm, c), rrm, c, 1e-5);
    free(o);
    TK_CLOSE("bn running_var", o = tk_get(k, grv, c), rrv, c, 1e-5);
    free(o);
    TK_CLOSE("bn dx", o = tk_get(k, gdx, nx), rdx, nx, 1e-4);
    free(o);
    TK_CLOSE("bn dgamma", o = tk_get(k, gdg, c), rdg, c, 1e-4);
    free(o);
    TK_CLOSE("bn dbeta", o = tk_get(k, gdb, c), rdb, c, 1e-5);
    free(o);
    { /* fused with a ReLU (the mask from the op's own y: see test_kernels_pool_norm.c) */
        double *ryr = malloc(sizeof(double) * nx), *rdxr = malloc(sizeof(double) * nx);
        double *rgr = malloc(sizeof(double) * c), *rbr = malloc(sizeof(double) * c);
        float *gym = malloc(sizeof(float) * nx), *grm2 = tk_dev(k, rm0, c),
              *grv2 = tk_dev(k, rv0, c);
        for (size_t i = 0; i < nx; i++)
            ryr[i] = ry[i] > 0 ? ry[i] : 0;
        TK_OK(hone_k_batchnorm_relu_fwd(k, n, c, hw, gx, gg, gb, grm2, grv2, (float)mom, (float)eps,
                                        1, gsm, gsi, gy));
        TK_CLOSE("bn_relu y", o = tk_get(k, gy, nx), ryr, nx, 1e-5);
        for (size_t i = 0; i < nx; i++)
            gym[i] = o[i] > 0.0f ? dy[i] : 0.0f;
        free(o);
        ref_batchnorm_bwd(n, c, hw, x, gym, gamma, eps, rdxr, rgr, rbr);
        TK_OK(hone_k_batchnorm_relu_bwd(k, n, c, hw, gx, gy, gdy, gg, gsm, gsi, gdx, gdg, gdb));
        TK_CLOSE("bn_relu dx", o = tk_get(k, gdx, nx), rdxr, nx, 1e-4);
        free(o);
        TK_CLOSE("bn_relu dgamma", o = tk_get(k, gdg, c), rgr, c, 1e-4);
        free(o);
        TK_CLOSE("bn_relu dbeta", o = tk_get(k, gdb, c), rbr, c, 1e-5);
        free(o);
        hone_k_free(k, grm2), hone_k_free(k, grv2);
        free(ryr), free(rdxr), free(rgr), free(rbr), free(gym);
    }
    { /* the chunked reductions fold in a fixed order: a second backward is bit for bit the same */
        TK_OK(hone_k_batchnorm_bwd(k, n, c, hw, gx, gdy, gg, gsm, gsi, gdx, gdg, gdb));
        float *dx1 = tk_get(k, gdx, nx), *dg1 = tk_get(k, gdg, c), *dx2, *dg2;
        TK_OK(hone_k_batchnorm_bwd(k, n, c, hw, gx, gdy, gg, gsm, gsi, gdx, gdg, gdb));
        dx2 = tk_get(k, gdx, nx), dg2 = tk_get(k, gdg, c);
        TK_EXPECT(memcmp(dx1, dx2, sizeof(float) * nx) == 0);
        TK_EXPECT(memcmp(dg1, dg2, sizeof(float) * c) == 0);
        free(dx1), free(dg1), free(dx2), free(dg2);
    }
    /* inference with the running statistics just updated */
    float *hrm = tk_get(k, grm, c), *hrv = tk_get(k, grv, c);
    for (size_t i = 0; i < nx; i++) {
        int ch = (int)((i / hw) % c);
        ry[i] = gamma[ch] * (x[i] - (double)hrm[ch]) / sqrt((double)hrv[ch] + eps) + beta[ch];
    }
    TK_OK(hone_k_batchnorm_fwd(k, n, c, hw, gx, gg, gb, grm, grv, (float)mom, (float)eps, 0, gsm,
                               gsi, gy));
    TK_CLOSE("bn inference", o = tk_get(k, gy, nx), ry, nx, 1e-5);
    free(o), free(hrm), free(hrv);
    float *bufs[] = {gx, gdy, gg, gb, grm, grv, gy, gdx, gsm, gsi, gdg, gdb};
    for (size_t i = 0; i < HONE_ARRAY_LEN(bufs); i++)
        hone_k_free(k, bufs[i]);
    free(x), free(dy), free(gamma), free(beta), free(rm0), free(rv0), free(ry), free(rdx);
    free(mean), free(var), free(rdg), free(rdb), free(rrm), free(rrv);
}

/* Softmax cross-entropy with label smoothing eps (0: one-hot) on CUDA against the double
 * reference (dlogits 1e-5, the loss 1e-4 relative, the correct count exactly), and against the CPU
 * backend (kernels/cpu/loss.c) on the same inputs: dlogits 1e-5, losses 1e-5 relative, counts
 * equal. eps > 0 must move both off the one-hot ones. */
static void check_xent(hone_kctx *k, hone_kctx *cpu, int n, int classes, float eps)
{
    size_t nz = (size_t)n * classes;
    float *z = rnd(nz, -4, 4);
    int32_t *lab = malloc(sizeof(int32_t) * n);
    float *u = rnd(n, 0, 1);
    for (int i = 0; i < n; i++)
        lab[i] = i % 17 == 5 ? -1 : (int32_t)(u[i] * classes) % classes;
    double *rdz = malloc(sizeof(double) * nz), rloss;
    int rcorrect;
    ref_softmax_xent(z, lab, n, classes, eps, rdz, &rloss, &rcorrect);
    char name[96];
    float acc0[2] = {1.5f, 2.0f}, *dz[2], *acc[2];
    hone_kctx *ks[2] = {k, cpu};
    for (int b = 0; b < 2; b++) {
        float *gz = tk_dev(ks[b], z, nz), *gdz = tk_poisoned(ks[b], nz);
        float *gacc = tk_dev(ks[b], acc0, 2);
        int32_t *glab = tk_dev_bytes(ks[b], lab, sizeof(int32_t) * n);
        TK_OK(hone_k_softmax_xent(ks[b], gz, glab, n, classes, eps, gdz, gacc, gacc + 1));
        TK_OK(hone_k_softmax_xent(ks[b], gz, glab, n, classes, eps, NULL, gacc, gacc + 1));
        dz[b] = tk_get(ks[b], gdz, nz);
        acc[b] = tk_get(ks[b], gacc, 2);
        hone_k_free(ks[b], gz), hone_k_free(ks[b], gdz), hone_k_free(ks[b], gacc);
        hone_k_free(ks[b], glab);
    }
    snprintf(name, sizeof name, "xent dlogits (eps %g)", eps);
    TK_CLOSE(name, dz[0], rdz, nz, 1e-5);
    double want_loss = 1.5 + 2 * rloss;
    TK_EXPECT(fabs(acc[0][0] - want_loss) <= 1e-4 * fabs(want_loss));
    TK_EXPECT(acc[0][1] == 2.0f + 2 * rcorrect);
    if (acc[0][1] != 2.0f + 2 * rcorrect || fabs(acc[0][0] - want_loss) > 1e-4 * fabs(want_loss))
        fprintf(stderr, "xent (eps %g) loss %g want %g, correct %g want %d\n", eps, acc[0][0],
                want_loss, acc[0][1], 2 + 2 * rcorrect);
    double *cpu_dz = malloc(sizeof(double) * nz);
    for (size_t i = 0; i < nz; i++)
        cpu_dz[i] = dz[1][i];
    snprintf(name, sizeof name, "xent dlogits (eps %g) cuda vs cpu", eps);
    TK_CLOSE(name, dz[0], cpu_dz, nz, 1e-5);
    TK_EXPECT(fabs(acc[0][0] - acc[1][0]) <= 1e-5 * fabs(acc[1][0]) && acc[0][1] == acc[1][1]);
    if (eps > 0) {
        double l0, *dz0 = malloc(sizeof(double) * nz);
        int c0;
        ref_softmax_xent(z, lab, n, classes, 0, dz0, &l0, &c0);
        TK_EXPECT(fabs(1.5 + 2 * l0 - acc[0][0]) > 1e-3 * fabs(want_loss));
        TK_EXPECT(ref_rel_err(dz[0], dz0, nz) > 1e-3);
        free(dz0);
    }
    free(cpu_dz), free(dz[0]), free(dz[1]), free(acc[0]), free(acc[1]);
    free(z), free(lab), free(u), free(rdz);
}

static void check_optim(hone_kctx *k, size_t n)
{
    float *w = rnd(n, -1, 1), *g = rnd(n, -1, 1), *v = rnd(n, -0.1f, 0.1f);
    float *m = rnd(n, -0.1f, 0.1f), *v2 = rnd(n, 0, 0.01f), *o;
    double *rw = malloc(sizeof(double) * n), *rv = malloc(sizeof(double) * n);
    double *rm = malloc(sizeof(double) * n);
    for (int nesterov = 0; nesterov < 2; nesterov++) {
        for (size_t i = 0; i < n; i++)
            rw[i] = w[i], rv[i] = v[i];
        ref_sgd_step(rw, g, rv, n, 0.05, 0.9, 5e-4, nesterov);
        float lr = 0.05f;
        float *gw = tk_dev(k, w, n), *gg = tk_dev(k, g, n), *gv = tk_dev(k, v, n);
        float *glr = tk_dev(k, &lr, 1);
        TK_OK(hone_k_sgd_step(k, gw, gg, gv, n, 99.f, glr, 0.9f, 5e-4f, nesterov));
        TK_CLOSE(nesterov ? "sgd nesterov w" : "sgd w", o = tk_get(k, gw, n), rw, n, 1e-6);
        free(o);
        TK_CLOSE("sgd v", o = tk_get(k, gv, n), rv, n, 1e-6);
        free(o);
        hone_k_free(k, gw), hone_k_free(k, gg), hone_k_free(k, gv), hone_k_free(k, glr);
    }
    for (size_t i = 0; i < n; i++)
        rw[i] = w[i], rv[i] = v2[i], rm[i] = m[i];
    ref_adamw_step(rw, g, rm, rv, n, 1e-3, 0.9, 0.999, 1e-8, 0.01, 7);
    int32_t t = 7;
    float *gw = tk_dev(k, w, n), *gg = tk_dev(k, g, n), *gm = tk_dev(k, m, n);
    float *gv = tk_dev(k, v2, n);
    int32_t *gt = tk_dev_bytes(k, &t, sizeof(t));
    TK_OK(hone_k_adamw_step(k, gw, gg, gm, gv, n, 1e-3f, NULL, 0.9f, 0.999f, 1e-8f, 0.01f, 1, gt));
    TK_CLOSE("adamw w", o = tk_get(k, gw, n), rw, n, 1e-6);
    free(o);
    TK_CLOSE("adamw m", o = tk_get(k, gm, n), rm, n, 1e-6);
    free(o);
    TK_CLOSE("adamw v", o = tk_get(k, gv, n), rv, n, 1e-5);
    free(o);
    hone_k_free(k, gw), hone_k_free(k, gg), hone_k_free(k, gm), hone_k_free(k, gv);
    hone_k_free(k, gt);
    free(w), free(g), free(v), free(m), free(v2), free(rw), free(rv), free(rm);
}

/* gather/counter/permutation, a captured graph replayed three times, and the uint8 image gather
 * with augmentation against the CPU backend. */
typedef struct {
    hone_kctx *k;
    const float *src;
    const int32_t *lab, *idx;
    int32_t *base;
    float *dst;
    int32_t *dlab;
    int n, row;
} gather_job;

static void gather_step(void *arg)
{
    gather_job *j = arg;
    hone_k_gather_rows(j->k, j->src, j->lab, j->idx, j->base, 0, j->n, j->row, j->dst, j->dlab);
    hone_k_relu_fwd(j->k, j->dst, j->dst, (size_t)j->n * j->row);
    hone_k_counter_add(j->k, j->base, j->n);
}

static void check_data(hone_kctx *k, hone_kctx *cpu)
{
    int rows = 5000, row = 784, n = 128;
    float *src = rnd((size_t)rows * row, -1, 1), *o;
    int32_t *lab = malloc(sizeof(int32_t) * rows), *idx = malloc(sizeof(int32_t) * rows);
    int32_t *ridx = malloc(sizeof(int32_t) * rows);
    for (int i = 0; i < rows; i++)
        lab[i] = i * 7 % 10;
    uint64_t seed = next_seed(), epoch = next_seed() >> 50;
    int32_t *gidx = hone_k_alloc(k, sizeof(int32_t) * rows);
    TK_OK(hone_k_permutation(k, gidx, rows, seed, epoch));
    TK_OK(hone_k_download(k, idx, gidx, sizeof(int32_t) * rows));
    ref_permutation(ridx, rows, seed, epoch);
    TK_EXPECT(memcmp(idx, ridx, sizeof(int32_t) * rows) == 0);
    /* full Fashion-MNIST size against the CPU backend's sort */
    int big = 60000;
    int32_t *bi = malloc(sizeof(int32_t) * big), *bc = malloc(sizeof(int32_t) * big);
    int32_t *gbi = hone_k_alloc(k, sizeof(int32_t) * big);
    TK_OK(hone_k_permutation(k, gbi, big, seed, epoch + 1));
    TK_OK(hone_k_download(k, bi, gbi, sizeof(int32_t) * big));
    TK_OK(hone_k_permutation(cpu, bc, big, seed, epoch + 1));
    TK_EXPECT(memcmp(bi, bc, sizeof(int32_t) * big) == 0);
    hone_k_free(k, gbi), free(bi), free(bc);

    gather_job j = {k, tk_dev(k, src, (size_t)rows * row), NULL, gidx, NULL, NULL, NULL, n, row};
    j.lab = tk_dev_bytes(k, lab, sizeof(int32_t) * rows);
    int32_t zero = 0, got_base = 0;
    j.base = tk_dev_bytes(k, &zero, sizeof(int32_t));
    j.dst = tk_poisoned(k, (size_t)n * row);
    j.dlab = hone_k_alloc(k, sizeof(int32_t) * n);
    hone_kgraph *g = NULL;
    TK_OK(hone_kgraph_capture(k, gather_step, &j, &g));
    double *ref = malloc(sizeof(double) * n * row);
    int32_t *hl = malloc(sizeof(int32_t) * n);
    for (int rep = 0; rep < 3 && g; rep++) {
        TK_OK(hone_kgraph_launch(k, g));
        for (int i = 0; i < n; i++)
            for (int c = 0; c < row; c++) {
                float v = src[(size_t)idx[rep * n + i] * row + c];
                ref[(size_t)i * row + c] = v > 0 ? v : 0;
            }
        TK_CLOSE("graph gather+relu", o = tk_get(k, j.dst, (size_t)n * row), ref, (size_t)n * row,
                 0);
        free(o);
        TK_OK(hone_k_download(k, hl, j.dlab, sizeof(int32_t) * n));
        for (int i = 0; i < n; i++)
            TK_EXPECT(hl[i] == lab[idx[rep * n + i]]);
    }
    TK_OK(hone_k_download(k, &got_base, j.base, sizeof(int32_t)));
    TK_EXPECT(got_base == 3 * n);
    hone_kgraph_free(g);

    /* uint8 images gathered, augmented (everything on) and normalised: CUDA against the CPU
     * backend, bit for bit, at CIFAR size (RGB 32x32, batch 256) and a larger grey size */
    int shapes[2][3] = {{3, 32, 32}, {1, 96, 80}};
    for (int s = 0; s < 2; s++) {
        int c = shapes[s][0], h = shapes[s][1], w = shapes[s][2], na = 256, nsrc = 1000;
        size_t row = (size_t)c * h * w, nx = (size_t)na * row;
        uint8_t *px = malloc((size_t)nsrc * row);
        float *xs = rnd((size_t)nsrc * row, 0, 256);
        for (size_t i = 0; i < (size_t)nsrc * row; i++)
            px[i] = (uint8_t)xs[i];
        float norm[6] = {0.45f, 0.5f, 0.55f, 4.1f, 3.9f, 4.3f}, nc[6];
        for (int ch = 0; ch < c; ch++)
            nc[ch] = norm[ch], nc[c + ch] = norm[3 + ch];
        int32_t *perm = malloc(sizeof(int32_t) * nsrc);
        TK_OK(hone_k_permutation(cpu, perm, nsrc, 3, 4));
        hone_kaugment a = {
            .flip = 1, .crop_padding = 4, .jitter = 0.4f, .cutout = 8, .seed = next_seed()};
        uint64_t ctr = next_seed() >> 40;
        float *outs[2];
        hone_kctx *ks[2] = {k, cpu};
        for (int b = 0; b < 2; b++) {
            hone_kctx *kk = ks[b];
            uint8_t *gpx = tk_dev_bytes(kk, px, (size_t)nsrc * row);
            int32_t *gperm = tk_dev_bytes(kk, perm, sizeof(int32_t) * nsrc);
            float *gn = tk_dev(kk, nc, 2 * (size_t)c), *gy = tk_poisoned(kk, nx);
            uint64_t *gctr = tk_dev_bytes(kk, &ctr, sizeof(ctr));
            TK_OK(hone_k_gather_images(kk, gpx, NULL, gperm, NULL, 100, na, c, h, w, gn, gn + c, &a,
                                       gctr, gy, NULL));
            outs[b] = tk_get(kk, gy, nx);
            uint64_t after = 0;
            TK_OK(hone_k_download(kk, &after, gctr, sizeof(after)));
            TK_EXPECT(after == ctr + 1);
            hone_k_free(kk, gpx), hone_k_free(kk, gperm), hone_k_free(kk, gn);
            hone_k_free(kk, gy), hone_k_free(kk, gctr);
        }
        size_t diff = 0;
        for (size_t i = 0; i < nx; i++)
            diff += outs[0][i] != outs[1][i];
        if (diff)
            fprintf(stderr, "gather_images %dx%dx%d: %zu of %zu values differ from the CPU\n", c, h,
                    w, diff, nx);
        TK_EXPECT(diff == 0);
        free(outs[0]), free(outs[1]), free(px), free(xs), free(perm);
    }
    hone_k_free(k, (void *)j.src), hone_k_free(k, (void *)j.lab), hone_k_free(k, j.base);
    hone_k_free(k, j.dst), hone_k_free(k, j.dlab), hone_k_free(k, gidx);
    free(src), free(lab), free(idx), free(ridx), free(ref), free(hl);
}

/* The fused ops on CUDA against the CPU backend on the same inputs: max pooling with ReLU (exact)
 * and conv_fwd + conv_bwd_reuse at the reference CNN's second-layer shape, in each math mode. */
static float *on(hone_kctx *k, const float *h, size_t n)
{
    return tk_dev(k, h, n);
}

static double *widen(hone_kctx *k, const float *dev, size_t n)
{
    float *h = tk_get(k, dev, n);
    double *d = malloc(sizeof(double) * (n ? n : 1));
    for (size_t i = 0; i < n; i++)
        d[i] = h[i];
    free(h);
    return d;
}

static void check_fused_vs_cpu(hone_kctx *k, hone_kctx *cpu, int n, int c, int h, int w)
{
    size_t nx = (size_t)n * c * h * w, ny = nx / 4;
    float *x = rnd(nx, -2, 0.5f), *gy = rnd(ny, -1, 1), *out;
    hone_kctx *ks[2] = {k, cpu};
    double *ref[3] = {0};
    float *dx[2], *dy[2], *dgy[2], *ddx[2];
    int32_t *idx[2];
    for (int b = 1; b >= 0; b--) { /* CPU first: its results are the reference */
        hone_kctx *kb = ks[b];
        dx[b] = on(kb, x, nx), dgy[b] = on(kb, gy, ny);
        dy[b] = tk_poisoned(kb, ny), ddx[b] = tk_poisoned(kb, nx);
        idx[b] = hone_k_alloc(kb, sizeof(int32_t) * ny);
        TK_OK(hone_k_maxpool_relu_fwd(kb, n, c, h, w, 2, 2, dx[b], dy[b], idx[b]));
        TK_OK(hone_k_maxpool_relu_bwd(kb, n, c, h, w, 2, 2, dy[b], dgy[b], idx[b], ddx[b]));
        if (b == 1) {
            ref[0] = widen(kb, dy[b], ny);
            ref[1] = widen(kb, ddx[b], nx);
        }
    }
    TK_CLOSE("maxpool_relu_fwd cuda vs cpu", out = tk_get(k, dy[0], ny), ref[0], ny, 0);
    free(out);
    TK_CLOSE("maxpool_relu_bwd cuda vs cpu", out = tk_get(k, ddx[0], nx), ref[1], nx, 0);
    free(out);
    for (int b = 0; b < 2; b++) {
        hone_k_free(ks[b], dx[b]), hone_k_free(ks[b], dy[b]), hone_k_free(ks[b], dgy[b]);
        hone_k_free(ks[b], ddx[b]), hone_k_free(ks[b], idx[b]);
    }
    free(ref[0]), free(ref[1]), free(x), free(gy);

    /* conv: [n, c, h/2, w/2] -> 2c channels, as the CNN's conv2 */
    hone_conv_desc d;
    TK_OK(hone_conv_desc_init(&d, n, c, h / 2, w / 2, 2 * c, 3, 3, 1, 1));
    size_t cx = (size_t)n * c * d.h * d.w, cw = (size_t)d.k * c * 9,
           cy = (size_t)n * d.k * d.p * d.q;
    float *hx = rnd(cx, -1, 1), *hw = rnd(cw, -0.2f, 0.2f), *hb = rnd(d.k, -1, 1);
    float *hg = rnd(cy, -1, 1);
    for (int m = 0; m < 3; m++) {
        float *bx[2], *bw[2], *bb[2], *bg[2], *by[2], *bdx[2], *bdw[2], *bdb[2];
        void *ws[2];
        double *r[4] = {0};
        for (int b = 1; b >= 0; b--) {
            hone_kctx *kb = ks[b];
            hone_k_set_math(kb, (hone_math)m);
            bx[b] = on(kb, hx, cx), bw[b] = on(kb, hw, cw), bb[b] = on(kb, hb, d.k);
            bg[b] = on(kb, hg, cy), by[b] = tk_poisoned(kb, cy);
            bdx[b] = tk_poisoned(kb, cx), bdw[b] = tk_poisoned(kb, cw);
            bdb[b] = tk_poisoned(kb, d.k);
            ws[b] = hone_k_alloc(kb, hone_k_conv_workspace(kb, &d));
            TK_OK(hone_k_conv_fwd(kb, &d, bx[b], bw[b], bb[b], by[b], ws[b]));
            TK_OK(
                hone_k_conv_bwd_reuse(kb, &d, bx[b], bw[b], bg[b], bdx[b], bdw[b], bdb[b], ws[b]));
            hone_k_set_math(kb, HONE_MATH_FP32);
            if (b == 1) {
                r[0] = widen(kb, by[b], cy), r[1] = widen(kb, bdx[b], cx);
                r[2] = widen(kb, bdw[b], cw), r[3] = widen(kb, bdb[b], d.k);
            }
        }
        char name[96];
        const char *what[4] = {"y", "dx", "dw", "db"};
        float *bufs[4] = {by[0], bdx[0], bdw[0], bdb[0]};
        size_t cnt[4] = {cy, cx, cw, (size_t)d.k};
        for (int i = 0; i < 4; i++) {
            snprintf(name, sizeof(name), "conv_bwd_reuse %s cuda vs cpu %s", what[i], MATH_NAME[m]);
            TK_CLOSE(name, out = tk_get(k, bufs[i], cnt[i]), r[i], cnt[i], m ? MATH_TOL[m] : 1e-4);
            free(out);
            free(r[i]);
        }
        for (int b = 0; b < 2; b++) {
            float *fb[] = {bx[b], bw[b], bb[b], bg[b], by[b], bdx[b], bdw[b], bdb[b]};
            for (int i = 0; i < 8; i++)
                hone_k_free(ks[b], fb[i]);
            hone_k_free(ks[b], ws[b]);
        }
    }
    free(hx), free(hw), free(hb), free(hg);
}

/* The ResNet ops on CUDA against the CPU backend on the same random inputs, at ResNet-18 shapes:
 * the join (add + ReLU, exact both ways), the stem's padded pool (exact), and the conv backward
 * that adds to dx for a stage's strided 3x3, the 1x1 projection and the 7x7 stem in each math
 * mode (bf16 and tf32 within their GEMM tolerances). */
/* The DetectNet_v2 head loss: CUDA against the CPU backend on the same head and targets (the
 * gradient elementwise to float rounding; the loss, summed in another order, to 1e-5). */
static void check_detect_vs_cpu(hone_kctx *k, hone_kctx *cpu, int n, int classes, int hw, int mode)
{
    size_t np = (size_t)n * 5 * classes * hw, nc = (size_t)classes * hw, nt = (size_t)n * 6 * nc;
    float *pred = rnd(np, -4, 4), *tg = rnd(nt, -3, 3), *u = rnd((size_t)n * nc, 0, 1);
    for (size_t i = 0; i < (size_t)n; i++) /* coverage 0/1, weights 0..0.25 where covered */
        for (size_t cq = 0; cq < nc; cq++) {
            float *t = tg + i * 6 * nc, on = u[i * nc + cq] < 0.2f ? 1.0f : 0.0f;
            t[cq] = on;
            t[5 * nc + cq] = on * fabsf(t[5 * nc + cq]) / 12.0f;
        }
    float *grad[2], loss[2];
    hone_kctx *ks[2] = {k, cpu};
    for (int b = 0; b < 2; b++) {
        float z = 0.f;
        float *dp = tk_dev(ks[b], pred, np), *dt = tk_dev(ks[b], tg, nt);
        float *dd = tk_poisoned(ks[b], np), *acc = tk_dev(ks[b], &z, 1), *l;
        TK_OK(hone_k_detect_loss(ks[b], dp, dt, n, classes, hw, 1.0f, 0.1f, 10.0f, mode, 2.0f, dd,
                                 acc));
        grad[b] = tk_get(ks[b], dd, np);
        loss[b] = *(l = tk_get(ks[b], acc, 1));
        free(l);
        hone_k_free(ks[b], dp), hone_k_free(ks[b], dt), hone_k_free(ks[b], dd);
        hone_k_free(ks[b], acc);
    }
    double *ref = malloc(sizeof(double) * np);
    for (size_t i = 0; i < np; i++)
        ref[i] = grad[1][i];
    TK_CLOSE("detect_loss dpred cuda vs cpu", grad[0], ref, np, 1e-6);
    TK_EXPECT(fabs(loss[0] - loss[1]) <= 1e-5 * fabs(loss[1]));
    if (fabs(loss[0] - loss[1]) > 1e-5 * fabs(loss[1]))
        fprintf(stderr, "detect_loss loss cuda %g cpu %g\n", loss[0], loss[1]);
    free(pred), free(tg), free(u), free(grad[0]), free(grad[1]), free(ref);
}

static void check_resnet_vs_cpu(hone_kctx *k, hone_kctx *cpu, int n)
{
    hone_kctx *ks[2] = {k, cpu};
    size_t ne = (size_t)n * 64 * 32 * 32;
    float *a = rnd(ne, -1, 1), *b = rnd(ne, -1, 1), *g = rnd(ne, -1, 1), *o;
    double *ref[3] = {0};
    for (int be = 1; be >= 0; be--) {
        hone_kctx *kb = ks[be];
        float *da = on(kb, a, ne), *db = on(kb, b, ne), *dg = on(kb, g, ne);
        float *y = tk_poisoned(kb, ne), *ga = tk_poisoned(kb, ne), *gb = tk_poisoned(kb, ne);
        TK_OK(hone_k_add_relu_fwd(kb, da, db, y, ne));
        TK_OK(hone_k_add_relu_bwd(kb, y, dg, ga, gb, ne));
        if (be == 1) {
            ref[0] = widen(kb, y, ne), ref[1] = widen(kb, ga, ne), ref[2] = widen(kb, gb, ne);
        } else {
            TK_CLOSE("add_relu_fwd cuda vs cpu", o = tk_get(kb, y, ne), ref[0], ne, 0);
            free(o);
            TK_CLOSE("add_relu_bwd da cuda vs cpu", o = tk_get(kb, ga, ne), ref[1], ne, 0);
            free(o);
            TK_CLOSE("add_relu_bwd db cuda vs cpu", o = tk_get(kb, gb, ne), ref[2], ne, 0);
            free(o);
        }
        float *bufs[] = {da, db, dg, y, ga, gb};
        for (int i = 0; i < 6; i++)
            hone_k_free(kb, bufs[i]);
    }
    for (int i = 0; i < 3; i++)
        free(ref[i]), ref[i] = NULL;

    /* the ImageNet stem's pool: [n, 16, 57, 57] -> 3x3 stride 2 pad 1 */
    int c = 16, h = 57, P = (h + 2 - 3) / 2 + 1;
    size_t nx = (size_t)n * c * h * h, ny = (size_t)n * c * P * P;
    float *px = rnd(nx, -2, 2), *pg = rnd(ny, -1, 1);
    for (int be = 1; be >= 0; be--) {
        hone_kctx *kb = ks[be];
        float *dx = on(kb, px, nx), *dg = on(kb, pg, ny), *y = tk_poisoned(kb, ny);
        float *gx = tk_poisoned(kb, nx);
        int32_t *idx = hone_k_alloc(kb, sizeof(int32_t) * ny);
        TK_OK(hone_k_maxpool_pad_fwd(kb, n, c, h, h, 3, 2, 1, dx, y, idx));
        TK_OK(hone_k_maxpool_pad_bwd(kb, n, c, h, h, 3, 2, 1, dg, idx, gx));
        if (be == 1) {
            ref[0] = widen(kb, y, ny), ref[1] = widen(kb, gx, nx);
        } else {
            TK_CLOSE("maxpool_pad_fwd cuda vs cpu", o = tk_get(kb, y, ny), ref[0], ny, 0);
            free(o);
            TK_CLOSE("maxpool_pad_bwd cuda vs cpu", o = tk_get(kb, gx, nx), ref[1], nx, 1e-6);
            free(o);
        }
        hone_k_free(kb, dx), hone_k_free(kb, dg), hone_k_free(kb, y), hone_k_free(kb, gx);
        hone_k_free(kb, idx);
    }
    free(ref[0]), free(ref[1]), free(px), free(pg), free(a), free(b), free(g);

    static const int shapes[3][7] = {
        {64, 32, 32, 128, 3, 2, 1}, /* stage 2's first conv */
        {64, 32, 32, 128, 1, 2, 0}, /* its projection */
        {3, 64, 64, 16, 7, 2, 3},   /* the ImageNet stem (narrow) */
    };
    for (int sh = 0; sh < 3; sh++) {
        const int *z = shapes[sh];
        hone_conv_desc d;
        TK_OK(hone_conv_desc_init(&d, n, z[0], z[1], z[2], z[3], z[4], z[4], z[5], z[6]));
        size_t cx = (size_t)n * d.c * d.h * d.w, cw = (size_t)d.k * d.c * d.r * d.s;
        size_t cy = (size_t)n * d.k * d.p * d.q;
        float *hx = rnd(cx, -1, 1), *hw = rnd(cw, -0.2f, 0.2f), *hg = rnd(cy, -1, 1);
        float *h0 = rnd(cx, -1, 1);
        for (int m = 0; m < 3; m++) {
            double *r[3] = {0};
            for (int be = 1; be >= 0; be--) {
                hone_kctx *kb = ks[be];
                hone_k_set_math(kb, (hone_math)m);
                float *bx = on(kb, hx, cx), *bw = on(kb, hw, cw), *bg = on(kb, hg, cy);
                float *bdx = on(kb, h0, cx), *bdw = tk_poisoned(kb, cw), *by = tk_poisoned(kb, cy);
                void *ws = hone_k_alloc(kb, hone_k_conv_workspace(kb, &d));
                TK_OK(hone_k_conv_fwd(kb, &d, bx, bw, NULL, by, ws));
                TK_OK(hone_k_conv_bwd_acc(kb, &d, bx, bw, bg, bdx, bdw, NULL, ws, 1));
                hone_k_set_math(kb, HONE_MATH_FP32);
                float *outs[3] = {by, bdx, bdw};
                size_t cnt[3] = {cy, cx, cw};
                for (int i = 0; i < 3; i++) {
                    if (be == 1) {
                        r[i] = widen(kb, outs[i], cnt[i]);
                        continue;
                    }
                    char name[128];
                    static const char *what[3] = {"y", "dx (acc)", "dw"};
                    snprintf(name, sizeof(name), "resnet conv %s r%d s%d %s cuda vs cpu", what[i],
                             d.r, d.stride, MATH_NAME[m]);
                    TK_CLOSE(name, o = tk_get(kb, outs[i], cnt[i]), r[i], cnt[i],
                             m ? MATH_TOL[m] : 1e-4);
                    free(o);
                    free(r[i]);
                }
                float *fb[] = {bx, bw, bg, bdx, bdw, by};
                for (int i = 0; i < 6; i++)
                    hone_k_free(kb, fb[i]);
                hone_k_free(kb, ws);
            }
        }
        free(hx), free(hw), free(hg), free(h0);
    }
}

int main(int argc, char **argv)
{
    (void)argc, (void)argv;
    char *fake[] = {argv[0], "cuda"};
    hone_kctx *k = tk_ctx(2, fake), *cpu = NULL;
    if (hone_kctx_new(HONE_DEV_CPU, 0, &cpu) != HONE_OK)
        return 1;
    g_seed = (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid();
    if (getenv("HONE_TEST_SEED"))
        g_seed = strtoull(getenv("HONE_TEST_SEED"), NULL, 0);
    fprintf(stderr, "test_gpu_ops: seed %llu (HONE_TEST_SEED to repeat)\n",
            (unsigned long long)g_seed);
    char dev[128] = "";
    size_t mem = 0;
    hone_cuda_device_name(0, dev, sizeof(dev), &mem);
    fprintf(stderr, "device: %s, %zu MiB; conv path: %s\n", dev, mem >> 20, hone_k_conv_impl(k));
    /* The UUID a worker registers (gpu_uuid): nvidia-smi's form, GPU-8-4-4-4-12 hex digits. */
    char uuid[64] = "";
    TK_OK(hone_cuda_device_uuid(0, uuid, sizeof(uuid)));
    fprintf(stderr, "device uuid: %s\n", uuid);
    TK_EXPECT(strlen(uuid) == 40 && !strncmp(uuid, "GPU-", 4));
    for (int i = 4; i < 40 && uuid[0]; i++)
        TK_EXPECT(i == 12 || i == 17 || i == 22 || i == 27
                      ? uuid[i] == '-'
                      : strchr("0123456789abcdef", uuid[i]) != NULL);
    TK_EXPECT(hone_cuda_device_uuid(0, uuid, 20) == HONE_EINVAL); /* too small: never cut */
    TK_EXPECT(hone_cuda_device_uuid(hone_cuda_device_count(), uuid, sizeof(uuid)) == HONE_ENOTSUP);

    for (int m = 0; m < 3; m++) {
        check_gemm(k, (hone_math)m, 0, 0, 128, 256, 784, 0.f);
        check_gemm(k, (hone_math)m, 1, 0, 784, 256, 128, 0.f);
        check_gemm(k, (hone_math)m, 0, 1, 128, 784, 256, 1.f);
        check_gemm(k, (hone_math)m, 1, 1, 37, 53, 71, 0.5f);
        check_conv(k, (hone_math)m, 16, 1, 28, 28, 32, 3, 1, 1, 0);
        check_conv(k, (hone_math)m, 16, 32, 14, 14, 64, 3, 1, 1, 1);
    }
    check_conv(k, HONE_MATH_FP32, 4, 3, 17, 19, 8, 3, 2, 1, 1);
    check_conv(k, HONE_MATH_FP32, 3, 16, 7, 9, 8, 1, 1, 0, 1);
    check_conv(k, HONE_MATH_FP32, 2, 5, 12, 12, 6, 5, 2, 2, 1);
    check_conv(k, HONE_MATH_FP32, 2, 4, 9, 9, 4, 4, 2, 1, 1);
    /* ResNet-like shapes (cuDNN's algorithms differ by shape): 1x1/3x3/7x7, stride 1/2, pad 0..3,
     * odd sizes, fp32 (tight) and tf32 */
    static const int conv_shapes[][8] = {
        /* n, c, h, w, k, r, stride, pad */
        {8, 64, 16, 16, 64, 3, 1, 1}, {8, 64, 16, 16, 128, 3, 2, 1}, {8, 64, 16, 16, 128, 1, 2, 0},
        {4, 3, 33, 31, 16, 7, 2, 3},  {4, 3, 32, 32, 64, 3, 1, 1},   {5, 17, 13, 11, 9, 3, 1, 0},
        {3, 24, 9, 15, 40, 1, 1, 0},  {2, 8, 15, 15, 12, 5, 2, 2},
    };
    for (size_t i = 0; i < HONE_ARRAY_LEN(conv_shapes); i++) {
        const int *z = conv_shapes[i];
        for (int m = 0; m < 2; m++)
            check_conv(k, (hone_math)m, z[0], z[1], z[2], z[3], z[4], z[5], z[6], z[7], 1);
    }
    check_conv_graph(k, 6, 19, 14, 12, 24, 3, 2, 1);
    check_pool(k, 8, 32, 28, 28, 2, 2);
    check_pool(k, 3, 5, 13, 11, 3, 2); /* overlapping windows, odd sizes */
    check_pool(k, 2, 3, 13, 11, 2, 2); /* disjoint windows that leave a border */
    check_elementwise(k, 100003);
    check_dense_misc(k, 128, 10);
    check_dense_misc(k, 37, 300);
    check_batchnorm(k, 16, 8, 49);
    check_batchnorm(k, 64, 3, 1);
    /* channels split into chunks over many blocks: ResNet-like, a short last chunk, hw 1 */
    check_batchnorm(k, 64, 64, 256);
    check_batchnorm(k, 37, 5, 999);
    check_batchnorm(k, 512, 128, 16);
    check_batchnorm(k, 20000, 3, 1);
    check_xent(k, cpu, 128, 10, 0);
    check_xent(k, cpu, 77, 100, 0);
    check_xent(k, cpu, 128, 10, 0.1f); /* label smoothing */
    check_xent(k, cpu, 77, 100, 0.2f);
    check_xent(k, cpu, 1000, 10, 0.5f);
    check_optim(k, 300007);
    check_data(k, cpu);
    check_fused_vs_cpu(k, cpu, 128, 32, 28, 28);
    check_fused_vs_cpu(k, cpu, 3, 8, 10, 14);
    check_resnet_vs_cpu(k, cpu, 8);
    for (int mode = HONE_KCOV_L2; mode <= HONE_KCOV_FOCAL; mode++) {
        check_detect_vs_cpu(k, cpu, 64, 10, 64, mode);
        check_detect_vs_cpu(k, cpu, 3, 2, 99, mode);
    }
    hone_kctx_free(cpu);
    return tk_finish(k, "test_gpu_ops");
}
