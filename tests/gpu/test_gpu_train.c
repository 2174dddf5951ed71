/* tests/gpu/test_gpu_train.c: whole training steps on CUDA against the CPU backend (same init,
 * same shuffled batches: the parameter updates must agree to fp32 rounding), graph replay against
 * eager launches, and a short training run that must reach the same accuracy on both backends.
 * Exits 77 (skipped) without a GPU or without the Fashion-MNIST files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_net.h"

static int failures;

static double delta_err(const float *w0, const float *a, const float *b, size_t n)
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

typedef struct {
    const float *xtr, *xte;
    const int32_t *ytr, *yte;
    int ntr, nte;
} dataset;

static gn_net *make(hone_kctx *k, gn_arch a, int batch, int graph, const dataset *d)
{
    gn_opts o = {a, batch, 0.01f, 0.9f, 1234, graph};
    gn_net *g = NULL;
    int rc = gn_new(k, &o, d->xtr, d->ytr, d->ntr, d->xte, d->yte, d->nte, &g);
    if (rc < 0) {
        fprintf(stderr, "gn_new: %s\n", hone_strerror(rc));
        exit(1);
    }
    return g;
}

/* Runs `steps` steps on CPU, CUDA eager and CUDA graph; compares the parameter updates. */
static void check_steps(hone_kctx *cpu, hone_kctx *gpu, gn_arch a, int steps, double tol,
                        const dataset *d)
{
    gn_net *nc = make(cpu, a, 64, 0, d), *ne = make(gpu, a, 64, 0, d), *ng = make(gpu, a, 64, 1, d);
    float *w0, *wc, *we, *wg;
    size_t n;
    double l, acc, s;
    gn_params(nc, &w0, &n);
    int rc = gn_train_epoch(nc, 0, steps, &l, &acc, &s);
    if (rc == HONE_OK)
        rc = gn_train_epoch(ne, 0, steps, &l, &acc, &s);
    if (rc == HONE_OK)
        rc = gn_train_epoch(ng, 0, steps, &l, &acc, &s);
    if (rc < 0) {
        fprintf(stderr, "train: %s\n", hone_strerror(rc));
        failures++;
        return;
    }
    gn_params(nc, &wc, &n);
    gn_params(ne, &we, &n);
    gn_params(ng, &wg, &n);
    double e1 = delta_err(w0, we, wc, n), e2 = delta_err(w0, wg, we, n);
    fprintf(stderr,
            "%s %d step(s): update rel err cuda-vs-cpu %.3g (tol %g), graph-vs-eager %.3g\n",
            a == GN_MLP ? "mlp" : "cnn", steps, e1, tol, e2);
    if (!(e1 <= tol) || !(e2 <= 1e-4))
        failures++;
    free(w0), free(wc), free(we), free(wg);
    gn_free(nc), gn_free(ne), gn_free(ng);
}

static void check_training(hone_kctx *cpu, hone_kctx *gpu, gn_arch a, const dataset *d,
                           double min_acc, double max_gap)
{
    gn_net *nc = make(cpu, a, 128, 0, d), *ng = make(gpu, a, 128, 1, d);
    double l, tr, s, ac = 0, ag = 0, sc = 0, sg = 0;
    int rc = gn_train_epoch(nc, 0, 0, &l, &tr, &sc);
    if (rc == HONE_OK)
        rc = gn_train_epoch(ng, 0, 0, &l, &tr, &sg);
    if (rc == HONE_OK)
        rc = gn_eval(nc, &ac);
    if (rc == HONE_OK)
        rc = gn_eval(ng, &ag);
    (void)s;
    fprintf(stderr, "%s 1 epoch on %d images: test acc cpu %.4f (%.2fs) cuda %.4f (%.3fs)\n",
            a == GN_MLP ? "mlp" : "cnn", d->ntr, ac, sc, ag, sg);
    if (rc < 0 || ac < min_acc || ag < min_acc || fabs(ac - ag) > max_gap) {
        fprintf(stderr, "  FAIL (min %.2f, max gap %.3f)%s\n", min_acc, max_gap,
                rc < 0 ? hone_strerror(rc) : "");
        failures++;
    }
    gn_free(nc), gn_free(ng);
}

int main(void)
{
    hone_kctx *gpu = NULL, *cpu = NULL;
    if (hone_kctx_new(HONE_DEV_CUDA, 0, &gpu) != HONE_OK) {
        fprintf(stderr, "skipped: no CUDA device\n");
        return 77;
    }
    const char *dir = getenv("HONE_FMNIST_DIR");
    dataset full;
    float *xtr, *xte;
    int32_t *ytr, *yte;
    if (!dir)
        dir = "/usr/share/datasets/fashion-mnist";
    if (gn_load_fmnist(dir, 1, &xtr, &ytr, &full.ntr) < 0 ||
        gn_load_fmnist(dir, 0, &xte, &yte, &full.nte) < 0) {
        fprintf(stderr, "skipped: Fashion-MNIST not found in %s (set HONE_FMNIST_DIR)\n", dir);
        hone_kctx_free(gpu);
        return 77;
    }
    full.xtr = xtr, full.ytr = ytr, full.xte = xte, full.yte = yte;
    if (hone_kctx_new(HONE_DEV_CPU, 0, &cpu) != HONE_OK)
        return 1;
    dataset small = full;
    small.ntr = 4096, small.nte = 1000;
    check_steps(cpu, gpu, GN_MLP, 1, 1e-4, &small);
    check_steps(cpu, gpu, GN_CNN, 1, 1e-4, &small);
    check_steps(cpu, gpu, GN_MLP, 20, 2e-3, &small);
    check_steps(cpu, gpu, GN_CNN, 20, 2e-3, &small);
    check_training(cpu, gpu, GN_MLP, &full, 0.80, 0.01);
    dataset part = full;
    part.ntr = 6400, part.nte = 2000;
    check_training(cpu, gpu, GN_CNN, &part, 0.65, 0.02);
    hone_kctx_free(cpu);
    hone_kctx_free(gpu);
    free(xtr), free(ytr), free(xte), free(yte);
    fprintf(stderr, "test_gpu_train: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
