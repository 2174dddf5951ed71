/* train/net_copy.c: model.pretrained's copy of another network's layers into a network
 * (net_copy_prefix), the layers spec/'s hone_layers_fit picks (kind, channels, kernel, stride,
 * padding, inputs): every such layer when both networks have one graph (the same network: a new
 * head, a first convolution of other channels or a dense layer after another input size stays
 * fresh), else the leading ones (a classifier's backbone into detectnet_v2). Never copies a layer
 * whose shape differs. */
#include <stdlib.h>
#include <string.h>

#include "net_internal.h"

/* A network's layers as spec/'s descriptions, for hone_layers_fit (the rule lives there, shared
 * with the controller's check of a parent at create). */
static void as_descs(const layer *v, int n, hone_layers *out)
{
    out->v = hone_xcalloc((size_t)n + 1, sizeof(hone_layer_desc));
    out->n = out->cap = n;
    for (int i = 0; i < n; i++) {
        hone_layer_desc *d = &out->v[i];
        d->kind = (hone_layer_kind)v[i].kind;
        d->c = v[i].c, d->h = v[i].h, d->w = v[i].w;
        d->oc = v[i].oc, d->oh = v[i].oh, d->ow = v[i].ow;
        d->in = v[i].in, d->in2 = v[i].in2;
        d->r = v[i].r, d->stride = v[i].stride, d->pad = v[i].pad;
        d->bias = v[i].bias;
    }
}

int net_copy_prefix(hone_net *net, const hone_train_spec *src_spec, int c, int h, int w,
                    int classes, const float *params, size_t nparams, const float *state,
                    size_t nstate, unsigned char *done, int *layers, size_t *copied)
{
    builder b;
    *layers = 0;
    *copied = 0;
    if (net__build(&b, src_spec, c, h, w, classes) != HONE_OK)
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
    hone_layers from, to;
    as_descs(b.v, b.n, &from);
    as_descs(net->layers, net->nlayers, &to);
    hone_layers_fit(&from, &to, done);
    int count = 0;
    hone_layers_free(&from);
    hone_layers_free(&to);
    for (int i = 0; rc == 0 && i < net->nlayers; i++) {
        if (!done[i])
            continue;
        const layer *S = &b.v[i], *D = &net->layers[i];
        count++;
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
    *layers = count;
    if (rc == 0 && count > 0) {
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
