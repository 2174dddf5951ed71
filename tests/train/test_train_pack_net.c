/* tests/train/test_train_pack_net.c: the fused step of packed trials (train/net.c with trials > 1)
 * against the same trials as solo networks on the CPU: 4 trials with their own seeds, dropout
 * probabilities, learning rates, momenta and weight decays, each fed its own batches, trained a
 * few SGD steps (one of them a short batch) and evaluated. Each trial's parameters, gradients,
 * batch-norm statistics, random counters and logits must equal its solo network's byte for byte
 * (cnn, cnn with batch norm, mlp). Networks that do not agree, and resnets, are refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "net.h"

#define T 4
#define B 8
#define SIDE 12
#define CLASSES 10

static void fill(float *x, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t z = (seed += 0x9E3779B97F4A7C15ULL) ^ (i * 0xBF58476D1CE4E5B9ULL);
        z = (z ^ (z >> 31)) * 0x94D049BB133111EBULL;
        x[i] = (float)((z >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
    }
}

/* Host copy of n bytes at dev. */
static void *get(hone_kctx *k, const void *dev, size_t n)
{
    void *h = malloc(n ? n : 1);
    hone_k_sync(k);
    hone_k_download(k, h, dev, n);
    return h;
}

/* Trial t's slice of the packed buffer equals the solo buffer, byte for byte. */
static int same(hone_kctx *k, const void *packed, size_t t, const void *solo, size_t bytes,
                const char *what)
{
    unsigned char *a = get(k, (const unsigned char *)packed + t * bytes, bytes);
    unsigned char *b = get(k, solo, bytes);
    int ok = memcmp(a, b, bytes) == 0;
    if (!ok)
        fprintf(stderr, "trial %zu: %s differs from its solo run\n", t, what);
    free(a);
    free(b);
    return ok;
}

typedef struct {
    hone_net *net;
    float *x, *v, *acc;
    int32_t *y;
} run;

/* One step of every trial in r (trials of them, packed or one solo): forward, the loss into each
 * trial's accumulators and, when training, backward and each trial's SGD step (as loop.c's). */
static void run_step(hone_kctx *k, run *r, const hone_train_spec *const *specs, int trials, int n,
                     int training)
{
    hone_net *net = r->net;
    const float *logits = net_forward(net, r->x, n, training);
    for (int t = 0; t < trials; t++)
        hone_k_softmax_xent(k, logits + (size_t)t * n * CLASSES, r->y + (size_t)t * n, n, CLASSES,
                            training ? (float)specs[t]->train.label_smoothing : 0.0f,
                            training ? net_dlogits(net) + (size_t)t * n * CLASSES : NULL,
                            r->acc + 2 * t, r->acc + 2 * t + 1);
    if (!training)
        return;
    net_backward(net, r->x, n);
    size_t P = net->nparams, nd = net->ndecay;
    for (int t = 0; t < trials; t++) {
        const hone_train_spec *s = specs[t];
        float *w = net->params + t * P, *g = net->grads + t * P, *v = r->v + t * P;
        float lr = (float)s->train.lr, mu = (float)s->train.momentum;
        hone_k_sgd_step(k, w, g, v, nd, lr, NULL, mu, (float)s->train.weight_decay,
                        s->train.nesterov);
        hone_k_sgd_step(k, w + nd, g + nd, v + nd, P - nd, lr, NULL, mu, 0.0f, s->train.nesterov);
    }
}

static void run_new(hone_kctx *k, run *r, const hone_train_spec *const *specs, int trials)
{
    memset(r, 0, sizeof(*r));
    REQUIRE(net_new_pack(k, specs, trials, B, 1, SIDE, SIDE, CLASSES, &r->net) == HONE_OK);
    size_t P = r->net->nparams * (size_t)trials;
    r->v = hone_k_alloc(k, P * sizeof(float));
    hone_k_fill(k, r->v, 0.0f, P);
    r->acc = hone_k_alloc(k, 2 * (size_t)trials * sizeof(float));
    hone_k_fill(k, r->acc, 0.0f, 2 * (size_t)trials);
    r->x = hone_k_alloc(k, (size_t)trials * B * SIDE * SIDE * sizeof(float));
    r->y = hone_k_alloc(k, (size_t)trials * B * sizeof(int32_t));
}

static void run_free(hone_kctx *k, run *r)
{
    net_free(r->net);
    hone_k_free(k, r->v);
    hone_k_free(k, r->acc);
    hone_k_free(k, r->x);
    hone_k_free(k, r->y);
}

/* Every trial's slice of the packed run equals its solo run. */
static void compare(hone_kctx *k, run *p, run *solo, const char *when)
{
    int before = failures;
    hone_net *pn = p->net;
    for (int t = 0; t < T; t++) {
        hone_net *sn = solo[t].net;
        size_t P = pn->nparams * sizeof(float);
        CHECK(pn->nparams == sn->nparams && pn->nstate == sn->nstate);
        CHECK(same(k, pn->params, (size_t)t, sn->params, P, "params"));
        CHECK(same(k, p->v, (size_t)t, solo[t].v, P, "momentum"));
        if (pn->nstate)
            CHECK(same(k, pn->state, (size_t)t, sn->state, pn->nstate * sizeof(float),
                       "batch-norm statistics"));
        CHECK(same(k, pn->counters, (size_t)t, sn->counters,
                   (size_t)pn->ncounters * sizeof(uint64_t), "counters"));
        CHECK(same(k, p->acc, (size_t)t, solo[t].acc, 2 * sizeof(float), "loss and accuracy"));
    }
    if (failures > before)
        fprintf(stderr, "... %s\n", when);
}

/* Different batches for every trial and step: the packed input holds trial t's at t * n. */
static void feed(hone_kctx *k, run *p, run *solo, int n, uint64_t seed)
{
    size_t nx = (size_t)n * SIDE * SIDE;
    float *x = malloc(sizeof(float) * nx * T);
    int32_t *y = malloc(sizeof(int32_t) * (size_t)n * T);
    fill(x, nx * T, seed);
    for (int i = 0; i < n * T; i++)
        y[i] = (int32_t)((seed * 7 + (uint64_t)i * 13) % CLASSES);
    hone_k_upload(k, p->x, x, sizeof(float) * nx * T);
    hone_k_upload(k, p->y, y, sizeof(int32_t) * (size_t)n * T);
    for (int t = 0; t < T; t++) {
        hone_k_upload(k, solo[t].x, x + t * nx, sizeof(float) * nx);
        hone_k_upload(k, solo[t].y, y + (size_t)t * n, sizeof(int32_t) * (size_t)n);
    }
    free(x);
    free(y);
}

static void check_pack(hone_kctx *k, const char *network, int batchnorm, double dropout)
{
    hone_train_spec specs[T];
    const hone_train_spec *sp[T];
    for (int t = 0; t < T; t++) {
        hone_train_spec_defaults(&specs[t]);
        snprintf(specs[t].network, sizeof(specs[t].network), "%s", network);
        specs[t].model.hidden = 24;
        specs[t].model.depth = 2;
        specs[t].model.batchnorm = batchnorm;
        specs[t].model.dropout = dropout > 0 ? dropout + 0.1 * t : 0.0;
        specs[t].train.seed = 1000 + 17 * (uint64_t)t;
        specs[t].train.lr = 0.01 * (t + 1);
        specs[t].train.momentum = 0.5 + 0.1 * t;
        specs[t].train.weight_decay = 1e-4 * t;
        specs[t].train.nesterov = t % 2;
        sp[t] = &specs[t];
    }
    fprintf(stderr, "--- %s batchnorm %d dropout %g\n", network, batchnorm, dropout);
    run p, solo[T];
    run_new(k, &p, sp, T);
    for (int t = 0; t < T; t++)
        run_new(k, &solo[t], &sp[t], 1);
    compare(k, &p, solo, "initialised");
    int ns[4] = {B, B, 5, B}; /* a short batch: the layout follows the call's n */
    for (int s = 0; s < 4; s++) {
        feed(k, &p, solo, ns[s], 77 + (uint64_t)s);
        run_step(k, &p, sp, T, ns[s], 1);
        for (int t = 0; t < T; t++)
            run_step(k, &solo[t], &sp[t], 1, ns[s], 1);
    }
    compare(k, &p, solo, "after 4 steps");
    /* gradients of the last step */
    for (int t = 0; t < T; t++)
        CHECK(same(k, p.net->grads, (size_t)t, solo[t].net->grads, p.net->nparams * sizeof(float),
                   "gradients"));
    /* evaluation (inference-mode batch norm and dropout) of 6 samples each */
    feed(k, &p, solo, 6, 999);
    const float *pl = net_forward(p.net, p.x, 6, 0);
    for (int t = 0; t < T; t++) {
        const float *sl = net_forward(solo[t].net, solo[t].x, 6, 0);
        CHECK(same(k, pl, (size_t)t, sl, 6 * CLASSES * sizeof(float), "evaluation logits"));
    }
    run_free(k, &p);
    for (int t = 0; t < T; t++)
        run_free(k, &solo[t]);
}

static void check_refusals(hone_kctx *k)
{
    hone_train_spec a, b;
    hone_train_spec_defaults(&a);
    hone_train_spec_defaults(&b);
    snprintf(a.network, sizeof(a.network), "cnn");
    snprintf(b.network, sizeof(b.network), "cnn");
    a.model.hidden = 24;
    b.model.hidden = 32;
    const hone_train_spec *ab[2] = {&a, &b};
    hone_net *net = NULL;
    CHECK(net_new_pack(k, ab, 2, B, 1, SIDE, SIDE, CLASSES, &net) == HONE_EINVAL && !net);
    b.model.hidden = 24;
    b.model.dropout = a.model.dropout > 0 ? 0.0 : 0.3; /* a dropout layer in one only */
    CHECK(net_new_pack(k, ab, 2, B, 1, SIDE, SIDE, CLASSES, &net) == HONE_EINVAL && !net);
    snprintf(a.network, sizeof(a.network), "resnet18");
    snprintf(b.network, sizeof(b.network), "resnet18");
    a.model.width = b.model.width = 4;
    b.model.dropout = a.model.dropout;
    CHECK(net_new_pack(k, ab, 2, B, 3, 16, 16, CLASSES, &net) == HONE_EINVAL && !net);
    CHECK(net_new_pack(k, ab, 1, B, 3, 16, 16, CLASSES, &net) == HONE_OK && net);
    net_free(net);
    CHECK(net_new_pack(k, ab, 0, B, 3, 16, 16, CLASSES, &net) == HONE_EINVAL);
}

int main(void)
{
    hone_kctx *k = NULL;
    REQUIRE(hone_kctx_new(HONE_DEV_CPU, 2, &k) == HONE_OK);
    check_pack(k, "cnn", 0, 0.2);
    check_pack(k, "cnn", 1, 0.1);
    check_pack(k, "mlp", 1, 0.2);
    check_pack(k, "mlp", 0, 0.0);
    check_refusals(k);
    hone_kctx_free(k);
    fprintf(stderr, "test_train_pack_net: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
