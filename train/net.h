/* train/net.h (private): a network as a list of conv, dense, relu, max-pool, batch-norm, dropout,
 * residual-join (add + relu) and global-average-pool layers over the kernels API. Each layer names
 * the layer it reads (mlp and cnn: the one before it; resnets branch and join), and a layer whose
 * output feeds several others gets their gradients summed. Parameters live in one device buffer
 * (decayed weights first, then biases and norm scales), so an optimiser step is two fused calls. */
#ifndef HONE_TRAIN_NET_H
#define HONE_TRAIN_NET_H

#include "train.h"

/* Batch norm's epsilon, var + eps under the square root (export.c writes it into the model). */
#define NET_BN_EPS 1e-5f

typedef enum { L_CONV, L_DENSE, L_RELU, L_POOL, L_BN, L_DROPOUT, L_ADD, L_GAP } layer_kind;

typedef struct {
    layer_kind kind;
    int c, h, w;         /* input per sample */
    int oc, oh, ow;      /* output per sample */
    int in, in2;         /* the layers read (-1: the network input); in2: L_ADD's skip input */
    int r, stride, pad;  /* conv: square kernel side; pool: window side */
    int bias;            /* conv: has a bias (not when batch norm follows) */
    int acc;             /* backward adds to in's dout (a later layer wrote it first) */
    int gamma0;          /* bn: initial gamma is 0 (the last norm of a residual block) */
    size_t w_off, b_off; /* into params: weights (decay region), bias/gamma-beta (no-decay) */
    size_t s_off;        /* bn: running mean, var into net->state */
    float p;             /* dropout probability */
    int rng;             /* dropout: index of its counter in net->counters */
    float *out, *dout;   /* [batch, oc*oh*ow] */
    int32_t *idx;        /* pool argmax */
    uint8_t *mask;       /* dropout */
    float *save_mean, *save_invstd;
} layer;

typedef struct hone_net {
    hone_kctx *k;
    int batch, in_c, in_h, in_w, classes;
    layer *layers;
    int nlayers;
    size_t nparams, ndecay; /* params[0..ndecay) get weight decay */
    size_t nstate;          /* bn running statistics */
    float *params, *grads, *state;
    uint64_t *counters; /* device: one per dropout layer + one for augmentation */
    int ncounters;
    void *ws; /* conv workspace shared by all conv layers */
    size_t ws_bytes;
    uint64_t seed;
} hone_net;

/* Builds the network the spec names (mlp, cnn, resnet18, resnet34, detectnet_v2) for
 * [batch, c, h, w] inputs; initialises parameters (He) from spec->train.seed. HONE_EINVAL for an
 * unknown network. detectnet_v2's output is [batch, 5 * classes, h / 16, w / 16] (net.c). */
int net_new(hone_kctx *k, const hone_train_spec *spec, int batch, int c, int h, int w, int classes,
            hone_net **out);
void net_free(hone_net *n);
/* Forward n <= batch samples of x; returns the logits buffer [n, classes]. */
const float *net_forward(hone_net *net, const float *x, int n, int training);
/* Backward from dlogits (written into the last layer's dout by the caller). */
void net_backward(hone_net *net, const float *x, int n);
/* The last layer's dout, where softmax_xent writes dlogits. */
float *net_dlogits(hone_net *net);

/* For export.c: the trainer's network (borrowed), host copies of its parameters and norm
 * statistics (*params: net->nparams floats, *state: net->nstate; the caller frees both) and of the
 * input normalisation (*norm: c means, then c reciprocal deviations; the caller frees it). */
int hone_trainer_snapshot(hone_trainer *t, const hone_net **net, float **params, float **state,
                          float **norm);

#endif
