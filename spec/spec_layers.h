/* spec/spec_layers.h: each network of the spec (mlp, cnn, resnet18, resnet34, detectnet_v2) as a
 * pure list of layers: kind, shapes, channels, kernel, stride, padding and the layers each one
 * reads. No kernels and no buffers: train/net.c turns each entry into its kernels and buffers, and
 * spec_check.c's estimate (hone_spec_estimate) prices the same entries, so the two cannot drift. */
#ifndef HONE_SPEC_LAYERS_H
#define HONE_SPEC_LAYERS_H

#include "spec.h"

typedef enum {
    HONE_LAYER_CONV,    /* r x r convolution, stride, padding; a bias unless batch norm follows */
    HONE_LAYER_DENSE,   /* fully connected, with a bias */
    HONE_LAYER_RELU,    /* elementwise */
    HONE_LAYER_POOL,    /* r x r max pooling, stride, padding */
    HONE_LAYER_BN,      /* batch norm: gamma, beta, running mean and variance per channel */
    HONE_LAYER_DROPOUT, /* only where the probability is above 0 */
    HONE_LAYER_ADD,     /* residual join: in + in2, then relu */
    HONE_LAYER_GAP      /* global average pooling */
} hone_layer_kind;

typedef struct {
    hone_layer_kind kind;
    int c, h, w;        /* input per sample */
    int oc, oh, ow;     /* output per sample */
    int in, in2;        /* the layers read (-1: the network input); in2: a join's skip input */
    int r, stride, pad; /* conv: square kernel side; pool: window side */
    int bias;           /* conv: has a bias */
    int gamma0;         /* bn: initial gamma is 0 (the last norm of a residual block) */
    float p;            /* dropout probability */
} hone_layer_desc;

typedef struct {
    hone_layer_desc *v; /* malloc'd; hone_layers_free */
    int n, cap;
} hone_layers;

/* The layers of s's network for [c, h, w] inputs and `classes` outputs (detectnet_v2: 5 x classes
 * channels at stride 16). HONE_EINVAL for a network without a description (out left empty). */
int hone_spec_layers(const hone_spec *s, int c, int h, int w, int classes, hone_layers *out);
void hone_layers_free(hone_layers *l);

/* Fine-tuning's rule (model.pretrained): which layers of network `to` take their parameters from
 * network `from`, those that agree in kind, channels, kernel, stride, padding, bias and inputs (a
 * dense layer's input size too): every such layer when both have one graph (the same layer kinds
 * reading the same layers: a new head, a first convolution of other channels stays fresh), else
 * the leading ones up to the first that does not agree (a classifier's backbone into
 * detectnet_v2). done[to->n]: 1 for each; returns how many of them hold parameters (conv, dense,
 * batch norm). hone-train copies by it; it and the controller refuse a model that gives none. */
int hone_layers_fit(const hone_layers *from, const hone_layers *to, unsigned char *done);

/* What the layers cost at batch n: one trial's trainable parameters (*params) and batch-norm
 * running statistics (*nstate) in floats, and the bytes of the per-layer buffers (*bytes: each
 * layer's output and its gradient as floats, a pool's int32 argmax, a dropout's byte mask, a
 * norm's saved mean and 1/std), and the largest convolution workspace (*ws: as
 * kernels/cuda/conv.cu sizes it; the CPU backend needs less). Counts saturate. */
void hone_layers_cost(const hone_layers *l, uint64_t n, uint64_t *params, uint64_t *nstate,
                      uint64_t *bytes, uint64_t *ws);

#endif
