/* The train kind (kind.h): one training run, on its own or as a trial of an AutoML job. Creating
 * one (train and AutoML jobs alike) from an experiment, the spec it resolves to and its lease
 * carries, and its end (completion or a lost lease after stop or pause), including retries of
 * failed trainers and feeding the end of a trial to its search. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "convert.h"
#include "ctl.h"
#include "ctl_spec.h"
#include "finetune.h"
#include "job_rows.h"
#include "joblog.h"
#include "kind.h"
#include "search.h"
#include "store.h"
#include "train.h"
#include "util.h"

/* The kind of a trial's parent, through the table: this file calls the search by no name. */
static const ctl_kind *trial_parent(void)
{
    return ctl_kind_get(HONE_KIND_AUTOML);
}

static void coerce_ints(json_t *flat, const json_t *defaults)
{
    const char *k;
    json_t *v;
    json_object_foreach(flat, k, v)
    {
        json_t *d = json_object_get(defaults, k);
        if (json_is_integer(d) && json_is_real(v))
            json_object_set_new(flat, k, json_integer((json_int_t)llround(json_real_value(v))));
    }
}

int ctl_train_spec(hone_controller *c, const json_t *job, json_t **flat)
{
    json_t *exp = NULL, *ds = NULL, *parent = NULL, *tmp;
    int rc = store_experiment_get(c->db, jstr(job, "experiment_id"), NULL, &exp);
    if (rc)
        return rc;
    json_t *tds = jparse(jstr(exp, "train_datasets"));
    rc = store_dataset_get(c->db, json_string_value(json_array_get(tds, 0)), NULL, &ds);
    json_decref(tds);
    if (rc)
        goto fail;
    /* a trial's swept network (a resnet's depth) replaces the experiment's */
    json_t *cfg = jparse(jstr(job, "config"));
    const char *net = json_is_string(json_object_get(cfg, "network"))
                          ? json_string_value(json_object_get(cfg, "network"))
                          : jstr(exp, "network");
    json_t *defaults = ctl_spec_defaults(net);
    /* what was set: the experiment's specs < its parent's (a trial's AutoML job) < its own < a
     * trial's swept values; the rest is resolved, sized to the dataset */
    json_t *over = json_object();
    if ((tmp = jparse(jstr(exp, "specs")))) {
        if (json_is_object(tmp))
            json_object_update(over, tmp);
        json_decref(tmp);
    }
    if (jstr(job, "parent_id") && ctl_job_row(c, jstr(job, "parent_id"), &parent) == HONE_OK &&
        (tmp = jparse(jstr(parent, "specs")))) {
        if (json_is_object(tmp))
            json_object_update(over, tmp);
        json_decref(tmp);
    }
    if ((tmp = jparse(jstr(job, "specs")))) {
        if (json_is_object(tmp))
            json_object_update(over, tmp);
        json_decref(tmp);
    }
    int user_lr = json_object_get(over, "train.lr") != NULL;
    if (json_is_object(cfg))
        json_object_update(over, cfg);
    coerce_ints(over, defaults);
    json_t *f = ctl_spec_resolve(net, ds, over, NULL);
    json_decref(over);
    /* a trial's swept batch with the rate left to the default: the rate follows that batch as
     * it follows a sized one (hone_spec_sized_lr_factor) */
    if (!user_lr && json_is_object(cfg) && json_object_get(cfg, "train.batch_size") &&
        !json_object_get(cfg, "train.lr")) {
        double lr = jnum(defaults, "train.lr") *
                    hone_spec_sized_lr_factor(net, (int)jint(f, "train.batch_size"));
        if (jnum(f, "train.min_lr") <= jnum(defaults, "train.lr"))
            json_object_set_new(
                f, "train.lr",
                json_real(lr < jnum(f, "train.min_lr") ? jnum(f, "train.min_lr") : lr));
    }
    json_decref(cfg);
    /* train.epochs is the schedule's horizon: a trial's whole budget, so the learning-rate
     * schedule does not change when it is resumed; the worker stops it at epochs_until. */
    json_t *pa = parent ? jparse(jstr(parent, "automl")) : NULL;
    if (pa) {
        json_t *o = json_object_get(pa, "opts");
        hone_algo algo;
        long long full = jint(o, "max_epochs");
        if (!hone_algo_parse(jstr(o, "algorithm"), &algo) && hone_algo_multifidelity(algo))
            full =
                jint(o, "R") * (jint(o, "epoch_multiplier") > 0 ? jint(o, "epoch_multiplier") : 1);
        if (full < jint(job, "epochs_target"))
            full = jint(job, "epochs_target");
        if (full > 0)
            json_object_set_new(f, "train.epochs", json_integer(full));
        json_decref(pa);
    } else if (jint(job, "epochs_target") > 0) {
        json_object_set_new(f, "train.epochs", json_integer(jint(job, "epochs_target")));
    }
    coerce_ints(f, defaults);
    json_decref(defaults);
    if ((rc = ctl_convert_spec(c, job, f))) {
        json_decref(f);
        goto fail;
    }
    *flat = f;
fail:
    json_decref(exp);
    json_decref(ds);
    json_decref(parent);
    return rc;
}

ctl_sizing ctl_train_sizing(hone_controller *c, const json_t *exp, const json_t *flat)
{
    json_t *tds = jparse(jstr(exp, "train_datasets")), *ds = NULL;
    ctl_sizing z = {-1, 1.0, 0};
    if (store_dataset_get(c->db, json_string_value(json_array_get(tds, 0)), NULL, &ds) == HONE_OK)
        z = ctl_spec_sizing(flat, ds);
    json_decref(tds);
    json_decref(ds);
    return z;
}

/* An image-folder or kitti experiment's job waits for the convert job that packs its dataset at
 * the size and channels the resolved spec trains on (found, or created now): its id into cvt (""
 * when the dataset is neither). */
static int find_convert(hone_controller *c, const json_t *exp, const json_t *job_specs, char *cvt,
                        size_t cvtlen)
{
    json_t *tds = jparse(jstr(exp, "train_datasets")), *ds = NULL, *espec = NULL, *flat = NULL;
    int rc = store_dataset_get(c->db, json_string_value(json_array_get(tds, 0)), NULL, &ds),
        created;
    cvt[0] = '\0';
    if (rc || !ctl_convert_format(jstr(ds, "format")))
        goto fail;
    espec = jparse(jstr(exp, "specs"));
    flat = ctl_spec_resolve(jstr(exp, "network"), ds, espec, job_specs);
    int size, channels;
    ctl_convert_shape(ds, flat, &size, &channels);
    rc = ctl_convert_ensure(c, ds, size, channels, cvt, cvtlen, &created);
fail:
    json_decref(tds);
    json_decref(ds);
    json_decref(espec);
    json_decref(flat);
    return rc;
}

/* What the job will train, checked as hone-train will check it (before anything is stored), and
 * its resolved train.epochs: HONE_EINVAL with field and message, HONE_ESQL. */
static int check_spec(hone_controller *c, const json_t *exp, const json_t *job_specs,
                      const json_t *settings, const ctl_train_search *search, int *epochs,
                      char *field, size_t fieldlen, char *msg, size_t msglen)
{
    json_t *tds = jparse(jstr(exp, "train_datasets")), *ds = NULL, *espec = NULL, *space = NULL;
    json_t *flat = NULL;
    const char *net = jstr(exp, "network");
    int rc = store_dataset_get(c->db, json_string_value(json_array_get(tds, 0)), NULL, &ds);
    if (rc) {
        rc = HONE_ESQL; /* experiment_datasets keeps an experiment's datasets */
        goto fail;
    }
    espec = jparse(jstr(exp, "specs"));
    flat = ctl_spec_resolve(net, ds, espec, job_specs);
    *epochs = (int)jint(flat, "train.epochs");
    ctl_sizing z = ctl_spec_sizing(flat, ds);
    rc = search ? search->space(net, &z, settings, &space, field, fieldlen, msg, msglen) : HONE_OK;
    if (rc == HONE_OK)
        rc = ctl_spec_check_create(net, ds, espec, job_specs, settings, space, field, fieldlen, msg,
                                   msglen);
fail:
    json_decref(tds);
    json_decref(ds);
    json_decref(espec);
    json_decref(space);
    json_decref(flat);
    return rc;
}

int ctl_train_create_as(hone_controller *c, const json_t *exp, hone_kind kind,
                        const ctl_train_search *search, const json_t *body, const char *owner,
                        char *id_out, size_t idlen, int *http, char *field, size_t fieldlen,
                        char *msg, size_t msglen)
{
    json_t *flat = NULL, *settings = jparse(jstr(exp, "automl_settings"));
    const json_t *specs = json_object_get(body, "specs");
    const char *name = jstr(body, "name"), *from = jstr(body, "parent_job_id");
    int rc = HONE_EINVAL;
    *http = 422;
    if (ctl_spec_flatten(specs, "specs", &flat, field, fieldlen, msg, msglen))
        goto fail;
    int is_automl = search != NULL, epochs = 0;
    /* epochs for a plain train job: the resolved spec's train.epochs (sized to the data) */
    if ((rc = check_spec(c, exp, flat, settings, search, &epochs, field, fieldlen, msg, msglen)))
        goto fail;
    /* fine-tuning: the parent's model (finetune.c), checked before anything is stored */
    if (from && (rc = ctl_finetune_check(c, exp, flat, from, owner, http, msg, msglen))) {
        snprintf(field, fieldlen, "parent_job_id");
        goto fail;
    }
    char cvt[64];
    if ((rc = find_convert(c, exp, flat, cvt, sizeof cvt)))
        goto fail;
    ctl_new_id(c, "job", id_out, idlen);
    char *sp = jdump(flat);
    double now = ctl_now();
    rc = store_job_insert(c->db, id_out, jstr(exp, "id"), hone_kind_name(kind), name ? name : "",
                          sp, is_automl ? 0 : epochs, now, cvt[0] ? cvt : NULL);
    free(sp);
    if (!rc && from)
        rc = store_job_set_from(c->db, id_out, from);
    if (rc)
        goto fail;
    rc = search ? search->start(c, id_out, msg, msglen) : HONE_OK;
    if (rc == HONE_EINVAL)
        snprintf(field, fieldlen, "specs");
fail:
    json_decref(flat);
    json_decref(settings);
    return rc;
}

static const char *decided_status(const json_t *job, const char *reported, int full,
                                  int *stopped_early)
{
    const char *dec = jstr(job, "last_decision");
    const char *ctl = jstr(job, "control");
    *stopped_early = 0;
    if (ctl && !strcmp(ctl, "cancel"))
        return "canceled";
    if (!strcmp(reported, "failed"))
        return "failed";
    if (dec && !strcmp(dec, "pause"))
        return "paused";
    if (dec && !strcmp(dec, "stop")) {
        *stopped_early = jint(job, "epoch") < full;
        return *stopped_early ? "stopped" : "done";
    }
    if (!strcmp(reported, "paused"))
        return "paused";
    if (!strcmp(reported, "stopped"))
        return "stopped";
    return "done";
}

/* The job object of a train lease: the resolved flat spec (dotted keys, the trial's values
 * included) once, as hone-train --spec reads it, and where to run. */
static json_t *lease_reply(hone_controller *c, const json_t *job, const json_t *flat)
{
    char *dir = ctl_job_dir(c, jstr(job, "id"));
    int resume = (int)jint(job, "resume");
    json_t *j = json_pack("{s:s,s:s,s:O,s:O,s:O,s:I,s:I,s:b,s:o,s:s,s:s,s:I,s:I}", "id",
                          jstr(job, "id"), "experiment_id", jstr(job, "experiment_id"), "parent_id",
                          json_object_get(job, "parent_id"), "trial", json_object_get(job, "trial"),
                          "spec", flat, "epochs_until", (json_int_t)jint(job, "epochs_target"),
                          "epoch", (json_int_t)jint(job, "epoch"), "resume", resume, "checkpoint",
                          resume ? json_string(dir) : json_null(), "out_dir", dir, "dataset_path",
                          jstr(flat, "data.path"), "attempts", (json_int_t)jint(job, "attempts"),
                          "lease_seconds", (json_int_t)c->cfg.lease_seconds);
    free(dir);
    /* The dataset data.path names, for a worker that downloads it (GET /datasets/{id}/files). */
    json_t *ds = ctl_job_dataset_id(c, job);
    if (ds)
        json_object_set_new(j, "dataset_id", ds);
    /* fine-tuning: the parent's model, hone-train's model.pretrained (not applied on resume) */
    json_t *pre = ctl_finetune_lease(c, job);
    if (pre)
        json_object_set_new(j, "pretrained", pre);
    return j;
}

/* 1 when this failure has the cause the job's last attempt failed of (the row's error holds it
 * after a retry): the job's own (its spec, its data), not the machine's, so not retried again. */
static int same_cause_again(const json_t *job, const char *log_tail)
{
    const char *prev = jstr(job, "error");
    char cause[1024];
    if (jint(job, "attempts") < 1 || !prev || !log_tail)
        return 0;
    ctl_failure_cause(log_tail, cause, sizeof cause);
    return cause[0] && strcmp(cause, prev) == 0;
}

int ctl_train_finish(hone_controller *c, const json_t *job, const char *status,
                     const char *log_tail, const json_t *final)
{
    const char *id = jstr(job, "id");
    int trial = jstr(job, "parent_id") && json_is_integer(json_object_get(job, "trial"));
    int stopped_early = 0, full = (int)jint(job, "epochs_target");
    int budget = trial ? trial_parent()->trial_budget(c, jstr(job, "parent_id")) : 0;
    if (budget > full)
        full = budget;
    const char *st = decided_status(job, status, full, &stopped_early);
    double now = ctl_now();
    json_t *res = jparse(jstr(job, "result"));
    if (!json_is_object(res)) {
        json_decref(res);
        res = json_object();
    }
    if (json_is_object(final))
        json_object_update(res, (json_t *) final);
    char *rs = jdump(res);
    json_decref(res);
    int rc;
    if (!strcmp(st, "failed") && jint(job, "attempts") + 1 < c->cfg.max_attempts &&
        !same_cause_again(job, log_tail)) {
        /* Retry: back to the queue, resuming from its last checkpoint; the failed lease ends
         * (so that no late word from its worker re-attaches the job to it). */
        rc = store_job_retry(c->db, id, now, log_tail, rs);
        free(rs);
        if (!rc && store_lease_end(c->db, id, now, "failed"))
            rc = HONE_ESQL;
        ctl_log(
            c, "warn", "job_retry",
            json_pack("{s:s,s:I}", "job", id, "attempt", (json_int_t)jint(job, "attempts") + 1));
        return rc;
    }
    int failed = !strcmp(st, "failed");
    rc = store_job_end(c->db, id, st, stopped_early, now, failed, log_tail, rs);
    free(rs);
    if (rc)
        return rc;
    if (store_lease_end(c->db, id, now, st))
        return HONE_ESQL;
    ctl_log(c, "info", "job_end",
            json_pack("{s:s,s:s,s:b}", "job", id, "status", st, "stopped_early", stopped_early));
    if (trial) /* a canceled trial ranks as failed; a dropped search (parent canceled) ignores it */
        return trial_parent()->trial_end(c, job, failed || !strcmp(st, "canceled"));
    return HONE_OK;
}

static int train_create(hone_controller *c, const json_t *exp, const json_t *body,
                        const char *owner, char *id_out, size_t idlen, int *http, char *field,
                        size_t fieldlen, char *msg, size_t msglen)
{
    json_t *settings = jparse(jstr(exp, "automl_settings"));
    int search = json_is_true(json_object_get(settings, "automl_enabled"));
    json_decref(settings);
    if (search) /* the experiment searches: its train job is an AutoML job */
        return trial_parent()->create(c, exp, body, owner, id_out, idlen, http, field, fieldlen,
                                      msg, msglen);
    return ctl_train_create_as(c, exp, HONE_KIND_TRAIN, NULL, body, owner, id_out, idlen, http,
                               field, fieldlen, msg, msglen);
}

static json_t *train_lease_job(hone_controller *c, const json_t *job, const json_t *flat)
{
    char *dir = ctl_job_dir(c, jstr(job, "id"));
    mkdir(c->artifacts_dir, 0755);
    mkdir(dir, 0755);
    free(dir);
    return lease_reply(c, job, flat);
}

/* Cancel: queued/paused jobs end now, a running one is told through heartbeat and report
 * replies. A queued trial counts as running in its search; a paused one is resumable: end both. */
static int train_cancel(hone_controller *c, const json_t *job)
{
    int ended, rc = ctl_kind_cancel_plain(c, job, &ended);
    hone_status st = HONE_STATUS_COUNT;
    hone_status_parse(jstr(job, "status"), &st);
    if (!rc && ended && jstr(job, "parent_id") && st == HONE_STATUS_QUEUED)
        return trial_parent()->trial_end(c, job, 1);
    return rc;
}

static int train_pause(hone_controller *c, const json_t *job)
{
    hone_status st = HONE_STATUS_COUNT;
    hone_status_parse(jstr(job, "status"), &st);
    if (st == HONE_STATUS_QUEUED)
        return store_job_pause(c->db, jstr(job, "id"));
    return store_job_request_pause(c->db, jstr(job, "id"));
}

static int train_resume(hone_controller *c, const json_t *job)
{
    return store_job_resume(c->db, jstr(job, "id"));
}

/* A trial's search hears of what was done to it. */
static void train_controlled(hone_controller *c, const json_t *job, const char *verb)
{
    (void)verb;
    if (jstr(job, "parent_id"))
        trial_parent()->trial_step(c, jstr(job, "parent_id"));
}

static void train_view(hone_controller *c, json_t *o, const json_t *row)
{
    (void)c;
    ctl_convert_json(o, row);
    ctl_finetune_json(o, row);
}

const ctl_kind ctl_kind_train = {
    .id = HONE_KIND_TRAIN,
    .user_creates = 1,
    .spread_gpus = 1,
    .report = CTL_REPORT_EPOCHS,
    .create = train_create,
    .lease_spec = ctl_train_spec,
    .resolved_spec = ctl_train_spec,
    .lease_job = train_lease_job,
    .finish = ctl_train_finish,
    .cancel = train_cancel,
    .pause = train_pause,
    .resume = train_resume,
    .controlled = train_controlled,
    .view = train_view,
};
