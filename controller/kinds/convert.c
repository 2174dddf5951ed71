/* The convert kind (kind.h): an image_folder or kitti dataset decoded, resized and packed once per
 * (size, channels) by a worker running hone-pack (a KITTI set with its boxes, in the numbering of
 * the dataset's class map), into <data_dir>/packed/<dataset id>/<size>x<size>x<channels>.hpk. A
 * convert job is a job row (action 'convert', dataset_id, config {input_size, channels, out})
 * leased, heartbeated and expired like a train job; train and AutoML jobs of image-folder and
 * kitti experiments name it in convert_id and are not leased until it is done
 * (store_job_next_queued). Everything here runs inside its caller's transaction: a restart finds
 * what was committed. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "convert.h"
#include "ctl.h"
#include "kind.h"
#include "spec.h"
#include "store.h"
#include "util.h"

int ctl_convert_format(const char *format)
{
    return format && (!strcmp(format, "image_folder") || hone_spec_format_detect(format));
}

int ctl_convert_channels(const json_t *dataset_row, int channels)
{
    if (channels == 1 || channels == 3)
        return channels;
    json_t *st = jparse(jstr(dataset_row, "stats"));
    int rgb = jint(json_object_get(st, "channels"), "rgb") > 0;
    json_decref(st);
    return rgb ? 3 : 1;
}

void ctl_convert_shape(const json_t *dataset_row, const json_t *flat, int *size, int *channels)
{
    hone_spec s;
    hone_spec_data d = HONE_SPEC_DATA_UNKNOWN;
    char err[256];
    static const char *const keys[] = {"data.format", "data.channels", "model.input_size"};
    hone_spec_defaults(&s, jstr(flat, "network"));
    for (size_t i = 0; i < HONE_ARRAY_LEN(keys); i++) {
        json_t *v = json_object_get(flat, keys[i]);
        if (v)
            hone_spec_set_json(&s, keys[i], v, err, sizeof err); /* checked at create */
    }
    d.c = ctl_convert_channels(dataset_row, s.data.channels);
    int c, h, w;
    hone_spec_input_shape(&s, &d, &c, &h, &w);
    *size = h;
    *channels = c;
}

static char *packed_dir(hone_controller *c, const char *dataset_id)
{
    size_t n = strlen(c->cfg.data_dir) + strlen(dataset_id) + 16;
    char *p = hone_xmalloc(n);
    snprintf(p, n, "%s/packed/%s", c->cfg.data_dir, dataset_id);
    return p;
}

int ctl_convert_ensure(hone_controller *c, const json_t *dataset_row, int size, int channels,
                       char *id_out, size_t idlen, int *created)
{
    const char *ds = jstr(dataset_row, "id");
    json_t *row = NULL;
    *created = 0;
    int rc = store_convert_find(c->db, ds, size, channels, &row);
    if (rc == HONE_OK) {
        /* a done job whose file has since gone (deleted by hand, a disk swapped) packs again */
        json_t *cfg = jparse(jstr(row, "config"));
        struct stat st;
        int gone = !strcmp(jstr(row, "status"), "done") && jstr(cfg, "out") &&
                   stat(jstr(cfg, "out"), &st) != 0;
        json_decref(cfg);
        if (!gone) {
            snprintf(id_out, idlen, "%s", jstr(row, "id"));
            json_decref(row);
            return HONE_OK;
        }
        ctl_log(c, "warn", "convert_file_missing",
                json_pack("{s:s,s:s}", "job", jstr(row, "id"), "dataset", ds));
        json_decref(row);
        row = NULL;
        rc = HONE_ENOENT;
    }
    if (rc != HONE_ENOENT)
        return rc;
    char *dir = packed_dir(c, ds);
    size_t n = strlen(dir) + 48;
    char *out = hone_xmalloc(n);
    snprintf(out, n, "%s/%dx%dx%d.hpk", dir, size, size, channels);
    json_t *cfg = json_pack("{s:i,s:i,s:s}", "input_size", size, "channels", channels, "out", out);
    char *cs = jdump(cfg);
    ctl_new_id(c, "cvt", id_out, idlen);
    rc = store_convert_insert(c->db, id_out, ds, cs, ctl_now());
    if (rc == HONE_OK) {
        *created = 1;
        ctl_log(c, "info", "convert_created",
                json_pack("{s:s,s:s,s:i,s:i}", "job", id_out, "dataset", ds, "size", size,
                          "channels", channels));
    }
    free(cs);
    json_decref(cfg);
    free(out);
    free(dir);
    return rc;
}

json_t *ctl_convert_lease_job(hone_controller *c, const json_t *job)
{
    json_t *cfg = jparse(jstr(job, "config")), *ds = NULL;
    const char *dsid = jstr(job, "dataset_id");
    store_dataset_get(c->db, dsid, NULL, &ds); /* a dataset with convert jobs is never deleted */
    char *dir = packed_dir(c, dsid);
    char *parent = hone_xmalloc(strlen(c->cfg.data_dir) + 16);
    sprintf(parent, "%s/packed", c->cfg.data_dir);
    mkdir(parent, 0755);
    mkdir(dir, 0755);
    json_t *j = json_pack(
        "{s:s,s:s,s:s,s:s,s:I,s:I,s:s,s:I,s:I,s:I,s:I,s:b}", "id", jstr(job, "id"), "action",
        "convert", "dataset_id", dsid ? dsid : "", "dataset_path",
        jstr(ds, "path") ? jstr(ds, "path") : "", "input_size", (json_int_t)jint(cfg, "input_size"),
        "channels", (json_int_t)jint(cfg, "channels"), "out_path",
        jstr(cfg, "out") ? jstr(cfg, "out") : "", "attempts", (json_int_t)jint(job, "attempts"),
        "lease_seconds", (json_int_t)c->cfg.lease_seconds, "epoch", (json_int_t)0, "epochs_until",
        (json_int_t)0, "resume", 0);
    /* a KITTI set packs with its boxes, its classes numbered as the dataset's class map */
    if (jstr(ds, "format") && !strcmp(jstr(ds, "format"), "kitti")) {
        json_t *st = jparse(jstr(ds, "stats")), *names = json_object_get(st, "class_names");
        json_object_set_new(j, "format", json_string("kitti"));
        json_object_set(j, "classes", json_is_array(names) ? names : json_array());
        json_decref(st);
    } else if (jstr(ds, "format") && !strcmp(jstr(ds, "format"), "coco")) {
        json_object_set_new(j, "format", json_string("coco")); /* classes: its categories by id */
    }
    free(parent);
    free(dir);
    json_decref(cfg);
    json_decref(ds);
    return j;
}

/* Every job waiting for the convert job fails with a message saying so; an AutoML job ends with
 * its trials (as a cancel does) and its live search is dropped. */
static int fail_waiting(hone_controller *c, const char *convert_id, const char *status,
                        const char *why)
{
    json_t *rows = NULL, *r;
    size_t i;
    double now = ctl_now();
    char msg[1024];
    int rc = store_convert_waiting(c->db, convert_id, &rows);
    if (rc)
        return rc;
    snprintf(msg, sizeof msg, "convert job %s %s%s%.900s", convert_id, status,
             why && *why ? ": " : "", why ? why : "");
    json_array_foreach(rows, i, r)
    {
        const char *id = jstr(r, "id");
        hone_kind kind = HONE_KIND_TRAIN;
        hone_kind_parse(jstr(r, "action"), &kind);
        int automl = kind == HONE_KIND_AUTOML; /* its trials end with it */
        rc = store_job_end(c->db, id, "failed", 0, now, 1, msg, jstr(r, "result"));
        if (!rc && automl &&
            (store_leases_cancel_trials(c->db, id, now) || store_trials_cancel(c->db, id, now)))
            rc = HONE_ESQL;
        if (rc)
            break;
        const ctl_kind *k = ctl_kind_of(r);
        if (k->forget)
            k->forget(c, id);
        ctl_log(c, "warn", "job_end",
                json_pack("{s:s,s:s,s:s}", "job", id, "status", "failed", "convert", convert_id));
    }
    json_decref(rows);
    return rc;
}

/* The last non-empty line of a log tail: hone-pack's error, for the waiting jobs' message. */
static void last_line(const char *tail, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!tail)
        return;
    const char *end = tail + strlen(tail);
    while (end > tail && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
        end--;
    const char *start = end;
    while (start > tail && start[-1] != '\n')
        start--;
    snprintf(buf, len, "%.*s", (int)(end - start), start);
}

int ctl_convert_finish(hone_controller *c, const json_t *job, const char *status,
                       const char *log_tail, const json_t *final)
{
    const char *id = jstr(job, "id"), *ctl = jstr(job, "control");
    const char *st = ctl && !strcmp(ctl, "cancel") ? "canceled"
                     : !strcmp(status, "done")     ? "done"
                                                   : "failed";
    double now = ctl_now();
    json_t *res = jparse(jstr(job, "result"));
    if (!json_is_object(res)) {
        json_decref(res);
        res = json_object();
    }
    if (json_is_object(final)) {
        json_object_update(res, (json_t *) final);
        json_object_del(res, "event");
    }
    json_t *n = json_object_get(res, "images");
    if (!strcmp(st, "done") && json_is_integer(n)) { /* reports are throttled: the last lags */
        json_t *ips = json_object_get(res, "images_per_second"),
               *sec = json_object_get(res, "seconds");
        json_object_set_new(res, "progress",
                            json_pack("{s:O,s:O,s:O,s:O}", "images_done", n, "images_total", n,
                                      "images_per_second", ips ? ips : json_null(), "seconds",
                                      sec ? sec : json_null()));
    }
    char *rs = jdump(res);
    json_decref(res);
    int failed = !strcmp(st, "failed");
    int rc = store_job_end(c->db, id, st, 0, now, failed, log_tail, rs);
    free(rs);
    if (rc || store_lease_end(c->db, id, now, st))
        return HONE_ESQL;
    ctl_log(c, strcmp(st, "done") ? "warn" : "info", "convert_end",
            json_pack("{s:s,s:s}", "job", id, "status", st));
    if (!strcmp(st, "done"))
        return HONE_OK;
    char why[512];
    last_line(log_tail, why, sizeof why);
    return fail_waiting(c, id, st, why);
}

int ctl_convert_canceled(hone_controller *c, const json_t *job)
{
    return fail_waiting(c, jstr(job, "id"), "canceled", NULL);
}

int ctl_convert_spec(hone_controller *c, const json_t *job, json_t *flat)
{
    const char *cid = jstr(job, "convert_id");
    json_t *cv = NULL;
    if (!cid)
        return HONE_OK;
    int rc = store_job_get(c->db, cid, &cv);
    if (rc == HONE_ENOENT) /* its dataset was deleted since: hone-train packs the folder */
        return HONE_OK;
    if (rc)
        return rc;
    json_t *cfg = jparse(jstr(cv, "config"));
    if (jstr(cfg, "out"))
        json_object_set_new(flat, "data.packed", json_string(jstr(cfg, "out")));
    json_decref(cfg);
    json_decref(cv);
    return HONE_OK;
}

void ctl_convert_json(json_t *o, const json_t *row)
{
    if (jstr(row, "dataset_id"))
        json_object_set(o, "dataset_id", json_object_get(row, "dataset_id"));
    if (jstr(row, "convert_id"))
        json_object_set(o, "convert_job_id", json_object_get(row, "convert_id"));
}

/* ---- the convert kind's row (kind.h) ---- */

static json_t *convert_lease_job(hone_controller *c, const json_t *job, const json_t *flat)
{
    (void)flat;
    return ctl_convert_lease_job(c, job);
}

/* The jobs waiting for a convert canceled before it ran fail with it. */
static int convert_cancel(hone_controller *c, const json_t *job)
{
    int ended, rc = ctl_kind_cancel_plain(c, job, &ended);
    return !rc && ended ? ctl_convert_canceled(c, job) : rc;
}

static void convert_view(hone_controller *c, json_t *o, const json_t *row)
{
    (void)c;
    ctl_convert_json(o, row);
    json_t *res = jparse(jstr(row, "result"));
    json_t *p = json_object_get(res, "progress");
    json_object_set(o, "progress", json_is_object(p) ? p : json_null());
    json_decref(res);
}

const ctl_kind ctl_kind_convert = {
    .id = HONE_KIND_CONVERT,
    .report = CTL_REPORT_PROGRESS,
    .lease_job = convert_lease_job,
    .finish = ctl_convert_finish,
    .cancel = convert_cancel,
    .view = convert_view,
};
