/* train/net_run.c: a network forward and backward over the kernels API, its layers fused where
 * they can be, packed trials (net->trials > 1) as batched ops or one op per trial's slice, and the
 * bf16 part through net_half.c. Enqueues kernel ops only (no host reads of device data), so a
 * whole training step can be captured into a graph. */
#include <stdlib.h>
#include <string.h>

#include "net_internal.h"

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

/* A forward at a batch other than the one the network was made for (evaluation's last, partial
 * batch) whose convolutions need more workspace than net->ws holds runs on net->ws_other, grown
 * here; net->ws itself never moves (captured graphs hold its address). Never under capture: the
 * captured step runs at the network's batch. */
static void *other_batch_ws(hone_net *net, int n)
{
    size_t need = 0;
    for (int i = 0; i < net->nlayers; i++)
        if (net->layers[i].kind == L_CONV) {
            size_t b = net__conv_ws(net, i, n);
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
                net__half_fwd(net, i, n, training);
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
            net__conv_desc(L, n, &d);
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
            net__half_bwd(net, i, n);
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
            net__conv_desc(L, n, &d);
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
