/* train/trainer.h (private): the trainer's state and the per-trial pieces of a training run that
 * the solo trainer (loop.c: hone_trainer_*; run.c: hone_train_run) and the packed-trial trainer
 * (run_pack.c: hone_train_run_pack) share: a step's gather, loss and optimiser update, an epoch's
 * learning rates and metrics, evaluation, checkpoints, and a run's reporting (JSON lines,
 * metrics.jsonl, checkpoint.bin, model.bin, spec.yaml, model.json). One copy of each, so a packed
 * trial writes exactly what its solo run writes. */
#ifndef HONE_TRAIN_TRAINER_H
#define HONE_TRAIN_TRAINER_H

#include <pthread.h>

#include "cache.h"
#include "checkpoint.h"
#include "dataset.h"
#include "detect_train.h"
#include "net.h"

/* One trial's trainer. Solo: it owns everything. Packed (run_pack.c): `borrowed` is set and k, ds,
 * the data, norm, net and xb/yb are the pack's; the trial is slot `slot` of the packed net, and
 * the rest (shuffle, step and learning-rate state, accumulators, optimiser state) is its own. */
struct hone_trainer {
    hone_kctx *k;
    const hone_train_spec *spec; /* borrowed */
    hone_net *net;
    int slot;     /* the trial's slot in net (0 solo) */
    int borrowed; /* 1: k, ds, data, norm, net, xb, yb belong to a pack */
    dataset ds;
    int batch, steps, row, adam;
    uint8_t *train_x, *val_x, *test_x; /* the parts' pixels, uint8 HWC, on the device */
    int32_t *train_y, *val_y, *test_y;
    float *norm;       /* device: the training part's per-channel mean, then 1/deviation */
    hone_kaugment aug; /* spec->augment.*; used when `augment` */
    int augment;
    int32_t *perm, *base_dev, *t_dev;
    float *lr_dev, *lr_sched, *acc; /* lr_sched: this epoch's lr per step, on the device */
    float *xb;                      /* the batch: [trials][batch][row] floats (solo: trials 1) */
    int32_t *yb;
    float *opt; /* sgd: v; adamw: m then v */
    size_t nopt;
    float *lr_host;     /* this epoch's lr per step, on the host */
    hone_kgraph *graph; /* the captured step; NULL: eager (hone_train_opts.eager) */
    /* 1: k (shared_ctx), or ds and the parts' device copies (shared_data: ce), are lent by
     * cache, given back by hone_trainer_free */
    int shared_ctx, shared_data;
    hone_train_cache *cache;
    const cache_entry *ce;
    FILE *log;                     /* hone_train_opts.log, or stderr */
    volatile sig_atomic_t *cancel; /* hone_train_opts.cancel */
    int first_step_pending;        /* hone_train_run: log the end of the run's first step */
    detect_train *det; /* detectnet_v2: its targets, loss and mAP (detect_train.c); else NULL */
};

/* ------------------------------------------------------------------ building trainers */

/* The device, the data on it and the batch geometry of o (no network, no trial state): a pack's
 * shared part, or the first half of a solo trainer. */
int trainer_setup_data(hone_trainer *t, const hone_train_opts *o, char *err, size_t errlen);
/* A trial's own state for t->spec over t->net (which must be set): augmentation, shuffle, step
 * and learning-rate buffers, accumulators and optimiser state. */
void trainer_setup_trial(hone_trainer *t);

/* ------------------------------------------------------------------ a step, an epoch */

/* Gathers t's next training batch (its shuffle, base and augmentation counter) into xb, yb. */
void trainer_step_gather(hone_trainer *t, float *xb, int32_t *yb);
/* Softmax cross-entropy of t's batch into its accumulators, dlogits for the backward. */
void trainer_step_loss(hone_trainer *t, const float *logits, const int32_t *yb, float *dlogits);
/* The optimiser step of t's slot (its own hyperparameters, lr from its lr_dev), then advances
 * its step counter and batch base. */
void trainer_step_update(hone_trainer *t);
/* Prepares epoch `epoch` of `steps` steps: learning rates, shuffle, accumulators. *lr: the lr of
 * the epoch's last step. */
int trainer_epoch_begin(hone_trainer *t, int epoch, int steps, double *lr);
/* Enqueues the copy of step i's learning rate to t->lr_dev. */
int trainer_step_lr(hone_trainer *t, int i);
/* The epoch's training fields of *ep from its accumulators (acc[0], acc[1] read back). */
void trainer_epoch_fill(const hone_trainer *t, int epoch, int steps, double secs, double lr,
                        const float acc[2], hone_train_epoch *ep);
/* Logs that the run's first step finished (bench/resident.sh times a start to it). */
int trainer_first_step_done(hone_trainer *t);

/* Mean loss and accuracy over n samples (x, y) for trainers tr[0..nt) that are the slots 0..nt-1
 * of one net (solo: nt 1), in inference mode: the same images go to every slot, loss[i] and
 * acc[i] are tr[i]'s. */
int trainer_evaluate(hone_trainer **tr, int nt, const uint8_t *x, const int32_t *y, int n,
                     double *loss, double *acc);

/* ------------------------------------------------------------------ checkpoints */

/* The device state of t's slot into c (host copies; ckpt_free releases them). */
int trainer_gather_state(hone_trainer *t, ckpt *c, int epoch, double best_val, int with_opt,
                         char *err, size_t errlen);
/* Reads path and checks that it is a checkpoint of t's spec (c: ckpt_free releases it). */
int trainer_read_state(hone_trainer *t, const char *path, ckpt *c, char *err, size_t errlen);
/* Uploads c (from trainer_read_state or trainer_gather_state with the optimiser) into t's slot. */
void trainer_apply_state(hone_trainer *t, const ckpt *c);

/* ------------------------------------------------------------------ a run's reporting (run.c) */

/* The checkpoint writer: hone_train_run hands an epoch's state and line to a thread (loop.c). */
typedef struct ckpt_writer {
    pthread_t th;
    int running;
    const hone_train_opts *o;
    FILE *metrics;
    char path[1100], line[512];
    ckpt c;
    int rc;
    char err[512];
} ckpt_writer;

/* One trial's run as hone_train_run reports it, around the trainer that trains it. */
typedef struct train_run {
    const hone_train_opts *o;
    hone_trainer *t; /* set by run_start */
    FILE *metrics;
    ckpt_writer wr;
    char ckpath[1100];
    int start;   /* the epoch it starts at (resumed: the checkpoint's) */
    int e;       /* epochs done so far */
    int last;    /* the epoch it stops after (epochs_until, or train.epochs) */
    int stopped; /* the callback stopped it */
    double best_val;
} train_run;

/* Validates o's spec and makes its out_dir. */
int run_open(train_run *r, const hone_train_opts *o, char *err, size_t errlen);
/* model.pretrained (pretrained.c): copies the model in dir into t's network from its first
 * layer on, as far as the two agree; err names the key and the folder when it cannot. */
int trainer_load_pretrained(hone_trainer *t, const char *dir, char *err, size_t errlen);
/* Reads the checkpoint to resume from (o->resume_path) into *c when there is one (*have = 1). */
int run_read_resume(train_run *r, hone_trainer *t, ckpt *c, int *have, char *err, size_t errlen);
/* Starts reporting for t (already holding the resumed state, from epoch `start`): spec.yaml,
 * metrics.jsonl, the log line. */
int run_start(train_run *r, hone_trainer *t, int start, double best_val, char *err, size_t errlen);
/* 1 while the run has epochs left to train. */
int run_more(const train_run *r);
/* The error of an epoch that failed with rc, or was cancelled (HONE_ESTATE), into err. */
int run_epoch_failed(const train_run *r, int rc, char *err, size_t errlen);
/* Reports the epoch just trained (ep): its checkpoint, line and callback. An error (divergence,
 * a checkpoint that cannot be read back or written) ends the run. */
int run_epoch(train_run *r, const hone_train_epoch *ep, char *err, size_t errlen);
/* 1 when every epoch ran (the test part is evaluated and the model written). */
int run_finished(const train_run *r);
/* Ends the run: the last checkpoint written, then (finished) model.bin and model.json with the
 * test numbers, the done or paused line; *res. */
int run_finish(train_run *r, double test_loss, double test_acc, hone_train_result *res, char *err,
               size_t errlen);
/* Releases what run_open and run_start took (after a failure rc < 0: the last epoch's write is
 * still waited for). Does not free r->t. */
void run_close(train_run *r, int rc);

#endif
