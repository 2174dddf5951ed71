/* Jobs: creating train and AutoML jobs from an experiment, the resolved trainer spec of a job, its
 * API view, its artifact folder, and ending a train job (completion or a lost lease after stop or
 * pause), including retries of failed trainers and feeding the end of a trial to its search. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "automl.h"
#include "actions.h"
#include "convert.h"
#include "ctl.h"
#include "ctl_spec.h"
#include "jobs.h"
#include "store.h"
#include "util.h"

int ctl_job_row(hone_controller *c, const char *id, json_t **row)
{
    return store_job_get(c->db, id, row);
}

char *ctl_job_dir(hone_controller *c, const char *job_id)
{
    size_t n = strlen(c->artifacts_dir) + strlen(job_id) + 2;
    char *p = hone_xmalloc(n);
    snprintf(p, n, "%s/%s", c->artifacts_dir, job_id);
    return p;
}

static void set_time(json_t *o, const char *key, const json_t *row, const char *col)
{
    double t = jnum(row, col);
    char ts[32], k2[64];
    if (isnan(t)) {
        json_object_set_new(o, key, json_null());
        return;
    }
    ctl_time_str(t, ts, sizeof ts);
    json_object_set_new(o, key, json_string(ts));
    snprintf(k2, sizeof k2, "%s_unix", key);
    json_object_set_new(o, k2, json_real(t));
}

json_t *ctl_job_json(hone_controller *c, const json_t *row)
{
    json_t *o = json_object();
    static const char *const copy[] = {
        "id",    "experiment_id", "parent_id", "action", "name", "status", "trial", "epochs_target",
        "epoch", "worker_id",     "attempts",  "error",  "owner"};
    for (size_t i = 0; i < HONE_ARRAY_LEN(copy); i++)
        json_object_set(o, copy[i], json_object_get(row, copy[i]));
    json_object_set_new(o, "stopped_early", json_boolean(jint(row, "stopped_early")));
    json_object_set_new(o, "resume", json_boolean(jint(row, "resume")));
    json_t *cfg = jparse(jstr(row, "config"));
    json_object_set_new(o, "config", cfg ? cfg : json_null());
    json_t *specs = jparse(jstr(row, "specs"));
    json_object_set_new(o, "specs", specs ? specs : json_object());
    set_time(o, "created", row, "created");
    set_time(o, "started", row, "started");
    set_time(o, "finished", row, "finished");
    json_t *res = jparse(jstr(row, "result"));
    if (!json_is_object(res)) {
        json_decref(res);
        res = json_object();
    }
    json_object_set(res, "best_metric", json_object_get(row, "best_metric"));
    json_object_set(res, "best_epoch", json_object_get(row, "best_epoch"));
    json_object_set_new(o, "result", res);
    if (jstr(row, "control"))
        json_object_set(o, "requested", json_object_get(row, "control"));
    if (!strcmp(jstr(row, "action"), "automl"))
        json_object_set_new(o, "automl", ctl_automl_status(c, row));
    ctl_convert_json(o, row);
    ctl_action_json(o, row);
    return o;
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

int ctl_job_spec(hone_controller *c, const json_t *job, json_t **flat)
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
    json_t *defaults = ctl_spec_defaults(jstr(exp, "network"));
    tmp = jparse(jstr(exp, "specs"));
    json_t *f = ctl_spec_resolve(jstr(exp, "network"), ds, tmp, NULL);
    json_decref(tmp);
    if (jstr(job, "parent_id") && ctl_job_row(c, jstr(job, "parent_id"), &parent) == HONE_OK &&
        (tmp = jparse(jstr(parent, "specs")))) {
        json_object_update(f, tmp);
        json_decref(tmp);
    }
    if ((tmp = jparse(jstr(job, "specs")))) {
        json_object_update(f, tmp);
        json_decref(tmp);
    }
    if ((tmp = jparse(jstr(job, "config")))) {
        if (json_is_object(tmp))
            json_object_update(f, tmp);
        json_decref(tmp);
    }
    /* train.epochs is the schedule's horizon: a trial's whole budget, so the learning-rate
     * schedule does not change when it is resumed; the worker stops it at epochs_until. */
    json_t *pa = parent ? jparse(jstr(parent, "automl")) : NULL;
    if (pa) {
        json_t *o = json_object_get(pa, "opts");
        const char *algo = jstr(o, "algorithm");
        long long full = jint(o, "max_epochs");
        if (algo && (!strcmp(algo, "hyperband") || !strcmp(algo, "bohb") || !strcmp(algo, "asha")))
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

/* What the job will train, checked as hone-train will check it (before anything is stored):
 * HONE_EINVAL with field and message, HONE_ESQL. */
static int check_spec(hone_controller *c, const json_t *exp, const json_t *job_specs,
                      const json_t *settings, int automl, char *field, size_t fieldlen, char *msg,
                      size_t msglen)
{
    json_t *tds = jparse(jstr(exp, "train_datasets")), *ds = NULL, *espec = NULL, *space = NULL;
    const char *net = jstr(exp, "network");
    int rc = store_dataset_get(c->db, json_string_value(json_array_get(tds, 0)), NULL, &ds);
    if (rc) {
        rc = HONE_ESQL; /* experiment_datasets keeps an experiment's datasets */
        goto fail;
    }
    espec = jparse(jstr(exp, "specs"));
    rc = automl ? ctl_automl_space_json(net, settings, &space, field, fieldlen, msg, msglen)
                : HONE_OK;
    if (rc == HONE_OK)
        rc = ctl_spec_check_create(net, ds, espec, job_specs, settings, space, field, fieldlen, msg,
                                   msglen);
fail:
    json_decref(tds);
    json_decref(ds);
    json_decref(espec);
    json_decref(space);
    return rc;
}

int ctl_job_create(hone_controller *c, const json_t *exp, const char *action, const json_t *specs,
                   const char *name, char *id_out, size_t idlen, char *field, size_t fieldlen,
                   char *msg, size_t msglen)
{
    json_t *flat = NULL, *settings = jparse(jstr(exp, "automl_settings"));
    int rc = HONE_EINVAL;
    if (ctl_spec_flatten(specs, "specs", &flat, field, fieldlen, msg, msglen))
        goto fail;
    if (!strcmp(action, "train") && json_is_true(json_object_get(settings, "automl_enabled")))
        action = "automl";
    if ((rc = check_spec(c, exp, flat, settings, !strcmp(action, "automl"), field, fieldlen, msg,
                         msglen)))
        goto fail;
    /* Epochs for a plain train job: the resolved spec's train.epochs. */
    json_t *defaults = ctl_spec_defaults(jstr(exp, "network"));
    json_t *espec = jparse(jstr(exp, "specs"));
    json_object_update(defaults, espec);
    json_object_update(defaults, flat);
    int epochs = (int)jint(defaults, "train.epochs");
    json_decref(espec);
    json_decref(defaults);
    char cvt[64];
    if ((rc = find_convert(c, exp, flat, cvt, sizeof cvt)))
        goto fail;
    ctl_new_id(c, "job", id_out, idlen);
    char *sp = jdump(flat);
    double now = ctl_now();
    int is_automl = !strcmp(action, "automl");
    rc = store_job_insert(c->db, id_out, jstr(exp, "id"), action, name ? name : "", sp,
                          is_automl ? 0 : epochs, now, cvt[0] ? cvt : NULL);
    free(sp);
    if (rc)
        goto fail;
    rc = is_automl ? ctl_automl_start(c, id_out, msg, msglen) : HONE_OK;
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

int ctl_job_finish(hone_controller *c, const json_t *job, const char *status, const char *log_tail,
                   const json_t *final)
{
    const char *id = jstr(job, "id");
    if (!strcmp(jstr(job, "action"), "convert"))
        return ctl_convert_finish(c, job, status, log_tail, final);
    if (ctl_action_is(jstr(job, "action")))
        return ctl_action_finish(c, job, status, log_tail, final);
    int trial = jstr(job, "parent_id") && json_is_integer(json_object_get(job, "trial"));
    int stopped_early = 0, full = (int)jint(job, "epochs_target");
    ctl_search *s = trial ? ctl_automl_find(c, jstr(job, "parent_id")) : NULL;
    if (s && s->full_epochs > full)
        full = s->full_epochs;
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
    if (!strcmp(st, "failed") && jint(job, "attempts") + 1 < c->cfg.max_attempts) {
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
        return ctl_automl_end(c, job, failed || !strcmp(st, "canceled"));
    return HONE_OK;
}

json_t *ctl_job_dataset_id(hone_controller *c, const json_t *job)
{
    json_t *exp = NULL, *tds = NULL, *id = NULL;
    if (store_experiment_get(c->db, jstr(job, "experiment_id"), NULL, &exp) == HONE_OK &&
        (tds = jparse(jstr(exp, "train_datasets"))) && json_is_string(json_array_get(tds, 0)))
        id = json_incref(json_array_get(tds, 0));
    json_decref(tds);
    json_decref(exp);
    return id;
}
