/* train/loop.c: the trainer (hone_trainer_*: the data on the device as uint8, gathered, augmented
 * and normalised batch by batch; the network, the optimiser, one epoch with the step captured as a
 * kernel graph), its per-trial pieces that the packed trainer shares (train/trainer.h: a step's
 * gather, loss and update, an epoch's learning rates and metrics, evaluation over a net's slots,
 * checkpoint state), and a trained model opened for evaluation and inference. hone_train_run,
 * which trains with it epoch by epoch and reports, is in run.c. Tests and benches drive the same
 * epoch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "trainer.h"

/* t's augmentation counter: the last of its slot's network counters, so a checkpoint resumes
 * its draws. */
static uint64_t *aug_counter(const hone_trainer *t)
{
    const hone_net *net = t->net;
    return net->counters + (size_t)t->slot * net->ncounters + net->ncounters - 1;
}

void trainer_step_gather(hone_trainer *t, float *xb, int32_t *yb)
{
    const dataset *d = &t->ds;
    hone_k_gather_images(t->k, t->train_x, t->train_y, t->perm, t->base_dev, 0, t->batch, d->c,
                         d->h, d->w, t->norm, t->norm + d->c, t->augment ? &t->aug : NULL,
                         aug_counter(t), xb, yb);
}

void trainer_step_loss(hone_trainer *t, const float *logits, const int32_t *yb, float *dlogits)
{
    /* the trial's own label smoothing (a packed trial's too: it is not a pack key) */
    hone_k_softmax_xent(t->k, logits, yb, t->batch, t->ds.classes,
                        (float)t->spec->train.label_smoothing, dlogits, t->acc, t->acc + 1);
}

void trainer_step_update(hone_trainer *t)
{
    hone_kctx *k = t->k;
    hone_net *net = t->net;
    const hone_train_spec *s = t->spec;
    hone_k_counter_add(k, t->t_dev, 1);
    size_t nd = net->ndecay, nb = net->nparams - net->ndecay;
    float *w = net->params + (size_t)t->slot * net->nparams;
    float *g = net->grads + (size_t)t->slot * net->nparams;
    float wd = (float)s->train.weight_decay;
    if (t->adam) {
        float *m = t->opt, *v = t->opt + net->nparams;
        float b1 = (float)s->train.beta1, b2 = (float)s->train.beta2, eps = (float)s->train.eps;
        hone_k_adamw_step(k, w, g, m, v, nd, 0, t->lr_dev, b1, b2, eps, wd, 0, t->t_dev);
        hone_k_adamw_step(k, w + nd, g + nd, m + nd, v + nd, nb, 0, t->lr_dev, b1, b2, eps, 0.0f, 0,
                          t->t_dev);
    } else {
        float mu = (float)s->train.momentum;
        int nest = s->train.nesterov;
        hone_k_sgd_step(k, w, g, t->opt, nd, 0, t->lr_dev, mu, wd, nest);
        hone_k_sgd_step(k, w + nd, g + nd, t->opt + nd, nb, 0, t->lr_dev, mu, 0.0f, nest);
    }
    hone_k_counter_add(k, t->base_dev, t->batch);
}

/* One optimisation step; only enqueues kernel ops (it is captured as a graph on CUDA). The
 * shuffled batch is augmented and normalised in one pass (detectnet_v2: its targets first, moved
 * as the same draws move the images). */
static void train_step(void *arg)
{
    hone_trainer *t = arg;
    hone_net *net = t->net;
    int B = t->batch;
    if (t->det)
        detect_train_targets(t->det, t->perm, t->base_dev, B, t->augment ? &t->aug : NULL,
                             aug_counter(t));
    trainer_step_gather(t, t->xb, t->yb);
    const float *logits = net_forward(net, t->xb, B, 1);
    if (t->det)
        detect_train_step(t->det, logits, B, net_dlogits(net), t->acc);
    else
        trainer_step_loss(t, logits, t->yb, net_dlogits(net));
    net_backward(net, t->xb, B);
    trainer_step_update(t);
}

/* Learning rate for global step `step` (0-based): linear warmup, then the schedule. */
static double lr_at(const hone_train_spec *s, int steps_per_epoch, long step)
{
    double base = s->train.lr, total = (double)s->train.epochs * steps_per_epoch;
    double warm = s->train.warmup_epochs * steps_per_epoch;
    if (step < warm)
        return base * (double)(step + 1) / warm;
    if (strcmp(s->train.lr_schedule, "step") == 0) {
        long e = step / steps_per_epoch;
        return base * pow(s->train.step_gamma, (double)(e / s->train.step_epochs));
    }
    if (strcmp(s->train.lr_schedule, "cosine") == 0) {
        double prog = total > warm ? ((double)step - warm) / (total - warm) : 1.0;
        if (prog > 1)
            prog = 1;
        return s->train.min_lr + (base - s->train.min_lr) * 0.5 * (1.0 + cos(M_PI * prog));
    }
    return base;
}

int trainer_evaluate(hone_trainer **tr, int nt, const uint8_t *x, const int32_t *y, int n,
                     double *loss, double *acc)
{
    hone_trainer *t = tr[0];
    if (t->det)
        return detect_train_evaluate(t->det, x == t->test_x ? &t->ds.test : &t->ds.val, x, t->norm,
                                     t->xb, loss, acc, NULL, NULL, NULL);
    if (n == 0) {
        for (int j = 0; j < nt; j++)
            loss[j] = acc[j] = NAN;
        return HONE_OK;
    }
    hone_kctx *k = t->k;
    const dataset *d = &t->ds;
    for (int j = 0; j < nt; j++)
        hone_k_fill(k, tr[j]->acc + 2, 0.0f, 2);
    for (int i = 0; i < n; i += t->batch) {
        int m = n - i < t->batch ? n - i : t->batch;
        for (int j = 0; j < nt; j++) /* every slot the same images: [nt][m] */
            hone_k_gather_images(k, x, y, NULL, NULL, i, m, d->c, d->h, d->w, t->norm,
                                 t->norm + d->c, NULL, NULL, t->xb + (size_t)j * m * t->row,
                                 t->yb + (size_t)j * m);
        const float *logits = net_forward(t->net, t->xb, m, 0);
        for (int j = 0; j < nt; j++) /* plain cross-entropy whatever the trial's smoothing */
            hone_k_softmax_xent(k, logits + (size_t)j * m * d->classes, t->yb + (size_t)j * m, m,
                                d->classes, 0, NULL, tr[j]->acc + 2, tr[j]->acc + 3);
    }
    int rc = hone_k_sync(k);
    for (int j = 0; j < nt; j++) {
        float h[2] = {0, 0};
        if (rc == 0)
            rc = hone_k_download(k, h, tr[j]->acc + 2, sizeof(h));
        loss[j] = h[0] / n;
        acc[j] = h[1] / n;
    }
    return rc;
}

/* One trainer's evaluation. */
static int evaluate(hone_trainer *t, const uint8_t *x, const int32_t *y, int n, double *loss,
                    double *acc)
{
    return trainer_evaluate(&t, 1, x, y, n, loss, acc);
}

static uint64_t fingerprint(const hone_trainer *t)
{
    const hone_train_spec *s = t->spec;
    char buf[256];
    snprintf(buf, sizeof(buf), "%s|%d|%d|%d|%d|%s|%dx%dx%dx%d|%zu", s->network, s->model.hidden,
             s->model.depth, s->model.batchnorm, s->model.dropout > 0, s->train.optimizer, t->ds.c,
             t->ds.h, t->ds.w, t->ds.classes, t->net->nparams);
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = buf; *p; p++)
        h = (h ^ (uint8_t)*p) * 1099511628211ULL;
    return h;
}

static void *dev_copy(hone_kctx *k, const void *host, size_t bytes)
{
    void *d = hone_k_alloc(k, bytes ? bytes : 4);
    if (bytes)
        hone_k_upload(k, d, host, bytes);
    return d;
}

int trainer_gather_state(hone_trainer *t, ckpt *out, int epoch, double best_val, int with_opt,
                         char *err, size_t errlen)
{
    hone_net *net = t->net;
    ckpt c = {0};
    c.epoch = epoch;
    c.best_val = best_val;
    c.fingerprint = fingerprint(t);
    c.nparams = net->nparams;
    c.nstate = net->nstate;
    c.nopt = with_opt ? t->nopt : 0;
    c.ncounters = (uint32_t)net->ncounters;
    c.params = hone_xmalloc(sizeof(float) * net->nparams);
    c.state = hone_xmalloc(sizeof(float) * (net->nstate + 1));
    c.opt = hone_xmalloc(sizeof(float) * (t->nopt + 1));
    c.counters = hone_xmalloc(sizeof(uint64_t) * (size_t)net->ncounters);
    hone_kctx *k = t->k;
    size_t slot = (size_t)t->slot;
    int rc = hone_k_sync(k);
    if (rc == 0)
        rc = hone_k_download(k, c.params, net->params + slot * net->nparams,
                             sizeof(float) * net->nparams);
    if (rc == 0)
        rc = hone_k_download(k, c.state, net->state + slot * net->nstate,
                             sizeof(float) * net->nstate);
    if (rc == 0 && c.nopt)
        rc = hone_k_download(k, c.opt, t->opt, sizeof(float) * t->nopt);
    if (rc == 0)
        rc = hone_k_download(k, c.counters, net->counters + slot * c.ncounters,
                             sizeof(uint64_t) * c.ncounters);
    if (rc == 0)
        rc = hone_k_download(k, &c.t, t->t_dev, sizeof(int32_t));
    if (rc < 0) {
        snprintf(err, errlen, "checkpoint: reading device state: %s", hone_strerror(rc));
        ckpt_free(&c);
        return rc;
    }
    *out = c;
    return HONE_OK;
}

int trainer_read_state(hone_trainer *t, const char *path, ckpt *c, char *err, size_t errlen)
{
    hone_net *net = t->net;
    int rc = ckpt_read(path, c, err, errlen);
    if (rc < 0)
        return rc;
    if (c->fingerprint != fingerprint(t) || c->nparams != net->nparams ||
        c->nstate != net->nstate || c->nopt != t->nopt ||
        c->ncounters != (uint32_t)net->ncounters) {
        snprintf(err, errlen, "%s: checkpoint does not match this spec (network, model, optimizer)",
                 path);
        ckpt_free(c);
        return HONE_EINVAL;
    }
    return HONE_OK;
}

void trainer_apply_state(hone_trainer *t, const ckpt *c)
{
    hone_net *net = t->net;
    hone_kctx *k = t->k;
    size_t slot = (size_t)t->slot;
    hone_k_upload(k, net->params + slot * net->nparams, c->params, sizeof(float) * c->nparams);
    hone_k_upload(k, net->state + slot * net->nstate, c->state, sizeof(float) * c->nstate);
    hone_k_upload(k, t->opt, c->opt, sizeof(float) * c->nopt);
    hone_k_upload(k, net->counters + slot * c->ncounters, c->counters,
                  sizeof(uint64_t) * c->ncounters);
    hone_k_upload(k, t->t_dev, &c->t, sizeof(int32_t));
}

static hone_device pick_device(const char *name, int *ok)
{
    *ok = 1;
    if (!name || strcmp(name, "auto") == 0)
        return hone_cuda_available() ? HONE_DEV_CUDA : HONE_DEV_CPU;
    if (strcmp(name, "cuda") == 0)
        return HONE_DEV_CUDA;
    if (strcmp(name, "cpu") != 0)
        *ok = 0;
    return HONE_DEV_CPU;
}

void hone_trainer_free(hone_trainer *t)
{
    if (!t)
        return;
    hone_kctx *k = t->k;
    if (k) {
        hone_k_sync(k); /* nothing of this job may still run when the next one starts */
        hone_kgraph_free(t->graph);
        void *bufs[] = {t->perm, t->base_dev, t->t_dev, t->lr_dev, t->acc, t->opt, t->lr_sched};
        for (size_t i = 0; i < HONE_ARRAY_LEN(bufs); i++)
            hone_k_free(k, bufs[i]);
    }
    if (k && !t->borrowed) { /* a packed trial's are the pack's */
        void *bufs[] = {t->xb, t->yb, t->norm};
        for (size_t i = 0; i < HONE_ARRAY_LEN(bufs); i++)
            hone_k_free(k, bufs[i]);
        void *data[] = {t->train_x, t->val_x, t->test_x, t->train_y, t->val_y, t->test_y};
        for (size_t i = 0; !t->shared_data && i < HONE_ARRAY_LEN(data); i++)
            hone_k_free(k, data[i]);
        detect_train_free(t->det);
        net_free(t->net);
        if (t->shared_data)
            train_cache_data_release(t->cache, t->ce);
        if (t->shared_ctx)
            train_cache_ctx_release(t->cache, k);
        else
            hone_kctx_free(k);
    }
    if (!t->shared_data && !t->borrowed)
        dataset_free(&t->ds);
    free(t->lr_host);
    free(t);
}

/* Reads model.json into t->ds's shape, classes, normalisation and names (the data's own, when
 * loaded, must agree with it). */
static int model_info_read(hone_trainer *t, const char *dir, int with_data, char *err,
                           size_t errlen)
{
    char path[1100];
    snprintf(path, sizeof(path), "%s/model.json", dir);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je), *mean, *std, *names;
    int c, h, w, classes, rc = HONE_EPARSE;
    if (!j) {
        snprintf(err, errlen, "%s: %s", path, je.text);
        return HONE_EIO;
    }
    if (json_unpack(j, "{s:i, s:i, s:i, s:i, s:o, s:o, s:o}", "channels", &c, "height", &h, "width",
                    &w, "classes", &classes, "mean", &mean, "std", &std, "class_names",
                    &names) < 0 ||
        (c != 1 && c != 3) || h < 1 || w < 1 || classes < 2 || classes > 1000000 ||
        json_array_size(mean) != (size_t)c || json_array_size(std) != (size_t)c ||
        json_array_size(names) != (size_t)classes) {
        snprintf(err, errlen, "%s: not a model description", path);
        goto fail;
    }
    dataset *d = &t->ds;
    if (with_data && (d->c != c || d->h != h || d->w != w || d->classes != classes)) {
        snprintf(err, errlen,
                 "data: %dx%d images with %d channels and %d classes; the model takes %dx%d with "
                 "%d and %d classes",
                 d->w, d->h, d->c, d->classes, w, h, c, classes);
        rc = HONE_EINVAL;
        goto fail;
    }
    for (int i = 0; with_data && d->names && i < classes; i++) {
        const char *n = json_string_value(json_array_get(names, (size_t)i));
        if (!n || strcmp(n, d->names[i]) != 0) {
            snprintf(err, errlen, "data.path: class %d is '%s', the model's is '%s'", i,
                     d->names[i], n ? n : "?");
            rc = HONE_EINVAL;
            goto fail;
        }
    }
    d->c = c;
    d->h = h;
    d->w = w;
    d->classes = classes;
    for (int ch = 0; ch < c; ch++) {
        d->mean[ch] = (float)json_number_value(json_array_get(mean, (size_t)ch));
        d->std[ch] = (float)json_number_value(json_array_get(std, (size_t)ch));
        if (!(d->std[ch] > 0)) {
            snprintf(err, errlen, "%s: std must be positive", path);
            goto fail;
        }
    }
    if (!d->names) {
        d->names = hone_xcalloc((size_t)classes, sizeof(char *));
        for (int i = 0; i < classes; i++) {
            const char *n = json_string_value(json_array_get(names, (size_t)i));
            d->names[i] = hone_xstrdup(n ? n : "");
        }
    }
    rc = HONE_OK;
fail:
    json_decref(j);
    return rc;
}

/* The device, the data on it (model_dir: model.json's shape and normalisation) and the batch
 * geometry. */
static int setup_data(hone_trainer *t, const hone_train_opts *o, const char *model_dir,
                      int with_data, char *err, size_t errlen)
{
    const hone_train_spec *s = o->spec;
    int rc, ok;
    hone_device dev = pick_device(o->device, &ok);
    if (!ok) {
        snprintf(err, errlen, "--device: '%s' is not one of cpu, cuda, auto", o->device);
        return HONE_EINVAL;
    }
    const cache_entry *ce = NULL;
    t->log = o->log ? o->log : stderr;
    if (o->cache && with_data == 1 && !model_dir) { /* a resident trainer's train job */
        if ((rc = train_cache_ctx(o->cache, dev, o->threads, &t->k, err, errlen)) < 0)
            return rc;
        t->cache = o->cache;
        t->shared_ctx = 1;
        rc = train_cache_data(o->cache, t->k, s, t->log, &ce, err, errlen);
        if (rc < 0 && rc != HONE_ENOTSUP)
            return rc;
        t->shared_data = ce != NULL;
        t->ce = ce;
    } else if ((rc = hone_kctx_new(dev, o->threads, &t->k)) < 0) {
        snprintf(err, errlen, "device %s: %s", dev == HONE_DEV_CUDA ? "cuda" : "cpu",
                 hone_strerror(rc));
        return rc;
    }
    hone_k_set_math(t->k, strcmp(s->train.math, "tf32") == 0   ? HONE_MATH_TF32
                          : strcmp(s->train.math, "bf16") == 0 ? HONE_MATH_BF16
                                                               : HONE_MATH_FP32);
    if (ce)
        t->ds = ce->ds; /* borrowed: read only */
    else if (with_data &&
             (rc = dataset_load_log(s, with_data == 2, t->log, &t->ds, err, errlen)) < 0)
        return rc;
    if (model_dir && (rc = model_info_read(t, model_dir, with_data, err, errlen)) < 0)
        return rc;
    dataset *d = &t->ds;
    t->batch = s->train.batch_size;
    if (with_data == 1 && d->train.n < t->batch)
        t->batch = d->train.n;
    t->steps = d->train.n / t->batch;
    t->row = d->c * d->h * d->w;
    t->adam = strcmp(s->train.optimizer, "adamw") == 0;
    hone_kctx *k = t->k;
    if (ce) {
        t->train_x = ce->x[0];
        t->val_x = ce->x[1];
        t->test_x = ce->x[2];
        t->train_y = ce->y[0];
        t->val_y = ce->y[1];
        t->test_y = ce->y[2];
    } else {
        t->train_x = dev_copy(k, d->train.x, (size_t)d->train.n * t->row);
        t->val_x = dev_copy(k, d->val.x, (size_t)d->val.n * t->row);
        t->test_x = dev_copy(k, d->test.x, (size_t)d->test.n * t->row);
        t->train_y = dev_copy(k, d->train.y, (size_t)d->train.n * 4);
        t->val_y = dev_copy(k, d->val.y, (size_t)d->val.n * 4);
        t->test_y = dev_copy(k, d->test.y, (size_t)d->test.n * 4);
    }
    float norm[6];
    for (int ch = 0; ch < d->c; ch++) {
        norm[ch] = d->mean[ch];
        norm[d->c + ch] = 1.0f / d->std[ch];
    }
    t->norm = dev_copy(k, norm, 2 * (size_t)d->c * sizeof(float));
    return HONE_OK;
}

int trainer_setup_data(hone_trainer *t, const hone_train_opts *o, char *err, size_t errlen)
{
    return setup_data(t, o, NULL, 1, err, errlen);
}

void trainer_setup_trial(hone_trainer *t)
{
    hone_kctx *k = t->k;
    const dataset *d = &t->ds;
    const hone_train_spec *sp = t->spec;
    size_t fb = sizeof(float);
    t->aug = (hone_kaugment){.flip = sp->augment.flip,
                             .crop_padding = sp->augment.crop_padding,
                             .jitter = (float)sp->augment.jitter,
                             .cutout = sp->augment.cutout,
                             .seed = sp->train.seed ^ 0xA06ULL,
                             .zoom_min = 1.0f,
                             .zoom_max = 1.0f};
    if (!strcmp(sp->network, "detectnet_v2") && detect_train_spatial(sp)) {
        t->aug.affine = 1; /* the boxes move with the image (detect_train.c) */
        t->aug.translate = (float)sp->augment.translate;
        t->aug.zoom_min = (float)sp->augment.zoom_min;
        t->aug.zoom_max = (float)sp->augment.zoom_max;
    }
    t->augment = t->aug.flip || t->aug.crop_padding > 0 || t->aug.jitter > 0 || t->aug.cutout > 0 ||
                 t->aug.affine;
    t->perm = hone_k_alloc(k, (size_t)(d->train.n + 1) * 4);
    int32_t zero = 0;
    t->base_dev = dev_copy(k, &zero, 4);
    t->t_dev = dev_copy(k, &zero, 4);
    t->lr_dev = hone_k_alloc(k, fb);
    t->lr_sched = hone_k_alloc(k, (size_t)(t->steps + 1) * fb);
    t->acc = hone_k_alloc(k, 4 * fb);
    t->nopt = t->net->nparams * (t->adam ? 2 : 1);
    t->opt = hone_k_alloc(k, t->nopt * fb);
    hone_k_fill(k, t->opt, 0.0f, t->nopt);
    t->lr_host = hone_xmalloc(sizeof(float) * (size_t)(t->steps + 1));
}

static int setup(hone_trainer *t, const hone_train_opts *o, const char *model_dir, int with_data,
                 char *err, size_t errlen)
{
    const hone_train_spec *s = o->spec;
    int rc = setup_data(t, o, model_dir, with_data, err, errlen);
    if (rc < 0)
        return rc;
    dataset *d = &t->ds;
    if ((rc = net_new(t->k, s, t->batch, d->c, d->h, d->w, d->classes, &t->net)) < 0) {
        snprintf(err, errlen, "network: '%s' unknown", s->network);
        return rc;
    }
    hone_kctx *k = t->k;
    if (t->log && !strcmp(s->train.math, "bf16") && hone_kctx_device(k) == HONE_DEV_CUDA)
        fprintf(t->log, "hone-train: train.math=bf16: %s\n",
                t->net->half ? "bf16 NHWC activations (cuDNN tensor cores)"
                             : "fp32 activations, tensor-core GEMMs (no bf16 NHWC path for this "
                               "network: resnet18, resnet34 and detectnet_v2 of a model.width that "
                               "is a multiple of 8 have one)");
    trainer_setup_trial(t);
    t->xb = hone_k_alloc(k, (size_t)t->batch * t->row * sizeof(float));
    t->yb = hone_k_alloc(k, (size_t)t->batch * 4);
    if (!with_data && !strcmp(s->network, "detectnet_v2")) { /* inference: model.json's shape */
        d->detect = 1;
        d->grid_h = d->h / s->detect.stride;
        d->grid_w = d->w / s->detect.stride;
    }
    if (d->detect && (rc = detect_train_new(k, s, d, t->net, t->batch, &t->det, err, errlen)) < 0)
        return rc;
    return hone_k_sync(k);
}

int hone_trainer_new(const hone_train_opts *o, hone_trainer **out, char *err, size_t errlen)
{
    *out = NULL;
    int rc = hone_train_spec_validate(o->spec, err, errlen);
    if (rc < 0)
        return rc;
    hone_trainer *t = hone_xcalloc(1, sizeof(*t));
    t->spec = o->spec;
    t->cancel = o->cancel;
    if ((rc = setup(t, o, NULL, 1, err, errlen)) < 0)
        goto fail;
    /* A run resumed from its checkpoint takes every weight from it: the model it started from is
     * not read again (it may be gone by now), nor laid over what the run has learned since. */
    if (o->spec->model.pretrained[0] && o->resume_path)
        fprintf(t->log, "hone-train: model.pretrained: not applied: resuming from %s\n",
                o->resume_path);
    else if (o->spec->model.pretrained[0] &&
             (rc = trainer_load_pretrained(t, o->spec->model.pretrained, err, errlen)) < 0)
        goto fail;
    if (!o->eager && (rc = hone_kgraph_capture(t->k, train_step, t, &t->graph)) < 0) {
        snprintf(err, errlen, "graph capture: %s", hone_strerror(rc));
        goto fail;
    }
    *out = t;
    return HONE_OK;
fail:
    hone_trainer_free(t);
    return rc;
}

int trainer_epoch_begin(hone_trainer *t, int epoch, int steps, double *lr)
{
    hone_kctx *k = t->k;
    const hone_train_spec *s = t->spec;
    int32_t zero = 0;
    /* the epoch's learning rates go up in one upload; each step then copies its own on the
     * device (an upload per step would make the host wait for the GPU every step) */
    for (int i = 0; i < t->steps; i++)
        t->lr_host[i] = (float)lr_at(s, t->steps, (long)epoch * t->steps + i);
    *lr = t->lr_host[steps - 1];
    hone_k_permutation(k, t->perm, t->ds.train.n, s->train.seed, (uint64_t)epoch);
    hone_k_upload(k, t->base_dev, &zero, 4);
    int rc = hone_k_upload(k, t->lr_sched, t->lr_host, sizeof(float) * (size_t)t->steps);
    hone_k_fill(k, t->acc, 0.0f, 2);
    return rc;
}

int trainer_step_lr(hone_trainer *t, int i)
{
    return hone_k_copy(t->k, t->lr_dev, t->lr_sched + i, sizeof(float));
}

int trainer_first_step_done(hone_trainer *t)
{
    struct timespec ts;
    t->first_step_pending = 0;
    int rc = hone_k_sync(t->k);
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    char iso[32];
    gmtime_r(&ts.tv_sec, &tm);
    strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%S", &tm);
    /* ISO 8601 UTC to the microsecond: a person reads it, bench/resident.sh times from it */
    fprintf(t->log, "hone-train: first step done at %s.%06ldZ\n", iso, ts.tv_nsec / 1000);
    return rc;
}

void trainer_epoch_fill(const hone_trainer *t, int epoch, int steps, double secs, double lr,
                        const float acc[2], hone_train_epoch *ep)
{
    memset(ep, 0, sizeof(*ep));
    ep->epoch = epoch + 1;
    ep->epochs = t->spec->train.epochs;
    ep->lr = lr;
    ep->seconds = secs;
    double seen = (double)steps * t->batch;
    ep->train_loss = acc[0] / seen;
    ep->train_accuracy = acc[1] / seen;
    ep->images_per_second = seen / (secs > 0 ? secs : 1e-9);
}

int hone_trainer_epoch(hone_trainer *t, int epoch, int max_steps, hone_train_epoch *ep)
{
    hone_kctx *k = t->k;
    int steps = max_steps > 0 && max_steps < t->steps ? max_steps : t->steps;
    double lr;
    int rc = trainer_epoch_begin(t, epoch, steps, &lr);
    double t0 = hone_now();
    for (int i = 0; i < steps && rc == 0; i++) {
        if (t->cancel && *t->cancel) {
            rc = HONE_ESTATE;
            break;
        }
        rc = trainer_step_lr(t, i);
        if (rc == 0 && t->graph)
            rc = hone_kgraph_launch(k, t->graph);
        else if (rc == 0)
            train_step(t);
        if (rc == 0 && t->first_step_pending) /* bench/resident.sh times start to here */
            rc = trainer_first_step_done(t);
    }
    float acc[2] = {0, 0};
    if (rc == 0)
        rc = hone_k_sync(k);
    if (rc == 0)
        rc = hone_k_download(k, acc, t->acc, sizeof(acc));
    trainer_epoch_fill(t, epoch, steps, hone_now() - t0, lr, acc, ep);
    if (rc == 0)
        rc = evaluate(t, t->val_x, t->val_y, t->ds.val.n, &ep->val_loss, &ep->val_accuracy);
    return rc;
}

int hone_trainer_test(hone_trainer *t, double *loss, double *acc)
{
    return evaluate(t, t->test_x, t->test_y, t->ds.test.n, loss, acc);
}

int hone_trainer_test_map(hone_trainer *t, int *images, double *loss, double *map, double *ap,
                          int *n_gt, hone_det_coco_stats *coco)
{
    if (!t->det)
        return HONE_EINVAL;
    *images = t->ds.test.n;
    return detect_train_evaluate(t->det, &t->ds.test, t->test_x, t->norm, t->xb, loss, map, ap,
                                 n_gt, coco);
}

int hone_trainer_params(hone_trainer *t, float **out, size_t *n)
{
    hone_net *net = t->net;
    *out = hone_xmalloc(sizeof(float) * net->nparams);
    *n = net->nparams;
    int rc = hone_k_sync(t->k);
    return rc < 0 ? rc : hone_k_download(t->k, *out, net->params, sizeof(float) * net->nparams);
}

int hone_trainer_snapshot(hone_trainer *t, const hone_net **net, float **params, float **state,
                          float **norm)
{
    hone_net *n = t->net;
    size_t c = (size_t)t->ds.c;
    *net = n;
    *params = hone_xmalloc(sizeof(float) * (n->nparams + 1));
    *state = hone_xmalloc(sizeof(float) * (n->nstate + 1));
    *norm = hone_xmalloc(sizeof(float) * 2 * c);
    int rc = hone_k_sync(t->k);
    if (rc == 0)
        rc = hone_k_download(t->k, *params, n->params, sizeof(float) * n->nparams);
    if (rc == 0 && n->nstate)
        rc = hone_k_download(t->k, *state, n->state, sizeof(float) * n->nstate);
    if (rc == 0)
        rc = hone_k_download(t->k, *norm, t->norm, sizeof(float) * 2 * c);
    return rc;
}

int hone_trainer_open_model(const hone_train_opts *o, const char *model_dir, int with_data,
                            hone_trainer **out, char *err, size_t errlen)
{
    *out = NULL;
    int rc = hone_train_spec_validate(o->spec, err, errlen);
    if (rc < 0)
        return rc;
    hone_trainer *t = hone_xcalloc(1, sizeof(*t));
    t->spec = o->spec;
    if ((rc = setup(t, o, model_dir, with_data, err, errlen)) < 0)
        goto fail;
    char path[1100];
    snprintf(path, sizeof(path), "%s/model.bin", model_dir);
    hone_net *net = t->net;
    ckpt c;
    if ((rc = ckpt_read(path, &c, err, errlen)) < 0)
        goto fail;
    if (c.fingerprint != fingerprint(t) || c.nparams != net->nparams || c.nstate != net->nstate ||
        c.ncounters != (uint32_t)net->ncounters) {
        snprintf(err, errlen, "%s: the model does not match this spec (network, model, optimizer)",
                 path);
        ckpt_free(&c);
        rc = HONE_EINVAL;
        goto fail;
    }
    hone_k_upload(t->k, net->params, c.params, sizeof(float) * c.nparams);
    hone_k_upload(t->k, net->state, c.state, sizeof(float) * c.nstate);
    ckpt_free(&c);
    if ((rc = hone_k_sync(t->k)) < 0) {
        snprintf(err, errlen, "%s: loading the model: %s", path, hone_strerror(rc));
        goto fail;
    }
    *out = t;
    return HONE_OK;
fail:
    hone_trainer_free(t);
    return rc;
}

void hone_trainer_shape(const hone_trainer *t, int *c, int *h, int *w, int *classes)
{
    *c = t->ds.c;
    *h = t->ds.h;
    *w = t->ds.w;
    *classes = t->ds.classes;
}

const char *hone_trainer_class_name(const hone_trainer *t, int i)
{
    return t->ds.names && i >= 0 && i < t->ds.classes ? t->ds.names[i] : NULL;
}

/* Logits [n, classes] of n device images (uint8 HWC), inference mode, to the host. */
static int logits_of(hone_trainer *t, const uint8_t *x_dev, int n, float *logits)
{
    const dataset *d = &t->ds;
    int rc = HONE_OK;
    for (int i = 0; i < n && rc == 0; i += t->batch) {
        int m = n - i < t->batch ? n - i : t->batch;
        rc = hone_k_gather_images(t->k, x_dev, NULL, NULL, NULL, i, m, d->c, d->h, d->w, t->norm,
                                  t->norm + d->c, NULL, NULL, t->xb, NULL);
        const float *dev = net_forward(t->net, t->xb, m, 0);
        if (rc == 0)
            rc = hone_k_sync(t->k);
        if (rc == 0)
            rc = hone_k_download(t->k, logits + (size_t)i * d->classes, dev,
                                 sizeof(float) * (size_t)m * d->classes);
    }
    return rc;
}

int hone_trainer_test_predictions(hone_trainer *t, int32_t **pred, int32_t **label, int *n)
{
    const dataset *d = &t->ds;
    int k = d->classes;
    *n = d->test.n;
    *pred = hone_xmalloc(sizeof(int32_t) * (size_t)(d->test.n + 1));
    *label = hone_xmalloc(sizeof(int32_t) * (size_t)(d->test.n + 1));
    float *logits = hone_xmalloc(sizeof(float) * ((size_t)d->test.n * k + 1));
    int rc = logits_of(t, t->test_x, d->test.n, logits);
    for (int i = 0; i < d->test.n; i++) {
        const float *l = logits + (size_t)i * k;
        int best = 0;
        for (int j = 1; j < k; j++)
            if (l[j] > l[best])
                best = j;
        (*pred)[i] = best;
        (*label)[i] = d->test.y[i];
    }
    free(logits);
    return rc;
}

int hone_trainer_detect(hone_trainer *t, const uint8_t *x, int n, hone_det_cand **boxes,
                        int *counts)
{
    if (!t->det)
        return HONE_EINVAL;
    const dataset *d = &t->ds;
    uint8_t *x_dev = dev_copy(t->k, x, (size_t)n * d->c * d->h * d->w);
    int rc = detect_train_predict(t->det, x_dev, n, t->norm, t->xb, boxes, counts);
    hone_k_free(t->k, x_dev);
    return rc;
}

int hone_trainer_predict(hone_trainer *t, const uint8_t *x, int n, float *probs)
{
    const dataset *d = &t->ds;
    size_t row = (size_t)d->c * d->h * d->w;
    uint8_t *x_dev = dev_copy(t->k, x, (size_t)n * row);
    int rc = logits_of(t, x_dev, n, probs);
    hone_k_free(t->k, x_dev);
    for (int i = 0; i < n; i++) { /* softmax, in double for the sums */
        float *p = probs + (size_t)i * d->classes;
        float mx = p[0];
        for (int j = 1; j < d->classes; j++)
            mx = p[j] > mx ? p[j] : mx;
        double sum = 0;
        for (int j = 0; j < d->classes; j++)
            sum += exp((double)p[j] - mx);
        for (int j = 0; j < d->classes; j++)
            p[j] = (float)(exp((double)p[j] - mx) / sum);
    }
    return rc;
}
