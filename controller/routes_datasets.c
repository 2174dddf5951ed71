/* REST handlers for /api/v1/datasets: create from a server-side path (confined to the data roots,
 * files checked before anything is stored), list, get, delete (refused while an experiment uses
 * the dataset or a convert job packs it), and convert (an image folder or a KITTI set packed at one
 * size by a worker: convert.c). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "batch.h"
#include "checkq.h"
#include "convert.h"
#include "ctl.h"
#include "ctl_sched.h"
#include "data_paths.h"
#include "dataset_check.h"
#include "guess.h"
#include "jobs.h"
#include "routes.h"
#include "shares.h"
#include "spec.h"
#include "store.h"
#include "sweep.h"
#include "util.h"

static const char *const ds_types[] = {"image_classification", "object_detection", NULL};
static const char *const ds_formats[] = {"idx", "image_folder", "kitti", "coco", NULL};

json_t *ctl_dataset_json(const json_t *row)
{
    char ts[32];
    ctl_time_str(jnum(row, "created"), ts, sizeof ts);
    json_t *o =
        json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:f,s:s?}", "id", jstr(row, "id"), "name",
                  jstr(row, "name"), "type", jstr(row, "type"), "format", jstr(row, "format"),
                  "path", jstr(row, "path"), "description", jstr(row, "description"), "created", ts,
                  "created_unix", jnum(row, "created"), "owner", jstr(row, "owner"));
    json_t *stats = jparse(jstr(row, "stats"));
    json_object_set_new(o, "stats", stats ? stats : json_object());
    return o;
}

/* Checking a dataset reads every file (tens of MB of gzip for Fashion-MNIST): it runs on the
 * dataset check threads (checkq.h: fair between owners, apart from libuv's pool that file reads
 * need) and the request is answered from the loop afterwards. */
typedef struct ds_work {
    ctl_check_work w;
    hone_controller *c;
    hone_http_res *res; /* NULL once the client has gone */
    json_t *body;
    const char *type, *format, *path;
    char real[PATH_MAX], msg[2048]; /* a detection set's message lists several problems */
    char owner[64];                 /* who asked (the request is gone by the time it is stored) */
    int user; /* a user, not an admin: kept out of the controller's own folders */
    int rc_path, rc_inspect;
    int guessed;  /* no format given: guessed from the folder's shape (data/guess.h) */
    int rc_guess; /* the guess failed, or its format does not fit the type given: 422 format */
    json_t *stats;
} ds_work;

static void ds_abort(hone_http_res *res, void *ud)
{
    (void)res;
    ((ds_work *)ud)->res = NULL;
}

/* Messages name the folder as stored, not the pinned /proc/self/fd/N it was read through (every
 * mention: a KITTI set's message lists several files). */
static void msg_unpin(char *msg, size_t cap, const char *pinned, const char *real)
{
    char out[2048];
    size_t o = 0, n = strlen(pinned);
    for (const char *p = msg; *p && o + 1 < sizeof out;) {
        if (!strncmp(p, pinned, n) && (p[n] == '/' || p[n] == '\0' || p[n] == ':' || p[n] == ' ')) {
            int w = snprintf(out + o, sizeof out - o, "%s", real);
            o = w < 0 || (size_t)w >= sizeof out - o ? sizeof out - 1 : o + (size_t)w;
            p += n;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
    snprintf(msg, cap, "%s", out);
}

static void ds_check(ctl_check_work *w)
{
    ds_work *d = w->data;
    char pinned[64];
    struct stat st;
    int fd = -1;
    d->rc_path = ctl_path_confine(d->c->cfg.data_roots, d->c->cfg.n_data_roots, d->path, d->real,
                                  sizeof d->real, d->msg, sizeof d->msg);
    if (!d->rc_path && d->user)
        d->rc_path = ctl_path_private(d->c->cfg.data_dir, d->real, d->msg, sizeof d->msg);
    /* the folder is read through a descriptor opened beneath its root (no link below it), so a
     * folder swapped for a link while it is checked is not what gets read */
    if (!d->rc_path && ctl_data_open(&d->c->cfg, d->real, &fd, d->msg, sizeof d->msg) != HONE_OK)
        d->rc_path = HONE_EINVAL;
    if (d->rc_path)
        goto done;
    snprintf(pinned, sizeof pinned, "/proc/self/fd/%d", fd);
    const char *dir = stat(pinned, &st) == 0 ? pinned : d->real; /* no /proc: as before */
    if (d->guessed) {
        d->rc_guess = ctl_dataset_guess(dir, jstr(d->body, "type"), &d->format, &d->type, d->msg,
                                        sizeof d->msg);
        if (d->rc_guess) {
            msg_unpin(d->msg, sizeof d->msg, pinned, d->real);
            goto done;
        }
    }
    d->rc_inspect = !strcmp(d->format, "kitti")
                        ? ctl_dataset_inspect_kitti(dir, json_object_get(d->body, "classes"),
                                                    &d->stats, d->msg, sizeof d->msg)
                        : ctl_dataset_inspect(d->format, dir, &d->stats, d->msg, sizeof d->msg);
    msg_unpin(d->msg, sizeof d->msg, pinned, d->real);
done:
    if (fd >= 0)
        close(fd);
}

static void ds_checked(ctl_check_work *w, int status)
{
    ds_work *d = w->data;
    hone_controller *c = d->c;
    hone_http_res *res = d->res;
    if (!res)
        goto fail; /* nobody to tell: store nothing */
    ctl_batch_flush(c);
    hone_http_res_on_abort(res, NULL, NULL);
    if (status) {
        hone_http_res_error(res, 503, NULL, "dataset check canceled");
        goto fail;
    }
    if (!d->rc_path && d->rc_guess) {
        hone_http_res_error(res, 422, "format", "format: %s", d->msg);
        goto fail;
    }
    if (!d->rc_path && d->rc_inspect == HONE_EINVAL && json_object_get(d->body, "classes")) {
        hone_http_res_error(res, 422, "classes", "classes: %s", d->msg);
        goto fail;
    }
    if (d->rc_path || d->rc_inspect) {
        hone_http_res_error(res, 422, "path", "path: %s", d->msg);
        goto fail;
    }
    char id[64];
    ctl_new_id(c, "ds", id, sizeof id);
    char *st = jdump(d->stats);
    const char *desc = jstr(d->body, "description");
    int rc = store_dataset_insert(c->db, id, jstr(d->body, "name"), d->type, d->format, d->real,
                                  desc ? desc : "", st, d->owner, ctl_now());
    free(st);
    json_t *row = NULL;
    if (rc || store_dataset_get(c->db, id, NULL, &row)) {
        ctl_res_store_error(c, res);
        goto fail;
    }
    ctl_log(c, "info", "dataset_created", json_pack("{s:s,s:s}", "id", id, "path", d->real));
    json_t *out = ctl_dataset_json(row);
    json_object_set_new(out, "format_guessed", json_boolean(d->guessed));
    hone_http_res_json(res, 201, out);
    json_decref(row);
fail:
    json_decref(d->stats);
    json_decref(d->body);
    free(d);
}

/* classes (kitti only): 1..1000 names, each a string of 1..255 bytes; null is as if absent. The
 * rest (printable, unique regardless of case, not DontCare) is data/'s check. */
static int ds_classes_check(json_t *body, hone_http_res *res)
{
    json_t *cl = json_object_get(body, "classes"), *v;
    size_t i;
    if (json_is_null(cl)) {
        json_object_del(body, "classes");
        return 0;
    }
    if (!cl)
        return 0;
    const char *fmt = jstr(body, "format");
    if (!fmt || strcmp(fmt, "kitti") != 0) {
        hone_http_res_error(res, 422, "classes", "classes is a kitti dataset's class map");
        return -1;
    }
    json_array_foreach(cl, i, v)
    {
        size_t n = json_is_string(v) ? strlen(json_string_value(v)) : 0;
        if (n < 1 || n > 255) {
            hone_http_res_error(res, 422, "classes", "classes[%zu] must be a name of 1..255 bytes",
                                i);
            return -1;
        }
    }
    return 0;
}

static void ds_create(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    static const hone_json_field fields[] = {
        {.name = "name", .type = HONE_JSON_STRING, .required = 1, .min_len = 1, .max_len = 200},
        {.name = "type", .type = HONE_JSON_STRING, .enum_values = ds_types},
        {.name = "format", .type = HONE_JSON_STRING, .enum_values = ds_formats},
        {.name = "path", .type = HONE_JSON_STRING, .required = 1, .min_len = 1, .max_len = 4000},
        {.name = "description", .type = HONE_JSON_STRING, .nullable = 1, .max_len = 10000},
        {.name = "classes", .type = HONE_JSON_ARRAY, .nullable = 1, .min_len = 1, .max_len = 1000},
    };
    json_t *body = hone_http_req_json(req, res);
    if (!body)
        return;
    if (hone_json_check(body, fields, HONE_ARRAY_LEN(fields), res) ||
        ctl_text_check(res, "name", jstr(body, "name"), 0) ||
        ctl_text_check(res, "description", jstr(body, "description"), 1) ||
        ds_classes_check(body, res)) {
        json_decref(body);
        return;
    }
    char who[64];
    if (!ctl_auth_user(c, req, who)) { /* gone since the filter: answered 401 */
        ctl_auth_recheck(c, req, res);
        json_decref(body);
        return;
    }
    ds_work *d = hone_xcalloc(1, sizeof *d);
    d->c = c;
    d->res = res;
    d->body = body;
    snprintf(d->owner, sizeof d->owner, "%s", who);
    char ob[64];
    d->user = ctl_auth_owner(c, req, ob) != NULL;
    d->format = jstr(body, "format"); /* absent: guessed on the check thread */
    d->guessed = !d->format;
    /* absent: the format's (the guess's, on the check thread) */
    d->type = jstr(body, "type") ? jstr(body, "type")
              : d->format        ? hone_data_format_type(d->format)
                                 : "image_classification";
    d->path = jstr(body, "path");
    if (d->format && strcmp(hone_data_format_type(d->format), d->type) != 0) {
        hone_http_res_error(res, 422, "format", "format %s does not fit type %s", d->format,
                            d->type);
        json_decref(body);
        free(d);
        return;
    }
    d->w.data = d;
    hone_http_res_on_abort(res, ds_abort, d);
    if (ctl_checkq_submit(c->checkq, &d->w, d->owner, ds_check, ds_checked)) {
        hone_http_res_on_abort(res, NULL, NULL);
        hone_http_res_error(res, 503, NULL, "cannot check the dataset now");
        json_decref(body);
        free(d);
    }
}

static void ds_list(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    json_t *rows = NULL;
    ctl_page pg;
    if (ctl_page_parse(req, res, &pg))
        return;
    char ob[64];
    if (store_datasets_list(c->db, ctl_auth_owner(c, req, ob), &rows, pg.limit + 1, pg.offset)) {
        ctl_res_store_error(c, res);
        return;
    }
    json_t *arr = json_array(), *r;
    size_t i;
    json_array_foreach(rows, i, r) json_array_append_new(arr, ctl_dataset_json(r));
    json_decref(rows);
    hone_http_res_json(res, 200, ctl_page_body("datasets", arr, &pg));
}

static void ds_get(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    json_t *row = NULL;
    const char *id = hone_http_req_param(req, "id");
    char ob[64];
    int rc = store_dataset_get(c->db, id, ctl_auth_owner(c, req, ob), &row);
    if (rc == HONE_ENOENT) {
        hone_http_res_error(res, 404, "id", "no dataset %s", id);
        return;
    }
    if (rc) {
        ctl_res_store_error(c, res);
        return;
    }
    hone_http_res_json(res, 200, ctl_dataset_json(row));
    json_decref(row);
}

/* A delete's answer waits for its files' removal (ctl_dataset_files_remove). */
typedef struct ds_gone {
    hone_http_res *res; /* NULL once the client has gone */
} ds_gone;

static void ds_gone_abort(hone_http_res *res, void *ud)
{
    (void)res;
    ((ds_gone *)ud)->res = NULL;
}

static void ds_gone_done(void *ud)
{
    ds_gone *g = ud;
    if (g->res) {
        hone_http_res_on_abort(g->res, NULL, NULL);
        hone_http_res_empty(g->res, 204);
    }
    free(g);
}

static void ds_delete(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    json_t *row = NULL;
    const char *id = hone_http_req_param(req, "id");
    char ob[64], path[PATH_MAX] = "";
    const char *owner = ctl_auth_owner(c, req, ob);
    if (store_dataset_get(c->db, id, owner, &row) == HONE_ENOENT) {
        hone_http_res_error(res, 404, "id", "no dataset %s", id);
        return;
    }
    if (jstr(row, "path"))
        snprintf(path, sizeof path, "%s", jstr(row, "path"));
    json_decref(row);
    row = NULL;
    if (store_dataset_used_by(c->db, id, &row) == HONE_OK) {
        hone_http_res_error(res, 409, "id", "dataset %s is used by experiment %s", id,
                            jstr(row, "experiment_id"));
        json_decref(row);
        return;
    }
    if (store_converts_active(c->db, id, &row) == HONE_OK) {
        hone_http_res_error(res, 409, "id", "dataset %s is being converted by job %s", id,
                            jstr(row, "id"));
        json_decref(row);
        return;
    }
    /* Its finished convert jobs go with it; then, off the loop, its packed files and, for an
     * uploaded dataset, its folder (a registered folder stays). The row goes first; the files are
     * renamed to tombstones at once, so a controller killed while they are removed leaves them
     * to the next start's sweep (sweep.c). */
    int n = -1;
    if (db_begin(c->db) == HONE_OK) {
        n = store_converts_delete(c->db, id) < 0 ? -1 : store_dataset_delete(c->db, id);
        if (n < 0 || db_commit(c->db))
            n = -1;
        if (n < 0)
            db_rollback(c->db);
    }
    if (n < 0)
        ctl_res_store_error(c, res);
    else if (n == 0)
        hone_http_res_error(res, 404, "id", "no dataset %s", id);
    else {
        ds_gone *g = hone_xcalloc(1, sizeof *g);
        g->res = res;
        hone_http_res_on_abort(res, ds_gone_abort, g);
        ctl_dataset_files_remove(c, id, path[0] ? path : NULL, ds_gone_done, g);
    }
}

/* POST /datasets/{id}/convert {"input_size": N, "channels": 0|1|3}: the convert job that packs the
 * image folder or detection set (KITTI, COCO) at NxN (channels 0: the folder's own), 201 when
 * created, 200 when one at that size is queued, running or done already (reused). */
static void ds_convert(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    static const hone_json_field fields[] = {
        {.name = "input_size",
         .type = HONE_JSON_INT,
         .required = 1,
         .has_range = 1,
         .min = CTL_CONVERT_MIN_SIZE,
         .max = CTL_CONVERT_MAX_SIZE},
        {.name = "channels",
         .type = HONE_JSON_INT,
         .nullable = 1,
         .has_range = 1,
         .min = 0,
         .max = 3},
    };
    const char *id = hone_http_req_param(req, "id");
    json_t *body = hone_http_req_json(req, res), *ds = NULL, *job = NULL;
    if (!body)
        return;
    if (hone_json_check(body, fields, HONE_ARRAY_LEN(fields), res))
        goto fail;
    int ch = (int)jint(body, "channels");
    if (ch == 2) {
        hone_http_res_error(res, 422, "channels", "channels must be 0 (the data's own), 1 or 3");
        goto fail;
    }
    char ob[64];
    int rc = store_dataset_get(c->db, id, ctl_auth_owner(c, req, ob), &ds);
    if (rc) {
        if (rc == HONE_ENOENT)
            hone_http_res_error(res, 404, "id", "no dataset %s", id);
        else
            ctl_res_store_error(c, res);
        goto fail;
    }
    if (!ctl_convert_format(jstr(ds, "format"))) {
        hone_http_res_error(
            res, 409, "format",
            "dataset %s is %s: only image_folder, kitti and coco datasets are converted", id,
            jstr(ds, "format"));
        goto fail;
    }
    char jid[64];
    int created = 0;
    if (db_begin(c->db)) {
        ctl_res_store_error(c, res);
        goto fail;
    }
    rc = ctl_convert_ensure(c, ds, (int)jint(body, "input_size"), ctl_convert_channels(ds, ch), jid,
                            sizeof jid, &created);
    if (!rc && created && ctl_fair_queued_check(c, res, ctl_auth_owner(c, req, ob), 0)) {
        db_rollback(c->db); /* 429: the user's share of the queue is full */
        goto fail;
    }
    if (rc || db_commit(c->db)) {
        db_rollback(c->db);
        ctl_res_store_error(c, res);
        goto fail;
    }
    if (created)
        ctl_sched_kick(c);
    if (ctl_job_row(c, jid, &job)) {
        ctl_res_store_error(c, res);
        goto fail;
    }
    hone_http_res_json(res, created ? 201 : 200, ctl_job_json(c, job));
fail:
    json_decref(job);
    json_decref(ds);
    json_decref(body);
}

int ctl_routes_datasets(hone_controller *c)
{
    int rc = 0;
    rc |= hone_http_route(c->http, "POST", "/api/v1/datasets", ds_create, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/datasets", ds_list, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/datasets/{id}", ds_get, c);
    rc |= hone_http_route(c->http, "DELETE", "/api/v1/datasets/{id}", ds_delete, c);
    rc |= hone_http_route(c->http, "POST", "/api/v1/datasets/{id}/convert", ds_convert, c);
    return rc ? HONE_EINVAL : HONE_OK;
}
