/* spec/spec_check.c: the cross-key rules and the size limits of spec.h: what a spec costs to
 * train (parameters and device memory, mirroring what train/net.c and train/loop.c allocate) and
 * whether a worker can train it. Must stay in step with train/net.c: tests/train checks the
 * parameter count against the network it builds (mlp, cnn, resnet18, resnet34, detectnet_v2). */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "spec_internal.h"

static uint64_t add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t mul(uint64_t a, uint64_t b)
{
    return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

/* The shape flowing through the network while it is built, and what its layers allocate. */
typedef struct {
    uint64_t c, h, w;
    uint64_t batch;
    uint64_t params, nstate;
    uint64_t act; /* bytes */
    uint64_t ws;  /* the largest convolution workspace, bytes */
} walk;

/* out and dout of a layer: [batch, c*h*w] floats each */
static void layer_out(walk *k, uint64_t extra_per_elem)
{
    uint64_t n = mul(k->batch, mul(k->c, mul(k->h, k->w)));
    k->act = add(k->act, mul(n, 8 + extra_per_elem));
}

/* r x r convolution (output side (side + 2*pad - r) / stride + 1), with or without bias.
 * Workspace as kernels/cuda/conv.cu sizes it for the shape (im2col columns, the output in GEMM
 * layout and the partial weight gradients); the CPU backend's is smaller. */
static void conv_ex(walk *k, uint64_t oc, uint64_t r, uint64_t stride, uint64_t pad, int bias)
{
    uint64_t p = (k->h + 2 * pad - r) / stride + 1, q = (k->w + 2 * pad - r) / stride + 1;
    uint64_t crs = mul(k->c, r * r), npq = mul(k->batch, mul(p, q));
    uint64_t pa = mul(mul(k->batch, oc), add(crs, 1));
    uint64_t pb = mul(mul(k->batch, oc), (mul(p, q) + 255) / 256);
    uint64_t ws = mul(add(mul(add(crs, oc), npq), pa > pb ? pa : pb), 4);
    if (ws > k->ws)
        k->ws = ws;
    k->params = add(k->params, add(mul(oc, crs), bias ? oc : 0));
    k->c = oc;
    k->h = p;
    k->w = q;
    layer_out(k, 0);
}

/* 3x3 convolution, stride 1, padding 1, with bias (cnn). */
static void conv(walk *k, uint64_t oc)
{
    conv_ex(k, oc, 3, 1, 1, 1);
}

static void dense(walk *k, uint64_t out)
{
    k->params = add(k->params, add(mul(out, mul(k->c, mul(k->h, k->w))), out));
    k->c = out;
    k->h = k->w = 1;
    layer_out(k, 0);
}

static void batchnorm(walk *k)
{
    k->params = add(k->params, mul(2, k->c));
    k->nstate = add(k->nstate, mul(2, k->c));
    k->act = add(k->act, mul(8, k->c)); /* saved mean and 1/std */
    layer_out(k, 0);
}

static void pool(walk *k)
{
    k->h /= 2;
    k->w /= 2;
    layer_out(k, 4); /* + int32 argmax */
}

static void dropout(walk *k, double p)
{
    if (p > 0.0)
        layer_out(k, 1); /* + byte mask */
}

/* One BasicBlock as train/net.c's add_block: conv, BN, ReLU, conv, BN, the projection (conv 1x1
 * + BN) when the stride or the channels change, the join (add + ReLU). */
static void block(walk *k, uint64_t oc, uint64_t stride)
{
    walk in = *k;
    conv_ex(k, oc, 3, stride, 1, 0);
    batchnorm(k);
    layer_out(k, 0); /* relu */
    conv_ex(k, oc, 3, 1, 1, 0);
    batchnorm(k);
    if (stride != 1 || in.c != oc) {
        walk sk = *k; /* the projection reads the block's input, with the totals so far */
        sk.c = in.c, sk.h = in.h, sk.w = in.w;
        conv_ex(&sk, oc, 1, stride, 0, 0);
        batchnorm(&sk);
        sk.c = k->c, sk.h = k->h, sk.w = k->w;
        *k = sk;
    }
    layer_out(k, 0); /* join */
}

/* ResNet-18 / -34 as train/net.c's add_resnet. */
static void resnet(walk *k, const int blocks[4], uint64_t width, double drop, uint64_t classes)
{
    if (k->h <= 64 && k->w <= 64) {
        conv_ex(k, width, 3, 1, 1, 0);
        batchnorm(k);
        layer_out(k, 0);
    } else {
        conv_ex(k, width, 7, 2, 3, 0);
        batchnorm(k);
        layer_out(k, 0);
        k->h = (k->h + 2 - 3) / 2 + 1; /* 3x3 stride-2 pad-1 max-pool */
        k->w = (k->w + 2 - 3) / 2 + 1;
        layer_out(k, 4); /* + int32 argmax */
    }
    for (int s = 0; s < 4; s++)
        for (int i = 0; i < blocks[s]; i++)
            block(k, width << s, s > 0 && i == 0 ? 2 : 1);
    k->h = k->w = 1; /* global average pool */
    layer_out(k, 0);
    dropout(k, drop);
    dense(k, classes);
}

/* detectnet_v2 as train/net.c's add_detectnet: the ResNet's ImageNet stem (7x7 stride 2, BN, ReLU,
 * 3x3 stride-2 max-pool) whatever the input size, its first three stages (stride 16), then one
 * 1x1 convolution with bias giving the coverage (classes) and box (4 x classes) channels, and the
 * loss's gradient buffer (the layer's dout holds it already). */
static void detectnet(walk *k, const int blocks[4], uint64_t width, uint64_t classes)
{
    conv_ex(k, width, 7, 2, 3, 0);
    batchnorm(k);
    layer_out(k, 0);
    k->h = (k->h + 2 - 3) / 2 + 1;
    k->w = (k->w + 2 - 3) / 2 + 1;
    layer_out(k, 4);
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < blocks[s]; i++)
            block(k, width << s, s > 0 && i == 0 ? 2 : 1);
    conv_ex(k, mul(5, classes), 1, 1, 0, 1);
}

void hone_spec_input_shape(const hone_spec *s, const hone_spec_data *d, int *c, int *h, int *w)
{
    int folder = !strcmp(s->data.format, "image_folder");
    int kitti = !strcmp(s->data.format, "kitti");
    *c = s->data.channels > 0 ? s->data.channels : d && d->c > 0 ? d->c : folder || kitti ? 3 : 1;
    if (s->model.input_size > 0) {
        *h = *w = s->model.input_size;
    } else if (kitti) {
        *h = *w = 128; /* KITTI images vary in size: packed at a fixed one */
    } else if (folder) {
        *h = *w = 32;
    } else {
        *h = d && d->h > 0 ? d->h : 28;
        *w = d && d->w > 0 ? d->w : 28;
    }
}

void hone_spec_estimate(const hone_spec *s, const hone_spec_data *d, hone_spec_cost *out)
{
    memset(out, 0, sizeof(*out));
    int ic, ih, iw;
    hone_spec_input_shape(s, d, &ic, &ih, &iw);
    uint64_t c = (uint64_t)ic, h = (uint64_t)ih, w = (uint64_t)iw;
    uint64_t classes = d && d->classes > 0 ? (uint64_t)d->classes : 10;
    long long ntrain = -1, ntest = -1;
    /* as train/dataset.c splits the files */
    if (d && d->train_images >= 0 && d->train_images > s->data.val_size) {
        ntrain = d->train_images - s->data.val_size;
        if (s->data.train_limit > 0 && s->data.train_limit < ntrain)
            ntrain = s->data.train_limit;
    }
    if (d && d->test_images >= 0) {
        ntest = d->test_images;
        if (s->data.test_limit > 0 && s->data.test_limit < ntest)
            ntest = s->data.test_limit;
    }
    long long batch = s->train.batch_size > 0 ? s->train.batch_size : 1;
    if (ntrain > 0 && ntrain < batch) /* train/loop.c trains on at most the whole set */
        batch = ntrain;
    out->batch = batch;

    walk k = {.c = c, .h = h, .w = w, .batch = (uint64_t)batch};
    uint64_t grid = 0; /* detectnet_v2: target floats an image */
    int bn = s->model.batchnorm;
    uint64_t hidden = s->model.hidden > 0 ? (uint64_t)s->model.hidden : 1;
    if (!strcmp(s->network, "cnn")) {
        static const uint64_t widths[2] = {32, 64};
        for (int i = 0; i < 2; i++) {
            conv(&k, widths[i]);
            if (bn)
                batchnorm(&k);
            pool(&k);
            layer_out(&k, 0); /* relu */
        }
        dense(&k, hidden);
        if (bn)
            batchnorm(&k);
        layer_out(&k, 0);
        dropout(&k, s->model.dropout);
        dense(&k, classes);
    } else if (!strcmp(s->network, "resnet18") || !strcmp(s->network, "resnet34")) {
        static const int r18[4] = {2, 2, 2, 2}, r34[4] = {3, 4, 6, 3};
        uint64_t width = s->model.width > 0 ? (uint64_t)s->model.width : 1;
        resnet(&k, s->network[6] == '1' ? r18 : r34, width, s->model.dropout, classes);
    } else if (!strcmp(s->network, "detectnet_v2")) {
        static const int r18[4] = {2, 2, 2, 2}, r34[4] = {3, 4, 6, 3};
        uint64_t width = s->model.width > 0 ? (uint64_t)s->model.width : 1;
        detectnet(&k, strcmp(s->model.backbone, "resnet34") ? r18 : r34, width, classes);
        /* the batch's targets: coverage, weights (classes each) and boxes (4 x classes) a cell */
        grid = mul(mul(6, classes), mul(k.h, k.w));
    } else {
        for (int i = 0; i < s->model.depth; i++) {
            dense(&k, hidden);
            if (bn)
                batchnorm(&k);
            layer_out(&k, 0);
            dropout(&k, s->model.dropout);
        }
        dense(&k, classes);
    }
    out->params = k.params;
    uint64_t copies = 2 + (strcmp(s->train.optimizer, "adamw") == 0 ? 2 : 1);
    out->model_bytes = add(mul(mul(k.params, copies), 4), mul(k.nstate, 4));
    /* + the batch's images and labels (gathered each step) and the step's lr schedule */
    uint64_t row = mul(c, mul(h, w));
    uint64_t act = add(add(k.act, k.ws), mul((uint64_t)batch, add(mul(row, 4), 4)));
    act = add(act, mul((uint64_t)batch, mul(grid, 4)));
    if (ntrain > 0)
        act = add(act, mul((uint64_t)(ntrain / batch), 4));
    out->act_bytes = act;
    if (ntrain > 0 && ntest >= 0) {
        /* train/val/test images (uint8 pixels: normalised batch by batch) and labels on the
         * device, and the epoch's permutation */
        uint64_t n = (uint64_t)ntrain + (uint64_t)s->data.val_size + (uint64_t)ntest;
        out->data_bytes = add(mul(n, add(add(row, 4), mul(grid, 4))), mul((uint64_t)ntrain, 4));
    }
}

static int fail(char *field, size_t fieldlen, const char *key, char *err, size_t errlen,
                const char *fmt, ...)
{
    if (field && fieldlen)
        snprintf(field, fieldlen, "%s", key);
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return HONE_EINVAL;
}

static double gib(uint64_t b)
{
    return (double)b / (double)(1ULL << 30);
}

/* The size limits, which need to know the data (its shape and how many images). */
static int check_size(const hone_spec *s, const hone_spec_data *d, char *field, size_t fieldlen,
                      char *err, size_t errlen)
{
    if (d->train_images >= 0 && s->data.val_size >= d->train_images)
        return fail(field, fieldlen, "data.val_size", err, errlen,
                    "data.val_size: %d leaves no training images (the training file has %lld)",
                    s->data.val_size, d->train_images);
    hone_spec_cost c;
    hone_spec_estimate(s, d, &c);
    /* sized by model.width, not model.hidden */
    int res = !strncmp(s->network, "resnet", 6) || !strcmp(s->network, "detectnet_v2");
    if (c.params > HONE_SPEC_MAX_PARAMS && res)
        return fail(field, fieldlen, "model.width", err, errlen,
                    "model.width: this %s (model.width %d) has %llu parameters, above the limit "
                    "of %llu",
                    s->network, s->model.width, (unsigned long long)c.params,
                    (unsigned long long)HONE_SPEC_MAX_PARAMS);
    if (c.params > HONE_SPEC_MAX_PARAMS)
        return fail(field, fieldlen, "model.hidden", err, errlen,
                    "model.hidden: this %s (model.hidden %d, model.depth %d) has %llu parameters, "
                    "above the limit of %llu",
                    s->network, s->model.hidden, s->model.depth, (unsigned long long)c.params,
                    (unsigned long long)HONE_SPEC_MAX_PARAMS);
    uint64_t total = add(add(c.model_bytes, c.act_bytes), c.data_bytes);
    if (total > HONE_SPEC_MAX_BYTES) {
        const char *key = "train.batch_size";
        if (c.model_bytes >= c.act_bytes && c.model_bytes >= c.data_bytes)
            key = res ? "model.width" : "model.hidden";
        else if (c.data_bytes > c.act_bytes)
            key = "data.train_limit";
        return fail(field, fieldlen, key, err, errlen,
                    "%s: training needs about %.1f GiB (weights, gradients and optimiser state "
                    "%.1f GiB, activations at batch %lld %.1f GiB, data %.1f GiB), above the "
                    "%.0f GiB a worker is assumed to have",
                    key, gib(total), gib(c.model_bytes), c.batch, gib(c.act_bytes),
                    gib(c.data_bytes), gib(HONE_SPEC_MAX_BYTES));
    }
    return HONE_OK;
}

int hone_spec_check(const hone_spec *s, const hone_spec_data *d, char *field, size_t fieldlen,
                    char *err, size_t errlen)
{
    char f[64];
    if (spec__check_stored(s, f, sizeof f, err, errlen) != HONE_OK) {
        if (field && fieldlen)
            snprintf(field, fieldlen, "%s", f);
        return HONE_EINVAL;
    }
    if (!s->data.path[0])
        return fail(field, fieldlen, "data.path", err, errlen, "data.path: must be set");
    hone_spec def;
    hone_spec_defaults(&def, s->network);
    for (size_t i = 0; i < hone_spec_nkeys(); i++) {
        const hone_spec_key *k = hone_spec_key_at(i);
        if (!hone_spec_key_used_by(k, s->network) && !spec__same_value(s, &def, k)) {
            json_t *v = hone_spec_get_json(&def, k->name);
            char *t = json_dumps(v, JSON_ENCODE_ANY);
            int rc = fail(field, fieldlen, k->name, err, errlen,
                          "%s: %s does not use it (leave it at %s)", k->name, s->network,
                          t ? t : "its default");
            free(t);
            json_decref(v);
            return rc;
        }
    }
    if (s->data.channels == 2)
        return fail(field, fieldlen, "data.channels", err, errlen,
                    "data.channels: 2 is not an image layout (0: the data's own, 1: grey, 3: RGB)");
    if (s->model.input_size > 0 && s->model.input_size < 8)
        return fail(field, fieldlen, "model.input_size", err, errlen,
                    "model.input_size: %d is below the smallest trainable size, 8 (0: the data's "
                    "own)",
                    s->model.input_size);
    if (!strcmp(s->data.format, "idx")) {
        int ih = d && d->h > 0 ? d->h : 28, iw = d && d->w > 0 ? d->w : 28;
        if (s->model.input_size > 0 && (s->model.input_size != ih || s->model.input_size != iw))
            return fail(field, fieldlen, "model.input_size", err, errlen,
                        "model.input_size: idx images are %dx%d and are not resized (leave it at "
                        "0, or use an image folder)",
                        ih, iw);
        if (s->data.channels == 3)
            return fail(field, fieldlen, "data.channels", err, errlen,
                        "data.channels: idx images are grey (leave it at 0 or 1)");
    }
    int det = !strcmp(s->network, "detectnet_v2"), kitti = !strcmp(s->data.format, "kitti");
    if (det && !kitti)
        return fail(field, fieldlen, "network", err, errlen,
                    "network: detectnet_v2 detects objects and trains on a kitti dataset, not %s",
                    s->data.format);
    if (kitti && !det)
        return fail(field, fieldlen, "network", err, errlen,
                    "network: %s classifies images; a kitti dataset trains detectnet_v2",
                    s->network);
    if (det) {
        int c, h, w;
        hone_spec_input_shape(s, d, &c, &h, &w);
        if (h < 64 || w < 64 || h % s->detect.stride || w % s->detect.stride)
            return fail(field, fieldlen, "model.input_size", err, errlen,
                        "model.input_size: detectnet_v2 needs a multiple of detect.stride (%d) of "
                        "at least 64, got %dx%d",
                        s->detect.stride, h, w);
    }
    if (!strcmp(s->network, "cnn")) {
        int c, h, w;
        hone_spec_input_shape(s, d, &c, &h, &w);
        if (h < 4 || w < 4)
            return fail(field, fieldlen, "model.input_size", err, errlen,
                        "model.input_size: cnn pools twice and needs at least 4x4 images");
    }
    if (s->train.min_lr > s->train.lr)
        return fail(field, fieldlen, "train.min_lr", err, errlen,
                    "train.min_lr: %g exceeds train.lr %g", s->train.min_lr, s->train.lr);
    if (s->train.warmup_epochs > s->train.epochs)
        return fail(field, fieldlen, "train.warmup_epochs", err, errlen,
                    "train.warmup_epochs: %g exceeds train.epochs %d", s->train.warmup_epochs,
                    s->train.epochs);
    return d ? check_size(s, d, field, fieldlen, err, errlen) : HONE_OK;
}
