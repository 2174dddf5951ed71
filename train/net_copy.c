/* train/net_copy.c: model.pretrained's copy of another network's leading layers into a network
 * (net_copy_prefix), the layers that agree in kind, channels, kernel, stride, padding and inputs.
 */
#include <stdlib.h>
#include <string.h>

#include "net_internal.h"

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
