/* bench/train_gpu.c: times the shipped training epoch (train/net.c and train/loop.c through
 * hone_trainer_*: data on the device, one captured graph per step, fused SGD) for the MLP or the
 * CNN on Fashion-MNIST, and prints one RESULT line for bench/train_gpu.sh to tabulate. Timing
 * only: correctness lives in tests/gpu. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int spec_set(hone_train_spec *s, const char *fmt, ...)
{
    char kv[1200], err[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(kv, sizeof(kv), fmt, ap);
    va_end(ap);
    int rc = hone_train_spec_set(s, kv, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "train_gpu: %s\n", err);
    return rc;
}

int main(int argc, char **argv)
{
    const char *arch = "cnn", *device = "cuda", *math = "tf32", *lr = "0.01";
    int batch = 128, epochs = 5, max_steps = 0, ntrain = 0, graph = 1, nsets = 0;
    const char *sets[16];
    const char *dir = getenv("HONE_FMNIST_DIR");
    if (!dir)
        dir = "/usr/share/datasets/fashion-mnist";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--arch"))
            arch = v, i++;
        else if (!strcmp(a, "--set") && nsets < 16)
            sets[nsets++] = v, i++;
        else if (!strcmp(a, "--batch"))
            batch = atoi(v), i++;
        else if (!strcmp(a, "--epochs"))
            epochs = atoi(v), i++;
        else if (!strcmp(a, "--lr"))
            lr = v, i++;
        else if (!strcmp(a, "--max-steps"))
            max_steps = atoi(v), i++;
        else if (!strcmp(a, "--ntrain"))
            ntrain = atoi(v), i++;
        else if (!strcmp(a, "--device"))
            device = strcmp(v, "cpu") ? "cuda" : "cpu", i++;
        else if (!strcmp(a, "--math"))
            math = !strcmp(v, "fp32") ? "fp32" : !strcmp(v, "bf16") ? "bf16" : "tf32", i++;
        else if (!strcmp(a, "--data"))
            dir = v, i++;
        else if (!strcmp(a, "--no-graph"))
            graph = 0;
        else {
            fprintf(stderr,
                    "usage: %s [--arch mlp|cnn|resnet18|resnet34] [--batch N] [--epochs N] "
                    "[--lr X] [--device cuda|cpu] [--math fp32|tf32|bf16] [--no-graph] "
                    "[--max-steps N] [--ntrain N] [--data DIR] [--set key=value]...\n",
                    argv[0]);
            return 2;
        }
    }
    if (!strcmp(device, "cuda") && !hone_cuda_available()) {
        fprintf(stderr, "train_gpu: no cuda device\n");
        return 77;
    }
    /* the reference networks (mlp 784-256-10, cnn fc-128), SGD momentum 0.9, constant lr, no
     * weight decay, all training images trained on (no validation split) */
    hone_train_spec spec;
    hone_train_spec_defaults(&spec);
    if (spec_set(&spec, "network=%s", arch) < 0 || spec_set(&spec, "data.path=%s", dir) < 0 ||
        spec_set(&spec, "data.val_size=0") < 0 ||
        spec_set(&spec, "data.train_limit=%d", ntrain > 0 ? ntrain : 0) < 0 ||
        spec_set(&spec, "train.epochs=%d", epochs) < 0 ||
        spec_set(&spec, "train.batch_size=%d", batch) < 0 ||
        spec_set(&spec, "train.lr=%s", lr) < 0 || spec_set(&spec, "train.momentum=0.9") < 0 ||
        spec_set(&spec, "train.weight_decay=0") < 0 ||
        spec_set(&spec, "train.lr_schedule=constant") < 0 || spec_set(&spec, "train.seed=42") < 0 ||
        spec_set(&spec, "train.math=%s", math) < 0)
        return 2;
    for (int i = 0; i < nsets; i++) /* e.g. data.format=image_folder data.packed=FILE */
        if (spec_set(&spec, "%s", sets[i]) < 0)
            return 2;
    hone_train_opts o = {.spec = &spec, .device = device, .eager = !graph};
    hone_trainer *t = NULL;
    char err[512] = "";
    int rc = hone_trainer_new(&o, &t, err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "train_gpu: %s\n", err[0] ? err : hone_strerror(rc));
        return rc == HONE_ENOENT || rc == HONE_ENOTSUP ? 77 : 1;
    }
    double *sec = calloc((size_t)epochs, sizeof(double)), acc = 0, loss, images = 0;
    for (int e = 0; e < epochs; e++) {
        hone_train_epoch ep;
        if ((rc = hone_trainer_epoch(t, e, max_steps, &ep)) < 0 ||
            (rc = hone_trainer_test(t, &loss, &acc)) < 0) {
            fprintf(stderr, "train_gpu: epoch %d: %s\n", e, hone_strerror(rc));
            return 1;
        }
        sec[e] = ep.seconds;
        images = ep.images_per_second * ep.seconds;
        printf("epoch %d: %.4f s, loss %.4f, train acc %.4f, test acc %.4f\n", e + 1, sec[e],
               ep.train_loss, ep.train_accuracy, acc);
    }
    double first = sec[0];
    if (epochs > 1)
        qsort(sec + 1, (size_t)epochs - 1, sizeof(double), cmp_double);
    double med = epochs > 1 ? sec[1 + (epochs - 1) / 2] : sec[0];
    printf("RESULT impl=hone%s arch=%s batch=%d math=%s s_per_epoch=%.4f first_epoch=%.4f "
           "img_per_s=%.0f acc=%.4f epochs=%d\n",
           graph ? "" : "-nograph", arch, batch, math, med, first, images / med, acc, epochs);
    hone_trainer_free(t);
    free(sec);
    return 0;
}
