/* Create-time checks of a spec against spec/'s schema and the dataset it will train on: the spec
 * a job hands to hone-train is resolved and put through hone_spec_check with the dataset's stats,
 * the same rules and facts hone-train checks when it loads the data, so what is accepted here
 * trains there. For AutoML, every corner of the swept space is checked too. Never touches the
 * store: callers pass the rows. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_spec.h"
#include "data.h"
#include "search.h"
#include "util.h"

/* Corners checked at most; a space sweeping more size-relevant keys than this covers is checked
 * at its all-low and all-high corners only. 2^12: twelve swept keys that take part in the cross
 * checks, about 10 ms on the loop (30 under the sanitizers) at create time. */
#define MAX_CORNERS 4096

static int int_in(const json_t *v, long long lo, long long hi, long long *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < lo)
        return 0;
    *out = json_integer_value(v) > hi ? hi : json_integer_value(v);
    return 1;
}

void ctl_spec_data(const json_t *dataset_row, hone_spec_data *d)
{
    *d = (hone_spec_data)HONE_SPEC_DATA_UNKNOWN;
    json_t *st = jparse(jstr(dataset_row, "stats"));
    json_t *shape = json_object_get(st, "image_shape");
    long long v;
    if (int_in(json_object_get(st, "train_images"), 0, LLONG_MAX, &v))
        d->train_images = v;
    if (int_in(json_object_get(st, "test_images"), 0, LLONG_MAX, &v))
        d->test_images = v;
    if (int_in(json_object_get(st, "classes"), 1, INT_MAX, &v))
        d->classes = (int)v;
    int *dims[3] = {&d->c, &d->h, &d->w};
    for (size_t i = 0; json_array_size(shape) == 3 && i < 3; i++)
        if (int_in(json_array_get(shape, i), 1, INT_MAX, &v))
            *dims[i] = (int)v;
    /* an image folder or KITTI set: its parts as hone-train makes them (train/dataset.h): test
     * is test/, or else a tenth of train/; val/ joins the training part as its val split */
    const char *fmt = jstr(dataset_row, "format");
    long long nv = 0;
    if (fmt && (!strcmp(fmt, "image_folder") || hone_spec_format_detect(fmt)) &&
        d->train_images >= 0 && d->test_images >= 0) {
        /* data/'s one rule; a dataset checked before it stored train/ whole and test 0 */
        uint64_t split[HONE_DATA_NSPLITS] = {(uint64_t)d->train_images, 0,
                                             (uint64_t)d->test_images},
                 used[HONE_DATA_NSPLITS];
        hone_data_split_used(split, used);
        d->train_images = (long long)used[HONE_DATA_TRAIN];
        d->test_images = (long long)used[HONE_DATA_TEST];
        if (int_in(json_object_get(st, "val_images"), 0, LLONG_MAX, &nv))
            d->train_images += nv;
    }
    json_decref(st);
}

/* The val/ images of an image folder or KITTI set (0: none, or another format): hone-train
 * validates on them, whatever data.val_size says. */
static long long val_split(const json_t *dataset_row)
{
    const char *fmt = jstr(dataset_row, "format");
    long long nv = 0;
    if (!fmt || (strcmp(fmt, "image_folder") && !hone_spec_format_detect(fmt)))
        return 0;
    json_t *st = jparse(jstr(dataset_row, "stats"));
    if (!int_in(json_object_get(st, "val_images"), 1, INT_MAX, &nv))
        nv = 0;
    json_decref(st);
    return nv;
}

/* The keys of flat sized to the dataset (hone_spec_size) where given does not name them. */
static void size_to_data(json_t *flat, const json_t *given, const json_t *dataset_row)
{
    static const char *const sized[] = {"data.val_size",       "train.batch_size",
                                        "train.epochs",        "train.lr",
                                        "train.warmup_epochs", "train.step_epochs"};
    hone_spec s;
    hone_spec_data d;
    uint64_t mask = 0;
    const char *k;
    json_t *v;
    ctl_spec_data(dataset_row, &d);
    if (d.train_images < 0)
        return;
    hone_spec_defaults(&s, jstr(flat, "network"));
    json_object_foreach((json_t *)flat, k, v)
    {
        if (strcmp(k, "network"))
            hone_spec_set_json(&s, k, v, NULL, 0); /* a refused value is the checks' to name */
    }
    json_object_foreach((json_t *)given, k, v) mask |= hone_spec_key_bit(k);
    hone_spec_size(&s, &d, val_split(dataset_row), mask);
    for (size_t i = 0; i < HONE_ARRAY_LEN(sized); i++)
        if (!json_object_get(given, sized[i]))
            json_object_set_new(flat, sized[i], hone_spec_get_json(&s, sized[i]));
}

json_t *ctl_spec_resolve(const char *network, const json_t *dataset_row, const json_t *exp_specs,
                         const json_t *job_specs)
{
    json_t *f = ctl_spec_defaults(network), *given = json_object();
    if (dataset_row) {
        json_object_set_new(f, "data.path", json_string(jstr(dataset_row, "path")));
        json_object_set_new(f, "data.format", json_string(jstr(dataset_row, "format")));
    }
    if (json_is_object(exp_specs))
        json_object_update(given, (json_t *)exp_specs);
    if (json_is_object(job_specs))
        json_object_update(given, (json_t *)job_specs);
    json_object_update(f, given);
    if (dataset_row)
        size_to_data(f, given, dataset_row);
    json_decref(given);
    return f;
}

long long ctl_spec_ntrain(const json_t *flat, const json_t *dataset_row)
{
    hone_spec_data d;
    ctl_spec_data(dataset_row, &d);
    long long nv = val_split(dataset_row);
    long long val = nv > 0 ? nv : jint(flat, "data.val_size");
    return d.train_images < 0 ? -1 : d.train_images > val ? d.train_images - val : 0;
}

static int spec_from_flat(const json_t *flat, hone_spec *s, char *field, size_t fieldlen, char *msg,
                          size_t msglen);

/* The largest power-of-two batch at which the heaviest trial a space of this network may draw
 * (the family's last network, e.g. resnet34 for a resnet18 experiment, at the widest model.width
 * or model.hidden and the deepest model.depth swept) fits the memory a worker is assumed to have
 * (HONE_SPEC_MAX_BYTES), so the default space never draws a trial the check refuses: without it a
 * resnet18 search on Fashion-MNIST could draw resnet34 at width 64 and batch 512 (13.9 GiB) and
 * `automl start` was refused. 0 when even batch 1 does not fit or the spec does not parse. */
static int batch_fit(const json_t *flat, const json_t *dataset_row)
{
    json_t *all = hone_spec_space(jstr(flat, "network"), 1), *worst = json_deep_copy(flat), *p;
    const char *k;
    hone_spec s;
    hone_spec_data d;
    char f[64], m[400];
    int fit = 0;
    json_object_foreach(all, k, p)
    {
        json_t *vals = json_object_get(p, "values");
        if (!strcmp(k, "network") && json_array_size(vals))
            json_object_set(worst, k, json_array_get(vals, json_array_size(vals) - 1));
        else if (!strcmp(k, "model.width") || !strcmp(k, "model.hidden") ||
                 !strcmp(k, "model.depth"))
            json_object_set(worst, k, json_object_get(p, "max"));
    }
    ctl_spec_data(dataset_row, &d);
    if (!spec_from_flat(worst, &s, f, sizeof f, m, sizeof m))
        snprintf(s.network, sizeof s.network, "%s", jstr(worst, "network"));
    else
        goto done;
    for (long long b = 1LL << 16; b >= 1; b /= 2) {
        hone_spec_cost c;
        s.train.batch_size = (int)b;
        hone_spec_estimate(&s, &d, &c);
        if (c.model_bytes + c.act_bytes + c.data_bytes <= HONE_SPEC_MAX_BYTES) {
            fit = (int)b;
            break;
        }
    }
done:
    json_decref(all);
    json_decref(worst);
    return fit;
}

ctl_sizing ctl_spec_sizing(const json_t *flat, const json_t *dataset_row)
{
    ctl_sizing z = {ctl_spec_ntrain(flat, dataset_row), 1.0, batch_fit(flat, dataset_row)};
    const char *net = jstr(flat, "network");
    double f = hone_spec_sized_lr_factor(net, (int)jint(flat, "train.batch_size"));
    hone_spec def;
    hone_spec_defaults(&def, net);
    /* the rate is the sized one (a rate the user set, or the default beside a batch the user
     * set, keeps the table's range) */
    if (z.ntrain >= 0 && f < 1.0 &&
        fabs(jnum(flat, "train.lr") - def.train.lr * f) <= 1e-12 * def.train.lr)
        z.lr_factor = f;
    return z;
}

/* The request field to blame for a spec key: users set "specs.<key>"; the rest comes from the
 * experiment (network_arch) or its dataset (data.path, data.format). */
static void key_field(const char *key, char *field, size_t fieldlen)
{
    const hone_spec_key *k = hone_spec_key_find(key);
    if (k && k->user)
        snprintf(field, fieldlen, "specs.%s", key);
    else
        snprintf(field, fieldlen, "%s",
                 !strcmp(key, "network") ? "network_arch" : "train_datasets");
}

static int spec_from_flat(const json_t *flat, hone_spec *s, char *field, size_t fieldlen, char *msg,
                          size_t msglen)
{
    const char *k;
    json_t *v;
    hone_spec_defaults(s, jstr(flat, "network"));
    json_object_foreach((json_t *)flat, k, v)
    {
        if (!strcmp(k, "network"))
            continue;
        char m[400];
        if (hone_spec_set_json(s, k, v, m, sizeof m)) {
            key_field(k, field, fieldlen);
            const hone_spec_key *sk = hone_spec_key_find(k);
            snprintf(msg, msglen, "%s%s", sk && !sk->user ? "the dataset sets " : "", m);
            return HONE_EINVAL;
        }
    }
    return HONE_OK;
}

/* Every key is held against the dataset, data.val_size included: an unset one is sized to it
 * (ctl_spec_resolve), so what is refused here is what the user set. */
static int check_spec(const hone_spec *s, const hone_spec_data *d, char *key, size_t keylen,
                      char *msg, size_t msglen)
{
    return hone_spec_check(s, d, key, keylen, msg, msglen);
}

static int check_flat(const json_t *flat, const hone_spec_data *d, char *field, size_t fieldlen,
                      char *msg, size_t msglen)
{
    hone_spec s;
    char key[64];
    if (spec_from_flat(flat, &s, field, fieldlen, msg, msglen))
        return HONE_EINVAL;
    if (check_spec(&s, d, key, sizeof key, msg, msglen)) {
        key_field(key, field, fieldlen);
        return HONE_EINVAL;
    }
    return HONE_OK;
}

/* The values of a space parameter the search may reach at its ends (new reference). */
static json_t *param_ends(const json_t *p)
{
    const char *type = jstr(p, "type");
    json_t *lo = json_object_get(p, "min"), *hi = json_object_get(p, "max");
    if (type && !strcmp(type, "int"))
        return json_pack("[I,I]", (json_int_t)llround(json_number_value(lo)),
                         (json_int_t)llround(json_number_value(hi)));
    if (type && !strcmp(type, "float"))
        return json_pack("[f,f]", json_number_value(lo), json_number_value(hi));
    if (type && !strcmp(type, "categorical"))
        return json_deep_copy(json_object_get(p, "values"));
    return json_pack("[b,b]", 0, 1);
}

typedef struct {
    const char *key;
    json_t *ends;
} swept;

static void corner_name(const swept *w, size_t n, const size_t *idx, char *buf, size_t len)
{
    buf[0] = 0;
    for (size_t i = 0; i < n; i++) {
        size_t used = strlen(buf);
        char *t = json_dumps(json_array_get(w[i].ends, idx[i]), JSON_ENCODE_ANY);
        snprintf(buf + used, len - used, "%s%s=%s", i ? ", " : "", w[i].key, t ? t : "?");
        free(t);
    }
}

/* Every trial an AutoML space may draw over base: each swept value in its key's range, base
 * itself, and the cross-key rules at every corner (blamed on space_field). */
static int check_space(const json_t *base, const json_t *space, const hone_spec_data *d,
                       long long ntrain, const char *space_field, char *field, size_t fieldlen,
                       char *msg, size_t msglen)
{
    swept w[64];
    size_t n = 0, corners = 1, idx[64], i;
    const char *k;
    json_t *p;
    hone_spec s0, s;
    char key[64], m[400];
    int rc = HONE_EINVAL;
    if (spec_from_flat(base, &s0, field, fieldlen, msg, msglen))
        return HONE_EINVAL;
    snprintf(field, fieldlen, "%s", space_field);
    json_object_foreach((json_t *)space, k, p)
    {
        const hone_spec_key *sk = hone_spec_key_find(k);
        json_t *ends = param_ends(p);
        for (i = 0; i < json_array_size(ends); i++) {
            if (hone_spec_check_json(k, json_array_get(ends, i), m, sizeof m)) {
                snprintf(msg, msglen, "%s: the search would set %s", space_field, m);
                json_decref(ends);
                goto fail;
            }
        }
        /* a batch above every training image: each such trial trains on the whole set, one
         * step an epoch, and the sweep is no sweep */
        int lo, hi;
        if (!strcmp(k, "train.batch_size") && ntrain > 0 &&
            json_integer_value(json_array_get(ends, 0)) > ntrain) {
            if (hone_spec_batch_range(jstr(base, "network"), ntrain, &lo, &hi))
                snprintf(msg, msglen,
                         "%s: train.batch_size from %lld exceeds the %lld training images this "
                         "dataset leaves (each trial would take one step an epoch): sweep it "
                         "within %d .. %d (the range sized to this dataset), or leave it to the "
                         "default space",
                         space_field, (long long)json_integer_value(json_array_get(ends, 0)),
                         ntrain, lo, hi);
            else
                snprintf(msg, msglen,
                         "%s: train.batch_size from %lld exceeds the %lld training images this "
                         "dataset leaves: do not sweep it (each trial would take one step an "
                         "epoch)",
                         space_field, (long long)json_integer_value(json_array_get(ends, 0)),
                         ntrain);
            json_decref(ends);
            goto fail;
        }
        if (!sk || !sk->combo || n == HONE_ARRAY_LEN(w)) {
            json_decref(ends);
            continue;
        }
        w[n].key = k;
        w[n++].ends = ends;
        if (corners <= MAX_CORNERS)
            corners *= json_array_size(ends);
    }
    /* The trials' spec before any swept value (its schedule may be shorter than the job's) */
    if (check_spec(&s0, d, key, sizeof key, msg, msglen)) {
        key_field(key, field, fieldlen);
        goto fail;
    }
    /* Each rule grows or shrinks monotonically with each key, so its worst case is a corner,
     * and a corner that fails does so because of the sweep. Too many corners: the all-first and
     * all-last ones only. */
    size_t total = corners > MAX_CORNERS ? 2 : corners;
    for (size_t c = 0; c < total; c++) {
        size_t rest = c;
        s = s0;
        for (i = 0; i < n; i++) {
            size_t nv = json_array_size(w[i].ends);
            idx[i] = corners > MAX_CORNERS ? (c ? nv - 1 : 0) : rest % nv;
            rest /= nv;
            hone_spec_set_json(&s, w[i].key, json_array_get(w[i].ends, idx[i]), NULL, 0);
        }
        if (check_spec(&s, d, key, sizeof key, m, sizeof m)) {
            char name[512];
            snprintf(field, fieldlen, "%s", space_field);
            corner_name(w, n, idx, name, sizeof name);
            snprintf(msg, msglen, "%s (a trial the search may draw: %s)", m, n ? name : "any");
            goto fail;
        }
    }
    rc = HONE_OK;
fail:
    for (i = 0; i < n; i++)
        json_decref(w[i].ends);
    return rc;
}

/* Epochs of a trial's schedule, as ctl_job_spec sets train.epochs: the Hyperband family's
 * automl_R x epoch_multiplier, otherwise the job's own train.epochs. */
static long long horizon(const json_t *settings, long long epochs)
{
    hone_algo algo;
    if (!hone_algo_parse(jstr(settings, "automl_algorithm"), &algo) &&
        hone_algo_multifidelity(algo)) {
        long long mult = jint(settings, "epoch_multiplier");
        return jint(settings, "automl_R") * (mult > 0 ? mult : 1);
    }
    return epochs;
}

int ctl_spec_check_create(const char *network, const json_t *dataset_row, const json_t *exp_specs,
                          const json_t *job_specs, const json_t *settings, const json_t *space,
                          char *field, size_t fieldlen, char *msg, size_t msglen)
{
    hone_spec_data d;
    json_t *flat = ctl_spec_resolve(network, dataset_row, exp_specs, job_specs);
    int rc = HONE_EINVAL;
    ctl_spec_data(dataset_row, &d);
    long long nv = val_split(dataset_row);
    if (nv > 0) /* as hone-train does: the val/ split, data.val_size unused */
        json_object_set_new(flat, "data.val_size", json_integer(nv));
    if (check_flat(flat, &d, field, fieldlen, msg, msglen))
        goto fail;
    if (space) {
        const hone_spec_key *ek = hone_spec_key_find("train.epochs");
        long long h = horizon(settings, jint(flat, "train.epochs"));
        if (h < ek->imin || h > ek->imax) {
            snprintf(field, fieldlen, "automl_settings.automl_R");
            snprintf(msg, msglen,
                     "train.epochs: a trial's schedule would run automl_R x epoch_multiplier = "
                     "%lld epochs, outside [%lld, %lld]",
                     h, ek->imin, ek->imax);
            goto fail;
        }
        json_object_set_new(flat, "train.epochs", json_integer(h));
        if (check_space(flat, space, &d, ctl_spec_ntrain(flat, dataset_row),
                        "automl_settings.automl_hyperparameters", field, fieldlen, msg, msglen))
            goto fail;
    }
    rc = HONE_OK;
fail:
    json_decref(flat);
    return rc;
}
