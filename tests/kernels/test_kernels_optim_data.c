/* tests/kernels/test_kernels_optim_data.c: optimiser steps against their formulas (several steps,
 * lr and t from device memory), and the data ops: permutation, gather with a device base, counters,
 * and dropout against the random streams defined in kernels/backend.h (uint8 image gathering and
 * augmentation: test_kernels_augment.c). */
#include <math.h>

#include "tk.h"

static void check_sgd(hone_kctx *k, int nesterov, int use_lr_dev)
{
    const size_t n = 1000;
    float *w = malloc(sizeof(float) * n), *g = malloc(sizeof(float) * n), *out;
    double *rw = malloc(sizeof(double) * n), *rv = calloc(n, sizeof(double));
    ref_fill_uniform(w, n, 71, -1, 1);
    for (size_t i = 0; i < n; i++)
        rw[i] = w[i];
    float *dw = tk_dev(k, w, n), *dv = tk_dev(k, NULL, n), *dg = tk_dev(k, NULL, n);
    float lr = 0.05f, *dlr = tk_dev(k, &lr, 1);
    TK_OK(hone_k_fill(k, dv, 0.0f, n));
    for (int step = 0; step < 3; step++) {
        ref_fill_uniform(g, n, 72 + step, -1, 1);
        hone_k_upload(k, dg, g, sizeof(float) * n);
        TK_OK(hone_k_sgd_step(k, dw, dg, dv, n, use_lr_dev ? 99.0f : lr, use_lr_dev ? dlr : NULL,
                              0.9f, 5e-4f, nesterov));
        ref_sgd_step(rw, g, rv, n, lr, 0.9f, 5e-4f, nesterov);
    }
    TK_CLOSE(nesterov ? "sgd nesterov w" : "sgd w", out = tk_get(k, dw, n), rw, n, 1e-6);
    free(out);
    TK_CLOSE("sgd v", out = tk_get(k, dv, n), rv, n, 1e-5);
    free(out);
    hone_k_free(k, dw);
    hone_k_free(k, dv);
    hone_k_free(k, dg);
    hone_k_free(k, dlr);
    free(w);
    free(g);
    free(rw);
    free(rv);
}

static void check_adamw(hone_kctx *k, int use_dev)
{
    const size_t n = 777;
    float *w = malloc(sizeof(float) * n), *g = malloc(sizeof(float) * n), *out;
    double *rw = malloc(sizeof(double) * n), *rm = calloc(n, sizeof(double));
    double *rv = calloc(n, sizeof(double));
    ref_fill_uniform(w, n, 81, -1, 1);
    for (size_t i = 0; i < n; i++)
        rw[i] = w[i];
    float *dw = tk_dev(k, w, n), *dm = tk_dev(k, NULL, n), *dv = tk_dev(k, NULL, n);
    float *dg = tk_dev(k, NULL, n), lr = 1e-3f, *dlr = tk_dev(k, &lr, 1);
    int32_t zero = 0, *dt = tk_dev_bytes(k, &zero, sizeof(int32_t));
    TK_OK(hone_k_fill(k, dm, 0.0f, n));
    TK_OK(hone_k_fill(k, dv, 0.0f, n));
    for (int t = 1; t <= 4; t++) {
        ref_fill_uniform(g, n, 82 + t, -1, 1);
        hone_k_upload(k, dg, g, sizeof(float) * n);
        if (use_dev) {
            TK_OK(hone_k_counter_add(k, dt, 1));
            TK_OK(
                hone_k_adamw_step(k, dw, dg, dm, dv, n, 0, dlr, 0.9f, 0.999f, 1e-8f, 0.01f, 0, dt));
        } else {
            TK_OK(hone_k_adamw_step(k, dw, dg, dm, dv, n, lr, NULL, 0.9f, 0.999f, 1e-8f, 0.01f, t,
                                    NULL));
        }
        ref_adamw_step(rw, g, rm, rv, n, lr, 0.9f, 0.999f, 1e-8f, 0.01f, t);
    }
    TK_CLOSE("adamw w", out = tk_get(k, dw, n), rw, n, 1e-6);
    free(out);
    TK_CLOSE("adamw m", out = tk_get(k, dm, n), rm, n, 1e-5);
    free(out);
    TK_CLOSE("adamw v", out = tk_get(k, dv, n), rv, n, 1e-5);
    free(out);
    float *bufs[] = {dw, dm, dv, dg, dlr};
    for (size_t i = 0; i < HONE_ARRAY_LEN(bufs); i++)
        hone_k_free(k, bufs[i]);
    hone_k_free(k, dt);
    free(w);
    free(g);
    free(rw);
    free(rm);
    free(rv);
}

static void check_permutation_gather(hone_kctx *k, int n)
{
    int32_t *idx = hone_k_alloc(k, sizeof(int32_t) * n);
    int32_t *h = malloc(sizeof(int32_t) * n), *h2 = malloc(sizeof(int32_t) * n);
    int32_t *want = malloc(sizeof(int32_t) * n);
    TK_OK(hone_k_permutation(k, idx, n, 42, 3));
    hone_k_sync(k);
    hone_k_download(k, h, idx, sizeof(int32_t) * n);
    ref_permutation(want, n, 42, 3);
    TK_EXPECT(memcmp(h, want, sizeof(int32_t) * n) == 0);
    uint8_t *seen = calloc(n, 1);
    int ok = 1;
    for (int i = 0; i < n; i++) {
        if (h[i] < 0 || h[i] >= n || seen[h[i]])
            ok = 0;
        else
            seen[h[i]] = 1;
    }
    TK_EXPECT(ok);
    TK_OK(hone_k_permutation(k, idx, n, 42, 4));
    hone_k_sync(k);
    hone_k_download(k, h2, idx, sizeof(int32_t) * n);
    if (n > 8)
        TK_EXPECT(memcmp(h, h2, sizeof(int32_t) * n) != 0); /* a new epoch reshuffles */
    hone_k_upload(k, idx, h, sizeof(int32_t) * n);

    /* gather rows 5..5+m of the permutation, base from the device */
    const int row = 3, m = n / 2;
    float *src = malloc(sizeof(float) * n * row), *out;
    int32_t *lab = malloc(sizeof(int32_t) * n);
    for (int i = 0; i < n; i++) {
        lab[i] = i * 10;
        for (int j = 0; j < row; j++)
            src[i * row + j] = (float)(i * row + j);
    }
    float *dsrc = tk_dev(k, src, (size_t)n * row), *ddst = tk_poisoned(k, (size_t)m * row);
    int32_t *dlab = tk_dev_bytes(k, lab, sizeof(int32_t) * n);
    int32_t *dol = hone_k_alloc(k, sizeof(int32_t) * m), base = 0;
    int32_t *dbase = tk_dev_bytes(k, &base, sizeof(int32_t));
    TK_OK(hone_k_counter_add(k, dbase, 5));
    if (m > 5)
        TK_OK(hone_k_gather_rows(k, dsrc, dlab, idx, dbase, 0, m - 5, row, ddst, dol));
    out = tk_get(k, ddst, (size_t)m * row);
    int32_t *ol = malloc(sizeof(int32_t) * m);
    hone_k_download(k, ol, dol, sizeof(int32_t) * m);
    for (int i = 0; i < m - 5; i++) {
        TK_EXPECT(ol[i] == h[5 + i] * 10);
        for (int j = 0; j < row; j++)
            TK_EXPECT(out[i * row + j] == (float)(h[5 + i] * row + j));
    }
    free(out);
    TK_OK(hone_k_gather_rows(k, dsrc, NULL, idx, NULL, 1, 1, row, ddst, NULL));
    out = tk_get(k, ddst, row);
    TK_EXPECT(out[0] == (float)(h[1] * row));
    free(out);
    hone_k_free(k, idx);
    hone_k_free(k, dsrc);
    hone_k_free(k, ddst);
    hone_k_free(k, dlab);
    hone_k_free(k, dol);
    hone_k_free(k, dbase);
    free(h);
    free(h2);
    free(want);
    free(seen);
    free(src);
    free(lab);
    free(ol);
}

static void check_dropout(hone_kctx *k, size_t n, float p)
{
    float *x = malloc(sizeof(float) * n), *g = malloc(sizeof(float) * n), *out;
    double *ry = malloc(sizeof(double) * n), *rdx = malloc(sizeof(double) * n);
    uint8_t *rmask = malloc(n), *mask = malloc(n);
    ref_fill_uniform(x, n, 91, -1, 1);
    ref_fill_uniform(g, n, 92, -1, 1);
    uint64_t c0 = 7;
    float *dx = tk_dev(k, x, n), *dy = tk_poisoned(k, n), *dg = tk_dev(k, g, n);
    float *ddx = tk_poisoned(k, n);
    uint8_t *dmask = hone_k_alloc(k, n);
    uint64_t *dctr = tk_dev_bytes(k, &c0, sizeof(c0)), c1;
    TK_OK(hone_k_dropout_fwd(k, dx, dy, dmask, n, p, 1234, dctr));
    ref_dropout_fwd(x, n, p, 1234, c0, ry, rmask);
    TK_CLOSE("dropout_fwd", out = tk_get(k, dy, n), ry, n, 0);
    free(out);
    hone_k_download(k, mask, dmask, n);
    hone_k_download(k, &c1, dctr, sizeof(c1));
    TK_EXPECT(memcmp(mask, rmask, n) == 0);
    TK_EXPECT(c1 == c0 + 1);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        kept += mask[i];
    if (n >= 10000)
        TK_EXPECT(fabs((double)kept / n - (1 - p)) < 0.02);
    TK_OK(hone_k_dropout_bwd(k, dg, dmask, ddx, n, p));
    for (size_t i = 0; i < n; i++)
        rdx[i] = rmask[i] ? (double)(g[i] * (1.0f / (1.0f - p))) : 0.0;
    TK_CLOSE("dropout_bwd", out = tk_get(k, ddx, n), rdx, n, 0);
    free(out);
    /* the advanced counter draws a different mask */
    TK_OK(hone_k_dropout_fwd(k, dx, dy, dmask, n, p, 1234, dctr));
    hone_k_sync(k);
    hone_k_download(k, mask, dmask, n);
    if (p > 0 && n >= 100)
        TK_EXPECT(memcmp(mask, rmask, n) != 0);
    hone_k_free(k, dx);
    hone_k_free(k, dy);
    hone_k_free(k, dg);
    hone_k_free(k, ddx);
    hone_k_free(k, dmask);
    hone_k_free(k, dctr);
    free(x);
    free(g);
    free(ry);
    free(rdx);
    free(rmask);
    free(mask);
}

int main(int argc, char **argv)
{
    hone_kctx *k = tk_ctx(argc, argv);
    for (int nest = 0; nest < 2; nest++)
        for (int dev = 0; dev < 2; dev++)
            check_sgd(k, nest, dev);
    check_adamw(k, 0);
    check_adamw(k, 1);
    check_permutation_gather(k, 2);
    check_permutation_gather(k, 1000);
    check_dropout(k, 1, 0.5f);
    check_dropout(k, 100000, 0.3f);
    check_dropout(k, 1000, 0.0f);
    return tk_finish(k, "test_kernels_optim_data");
}
