/* REST handlers for /api/v1/datasets: create from a server-side path (confined to the data roots,
 * files checked before anything is stored), list, get, delete (refused while an experiment uses
 * the dataset). */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"

static const char *const ds_types[] = {"image_classification", "object_detection", NULL};
static const char *const ds_formats[] = {"idx", "image_folder", "kitti", NULL};

json_t *ctl_dataset_json(const json_t *row)
{
    char ts[32];
    ctl_time_str(jnum(row, "created"), ts, sizeof ts);
    json_t *o =
        json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:f}", "id", jstr(row, "id"), "name",
                  jstr(row, "name"), "type", jstr(row, "type"), "format", jstr(row, "format"),
                  "path", jstr(row, "path"), "description", jstr(row, "description"), "created", ts,
                  "created_unix", jnum(row, "created"));
    json_t *stats = jparse(jstr(row, "stats"));
    json_object_set_new(o, "stats", stats ? stats : json_object());
    return o;
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
    };
    json_t *body = hone_http_req_json(req, res);
    json_t *stats = NULL;
    if (!body)
        return;
    if (hone_json_check(body, fields, HONE_ARRAY_LEN(fields), res))
        goto out;
    const char *type = jstr(body, "type") ? jstr(body, "type") : "image_classification";
    const char *format = jstr(body, "format") ? jstr(body, "format") : "idx";
    char real[PATH_MAX], msg[512];
    int rc = ctl_path_confine(c->cfg.data_roots, c->cfg.n_data_roots, jstr(body, "path"), real,
                              sizeof real, msg, sizeof msg);
    if (rc) {
        hone_http_res_error(res, 422, "path", "path: %s", msg);
        goto out;
    }
    if (!strcmp(type, "object_detection") != !strcmp(format, "kitti")) {
        hone_http_res_error(res, 422, "format", "format %s does not fit type %s", format, type);
        goto out;
    }
    if (ctl_dataset_inspect(format, real, &stats, msg, sizeof msg)) {
        hone_http_res_error(res, 422, "path", "path: %s", msg);
        goto out;
    }
    char id[64];
    ctl_new_id(c, "ds", id, sizeof id);
    char *st = jdump(stats);
    const char *desc = jstr(body, "description");
    double now = ctl_now();
    rc = db_run(c->db,
                "INSERT INTO datasets(id,name,type,format,path,description,stats,created) "
                "VALUES(?,?,?,?,?,?,?,?)",
                "sssssssd", id, jstr(body, "name"), type, format, real, desc ? desc : "", st, now);
    free(st);
    if (rc < 0) {
        ctl_res_store_error(c, res);
        goto out;
    }
    json_t *row = NULL;
    if (db_row(c->db, &row, "SELECT * FROM datasets WHERE id=?", "s", id)) {
        ctl_res_store_error(c, res);
        goto out;
    }
    ctl_log(c, "info", "dataset_created", json_pack("{s:s,s:s}", "id", id, "path", real));
    hone_http_res_json(res, 201, ctl_dataset_json(row));
    json_decref(row);
out:
    json_decref(stats);
    json_decref(body);
}

static void ds_list(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    json_t *rows = NULL;
    (void)req;
    if (db_rows(c->db, &rows, "SELECT * FROM datasets ORDER BY created, id", NULL)) {
        ctl_res_store_error(c, res);
        return;
    }
    json_t *arr = json_array(), *r;
    size_t i;
    json_array_foreach(rows, i, r) json_array_append_new(arr, ctl_dataset_json(r));
    json_decref(rows);
    hone_http_res_json(res, 200, json_pack("{s:o}", "datasets", arr));
}

static void ds_get(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    json_t *row = NULL;
    const char *id = hone_http_req_param(req, "id");
    int rc = db_row(c->db, &row, "SELECT * FROM datasets WHERE id=?", "s", id);
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

static void ds_delete(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    json_t *row = NULL;
    const char *id = hone_http_req_param(req, "id");
    if (db_row(c->db, &row, "SELECT experiment_id FROM experiment_datasets WHERE dataset_id=?", "s",
               id) == HONE_OK) {
        hone_http_res_error(res, 409, "id", "dataset %s is used by experiment %s", id,
                            jstr(row, "experiment_id"));
        json_decref(row);
        return;
    }
    int n = db_run(c->db, "DELETE FROM datasets WHERE id=?", "s", id);
    if (n < 0)
        ctl_res_store_error(c, res);
    else if (n == 0)
        hone_http_res_error(res, 404, "id", "no dataset %s", id);
    else
        hone_http_res_empty(res, 204);
}

int ctl_routes_datasets(hone_controller *c)
{
    int rc = 0;
    rc |= hone_http_route(c->http, "POST", "/api/v1/datasets", ds_create, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/datasets", ds_list, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/datasets/{id}", ds_get, c);
    rc |= hone_http_route(c->http, "DELETE", "/api/v1/datasets/{id}", ds_delete, c);
    return rc ? HONE_EINVAL : HONE_OK;
}
