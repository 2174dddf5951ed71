/* train/net.h (private): a network as a list of conv, dense, relu, max-pool, batch-norm, dropout,
 * residual-join (add + relu) and global-average-pool layers over the kernels API. Each layer names
 * the layer it reads (mlp and cnn: the one before it; resnets branch and join), and a layer whose
 * output feeds several others gets their gradients summed. Parameters live in one device buffer
 * (decayed weights first, then biases and norm scales), so an optimiser step is two fused calls. */
#ifndef HONE_TRAIN_NET_H
#define HONE_TRAIN_NET_H

#include "spec_layers.h"
#include "train.h"

/* Batch norm's epsilon, var + eps under the square root (export.c writes it into the model). */
#define NET_BN_EPS 1e-5f

/* The kinds of spec/spec_layers.h, whose list net.c builds. */
typedef enum {
    L_CONV = HONE_LAYER_CONV,
    L_DENSE = HONE_LAYER_DENSE,
    L_RELU = HONE_LAYER_RELU,
    L_POOL = HONE_LAYER_POOL,
    L_BN = HONE_LAYER_BN,
    L_DROPOUT = HONE_LAYER_DROPOUT,
    L_ADD = HONE_LAYER_ADD,
    L_GAP = HONE_LAYER_GAP
} layer_kind;

typedef struct {
    layer_kind kind;
    int c, h, w;             /* input per sample */
    int oc, oh, ow;          /* output per sample */
    int in, in2;             /* the layers read (-1: the network input); in2: L_ADD's skip input */
    int r, stride, pad;      /* conv: square kernel side; pool: window side */
    int bias;                /* conv: has a bias (not when batch norm follows) */
    int acc;                 /* backward adds to in's dout (a later layer wrote it first) */
    int gamma0;              /* bn: initial gamma is 0 (the last norm of a residual block) */
    size_t w_off, b_off;     /* into params: weights (decay region), bias/gamma-beta (no-decay) */
    size_t s_off;            /* bn: running mean, var into net->state */
    float p;                 /* dropout probability (trial 0's) */
    float *tp;               /* dropout: each trial's probability (host, net->trials floats) */
    int rng;                 /* dropout: index of its counter in net->counters */
    float *out, *dout;       /* [batch, oc*oh*ow] (NULL for the bf16 layers of a half network) */
    hone_bf16 *hout, *hdout; /* half networks, the layers before the global pool: [batch, oh, ow,
                                oc] bf16 NHWC (kernels.h) */
    hone_bf16 *wh;           /* half conv: its filters as bf16 KRSC, refreshed each forward */
    int32_t *idx;            /* pool argmax */
    uint8_t *mask;           /* dropout */
    float *save_mean, *save_invstd; /* [trials][c] */
} layer;

/* Packed trials (HFTA): a network built for `trials` trials keeps every per-sample buffer as
 * [trials][n][...] (n the samples of the call: trial t's activations at t * n * size are exactly
 * those of its solo network), and params, grads, state and counters trial-major: trial t's slice
 * params + t * nparams IS a solo network's params (the flat order below), so checkpoints, models
 * and evaluation reuse the solo code. trials == 1 runs exactly the ops of a solo network. */
typedef struct hone_net {
    hone_kctx *k;
    int trials; /* >= 1 */
    int batch, in_c, in_h, in_w, classes;
    layer *layers;
    int nlayers;
    size_t nparams, ndecay;        /* one trial's: params[0..ndecay) get weight decay */
    size_t nstate;                 /* one trial's bn running statistics */
    float *params, *grads, *state; /* [trials][nparams], [trials][nstate] */
    uint64_t *counters; /* device [trials][ncounters]: one per dropout layer + augmentation */
    int ncounters;      /* a trial's */
    void *ws;           /* conv workspace shared by all conv layers */
    size_t ws_bytes;
    size_t layer_bytes; /* the layers' own buffers (out, dout, hout, hdout, idx, mask, saves) */
    void *ws_other;     /* a forward at another batch that needs more (net_forward), or NULL */
    size_t ws_other_bytes;
    uint64_t *seeds; /* each trial's train.seed (host) */
    /* train.math=bf16 on CUDA for a resnet backbone (net.c's half_eligible): the layers before
     * half_end keep bf16 NHWC activations; xh is the input converted. Layer half_end, the first
     * in fp32, reads layer half_end - 1: a global pool reads its bf16 output itself, any other
     * layer (detectnet_v2's head) through that layer's fp32 NCHW copy (out/dout, converted each
     * way). Parameters, their gradients and every later layer stay fp32. */
    int half, half_end;
    hone_bf16 *xh;
} hone_net;

/* Builds the network the spec names (mlp, cnn, resnet18, resnet34, detectnet_v2) for
 * [batch, c, h, w] inputs; initialises parameters (He) from spec->train.seed. HONE_EINVAL for an
 * unknown network. detectnet_v2's output is [batch, 5 * classes, h / 16, w / 16] (net.c). */
int net_new(hone_kctx *k, const hone_train_spec *spec, int batch, int c, int h, int w, int classes,
            hone_net **out);
/* net_new for `trials` packed trials of specs[0..trials), one network each as net_new would build
 * it (each slice initialised from its own train.seed, its own dropout probability), in one set of
 * buffers. The specs must agree on the network (hone_train_pack_key); HONE_EINVAL when they do
 * not, and for trials > 1 of resnet18/34 and detectnet_v2 (their residual joins and gradient
 * sums have no packed form yet). */
int net_new_pack(hone_kctx *k, const hone_train_spec *const *specs, int trials, int batch, int c,
                 int h, int w, int classes, hone_net **out);
void net_free(hone_net *n);
/* model.pretrained: copies into every trial of net the parameters and norm statistics of a model
 * of src_spec's network for [c, h, w] inputs and `classes` classes (its flat params[nparams] and
 * state[nstate], as model.bin holds them), layer by layer where the two agree in kind, channels,
 * kernel, stride, padding, bias and inputs: every such layer when both have one graph (the same
 * layer kinds reading the same layers; the others keep their fresh initialisation), else from the
 * first while they agree. done[net->nlayers]: 1 for each layer copied. *layers: the layers
 * copied; *copied: the floats copied. HONE_EPARSE when the arrays are not of the network src_spec
 * builds, HONE_EINVAL for a network it cannot build. */
int net_copy_prefix(hone_net *net, const hone_train_spec *src_spec, int c, int h, int w,
                    int classes, const float *params, size_t nparams, const float *state,
                    size_t nstate, unsigned char *done, int *layers, size_t *copied);
/* Forward n <= batch samples of each trial, x [trials][n][c][h][w]; returns the logits buffer
 * [trials][n][classes]. */
const float *net_forward(hone_net *net, const float *x, int n, int training);
/* Backward from dlogits (written into the last layer's dout by the caller). */
void net_backward(hone_net *net, const float *x, int n);
/* The last layer's dout [trials][n][classes], where softmax_xent writes dlogits. */
float *net_dlogits(hone_net *net);

/* For export.c: the trainer's network (borrowed), host copies of its parameters and norm
 * statistics (*params: net->nparams floats, *state: net->nstate; the caller frees both) and of the
 * input normalisation (*norm: c means, then c reciprocal deviations; the caller frees it). */
int hone_trainer_snapshot(hone_trainer *t, const hone_net **net, float **params, float **state,
                          float **norm);

#endif
