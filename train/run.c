/* train/run.c: a training run's reporting, shared by hone_train_run (here, over the solo trainer
 * of loop.c) and hone_train_run_pack (run_pack.c): out_dir, spec.yaml, resuming, each epoch's JSON
 * line and metrics.jsonl line, its checkpoint written off the training path, the callback, and at
 * the end model.bin, model.json and the done or paused line. Trains nothing itself: the callers'
 * trainers do (train/trainer.h). */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "trainer.h"

static void fmt_num(char *out, size_t len, double v)
{
    if (isfinite(v))
        snprintf(out, len, "%.6g", v);
    else
        snprintf(out, len, "null");
}

static void emit(const hone_train_opts *o, FILE *metrics, const char *line)
{
    if (o->print_json) { /* one line whole (hone-train --serve writes from another thread too) */
        FILE *out = o->out ? o->out : stdout;
        flockfile(out);
        fputs(line, out);
        fputc('\n', out);
        fflush(out);
        funlockfile(out);
    }
    if (metrics) {
        fputs(line, metrics);
        fputc('\n', metrics);
        fflush(metrics);
    }
}

/* Gathers the device state into a checkpoint and writes it. */
static int save_state(hone_trainer *t, const char *path, int epoch, double best_val, int with_opt,
                      char *err, size_t errlen)
{
    ckpt c;
    int rc = trainer_gather_state(t, &c, epoch, best_val, with_opt, err, errlen);
    if (rc == 0)
        rc = ckpt_write(path, &c, err, errlen);
    ckpt_free(&c);
    return rc;
}

/* The epoch checkpoints, off the training path: hone_train_run hands the host copy of an epoch's
 * state and its line to a thread that writes the file (temp + rename: whole or absent) and only
 * then prints the line, so an epoch's line still means its checkpoint is on disk (the worker
 * pauses and resumes on that); the next epoch trains meanwhile. One write at a time: the next
 * hand-off, and the end of the run, wait for the previous write. */
static void *writer_main(void *arg)
{
    ckpt_writer *w = arg;
    w->rc = ckpt_write(w->path, &w->c, w->err, sizeof(w->err));
    if (w->rc == 0)
        emit(w->o, w->metrics, w->line);
    ckpt_free(&w->c);
    return NULL;
}

/* Waits for the write in flight; its error, if it failed. */
static int writer_join(ckpt_writer *w, char *err, size_t errlen)
{
    if (!w->running)
        return HONE_OK;
    pthread_join(w->th, NULL);
    w->running = 0;
    if (w->rc < 0)
        snprintf(err, errlen, "%s", w->err);
    return w->rc;
}

/* Writes c (owned from here) to path and then prints line, on the writer thread. */
static int writer_start(ckpt_writer *w, const char *path, ckpt *c, const char *line, char *err,
                        size_t errlen)
{
    int rc = writer_join(w, err, errlen);
    if (rc < 0) {
        ckpt_free(c);
        return rc;
    }
    snprintf(w->path, sizeof(w->path), "%s", path);
    snprintf(w->line, sizeof(w->line), "%s", line);
    w->c = *c;
    memset(c, 0, sizeof(*c));
    if (pthread_create(&w->th, NULL, writer_main, w) != 0) { /* write it here then */
        writer_main(w);
        return w->rc < 0 ? (snprintf(err, errlen, "%s", w->err), w->rc) : HONE_OK;
    }
    w->running = 1;
    return HONE_OK;
}

/* model.json: what a trained model needs beside its weights (train.h). */
static int model_info_write(const hone_trainer *t, const char *dir, char *err, size_t errlen)
{
    const dataset *d = &t->ds;
    json_t *mean = json_array(), *std = json_array(), *names = json_array();
    for (int ch = 0; ch < d->c; ch++) {
        json_array_append_new(mean, json_real(d->mean[ch]));
        json_array_append_new(std, json_real(d->std[ch]));
    }
    for (int i = 0; i < d->classes; i++) {
        char num[16];
        snprintf(num, sizeof(num), "%d", i);
        json_array_append_new(names, json_string(d->names ? d->names[i] : num));
    }
    json_t *j =
        json_pack("{s:i, s:i, s:i, s:i, s:o, s:o, s:o}", "channels", d->c, "height", d->h, "width",
                  d->w, "classes", d->classes, "mean", mean, "std", std, "class_names", names);
    if (j && d->category_ids) { /* a COCO set's: --infer's coco_results.json names them */
        json_t *ids = json_array();
        for (int i = 0; i < d->classes; i++)
            json_array_append_new(ids, json_integer((json_int_t)d->category_ids[i]));
        json_object_set_new(j, "coco_category_ids", ids);
    }
    char path[1100], tmp[1110];
    snprintf(path, sizeof(path), "%s/model.json", dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int rc = HONE_OK;
    if (!j || json_dump_file(j, tmp, JSON_COMPACT) < 0 || rename(tmp, path) < 0) {
        snprintf(err, errlen, "%s: cannot write", path);
        unlink(tmp);
        rc = HONE_EIO;
    }
    json_decref(j);
    return rc;
}

static void write_spec(const hone_train_opts *o)
{
    char path[1100];
    snprintf(path, sizeof(path), "%s/spec.yaml", o->out_dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    hone_train_spec_write(o->spec, f);
    fclose(f);
}

int run_open(train_run *r, const hone_train_opts *o, char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    r->o = o;
    r->wr.o = o;
    r->best_val = NAN;
    int rc = hone_train_spec_validate(o->spec, err, errlen);
    if (rc < 0)
        return rc;
    if (o->out_dir) {
        if (mkdir(o->out_dir, 0755) < 0 && errno != EEXIST) {
            snprintf(err, errlen, "--out %s: %s", o->out_dir, strerror(errno));
            return HONE_EIO;
        }
        snprintf(r->ckpath, sizeof(r->ckpath), "%s/checkpoint.bin", o->out_dir);
    }
    return HONE_OK;
}

int run_read_resume(train_run *r, hone_trainer *t, ckpt *c, int *have, char *err, size_t errlen)
{
    *have = 0;
    if (!r->o->resume_path)
        return HONE_OK;
    int rc = trainer_read_state(t, r->o->resume_path, c, err, errlen);
    *have = rc == 0;
    return rc;
}

int run_start(train_run *r, hone_trainer *t, int start, double best_val, char *err, size_t errlen)
{
    const hone_train_opts *o = r->o;
    (void)err;
    (void)errlen;
    r->t = t;
    r->start = r->e = start;
    r->best_val = best_val;
    t->first_step_pending = 1;
    if (o->out_dir) {
        char path[1100];
        write_spec(o);
        snprintf(path, sizeof(path), "%s/metrics.jsonl", o->out_dir);
        r->metrics = fopen(path, o->resume_path ? "a" : "w");
        r->wr.metrics = r->metrics;
    }
    int epochs = o->spec->train.epochs;
    fprintf(t->log,
            "hone-train: %s on %s, %zu parameters, %d train / %d val / %d test images, batch %d, "
            "epochs %d..%d\n",
            o->spec->network, hone_kctx_device(t->k) == HONE_DEV_CUDA ? "cuda" : "cpu",
            t->net->nparams, t->ds.train.n, t->ds.val.n, t->ds.test.n, t->batch, start + 1, epochs);
    r->last = epochs;
    if (o->epochs_until > 0 && o->epochs_until < r->last)
        r->last = o->epochs_until;
    return HONE_OK;
}

int run_more(const train_run *r)
{
    return !r->stopped && r->e < r->last;
}

int run_epoch_failed(const train_run *r, int rc, char *err, size_t errlen)
{
    if (r->o->cancel && *r->o->cancel) {
        snprintf(err, errlen, "epoch %d: cancelled", r->e + 1);
        return HONE_ESTATE;
    }
    snprintf(err, errlen, "epoch %d: %s", r->e + 1, hone_strerror(rc));
    return rc;
}

int run_epoch(train_run *r, const hone_train_epoch *ep, char *err, size_t errlen)
{
    const hone_train_opts *o = r->o;
    hone_trainer *t = r->t;
    int rc, epochs = o->spec->train.epochs;
    char line[512];
    if (!isfinite(ep->train_loss)) {
        snprintf(err, errlen, "epoch %d: training diverged (loss is not finite)", r->e + 1);
        return HONE_ENUMERIC;
    }
    if (isfinite(ep->val_accuracy) && !(ep->val_accuracy <= r->best_val))
        r->best_val = ep->val_accuracy;
    ckpt c = {0};
    if (o->out_dir && (rc = trainer_gather_state(t, &c, r->e + 1, r->best_val, 1, err, errlen)) < 0)
        return rc;
    char n[6][32];
    fmt_num(n[0], 32, ep->train_loss);
    fmt_num(n[1], 32, ep->train_accuracy);
    fmt_num(n[2], 32, ep->val_loss);
    fmt_num(n[3], 32, ep->val_accuracy);
    fmt_num(n[4], 32, ep->lr);
    fmt_num(n[5], 32, ep->images_per_second);
    if (t->det) /* detection: the accuracy fields hold the mAP (train.h) */
        snprintf(line, sizeof(line),
                 "{\"epoch\":%d,\"epochs\":%d,\"train_loss\":%s,\"val_loss\":%s,"
                 "\"val_map\":%s,\"lr\":%s,\"seconds\":%.3f,\"images_per_second\":%s}",
                 ep->epoch, epochs, n[0], n[2], n[3], n[4], ep->seconds, n[5]);
    else
        snprintf(line, sizeof(line),
                 "{\"epoch\":%d,\"epochs\":%d,\"train_loss\":%s,\"train_accuracy\":%s,"
                 "\"val_loss\":%s,\"val_accuracy\":%s,\"lr\":%s,\"seconds\":%.3f,"
                 "\"images_per_second\":%s}",
                 ep->epoch, epochs, n[0], n[1], n[2], n[3], n[4], ep->seconds, n[5]);
    if (!o->out_dir)
        emit(o, r->metrics, line);
    else if ((rc = writer_start(&r->wr, r->ckpath, &c, line, err, errlen)) < 0)
        return rc;
    r->e++;
    if (o->on_epoch && o->on_epoch(ep, o->user))
        r->stopped = 1;
    return HONE_OK;
}

/* A detector's final line also carries COCO's metrics of its test part (detect.h), as
 * ",\"test_coco_ap\":..." (null where undefined: no test images, or no ground truth of a size);
 * one more pass over the test part, once, at the end of the run. */
static int detect_coco_line(hone_trainer *t, char *out, size_t len, char *err, size_t errlen)
{
    hone_det_coco_stats c;
    double loss, map;
    int images = 0;
    int rc = hone_trainer_test_map(t, &images, &loss, &map, NULL, NULL, &c);
    if (rc < 0) {
        snprintf(err, errlen, "evaluation: %s", hone_strerror(rc));
        return rc;
    }
    double v[6] = {c.ap, c.ap50, c.ap75, c.ap_small, c.ap_medium, c.ap_large};
    char n[6][32];
    for (int i = 0; i < 6; i++)
        fmt_num(n[i], 32, v[i] >= 0 ? v[i] : NAN);
    snprintf(out, len,
             ",\"test_coco_ap\":%s,\"test_coco_ap50\":%s,\"test_coco_ap75\":%s,"
             "\"test_coco_ap_small\":%s,\"test_coco_ap_medium\":%s,\"test_coco_ap_large\":%s",
             n[0], n[1], n[2], n[3], n[4], n[5]);
    return HONE_OK;
}

int run_finished(const train_run *r)
{
    return r->e >= r->o->spec->train.epochs;
}

int run_finish(train_run *r, double test_loss, double test_acc, hone_train_result *res, char *err,
               size_t errlen)
{
    const hone_train_opts *o = r->o;
    hone_trainer *t = r->t;
    char line[512];
    int rc, e = r->e;
    if ((rc = writer_join(&r->wr, err, errlen)) < 0)
        return rc;
    memset(res, 0, sizeof(*res));
    res->epochs_trained = e;
    res->best_val_accuracy = r->best_val;
    if (run_finished(r)) {
        res->finished = 1;
        res->test_loss = test_loss;
        res->test_accuracy = test_acc;
        if (o->out_dir) {
            snprintf(line, sizeof(line), "%s/model.bin", o->out_dir);
            if ((rc = save_state(t, line, e, r->best_val, 0, err, errlen)) < 0 ||
                (rc = model_info_write(t, o->out_dir, err, errlen)) < 0)
                return rc;
        }
        char n[3][32], coco[320] = "";
        if (t->det && (rc = detect_coco_line(t, coco, sizeof(coco), err, errlen)) < 0)
            return rc;
        fmt_num(n[0], 32, res->test_accuracy);
        fmt_num(n[1], 32, res->test_loss);
        fmt_num(n[2], 32, r->best_val);
        snprintf(line, sizeof(line),
                 t->det ? "{\"event\":\"done\",\"test_map\":%s,\"test_loss\":%s,"
                          "\"best_val_map\":%s,\"epochs_trained\":%d%s}"
                        : "{\"event\":\"done\",\"test_accuracy\":%s,\"test_loss\":%s,"
                          "\"best_val_accuracy\":%s,\"epochs_trained\":%d%s}",
                 n[0], n[1], n[2], e, coco);
    } else {
        char n[32];
        fmt_num(n, 32, r->best_val);
        snprintf(line, sizeof(line),
                 "{\"event\":\"paused\",\"epochs_trained\":%d,\"best_val_accuracy\":%s}", e, n);
    }
    emit(o, r->metrics, line);
    return HONE_OK;
}

void run_close(train_run *r, int rc)
{
    char ignored[512];
    if (rc < 0) /* the epoch before the failure is still written and reported */
        writer_join(&r->wr, ignored, sizeof(ignored));
    if (r->metrics)
        fclose(r->metrics);
    r->metrics = NULL;
}

int hone_train_run(const hone_train_opts *o, hone_train_result *res, char *err, size_t errlen)
{
    hone_trainer *t = NULL;
    train_run r;
    int rc, have = 0;
    ckpt c;
    memset(res, 0, sizeof(*res));
    if ((rc = run_open(&r, o, err, errlen)) < 0)
        goto fail;
    if ((rc = hone_trainer_new(o, &t, err, errlen)) < 0)
        goto fail;
    if ((rc = run_read_resume(&r, t, &c, &have, err, errlen)) < 0)
        goto fail;
    int start = have ? c.epoch : 0;
    double best = have ? c.best_val : NAN;
    if (have) {
        trainer_apply_state(t, &c);
        ckpt_free(&c);
    }
    if ((rc = run_start(&r, t, start, best, err, errlen)) < 0)
        goto fail;
    while (run_more(&r)) {
        hone_train_epoch ep;
        if ((rc = hone_trainer_epoch(t, r.e, 0, &ep)) < 0 || (o->cancel && *o->cancel)) {
            rc = run_epoch_failed(&r, rc, err, errlen);
            goto fail;
        }
        if ((rc = run_epoch(&r, &ep, err, errlen)) < 0)
            goto fail;
    }
    double loss = NAN, acc = NAN;
    if ((rc = writer_join(&r.wr, err, errlen)) < 0)
        goto fail;
    if (run_finished(&r) && (rc = hone_trainer_test(t, &loss, &acc)) < 0) {
        snprintf(err, errlen, "test evaluation: %s", hone_strerror(rc));
        goto fail;
    }
    rc = run_finish(&r, loss, acc, res, err, errlen);
fail:
    run_close(&r, rc);
    hone_trainer_free(t);
    return rc;
}
