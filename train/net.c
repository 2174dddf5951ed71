/* train/net.c: builds the MLP, CNN and ResNet-18/34 of the spec as a list of layers over the
 * kernels API and runs them forward and backward. Enqueues kernel ops only (no host reads of
 * device data), so a whole training step can be captured into a graph. The layers are
 * spec/layers.c's description, which spec_check.c's estimate also prices. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"

#define BN_MOMENTUM 0.1f

typedef struct {
    layer *v;
    int n;
    size_t ndecay, nbias, nstate;
    int ncounters;
} builder;

/* Marks the layers whose backward must add to their input's gradient: walking backward, the
 * first layer to reach a producer writes its dout, later ones add. Only convs can add (their
 * col2im does it in the same pass), and a join must be the first to reach its skip input; the
 * networks above are built so. HONE_EINVAL otherwise (a bug in the builder). */
static int mark_fan_out(builder *b)
{
    unsigned char *seen = hone_xcalloc((size_t)b->n + 1, 1);
    int rc = HONE_OK;
    for (int i = b->n - 1; i >= 0 && rc == HONE_OK; i--) {
        layer *L = &b->v[i];
        if (L->in2 >= 0) {
            if (seen[L->in2])
                rc = HONE_EINVAL;
            seen[L->in2] = 1;
        }
        if (L->in >= 0) {
            L->acc = seen[L->in];
            seen[L->in] = 1;
            if (L->acc && L->kind != L_CONV)
                rc = HONE_EINVAL;
        }
    }
    free(seen);
    return rc;
}

static int half_eligible(hone_net *net, const hone_train_spec *spec);

/* A layer's buffer, counted in net->layer_bytes (what spec/'s estimate prices as layer_bytes). */
static void *layer_alloc(hone_net *net, size_t bytes)
{
    net->layer_bytes += bytes;
    return hone_k_alloc(net->k, bytes);
}

static int conv_desc(const layer *L, int n, hone_conv_desc *d)
{
    return hone_conv_desc_init(d, n, L->c, L->h, L->w, L->oc, L->r, L->r, L->stride, L->pad);
}

/* Workspace bytes conv layer i needs at batch n (its bf16 form below half_end). The algorithm, so
 * the workspace, is chosen per shape: a smaller batch may need more (cuDNN's FFT forward, since
 * excluded, needed more at a partial evaluation batch of 24 than at the training batch of 34). */
static size_t conv_ws(const hone_net *net, int i, int n)
{
    const layer *L = &net->layers[i];
    hone_conv_desc d;
    size_t ws = 0;
    if (conv_desc(L, n, &d) != HONE_OK)
        return 0;
    if (net->half && i < net->half_end)
        hone_k_conv_workspace_h(net->k, &d, &ws); /* half_eligible saw it succeed */
    else
        ws = net->trials == 1 ? hone_k_conv_workspace(net->k, &d)
                              : hone_k_conv_workspace_batched(net->k, &d, net->trials);
    return ws;
}

/* Box-Muller over splitmix64: deterministic He-normal initialisation from the seed. */
static double normal(uint64_t *s)
{
    double u[2];
    for (int i = 0; i < 2; i++) {
        uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        z ^= z >> 31;
        u[i] = ((z >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    }
    return sqrt(-2.0 * log(u[0])) * cos(2.0 * M_PI * u[1]);
}

/* Trial t's slice of params and state, as a solo network from spec would start. */
static void init_params(hone_net *net, const hone_train_spec *spec, int t)
{
    float *p = hone_xcalloc(net->nparams, sizeof(float));
    float *st = hone_xcalloc(net->nstate ? net->nstate : 1, sizeof(float));
    uint64_t s = spec->train.seed ^ 0x5EEDC0DE12345678ULL;
    for (int i = 0; i < net->nlayers; i++) {
        layer *L = &net->layers[i];
        if (L->kind == L_CONV || L->kind == L_DENSE) {
            size_t fan_in =
                (size_t)L->c * (L->kind == L_CONV ? (size_t)L->r * L->r : (size_t)L->h * L->w);
            size_t nw = fan_in * (size_t)L->oc;
            double sd = sqrt(2.0 / (double)fan_in);
            for (size_t j = 0; j < nw; j++)
                p[L->w_off + j] = (float)(sd * normal(&s));
        } else if (L->kind == L_BN) {
            for (int j = 0; j < L->c; j++) {
                p[L->b_off + j] = L->gamma0 ? 0.0f : 1.0f;
                st[L->s_off + L->c + j] = 1.0f;
            }
        }
    }
    hone_k_upload(net->k, net->params + (size_t)t * net->nparams, p, net->nparams * sizeof(float));
    if (net->nstate)
        hone_k_upload(net->k, net->state + (size_t)t * net->nstate, st,
                      net->nstate * sizeof(float));
    free(p);
    free(st);
}

/* The layers of spec's network for [c, h, w] inputs into b (b->v owned by the caller): spec/'s
 * description (layers.h), each entry given its place in the parameters (weights in the decay
 * region, then biases and norm scales in the order of the layers), norm statistics and dropout
 * counter. */
static int build(builder *b, const hone_train_spec *spec, int c, int h, int w, int classes)
{
    *b = (builder){0};
    hone_layers l;
    if (hone_spec_layers(spec, c, h, w, classes, &l) != HONE_OK)
        return HONE_EINVAL;
    b->n = l.n;
    b->v = hone_xcalloc((size_t)l.n + 1, sizeof(layer));
    for (int i = 0; i < l.n; i++) {
        const hone_layer_desc *D = &l.v[i];
        layer *L = &b->v[i];
        L->kind = (layer_kind)D->kind;
        L->c = D->c, L->h = D->h, L->w = D->w;
        L->oc = D->oc, L->oh = D->oh, L->ow = D->ow;
        L->in = D->in, L->in2 = D->in2;
        L->r = D->r, L->stride = D->stride, L->pad = D->pad;
        L->bias = D->bias;
        L->gamma0 = D->gamma0;
        L->p = D->p;
        switch (L->kind) {
        case L_CONV:
            L->w_off = b->ndecay;
            b->ndecay += (size_t)L->oc * L->c * L->r * L->r;
            if (L->bias) {
                L->b_off = b->nbias;
                b->nbias += (size_t)L->oc;
            }
            break;
        case L_DENSE:
            L->w_off = b->ndecay;
            b->ndecay += (size_t)L->oc * L->c * L->h * L->w;
            L->b_off = b->nbias;
            b->nbias += (size_t)L->oc;
            break;
        case L_BN:
            L->b_off = b->nbias; /* gamma, then beta */
            b->nbias += 2 * (size_t)L->c;
            L->s_off = b->nstate; /* running mean, then var */
            b->nstate += 2 * (size_t)L->c;
            break;
        case L_DROPOUT:
            L->rng = b->ncounters++;
            break;
        default:
            break;
        }
    }
    hone_layers_free(&l);
    if (mark_fan_out(b) != HONE_OK) {
        free(b->v);
        b->v = NULL;
        return HONE_EINVAL;
    }
    return HONE_OK;
}

/* 1 when a and b are the same layers (all but the dropout probability, a trial's own). */
static int same_layers(const builder *a, const builder *b)
{
    if (a->n != b->n || a->ndecay != b->ndecay || a->nbias != b->nbias || a->nstate != b->nstate)
        return 0;
    for (int i = 0; i < a->n; i++) {
        layer x, y; /* copied whole, padding included, for memcmp */
        memcpy(&x, &a->v[i], sizeof(x));
        memcpy(&y, &b->v[i], sizeof(y));
        x.p = y.p = 0.0f;
        if (memcmp(&x, &y, sizeof(x)) != 0)
            return 0;
    }
    return 1;
}

int net_new(hone_kctx *k, const hone_train_spec *spec, int batch, int c, int h, int w, int classes,
            hone_net **out)
{
    return net_new_pack(k, &spec, 1, batch, c, h, w, classes, out);
}

int net_new_pack(hone_kctx *k, const hone_train_spec *const *specs, int trials, int batch, int c,
                 int h, int w, int classes, hone_net **out)
{
    *out = NULL;
    if (trials < 1)
        return HONE_EINVAL;
    const hone_train_spec *spec = specs[0];
    builder b;
    int rc = build(&b, spec, c, h, w, classes);
    if (rc != HONE_OK)
        return rc;
    /* resnets and detectnet_v2: residual joins and summed gradients have no packed form yet */
    if (trials > 1 && strcmp(spec->network, "cnn") != 0 && strcmp(spec->network, "mlp") != 0) {
        free(b.v);
        return HONE_EINVAL;
    }
    float *tp = hone_xcalloc((size_t)b.n * (size_t)trials, sizeof(float)); /* [layer][trial] */
    for (int t = 0; t < trials; t++) {
        builder o;
        if (t > 0 && build(&o, specs[t], c, h, w, classes) != HONE_OK) {
            free(tp);
            free(b.v);
            return HONE_EINVAL;
        }
        const builder *bt = t > 0 ? &o : &b;
        int same = t == 0 || same_layers(&b, &o);
        for (int i = 0; same && i < b.n; i++)
            tp[(size_t)i * trials + t] = bt->v[i].p;
        if (t > 0)
            free(o.v);
        if (!same) {
            free(tp);
            free(b.v);
            return HONE_EINVAL;
        }
    }

    hone_net *net = hone_xcalloc(1, sizeof(*net));
    net->trials = trials;
    net->seeds = hone_xcalloc((size_t)trials, sizeof(uint64_t));
    for (int t = 0; t < trials; t++)
        net->seeds[t] = specs[t]->train.seed;
    net->k = k;
    net->batch = batch;
    net->in_c = c;
    net->in_h = h;
    net->in_w = w;
    net->classes = classes;
    net->layers = b.v;
    net->nlayers = b.n;
    net->ndecay = b.ndecay;
    net->nparams = b.ndecay + b.nbias;
    net->nstate = b.nstate;
    net->ncounters = b.ncounters + 1; /* + augmentation */
    net->half = half_eligible(net, spec);
    size_t T = (size_t)trials, nctr = T * (size_t)net->ncounters;
    net->params = hone_k_alloc(k, T * net->nparams * sizeof(float));
    net->grads = hone_k_alloc(k, T * net->nparams * sizeof(float));
    net->state = hone_k_alloc(k, T * (net->nstate ? net->nstate : 1) * sizeof(float));
    net->counters = hone_k_alloc(k, sizeof(uint64_t) * nctr);
    uint64_t *zeros = hone_xcalloc(nctr, sizeof(uint64_t));
    hone_k_upload(k, net->counters, zeros, sizeof(uint64_t) * nctr);
    free(zeros);
    for (int i = 0; i < net->nlayers; i++) {
        layer *L = &net->layers[i];
        if ((L->kind == L_CONV && L->bias) || L->kind == L_DENSE || L->kind == L_BN)
            L->b_off += net->ndecay; /* the bias region follows the weights */
        if (L->kind == L_DROPOUT) {
            L->tp = hone_xcalloc(T, sizeof(float));
            memcpy(L->tp, tp + (size_t)i * T, T * sizeof(float));
        }
        size_t osz = T * (size_t)batch * L->oc * L->oh * L->ow;
        int half = net->half && i < net->half_end;
        if (half) {
            L->hout = layer_alloc(net, osz * sizeof(hone_bf16));
            L->hdout = layer_alloc(net, osz * sizeof(hone_bf16));
        }
        if (!half || (i == net->half_end - 1 && net->layers[i + 1].kind != L_GAP)) {
            L->out = layer_alloc(net, osz * sizeof(float));
            L->dout = layer_alloc(net, osz * sizeof(float));
        }
        if (L->kind == L_POOL)
            L->idx = layer_alloc(net, osz * sizeof(int32_t));
        if (L->kind == L_DROPOUT)
            L->mask = layer_alloc(net, osz);
        if (L->kind == L_BN) {
            L->save_mean = layer_alloc(net, T * (size_t)L->c * sizeof(float));
            L->save_invstd = layer_alloc(net, T * (size_t)L->c * sizeof(float));
        }
        if (L->kind == L_CONV) {
            if (half)
                L->wh = hone_k_alloc(k, (size_t)L->oc * L->c * L->r * L->r * sizeof(hone_bf16));
            size_t ws = conv_ws(net, i, batch);
            if (ws > net->ws_bytes)
                net->ws_bytes = ws;
        }
    }
    if (net->half)
        net->xh = hone_k_alloc(k, (size_t)batch * c * h * w * sizeof(hone_bf16));
    free(tp);
    net->ws = net->ws_bytes ? hone_k_alloc(k, net->ws_bytes) : NULL;
    for (int t = 0; t < trials; t++)
        init_params(net, specs[t], t);
    *out = net;
    return HONE_OK;
}

/* 1 when layer a of one network and b of another hold the same parameters in the same place of
 * their graphs: kind, channels, kernel, stride, padding, bias, inputs (spatial sizes may differ:
 * convolutions and norms do not depend on them; a dense layer's input must agree). */
static int same_params(const layer *a, const layer *b)
{
    if (a->kind != b->kind || a->c != b->c || a->oc != b->oc || a->in != b->in ||
        a->in2 != b->in2 || a->r != b->r || a->stride != b->stride || a->pad != b->pad ||
        a->bias != b->bias)
        return 0;
    return a->kind != L_DENSE || (size_t)a->c * a->h * a->w == (size_t)b->c * b->h * b->w;
}

int net_copy_prefix(hone_net *net, const hone_train_spec *src_spec, int c, int h, int w,
                    int classes, const float *params, size_t nparams, const float *state,
                    size_t nstate, int *layers, size_t *copied)
{
    builder b;
    *layers = 0;
    *copied = 0;
    if (build(&b, src_spec, c, h, w, classes) != HONE_OK)
        return HONE_EINVAL;
    if (nparams != b.ndecay + b.nbias || nstate != b.nstate) {
        free(b.v);
        return HONE_EPARSE; /* the weights are not of the network their spec builds */
    }
    size_t T = (size_t)net->trials, np = net->nparams, ns = net->nstate;
    float *p = hone_xmalloc(sizeof(float) * (T * np + 1));
    float *st = hone_xmalloc(sizeof(float) * (T * ns + 1));
    hone_kctx *k = net->k;
    int rc = hone_k_sync(k);
    if (rc == 0)
        rc = hone_k_download(k, p, net->params, sizeof(float) * T * np);
    if (rc == 0 && ns)
        rc = hone_k_download(k, st, net->state, sizeof(float) * T * ns);
    int n = b.n < net->nlayers ? b.n : net->nlayers, i;
    for (i = 0; rc == 0 && i < n && same_params(&b.v[i], &net->layers[i]); i++) {
        const layer *S = &b.v[i], *D = &net->layers[i];
        size_t wn = 0, bn = 0, sn = 0;
        if (S->kind == L_CONV) {
            wn = (size_t)S->oc * S->c * S->r * S->r;
            bn = S->bias ? (size_t)S->oc : 0;
        } else if (S->kind == L_DENSE) {
            wn = (size_t)S->oc * S->c * S->h * S->w;
            bn = (size_t)S->oc;
        } else if (S->kind == L_BN) {
            bn = sn = 2 * (size_t)S->c;
        }
        size_t sb = S->b_off + b.ndecay; /* build's bias offsets count from the bias region */
        for (size_t t = 0; t < T; t++) { /* a count of 0 may come with a NULL array (no BN) */
            if (wn)
                memcpy(p + t * np + D->w_off, params + S->w_off, sizeof(float) * wn);
            if (bn)
                memcpy(p + t * np + D->b_off, params + sb, sizeof(float) * bn);
            if (sn)
                memcpy(st + t * ns + D->s_off, state + S->s_off, sizeof(float) * sn);
        }
        *copied += wn + bn + sn;
    }
    *layers = i;
    if (rc == 0 && i > 0) {
        hone_k_upload(k, net->params, p, sizeof(float) * T * np);
        if (ns)
            hone_k_upload(k, net->state, st, sizeof(float) * T * ns);
        rc = hone_k_sync(k);
    }
    free(p);
    free(st);
    free(b.v);
    return rc;
}

void net_free(hone_net *net)
{
    if (!net)
        return;
    hone_kctx *k = net->k;
    for (int i = 0; i < net->nlayers; i++) {
        layer *L = &net->layers[i];
        hone_k_free(k, L->out);
        hone_k_free(k, L->dout);
        hone_k_free(k, L->hout);
        hone_k_free(k, L->hdout);
        hone_k_free(k, L->wh);
        hone_k_free(k, L->idx);
        hone_k_free(k, L->mask);
        hone_k_free(k, L->save_mean);
        hone_k_free(k, L->save_invstd);
        free(L->tp);
    }
    free(net->seeds);
    hone_k_free(k, net->params);
    hone_k_free(k, net->grads);
    hone_k_free(k, net->state);
    hone_k_free(k, net->counters);
    hone_k_free(k, net->ws);
    hone_k_free(k, net->ws_other);
    hone_k_free(k, net->xh);
    free(net->layers);
    free(net);
}

static size_t in_size(const layer *L)
{
    return (size_t)L->c * L->h * L->w;
}

static size_t out_size(const layer *L)
{
    return (size_t)L->oc * L->oh * L->ow;
}

/* A pool followed by a relu runs as one fused op writing the relu layer's output (the relu layer
 * itself is then skipped both ways; the pool's own out/dout stay unused). */
static int pool_relu_fused(const hone_net *net, int i)
{
    return i >= 0 && i + 1 < net->nlayers && net->layers[i].kind == L_POOL &&
           net->layers[i].pad == 0 && net->layers[i + 1].kind == L_RELU;
}

/* A batch norm whose output only a relu right after it reads runs as one fused op writing the
 * relu layer's output (the relu layer is then skipped both ways; the batch norm's own out/dout
 * stay unused): one pass over the activations each way instead of two. */
static int bn_relu_fused(const hone_net *net, int i)
{
    if (i < 0 || i + 1 >= net->nlayers || net->layers[i].kind != L_BN ||
        net->layers[i + 1].kind != L_RELU || net->layers[i + 1].in != i)
        return 0;
    for (int j = 0; j < net->nlayers; j++)
        if (j != i + 1 && (net->layers[j].in == i || net->layers[j].in2 == i))
            return 0;
    return 1;
}

/* No conv layer after layer i: nothing writes the shared workspace between its forward and
 * backward, so its backward may reuse the forward's im2col columns. */
static int last_conv(const hone_net *net, int i)
{
    for (int j = i + 1; j < net->nlayers; j++)
        if (net->layers[j].kind == L_CONV)
            return 0;
    return 1;
}

static const float *out_of(const hone_net *net, int i, const float *x)
{
    return i >= 0 ? net->layers[i].out : x;
}

/* Packed trials: batch norm and dropout, whose statistics, parameters and random streams are each
 * trial's own, run once per trial on its slice; every other layer runs once over all trials'
 * samples (elementwise and pooling) or as one batched op with the trial stride (conv, dense). */
static void bn_fwd(hone_net *net, int i, int n, const float *in, int training)
{
    layer *L = &net->layers[i];
    int fused = bn_relu_fused(net, i);
    size_t sz = (size_t)n * out_size(L);
    float *y = fused ? net->layers[i + 1].out : L->out;
    for (int t = 0; t < net->trials; t++) {
        const float *B = net->params + (size_t)t * net->nparams + L->b_off;
        float *st = net->state + (size_t)t * net->nstate + L->s_off;
        float *sm = L->save_mean + (size_t)t * L->c, *si = L->save_invstd + (size_t)t * L->c;
        const float *xt = in + t * sz;
        if (fused)
            hone_k_batchnorm_relu_fwd(net->k, n, L->c, L->h * L->w, xt, B, B + L->c, st, st + L->c,
                                      BN_MOMENTUM, NET_BN_EPS, training, sm, si, y + t * sz);
        else
            hone_k_batchnorm_fwd(net->k, n, L->c, L->h * L->w, xt, B, B + L->c, st, st + L->c,
                                 BN_MOMENTUM, NET_BN_EPS, training, sm, si, y + t * sz);
    }
}

static void dropout_fwd(hone_net *net, const layer *L, int n, const float *in)
{
    size_t sz = (size_t)n * out_size(L);
    for (int t = 0; t < net->trials; t++)
        hone_k_dropout_fwd(net->k, in + t * sz, L->out + t * sz, L->mask + t * sz, sz, L->tp[t],
                           net->seeds[t], net->counters + (size_t)t * net->ncounters + L->rng);
}

/* ------------------------------------------------------------------ bf16 NHWC (half) networks
 * train.math=bf16 on CUDA: cuDNN's tensor-core convolutions run on bf16 NHWC tensors without the
 * transposes and with half the memory traffic of fp32 NCHW (ResNet-18 at batch 512 on an H100:
 * 5.6 ms of convolution a step against 16.6). A network qualifies when its leading layers are
 * bias-free convs, batch norms (their relu fused), residual joins or a padded max pool, all of
 * multiples of 8 channels (whole 16-byte groups), and cuDNN has a bf16 algorithm for every such
 * conv: resnet18 and resnet34 at any input size, and detectnet_v2's backbone (its head,
 * a conv with a bias, runs in fp32 on a copy), model.width a multiple of 8. The first other layer
 * ends the bf16 part; it must read the layer before it, which nothing else reads. Anything else
 * (mlp, cnn, packed trials) trains in fp32 as before. */
static int half_eligible(hone_net *net, const hone_train_spec *spec)
{
    if (net->trials != 1 || strcmp(spec->train.math, "bf16") != 0 ||
        hone_kctx_device(net->k) != HONE_DEV_CUDA)
        return 0;
    int end = net->nlayers;
    for (int i = 0; i < net->nlayers && end == net->nlayers; i++) {
        const layer *L = &net->layers[i];
        hone_conv_desc d;
        size_t ws;
        int ok = 0;
        switch (L->kind) {
        case L_CONV:
            ok = !L->bias && L->oc % 8 == 0 && conv_desc(L, net->batch, &d) == HONE_OK &&
                 hone_k_conv_workspace_h(net->k, &d, &ws) == HONE_OK;
            break;
        case L_BN:
        case L_ADD:
            ok = L->oc % 8 == 0;
            break;
        case L_RELU:
            ok = bn_relu_fused(net, i - 1);
            break;
        case L_POOL: /* the ImageNet stem's padded pool */
            ok = L->pad > 0;
            break;
        default:
            break;
        }
        if (!ok)
            end = i;
    }
    /* the boundary reads the layer before it, which no later layer reads */
    if (end < 2 || end == net->nlayers || net->layers[end].in != end - 1 ||
        net->layers[end].in2 >= 0)
        return 0;
    for (int j = end + 1; j < net->nlayers; j++)
        if (net->layers[j].in < end || net->layers[j].in2 >= 0)
            return 0;
    net->half_end = end;
    return 1;
}

/* Layer i is a residual block's last batch norm, read only by the join after it as its main
 * input: in a half network the join runs it (hone_k_batchnorm_add_relu_fwd_h) and the norm's own
 * output is never stored; its backward is unchanged (it reads only its input and gradient). */
static int bn_add_fused(const hone_net *net, int i)
{
    if (!net->half || i < 0 || net->layers[i].kind != L_BN || bn_relu_fused(net, i))
        return 0;
    int readers = 0, join = 0;
    for (int j = i + 1; j < net->nlayers; j++) {
        const layer *L = &net->layers[j];
        readers += (L->in == i) + (L->in2 == i);
        join |= L->kind == L_ADD && L->in == i;
    }
    return readers == 1 && join;
}

static const hone_bf16 *hout_of(const hone_net *net, int i)
{
    return i >= 0 ? net->layers[i].hout : net->xh;
}

/* Layer i (< net->half_end, or the global pool at half_end) of a half network, forward. */
static void half_fwd(hone_net *net, int i, int n, int training)
{
    hone_kctx *k = net->k;
    layer *L = &net->layers[i];
    const hone_bf16 *in = hout_of(net, L->in);
    const float *B = net->params + L->b_off;
    hone_conv_desc d;
    switch (L->kind) {
    case L_CONV:
        conv_desc(L, n, &d);
        hone_k_conv_weights_h(k, &d, net->params + L->w_off, L->wh);
        hone_k_conv_fwd_h(k, &d, in, L->wh, L->hout, net->ws);
        break;
    case L_BN: {
        if (bn_add_fused(net, i))
            break; /* the join after it runs it */
        int fused = bn_relu_fused(net, i);
        float *st = net->state + L->s_off;
        hone_k_batchnorm_fwd_h(k, n * L->h * L->w, L->c, in, B, B + L->c, st, st + L->c,
                               BN_MOMENTUM, NET_BN_EPS, training, L->save_mean, L->save_invstd,
                               fused ? net->layers[i + 1].hout : L->hout, fused);
        break;
    }
    case L_ADD:
        if (bn_add_fused(net, L->in)) {
            layer *N = &net->layers[L->in];
            const float *G = net->params + N->b_off;
            float *st = net->state + N->s_off;
            hone_k_batchnorm_add_relu_fwd_h(k, n * N->h * N->w, N->c, hout_of(net, N->in), G,
                                            G + N->c, st, st + N->c, BN_MOMENTUM, NET_BN_EPS,
                                            training, N->save_mean, N->save_invstd,
                                            hout_of(net, L->in2), L->hout);
        } else {
            hone_k_add_relu_fwd_h(k, in, hout_of(net, L->in2), L->hout, (size_t)n * out_size(L));
        }
        break;
    case L_POOL:
        hone_k_maxpool_pad_fwd_h(k, n, L->c, L->h, L->w, L->r, L->stride, L->pad, in, L->hout,
                                 L->idx);
        break;
    case L_GAP:
        hone_k_avgpool_global_fwd_h(k, n, L->c, L->h * L->w, in, L->out);
        break;
    default: /* L_RELU: fused into the batch norm before it (half_eligible) */
        break;
    }
}

/* Layer i (< net->half_end, or the global pool at half_end) of a half network, backward. */
static void half_bwd(hone_net *net, int i, int n)
{
    hone_kctx *k = net->k;
    layer *L = &net->layers[i];
    const hone_bf16 *in = hout_of(net, L->in);
    hone_bf16 *din = L->in >= 0 ? net->layers[L->in].hdout : NULL;
    float *dB = net->grads + L->b_off;
    hone_conv_desc d;
    switch (L->kind) {
    case L_CONV:
        conv_desc(L, n, &d);
        hone_k_conv_bwd_h(k, &d, in, L->wh, L->hdout, din, L->acc, net->grads + L->w_off, net->ws);
        break;
    case L_BN: {
        int fused = bn_relu_fused(net, i);
        const layer *R = fused ? &net->layers[i + 1] : L;
        hone_k_batchnorm_bwd_h(k, n * L->h * L->w, L->c, in, fused ? R->hout : NULL, R->hdout,
                               net->params + L->b_off, L->save_mean, L->save_invstd, din, dB,
                               dB + L->c);
        break;
    }
    case L_ADD:
        hone_k_add_relu_bwd_h(k, L->hout, L->hdout, din,
                              L->in2 >= 0 ? net->layers[L->in2].hdout : NULL,
                              (size_t)n * out_size(L));
        break;
    case L_POOL:
        hone_k_maxpool_pad_bwd_h(k, n, L->c, L->h, L->w, L->r, L->stride, L->pad, L->hdout, L->idx,
                                 din);
        break;
    case L_GAP:
        hone_k_avgpool_global_bwd_h(k, n, L->c, L->h * L->w, L->dout, din);
        break;
    default:
        break;
    }
}

/* A forward at a batch other than the one the network was made for (evaluation's last, partial
 * batch) whose convolutions need more workspace than net->ws holds runs on net->ws_other, grown
 * here; net->ws itself never moves (captured graphs hold its address). Never under capture: the
 * captured step runs at the network's batch. */
static void *other_batch_ws(hone_net *net, int n)
{
    size_t need = 0;
    for (int i = 0; i < net->nlayers; i++)
        if (net->layers[i].kind == L_CONV) {
            size_t b = conv_ws(net, i, n);
            need = b > need ? b : need;
        }
    if (need <= net->ws_bytes)
        return net->ws;
    if (need > net->ws_other_bytes) { /* hone_k_alloc aborts when memory is out */
        hone_k_free(net->k, net->ws_other);
        net->ws_other = hone_k_alloc(net->k, need);
        net->ws_other_bytes = need;
    }
    return net->ws_other;
}

static const float *forward(hone_net *net, const float *x, int n, int training);

const float *net_forward(hone_net *net, const float *x, int n, int training)
{
    void *ws = net->ws;
    if (n != net->batch)
        net->ws = other_batch_ws(net, n);
    const float *out = forward(net, x, n, training);
    net->ws = ws;
    return out;
}

static const float *forward(hone_net *net, const float *x, int n, int training)
{
    hone_kctx *k = net->k;
    int T = net->trials;
    size_t P = net->nparams;
    if (net->half)
        hone_k_to_nhwc_h(k, n, net->in_c, net->in_h * net->in_w, x, net->xh);
    for (int i = 0; i < net->nlayers; i++) {
        layer *L = &net->layers[i];
        if (net->half && i <= net->half_end) {
            if (i < net->half_end || L->kind == L_GAP) {
                half_fwd(net, i, n, training);
                continue;
            }
            const layer *B = &net->layers[i - 1]; /* the bf16 part's output, copied to fp32 */
            hone_k_from_nhwc_h(k, n, B->oc, B->oh * B->ow, B->hout, B->out);
        }
        const float *in = out_of(net, L->in, x);
        size_t cnt = (size_t)T * n * out_size(L);
        const float *W = net->params + L->w_off, *B = net->params + L->b_off;
        switch (L->kind) {
        case L_CONV: {
            hone_conv_desc d;
            conv_desc(L, n, &d);
            if (T == 1)
                hone_k_conv_fwd(k, &d, in, W, L->bias ? B : NULL, L->out, net->ws);
            else
                hone_k_conv_fwd_batched(k, &d, T, in, W, P, L->bias ? B : NULL, P, L->out, net->ws);
            break;
        }
        case L_DENSE: {
            int cin = (int)in_size(L);
            if (T == 1) {
                hone_k_gemm(k, 0, 1, n, L->oc, cin, 1.0f, in, cin, W, cin, 0.0f, L->out, L->oc);
                hone_k_bias_add(k, L->out, B, n, L->oc);
            } else {
                hone_k_gemm_batched(k, 0, 1, n, L->oc, cin, 1.0f, in, cin, (size_t)n * cin, W, cin,
                                    P, 0.0f, L->out, L->oc, (size_t)n * L->oc, T);
                hone_k_bias_add_batched(k, L->out, B, P, n, L->oc, T);
            }
            break;
        }
        case L_RELU:
            if (!pool_relu_fused(net, i - 1) && !bn_relu_fused(net, i - 1))
                hone_k_relu_fwd(k, in, L->out, cnt);
            break;
        case L_POOL:
            if (L->pad)
                hone_k_maxpool_pad_fwd(k, T * n, L->c, L->h, L->w, L->r, L->stride, L->pad, in,
                                       L->out, L->idx);
            else if (pool_relu_fused(net, i))
                hone_k_maxpool_relu_fwd(k, T * n, L->c, L->h, L->w, L->r, L->stride, in,
                                        net->layers[i + 1].out, L->idx);
            else
                hone_k_maxpool_fwd(k, T * n, L->c, L->h, L->w, L->r, L->stride, in, L->out, L->idx);
            break;
        case L_BN:
            bn_fwd(net, i, n, in, training);
            break;
        case L_DROPOUT:
            if (training)
                dropout_fwd(net, L, n, in);
            else
                hone_k_copy(k, L->out, in, cnt * sizeof(float));
            break;
        case L_ADD:
            hone_k_add_relu_fwd(k, in, out_of(net, L->in2, x), L->out, cnt);
            break;
        case L_GAP:
            hone_k_avgpool_global_fwd(k, T * n, L->c, L->h, L->w, in, L->out);
            break;
        }
    }
    return net->layers[net->nlayers - 1].out;
}

float *net_dlogits(hone_net *net)
{
    return net->layers[net->nlayers - 1].dout;
}

static void bn_bwd(hone_net *net, int i, int n, const float *in, float *din)
{
    layer *L = &net->layers[i];
    int fused = bn_relu_fused(net, i);
    size_t sz = (size_t)n * out_size(L);
    for (int t = 0; t < net->trials; t++) {
        size_t off = (size_t)t * net->nparams + L->b_off;
        const float *G = net->params + off;
        float *dB = net->grads + off;
        const float *sm = L->save_mean + (size_t)t * L->c, *si = L->save_invstd + (size_t)t * L->c;
        const float *xt = in + t * sz;
        if (fused)
            hone_k_batchnorm_relu_bwd(
                net->k, n, L->c, L->h * L->w, xt, net->layers[i + 1].out + t * sz,
                net->layers[i + 1].dout + t * sz, G, sm, si, din + t * sz, dB, dB + L->c);
        else
            hone_k_batchnorm_bwd(net->k, n, L->c, L->h * L->w, xt, L->dout + t * sz, G, sm, si,
                                 din + t * sz, dB, dB + L->c);
    }
}

/* Packed dense backward: dW_t = dout_t^T in_t, db_t, din_t = dout_t W_t, one batched op each. */
static void dense_bwd_batched(hone_net *net, const layer *L, int n, const float *in, float *din)
{
    int T = net->trials, cin = (int)in_size(L);
    size_t P = net->nparams, so = (size_t)n * L->oc, si = (size_t)n * cin;
    float *dW = net->grads + L->w_off, *dB = net->grads + L->b_off;
    hone_k_gemm_batched(net->k, 1, 0, L->oc, cin, n, 1.0f, L->dout, L->oc, so, in, cin, si, 0.0f,
                        dW, cin, P, T);
    hone_k_bias_grad_batched(net->k, dB, P, L->dout, n, L->oc, 0, T);
    if (din)
        hone_k_gemm_batched(net->k, 0, 0, n, cin, L->oc, 1.0f, L->dout, L->oc, so,
                            net->params + L->w_off, cin, P, 0.0f, din, cin, si, T);
}

void net_backward(hone_net *net, const float *x, int n)
{
    hone_kctx *k = net->k;
    int T = net->trials;
    for (int i = net->nlayers - 1; i >= 0; i--) {
        layer *L = &net->layers[i];
        if (net->half && (i < net->half_end || (i == net->half_end && L->kind == L_GAP))) {
            half_bwd(net, i, n);
            continue;
        }
        const float *in = out_of(net, L->in, x);
        float *din = L->in >= 0 ? net->layers[L->in].dout : NULL;
        const float *W = net->params + L->w_off;
        float *dW = net->grads + L->w_off, *dB = net->grads + L->b_off;
        size_t cnt = (size_t)T * n * out_size(L);
        switch (L->kind) {
        case L_CONV: {
            hone_conv_desc d;
            conv_desc(L, n, &d);
            float *db = L->bias ? dB : NULL;
            if (T > 1) /* cnn: no layer feeds two others, so never acc */
                hone_k_conv_bwd_batched(k, &d, T, in, W, net->nparams, L->dout, din, dW, db,
                                        net->nparams, net->ws, last_conv(net, i));
            else if (L->acc)
                hone_k_conv_bwd_acc(k, &d, in, W, L->dout, din, dW, db, net->ws, last_conv(net, i));
            else if (last_conv(net, i))
                hone_k_conv_bwd_reuse(k, &d, in, W, L->dout, din, dW, db, net->ws);
            else
                hone_k_conv_bwd(k, &d, in, W, L->dout, din, dW, db, net->ws);
            break;
        }
        case L_DENSE: {
            int cin = (int)in_size(L);
            if (T > 1) {
                dense_bwd_batched(net, L, n, in, din);
                break;
            }
            hone_k_gemm(k, 1, 0, L->oc, cin, n, 1.0f, L->dout, L->oc, in, cin, 0.0f, dW, cin);
            hone_k_bias_grad(k, dB, L->dout, n, L->oc, 0);
            if (din)
                hone_k_gemm(k, 0, 0, n, cin, L->oc, 1.0f, L->dout, L->oc, W, cin, 0.0f, din, cin);
            break;
        }
        case L_RELU:
            if (din && !pool_relu_fused(net, i - 1) && !bn_relu_fused(net, i - 1))
                hone_k_relu_bwd(k, L->out, L->dout, din, cnt);
            break;
        case L_POOL:
            if (din && L->pad)
                hone_k_maxpool_pad_bwd(k, T * n, L->c, L->h, L->w, L->r, L->stride, L->pad, L->dout,
                                       L->idx, din);
            else if (din && pool_relu_fused(net, i))
                hone_k_maxpool_relu_bwd(k, T * n, L->c, L->h, L->w, L->r, L->stride,
                                        net->layers[i + 1].out, net->layers[i + 1].dout, L->idx,
                                        din);
            else if (din)
                hone_k_maxpool_bwd(k, T * n, L->c, L->h, L->w, L->r, L->stride, L->dout, L->idx,
                                   din);
            break;
        case L_BN:
            if (din)
                bn_bwd(net, i, n, in, din);
            break;
        case L_DROPOUT:
            for (int t = 0; din && t < T; t++) {
                size_t sz = cnt / (size_t)T;
                hone_k_dropout_bwd(k, L->dout + t * sz, L->mask + t * sz, din + t * sz, sz,
                                   L->tp[t]);
            }
            break;
        case L_ADD: {
            float *dskip = L->in2 >= 0 ? net->layers[L->in2].dout : NULL;
            if (din)
                hone_k_add_relu_bwd(k, L->out, L->dout, din, dskip, cnt);
            break;
        }
        case L_GAP:
            if (din)
                hone_k_avgpool_global_bwd(k, T * n, L->c, L->h, L->w, L->dout, din);
            break;
        }
        if (net->half && i == net->half_end) { /* back into the bf16 part */
            layer *B = &net->layers[i - 1];
            hone_k_to_nhwc_h(k, n, B->oc, B->oh * B->ow, B->dout, B->hdout);
        }
    }
}
