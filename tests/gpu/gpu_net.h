/* tests/gpu/gpu_net.h: a small self-contained trainer (Fashion-MNIST MLP 784-256-10 and the
 * reference CNN conv3x3-32/pool/conv3x3-64/pool/fc-128/fc-10) built straight on kernels.h, used by
 * the CUDA-vs-CPU training tests and by bench/train_gpu. Data stays on the device; each training
 * step is one captured graph (gather, forward, loss, backward, one fused SGD launch, base += B). */
#ifndef HONE_TESTS_GPU_NET_H
#define HONE_TESTS_GPU_NET_H

#include <stdint.h>

#include "kernels.h"

typedef enum { GN_MLP = 0, GN_CNN = 1 } gn_arch;

/* Reads IDX images (scaled to [0,1] then normalised with Fashion-MNIST's mean/std) and labels;
 * train=1 for the 60000-image split. dir holds the *-idx?-ubyte.gz files (read through gzip -dc).
 * HONE_ENOENT when the files are not there. Caller frees *x and *y. */
int gn_load_fmnist(const char *dir, int train, float **x, int32_t **y, int *n);

typedef struct gn_net gn_net;

typedef struct gn_opts {
    gn_arch arch;
    int batch;
    float lr, momentum;
    uint64_t seed; /* parameter init and shuffling */
    int use_graph; /* capture the step in a CUDA graph (CPU: runs directly either way) */
} gn_opts;

/* Uploads ntrain training and ntest test images, initialises parameters on the host (identical
 * on every backend for one seed). */
int gn_new(hone_kctx *k, const gn_opts *o, const float *xtr, const int32_t *ytr, int ntrain,
           const float *xte, const int32_t *yte, int ntest, gn_net **out);
void gn_free(gn_net *g);
/* One epoch over floor(ntrain/batch) shuffled batches (at most max_steps if > 0). seconds is the
 * wall time from the permutation to the last step's completion. */
int gn_train_epoch(gn_net *g, int epoch, int max_steps, double *loss, double *acc, double *seconds);
/* Accuracy on the test images (forward only). */
int gn_eval(gn_net *g, double *acc);
/* Host copy of the flat parameter buffer (*n floats, caller frees). */
int gn_params(gn_net *g, float **out, size_t *n);

#endif
