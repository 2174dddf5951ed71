/* train/net_half.c: the bf16 NHWC part of a network (train.math=bf16 on CUDA), forward and
 * backward, and which networks qualify. */
#include <stdlib.h>
#include <string.h>

#include "net_internal.h"

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
int net__half_eligible(hone_net *net, const hone_train_spec *spec)
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
