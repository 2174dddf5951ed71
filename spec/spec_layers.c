/* spec/spec_layers.c: the one description of each network (spec_layers.h): the list of layers that
 * train/net.c builds and hone_spec_estimate prices. Shapes only; nothing here allocates beyond the
 * list. */
#include <stdlib.h>
#include <string.h>

#include "spec_layers.h"

/* The list being written, the shape flowing out of layer cur and the layer the next one reads. */
typedef struct {
    hone_layers *l;
    int c, h, w;
    int cur; /* -1: the network input */
} walk;

static hone_layer_desc *push(walk *b, hone_layer_kind kind, int oc, int oh, int ow)
{
    hone_layers *l = b->l;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 32;
        l->v = hone_xrealloc(l->v, sizeof(hone_layer_desc) * (size_t)l->cap);
    }
    hone_layer_desc *L = &l->v[l->n];
    memset(L, 0, sizeof(*L));
    L->kind = kind;
    L->c = b->c;
    L->h = b->h;
    L->w = b->w;
    L->in = b->cur;
    L->in2 = -1;
    L->oc = b->c = oc;
    L->oh = b->h = oh;
    L->ow = b->w = ow;
    b->cur = l->n++;
    return L;
}

/* The next layer reads layer i's output (the branches of a residual block). */
static void read_from(walk *b, int i)
{
    const hone_layer_desc *L = &b->l->v[i];
    b->cur = i;
    b->c = L->oc;
    b->h = L->oh;
    b->w = L->ow;
}

/* r x r convolution; output side (side + 2*pad - r) / stride + 1 as hone_conv_desc_init. */
static void conv(walk *b, int oc, int r, int stride, int pad, int bias)
{
    int oh = (b->h + 2 * pad - r) / stride + 1, ow = (b->w + 2 * pad - r) / stride + 1;
    hone_layer_desc *L = push(b, HONE_LAYER_CONV, oc, oh, ow);
    L->r = r;
    L->stride = stride;
    L->pad = pad;
    L->bias = bias;
}

static void dense(walk *b, int out)
{
    push(b, HONE_LAYER_DENSE, out, 1, 1);
}

static void same(walk *b, hone_layer_kind kind)
{
    push(b, kind, b->c, b->h, b->w);
}

/* 2x2 max pooling, stride 2 (the cnn): the side halves, rounding down. */
static void pool2(walk *b)
{
    hone_layer_desc *L = push(b, HONE_LAYER_POOL, b->c, b->h / 2, b->w / 2);
    L->r = L->stride = 2;
}

/* size x size max pooling with padding (the ImageNet stem's 3/2/1). */
static void pool(walk *b, int size, int stride, int pad)
{
    hone_layer_desc *L = push(b, HONE_LAYER_POOL, b->c, (b->h + 2 * pad - size) / stride + 1,
                              (b->w + 2 * pad - size) / stride + 1);
    L->r = size;
    L->stride = stride;
    L->pad = pad;
}

static void dropout(walk *b, double p)
{
    if (p > 0.0)
        push(b, HONE_LAYER_DROPOUT, b->c, b->h, b->w)->p = (float)p;
}

/* One BasicBlock: conv3x3(stride) -> BN -> ReLU -> conv3x3 -> BN, joined by add + ReLU with the
 * block's input, or with a 1x1 stride-s conv + BN projection of it when the stride or the channels
 * change. Convs before a BN have no bias. The block's last BN starts at gamma 0, so each block
 * starts as the identity (Goyal et al. 2017: steadier early training at large batch and lr). */
static void block(walk *b, int oc, int stride)
{
    int in = b->cur, c = b->c;
    conv(b, oc, 3, stride, 1, 0);
    same(b, HONE_LAYER_BN);
    same(b, HONE_LAYER_RELU);
    conv(b, oc, 3, 1, 1, 0);
    same(b, HONE_LAYER_BN);
    b->l->v[b->l->n - 1].gamma0 = 1;
    int main_out = b->l->n - 1, skip = in;
    if (stride != 1 || c != oc) {
        read_from(b, in);
        conv(b, oc, 1, stride, 0, 0);
        same(b, HONE_LAYER_BN);
        skip = b->l->n - 1;
    }
    read_from(b, main_out);
    push(b, HONE_LAYER_ADD, oc, b->h, b->w)->in2 = skip;
}

/* The ImageNet stem: 7x7/2 conv, BN, ReLU, 3x3/2 max-pool (stride 4). */
static void imagenet_stem(walk *b, int width)
{
    conv(b, width, 7, 2, 3, 0);
    same(b, HONE_LAYER_BN);
    same(b, HONE_LAYER_RELU);
    pool(b, 3, 2, 1);
}

/* ResNet-18 ([2,2,2,2]) or -34 ([3,4,6,3]) of BasicBlocks, stage widths w, 2w, 4w, 8w. Inputs up
 * to 64 px a side get the small-image stem (3x3 conv, no pool), larger ones the ImageNet stem.
 * Then global average pooling, dropout, dense to the classes. */
static void resnet(walk *b, const int blocks[4], int width, double p, int classes)
{
    if (b->h <= 64 && b->w <= 64) {
        conv(b, width, 3, 1, 1, 0);
        same(b, HONE_LAYER_BN);
        same(b, HONE_LAYER_RELU);
    } else {
        imagenet_stem(b, width);
    }
    for (int s = 0; s < 4; s++)
        for (int i = 0; i < blocks[s]; i++)
            block(b, width << s, s > 0 && i == 0 ? 2 : 1);
    push(b, HONE_LAYER_GAP, b->c, 1, 1);
    dropout(b, p);
    dense(b, classes);
}

/* DetectNet_v2 (train/detect.h): the ResNet above with the ImageNet stem whatever the input size,
 * cut after its third stage (stride 16: stem 4, stages 2 and 3 halve again), then one 1x1 conv
 * with bias giving per cell the coverage logits (classes channels) and the 4 box offsets a class
 * (4 x classes): the two heads of DetectNet_v2 as one layer, as hone_k_detect_loss reads them. */
static void detectnet(walk *b, const int blocks[4], int width, int classes)
{
    imagenet_stem(b, width);
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < blocks[s]; i++)
            block(b, width << s, s > 0 && i == 0 ? 2 : 1);
    conv(b, 5 * classes, 1, 1, 0, 1);
}

int hone_spec_layers(const hone_spec *s, int c, int h, int w, int classes, hone_layers *out)
{
    memset(out, 0, sizeof(*out));
    walk b = {.l = out, .c = c, .h = h, .w = w, .cur = -1};
    int bn = s->model.batchnorm;
    int hidden = s->model.hidden > 0 ? s->model.hidden : 1;
    int width = s->model.width > 0 ? s->model.width : 1;
    static const int r18[4] = {2, 2, 2, 2}, r34[4] = {3, 4, 6, 3};
    if (!strcmp(s->network, "cnn")) {
        static const int widths[2] = {32, 64};
        for (int i = 0; i < 2; i++) {
            conv(&b, widths[i], 3, 1, 1, 1);
            if (bn)
                same(&b, HONE_LAYER_BN);
            /* pool before relu: max-pool and relu commute (values, argmax and gradients are the
             * same as relu-then-pool), and relu then touches a quarter of the elements */
            pool2(&b);
            same(&b, HONE_LAYER_RELU);
        }
        dense(&b, hidden);
        if (bn)
            same(&b, HONE_LAYER_BN);
        same(&b, HONE_LAYER_RELU);
        dropout(&b, s->model.dropout);
        dense(&b, classes);
    } else if (!strcmp(s->network, "mlp")) {
        for (int i = 0; i < s->model.depth; i++) {
            dense(&b, hidden);
            if (bn)
                same(&b, HONE_LAYER_BN);
            same(&b, HONE_LAYER_RELU);
            dropout(&b, s->model.dropout);
        }
        dense(&b, classes);
    } else if (!strcmp(s->network, "resnet18") || !strcmp(s->network, "resnet34")) {
        resnet(&b, s->network[6] == '1' ? r18 : r34, width, s->model.dropout, classes);
    } else if (!strcmp(s->network, "detectnet_v2")) {
        detectnet(&b, strcmp(s->model.backbone, "resnet34") ? r18 : r34, width, classes);
    } else {
        return HONE_EINVAL;
    }
    return HONE_OK;
}

void hone_layers_free(hone_layers *l)
{
    if (!l)
        return;
    free(l->v);
    memset(l, 0, sizeof(*l));
}

static uint64_t add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t mul(uint64_t a, uint64_t b)
{
    return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

/* Workspace of one convolution at batch n as kernels/cuda/conv.cu sizes it: the im2col columns,
 * the output in GEMM layout and the partial weight gradients. */
static uint64_t conv_ws(const hone_layer_desc *L, uint64_t n)
{
    uint64_t pq = mul((uint64_t)L->oh, (uint64_t)L->ow), oc = (uint64_t)L->oc;
    uint64_t crs = mul((uint64_t)L->c, (uint64_t)L->r * (uint64_t)L->r), npq = mul(n, pq);
    uint64_t pa = mul(mul(n, oc), add(crs, 1));
    uint64_t pb = mul(mul(n, oc), (pq + 255) / 256);
    return mul(add(mul(add(crs, oc), npq), pa > pb ? pa : pb), 4);
}

void hone_layers_cost(const hone_layers *l, uint64_t n, uint64_t *params, uint64_t *nstate,
                      uint64_t *bytes, uint64_t *ws)
{
    uint64_t p = 0, st = 0, b = 0, w = 0;
    for (int i = 0; i < l->n; i++) {
        const hone_layer_desc *L = &l->v[i];
        uint64_t c = (uint64_t)L->c, oc = (uint64_t)L->oc;
        uint64_t in = mul(c, mul((uint64_t)L->h, (uint64_t)L->w));
        uint64_t out = mul(n, mul(oc, mul((uint64_t)L->oh, (uint64_t)L->ow)));
        uint64_t per = 8; /* out and dout, floats */
        switch (L->kind) {
        case HONE_LAYER_CONV: {
            p = add(p, add(mul(oc, mul(c, (uint64_t)L->r * (uint64_t)L->r)), L->bias ? oc : 0));
            uint64_t cw = conv_ws(L, n);
            w = cw > w ? cw : w;
            break;
        }
        case HONE_LAYER_DENSE:
            p = add(p, add(mul(oc, in), oc));
            break;
        case HONE_LAYER_BN:
            p = add(p, mul(2, c));
            st = add(st, mul(2, c));
            b = add(b, mul(8, c)); /* saved mean and 1/std */
            break;
        case HONE_LAYER_POOL:
            per += 4; /* int32 argmax */
            break;
        case HONE_LAYER_DROPOUT:
            per += 1; /* byte mask */
            break;
        default:
            break;
        }
        b = add(b, mul(out, per));
    }
    *params = p;
    *nstate = st;
    *bytes = b;
    *ws = w;
}

/* 1 when layer a of one network and b of another hold the same parameters in the same place of
 * their graphs: kind, channels, kernel, stride, padding, bias, inputs (spatial sizes may differ:
 * convolutions and norms do not depend on them; a dense layer's input must agree). */
static int same_params(const hone_layer_desc *a, const hone_layer_desc *b)
{
    if (a->kind != b->kind || a->c != b->c || a->oc != b->oc || a->in != b->in ||
        a->in2 != b->in2 || a->r != b->r || a->stride != b->stride || a->pad != b->pad ||
        a->bias != b->bias)
        return 0;
    return a->kind != HONE_LAYER_DENSE || (uint64_t)a->c * (uint64_t)a->h * (uint64_t)a->w ==
                                              (uint64_t)b->c * (uint64_t)b->h * (uint64_t)b->w;
}

int hone_layers_fit(const hone_layers *from, const hone_layers *to, unsigned char *done)
{
    int n = from->n < to->n ? from->n : to->n, count = 0;
    int graph = from->n == to->n; /* one graph: the same kinds reading the same layers */
    for (int i = 0; graph && i < n; i++)
        graph = from->v[i].kind == to->v[i].kind && from->v[i].in == to->v[i].in &&
                from->v[i].in2 == to->v[i].in2;
    for (int i = 0; i < to->n; i++)
        done[i] = 0;
    for (int i = 0; i < n; i++) {
        if (!same_params(&from->v[i], &to->v[i])) {
            if (graph)
                continue; /* this layer stays fresh; the next may agree again */
            break;
        }
        done[i] = 1;
        count += to->v[i].kind == HONE_LAYER_CONV || to->v[i].kind == HONE_LAYER_DENSE ||
                 to->v[i].kind == HONE_LAYER_BN;
    }
    return count;
}
