/* bench/conv_gpu.c: one convolution layer's forward, and forward + backward, timed alone on the
 * device, shape by shape: the reference CNN's two layers at the given batches and, for reference,
 * a ResNet's small-image stem, its first-stage conv and an ImageNet stem. Each pass is one captured
 * graph replayed --reps times (as the trainer replays its step), so the conv paths (cuDNN, im2col,
 * the direct kernels of small layers; chosen with HONE_CUDNN=OFF and HONE_CUDNN_MIN_C=N, see
 * kernels/cuda/conv_cudnn.cu) can be judged per shape. Prints one RESULT line a shape. Timing
 * only: correctness lives in tests/kernels and tests/gpu. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

typedef struct {
    const char *name;
    int n, c, h, w, k, r, stride, pad;
    int bias, first; /* first: no data gradient (the network's input) */
} shape;

typedef struct {
    hone_kctx *k;
    hone_conv_desc d;
    const shape *s;
    float *x, *w, *b, *y, *dy, *dx, *dw, *db;
    void *ws;
    int backward;
    int err; /* the first op's error seen while capturing */
} layer;

/* One replay: the forward, then (backward) the backward as the trainer runs it (a last conv
 * reuses its forward's im2col columns). */
static void pass(void *arg)
{
    layer *l = arg;
    int rc = hone_k_conv_fwd(l->k, &l->d, l->x, l->w, l->b, l->y, l->ws);
    if (rc == 0 && l->backward)
        rc = hone_k_conv_bwd_reuse(l->k, &l->d, l->x, l->w, l->dy, l->s->first ? NULL : l->dx,
                                   l->dw, l->b ? l->db : NULL, l->ws);
    if (rc < 0 && !l->err)
        l->err = rc;
}

/* Microseconds a replay of the graph of l's pass, over reps replays after 10 to warm up. */
static int time_pass(layer *l, int backward, int reps, double *us)
{
    hone_kgraph *g = NULL;
    l->backward = backward;
    int rc = hone_kgraph_capture(l->k, pass, l, &g);
    if (rc == 0 && l->err)
        rc = l->err;
    for (int i = 0; rc == 0 && i < 10; i++)
        rc = hone_kgraph_launch(l->k, g);
    if (rc == 0)
        rc = hone_k_sync(l->k);
    double t0 = hone_now();
    for (int i = 0; rc == 0 && i < reps; i++)
        rc = hone_kgraph_launch(l->k, g);
    if (rc == 0)
        rc = hone_k_sync(l->k);
    *us = (hone_now() - t0) * 1e6 / reps;
    hone_kgraph_free(g);
    return rc;
}

static float *filled(hone_kctx *k, size_t n, float v)
{
    float *p = hone_k_alloc(k, sizeof(float) * (n ? n : 1));
    hone_k_fill(k, p, v, n);
    return p;
}

static int run_shape(hone_kctx *k, const shape *s, const char *math, int reps)
{
    layer l = {.k = k, .s = s};
    int rc = hone_conv_desc_init(&l.d, s->n, s->c, s->h, s->w, s->k, s->r, s->r, s->stride, s->pad);
    if (rc < 0)
        return rc;
    size_t nx = (size_t)s->n * s->c * s->h * s->w, ny = (size_t)s->n * s->k * l.d.p * l.d.q;
    size_t nw = (size_t)s->k * s->c * s->r * s->r;
    l.x = filled(k, nx, 0.5f);
    l.w = filled(k, nw, 0.01f);
    l.b = s->bias ? filled(k, (size_t)s->k, 0.1f) : NULL;
    l.y = filled(k, ny, 0.f);
    l.dy = filled(k, ny, 0.001f);
    l.dx = filled(k, nx, 0.f);
    l.dw = filled(k, nw, 0.f);
    l.db = filled(k, (size_t)s->k, 0.f);
    size_t wsb = hone_k_conv_workspace(k, &l.d);
    l.ws = hone_k_alloc(k, wsb ? wsb : 4);
    double fwd = 0, both = 0;
    if ((rc = hone_k_sync(k)) == 0 && (rc = time_pass(&l, 0, reps, &fwd)) == 0)
        rc = time_pass(&l, 1, reps, &both);
    if (rc == 0)
        printf("RESULT shape=%s n=%d c=%d hw=%dx%d k=%d r=%d stride=%d math=%s impl=%s "
               "ws_mib=%.1f fwd_us=%.1f bwd_us=%.1f fwd_bwd_us=%.1f\n",
               s->name, s->n, s->c, s->h, s->w, s->k, s->r, s->stride, math,
               strncmp(hone_k_conv_impl(k), "cudnn", 5) ? "im2col" : "cudnn",
               (double)wsb / (1 << 20), fwd, both - fwd, both);
    void *bufs[] = {l.x, l.w, l.b, l.y, l.dy, l.dx, l.dw, l.db, l.ws};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        if (bufs[i])
            hone_k_free(k, bufs[i]);
    return rc;
}

int main(int argc, char **argv)
{
    const char *math = "tf32";
    int batches[8] = {128, 512}, nb = 2, given = 0, reps = 100, refs = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--math"))
            math = !strcmp(v, "fp32") ? "fp32" : !strcmp(v, "bf16") ? "bf16" : "tf32", i++;
        else if (!strcmp(a, "--batch") && atoi(v) > 0 && given < 8)
            batches[given++] = atoi(v), nb = given, i++;
        else if (!strcmp(a, "--reps"))
            reps = atoi(v) > 0 ? atoi(v) : 1, i++;
        else if (!strcmp(a, "--cnn-only"))
            refs = 0;
        else {
            fprintf(stderr,
                    "usage: %s [--math fp32|tf32|bf16] [--batch N]... [--reps N] "
                    "[--cnn-only]\n",
                    argv[0]);
            return 2;
        }
    }
    hone_kctx *k = NULL;
    int rc = hone_kctx_new(HONE_DEV_CUDA, 0, &k);
    if (rc < 0) {
        fprintf(stderr, "conv_gpu: no cuda device (%s)\n", hone_strerror(rc));
        return 77;
    }
    hone_k_set_math(k, !strcmp(math, "fp32")   ? HONE_MATH_FP32
                       : !strcmp(math, "bf16") ? HONE_MATH_BF16
                                               : HONE_MATH_TF32);
    printf("conv path: %s\n", hone_k_conv_impl(k));
    for (int i = 0; rc == 0 && i < nb; i++) {
        shape cnn[2] = {{"cnn.conv1", batches[i], 1, 28, 28, 32, 3, 1, 1, 1, 1},
                        {"cnn.conv2", batches[i], 32, 14, 14, 64, 3, 1, 1, 1, 0}};
        for (int j = 0; rc == 0 && j < 2; j++)
            rc = run_shape(k, &cnn[j], math, reps);
    }
    const shape ref[3] = {{"resnet.stem", 512, 3, 32, 32, 64, 3, 1, 1, 0, 1},
                          {"resnet.c64", 512, 64, 32, 32, 64, 3, 1, 1, 0, 0},
                          {"imagenet.stem", 128, 3, 160, 160, 64, 7, 2, 3, 0, 1}};
    for (int j = 0; rc == 0 && refs && j < 3; j++)
        rc = run_shape(k, &ref[j], math, reps);
    if (rc < 0)
        fprintf(stderr, "conv_gpu: %s\n", hone_strerror(rc));
    hone_kctx_free(k);
    return rc < 0 ? 1 : 0;
}
