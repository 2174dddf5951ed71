/* train/net_internal.h: what the files of the network (net.c builds it, net_run.c runs it forward
 * and backward with packed trials, net_half.c runs its bf16 part, net_copy.c copies parameters
 * into it) share; not part of net.h's API. Calls run net_run.c -> net_half.c -> net.c and
 * net_copy.c -> net.c. */
#ifndef HONE_TRAIN_NET_INTERNAL_H
#define HONE_TRAIN_NET_INTERNAL_H

#include "net.h"

#define BN_MOMENTUM 0.1f

/* The layers while they are given their places (net__build). */
typedef struct {
    layer *v;
    int n;
    size_t ndecay, nbias, nstate;
    int ncounters;
} builder;

/* The layers of spec's network for [c, h, w] inputs into b (net.c; b->v owned by the caller). */
int net__build(builder *b, const hone_train_spec *spec, int c, int h, int w, int classes);
/* Workspace bytes conv layer i needs at batch n (net.c). */
size_t net__conv_ws(const hone_net *net, int i, int n);
/* The bf16 part (net_half.c; net.c decides which layers it holds): layer i of it, forward and
 * backward. */
void net__half_fwd(hone_net *net, int i, int n, int training);
void net__half_bwd(hone_net *net, int i, int n);

static inline int net__conv_desc(const layer *L, int n, hone_conv_desc *d)
{
    return hone_conv_desc_init(d, n, L->c, L->h, L->w, L->oc, L->r, L->r, L->stride, L->pad);
}

static inline size_t in_size(const layer *L)
{
    return (size_t)L->c * L->h * L->w;
}

static inline size_t out_size(const layer *L)
{
    return (size_t)L->oc * L->oh * L->ow;
}

/* A pool followed by a relu runs as one fused op writing the relu layer's output (the relu layer
 * itself is then skipped both ways; the pool's own out/dout stay unused). */
static inline int pool_relu_fused(const hone_net *net, int i)
{
    return i >= 0 && i + 1 < net->nlayers && net->layers[i].kind == L_POOL &&
           net->layers[i].pad == 0 && net->layers[i + 1].kind == L_RELU;
}

/* A batch norm whose output only a relu right after it reads runs as one fused op writing the
 * relu layer's output (the relu layer is then skipped both ways; the batch norm's own out/dout
 * stay unused): one pass over the activations each way instead of two. */
static inline int bn_relu_fused(const hone_net *net, int i)
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
static inline int last_conv(const hone_net *net, int i)
{
    for (int j = i + 1; j < net->nlayers; j++)
        if (net->layers[j].kind == L_CONV)
            return 0;
    return 1;
}

static inline const float *out_of(const hone_net *net, int i, const float *x)
{
    return i >= 0 ? net->layers[i].out : x;
}

#endif
