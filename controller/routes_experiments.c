/* REST handlers for /api/v1/experiments: create and patch (validated whole before any write: the
 * network, the datasets, the metric, the spec overrides, the AutoML settings and the spec its jobs
 * will train against the dataset, each error naming its field), list, get, delete,
 * automl-defaults, and the JSON Schema of their specs (GET /api/v1/schemas/spec). */
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "automl.h"
#include "ctl.h"
#include "ctl_spec.h"
#include "routes.h"
#include "search.h"
#include "store.h"
#include "util.h"

static const char *const metrics[] = {"val_accuracy", "val_loss", "train_loss", "val_map",
                                      "map",          "kpi",      NULL};

static const hone_json_field exp_fields[] = {
    {.name = "name", .type = HONE_JSON_STRING, .required = 1, .min_len = 1, .max_len = 200},
    {.name = "network_arch",
     .type = HONE_JSON_STRING,
     .required = 1,
     .enum_values = hone_spec_networks},
    {.name = "train_datasets", .type = HONE_JSON_ARRAY, .required = 1, .min_len = 1, .max_len = 16},
    {.name = "eval_dataset", .type = HONE_JSON_STRING, .nullable = 1},
    {.name = "metric", .type = HONE_JSON_STRING, .enum_values = metrics},
    {.name = "specs", .type = HONE_JSON_OBJECT, .nullable = 1},
    {.name = "automl_settings", .type = HONE_JSON_OBJECT, .nullable = 1},
    {.name = "description", .type = HONE_JSON_STRING, .nullable = 1, .max_len = 10000},
};

static const char *const early_stops[] = {"curve", "none", NULL};

static const hone_json_field automl_fields[] = {
    {.name = "automl_enabled", .type = HONE_JSON_BOOL},
    /* search's names; TAO's one-letter aliases "b" and "h" are accepted too (exp_validate spells
     * them out before the check, so that no message lists them) */
    {.name = "automl_algorithm", .type = HONE_JSON_STRING, .enum_values = hone_algo_names},
    {.name = "automl_max_recommendations",
     .type = HONE_JSON_INT,
     .has_range = 1,
     .min = 1,
     .max = 10000},
    {.name = "automl_R", .type = HONE_JSON_INT, .has_range = 1, .min = 1, .max = 1000},
    {.name = "automl_nu", .type = HONE_JSON_INT, .has_range = 1, .min = 2, .max = 100},
    {.name = "epoch_multiplier", .type = HONE_JSON_INT, .has_range = 1, .min = 1, .max = 1000},
    {.name = "automl_add_hyperparameters", .type = HONE_JSON_ARRAY, .max_len = 64},
    {.name = "automl_remove_hyperparameters", .type = HONE_JSON_ARRAY, .max_len = 64},
    {.name = "automl_hyperparameters", .type = HONE_JSON_OBJECT, .nullable = 1},
    {.name = "automl_delete_intermediate_ckpt", .type = HONE_JSON_BOOL},
    {.name = "automl_start_from_spec", .type = HONE_JSON_BOOL},
    {.name = "automl_max_parallel",
     .type = HONE_JSON_INT,
     .nullable = 1,
     .has_range = 1,
     .min = 1,
     .max = 1024},
    /* failed trials that end the search (Katib's maxFailedTrialCount); absent or null: auto */
    {.name = "automl_max_failed_trials",
     .type = HONE_JSON_INT,
     .nullable = 1,
     .has_range = 1,
     .min = 1,
     .max = 100000},
    {.name = "seed", .type = HONE_JSON_INT, .has_range = 1, .min = 0, .max = 4294967295.0},
    /* learning-curve stopping (search/curve.c): "curve" or "none"; absent: the algorithm's
     * default (curve for bayesian and random, whose trials run the full budget; none for the
     * Hyperband family and ASHA, which stop by rungs; hyperband_es always stops by curves) */
    {.name = "automl_early_stop", .type = HONE_JSON_STRING, .enum_values = early_stops},
    {.name = "automl_early_stop_confidence",
     .type = HONE_JSON_NUMBER,
     .has_range = 1,
     .min = 0.5,
     .max = 0.999},
    /* a time budget for the search (kinds/automl_budget.c): minutes, decimals allowed, a week at
     * most; and the seconds one epoch takes, the planner's first estimate. Absent or null: none */
    {.name = "automl_budget_minutes",
     .type = HONE_JSON_NUMBER,
     .nullable = 1,
     .has_range = 1,
     .min = 0.01,
     .max = 10080},
    {.name = "automl_epoch_seconds",
     .type = HONE_JSON_NUMBER,
     .nullable = 1,
     .has_range = 1,
     .min = 0.001,
     .max = 86400},
};

/* TAO's defaults, filled in so a stored experiment says exactly what it will do. */
static json_t *automl_with_defaults(const json_t *in)
{
    json_t *s = json_pack(
        "{s:b,s:s,s:i,s:i,s:i,s:i,s:[],s:[],s:b,s:b,s:i}", "automl_enabled", 0, "automl_algorithm",
        "bayesian", "automl_max_recommendations", 20, "automl_R", 27, "automl_nu", 3,
        "epoch_multiplier", 1, "automl_add_hyperparameters", "automl_remove_hyperparameters",
        "automl_delete_intermediate_ckpt", 1, "automl_start_from_spec", 1, "seed", 1);
    if (in)
        json_object_update(s, (json_t *)in);
    const char *a = jstr(s, "automl_algorithm");
    if (a && (!strcmp(a, "b") || !strcmp(a, "h")))
        json_object_set_new(s, "automl_algorithm",
                            json_string(a[0] == 'b' ? "bayesian" : "hyperband"));
    json_t *n = json_object_get(s, "automl_hyperparameters");
    if (n && json_is_null(n))
        json_object_del(s, "automl_hyperparameters");
    n = json_object_get(s, "automl_max_parallel");
    if (n && json_is_null(n))
        json_object_del(s, "automl_max_parallel");
    n = json_object_get(s, "automl_max_failed_trials");
    if (n && json_is_null(n))
        json_object_del(s, "automl_max_failed_trials");
    static const char *const nullable[] = {"automl_budget_minutes", "automl_epoch_seconds"};
    for (size_t i = 0; i < HONE_ARRAY_LEN(nullable); i++)
        if (json_is_null(json_object_get(s, nullable[i])))
            json_object_del(s, nullable[i]);
    return s;
}

/* Validates a whole experiment body; on success *clean holds what gets stored. */
static int exp_validate(hone_controller *c, const char *owner, json_t *body, hone_http_res *res,
                        json_t **clean)
{
    char field[300], msg[512];
    json_t *flat = NULL, *settings = NULL, *space = NULL, *ds = NULL;
    *clean = NULL;
    if (hone_json_check(body, exp_fields, HONE_ARRAY_LEN(exp_fields), res) ||
        ctl_text_check(res, "name", jstr(body, "name"), 0) ||
        ctl_text_check(res, "description", jstr(body, "description"), 1))
        return HONE_EINVAL;
    json_t *tds = json_object_get(body, "train_datasets"), *d;
    size_t i;
    json_array_foreach(tds, i, d)
    {
        if (!json_is_string(d)) {
            hone_http_res_error(res, 422, "train_datasets", "train_datasets[%zu] must be a string",
                                i);
            return HONE_EINVAL;
        }
        if (store_dataset_exists(c->db, json_string_value(d), owner)) {
            hone_http_res_error(res, 422, "train_datasets", "no dataset %s", json_string_value(d));
            return HONE_EINVAL;
        }
    }
    const char *ev = jstr(body, "eval_dataset");
    if (ev && store_dataset_exists(c->db, ev, owner)) {
        hone_http_res_error(res, 422, "eval_dataset", "no dataset %s", ev);
        return HONE_EINVAL;
    }
    if (ctl_spec_flatten(json_object_get(body, "specs"), "specs", &flat, field, sizeof field, msg,
                         sizeof msg)) {
        hone_http_res_error(res, 422, field, "%s", msg);
        return HONE_EINVAL;
    }
    json_t *as = json_object_get(body, "automl_settings");
    const char *alias = json_is_object(as) ? jstr(as, "automl_algorithm") : NULL;
    if (alias && (!strcmp(alias, "b") || !strcmp(alias, "h")))
        json_object_set_new(as, "automl_algorithm",
                            json_string(alias[0] == 'b' ? "bayesian" : "hyperband"));
    if (as && json_is_object(as) &&
        hone_json_check_prefix(as, "automl_settings", automl_fields, HONE_ARRAY_LEN(automl_fields),
                               res))
        goto fail;
    settings = automl_with_defaults(json_is_object(as) ? as : NULL);
    /* what its jobs will train, checked as hone-train will check it against the first dataset */
    if (store_dataset_get(c->db, json_string_value(json_array_get(tds, 0)), NULL, &ds)) {
        hone_http_res_error(res, 422, "train_datasets", "no dataset %s",
                            json_string_value(json_array_get(tds, 0)));
        goto fail;
    }
    json_t *resolved = ctl_spec_resolve(jstr(body, "network_arch"), ds, flat, NULL);
    ctl_sizing z = ctl_spec_sizing(resolved, ds);
    json_decref(resolved);
    if (ctl_automl_space_json(jstr(body, "network_arch"), &z, settings, &space, field, sizeof field,
                              msg, sizeof msg)) {
        hone_http_res_error(res, 422, field, "%s", msg);
        goto fail;
    }
    if (ctl_spec_check_create(jstr(body, "network_arch"), ds, flat, NULL, settings,
                              json_is_true(json_object_get(settings, "automl_enabled")) ? space
                                                                                        : NULL,
                              field, sizeof field, msg, sizeof msg)) {
        hone_http_res_error(res, 422, field, "%s", msg);
        goto fail;
    }
    json_decref(ds);
    ds = NULL;
    /* kpi (TAO's "the network's own measure") and the default: val_map for a detector, else
     * val_accuracy; map is TAO's name for val_map */
    int detector = !strcmp(jstr(body, "network_arch"), "detectnet_v2");
    const char *metric = jstr(body, "metric") ? jstr(body, "metric") : "kpi";
    if (!strcmp(metric, "kpi"))
        metric = detector ? "val_map" : "val_accuracy";
    if (!strcmp(metric, "map"))
        metric = "val_map";
    if (detector != !strcmp(metric, "val_map") && strstr(metric, "loss") == NULL) {
        hone_http_res_error(res, 422, "metric", "%s does not report %s (it reports %s)",
                            jstr(body, "network_arch"), metric,
                            detector ? "val_map" : "val_accuracy");
        goto fail;
    }
    const char *desc = jstr(body, "description");
    *clean = json_pack("{s:s,s:s,s:O,s:o,s:s,s:o,s:o,s:s}", "name", jstr(body, "name"),
                       "network_arch", jstr(body, "network_arch"), "train_datasets", tds,
                       "eval_dataset", ev ? json_string(ev) : json_null(), "metric", metric,
                       "specs", flat, "automl_settings", settings, "description", desc ? desc : "");
    json_decref(space);
    return HONE_OK;
fail:
    json_decref(flat);
    json_decref(settings);
    json_decref(space);
    json_decref(ds);
    return HONE_EINVAL;
}

json_t *ctl_experiment_json(const json_t *row)
{
    char ts[32];
    ctl_time_str(jnum(row, "created"), ts, sizeof ts);
    const char *metric = jstr(row, "metric");
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:b,s:s,s:s,s:f,s:s?}", "id", jstr(row, "id"), "name",
                          jstr(row, "name"), "network_arch", jstr(row, "network"), "metric", metric,
                          "maximize", strstr(metric, "loss") == NULL, "description",
                          jstr(row, "description"), "created", ts, "created_unix",
                          jnum(row, "created"), "owner", jstr(row, "owner"));
    json_object_set_new(o, "train_datasets", jparse(jstr(row, "train_datasets")));
    json_object_set(o, "eval_dataset", json_object_get(row, "eval_dataset"));
    json_object_set_new(o, "specs", jparse(jstr(row, "specs")));
    json_object_set_new(o, "automl_settings", jparse(jstr(row, "automl_settings")));
    return o;
}

static int exp_store(hone_controller *c, const char *id, const char *owner, const json_t *clean,
                     int update)
{
    char *tds = jdump(json_object_get(clean, "train_datasets"));
    char *specs = jdump(json_object_get(clean, "specs"));
    char *as = jdump(json_object_get(clean, "automl_settings"));
    int rc = HONE_ESQL;
    if (db_begin(c->db))
        goto out;
    if (update) {
        if (store_experiment_update(c->db, id, jstr(clean, "name"), tds,
                                    jstr(clean, "eval_dataset"), jstr(clean, "metric"), specs, as,
                                    jstr(clean, "description")) ||
            store_experiment_datasets_clear(c->db, id))
            goto fail;
    } else if (store_experiment_insert(c->db, id, jstr(clean, "name"), jstr(clean, "network_arch"),
                                       tds, jstr(clean, "eval_dataset"), jstr(clean, "metric"),
                                       specs, as, jstr(clean, "description"), owner, ctl_now())) {
        goto fail;
    }
    json_t *d;
    size_t i;
    json_array_foreach(json_object_get(clean, "train_datasets"), i, d)
    {
        if (store_experiment_dataset_add(c->db, id, json_string_value(d), 0))
            goto fail;
    }
    if (jstr(clean, "eval_dataset") &&
        store_experiment_dataset_add(c->db, id, jstr(clean, "eval_dataset"), 1))
        goto fail;
    rc = db_commit(c->db);
    goto out;
fail:
    db_rollback(c->db);
out:
    free(tds);
    free(specs);
    free(as);
    return rc;
}

static void reply_exp(hone_controller *c, hone_http_res *res, const char *id, const char *owner,
                      int status)
{
    json_t *row = NULL;
    int rc = store_experiment_get(c->db, id, owner, &row);
    if (rc == HONE_ENOENT)
        hone_http_res_error(res, 404, "id", "no experiment %s", id);
    else if (rc)
        ctl_res_store_error(c, res);
    else
        hone_http_res_json(res, status, ctl_experiment_json(row));
    json_decref(row);
}

static void exp_create(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    json_t *clean = NULL, *body = hone_http_req_json(req, res);
    char ob[64], ub[64];
    const char *owner = ctl_auth_owner(c, req, ob);
    if (!body)
        return;
    if (exp_validate(c, owner, body, res, &clean) == HONE_OK) {
        char id[64];
        ctl_new_id(c, "exp", id, sizeof id);
        if (!ctl_auth_user(c, req, ub))
            ctl_auth_recheck(c, req, res); /* gone since the filter: 401 */
        else if (exp_store(c, id, ub, clean, 0))
            ctl_res_store_error(c, res);
        else
            reply_exp(c, res, id, owner, 201);
    }
    json_decref(clean);
    json_decref(body);
}

static void exp_patch(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    const char *id = hone_http_req_param(req, "id");
    json_t *row = NULL, *clean = NULL, *body = hone_http_req_json(req, res);
    char ob[64];
    const char *owner = ctl_auth_owner(c, req, ob);
    if (!body)
        return;
    int rc = store_experiment_get(c->db, id, owner, &row);
    if (rc) {
        if (rc == HONE_ENOENT)
            hone_http_res_error(res, 404, "id", "no experiment %s", id);
        else
            ctl_res_store_error(c, res);
        goto fail;
    }
    json_t *cur = ctl_experiment_json(row), *k;
    if (json_object_get(body, "network_arch") &&
        !json_equal(json_object_get(body, "network_arch"), json_object_get(cur, "network_arch"))) {
        hone_http_res_error(res, 422, "network_arch", "network_arch cannot be changed");
        json_decref(cur);
        goto fail;
    }
    /* automl_settings merge key by key; other members replace. */
    json_t *as = json_object_get(body, "automl_settings");
    if (json_is_object(as)) {
        json_t *merged = json_deep_copy(json_object_get(cur, "automl_settings"));
        json_object_update(merged, as);
        json_object_set_new(body, "automl_settings", merged);
    }
    json_t *full = json_object();
    static const char *const keep[] = {"name",   "network_arch", "train_datasets",  "eval_dataset",
                                       "metric", "specs",        "automl_settings", "description"};
    for (size_t i = 0; i < HONE_ARRAY_LEN(keep); i++)
        if ((k = json_object_get(cur, keep[i])))
            json_object_set(full, keep[i], k);
    json_object_update(full, body); /* unknown members stay and are refused by validation */
    json_decref(cur);
    if (exp_validate(c, owner, full, res, &clean) == HONE_OK) {
        if (exp_store(c, id, NULL, clean, 1))
            ctl_res_store_error(c, res);
        else
            reply_exp(c, res, id, owner, 200);
    }
    json_decref(full);
fail:
    json_decref(clean);
    json_decref(row);
    json_decref(body);
}

static void exp_list(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    json_t *rows = NULL;
    ctl_page pg;
    if (ctl_page_parse(req, res, &pg))
        return;
    char ob[64];
    if (store_experiments_list(c->db, ctl_auth_owner(c, req, ob), &rows, pg.limit + 1, pg.offset)) {
        ctl_res_store_error(c, res);
        return;
    }
    json_t *arr = json_array(), *r;
    size_t i;
    json_array_foreach(rows, i, r) json_array_append_new(arr, ctl_experiment_json(r));
    json_decref(rows);
    hone_http_res_json(res, 200, ctl_page_body("experiments", arr, &pg));
}

static void exp_get(hone_http_req *req, hone_http_res *res, void *ud)
{
    char ob[64];
    reply_exp(ud, res, hone_http_req_param(req, "id"), ctl_auth_owner(ud, req, ob), 200);
}

static void exp_delete(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    const char *id = hone_http_req_param(req, "id");
    json_t *row = NULL;
    char ob[64];
    const char *owner = ctl_auth_owner(c, req, ob);
    if (owner && store_experiment_get(c->db, id, owner, &row) == HONE_ENOENT) {
        hone_http_res_error(res, 404, "id", "no experiment %s", id);
        return;
    }
    json_decref(row);
    row = NULL;
    if (store_experiment_used_by(c->db, id, &row) == HONE_OK) {
        hone_http_res_error(res, 409, "id", "experiment %s has jobs", id);
        json_decref(row);
        return;
    }
    int n = store_experiment_delete(c->db, id);
    if (n < 0)
        ctl_res_store_error(c, res);
    else if (n == 0)
        hone_http_res_error(res, 404, "id", "no experiment %s", id);
    else
        hone_http_res_empty(res, 204);
}

static void exp_automl_defaults(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    const char *id = hone_http_req_param(req, "id");
    json_t *row = NULL;
    char ob[64];
    int rc = store_experiment_get(c->db, id, ctl_auth_owner(c, req, ob), &row);
    if (rc) {
        if (rc == HONE_ENOENT)
            hone_http_res_error(res, 404, "id", "no experiment %s", id);
        else
            ctl_res_store_error(c, res);
        return;
    }
    /* the spec its jobs train when they set nothing, sized to its first dataset: each swept
     * parameter's "default" is that spec's value (where a trial starting from the spec begins),
     * and "sized" the keys the dataset sized (those the experiment's specs leave unset) */
    const char *net = jstr(row, "network");
    json_t *tds = jparse(jstr(row, "train_datasets")), *ds = NULL;
    json_t *specs = jparse(jstr(row, "specs"));
    if (store_dataset_get(c->db, json_string_value(json_array_get(tds, 0)), NULL, &ds))
        ds = NULL;
    json_t *flat = ctl_spec_resolve(net, ds, specs, NULL);
    ctl_sizing z = {-1, 1.0, 0};
    if (ds)
        z = ctl_spec_sizing(flat, ds);
    long long ntrain = z.ntrain;
    json_t *def = ctl_space_default(net, &z), *all = ctl_space_all(net, &z);
    json_t *spaces[] = {def, all}, *p, *sized = json_object();
    const char *k;
    for (size_t i = 0; i < HONE_ARRAY_LEN(spaces); i++)
        json_object_foreach(spaces[i], k, p) if (json_object_get(flat, k))
            json_object_set(p, "default", json_object_get(flat, k));
    /* the learning rate, warm-up and step_epochs only where the dataset moved them */
    static const char *const sizable[] = {"data.val_size",       "train.batch_size",
                                          "train.epochs",        "train.lr",
                                          "train.warmup_epochs", "train.step_epochs"};
    json_t *netdef = ctl_spec_defaults(net);
    for (size_t i = 0; ntrain >= 0 && i < HONE_ARRAY_LEN(sizable); i++)
        if (!json_object_get(specs, sizable[i]) &&
            (i < 3 ||
             !json_equal(json_object_get(flat, sizable[i]), json_object_get(netdef, sizable[i]))))
            json_object_set(sized, sizable[i], json_object_get(flat, sizable[i]));
    json_decref(netdef);
    json_object_del(flat, "data.path"); /* where the data lies is the dataset's to show */
    hone_http_res_json(
        res, 200,
        json_pack("{s:s,s:o,s:o,s:o,s:o,s:o}", "network_arch", net, "default_hyperparameters", def,
                  "all_hyperparameters", all, "training_images",
                  ntrain >= 0 ? json_integer(ntrain) : json_null(), "sized", sized, "spec", flat));
    json_decref(tds);
    json_decref(specs);
    json_decref(ds);
    json_decref(row);
}

/* The JSON Schema of `specs` (schemas/spec.schema.json, from spec/'s table). */
static void schema_spec(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)req;
    (void)ud;
    hone_http_res_json(res, 200, hone_spec_json_schema());
}

int ctl_routes_experiments(hone_controller *c)
{
    int rc = 0;
    rc |= hone_http_route(c->http, "POST", "/api/v1/experiments", exp_create, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/experiments", exp_list, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/experiments/{id}", exp_get, c);
    rc |= hone_http_route(c->http, "PATCH", "/api/v1/experiments/{id}", exp_patch, c);
    rc |= hone_http_route(c->http, "DELETE", "/api/v1/experiments/{id}", exp_delete, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/experiments/{id}/automl-defaults",
                          exp_automl_defaults, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/schemas/spec", schema_spec, c);
    return rc ? HONE_EINVAL : HONE_OK;
}
