/* The parent of a fine-tuning job (finetune.h): which jobs' models a train or AutoML job may start
 * from, and where the worker finds that model. Compatible networks: the same network (input size
 * and channels may differ: hone-train copies every layer whose shape agrees and starts the others,
 * a new head among them when the class counts differ, fresh), or a resnet18 classifier for
 * detectnet_v2 (its backbone); and at least one layer must fit by hone-train's rule (spec/'s
 * hone_layers_fit: an mlp of another model.hidden has none). Runs inside its caller's transaction;
 * reads only the parent's model.json (a few hundred bytes) besides stats. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "automl.h"
#include "convert.h"
#include "ctl.h"
#include "ctl_spec.h"
#include "finetune.h"
#include "job_rows.h"
#include "store.h"
#include "spec_layers.h"
#include "train.h"
#include "util.h"
#include "wire.h"

/* Whether a model of network `from` can start a network `to`. */
static int networks_fit(const char *from, const char *to)
{
    return !strcmp(from, to) || (!strcmp(from, "resnet18") && !strcmp(to, "detectnet_v2"));
}

/* A flat resolved spec as a hone_spec (keys it cannot take are left at their defaults: the spec
 * was checked whole before). */
static void spec_of(const json_t *flat, hone_spec *s)
{
    const char *k;
    json_t *v;
    char m[400];
    hone_spec_defaults(s, jstr(flat, "network"));
    json_object_foreach((json_t *)flat, k, v)
    {
        if (strcmp(k, "network"))
            hone_spec_set_json(s, k, v, m, sizeof m);
    }
}

/* The model.* keys and data.channels whose values differ between two flat specs, for a message. */
static void shape_keys_differ(const json_t *a, const json_t *b, char *out, size_t outlen)
{
    const char *k;
    json_t *v;
    size_t off = 0;
    out[0] = '\0';
    json_object_foreach((json_t *)b, k, v)
    {
        if ((strncmp(k, "model.", 6) && strcmp(k, "data.channels")) ||
            !strcmp(k, "model.pretrained") || json_equal(v, json_object_get(a, k)))
            continue;
        char *x = json_dumps(json_object_get(a, k), JSON_ENCODE_ANY),
             *y = json_dumps(v, JSON_ENCODE_ANY);
        if (off + 80 < outlen)
            off += (size_t)snprintf(out + off, outlen - off, "%s%s %s there, %s here",
                                    off ? "; " : "", k, x ? x : "unset", y ? y : "?");
        free(x);
        free(y);
    }
}

/* Whether the parent's model (its resolved spec pflat, its input shape and classes in model.json
 * of dir) has a layer that fits the new job's network (its resolved spec cflat on dataset ds), by
 * the rule hone-train copies with (spec/'s hone_layers_fit). HONE_EINVAL with msg when none. */
static int layers_fit(const char *pid, const char *dir, const json_t *pflat, const json_t *cflat,
                      const json_t *ds, char *msg, size_t msglen)
{
    hone_spec ps, cs;
    hone_spec_data d;
    hone_layers from = {0}, to = {0};
    char path[4400];
    int pc, ph, pw, pk, c, h, w, rc = HONE_OK;
    snprintf(path, sizeof path, "%s/model.json", dir);
    json_t *m = json_load_file(path, 0, NULL);
    if (json_unpack(m, "{s:i,s:i,s:i,s:i}", "channels", &pc, "height", &ph, "width", &pw, "classes",
                    &pk) < 0) {
        json_decref(m);
        return HONE_OK; /* unreadable: hone-train says what is wrong with it */
    }
    json_decref(m);
    spec_of(pflat, &ps);
    spec_of(cflat, &cs);
    ctl_spec_data(ds, &d);
    hone_spec_input_shape(&cs, &d, &c, &h, &w);
    if (ctl_convert_format(
            jstr(ds, "format"))) { /* what its convert job packs, as convert.c says */
        ctl_convert_shape(ds, cflat, &h, &c);
        w = h;
    }
    int k = d.classes > 0 ? d.classes : 10;
    if (hone_spec_layers(&ps, pc, ph, pw, pk, &from) == HONE_OK &&
        hone_spec_layers(&cs, c, h, w, k, &to) == HONE_OK && to.n > 0) {
        unsigned char *done = hone_xcalloc((size_t)to.n + 1, 1);
        if (hone_layers_fit(&from, &to, done) == 0) {
            char keys[600];
            shape_keys_differ(pflat, cflat, keys, sizeof keys);
            snprintf(msg, msglen,
                     "no layer of job %s's model (%s, %dx%dx%d inputs, %d classes) fits this "
                     "job's network (%s, %dx%dx%d, %d classes)%s%s",
                     pid, jstr(pflat, "network"), pc, ph, pw, pk, jstr(cflat, "network"), c, h, w,
                     k, keys[0] ? ": " : "", keys);
            rc = HONE_EINVAL;
        }
        free(done);
    }
    hone_layers_free(&from);
    hone_layers_free(&to);
    return rc;
}

/* The resolved spec of the job whose files are the parent's model: the train job itself, or the
 * best trial of an AutoML job (its best_model/). */
static int parent_flat(hone_controller *c, const json_t *p, int search, json_t **flat)
{
    json_t *row = NULL;
    *flat = NULL;
    if (!search)
        return ctl_train_spec(c, p, flat);
    json_t *st = ctl_automl_status(c, p);
    const char *best = jstr(st, "best_job_id");
    int rc = best ? ctl_job_row(c, best, &row) : HONE_ENOENT;
    if (rc == HONE_OK)
        rc = ctl_train_spec(c, row, flat);
    json_decref(st);
    json_decref(row);
    return rc;
}

int ctl_finetune_check(hone_controller *c, const json_t *exp, const json_t *job_flat,
                       const char *pid, const char *owner, int *http, char *msg, size_t msglen)
{
    json_t *p = NULL, *pexp = NULL, *ds = NULL, *espec = NULL, *cflat = NULL, *pflat = NULL;
    char *dir = NULL;
    int rc = store_job_get_owned(c->db, pid, owner, &p); /* another user's: as if none */
    *http = 422;
    if (rc == HONE_ENOENT) {
        *http = 404;
        snprintf(msg, msglen, "no job %s%s", pid, owner ? " of yours" : "");
        rc = HONE_EINVAL;
        goto fail;
    }
    if (rc)
        goto fail;
    rc = HONE_EINVAL;
    const char *act = jstr(p, "action"), *st = jstr(p, "status");
    hone_kind pk = HONE_KIND_COUNT;
    hone_kind_parse(act, &pk);
    if (pk != HONE_KIND_TRAIN && pk != HONE_KIND_AUTOML) {
        snprintf(msg, msglen,
                 "job %s is a%s %s job: a model to fine-tune comes from a train or automl job", pid,
                 act[0] == 'a' || act[0] == 'e' || act[0] == 'i' ? "n" : "", act);
        goto fail;
    }
    if (strcmp(st, "done")) {
        int later = !strcmp(st, "queued") || !strcmp(st, "running") || !strcmp(st, "paused");
        snprintf(msg, msglen, "job %s %s%s: fine-tuning starts from the model of a done job%s", pid,
                 later                  ? "is "
                 : strcmp(st, "failed") ? "was "
                                        : "",
                 st, later ? "; wait until it is done" : "");
        goto fail;
    }
    dir = ctl_job_model_dir(c, pid, pk == HONE_KIND_AUTOML);
    if (!ctl_dir_has_file(dir, "model.bin") || !ctl_dir_has_file(dir, "model.json") ||
        !ctl_dir_has_file(dir, "spec.yaml")) {
        snprintf(msg, msglen,
                 "job %s has no model on record (%s lacks model.bin, model.json or "
                 "spec.yaml)",
                 pid, pk == HONE_KIND_AUTOML ? "its best_model/" : "its folder");
        goto fail;
    }
    if ((rc = store_experiment_network(c->db, jstr(p, "experiment_id"), &pexp))) {
        rc = rc == HONE_ENOENT ? HONE_ESQL : rc;
        goto fail;
    }
    rc = HONE_EINVAL;
    const char *from = jstr(pexp, "network"), *to = jstr(exp, "network");
    if (!from || !to || !networks_fit(from, to)) {
        snprintf(msg, msglen,
                 "job %s's model is a %s; this experiment trains %s: fine-tuning needs the same "
                 "network (or a resnet18 classifier as detectnet_v2's backbone)",
                 pid, from ? from : "?", to ? to : "?");
        goto fail;
    }
    /* the same network, but of another width or depth: not a layer would be copied */
    json_t *tds = jparse(jstr(exp, "train_datasets"));
    rc = store_dataset_get(c->db, json_string_value(json_array_get(tds, 0)), NULL, &ds);
    json_decref(tds);
    if (rc) {
        rc = HONE_ESQL;
        goto fail;
    }
    espec = jparse(jstr(exp, "specs"));
    cflat = ctl_spec_resolve(to, ds, espec, job_flat);
    rc = parent_flat(c, p, pk == HONE_KIND_AUTOML, &pflat);
    if (rc == HONE_OK)
        rc = layers_fit(pid, dir, pflat, cflat, ds, msg, msglen);
    else
        rc = HONE_OK; /* its spec cannot be rebuilt: hone-train reads the model's own */
fail:
    free(dir);
    json_decref(p);
    json_decref(pexp);
    json_decref(ds);
    json_decref(espec);
    json_decref(cflat);
    json_decref(pflat);
    return rc;
}

json_t *ctl_finetune_lease(hone_controller *c, const json_t *job)
{
    json_t *parent = NULL, *from = NULL, *j = NULL;
    const char *pid = jstr(job, "from_job");
    if (!pid && jstr(job, "parent_id") && ctl_job_row(c, jstr(job, "parent_id"), &parent) == 0)
        pid = jstr(parent, "from_job"); /* a trial starts from its search's model */
    if (!pid || ctl_job_row(c, pid, &from) != HONE_OK)
        goto done;
    hone_kind pk = HONE_KIND_COUNT;
    hone_kind_parse(jstr(from, "action"), &pk);
    int search = pk == HONE_KIND_AUTOML;
    char *dir = ctl_job_model_dir(c, pid, search);
    j = json_pack("{s:s,s:s,s:s}", "job_id", pid, "subdir", search ? "best_model" : "", "dir", dir);
    free(dir);
done:
    json_decref(parent);
    json_decref(from);
    return j;
}

void ctl_finetune_json(json_t *o, const json_t *row)
{
    json_object_set(o, "parent_job_id",
                    jstr(row, "from_job") ? json_object_get(row, "from_job") : json_null());
}
