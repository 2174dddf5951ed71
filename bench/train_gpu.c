/* bench/train_gpu.c: times Hone's own training epoch (tests/gpu/gpu_net: data on the device, one
 * CUDA graph per step, fused SGD) for the MLP or the CNN on Fashion-MNIST, and prints one RESULT
 * line for bench/train_gpu.sh to tabulate. Timing only: correctness lives in tests/gpu. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_net.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    gn_opts o = {GN_CNN, 128, 0.01f, 0.9f, 42, 1};
    int epochs = 5, max_steps = 0, ntrain = 0;
    hone_device dev = HONE_DEV_CUDA;
    hone_math math = HONE_MATH_TF32;
    const char *dir = getenv("HONE_FMNIST_DIR");
    if (!dir)
        dir = "/usr/share/datasets/fashion-mnist";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--arch"))
            o.arch = strcmp(v, "mlp") ? GN_CNN : GN_MLP, i++;
        else if (!strcmp(a, "--batch"))
            o.batch = atoi(v), i++;
        else if (!strcmp(a, "--epochs"))
            epochs = atoi(v), i++;
        else if (!strcmp(a, "--lr"))
            o.lr = (float)atof(v), i++;
        else if (!strcmp(a, "--max-steps"))
            max_steps = atoi(v), i++;
        else if (!strcmp(a, "--ntrain"))
            ntrain = atoi(v), i++;
        else if (!strcmp(a, "--device"))
            dev = strcmp(v, "cpu") ? HONE_DEV_CUDA : HONE_DEV_CPU, i++;
        else if (!strcmp(a, "--math"))
            math = !strcmp(v, "fp32")   ? HONE_MATH_FP32
                   : !strcmp(v, "bf16") ? HONE_MATH_BF16
                                        : HONE_MATH_TF32,
            i++;
        else if (!strcmp(a, "--data"))
            dir = v, i++;
        else if (!strcmp(a, "--no-graph"))
            o.use_graph = 0;
        else {
            fprintf(stderr,
                    "usage: %s [--arch mlp|cnn] [--batch N] [--epochs N] [--lr X] [--device "
                    "cuda|cpu] [--math fp32|tf32|bf16] [--no-graph] [--max-steps N] [--ntrain N] "
                    "[--data DIR]\n",
                    argv[0]);
            return 2;
        }
    }
    hone_kctx *k = NULL;
    int rc = hone_kctx_new(dev, 0, &k);
    if (rc < 0) {
        fprintf(stderr, "train_gpu: no %s device: %s\n", dev ? "cuda" : "cpu", hone_strerror(rc));
        return 77;
    }
    hone_k_set_math(k, math);
    float *xtr, *xte;
    int32_t *ytr, *yte;
    int ntr, nte;
    if ((rc = gn_load_fmnist(dir, 1, &xtr, &ytr, &ntr)) < 0 ||
        (rc = gn_load_fmnist(dir, 0, &xte, &yte, &nte)) < 0) {
        fprintf(stderr, "train_gpu: Fashion-MNIST not found in %s\n", dir);
        return 77;
    }
    if (ntrain > 0 && ntrain < ntr)
        ntr = ntrain;
    gn_net *g = NULL;
    if ((rc = gn_new(k, &o, xtr, ytr, ntr, xte, yte, nte, &g)) < 0) {
        fprintf(stderr, "train_gpu: %s\n", hone_strerror(rc));
        return 1;
    }
    double *sec = calloc((size_t)epochs, sizeof(double)), acc = 0;
    for (int e = 0; e < epochs; e++) {
        double loss, tacc;
        if ((rc = gn_train_epoch(g, e, max_steps, &loss, &tacc, &sec[e])) < 0 ||
            (rc = gn_eval(g, &acc)) < 0) {
            fprintf(stderr, "train_gpu: epoch %d: %s\n", e, hone_strerror(rc));
            return 1;
        }
        printf("epoch %d: %.4f s, loss %.4f, train acc %.4f, test acc %.4f\n", e + 1, sec[e], loss,
               tacc, acc);
    }
    int steps = ntr / o.batch;
    if (max_steps > 0 && steps > max_steps)
        steps = max_steps;
    double first = sec[0];
    if (epochs > 1)
        qsort(sec + 1, (size_t)epochs - 1, sizeof(double), cmp_double);
    double med = epochs > 1 ? sec[1 + (epochs - 1) / 2] : sec[0];
    static const char *mn[] = {"fp32", "tf32", "bf16"};
    printf("RESULT impl=hone%s arch=%s batch=%d math=%s s_per_epoch=%.4f first_epoch=%.4f "
           "img_per_s=%.0f acc=%.4f epochs=%d\n",
           o.use_graph ? "" : "-nograph", o.arch == GN_MLP ? "mlp" : "cnn", o.batch, mn[math], med,
           first, steps * (double)o.batch / med, acc, epochs);
    gn_free(g);
    hone_kctx_free(k);
    free(sec), free(xtr), free(ytr), free(xte), free(yte);
    return 0;
}
