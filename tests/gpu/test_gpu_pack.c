/* tests/gpu/test_gpu_pack.c: packed trials (hone_train_run_pack) on CUDA against the same trials
 * run alone (hone_train_run) on CUDA: 4 reference-CNN trials with their own lr, momentum, seed,
 * dropout and label smoothing (0, 0.05, 0.1, 0.15), 2 epochs on a Fashion-MNIST subset, fp32. The
 * packed step's batched GEMMs and im2col convolutions round differently from the solo path (cuDNN,
 * or the direct first-layer kernels), so the bound is stated, not bit-exactness: every epoch's
 * train and validation loss within 5e-3 of the solo run's, its validation accuracy and the test
 * accuracy within 0.02. (Two correct fp32 convolutions part in the last bits and SGD grows that
 * over the steps: on the H100 the trial at lr 0.04 ended 2 epochs 2.5e-3 from its solo val_loss,
 * the others within 1e-3.) A fifth trial with another model.hidden is refused naming the key. Exits
 * 77 (skipped) without a GPU or the data. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train.h"

#define T 4
#define EPOCHS 2
#define LOSS_BOUND 5e-3
#define ACC_BOUND 0.02

static int failures;

typedef struct {
    hone_train_epoch e[EPOCHS];
    int n;
} history;

static int record(const hone_train_epoch *e, void *user)
{
    history *h = user;
    if (h->n < EPOCHS)
        h->e[h->n++] = *e;
    return 0;
}

static void make_spec(hone_train_spec *s, const char *dir, int i)
{
    char err[256];
    hone_train_spec_defaults(s);
    const char *kv[] = {"network=cnn",          "data.train_limit=2048", "data.val_size=500",
                        "data.test_limit=1000", "train.batch_size=64",   "train.math=fp32"};
    for (size_t j = 0; j < sizeof(kv) / sizeof(kv[0]); j++)
        if (hone_train_spec_set(s, kv[j], err, sizeof(err)) < 0) {
            fprintf(stderr, "spec: %s\n", err);
            exit(1);
        }
    snprintf(s->data.path, sizeof(s->data.path), "%s", dir);
    s->train.epochs = EPOCHS;
    s->train.lr = 0.01 * (i + 1);
    s->train.momentum = 0.8 + 0.05 * i;
    s->train.seed = 7 + 13 * (uint64_t)i;
    s->model.dropout = 0.1 * (i + 1);
    s->train.label_smoothing = 0.05 * i; /* a trial's own, in the packed step too */
}

static void close_to(const char *what, int trial, int epoch, double a, double b, double bound)
{
    if (!(fabs(a - b) <= bound)) {
        fprintf(stderr, "trial %d epoch %d: %s packed %.6g, solo %.6g (bound %g)\n", trial, epoch,
                what, a, b, bound);
        failures++;
    }
}

int main(void)
{
    const char *dir = getenv("HONE_FASHION_MNIST") ? getenv("HONE_FASHION_MNIST")
                                                   : "/usr/share/datasets/fashion-mnist";
    char probe[600];
    snprintf(probe, sizeof(probe), "%s/train-images-idx3-ubyte.gz", dir);
    if (!hone_cuda_available() || access(probe, R_OK) != 0) {
        fprintf(stderr, "test_gpu_pack: skipped (no GPU or no Fashion-MNIST in %s)\n", dir);
        return 77;
    }
    hone_train_spec s[T + 1];
    hone_train_opts o[T + 1];
    const hone_train_opts *op[T + 1];
    history hp[T + 1], hs[T];
    memset(hp, 0, sizeof(hp));
    memset(hs, 0, sizeof(hs));
    for (int i = 0; i <= T; i++) {
        make_spec(&s[i], dir, i);
        o[i] =
            (hone_train_opts){.spec = &s[i], .device = "cuda", .on_epoch = record, .user = &hp[i]};
        op[i] = &o[i];
    }
    hone_train_result res[T + 1], solo;
    int rc[T + 1];
    char err[T + 1][256], e[512];
    if (hone_train_run_pack(op, T, res, rc, err) != HONE_OK) {
        for (int i = 0; i < T; i++)
            fprintf(stderr, "packed trial %d: %s\n", i, err[i]);
        return 1;
    }
    for (int i = 0; i < T; i++) {
        hone_train_opts so = o[i];
        so.user = &hs[i];
        if (hone_train_run(&so, &solo, e, sizeof(e)) != HONE_OK) {
            fprintf(stderr, "solo trial %d: %s\n", i, e);
            return 1;
        }
        if (hp[i].n != EPOCHS || hs[i].n != EPOCHS || !res[i].finished) {
            fprintf(stderr, "trial %d: %d packed and %d solo epochs\n", i, hp[i].n, hs[i].n);
            failures++;
            continue;
        }
        for (int k = 0; k < EPOCHS; k++) {
            close_to("train_loss", i, k + 1, hp[i].e[k].train_loss, hs[i].e[k].train_loss,
                     LOSS_BOUND);
            close_to("val_loss", i, k + 1, hp[i].e[k].val_loss, hs[i].e[k].val_loss, LOSS_BOUND);
            close_to("val_accuracy", i, k + 1, hp[i].e[k].val_accuracy, hs[i].e[k].val_accuracy,
                     ACC_BOUND);
        }
        close_to("test_accuracy", i, EPOCHS, res[i].test_accuracy, solo.test_accuracy, ACC_BOUND);
        fprintf(stderr, "trial %d: test accuracy packed %.4f, solo %.4f\n", i, res[i].test_accuracy,
                solo.test_accuracy);
    }
    /* a trial of another model cannot join */
    s[T].model.hidden = s[0].model.hidden + 16;
    op[1] = &o[T];
    if (hone_train_run_pack(op, 2, res, rc, err) != HONE_EINVAL ||
        !strstr(err[0], "model.hidden")) {
        fprintf(stderr, "incompatible trials: not refused by model.hidden: %s\n", err[0]);
        failures++;
    }
    fprintf(stderr, "test_gpu_pack: %s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
