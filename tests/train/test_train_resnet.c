/* tests/train/test_train_resnet.c: the ResNets of train/net.c on the CPU. Their gradients match
 * central finite differences layer by layer (stem, residual branches, skip joins, projection
 * shortcuts, the ImageNet stem's padded pool, the classifier); a tiny ResNet-18 learns
 * Fashion-MNIST far above chance in two epochs; and a run paused after epoch 1 and resumed from
 * its checkpoint ends bit-identical to the uninterrupted one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net.h"
#include "check.h"
#include "train_files.h"

#define FASHION "/usr/share/datasets/fashion-mnist"

static void set(hone_train_spec *s, const char *kv)
{
    char err[256];
    if (hone_train_spec_set(s, kv, err, sizeof err) != HONE_OK) {
        fprintf(stderr, "spec %s: %s\n", kv, err);
        exit(1);
    }
}

/* Mean cross-entropy of the batch in training mode (batch statistics), from the params in p. */
static double loss_at(hone_net *net, const float *p, const float *x, const int32_t *y, int n,
                      float *acc)
{
    hone_kctx *k = net->k;
    hone_k_upload(k, net->params, p, net->nparams * sizeof(float));
    hone_k_fill(k, acc, 0.0f, 2);
    const float *logits = net_forward(net, x, n, 1);
    hone_k_softmax_xent(k, logits, y, n, net->classes, 0, net_dlogits(net), acc, acc + 1);
    float h[2];
    hone_k_sync(k);
    hone_k_download(k, h, acc, sizeof h);
    return (double)h[0] / n;
}

static uint64_t rng = 0x1234567ULL;
static double uniform(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}

/* For each layer with parameters: the analytic gradient along a random +-1 direction over that
 * layer's weights (and, separately, its bias / norm parameters) against the central difference of
 * the loss. A wrong or missing skip or projection gradient breaks the layers before it. */
static void grad_check(const char *network, int c, int hw, int width, int n, int classes)
{
    hone_kctx *k = NULL;
    REQUIRE(hone_kctx_new(HONE_DEV_CPU, 1, &k) == HONE_OK);
    hone_train_spec s;
    hone_train_spec_defaults(&s);
    char kv[64];
    snprintf(kv, sizeof kv, "network=%s", network);
    set(&s, kv);
    s.model.width = width; /* below the spec's range of 8..256 on purpose: net_new takes it */
    hone_net *net = NULL;
    REQUIRE(net_new(k, &s, n, c, hw, hw, classes, &net) == HONE_OK);
    size_t np = net->nparams, nx = (size_t)n * c * hw * hw;
    float *p = malloc(sizeof(float) * np), *g = malloc(sizeof(float) * np);
    float *q = malloc(sizeof(float) * np), *hx = malloc(sizeof(float) * nx);
    hone_k_download(k, p, net->params, np * sizeof(float));
    /* random gammas and betas: zero-initialised ones would hide the branch gradients */
    for (size_t i = net->ndecay; i < np; i++)
        p[i] = (float)(0.5 + uniform());
    for (size_t i = 0; i < nx; i++)
        hx[i] = (float)(2.0 * uniform() - 1.0);
    int32_t hy[8];
    for (int i = 0; i < n; i++)
        hy[i] = i % classes;
    float *x = hone_k_alloc(k, nx * sizeof(float)), *acc = hone_k_alloc(k, 2 * sizeof(float));
    int32_t *y = hone_k_alloc(k, sizeof hy);
    hone_k_upload(k, x, hx, nx * sizeof(float));
    hone_k_upload(k, y, hy, sizeof hy);
    loss_at(net, p, x, y, n, acc);
    net_backward(net, x, n);
    hone_k_sync(k);
    hone_k_download(k, g, net->grads, np * sizeof(float));

    int checked = 0, projections = 0, joins = 0;
    for (int li = 0; li < net->nlayers; li++) {
        const layer *L = &net->layers[li];
        projections += L->kind == L_CONV && L->r == 1;
        joins += L->kind == L_ADD;
        size_t off[2] = {0, 0}, len[2] = {0, 0};
        if (L->kind == L_CONV || L->kind == L_DENSE) {
            off[0] = L->w_off;
            len[0] = (size_t)L->oc * L->c * (L->kind == L_CONV ? L->r * L->r : L->h * L->w);
        }
        if (L->kind == L_DENSE || (L->kind == L_CONV && L->bias))
            off[1] = L->b_off, len[1] = (size_t)L->oc;
        if (L->kind == L_BN)
            off[1] = L->b_off, len[1] = 2 * (size_t)L->c;
        for (int part = 0; part < 2; part++) {
            if (!len[part])
                continue;
            /* a few random entries along +-1: fewer ReLU and max-pool kinks crossed than moving
             * the whole layer; the best of a few step sizes, since float32 losses are noisy at
             * small steps and kinks bite at large ones (a wrong gradient fits none of them) */
            double dir = 0, best = INFINITY, bfd = 0;
            size_t pick[4];
            signed char v[4];
            for (int j = 0; j < 4; j++) {
                pick[j] = off[part] + (size_t)(uniform() * (double)len[part]);
                v[j] = uniform() < 0.5 ? -1 : 1;
                dir += v[j] * (double)g[pick[j]];
            }
            static const double steps[] = {1e-2, 3e-3, 1e-3, 3e-4};
            for (int e = 0; e < 4; e++) {
                double eps = steps[e];
                memcpy(q, p, sizeof(float) * np);
                for (int j = 0; j < 4; j++) /* a pick twice moves twice: dir counts it twice */
                    q[pick[j]] = (float)(q[pick[j]] + eps * v[j]);
                double lp = loss_at(net, q, x, y, n, acc);
                memcpy(q, p, sizeof(float) * np);
                for (int j = 0; j < 4; j++)
                    q[pick[j]] = (float)(q[pick[j]] - eps * v[j]);
                double lm = loss_at(net, q, x, y, n, acc);
                double fd = (lp - lm) / (2 * eps);
                /* 2% relative, with a floor for small gradients; norm parameters move a whole
                 * channel across the next ReLU's kink at once, so theirs is wider */
                double err =
                    fabs(fd - dir) / (0.02 * fmax(fabs(fd), fabs(dir)) + (part ? 6e-3 : 2e-3));
                if (err < best)
                    best = err, bfd = fd;
            }
            if (!(best <= 1.0)) {
                fprintf(stderr,
                        "%s layer %d (kind %d, %s): analytic %.6g, finite difference %.6g\n",
                        network, li, L->kind, part ? "bias/norm" : "weights", dir, bfd);
                failures++;
            }
            checked++;
        }
    }
    fprintf(stderr, "%s %dx%dx%d width %d: %d parameter groups checked, %d joins, %d projections\n",
            network, c, hw, hw, width, checked, joins, projections);
    if (strcmp(network, "cnn")) {
        CHECK(joins == (strcmp(network, "resnet18") == 0 ? 8 : 16));
        CHECK(projections == 3);
    }
    hone_k_free(k, x);
    hone_k_free(k, acc);
    hone_k_free(k, y);
    net_free(net);
    hone_kctx_free(k);
    free(p), free(g), free(q), free(hx);
}

typedef struct {
    hone_train_epoch e[4];
    int n;
} history;

static int record(const hone_train_epoch *e, void *user)
{
    history *h = user;
    if (h->n < 4)
        h->e[h->n++] = *e;
    return 0;
}

static int run(const hone_train_spec *s, const char *out, const char *resume, int until, history *h,
               hone_train_result *res)
{
    hone_train_opts o = {.spec = s,
                         .device = "cpu",
                         .threads = 2,
                         .out_dir = out,
                         .resume_path = resume,
                         .epochs_until = until,
                         .on_epoch = record,
                         .user = h};
    char err[512] = "";
    int rc = hone_train_run(&o, res, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "hone_train_run: %s\n", err);
    return rc;
}

static void fashion_spec(hone_train_spec *s, const char *dir, int train, int epochs)
{
    hone_train_spec_defaults(s);
    set(s, "network=resnet18");
    snprintf(s->data.path, sizeof(s->data.path), "%s", dir);
    s->data.train_limit = train;
    s->data.val_size = 500;
    s->data.test_limit = 1000;
    s->train.epochs = epochs;
    s->train.batch_size = 64;
    s->model.width = 8;
}

int main(void)
{
    grad_check("cnn", 3, 16, 4, 3, 5);      /* the harness on the sequential reference */
    grad_check("resnet18", 3, 16, 4, 3, 5); /* small-image stem */
    grad_check("resnet18", 1, 8, 6, 4, 3);  /* grey; stage 4 at 1x1 */
    grad_check("resnet34", 3, 72, 4, 2, 4); /* ImageNet stem: 7x7/2 conv, padded 3x3/2 pool */

    const char *dir = getenv("HONE_FASHION_MNIST") ? getenv("HONE_FASHION_MNIST") : FASHION;
    char probe[512];
    snprintf(probe, sizeof(probe), "%s/train-images-idx3-ubyte.gz", dir);
    if (access(probe, R_OK) != 0) {
        fprintf(stderr,
                "test_train_resnet: Fashion-MNIST not found in %s (install "
                "dataset-fashion-mnist or set HONE_FASHION_MNIST)\n",
                dir);
        return 1;
    }
    /* a tiny ResNet-18 learns far above chance (10%) */
    hone_train_spec s;
    hone_train_result r;
    history h = {0};
    fashion_spec(&s, dir, 2000, 2);
    CHECK(run(&s, NULL, NULL, 0, &h, &r) == HONE_OK);
    fprintf(stderr, "resnet18 width 8, 2000 images, 2 epochs: test accuracy %.4f\n",
            r.test_accuracy);
    CHECK(r.finished && r.test_accuracy > 0.3); /* 3x chance; 0.43 seen */

    /* pause after epoch 1 + resume == uninterrupted (batch-norm statistics, augmentation
     * counters, momentum), down to the bytes of model.bin */
    fashion_spec(&s, dir, 512, 2);
    s.augment.flip = 1;
    s.augment.crop_padding = 2;
    s.model.dropout = 0.1;
    char a[] = "/tmp/hone-resnet-a-XXXXXX", b[] = "/tmp/hone-resnet-b-XXXXXX";
    CHECK(mkdtemp(a) && mkdtemp(b));
    history ha = {0}, hb = {0};
    hone_train_result ra, rb;
    CHECK(run(&s, a, NULL, 0, &ha, &ra) == HONE_OK);
    CHECK(run(&s, b, NULL, 1, &hb, &rb) == HONE_OK);
    char ck[512];
    snprintf(ck, sizeof(ck), "%s/checkpoint.bin", b);
    CHECK(run(&s, b, ck, 0, &hb, &rb) == HONE_OK);
    CHECK(rb.finished && hb.n == 2 && ha.n == 2);
    for (int i = 0; i < 2 && i < hb.n; i++)
        CHECK(ha.e[i].train_loss == hb.e[i].train_loss);
    CHECK(ra.test_accuracy == rb.test_accuracy && ra.test_loss == rb.test_loss);
    char pa[512], pb[512];
    unsigned char *ma = NULL, *mb = NULL;
    snprintf(pa, sizeof(pa), "%s/model.bin", a);
    snprintf(pb, sizeof(pb), "%s/model.bin", b);
    long na = read_file(pa, &ma), nb = read_file(pb, &mb);
    CHECK(na > 0 && na == nb && memcmp(ma, mb, (size_t)na) == 0);
    free(ma), free(mb);
    /* another width is another network: its checkpoint is refused */
    hone_train_spec other = s;
    other.model.width = 16;
    CHECK(run(&other, NULL, ck, 0, &h, &r) == HONE_EINVAL);
    rm_out(a);
    rm_out(b);

    if (failures)
        fprintf(stderr, "test_train_resnet: %d failure(s)\n", failures);
    return failures != 0;
}
