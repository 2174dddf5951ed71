/* tests/kernels/test_kernels_dense.c: GEMM in all transpose modes with leading dimensions and
 * alpha/beta, bias add/grad, activations, axpy/scale and sum against the double references. */
#include <math.h>

#include "tk.h"

static void check_gemm(hone_kctx *k, int ta, int tb, int M, int N, int K, float alpha, float beta,
                       int pad)
{
    int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
    size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb, nc = (size_t)M * ldc;
    float *A = malloc(sizeof(float) * na), *B = malloc(sizeof(float) * nb);
    float *C = malloc(sizeof(float) * nc);
    ref_fill_uniform(A, na, 1 + M, -1, 1);
    ref_fill_uniform(B, nb, 2 + N, -1, 1);
    ref_fill_uniform(C, nc, 3 + K, -1, 1);
    double *ref = malloc(sizeof(double) * (size_t)M * N);
    ref_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ref);
    float *dA = tk_dev(k, A, na), *dB = tk_dev(k, B, nb), *dC;
    if (beta == 0.0f)
        dC = tk_poisoned(k, nc); /* beta 0 must not read C, even NaN */
    else
        dC = tk_dev(k, C, nc);
    TK_OK(hone_k_gemm(k, ta, tb, M, N, K, alpha, dA, lda, dB, ldb, beta, dC, ldc));
    float *out = tk_get(k, dC, nc), *packed = malloc(sizeof(float) * (size_t)M * N);
    for (int i = 0; i < M; i++)
        memcpy(packed + (size_t)i * N, out + (size_t)i * ldc, sizeof(float) * N);
    char name[96];
    snprintf(name, sizeof(name), "gemm ta=%d tb=%d %dx%dx%d a=%g b=%g", ta, tb, M, N, K, alpha,
             beta);
    TK_CLOSE(name, packed, ref, (size_t)M * N, 1e-5);
    hone_k_free(k, dA);
    hone_k_free(k, dB);
    hone_k_free(k, dC);
    free(A);
    free(B);
    free(C);
    free(ref);
    free(out);
    free(packed);
}

static void check_elementwise(hone_kctx *k, size_t n)
{
    float *x = malloc(sizeof(float) * n), *g = malloc(sizeof(float) * n);
    double *ref = malloc(sizeof(double) * n);
    ref_fill_uniform(x, n, 7, -3, 3);
    ref_fill_uniform(g, n, 8, -1, 1);
    float *dx = tk_dev(k, x, n), *dg = tk_dev(k, g, n), *dy = tk_poisoned(k, n);
    float *dz = tk_poisoned(k, n), *out;

    TK_OK(hone_k_relu_fwd(k, dx, dy, n));
    for (size_t i = 0; i < n; i++)
        ref[i] = x[i] > 0 ? x[i] : 0;
    TK_CLOSE("relu_fwd", out = tk_get(k, dy, n), ref, n, 1e-6);
    free(out);
    TK_OK(hone_k_relu_bwd(k, dy, dg, dz, n));
    for (size_t i = 0; i < n; i++)
        ref[i] = x[i] > 0 ? g[i] : 0;
    TK_CLOSE("relu_bwd", out = tk_get(k, dz, n), ref, n, 1e-6);
    free(out);

    TK_OK(hone_k_sigmoid_fwd(k, dx, dy, n));
    for (size_t i = 0; i < n; i++)
        ref[i] = 1.0 / (1.0 + exp(-(double)x[i]));
    TK_CLOSE("sigmoid_fwd", out = tk_get(k, dy, n), ref, n, 1e-6);
    TK_OK(hone_k_sigmoid_bwd(k, dy, dg, dz, n));
    for (size_t i = 0; i < n; i++)
        ref[i] = g[i] * (double)out[i] * (1.0 - (double)out[i]);
    free(out);
    TK_CLOSE("sigmoid_bwd", out = tk_get(k, dz, n), ref, n, 1e-6);
    free(out);

    TK_OK(hone_k_copy(k, dz, dg, sizeof(float) * n));
    TK_OK(hone_k_axpy(k, 0.5f, dx, dz, n));
    for (size_t i = 0; i < n; i++)
        ref[i] = g[i] + 0.5 * x[i];
    TK_CLOSE("axpy", out = tk_get(k, dz, n), ref, n, 1e-6);
    free(out);
    TK_OK(hone_k_scale(k, dz, -2.0f, n));
    for (size_t i = 0; i < n; i++)
        ref[i] *= -2.0;
    TK_CLOSE("scale", out = tk_get(k, dz, n), ref, n, 1e-6);
    free(out);

    float *ds = tk_poisoned(k, 1);
    TK_OK(hone_k_sum(k, dx, n, ds));
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    out = tk_get(k, ds, 1);
    TK_EXPECT(fabs(out[0] - s) <= 1e-4 * (1 + fabs(s)) + 1e-6 * n);
    free(out);

    TK_OK(hone_k_fill(k, dz, 3.25f, n));
    for (size_t i = 0; i < n; i++)
        ref[i] = 3.25;
    TK_CLOSE("fill", out = tk_get(k, dz, n), ref, n, 0);
    free(out);

    hone_k_free(k, dx);
    hone_k_free(k, dg);
    hone_k_free(k, dy);
    hone_k_free(k, dz);
    hone_k_free(k, ds);
    free(x);
    free(g);
    free(ref);
}

static void check_bias(hone_kctx *k, int n, int c)
{
    size_t nc = (size_t)n * c;
    float *y = malloc(sizeof(float) * nc), *b = malloc(sizeof(float) * c);
    double *ref = malloc(sizeof(double) * nc), *rb = malloc(sizeof(double) * c);
    ref_fill_uniform(y, nc, 11, -1, 1);
    ref_fill_uniform(b, c, 12, -1, 1);
    float *dy = tk_dev(k, y, nc), *db = tk_dev(k, b, c), *out;
    TK_OK(hone_k_bias_add(k, dy, db, n, c));
    for (size_t i = 0; i < nc; i++)
        ref[i] = (double)y[i] + b[i % c];
    TK_CLOSE("bias_add", out = tk_get(k, dy, nc), ref, nc, 1e-6);
    free(out);
    float *dg = tk_dev(k, y, nc), *dbg = tk_poisoned(k, c);
    TK_OK(hone_k_bias_grad(k, dbg, dg, n, c, 0));
    for (int j = 0; j < c; j++) {
        rb[j] = 0;
        for (int i = 0; i < n; i++)
            rb[j] += y[(size_t)i * c + j];
    }
    TK_CLOSE("bias_grad", out = tk_get(k, dbg, c), rb, c, 1e-5);
    free(out);
    TK_OK(hone_k_bias_grad(k, dbg, dg, n, c, 1));
    for (int j = 0; j < c; j++)
        rb[j] *= 2;
    TK_CLOSE("bias_grad accumulate", out = tk_get(k, dbg, c), rb, c, 1e-5);
    free(out);
    hone_k_free(k, dy);
    hone_k_free(k, db);
    hone_k_free(k, dg);
    hone_k_free(k, dbg);
    free(y);
    free(b);
    free(ref);
    free(rb);
}

int main(int argc, char **argv)
{
    hone_kctx *k = tk_ctx(argc, argv);
    static const int shapes[][3] = {
        {1, 1, 1}, {7, 5, 3}, {64, 33, 17}, {128, 10, 256}, {3, 200, 9}};
    for (size_t s = 0; s < HONE_ARRAY_LEN(shapes); s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                check_gemm(k, ta, tb, shapes[s][0], shapes[s][1], shapes[s][2], 1.0f, 0.0f, 0);
                check_gemm(k, ta, tb, shapes[s][0], shapes[s][1], shapes[s][2], -0.5f, 0.75f, 3);
            }
    check_elementwise(k, 1);
    check_elementwise(k, 1000);
    check_elementwise(k, 65537);
    check_bias(k, 1, 1);
    check_bias(k, 37, 10);
    check_bias(k, 128, 256);
    /* argument validation */
    TK_EXPECT(hone_k_gemm(k, 0, 0, 2, 2, 2, 1, NULL, 2, NULL, 2, 0, NULL, 2) == HONE_EINVAL);
    float dummy[4];
    TK_EXPECT(hone_k_gemm(k, 0, 0, 2, 2, 2, 1, dummy, 1, dummy, 2, 0, dummy, 2) == HONE_EINVAL);
    return tk_finish(k, "test_kernels_dense");
}
