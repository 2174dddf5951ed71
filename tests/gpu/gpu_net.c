/* tests/gpu/gpu_net.c: the small trainer of gpu_net.h. Parameters, gradients and momenta each
 * live in one flat buffer so the optimiser is a single launch; all ops go through kernels.h, so
 * the same code runs on the CPU and CUDA backends. No globals. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_net.h"

#define FM_MEAN 0.2860f
#define FM_STD 0.3530f

static int read_idx(const char *path, int want_magic, uint8_t **data, int dims[3])
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "gzip -dc '%s' 2>/dev/null", path);
    FILE *f = popen(cmd, "r");
    if (!f)
        return HONE_EIO;
    uint8_t hdr[16];
    int nd = want_magic == 0x803 ? 3 : 1, rc = HONE_ENOENT;
    size_t total = 1;
    *data = NULL;
    if (fread(hdr, 1, 4 + 4 * nd, f) != (size_t)(4 + 4 * nd))
        goto done;
    rc = HONE_EPARSE;
    if (((hdr[2] << 8) | hdr[3]) != want_magic)
        goto done;
    for (int i = 0; i < nd; i++) {
        const uint8_t *p = hdr + 4 + 4 * i;
        dims[i] = (int)(((uint32_t)p[0] << 24) | (p[1] << 16) | (p[2] << 8) | p[3]);
        total *= (size_t)dims[i];
    }
    *data = hone_xmalloc(total);
    if (fread(*data, 1, total, f) != total) {
        free(*data);
        *data = NULL;
        goto done;
    }
    rc = HONE_OK;
done:
    pclose(f);
    return rc;
}

int gn_load_fmnist(const char *dir, int train, float **x, int32_t **y, int *n)
{
    char pi[512], pl[512];
    const char *pre = train ? "train" : "t10k";
    snprintf(pi, sizeof(pi), "%s/%s-images-idx3-ubyte.gz", dir, pre);
    snprintf(pl, sizeof(pl), "%s/%s-labels-idx1-ubyte.gz", dir, pre);
    uint8_t *img = NULL, *lab = NULL;
    int di[3], dl[3];
    int rc = read_idx(pi, 0x803, &img, di);
    if (rc == HONE_OK)
        rc = read_idx(pl, 0x801, &lab, dl);
    if (rc == HONE_OK && (di[0] != dl[0] || di[1] != 28 || di[2] != 28))
        rc = HONE_EPARSE;
    if (rc != HONE_OK)
        goto fail;
    *n = di[0];
    *x = hone_xmalloc(sizeof(float) * (size_t)di[0] * 784);
    *y = hone_xmalloc(sizeof(int32_t) * (size_t)di[0]);
    for (size_t i = 0; i < (size_t)di[0] * 784; i++)
        (*x)[i] = (img[i] / 255.0f - FM_MEAN) / FM_STD;
    for (int i = 0; i < di[0]; i++)
        (*y)[i] = lab[i];
fail:
    free(img);
    free(lab);
    return rc;
}

/* Parameter tensors in the flat buffer, in order. Linear weights are [out, in] (PyTorch). */
enum { MAXT = 8 };

struct gn_net {
    hone_kctx *k;
    gn_opts o;
    int ntrain, ntest, nt;
    size_t off[MAXT], len[MAXT], nparam;
    float *w, *gw, *v; /* flat params, grads, momenta */
    float *xtr, *xte;
    int32_t *ytr, *yte, *idx, *base, *zero_int;
    float *acc; /* [loss_sum, correct] */
    /* activations, sized for one batch */
    float *xb, *a1, *p1, *a2, *p2, *h1, *logits, *dlog, *dh1, *dp2, *da2, *dp1, *da1;
    int32_t *yb, *i1, *i2;
    void *ws;
    hone_conv_desc c1, c2;
    hone_kgraph *graph;
    int err;
};

#define P(g, i) ((g)->w + (g)->off[i])
#define G(g, i) ((g)->gw + (g)->off[i])
#define CK(expr)                                                                                   \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ < 0 && !g->err)                                                                    \
            g->err = rc_;                                                                          \
    } while (0)

static void add_tensor(gn_net *g, size_t n)
{
    g->off[g->nt] = g->nparam;
    g->len[g->nt++] = n;
    g->nparam += n;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Linear layer forward: y[n,out] = x[n,in] W^T + b. */
static void fc_fwd(gn_net *g, int n, int in, int out, const float *x, int ti, float *y)
{
    CK(hone_k_gemm(g->k, 0, 1, n, out, in, 1.f, x, in, P(g, ti), in, 0.f, y, out));
    CK(hone_k_bias_add(g->k, y, P(g, ti + 1), n, out));
}

/* dW = dy^T x, db = sum dy, dx = dy W (dx may be NULL). */
static void fc_bwd(gn_net *g, int n, int in, int out, const float *x, const float *dy, int ti,
                   float *dx)
{
    CK(hone_k_gemm(g->k, 1, 0, out, in, n, 1.f, dy, out, x, in, 0.f, G(g, ti), in));
    CK(hone_k_bias_grad(g->k, G(g, ti + 1), dy, n, out, 0));
    if (dx)
        CK(hone_k_gemm(g->k, 0, 0, n, in, out, 1.f, dy, out, P(g, ti), in, 0.f, dx, in));
}

/* Forward of n rows of g->xb into g->logits. */
static void forward(gn_net *g, int n)
{
    hone_kctx *k = g->k;
    if (g->o.arch == GN_MLP) {
        fc_fwd(g, n, 784, 256, g->xb, 0, g->h1);
        CK(hone_k_relu_fwd(k, g->h1, g->h1, (size_t)n * 256));
        fc_fwd(g, n, 256, 10, g->h1, 2, g->logits);
        return;
    }
    hone_conv_desc c1 = g->c1, c2 = g->c2;
    c1.n = c2.n = n;
    /* conv -> relu -> pool as one fused pool+relu pass (relu and max-pool commute) */
    CK(hone_k_conv_fwd(k, &c1, g->xb, P(g, 0), P(g, 1), g->a1, g->ws));
    CK(hone_k_maxpool_relu_fwd(k, n, 32, 28, 28, 2, 2, g->a1, g->p1, g->i1));
    CK(hone_k_conv_fwd(k, &c2, g->p1, P(g, 2), P(g, 3), g->a2, g->ws));
    CK(hone_k_maxpool_relu_fwd(k, n, 64, 14, 14, 2, 2, g->a2, g->p2, g->i2));
    fc_fwd(g, n, 3136, 128, g->p2, 4, g->h1);
    CK(hone_k_relu_fwd(k, g->h1, g->h1, (size_t)n * 128));
    fc_fwd(g, n, 128, 10, g->h1, 6, g->logits);
}

static void backward(gn_net *g, int n)
{
    hone_kctx *k = g->k;
    if (g->o.arch == GN_MLP) {
        fc_bwd(g, n, 256, 10, g->h1, g->dlog, 2, g->dh1);
        CK(hone_k_relu_bwd(k, g->h1, g->dh1, g->dh1, (size_t)n * 256));
        fc_bwd(g, n, 784, 256, g->xb, g->dh1, 0, NULL);
        return;
    }
    fc_bwd(g, n, 128, 10, g->h1, g->dlog, 6, g->dh1);
    CK(hone_k_relu_bwd(k, g->h1, g->dh1, g->dh1, (size_t)n * 128));
    fc_bwd(g, n, 3136, 128, g->p2, g->dh1, 4, g->dp2);
    CK(hone_k_maxpool_relu_bwd(k, n, 64, 14, 14, 2, 2, g->p2, g->dp2, g->i2, g->da2));
    /* conv2's forward was the last op to write ws (conv1 runs before it): reuse its columns */
    CK(hone_k_conv_bwd_reuse(k, &g->c2, g->p1, P(g, 2), g->da2, g->dp1, G(g, 2), G(g, 3), g->ws));
    CK(hone_k_maxpool_relu_bwd(k, n, 32, 28, 28, 2, 2, g->p1, g->dp1, g->i1, g->da1));
    CK(hone_k_conv_bwd(k, &g->c1, g->xb, P(g, 0), g->da1, NULL, G(g, 0), G(g, 1), g->ws));
}

static void train_step(void *arg)
{
    gn_net *g = arg;
    int B = g->o.batch;
    CK(hone_k_gather_rows(g->k, g->xtr, g->ytr, g->idx, g->base, 0, B, 784, g->xb, g->yb));
    forward(g, B);
    CK(hone_k_softmax_xent(g->k, g->logits, g->yb, B, 10, g->dlog, g->acc, g->acc + 1));
    backward(g, B);
    CK(hone_k_sgd_step(g->k, g->w, g->gw, g->v, g->nparam, g->o.lr, NULL, g->o.momentum, 0.f, 0));
    CK(hone_k_counter_add(g->k, g->base, B));
}

static float *dalloc(gn_net *g, size_t n)
{
    return hone_k_alloc(g->k, sizeof(float) * (n ? n : 1));
}

int gn_new(hone_kctx *k, const gn_opts *o, const float *xtr, const int32_t *ytr, int ntrain,
           const float *xte, const int32_t *yte, int ntest, gn_net **out)
{
    gn_net *g = hone_xcalloc(1, sizeof(*g));
    g->k = k;
    g->o = *o;
    g->ntrain = ntrain;
    g->ntest = ntest;
    int B = o->batch, rc;
    size_t fan[MAXT];
    if (o->arch == GN_MLP) {
        add_tensor(g, 256 * 784), fan[0] = 784;
        add_tensor(g, 256), fan[1] = 784;
        add_tensor(g, 10 * 256), fan[2] = 256;
        add_tensor(g, 10), fan[3] = 256;
    } else {
        hone_conv_desc_init(&g->c1, B, 1, 28, 28, 32, 3, 3, 1, 1);
        hone_conv_desc_init(&g->c2, B, 32, 14, 14, 64, 3, 3, 1, 1);
        add_tensor(g, 32 * 9), fan[0] = 9;
        add_tensor(g, 32), fan[1] = 9;
        add_tensor(g, 64 * 32 * 9), fan[2] = 288;
        add_tensor(g, 64), fan[3] = 288;
        add_tensor(g, 128 * 3136), fan[4] = 3136;
        add_tensor(g, 128), fan[5] = 3136;
        add_tensor(g, 10 * 128), fan[6] = 128;
        add_tensor(g, 10), fan[7] = 128;
    }
    /* PyTorch's default init: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases */
    float *hw = hone_xmalloc(sizeof(float) * g->nparam);
    uint64_t s = o->seed;
    for (int t = 0; t < g->nt; t++) {
        float bound = 1.0f / sqrtf((float)fan[t]);
        for (size_t i = 0; i < g->len[t]; i++)
            hw[g->off[t] + i] = bound * (2.0f * (float)((splitmix(&s) >> 40) / 16777216.0) - 1.f);
    }
    g->w = dalloc(g, g->nparam);
    g->gw = dalloc(g, g->nparam);
    g->v = dalloc(g, g->nparam);
    if ((rc = hone_k_upload(k, g->w, hw, sizeof(float) * g->nparam)) < 0 ||
        (rc = hone_k_fill(k, g->v, 0.f, g->nparam)) < 0 ||
        (rc = hone_k_fill(k, g->gw, 0.f, g->nparam)) < 0)
        goto fail;
    g->xtr = dalloc(g, (size_t)ntrain * 784);
    g->xte = dalloc(g, (size_t)ntest * 784);
    g->ytr = hone_k_alloc(k, sizeof(int32_t) * ntrain);
    g->yte = hone_k_alloc(k, sizeof(int32_t) * (ntest ? ntest : 1));
    g->idx = hone_k_alloc(k, sizeof(int32_t) * ntrain);
    g->base = hone_k_alloc(k, sizeof(int32_t));
    g->zero_int = hone_k_alloc(k, sizeof(int32_t));
    g->acc = dalloc(g, 2);
    int32_t zero = 0;
    if ((rc = hone_k_upload(k, g->xtr, xtr, sizeof(float) * (size_t)ntrain * 784)) < 0 ||
        (rc = hone_k_upload(k, g->ytr, ytr, sizeof(int32_t) * ntrain)) < 0 ||
        (rc = hone_k_upload(k, g->xte, xte, sizeof(float) * (size_t)ntest * 784)) < 0 ||
        (rc = hone_k_upload(k, g->yte, yte, sizeof(int32_t) * ntest)) < 0 ||
        (rc = hone_k_upload(k, g->zero_int, &zero, sizeof(zero))) < 0 ||
        (rc = hone_k_upload(k, g->base, &zero, sizeof(zero))) < 0)
        goto fail;
    g->xb = dalloc(g, (size_t)B * 784);
    g->yb = hone_k_alloc(k, sizeof(int32_t) * B);
    g->h1 = dalloc(g, (size_t)B * 256);
    g->dh1 = dalloc(g, (size_t)B * 256);
    g->logits = dalloc(g, (size_t)B * 10);
    g->dlog = dalloc(g, (size_t)B * 10);
    if (o->arch == GN_CNN) {
        g->a1 = dalloc(g, (size_t)B * 32 * 784);
        g->da1 = dalloc(g, (size_t)B * 32 * 784);
        g->p1 = dalloc(g, (size_t)B * 32 * 196);
        g->dp1 = dalloc(g, (size_t)B * 32 * 196);
        g->a2 = dalloc(g, (size_t)B * 64 * 196);
        g->da2 = dalloc(g, (size_t)B * 64 * 196);
        g->p2 = dalloc(g, (size_t)B * 3136);
        g->dp2 = dalloc(g, (size_t)B * 3136);
        g->i1 = hone_k_alloc(k, sizeof(int32_t) * B * 32 * 196);
        g->i2 = hone_k_alloc(k, sizeof(int32_t) * B * 3136);
        size_t w1 = hone_k_conv_workspace(k, &g->c1), w2 = hone_k_conv_workspace(k, &g->c2);
        g->ws = hone_k_alloc(k, w1 > w2 ? w1 : w2);
    }
    if ((rc = hone_k_sync(k)) < 0)
        goto fail;
    if (o->use_graph && hone_kctx_device(k) == HONE_DEV_CUDA) {
        /* one eager step first is not needed: ops allocate nothing; capture directly */
        if ((rc = hone_kgraph_capture(k, train_step, g, &g->graph)) < 0 || (rc = g->err) < 0)
            goto fail;
    }
    free(hw);
    *out = g;
    return HONE_OK;
fail:
    free(hw);
    gn_free(g);
    return rc;
}

void gn_free(gn_net *g)
{
    if (!g)
        return;
    hone_kctx *k = g->k;
    hone_k_sync(k);
    hone_kgraph_free(g->graph);
    void *bufs[] = {g->w,   g->gw,   g->v,        g->xtr,    g->xte,  g->ytr, g->yte,
                    g->idx, g->base, g->zero_int, g->acc,    g->xb,   g->a1,  g->p1,
                    g->a2,  g->p2,   g->h1,       g->logits, g->dlog, g->dh1, g->dp2,
                    g->da2, g->dp1,  g->da1,      g->yb,     g->i1,   g->i2,  g->ws};
    for (size_t i = 0; i < HONE_ARRAY_LEN(bufs); i++)
        hone_k_free(k, bufs[i]);
    free(g);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int gn_train_epoch(gn_net *g, int epoch, int max_steps, double *loss, double *acc, double *seconds)
{
    hone_kctx *k = g->k;
    int steps = g->ntrain / g->o.batch, rc;
    if (max_steps > 0 && steps > max_steps)
        steps = max_steps;
    if ((rc = hone_k_sync(k)) < 0)
        return rc;
    double t0 = now();
    CK(hone_k_permutation(k, g->idx, g->ntrain, g->o.seed, (uint64_t)epoch));
    CK(hone_k_copy(k, g->base, g->zero_int, sizeof(int32_t)));
    CK(hone_k_fill(k, g->acc, 0.f, 2));
    for (int s = 0; s < steps; s++) {
        if (g->graph)
            CK(hone_kgraph_launch(k, g->graph));
        else
            train_step(g);
    }
    float h[2];
    CK(hone_k_download(k, h, g->acc, sizeof(h)));
    double t1 = now();
    if (g->err)
        return g->err;
    *loss = h[0] / ((double)steps * g->o.batch);
    *acc = h[1] / ((double)steps * g->o.batch);
    *seconds = t1 - t0;
    return HONE_OK;
}

int gn_eval(gn_net *g, double *acc)
{
    hone_kctx *k = g->k;
    int B = g->o.batch;
    CK(hone_k_fill(k, g->acc, 0.f, 2));
    for (int s = 0; s < g->ntest; s += B) {
        int n = g->ntest - s < B ? g->ntest - s : B;
        CK(hone_k_copy(k, g->xb, g->xte + (size_t)s * 784, sizeof(float) * (size_t)n * 784));
        forward(g, n);
        CK(hone_k_softmax_xent(k, g->logits, g->yte + s, n, 10, NULL, g->acc, g->acc + 1));
    }
    float h[2];
    CK(hone_k_download(k, h, g->acc, sizeof(h)));
    if (g->err)
        return g->err;
    *acc = h[1] / (double)g->ntest;
    return HONE_OK;
}

int gn_params(gn_net *g, float **out, size_t *n)
{
    *out = hone_xmalloc(sizeof(float) * g->nparam);
    *n = g->nparam;
    return hone_k_download(g->k, *out, g->w, sizeof(float) * g->nparam);
}
