/* tests/kernels/tk.h: tiny harness shared by the kernel tests. Each test binary runs on the CPU,
 * or on CUDA when given the argument "cuda" (exit 77 = skipped when no GPU), so tests/gpu can
 * register the very same checks against the CUDA backend. */
#ifndef HONE_TESTS_KERNELS_TK_H
#define HONE_TESTS_KERNELS_TK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "ref.h"

static int tk_failures;

#define TK_EXPECT(cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);                    \
            tk_failures++;                                                                         \
        }                                                                                          \
    } while (0)
#define TK_OK(expr) TK_EXPECT((expr) == HONE_OK)
#define TK_CLOSE(name, out, ref, n, tol)                                                           \
    (tk_failures += ref_check((name), (out), (ref), (n), (tol)))

/* Creates the context named by argv[1] ("cpu" default, "cuda"); exits 77 when unavailable. */
static inline hone_kctx *tk_ctx(int argc, char **argv)
{
    hone_device dev = (argc > 1 && strcmp(argv[1], "cuda") == 0) ? HONE_DEV_CUDA : HONE_DEV_CPU;
    hone_kctx *k = NULL;
    int rc = hone_kctx_new(dev, 2, &k);
    if (rc == HONE_ENOTSUP) {
        fprintf(stderr, "skipped: device not available\n");
        exit(77);
    }
    if (rc != HONE_OK) {
        fprintf(stderr, "hone_kctx_new: %s\n", hone_strerror(rc));
        exit(1);
    }
    return k;
}

/* Device copy of n host floats (or n bytes for tk_dev_bytes). */
static inline void *tk_dev_bytes(hone_kctx *k, const void *host, size_t bytes)
{
    void *d = hone_k_alloc(k, bytes ? bytes : 1);
    if (host && bytes)
        hone_k_upload(k, d, host, bytes);
    return d;
}
#define tk_dev(k, host, n) ((float *)tk_dev_bytes((k), (host), sizeof(float) * (n)))

/* Host copy (caller frees) of n floats from the device, after a sync. */
static inline float *tk_get(hone_kctx *k, const float *dev, size_t n)
{
    float *h = malloc(sizeof(float) * (n ? n : 1));
    hone_k_sync(k);
    hone_k_download(k, h, dev, sizeof(float) * n);
    return h;
}

/* A device buffer of n floats filled with NaN. */
static inline float *tk_poisoned(hone_kctx *k, size_t n)
{
    float *h = malloc(sizeof(float) * (n ? n : 1));
    ref_poison(h, n);
    float *d = tk_dev(k, h, n);
    free(h);
    return d;
}

static inline int tk_finish(hone_kctx *k, const char *name)
{
    hone_kctx_free(k);
    if (tk_failures) {
        fprintf(stderr, "%s: %d failure(s)\n", name, tk_failures);
        return 1;
    }
    fprintf(stderr, "%s: ok\n", name);
    return 0;
}

#endif
