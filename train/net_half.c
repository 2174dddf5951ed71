/* train/net_half.c: the bf16 NHWC part of a network (train.math=bf16 on CUDA), forward and
 * backward, and which networks qualify. */
#include <stdlib.h>
#include <string.h>

#include "net_internal.h"

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
void net__half_fwd(hone_net *net, int i, int n, int training)
{
    hone_kctx *k = net->k;
    layer *L = &net->layers[i];
    const hone_bf16 *in = hout_of(net, L->in);
    const float *B = net->params + L->b_off;
    hone_conv_desc d;
    switch (L->kind) {
    case L_CONV:
        net__conv_desc(L, n, &d);
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
void net__half_bwd(hone_net *net, int i, int n)
{
    hone_kctx *k = net->k;
    layer *L = &net->layers[i];
    const hone_bf16 *in = hout_of(net, L->in);
    hone_bf16 *din = L->in >= 0 ? net->layers[L->in].hdout : NULL;
    float *dB = net->grads + L->b_off;
    hone_conv_desc d;
    switch (L->kind) {
    case L_CONV:
        net__conv_desc(L, n, &d);
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
