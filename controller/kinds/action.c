/* The evaluate, inference and export kinds (action.h; three rows of kind.h over one shape): created
 * from a parent job that has a model, leased to a worker that runs hone-train --evaluate / --infer
 * / --export on it, ended with hone-train's result line. Everything here runs inside its caller's
 * transaction. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "action.h"
#include "convert.h"
#include "ctl.h"
#include "dataset_check.h"
#include "job_rows.h"
#include "kind.h"
#include "store.h"
#include "util.h"

/* The folder holding the parent's model.bin, model.json and spec.yaml (caller frees), or NULL with
 * *http, field and msg saying why. */
static char *model_dir(hone_controller *c, const json_t *exp, const char *pid, const char *owner,
                       int *http, char *msg, size_t msglen)
{
    json_t *p = NULL;
    char *dir = NULL;
    *http = 422;
    int rc = store_job_get_owned(c->db, pid, owner, &p); /* another user's: as if none */
    if (rc == HONE_ENOENT) {
        snprintf(msg, msglen, "no job %s", pid);
        goto fail;
    }
    if (rc) {
        *http = 500;
        snprintf(msg, msglen, "store error");
        goto fail;
    }
    const char *act = jstr(p, "action"), *st = jstr(p, "status");
    hone_kind pk = HONE_KIND_COUNT;
    hone_kind_parse(act, &pk);
    if (!jstr(p, "experiment_id") || strcmp(jstr(p, "experiment_id"), jstr(exp, "id"))) {
        snprintf(msg, msglen, "job %s is not a job of experiment %s", pid, jstr(exp, "id"));
        goto fail;
    }
    if (pk != HONE_KIND_TRAIN && pk != HONE_KIND_AUTOML) {
        snprintf(msg, msglen, "job %s is a%s %s job; a model comes from a train or automl job", pid,
                 act[0] == 'a' || act[0] == 'e' || act[0] == 'i' ? "n" : "", act);
        goto fail;
    }
    dir =
        ctl_job_model_dir(c, pid, pk == HONE_KIND_AUTOML); /* TAO's best_model: the best trial's */
    *http = 409;
    if (pk == HONE_KIND_TRAIN && strcmp(st, "done")) {
        snprintf(msg, msglen, "job %s is %s: it has no model until it is done", pid, st);
        goto fail;
    }
    if (!ctl_dir_has_file(dir, "model.bin") || !ctl_dir_has_file(dir, "spec.yaml")) {
        snprintf(msg, msglen, "job %s has no model yet (%s is %s)", pid,
                 pk == HONE_KIND_AUTOML ? "its best_model/" : "its model.bin", st);
        goto fail;
    }
    if (!ctl_dir_has_file(dir, "model.json")) {
        snprintf(msg, msglen,
                 "job %s's model has no model.json (trained by an older hone-train): train it "
                 "again",
                 pid);
        goto fail;
    }
    json_decref(p);
    return dir;
fail:
    free(dir);
    json_decref(p);
    return NULL;
}

int ctl_action_create(hone_controller *c, const json_t *exp, const json_t *body, const char *owner,
                      char *id_out, size_t idlen, int *http, char *field, size_t fieldlen,
                      char *msg, size_t msglen)
{
    const char *action = jstr(body, "action"), *pid = jstr(body, "parent_job_id");
    const char *dsid = jstr(body, "dataset_id"), *folder = jstr(body, "folder");
    hone_kind kind = HONE_KIND_COUNT;
    hone_kind_parse(action, &kind);
    int inference = kind == HONE_KIND_INFERENCE;
    json_t *sets = json_array(), *ds = NULL, *cfg = NULL;
    char *dir = NULL, real[4096];
    int rc = HONE_EINVAL;
    *http = 422;
    snprintf(field, fieldlen, "parent_job_id");
    if (!pid) {
        snprintf(msg, msglen, "%s needs the parent_job_id of a train or automl job", action);
        goto fail;
    }
    if (json_object_get(body, "specs") && !json_is_null(json_object_get(body, "specs"))) {
        snprintf(field, fieldlen, "specs");
        snprintf(msg, msglen, "%s takes its spec from the parent's model; specs is not taken",
                 action);
        goto fail;
    }
    if (inference) {
        struct stat st;
        snprintf(field, fieldlen, "folder");
        if (dsid) {
            snprintf(field, fieldlen, "dataset_id");
            snprintf(msg, msglen, "inference labels a folder: give folder, not dataset_id");
            goto fail;
        }
        if (!folder) {
            snprintf(msg, msglen,
                     "inference needs folder: a folder of images inside the "
                     "controller's data roots, which the workers can read");
            goto fail;
        }
        /* confined as a dataset's path is: inside the data roots, symbolic links resolved */
        if (ctl_path_confine(c->cfg.data_roots, c->cfg.n_data_roots, folder, real, sizeof real, msg,
                             msglen) != HONE_OK ||
            (owner && ctl_path_private(c->cfg.data_dir, real, msg, msglen) != HONE_OK))
            goto fail;
        if (stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
            snprintf(msg, msglen, "%s is not a folder", folder);
            goto fail;
        }
        folder = real;
    } else if (folder) {
        snprintf(field, fieldlen, "folder");
        snprintf(msg, msglen, "%s",
                 kind != HONE_KIND_EXPORT ? "evaluate runs on a dataset "
                                            "(dataset_id), not a folder"
                                          : "export takes no folder");
        goto fail;
    }
    if (dsid && kind == HONE_KIND_EXPORT) {
        snprintf(field, fieldlen, "dataset_id");
        snprintf(msg, msglen, "export writes the model as ONNX: it takes no dataset_id");
        goto fail;
    }
    if (dsid) {
        snprintf(field, fieldlen, "dataset_id");
        if ((rc = store_dataset_get(c->db, dsid, owner, &ds)) == HONE_ENOENT) {
            snprintf(msg, msglen, "no dataset %s", dsid);
            rc = HONE_EINVAL;
            goto fail;
        }
        if (rc)
            goto fail;
        rc = HONE_EINVAL;
        char kv[4200];
        snprintf(kv, sizeof kv, "data.format=%s", jstr(ds, "format"));
        json_array_append_new(sets, json_string(kv));
        snprintf(kv, sizeof kv, "data.path=%s", jstr(ds, "path"));
        json_array_append_new(sets, json_string(kv));
        json_array_append_new(sets, json_string("data.packed="));
    }
    /* the request is well formed: now whether the parent has a model (409 when not yet) */
    snprintf(field, fieldlen, "parent_job_id");
    if (!(dir = model_dir(c, exp, pid, owner, http, msg, msglen)))
        goto fail;
    cfg = json_pack("{s:s,s:s,s:O,s:s?}", "parent_job_id", pid, "model_dir", dir, "sets", sets,
                    "folder", inference ? folder : NULL);
    char *cs = jdump(cfg);
    ctl_new_id(c, "job", id_out, idlen);
    rc = store_action_insert(c->db, id_out, jstr(exp, "id"), action,
                             jstr(body, "name") ? jstr(body, "name") : "", cs, dsid, ctl_now());
    free(cs);
fail:
    free(dir);
    json_decref(sets);
    json_decref(ds);
    json_decref(cfg);
    return rc;
}

json_t *ctl_action_lease_job(hone_controller *c, const json_t *job)
{
    json_t *cfg = jparse(jstr(job, "config"));
    char *dir = ctl_job_dir(c, jstr(job, "id"));
    mkdir(c->artifacts_dir, 0755);
    mkdir(dir, 0755);
    json_t *sets = json_object_get(cfg, "sets");
    json_t *j = json_pack("{s:s,s:s,s:s,s:O,s:s?,s:s,s:I,s:I,s:I,s:I,s:b}", "id", jstr(job, "id"),
                          "action", jstr(job, "action"), "model_dir",
                          jstr(cfg, "model_dir") ? jstr(cfg, "model_dir") : "", "sets",
                          json_is_array(sets) ? sets : json_array(), "folder", jstr(cfg, "folder"),
                          "out_dir", dir, "attempts", (json_int_t)jint(job, "attempts"),
                          "lease_seconds", (json_int_t)c->cfg.lease_seconds, "epoch", (json_int_t)0,
                          "epochs_until", (json_int_t)0, "resume", 0);
    /* For a worker that shares no disk: whose artifacts hold the model (best_model/ of an AutoML
     * job), and the dataset evaluate reads (the one given, or the experiment's). */
    const char *md = jstr(cfg, "model_dir");
    size_t ml = md ? strlen(md) : 0;
    json_object_set_new(j, "parent_job_id",
                        json_string(jstr(cfg, "parent_job_id") ? jstr(cfg, "parent_job_id") : ""));
    json_object_set_new(
        j, "model_subdir",
        json_string(ml > 11 && !strcmp(md + ml - 11, "/best_model") ? "best_model" : ""));
    if (jstr(job, "dataset_id")) {
        json_object_set_new(j, "dataset_id", json_string(jstr(job, "dataset_id")));
    } else if (ctl_kind_of(job)->id == HONE_KIND_EVALUATE) {
        json_t *ds = ctl_job_dataset_id(c, job);
        if (ds)
            json_object_set_new(j, "dataset_id", ds);
    }
    free(dir);
    json_decref(cfg);
    return j;
}

int ctl_action_finish(hone_controller *c, const json_t *job, const char *status,
                      const char *log_tail, const json_t *final)
{
    const char *id = jstr(job, "id"), *ctl = jstr(job, "control");
    const char *st = ctl && !strcmp(ctl, "cancel") ? "canceled"
                     : !strcmp(status, "done")     ? "done"
                                                   : "failed";
    /* done without hone-train's result line is not done */
    if (!strcmp(st, "done") && !json_is_object(final))
        st = "failed";
    json_t *res = json_object();
    if (json_is_object(final)) {
        json_object_update(res, (json_t *) final);
        json_object_del(res, "event");
    }
    char *rs = jdump(res);
    json_decref(res);
    double now = ctl_now();
    int rc = store_job_end(c->db, id, st, 0, now, !strcmp(st, "failed"), log_tail, rs);
    free(rs);
    if (rc || store_lease_end(c->db, id, now, st))
        return HONE_ESQL;
    ctl_log(c, strcmp(st, "done") ? "warn" : "info", "job_end",
            json_pack("{s:s,s:s,s:s}", "job", id, "action", jstr(job, "action"), "status", st));
    return HONE_OK;
}

void ctl_action_json(json_t *o, const json_t *row)
{
    json_t *cfg = jparse(jstr(row, "config"));
    json_object_set_new(o, "parent_job_id",
                        json_string(jstr(cfg, "parent_job_id") ? jstr(cfg, "parent_job_id") : ""));
    if (jstr(cfg, "folder"))
        json_object_set_new(o, "folder", json_string(jstr(cfg, "folder")));
    json_decref(cfg);
}

/* ---- the rows of evaluate, inference and export (kind.h): one shape, three names ---- */

static json_t *action_lease_job(hone_controller *c, const json_t *job, const json_t *flat)
{
    (void)flat;
    return ctl_action_lease_job(c, job);
}

static int action_cancel(hone_controller *c, const json_t *job)
{
    int ended;
    return ctl_kind_cancel_plain(c, job, &ended);
}

static void action_view(hone_controller *c, json_t *o, const json_t *row)
{
    (void)c;
    ctl_convert_json(o, row);
    ctl_action_json(o, row);
}

#define CTL_ACTION_ROW(kind)                                                                       \
    {                                                                                              \
        .id = (kind), .user_creates = 1, .takes_model = 1, .report = CTL_REPORT_EPOCHS,            \
        .create = ctl_action_create, .lease_job = action_lease_job, .finish = ctl_action_finish,   \
        .cancel = action_cancel, .view = action_view,                                              \
    }

const ctl_kind ctl_kind_evaluate = CTL_ACTION_ROW(HONE_KIND_EVALUATE);
const ctl_kind ctl_kind_inference = CTL_ACTION_ROW(HONE_KIND_INFERENCE);
const ctl_kind ctl_kind_export = CTL_ACTION_ROW(HONE_KIND_EXPORT);
