/* tests/kernels/test_kernels_batched.c: the packed-trial ops (hone_k_gemm_batched, the strided
 * bias add and gradient, hone_k_conv_fwd_batched / _bwd_batched) against the double references,
 * problem by problem, with trial strides that leave gaps (a trial's parameters as one slice of a
 * [trials][P] block, weights then bias). On the CPU each problem must also equal its single op
 * bit for bit (packed trials reproduce solo runs); on CUDA (argument "cuda") within 1e-5. */
#include <math.h>

#include "tk.h"

static int on_cpu;

/* out (n floats on the device) against the single ops' result solo (host): bit for bit on the
 * CPU, a relative error of 1e-5 on CUDA. */
static void same_as_solo(const char *name, hone_kctx *k, const float *out, const float *solo,
                         size_t n)
{
    float *h = tk_get(k, out, n);
    if (on_cpu) {
        if (memcmp(h, solo, sizeof(float) * n) != 0) {
            fprintf(stderr, "%s: differs from the single ops\n", name);
            tk_failures++;
        }
    } else {
        double *ref = malloc(sizeof(double) * (n ? n : 1));
        for (size_t i = 0; i < n; i++)
            ref[i] = solo[i];
        TK_CLOSE(name, h, ref, n, 1e-5);
        free(ref);
    }
    free(h);
}

static void check_gemm(hone_kctx *k, int ta, int tb, int M, int N, int K, int count, int gap)
{
    int lda = (ta ? M : K) + gap, ldb = (tb ? K : N) + gap, ldc = N + gap;
    size_t sa = (size_t)(ta ? K : M) * lda + 3, sb = (size_t)(tb ? N : K) * ldb + 1;
    size_t sc = (size_t)M * ldc + 2;
    size_t na = sa * count, nb = sb * count, nc = sc * count;
    float *A = malloc(sizeof(float) * na), *B = malloc(sizeof(float) * nb);
    float *C = malloc(sizeof(float) * nc);
    ref_fill_uniform(A, na, 41, -1, 1);
    ref_fill_uniform(B, nb, 42, -1, 1);
    ref_fill_uniform(C, nc, 43, -1, 1);
    float *dA = tk_dev(k, A, na), *dB = tk_dev(k, B, nb), *dC = tk_dev(k, C, nc);
    float *dS = tk_dev(k, C, nc);
    TK_OK(hone_k_gemm_batched(k, ta, tb, M, N, K, 0.7f, dA, lda, sa, dB, ldb, sb, 0.5f, dC, ldc, sc,
                              count));
    for (int t = 0; t < count; t++)
        TK_OK(hone_k_gemm(k, ta, tb, M, N, K, 0.7f, dA + t * sa, lda, dB + t * sb, ldb, 0.5f,
                          dS + t * sc, ldc));
    char name[96];
    snprintf(name, sizeof(name), "gemm_batched ta%d tb%d %dx%dx%d x%d", ta, tb, M, N, K, count);
    float *out = tk_get(k, dC, nc), *solo = tk_get(k, dS, nc);
    double *ref = malloc(sizeof(double) * (size_t)M * N);
    for (int t = 0; t < count; t++) {
        ref_gemm(ta, tb, M, N, K, 0.7, A + t * sa, lda, B + t * sb, ldb, 0.5, C + t * sc, ldc, ref);
        float *o = malloc(sizeof(float) * (size_t)M * N); /* ref is dense [M, N] */
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++)
                o[i * N + j] = out[t * sc + (size_t)i * ldc + j];
        TK_CLOSE(name, o, ref, (size_t)M * N, 1e-5);
        free(o);
    }
    /* the gaps between and inside the problems' C stay untouched */
    for (int t = 0; t < count; t++)
        for (size_t i = 0; i < sc; i++) {
            int inside = i < (size_t)M * ldc && (int)(i % ldc) < N;
            if (!inside && out[t * sc + i] != C[t * sc + i]) {
                fprintf(stderr, "%s: wrote outside C at %zu\n", name, t * sc + i);
                tk_failures++;
                break;
            }
        }
    same_as_solo(name, k, dC, solo, nc);
    free(out);
    free(solo);
    free(ref);
    free(A);
    free(B);
    free(C);
    hone_k_free(k, dA);
    hone_k_free(k, dB);
    hone_k_free(k, dC);
    hone_k_free(k, dS);
}

/* The context's math mode reaches the batched GEMM as it reaches hone_k_gemm: on CUDA, bf16
 * operands land between 1e-6 and 1.5e-2 of the double reference (tf32 under 1.5e-3); the CPU always
 * computes fp32 (rounding only). */
static void check_gemm_math(hone_kctx *k)
{
    int M = 64, N = 48, K = 256, count = 3;
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    float *A = malloc(sizeof(float) * na * count), *B = malloc(sizeof(float) * nb * count);
    ref_fill_uniform(A, na * count, 71, -1, 1);
    ref_fill_uniform(B, nb * count, 72, -1, 1);
    float *dA = tk_dev(k, A, na * count), *dB = tk_dev(k, B, nb * count);
    float *dC = tk_poisoned(k, nc * count);
    double *ref = malloc(sizeof(double) * nc);
    const hone_math modes[3] = {HONE_MATH_FP32, HONE_MATH_TF32, HONE_MATH_BF16};
    const double hi[3] = {1e-5, 1.5e-3, 1.5e-2}; /* as tests/gpu/test_gpu_ops.c */
    for (int m = 0; m < 3; m++) {
        hone_k_set_math(k, modes[m]);
        TK_OK(hone_k_gemm_batched(k, 0, 0, M, N, K, 1.0f, dA, K, na, dB, N, nb, 0.0f, dC, N, nc,
                                  count));
        float *out = tk_get(k, dC, nc * count);
        for (int t = 0; t < count; t++) {
            ref_gemm(0, 0, M, N, K, 1.0, A + t * na, K, B + t * nb, N, 0.0, NULL, N, ref);
            double e = ref_rel_err(out + t * nc, ref, nc);
            int want_lossy = !on_cpu && modes[m] == HONE_MATH_BF16;
            if (!(e <= (on_cpu ? 1e-5 : hi[m])) || (want_lossy && !(e > 1e-6))) {
                fprintf(stderr, "gemm_batched math %d: rel err %g\n", (int)modes[m], e);
                tk_failures++;
            }
        }
        free(out);
    }
    hone_k_set_math(k, HONE_MATH_FP32);
    free(A);
    free(B);
    free(ref);
    hone_k_free(k, dA);
    hone_k_free(k, dB);
    hone_k_free(k, dC);
}

static void check_bias(hone_kctx *k, int n, int c, int count, size_t stride)
{
    size_t ny = (size_t)count * n * c, nb = stride * count > (size_t)c ? stride * count : (size_t)c;
    float *y = malloc(sizeof(float) * ny), *b = malloc(sizeof(float) * nb);
    ref_fill_uniform(y, ny, 51, -1, 1);
    ref_fill_uniform(b, nb, 52, -1, 1);
    float *dy = tk_dev(k, y, ny), *db = tk_dev(k, b, nb), *ds = tk_dev(k, y, ny);
    TK_OK(hone_k_bias_add_batched(k, dy, db, stride, n, c, count));
    for (int t = 0; t < count; t++)
        TK_OK(hone_k_bias_add(k, ds + (size_t)t * n * c, db + t * stride, n, c));
    float *solo = tk_get(k, ds, ny);
    same_as_solo("bias_add_batched", k, dy, solo, ny);
    double *ref = malloc(sizeof(double) * ny);
    for (size_t i = 0; i < ny; i++)
        ref[i] = (double)y[i] + b[(i / ((size_t)n * c)) * stride + i % c]; /* count 1: t = 0 */
    float *out = tk_get(k, dy, ny);
    TK_CLOSE("bias_add_batched vs ref", out, ref, ny, 1e-6);
    free(out);
    free(solo);

    /* gradient, overwriting then accumulating; the gaps of db keep their values */
    for (int acc = 0; acc < 2; acc++) {
        float *g = tk_dev(k, b, nb), *gs = tk_dev(k, b, nb);
        TK_OK(hone_k_bias_grad_batched(k, g, stride, dy, n, c, acc, count));
        for (int t = 0; t < count; t++)
            TK_OK(hone_k_bias_grad(k, gs + t * stride, dy + (size_t)t * n * c, n, c, acc));
        solo = tk_get(k, gs, nb);
        same_as_solo(acc ? "bias_grad_batched acc" : "bias_grad_batched", k, g, solo, nb);
        float *hy = tk_get(k, dy, ny);
        double *rg = malloc(sizeof(double) * nb);
        size_t st = stride ? stride : (size_t)c; /* one problem: its stride is not used */
        for (size_t i = 0; i < nb; i++) {
            size_t t = i / st, j = i % st;
            if (j >= (size_t)c) {
                rg[i] = b[i];
                continue;
            }
            double s = acc ? b[i] : 0.0;
            for (int r = 0; r < n; r++)
                s += hy[(t * n + r) * c + j];
            rg[i] = s;
        }
        out = tk_get(k, g, nb);
        TK_CLOSE("bias_grad_batched vs ref", out, rg, nb, 1e-5);
        free(out);
        free(hy);
        free(rg);
        free(solo);
        hone_k_free(k, g);
        hone_k_free(k, gs);
    }
    free(ref);
    free(y);
    free(b);
    hone_k_free(k, dy);
    hone_k_free(k, db);
    hone_k_free(k, ds);
}

/* trials x [n, c, h, w] images; trial t's parameters are the slice [t * P, (t + 1) * P) of one
 * block: filters at 0, bias at nw + 1 (P leaves gaps after both). */
static void check_conv(hone_kctx *k, int trials, int n, int c, int h, int w, int kk, int r,
                       int stride, int pad, int with_bias, int with_dx)
{
    hone_conv_desc d;
    TK_OK(hone_conv_desc_init(&d, n, c, h, w, kk, r, r, stride, pad));
    size_t nx = (size_t)n * c * h * w, nw = (size_t)kk * c * r * r, ny = (size_t)n * kk * d.p * d.q;
    size_t P = nw + kk + 3, boff = nw + 1;
    size_t tx = nx * trials, ty = ny * trials, tp = P * trials;
    float *x = malloc(sizeof(float) * tx), *p = malloc(sizeof(float) * tp);
    float *gy = malloc(sizeof(float) * ty);
    ref_fill_uniform(x, tx, 61, -1, 1);
    ref_fill_uniform(p, tp, 62, -0.5f, 0.5f);
    ref_fill_uniform(gy, ty, 63, -1, 1);
    size_t wsb = hone_k_conv_workspace_batched(k, &d, trials);
    size_t wss = hone_k_conv_workspace(k, &d);
    void *ws = wsb ? hone_k_alloc(k, wsb) : NULL, *ws1 = wss ? hone_k_alloc(k, wss) : NULL;
    float *dx = tk_dev(k, x, tx), *dp = tk_dev(k, p, tp), *dgy = tk_dev(k, gy, ty);
    float *y = tk_poisoned(k, ty), *ys = tk_poisoned(k, ty);
    float *gx = tk_poisoned(k, tx), *gxs = tk_poisoned(k, tx);
    float *gp = tk_dev(k, p, tp), *gps = tk_dev(k, p, tp); /* gaps keep p's values */
    const float *bias = with_bias ? dp + boff : NULL;
    float *gb = with_bias ? gp + boff : NULL, *gbs = with_bias ? gps + boff : NULL;
    char name[128];
    snprintf(name, sizeof(name), "conv_batched x%d n%d c%d %dx%d k%d r%d s%d p%d", trials, n, c, h,
             w, kk, r, stride, pad);
    TK_OK(hone_k_conv_fwd_batched(k, &d, trials, dx, dp, P, bias, P, y, ws));
    /* right after the forward: its columns may be reused */
    TK_OK(hone_k_conv_bwd_batched(k, &d, trials, dx, dp, P, dgy, with_dx ? gx : NULL, gp, gb, P, ws,
                                  1));
    for (int t = 0; t < trials; t++) {
        TK_OK(hone_k_conv_fwd(k, &d, dx + t * nx, dp + t * P, bias ? bias + t * P : NULL,
                              ys + t * ny, ws1));
        TK_OK(hone_k_conv_bwd(k, &d, dx + t * nx, dp + t * P, dgy + t * ny,
                              with_dx ? gxs + t * nx : NULL, gps + t * P, gbs ? gbs + t * P : NULL,
                              ws1));
    }
    float *hy = tk_get(k, y, ty), *hgx = tk_get(k, gx, tx), *hgp = tk_get(k, gp, tp);
    double *ry = malloc(sizeof(double) * ny), *rdx = malloc(sizeof(double) * nx);
    double *rdw = malloc(sizeof(double) * nw), *rdb = malloc(sizeof(double) * kk);
    for (int t = 0; t < trials; t++) {
        const float *xt = x + t * nx, *wt = p + t * P;
        ref_conv_fwd(&d, xt, wt, with_bias ? wt + boff : NULL, ry);
        ref_conv_bwd(&d, xt, wt, gy + t * ny, rdx, rdw, rdb);
        TK_CLOSE(name, hy + t * ny, ry, ny, 1e-5);
        if (with_dx)
            TK_CLOSE("conv_batched dx", hgx + t * nx, rdx, nx, 1e-5);
        TK_CLOSE("conv_batched dw", hgp + t * P, rdw, nw, 1e-5);
        if (with_bias)
            TK_CLOSE("conv_batched db", hgp + t * P + boff, rdb, (size_t)kk, 1e-5);
        for (size_t i = nw; i < P; i++)
            if ((!with_bias || i < boff || i >= boff + kk) && hgp[t * P + i] != p[t * P + i]) {
                fprintf(stderr, "%s: wrote into the gap at %zu\n", name, t * P + i);
                tk_failures++;
            }
    }
    float *solo = tk_get(k, ys, ty);
    same_as_solo("conv_batched y vs single", k, y, solo, ty);
    free(solo);
    if (with_dx) {
        solo = tk_get(k, gxs, tx);
        same_as_solo("conv_batched dx vs single", k, gx, solo, tx);
        free(solo);
    }
    solo = tk_get(k, gps, tp);
    same_as_solo("conv_batched dw/db vs single", k, gp, solo, tp);
    free(solo);
    /* without reuse (ws rebuilt from x): the same gradients */
    float *gp2 = tk_dev(k, p, tp), *gx2 = tk_poisoned(k, tx);
    TK_OK(hone_k_conv_bwd_batched(k, &d, trials, dx, dp, P, dgy, with_dx ? gx2 : NULL, gp2,
                                  with_bias ? gp2 + boff : NULL, P, ws, 0));
    same_as_solo("conv_batched dw/db without reuse", k, gp2, hgp, tp);
    if (with_dx)
        same_as_solo("conv_batched dx without reuse", k, gx2, hgx, tx);
    hone_k_free(k, gp2);
    hone_k_free(k, gx2);

    free(hy);
    free(hgx);
    free(hgp);
    free(ry);
    free(rdx);
    free(rdw);
    free(rdb);
    free(x);
    free(p);
    free(gy);
    hone_k_free(k, ws);
    hone_k_free(k, ws1);
    hone_k_free(k, dx);
    hone_k_free(k, dp);
    hone_k_free(k, dgy);
    hone_k_free(k, y);
    hone_k_free(k, ys);
    hone_k_free(k, gx);
    hone_k_free(k, gxs);
    hone_k_free(k, gp);
    hone_k_free(k, gps);
}

int main(int argc, char **argv)
{
    hone_kctx *k = tk_ctx(argc, argv);
    on_cpu = hone_kctx_device(k) == HONE_DEV_CPU;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            check_gemm(k, ta, tb, 5, 7, 3, 3, 0);
            check_gemm(k, ta, tb, 33, 17, 40, 4, 2);
        }
    check_gemm(k, 0, 1, 64, 128, 300, 2, 0); /* large enough to split over the CPU pool */
    check_gemm(k, 0, 0, 4, 4, 4, 1, 1);
    check_gemm_math(k);
    check_bias(k, 6, 10, 3, 13);
    check_bias(k, 100, 33, 2, 40);
    check_bias(k, 3, 4, 1, 0);
    check_conv(k, 3, 2, 3, 7, 6, 4, 3, 1, 1, 1, 1);
    check_conv(k, 4, 3, 1, 12, 12, 8, 3, 1, 1, 1, 0); /* a first layer: no dx */
    check_conv(k, 2, 2, 3, 9, 9, 5, 3, 2, 0, 0, 1);   /* stride 2, no bias */
    check_conv(k, 2, 3, 8, 6, 6, 16, 1, 1, 0, 1, 1);  /* 1x1 */
    check_conv(k, 1, 2, 4, 8, 8, 6, 5, 2, 2, 1, 1);   /* one trial */
    /* enough pixels a trial (NPQ 2048, 3136) for CUDA's split-K filter gradient (4 chunks) */
    check_conv(k, 3, 8, 4, 16, 16, 8, 3, 1, 1, 1, 1);
    check_conv(k, 2, 16, 3, 14, 14, 5, 3, 1, 1, 0, 0);
    hone_conv_desc d;
    TK_OK(hone_conv_desc_init(&d, 1, 2, 4, 4, 3, 3, 3, 1, 1));
    float *buf = hone_k_alloc(k, 4096);
    void *ws = hone_k_alloc(k, hone_k_conv_workspace_batched(k, &d, 2) + 4);
    /* overlapping trials (a stride shorter than one trial's filters or bias) are refused */
    TK_EXPECT(hone_k_conv_fwd_batched(k, &d, 2, buf, buf, 10, NULL, 0, buf, ws) == HONE_EINVAL);
    TK_EXPECT(hone_k_conv_fwd_batched(k, &d, 2, buf, buf, 54, buf, 2, buf, ws) == HONE_EINVAL);
    TK_EXPECT(hone_k_conv_fwd_batched(k, &d, 0, buf, buf, 54, NULL, 0, buf, ws) == HONE_EINVAL);
    TK_EXPECT(hone_k_bias_add_batched(k, buf, buf, 2, 3, 4, 2) == HONE_EINVAL);
    hone_k_free(k, buf);
    hone_k_free(k, ws);
    return tk_finish(k, "test_kernels_batched");
}
