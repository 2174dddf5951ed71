/* train/run_pack.c: packed trials (HFTA, MLSys 2021): hone_train_run_pack trains several trials of
 * one network on one dataset in ONE fused step: each trial gathers its own shuffled, augmented
 * batch into its slot, one forward and backward runs all slots (train/net.c with trials > 1:
 * batched GEMMs and convolutions), then each trial's loss and optimiser step with its own
 * hyperparameters. Everything a trial reports goes through the solo trainer's pieces
 * (train/trainer.h), so it writes exactly what its solo run writes. A trial that finishes, pauses,
 * is stopped, cancelled or fails leaves (a cancel at once, its slot computing, ignored, to the
 * epoch's end; the rest at the epoch's end) and the pack is rebuilt from the others' slices; it
 * never changes their numbers. Also hone_train_pack_key. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "trainer.h"

/* ------------------------------------------------------------------ which specs share a pack */

/* The keys that shape the fused step: the network, the model (model.dropout only as whether there
 * is a dropout layer: its probability is a trial's own), the batch, the data and the math. */
static int shared_key(const char *name)
{
    return strcmp(name, "network") == 0 || strncmp(name, "model.", 6) == 0 ||
           strncmp(name, "data.", 5) == 0 || strcmp(name, "train.batch_size") == 0 ||
           strcmp(name, "train.math") == 0 || strcmp(name, "train.optimizer") == 0;
}

/* Key `name`'s value in s as the pack key writes it (caller frees). */
static char *key_value(const hone_train_spec *s, const char *name)
{
    if (strcmp(name, "model.dropout") == 0)
        return hone_xstrdup(s->model.dropout > 0 ? "on" : "off");
    json_t *v = hone_spec_get_json(s, name);
    char *text = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(v);
    char *out = hone_xstrdup(text ? text : "null");
    free(text);
    return out;
}

static int packable(const hone_train_spec *s)
{
    /* resnets and detectnet_v2: no packed form yet (train/net.c, net_new_pack); a pretrained
     * start is the solo trainer's (loop.c) */
    return (strcmp(s->network, "cnn") == 0 || strcmp(s->network, "mlp") == 0) &&
           !s->model.pretrained[0];
}

int hone_train_pack_key(const hone_train_spec *s, const char *device, char *key, size_t len)
{
    if (!packable(s))
        return HONE_EINVAL;
    size_t used = (size_t)snprintf(key, len, "device=%s", device ? device : "auto");
    for (size_t i = 0; i < hone_spec_nkeys(); i++) {
        const char *name = hone_spec_key_at(i)->name;
        if (!shared_key(name))
            continue;
        char *v = key_value(s, name);
        used += (size_t)snprintf(key + (used < len ? used : len), used < len ? len - used : 0,
                                 ";%s=%s", name, v);
        free(v);
    }
    return used < len ? HONE_OK : HONE_ERANGE;
}

/* The first shared key on which a and b differ ("device" for the devices), NULL: none. */
static const char *key_diff(const hone_train_opts *a, const hone_train_opts *b)
{
    if (strcmp(a->device ? a->device : "auto", b->device ? b->device : "auto") != 0)
        return "device";
    for (size_t i = 0; i < hone_spec_nkeys(); i++) {
        const char *name = hone_spec_key_at(i)->name;
        if (!shared_key(name))
            continue;
        char *va = key_value(a->spec, name), *vb = key_value(b->spec, name);
        int same = strcmp(va, vb) == 0;
        free(va);
        free(vb);
        if (!same)
            return name;
    }
    return NULL;
}

/* ------------------------------------------------------------------ the pack */

typedef struct {
    const hone_train_opts *o;
    train_run r;
    hone_trainer *t;      /* its trainer (borrowing the pack's device, data and net) */
    int open;             /* r is open (run_open succeeded, run_close not yet called) */
    int live;             /* training in the pack */
    hone_train_spec spec; /* its spec, copied: its trainer reads it after it left (its slot
                             computes, ignored, to the epoch's end) */
    hone_train_epoch ep;
} pack_trial;

typedef struct {
    hone_trainer *base;        /* the device and the data (owned) */
    hone_train_spec base_spec; /* the first trial's, copied: that trial may leave (on_end) first */
    hone_net *net;             /* nslots trials */
    float *xb;                 /* [nslots][batch][row] */
    int32_t *yb;
    pack_trial **slot; /* slot j's trial */
    hone_trainer **tr; /* slot j's trainer */
    int nslots;
    hone_kgraph *graph;
    int eager;
} pack;

/* The fused step: only enqueues kernel ops (captured as one graph on CUDA). */
static void pack_step(void *arg)
{
    pack *p = arg;
    hone_trainer *b = p->base;
    int B = b->batch, C = b->ds.classes;
    for (int j = 0; j < p->nslots; j++)
        trainer_step_gather(p->tr[j], p->xb + (size_t)j * B * b->row, p->yb + (size_t)j * B);
    const float *logits = net_forward(p->net, p->xb, B, 1);
    float *dl = net_dlogits(p->net);
    for (int j = 0; j < p->nslots; j++)
        trainer_step_loss(p->tr[j], logits + (size_t)j * B * C, p->yb + (size_t)j * B,
                          dl + (size_t)j * B * C);
    net_backward(p->net, p->xb, B);
    for (int j = 0; j < p->nslots; j++)
        trainer_step_update(p->tr[j]);
}

/* A trainer for trial `pt` borrowing the pack's device and data (its net and slot set later): the
 * base's fields (device, data, geometry, normalisation; it has no trial state of its own), then
 * the trial's spec, streams and cancel flag. */
static hone_trainer *trial_trainer(const pack *p, pack_trial *pt)
{
    hone_trainer *t = hone_xmalloc(sizeof(*t));
    *t = *p->base;
    t->borrowed = 1;
    t->spec = &pt->spec;
    t->log = pt->o->log ? pt->o->log : stderr;
    t->cancel = pt->o->cancel;
    return t;
}

/* (Re)builds the pack for its live trials, in trial order: a new net whose slots start as the
 * trials' current slices (held: their state gathered from the old net; NULL at the start, when
 * each slot starts from its own seed), the batch buffers and the captured step. Trainers of
 * trials that left are freed. */
static int pack_build(pack *p, pack_trial *pt, int n, char *err, size_t errlen)
{
    hone_kctx *k = p->base->k;
    int live = 0, rc = HONE_OK;
    for (int i = 0; i < n; i++)
        live += pt[i].live;
    ckpt *held = hone_xcalloc((size_t)n, sizeof(ckpt));
    for (int i = 0; i < n && rc == 0; i++)
        if (pt[i].live && pt[i].t && pt[i].t->net)
            rc = trainer_gather_state(pt[i].t, &held[i], 0, 0, 0, err, errlen);
    hone_kgraph_free(p->graph);
    p->graph = NULL;
    net_free(p->net);
    p->net = NULL;
    hone_k_free(k, p->xb);
    hone_k_free(k, p->yb);
    p->xb = NULL;
    p->yb = NULL;
    for (int i = 0; i < n; i++)
        if (!pt[i].live && pt[i].t) {
            hone_trainer_free(pt[i].t);
            pt[i].t = NULL;
        }
    p->nslots = 0;
    const hone_train_spec **specs = hone_xcalloc((size_t)live + 1, sizeof(*specs));
    if (rc < 0 || live == 0)
        goto done;
    for (int i = 0, j = 0; i < n; i++)
        if (pt[i].live) {
            specs[j] = &pt[i].spec;
            p->slot[j++] = &pt[i];
        }
    const dataset *d = &p->base->ds;
    rc = net_new_pack(k, specs, live, p->base->batch, d->c, d->h, d->w, d->classes, &p->net);
    if (rc < 0) {
        snprintf(err, errlen, "pack: network '%s' cannot be packed", p->slot[0]->spec.network);
        goto done;
    }
    p->nslots = live;
    size_t rows = (size_t)live * p->base->batch;
    p->xb = hone_k_alloc(k, rows * p->base->row * sizeof(float));
    p->yb = hone_k_alloc(k, rows * sizeof(int32_t));
    for (int j = 0; j < live; j++) {
        pack_trial *q = p->slot[j];
        size_t i = (size_t)(q - pt);
        int fresh = !q->t;
        if (fresh)
            q->t = trial_trainer(p, q);
        hone_trainer *t = p->tr[j] = q->t;
        t->net = p->net;
        t->slot = j;
        t->xb = p->xb;
        t->yb = p->yb;
        if (fresh)
            trainer_setup_trial(t);
        else
            trainer_apply_state(t, &held[i]);
    }
    if (!p->eager && (rc = hone_kgraph_capture(k, pack_step, p, &p->graph)) < 0)
        snprintf(err, errlen, "graph capture: %s", hone_strerror(rc));
done:
    free(specs);
    for (int i = 0; i < n; i++)
        ckpt_free(&held[i]);
    free(held);
    return rc;
}

/* Ends trial q with rc (its run closed; it leaves the pack at the next rebuild) and tells its
 * on_end; from here its options are not touched again. */
static void trial_end(pack_trial *q, int *rcp, int rc, const char *err)
{
    *rcp = rc;
    if (q->open)
        run_close(&q->r, rc);
    q->open = 0;
    q->live = 0;
    if (q->o->on_end)
        q->o->on_end(rc, err, q->o->user);
}

/* One epoch of every slot (each at its own epoch number) in fused steps, then each slot's
 * validation; fills each trial's ep. A trial whose cancel flag is seen ends at once, as its solo
 * run would before its next step (nothing more written; rcs[i], err[i]); its slot keeps computing,
 * ignored, to the epoch's end. A device error fails the pack. */
static int pack_epoch(pack *p, pack_trial *pt, int *rcs, char (*err)[256])
{
    hone_kctx *k = p->base->k;
    int n = p->nslots, steps = p->base->steps, rc = HONE_OK;
    double *lr = hone_xcalloc((size_t)n, sizeof(double));
    double *vl = hone_xcalloc((size_t)n, sizeof(double));
    double *va = hone_xcalloc((size_t)n, sizeof(double));
    for (int j = 0; j < n && rc == 0; j++)
        rc = trainer_epoch_begin(p->tr[j], p->slot[j]->r.e, steps, &lr[j]);
    double t0 = hone_now();
    for (int i = 0; i < steps && rc == 0; i++) {
        int left = 0;
        for (int j = 0; j < n; j++) {
            pack_trial *q = p->slot[j];
            size_t t = (size_t)(q - pt);
            if (q->live && q->o->cancel && *q->o->cancel)
                trial_end(q, &rcs[t], run_epoch_failed(&q->r, HONE_ESTATE, err[t], 256), err[t]);
            left += q->live;
        }
        if (left == 0)
            break;
        for (int j = 0; j < n && rc == 0; j++)
            rc = trainer_step_lr(p->tr[j], i);
        if (rc == 0 && p->graph)
            rc = hone_kgraph_launch(k, p->graph);
        else if (rc == 0)
            pack_step(p);
        for (int j = 0; j < n && rc == 0; j++)
            if (p->slot[j]->live && p->tr[j]->first_step_pending)
                rc = trainer_first_step_done(p->tr[j]);
    }
    if (rc == 0)
        rc = hone_k_sync(k);
    double secs = hone_now() - t0;
    for (int j = 0; j < n && rc == 0; j++) {
        float acc[2] = {0, 0};
        rc = hone_k_download(k, acc, p->tr[j]->acc, sizeof(acc));
        trainer_epoch_fill(p->tr[j], p->slot[j]->r.e, steps, secs, lr[j], acc, &p->slot[j]->ep);
    }
    const hone_trainer *b = p->base;
    if (rc == 0)
        rc = trainer_evaluate(p->tr, n, b->val_x, b->val_y, b->ds.val.n, vl, va);
    for (int j = 0; j < n && rc == 0; j++) {
        p->slot[j]->ep.val_loss = vl[j];
        p->slot[j]->ep.val_accuracy = va[j];
    }
    free(lr);
    free(vl);
    free(va);
    return rc;
}

/* The trials with no epoch left finish (done: with the test numbers of their slot, and
 * model.bin) or pause, as their solo runs would. */
static int pack_finish_due(pack *p, pack_trial *pt, hone_train_result *res, int *rcs,
                           char (*err)[256])
{
    int n = p->nslots, any = 0, rc = HONE_OK;
    for (int j = 0; j < n; j++) /* a slot that left no longer has its options */
        any |= p->slot[j]->live && !run_more(&p->slot[j]->r) && run_finished(&p->slot[j]->r);
    double *tl = hone_xcalloc((size_t)n + 1, sizeof(double));
    double *ta = hone_xcalloc((size_t)n + 1, sizeof(double));
    const hone_trainer *b = p->base;
    if (any)
        rc = trainer_evaluate(p->tr, n, b->test_x, b->test_y, b->ds.test.n, tl, ta);
    for (int j = 0; j < n; j++) {
        pack_trial *q = p->slot[j];
        size_t i = (size_t)(q - pt);
        if (!q->live || run_more(&q->r))
            continue;
        int r = rc;
        if (r < 0)
            snprintf(err[i], 256, "test evaluation: %s", hone_strerror(r));
        else
            r = run_finish(&q->r, tl[j], ta[j], &res[i], err[i], 256);
        trial_end(q, &rcs[i], r, err[i]);
    }
    free(tl);
    free(ta);
    return rc;
}

int hone_train_run_pack(const hone_train_opts *const *o, int n, hone_train_result *res, int *rcs,
                        char (*err)[256])
{
    if (n < 1)
        return HONE_EINVAL;
    pack_trial *pt = hone_xcalloc((size_t)n, sizeof(pack_trial));
    pack p = {.slot = hone_xcalloc((size_t)n, sizeof(pack_trial *)),
              .tr = hone_xcalloc((size_t)n, sizeof(hone_trainer *)),
              .eager = o[0]->eager};
    int rc = HONE_OK, first = -1;
    for (int i = 0; i < n; i++) {
        memset(&res[i], 0, sizeof(res[i]));
        rcs[i] = 0;
        err[i][0] = '\0';
        pt[i].o = o[i];
        pt[i].spec = *o[i]->spec;
    }
    /* every trial must share trial 0's pack key */
    for (int i = 0; i < n; i++) {
        const char *diff = i > 0 ? key_diff(o[0], o[i]) : NULL;
        char why[256];
        if (!packable(o[i]->spec))
            snprintf(why, sizeof(why), "pack: trial %d's %s cannot be packed", i,
                     o[i]->spec->model.pretrained[0] ? "model.pretrained" : o[i]->spec->network);
        else if (diff)
            snprintf(why, sizeof(why), "pack: trial %d's %s differs from trial 0's", i, diff);
        else
            continue;
        for (int j = 0; j < n; j++) { /* the whole pack is refused, each trial told why */
            snprintf(err[j], 256, "%s", why);
            trial_end(&pt[j], &rcs[j], HONE_EINVAL, err[j]);
        }
        rc = HONE_EINVAL;
        goto out;
    }
    for (int i = 0; i < n; i++) {
        pt[i].open = 1;
        if ((rcs[i] = run_open(&pt[i].r, o[i], err[i], 256)) < 0)
            trial_end(&pt[i], &rcs[i], rcs[i], err[i]);
        else if (first < 0)
            first = i;
        pt[i].live = rcs[i] == 0;
    }
    if (first < 0)
        goto out;
    p.base = hone_xcalloc(1, sizeof(*p.base));
    p.base_spec = *o[first]->spec;
    p.base->spec = &p.base_spec;
    p.base->log =
        o[first]->log ? o[first]->log : stderr; /* the data's messages: its first user's */
    char e[256] = "";
    rc = trainer_setup_data(p.base, o[first], e, sizeof(e));
    p.base->log = stderr; /* that trial may end before the pack */
    if (rc < 0 || (rc = pack_build(&p, pt, n, e, sizeof(e))) < 0) {
        for (int i = 0; i < n; i++)
            if (pt[i].live) {
                snprintf(err[i], 256, "%s", e);
                trial_end(&pt[i], &rcs[i], rc, err[i]);
            }
        goto out;
    }
    for (int j = 0; j < p.nslots; j++) { /* resume and start reporting */
        pack_trial *q = p.slot[j];
        size_t i = (size_t)(q - pt);
        ckpt c;
        int have = 0, r = run_read_resume(&q->r, q->t, &c, &have, err[i], 256);
        int start = have ? c.epoch : 0;
        double best = have ? c.best_val : NAN;
        if (have) {
            trainer_apply_state(q->t, &c);
            ckpt_free(&c);
        }
        if (r == 0)
            r = run_start(&q->r, q->t, start, best, err[i], 256);
        if (r < 0)
            trial_end(q, &rcs[i], r, err[i]);
    }
    for (;;) {
        if ((rc = pack_finish_due(&p, pt, res, rcs, err)) < 0) {
            snprintf(e, sizeof(e), "test evaluation: %s", hone_strerror(rc));
            break;
        }
        int live = 0, rebuild = 0;
        for (int j = 0; j < p.nslots; j++) {
            live += p.slot[j]->live;
            rebuild |= !p.slot[j]->live;
        }
        if (live == 0)
            break;
        if (rebuild && (rc = pack_build(&p, pt, n, e, sizeof(e))) < 0)
            break;
        if ((rc = pack_epoch(&p, pt, rcs, err)) < 0) { /* a device error: every epoch failed */
            for (int j = 0; j < p.nslots; j++) {
                pack_trial *q = p.slot[j];
                size_t i = (size_t)(q - pt);
                if (q->live)
                    trial_end(q, &rcs[i], run_epoch_failed(&q->r, rc, err[i], 256), err[i]);
            }
            break;
        }
        for (int j = 0; j < p.nslots; j++) {
            pack_trial *q = p.slot[j];
            size_t i = (size_t)(q - pt);
            if (!q->live) /* cancelled during the epoch: it has ended */
                continue;
            int r = q->o->cancel && *q->o->cancel /* after the last step: as hone_train_run */
                        ? run_epoch_failed(&q->r, HONE_ESTATE, err[i], 256)
                        : run_epoch(&q->r, &q->ep, err[i], 256);
            if (r < 0)
                trial_end(q, &rcs[i], r, err[i]);
        }
    }
    if (rc < 0) /* the pack itself failed: every trial still in it fails with it */
        for (int i = 0; i < n; i++)
            if (pt[i].live) {
                if (!err[i][0])
                    snprintf(err[i], 256, "%s", e);
                trial_end(&pt[i], &rcs[i], rc, err[i]);
            }
out:
    for (int i = 0; i < n; i++) {
        if (pt[i].open)
            run_close(&pt[i].r, rcs[i]);
        hone_trainer_free(pt[i].t);
    }
    if (p.base) {
        hone_kgraph_free(p.graph);
        net_free(p.net);
        hone_k_free(p.base->k, p.xb);
        hone_k_free(p.base->k, p.yb);
        hone_trainer_free(p.base);
    }
    free(p.slot);
    free(p.tr);
    free(pt);
    for (int i = 0; rc == 0 && i < n; i++)
        if (rcs[i] < 0)
            rc = rcs[i];
    return rc;
}
