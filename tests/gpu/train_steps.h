/* tests/gpu/train_steps.h: what the GPU trainer tests (test_gpu_train.c, test_gpu_detect.c) share:
 * a spec assignment that must succeed, a trainer that must build, the relative error of two
 * parameter updates, and whole training steps from one initialisation on the CPU, CUDA eager and
 * the captured CUDA graph, compared. Header-only (static inline functions): each test is one file.
 */
#ifndef HONE_TESTS_GPU_TRAIN_STEPS_H
#define HONE_TESTS_GPU_TRAIN_STEPS_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "train.h"

/* ||(a - w0) - (b - w0)|| / ||b - w0||: how far update a is from update b; INFINITY when either
 * holds a non-finite value. */
static inline double ts_delta_err(const float *w0, const float *a, const float *b, size_t n)
{
    double e = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        double da = (double)a[i] - w0[i], db = (double)b[i] - w0[i];
        if (!isfinite(a[i]) || !isfinite(b[i]))
            return INFINITY;
        e += (da - db) * (da - db);
        r += db * db;
    }
    return sqrt(e) / fmax(sqrt(r), 1e-30);
}

/* hone_train_spec_set of the formatted "key=value"; exits on a refusal (a bug in the test). */
static inline void ts_spec_set(hone_train_spec *s, const char *fmt, ...)
{
    char kv[1200], err[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(kv, sizeof(kv), fmt, ap);
    va_end(ap);
    if (hone_train_spec_set(s, kv, err, sizeof(err)) < 0) {
        fprintf(stderr, "spec: %s\n", err);
        exit(1);
    }
}

/* A trainer of s on device (eager: no captured graph; threads 0: the default); exits when it
 * cannot be built. */
static inline hone_trainer *ts_make(const hone_train_spec *s, const char *device, int eager,
                                    int threads)
{
    hone_train_opts o = {.spec = s, .device = device, .eager = eager, .threads = threads};
    hone_trainer *t = NULL;
    char err[512] = "";
    int rc = hone_trainer_new(&o, &t, err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "hone_trainer_new(%s): %s\n", device, err[0] ? err : hone_strerror(rc));
        exit(1);
    }
    return t;
}

/* `steps` steps of s from the same initialisation on the CPU, CUDA eager and CUDA graph: 0 when
 * the CUDA update is within tol of the CPU's and the graph's within 1e-4 of eager's, else 1. The
 * line printed starts with `what`. */
static inline int ts_compare_steps(const hone_train_spec *s, int steps, double tol, int threads,
                                   const char *what)
{
    hone_trainer *nc = ts_make(s, "cpu", 0, threads), *ne = ts_make(s, "cuda", 1, threads),
                 *ng = ts_make(s, "cuda", 0, threads);
    float *w0 = NULL, *wc = NULL, *we = NULL, *wg = NULL;
    size_t n;
    hone_train_epoch e;
    int rc = hone_trainer_params(nc, &w0, &n), bad = 1;
    if (rc == HONE_OK)
        rc = hone_trainer_epoch(nc, 0, steps, &e);
    if (rc == HONE_OK)
        rc = hone_trainer_epoch(ne, 0, steps, &e);
    if (rc == HONE_OK)
        rc = hone_trainer_epoch(ng, 0, steps, &e);
    if (rc == HONE_OK)
        rc = hone_trainer_params(nc, &wc, &n);
    if (rc == HONE_OK)
        rc = hone_trainer_params(ne, &we, &n);
    if (rc == HONE_OK)
        rc = hone_trainer_params(ng, &wg, &n);
    if (rc < 0) {
        fprintf(stderr, "%s: train: %s\n", what, hone_strerror(rc));
    } else {
        double e1 = ts_delta_err(w0, we, wc, n), e2 = ts_delta_err(w0, wg, we, n);
        fprintf(stderr,
                "%s %d step(s): update rel err cuda-vs-cpu %.3g (tol %g), graph-vs-eager %.3g\n",
                what, steps, e1, tol, e2);
        bad = !(e1 <= tol) || !(e2 <= 1e-4);
    }
    free(w0), free(wc), free(we), free(wg);
    hone_trainer_free(nc), hone_trainer_free(ne), hone_trainer_free(ng);
    return bad;
}

#endif
