/* spec/spec_check.c: the cross-key rules and the size limits of spec.h: what a spec costs to
 * train (parameters and device memory: the network's layers as spec_layers.c lists them, which
 * train/net.c builds, and the buffers train/loop.c adds) and whether a worker can train it.
 * tests/train/test_train_estimate.c compares the estimate with the buffers net.c allocates. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "spec_layers.h"
#include "spec_internal.h"

static uint64_t add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t mul(uint64_t a, uint64_t b)
{
    return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

void hone_spec_input_shape(const hone_spec *s, const hone_spec_data *d, int *c, int *h, int *w)
{
    int folder = !strcmp(s->data.format, "image_folder");
    int kitti = hone_spec_format_detect(s->data.format);
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

    hone_layers l;
    uint64_t grid = 0; /* detectnet_v2: target floats an image */
    uint64_t nstate = 0;
    if (hone_spec_layers(s, ic, ih, iw, (int)classes, &l) == HONE_OK && l.n > 0) {
        hone_layers_cost(&l, (uint64_t)batch, &out->params, &nstate, &out->layer_bytes,
                         &out->ws_bytes);
        const hone_layer_desc *last = &l.v[l.n - 1];
        /* the batch's targets: coverage, weights (classes each) and boxes (4 x classes) a cell */
        if (!strcmp(s->network, "detectnet_v2"))
            grid = mul(mul(6, classes), mul((uint64_t)last->oh, (uint64_t)last->ow));
    }
    hone_layers_free(&l);
    uint64_t copies = 2 + (strcmp(s->train.optimizer, "adamw") == 0 ? 2 : 1);
    out->model_bytes = add(mul(mul(out->params, copies), 4), mul(nstate, 4));
    /* + the batch's images and labels (gathered each step) and the step's lr schedule */
    uint64_t row = mul(c, mul(h, w));
    uint64_t act =
        add(add(out->layer_bytes, out->ws_bytes), mul((uint64_t)batch, add(mul(row, 4), 4)));
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
    if (d->train_images == 0)
        return fail(field, fieldlen, "data.val_size", err, errlen,
                    "data.val_size: the dataset has no training images");
    if (d->train_images > 0 && s->data.val_size >= d->train_images)
        return fail(field, fieldlen, "data.val_size", err, errlen,
                    "data.val_size: %d leaves no training images (the training file has %lld): "
                    "set it below %lld, or leave it unset to have it sized to the data (%lld)",
                    s->data.val_size, d->train_images, d->train_images,
                    hone_spec_sized_val(d->train_images));
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
    int det = !strcmp(s->network, "detectnet_v2"), kitti = hone_spec_format_detect(s->data.format);
    if (det && !kitti)
        return fail(field, fieldlen, "network", err, errlen,
                    "network: detectnet_v2 detects objects and trains on a kitti or coco dataset, "
                    "not %s",
                    s->data.format);
    if (kitti && !det)
        return fail(field, fieldlen, "network", err, errlen,
                    "network: %s classifies images; a %s dataset trains detectnet_v2", s->network,
                    s->data.format);
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
