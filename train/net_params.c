/* train/net_params.c: a network's parameters: their He-normal initialisation from each trial's
 * train.seed, and model.pretrained's copy of another network's leading layers (net_copy_prefix). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "net_internal.h"

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
void net__init_params(hone_net *net, const hone_train_spec *spec, int t)
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
