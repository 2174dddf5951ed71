/* train/net.c: builds the network of the spec (mlp, cnn, resnet18/34, detectnet_v2) from
 * spec/spec_layers.c's description, which spec_check.c's estimate also prices: each layer's place
 * in the parameters and its device buffers, for one trial or several packed ones. net_run.c runs
 * it, net_params.c initialises its parameters, net_half.c runs its bf16 part. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "net_internal.h"

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

/* A layer's buffer, counted in net->layer_bytes (what spec/'s estimate prices as layer_bytes). */
static void *layer_alloc(hone_net *net, size_t bytes)
{
    net->layer_bytes += bytes;
    return hone_k_alloc(net->k, bytes);
}

/* Workspace bytes conv layer i needs at batch n (its bf16 form below half_end). The algorithm, so
 * the workspace, is chosen per shape: a smaller batch may need more (cuDNN's FFT forward, since
 * excluded, needed more at a partial evaluation batch of 24 than at the training batch of 34). */
size_t net__conv_ws(const hone_net *net, int i, int n)
{
    const layer *L = &net->layers[i];
    hone_conv_desc d;
    size_t ws = 0;
    if (net__conv_desc(L, n, &d) != HONE_OK)
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
            ok = !L->bias && L->oc % 8 == 0 && net__conv_desc(L, net->batch, &d) == HONE_OK &&
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

/* The layers of spec's network for [c, h, w] inputs into b (b->v owned by the caller): spec/'s
 * description (spec_layers.h), each entry given its place in the parameters (weights in the decay
 * region, then biases and norm scales in the order of the layers), norm statistics and dropout
 * counter. */
int net__build(builder *b, const hone_train_spec *spec, int c, int h, int w, int classes)
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
    int rc = net__build(&b, spec, c, h, w, classes);
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
        if (t > 0 && net__build(&o, specs[t], c, h, w, classes) != HONE_OK) {
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
            size_t ws = net__conv_ws(net, i, batch);
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
