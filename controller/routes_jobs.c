/* REST handlers for jobs: create (train, AutoML, evaluate, inference or export) under an
 * experiment, list with filters, get, cancel / pause / resume (as "/jobs/{id}:verb" or
 * "/jobs/{id}/verb"), per-epoch metrics and logs. Artifacts live in routes_artifacts.c;
 * worker-facing job calls in routes_workers.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "automl.h"
#include "ctl.h"
#include "ctl_sched.h"
#include "joblog.h"
#include "jobs.h"
#include "kind.h"
#include "routes.h"
#include "shares.h"
#include "store.h"
#include "util.h"

int ctl_job_row_res(hone_controller *c, hone_http_res *res, const char *id, const char *owner,
                    json_t **row)
{
    *row = NULL;
    int rc = store_job_get_owned(c->db, id, owner, row);
    if (rc == HONE_ENOENT)
        hone_http_res_error(res, 404, "id", "no job %s", id);
    else if (rc)
        ctl_res_store_error(c, res);
    return rc;
}

static void job_reply(hone_controller *c, hone_http_res *res, const char *id, const char *owner,
                      int status)
{
    json_t *row = NULL;
    if (ctl_job_row_res(c, res, id, owner, &row) == HONE_OK)
        hone_http_res_json(res, status, ctl_job_json_one(c, row));
    json_decref(row);
}

static void job_create(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    const hone_json_field fields[] = {
        {.name = "action",
         .type = HONE_JSON_STRING,
         .required = 1,
         .enum_values = ctl_kind_create_names()},
        {.name = "specs", .type = HONE_JSON_OBJECT, .nullable = 1},
        {.name = "name", .type = HONE_JSON_STRING, .nullable = 1, .max_len = 200},
        {.name = "description", .type = HONE_JSON_STRING, .nullable = 1, .max_len = 10000},
        {.name = "parent_job_id", .type = HONE_JSON_STRING, .nullable = 1, .max_len = 200},
        {.name = "dataset_id", .type = HONE_JSON_STRING, .nullable = 1, .max_len = 200},
        {.name = "folder", .type = HONE_JSON_STRING, .nullable = 1, .max_len = 4000},
    };
    const char *eid = hone_http_req_param(req, "id");
    json_t *exp = NULL, *body = hone_http_req_json(req, res);
    char id[64], field[256] = "", msg[512] = "";
    if (!body)
        return;
    if (hone_json_check(body, fields, HONE_ARRAY_LEN(fields), res) ||
        ctl_text_check(res, "name", jstr(body, "name"), 0) ||
        ctl_text_check(res, "description", jstr(body, "description"), 1))
        goto fail;
    char ob[64];
    int rc = store_experiment_get(c->db, eid, ctl_auth_owner(c, req, ob), &exp);
    if (rc) {
        if (rc == HONE_ENOENT)
            hone_http_res_error(res, 404, "id", "no experiment %s", eid);
        else
            ctl_res_store_error(c, res);
        goto fail;
    }
    if (ctl_fair_queued_check(c, res, ctl_auth_owner(c, req, ob), 1))
        goto fail; /* 429: the user's share of the queue is full */
    if (db_begin(c->db)) {
        ctl_res_store_error(c, res);
        goto fail;
    }
    int http = 422;
    hone_kind kid = HONE_KIND_TRAIN; /* one of ctl_kind_create_names(): checked above */
    hone_kind_parse(jstr(body, "action"), &kid);
    const ctl_kind *k = ctl_kind_get(kid);
    /* a train or automl job takes its data from the experiment (and may start from a parent
     * job's model, parent_job_id): the other fields of the actions are refused, not ignored */
    static const char *const action_only[] = {"dataset_id", "folder"};
    for (size_t i = 0; !k->takes_model && i < HONE_ARRAY_LEN(action_only); i++)
        if (jstr(body, action_only[i])) {
            db_rollback(c->db);
            hone_http_res_error(res, 422, action_only[i],
                                "a %s job does not take %s (evaluate, inference and export do)",
                                jstr(body, "action"), action_only[i]);
            goto fail;
        }
    rc = k->create(c, exp, body, ctl_auth_owner(c, req, ob), id, sizeof id, &http, field,
                   sizeof field, msg, sizeof msg);
    if (rc == HONE_EINVAL) {
        db_rollback(c->db);
        hone_http_res_error(res, http, field, "%s", msg);
        goto fail;
    }
    if (rc || db_commit(c->db)) {
        ctl_res_store_error(c, res);
        goto fail;
    }
    json_t *row = NULL;
    ctl_job_row(c, id, &row);
    ctl_log(
        c, "info", "job_created",
        json_pack("{s:s,s:s,s:s}", "job", id, "experiment", eid, "action", jstr(row, "action")));
    k = ctl_kind_of(row); /* a train job may have become an AutoML job */
    if (k->created)
        k->created(c, id);
    else
        ctl_sched_kick(c);
    json_decref(row);
    job_reply(c, res, id, NULL, 201);
fail:
    json_decref(exp);
    json_decref(body);
}

static void job_list(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    const char *exp = hone_http_req_query(req, "experiment");
    const char *st = hone_http_req_query(req, "status");
    const char *parent = hone_http_req_query(req, "parent");
    const char *action = hone_http_req_query(req, "action");
    ctl_page pg;
    if (ctl_page_parse(req, res, &pg))
        return;
    const char *top = hone_http_req_query(req, "top"); /* top=1: no trials */
    json_t *rows = NULL;
    char ob[64];
    if (store_jobs_list(c->db, &rows, ctl_auth_owner(c, req, ob), exp, st, parent, action,
                        top && strcmp(top, "0"), pg.limit + 1, pg.offset)) {
        ctl_res_store_error(c, res);
        return;
    }
    json_t *arr = json_array(), *r;
    size_t i;
    json_array_foreach(rows, i, r) json_array_append_new(arr, ctl_job_json(c, r));
    json_decref(rows);
    hone_http_res_json(res, 200, ctl_page_body("jobs", arr, &pg));
}

static int is_over(const char *st)
{
    return !strcmp(st, "done") || !strcmp(st, "failed") || !strcmp(st, "canceled") ||
           !strcmp(st, "stopped");
}

/* Cancel: what a cancel does depends on the kind (its row's cancel hook); one that is already
 * over was refused before. */
static int do_cancel(hone_controller *c, const json_t *job)
{
    const ctl_kind *k = ctl_kind_of(job);
    return k->cancel ? k->cancel(c, job) : HONE_ESTATE;
}

static void job_verb(hone_controller *c, hone_http_req *req, hone_http_res *res, const char *id,
                     const char *verb, hone_http_handler self)
{
    json_t *job = NULL;
    char ob[64];
    int rc = ctl_job_row_res(c, res, id, ctl_auth_owner(c, req, ob), &job);
    if (rc) {
        return;
    }
    if (ctl_automl_busy(c, jstr(job, "parent_id"))) { /* a trial: wait for its search's ask */
        ctl_defer(c, jstr(job, "parent_id"), req, res, self);
        json_decref(job);
        return;
    }
    const char *st = jstr(job, "status");
    const ctl_kind *k = ctl_kind_of(job);
    if (!k->pause && (!strcmp(verb, "pause") || !strcmp(verb, "resume"))) {
        hone_http_res_error(res, 409, "action", "a%s %s job cannot %s: cancel it instead",
                            jstr(job, "action")[0] == 'c' ? "" : "n", jstr(job, "action"), verb);
        goto fail;
    }
    if (db_begin(c->db)) {
        ctl_res_store_error(c, res);
        goto fail;
    }
    if (!strcmp(verb, "cancel")) {
        if (is_over(st)) {
            db_rollback(c->db);
            hone_http_res_error(res, 409, "status", "job %s is already %s", id, st);
            goto fail;
        }
        rc = do_cancel(c, job);
    } else if (!strcmp(verb, "pause")) {
        if (strcmp(st, "running") && strcmp(st, "queued")) {
            db_rollback(c->db);
            hone_http_res_error(res, 409, "status", "job %s is %s, not running", id, st);
            goto fail;
        }
        if (jstr(job, "parent_id")) {
            db_rollback(c->db);
            hone_http_res_error(res, 409, "id", "trials are paused by their AutoML search");
            goto fail;
        }
        rc = k->pause(c, job);
    } else if (!strcmp(verb, "resume")) {
        if (strcmp(st, "paused") != 0 || jstr(job, "parent_id")) {
            db_rollback(c->db);
            hone_http_res_error(res, 409, "status", "job %s is %s%s", id, st,
                                jstr(job, "parent_id") ? " (trials are resumed by their search)"
                                                       : ", not paused");
            goto fail;
        }
        rc = k->resume(c, job);
    } else {
        db_rollback(c->db);
        hone_http_res_error(res, 404, "verb", "unknown job action '%s'", verb);
        goto fail;
    }
    if (rc || db_commit(c->db)) {
        ctl_res_store_error(c, res);
        if (jstr(job, "parent_id"))
            ctl_automl_rebuild(c, jstr(job, "parent_id"));
        goto fail;
    }
    ctl_log(c, "info", "job_control", json_pack("{s:s,s:s}", "job", id, "verb", verb));
    if (k->controlled)
        k->controlled(c, job, verb);
    ctl_sched_kick(c);
    job_reply(c, res, id, NULL, 200); /* job_verb checked the owner */
fail:
    json_decref(job);
}

/* "/jobs/{id}:cancel" arrives here as POST /jobs/{id} with the verb inside the segment. */
static void job_post_colon(hone_http_req *req, hone_http_res *res, void *ud)
{
    char id[128];
    snprintf(id, sizeof id, "%s", hone_http_req_param(req, "id"));
    char *colon = strchr(id, ':');
    if (!colon) {
        hone_http_res_error(res, 405, NULL, "POST a verb: /jobs/{id}:cancel|:pause|:resume");
        return;
    }
    *colon = '\0';
    job_verb(ud, req, res, id, colon + 1, job_post_colon);
}

static void job_post_verb(hone_http_req *req, hone_http_res *res, void *ud)
{
    const char *route = hone_http_req_route(req);
    const char *verb = strrchr(route, '/') + 1;
    job_verb(ud, req, res, hone_http_req_param(req, "id"), verb, job_post_verb);
}

static void job_get(hone_http_req *req, hone_http_res *res, void *ud)
{
    char ob[64];
    job_reply(ud, res, hone_http_req_param(req, "id"), ctl_auth_owner(ud, req, ob), 200);
}

static json_t *metric_list(json_t *rows)
{
    json_t *arr = json_array(), *r;
    size_t i;
    json_array_foreach(rows, i, r)
    {
        json_t *m = jparse(jstr(r, "data"));
        if (!json_is_object(m)) {
            json_decref(m);
            m = json_object();
        }
        json_object_set_new(m, "epoch", json_integer(jint(r, "epoch")));
        json_array_append_new(arr, m);
    }
    return arr;
}

/* A page of a job's metrics: epochs for a train job, trials (each with all its epochs) for an
 * AutoML job; JSON, or CSV (one line per epoch, trial first for AutoML) when asked. */
static void job_metrics(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    const char *id = hone_http_req_param(req, "id");
    json_t *job = NULL, *rows = NULL, *body = NULL, *flat = json_array();
    ctl_page pg;
    int csv;
    if (ctl_page_parse(req, res, &pg) || ctl_wants_csv(req, res, &csv))
        goto done;
    char ob[64];
    int rc = ctl_job_row_res(c, res, id, ctl_auth_owner(c, req, ob), &job);
    if (rc) {
        goto done;
    }
    if (ctl_kind_of(job)->has_trials) {
        json_t *trials = NULL, *t, *out = json_object();
        size_t i, n = 0;
        if (store_trials_list(c->db, id, &trials) == HONE_OK)
            json_array_foreach(trials, i, t)
            {
                if (i < (size_t)pg.offset || n == (size_t)pg.limit)
                    continue;
                char key[32];
                snprintf(key, sizeof key, "%lld", jint(t, "trial"));
                if (store_metrics_list(c->db, jstr(t, "id"), &rows) == HONE_OK) {
                    json_t *list = metric_list(rows);
                    for (size_t k = 0; csv && k < json_array_size(list); k++) {
                        /* the CSV's rows: each epoch with its trial */
                        json_t *row = json_deep_copy(json_array_get(list, k));
                        json_object_set(row, "trial", json_object_get(t, "trial"));
                        json_array_append_new(flat, row);
                    }
                    json_object_set_new(out, key, list);
                    json_decref(rows);
                }
                n++;
            }
        size_t total = json_array_size(trials);
        json_decref(trials);
        body = json_pack("{s:o,s:i,s:i,s:o}", "trials", out, "limit", pg.limit, "offset", pg.offset,
                         "next_offset",
                         total > (size_t)pg.offset + (size_t)pg.limit
                             ? json_integer((json_int_t)pg.offset + pg.limit)
                             : json_null());
    } else if (store_metrics_page(c->db, id, pg.limit + 1, pg.offset, &rows) == HONE_OK) {
        body = ctl_page_body("metrics", metric_list(rows), &pg);
        json_decref(rows);
        if (csv)
            json_array_extend(flat, json_object_get(body, "metrics"));
    } else {
        ctl_res_store_error(c, res);
        goto done;
    }
    if (csv) {
        size_t len = 0;
        char *text = ctl_metrics_csv(flat, &len);
        json_t *next = json_object_get(body, "next_offset");
        if (json_is_integer(next)) { /* the next page, as a header: CSV has no room for it */
            char v[32];
            snprintf(v, sizeof v, "%lld", (long long)json_integer_value(next));
            hone_http_res_header(res, "X-Next-Offset", v);
        }
        hone_http_res_take(res, 200, "text/csv; charset=utf-8", text, len);
        json_decref(body);
    } else {
        hone_http_res_json(res, 200, body);
    }
done:
    json_decref(flat);
    json_decref(job);
}

/* text/plain: the lines reported with epochs and those the controller wrote (of the job, and of an
 * AutoML job's trials, those prefixed "[trial N] "), then the rest of the tail sent at completion:
 * its lines after the last reported line of the job itself (all of it when that line is not in
 * it), unless the job's newest line is one the controller logged at a failure with them
 * (joblog.c). */
static void job_logs(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    const char *id = hone_http_req_param(req, "id");
    json_t *job = NULL, *rows = NULL, *r;
    char *text = NULL;
    size_t len = 0;
    FILE *b = NULL;
    const char *last = NULL;
    long long seq = 0;
    size_t i, n;
    char ob[64];
    int rc = ctl_job_row_res(c, res, id, ctl_auth_owner(c, req, ob), &job);
    if (rc) {
        return;
    }
    json_t *all = json_array();
    b = open_memstream(&text, &len);
    if (!b) {
        hone_http_res_error(res, 500, NULL, "out of memory");
        goto done;
    }
    do {
        if (store_logs_since(c->db, id, seq, 1000, &rows)) {
            ctl_res_store_error(c, res);
            goto done;
        }
        n = json_array_size(rows);
        json_array_extend(all, rows);
        if (n)
            seq = jint(json_array_get(rows, n - 1), "seq");
        json_decref(rows);
    } while (n == 1000);
    /* the job's newest line is the controller's (a failure logged with its tail's lines): no
     * run since has a tail left to show */
    int ended_logged = 0;
    json_array_foreach(all, i, r)
    {
        json_t *trial = json_object_get(r, "trial");
        int own = jstr(r, "job_id") && !strcmp(jstr(r, "job_id"), id);
        if (!own && json_is_integer(trial))
            fprintf(b, "[trial %lld] ", (long long)json_integer_value(trial));
        if (own)
            ended_logged = jint(r, "epoch") == 0;
        if (own && !ended_logged && jint(r, "n") < CTL_LOG_N_EPOCH) /* a trainer's line */
            last = jstr(r, "line");
        fprintf(b, "%s\n", jstr(r, "line") ? jstr(r, "line") : "");
    }
    const char *t = jstr(job, "log_tail") ? jstr(job, "log_tail") : "";
    if (ended_logged)
        t = "";
    if (last && *t) { /* skip what was reported already */
        size_t ll = strlen(last);
        const char *p = t, *after = NULL;
        while ((p = strstr(p, last))) {
            if ((p == t || p[-1] == '\n') && (p[ll] == '\n' || !p[ll]))
                after = p[ll] ? p + ll + 1 : p + ll;
            p++;
        }
        if (after)
            t = after;
    }
    fputs(t, b);
    fclose(b);
    b = NULL;
    hone_http_res_text(res, 200, "text/plain; charset=utf-8", text, len);
done:
    if (b)
        fclose(b);
    free(text);
    json_decref(all);
    json_decref(job);
}

int ctl_routes_jobs(hone_controller *c)
{
    int rc = 0;
    rc |= hone_http_route(c->http, "POST", "/api/v1/experiments/{id}/jobs", job_create, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/jobs", job_list, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/jobs/{id}", job_get, c);
    rc |= hone_http_route(c->http, "POST", "/api/v1/jobs/{id}", job_post_colon, c);
    rc |= hone_http_route(c->http, "POST", "/api/v1/jobs/{id}/cancel", job_post_verb, c);
    rc |= hone_http_route(c->http, "POST", "/api/v1/jobs/{id}/pause", job_post_verb, c);
    rc |= hone_http_route(c->http, "POST", "/api/v1/jobs/{id}/resume", job_post_verb, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/jobs/{id}/metrics", job_metrics, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/jobs/{id}/logs", job_logs, c);
    return rc ? HONE_EINVAL : HONE_OK;
}
