/* REST handlers used by hone-worker: register (issues the worker's credential; the GPU it trains
 * on by UUID and its host, for the scheduler to spread train jobs over GPUs), heartbeat (extends
 * leases, re-attaches jobs after a controller restart, lists jobs to cancel), lease by long-poll,
 * per-epoch reports answered with continue / stop / pause, and completion. Every call after
 * registration must carry that worker's credential (auth.c); reports are checked against the job
 * (report_check.c). Each acknowledged change is committed before the reply. A job its worker
 * released (shutting down) is never re-attached to that worker. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "automl.h"
#include "kind.h"
#include "batch.h"
#include "ctl.h"
#include "ctl_sched.h"
#include "joblog.h"
#include "jobs.h"
#include "report_check.h"
#include "routes.h"
#include "store.h"
#include "util.h"

static const char *const end_states[] = {"done", "failed", "paused", "stopped", "released", NULL};

static int worker_touch(hone_controller *c, hone_http_res *res, const char *wid)
{
    int n = store_worker_touch(c->db, wid, ctl_now());
    if (n < 0) {
        ctl_res_store_error(c, res);
        return HONE_ESQL;
    }
    if (n == 0) {
        hone_http_res_error(res, 404, "worker_id", "unknown worker %s: register again", wid);
        return HONE_ENOENT;
    }
    return HONE_OK;
}

/* A register's gpu_uuid: "GPU-" or "MIG-" then hex digits and dashes (NVIDIA's names for a board
 * or a MIG instance). Copied to out (96 bytes and a NUL) with its hex digits lower case, as
 * nvidia-smi prints them, so that workers naming one GPU are grouped whatever its case. */
static int gpu_uuid_norm(const char *u, char out[97])
{
    size_t n = strlen(u);
    if (n > 96 || (strncmp(u, "GPU-", 4) != 0 && strncmp(u, "MIG-", 4) != 0) || n <= 4 ||
        strspn(u + 4, "0123456789abcdefABCDEF-") != n - 4)
        return 0;
    for (size_t i = 0; i <= n; i++)
        out[i] = i >= 4 && u[i] >= 'A' && u[i] <= 'F' ? (char)(u[i] - 'A' + 'a') : u[i];
    return 1;
}

static void w_register(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    static const hone_json_field fields[] = {
        {.name = "name", .type = HONE_JSON_STRING, .required = 1, .min_len = 1, .max_len = 200},
        {.name = "resources", .type = HONE_JSON_OBJECT, .nullable = 1},
        {.name = "artifact_dir", .type = HONE_JSON_STRING, .nullable = 1, .max_len = 4000},
        {.name = "labels", .type = HONE_JSON_OBJECT, .nullable = 1},
        {.name = "gpu_uuid", .type = HONE_JSON_STRING, .nullable = 1, .min_len = 5, .max_len = 96},
        {.name = "host", .type = HONE_JSON_STRING, .nullable = 1, .min_len = 1, .max_len = 255},
    };
    json_t *body = hone_http_req_json(req, res);
    if (!body)
        return;
    if (hone_json_check(body, fields, HONE_ARRAY_LEN(fields), res))
        goto fail;
    const char *uuid = jstr(body, "gpu_uuid"), *host = jstr(body, "host");
    char uuid_buf[97];
    if (uuid && !gpu_uuid_norm(uuid, uuid_buf)) {
        hone_http_res_error(res, 422, "gpu_uuid",
                            "must be a GPU UUID as nvidia-smi prints it (GPU-... or MIG-..., hex "
                            "digits and dashes)");
        goto fail;
    }
    for (const char *p = host; p && *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f) {
            hone_http_res_error(res, 422, "host", "must be a host name: no spaces or controls");
            goto fail;
        }
    char id[64], token[160], hash[65];
    ctl_new_id(c, "wrk", id, sizeof id);
    if (ctl_worker_credential_new(id, token, sizeof token, hash)) {
        hone_http_res_error(res, 500, NULL, "could not make a worker credential");
        goto fail;
    }
    json_t *r = json_object_get(body, "resources");
    char *rs = json_is_object(r) ? jdump(r) : hone_xstrdup("{}");
    double now = ctl_now();
    int rc = store_worker_insert(c->db, id, jstr(body, "name"), rs, jstr(body, "artifact_dir"),
                                 uuid ? uuid_buf : NULL, host, now, hash);
    free(rs);
    if (rc) {
        ctl_res_store_error(c, res);
        goto fail;
    }
    ctl_log(c, "info", "worker_registered",
            json_pack("{s:s,s:s,s:s?}", "worker", id, "name", jstr(body, "name"), "gpu_uuid",
                      uuid ? uuid_buf : NULL));
    hone_http_res_json(res, 201,
                       json_pack("{s:s,s:s,s:i,s:i,s:s}", "id", id, "token", token,
                                 "heartbeat_seconds", c->cfg.heartbeat_seconds, "lease_seconds",
                                 c->cfg.lease_seconds, "artifacts_dir", c->artifacts_dir));
fail:
    json_decref(body);
}

/* A job this worker held and whose lease lapsed is still queued: give it back to the worker. */
static int reattach(hone_controller *c, const json_t *job, const char *wid)
{
    double now = ctl_now();
    return store_lease_reattach(c->db, jstr(job, "id"), wid, now + c->cfg.lease_seconds, now) == 1
               ? HONE_OK
               : HONE_ESTATE;
}

/* A heartbeat's gpus: at most 16 {index, util, mem_used, mem_total}, each in its range (mem_used
 * at most mem_total). 422 naming the field (gpus[i].util) otherwise. */
static int check_gpus(const json_t *gpus, hone_http_res *res)
{
    static const hone_json_field fields[] = {
        {.name = "index", .type = HONE_JSON_INT, .required = 1, .has_range = 1, .max = 63},
        {.name = "util", .type = HONE_JSON_NUMBER, .required = 1, .has_range = 1, .max = 100},
        {.name = "mem_used", .type = HONE_JSON_INT, .required = 1, .has_range = 1, .max = 1e15},
        {.name = "mem_total", .type = HONE_JSON_INT, .required = 1, .has_range = 1, .max = 1e15},
    };
    json_t *g;
    size_t i;
    char prefix[64];
    json_array_foreach(gpus, i, g)
    {
        snprintf(prefix, sizeof prefix, "gpus[%zu]", i);
        if (!json_is_object(g)) {
            hone_http_res_error(res, 422, prefix, "must be an object");
            return HONE_EINVAL;
        }
        if (hone_json_check_prefix(g, prefix, fields, HONE_ARRAY_LEN(fields), res))
            return HONE_EINVAL;
        if (jint(g, "mem_used") > jint(g, "mem_total")) {
            snprintf(prefix, sizeof prefix, "gpus[%zu].mem_used", i);
            hone_http_res_error(res, 422, prefix, "must be at most mem_total");
            return HONE_EINVAL;
        }
    }
    return HONE_OK;
}

static void w_heartbeat(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    static const hone_json_field fields[] = {
        {.name = "jobs", .type = HONE_JSON_ARRAY, .nullable = 1, .max_len = 1024},
        {.name = "gpus", .type = HONE_JSON_ARRAY, .nullable = 1, .max_len = 16},
    };
    char *gpus = NULL;
    const char *wid = hone_http_req_param(req, "id");
    json_t *body = hone_http_req_json(req, res), *cancel = json_array(), *pause = json_array();
    json_t *v, *job = NULL;
    size_t i;
    int reattached = 0;
    if (!body)
        goto fail;
    if (hone_json_check(body, fields, HONE_ARRAY_LEN(fields), res) ||
        check_gpus(json_object_get(body, "gpus"), res) ||
        ctl_auth_worker(c, req, res, wid, "worker_id"))
        goto fail;
    if (json_is_array(json_object_get(body, "gpus")))
        gpus = jdump(json_object_get(body, "gpus"));
    if (db_begin(c->db)) {
        ctl_res_store_error(c, res);
        goto fail;
    }
    if (worker_touch(c, res, wid)) {
        db_rollback(c->db);
        goto fail;
    }
    /* The latest telemetry replaces the last; a heartbeat without it means none now. */
    if (store_worker_gpus_set(c->db, wid, gpus, ctl_now()) < 0) {
        db_rollback(c->db);
        ctl_res_store_error(c, res);
        goto fail;
    }
    json_array_foreach(json_object_get(body, "jobs"), i, v)
    {
        const char *jid = json_string_value(v);
        if (!jid || ctl_job_row(c, jid, &job)) {
            if (jid)
                json_array_append(cancel, v);
            continue;
        }
        const char *st = jstr(job, "status"), *holder = jstr(job, "worker_id");
        const char *ctl = jstr(job, "control");
        if (!strcmp(st, "running") && holder && !strcmp(holder, wid)) {
            store_lease_extend(c->db, jid, ctl_now() + c->cfg.lease_seconds);
            if (ctl && !strcmp(ctl, "cancel"))
                json_array_append(cancel, v);
            else if (ctl && !strcmp(ctl, "pause"))
                json_array_append(pause, v);
        } else if (!strcmp(st, "queued") && reattach(c, job, wid) == HONE_OK) {
            reattached++;
        } else {
            json_array_append(cancel, v);
        }
        json_decref(job);
        job = NULL;
    }
    if (db_commit(c->db)) {
        ctl_res_store_error(c, res);
        goto fail;
    }
    json_t *g, *gs = json_object_get(body, "gpus");
    if (json_array_size(gs)) {
        double sum = 0;
        json_array_foreach(gs, i, g) sum += json_number_value(json_object_get(g, "util"));
        ctl_automl_gpu_sample(c, sum / (double)json_array_size(gs));
    }
    if (reattached)
        ctl_log(c, "info", "jobs_reattached",
                json_pack("{s:s,s:i}", "worker", wid, "jobs", reattached));
    hone_http_res_json(res, 200, json_pack("{s:O,s:O}", "cancel", cancel, "pause", pause));
fail:
    free(gpus);
    json_decref(cancel);
    json_decref(pause);
    json_decref(body);
}

static void w_lease(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    const char *wid = hone_http_req_param(req, "id");
    const char *w = hone_http_req_query(req, "wait");
    int wait = 0;
    if (w) {
        char *end = NULL;
        long x = strtol(w, &end, 10);
        if (!*w || *end || x < 0 || x > 3600) {
            hone_http_res_error(res, 422, "wait", "wait must be seconds in [0, 3600]");
            return;
        }
        wait = (int)(x > c->cfg.max_wait_seconds ? c->cfg.max_wait_seconds : x);
    }
    if (ctl_auth_worker(c, req, res, wid, "worker_id") || worker_touch(c, res, wid))
        return;
    json_t *reply = NULL;
    int rc = ctl_sched_try_lease(c, wid, &reply);
    if (rc == HONE_OK)
        hone_http_res_json(res, 200, reply);
    else if (rc != HONE_ENOENT)
        ctl_res_store_error(c, res);
    else if (wait > 0 && !c->closing)
        ctl_sched_park(c, wid, res, wait);
    else
        hone_http_res_empty(res, 204);
}

/* The job row: for a report only the columns it needs (store_job_report_row), else the whole. */
static int job_get(hone_controller *c, const char *jid, int report, json_t **job)
{
    return report ? store_job_report_row(c->db, jid, job) : ctl_job_row(c, jid, job);
}

/* The job must be held by this worker; a job whose lease lapsed but is still queued is taken back.
 * Answers 404/409 itself and returns non-zero otherwise. */
static int job_for_worker(hone_controller *c, hone_http_res *res, const char *jid, const char *wid,
                          int report, json_t **job)
{
    int rc = job_get(c, jid, report, job);
    if (rc) {
        if (rc == HONE_ENOENT)
            hone_http_res_error(res, 404, "id", "no job %s", jid);
        else
            ctl_res_store_error(c, res);
        return rc;
    }
    const char *st = jstr(*job, "status"), *holder = jstr(*job, "worker_id");
    if (!strcmp(st, "running") && holder && !strcmp(holder, wid))
        return HONE_OK;
    if (!strcmp(st, "queued") && reattach(c, *job, wid) == HONE_OK) {
        json_decref(*job);
        return job_get(c, jid, report, job);
    }
    hone_http_res_error(res, 409, "worker_id", "job %s is %s%s%s: stop working on it", jid, st,
                        holder ? " on worker " : "", holder ? holder : "");
    json_decref(*job);
    *job = NULL;
    return HONE_ESTATE;
}

static const char *dec_name(hone_decision d)
{
    return d == HONE_DECIDE_STOP ? "stop" : d == HONE_DECIDE_PAUSE ? "pause" : "continue";
}

/* A progress report (a convert job's: its "epoch" is the worker's report count: a re-run starts
 * again at 1): the latest report is the job's progress; the lease is extended; a cancel answers
 * stop. Nothing goes to the metrics table. Inside the report batch's savepoint; answers itself. */
static void convert_report(hone_controller *c, hone_http_res *res, const json_t *job,
                           const json_t *metrics, int seq)
{
    char field[160], msg[256];
    if (ctl_report_metrics_check(metrics, CTL_REPORT_PROGRESS, field, sizeof field, msg,
                                 sizeof msg)) {
        ctl_batch_undo(c);
        hone_http_res_error(res, 422, field, "%s", msg);
        return;
    }
    const char *ctl = jstr(job, "control");
    const char *dec = ctl && !strcmp(ctl, "cancel") ? "stop" : "continue";
    char *data = jdump(metrics);
    int rc =
        store_convert_progress(c->db, jstr(job, "id"), data, ctl_now() + c->cfg.lease_seconds, dec);
    free(data);
    if (rc)
        ctl_batch_undo(c);
    if (rc || ctl_batch_release(c)) {
        ctl_res_store_error(c, res);
        return;
    }
    c->n_reports++;
    ctl_batch_reply(c, res,
                    json_pack("{s:s,s:i,s:b}", "decision", dec, "epoch", seq, "duplicate", 0));
}

/* The report's log lines (checked already), inside the report's savepoint. */
static int store_log_lines(hone_controller *c, const char *jid, int epoch, const json_t *log)
{
    size_t i;
    json_t *v;
    double now = ctl_now();
    json_array_foreach((json_t *)log, i,
                       v) if (store_logs_append(c->db, jid, epoch, (int)i, json_string_value(v),
                                                now) < 0) return HONE_EIO;
    return HONE_OK;
}

static void j_report(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    static const hone_json_field fields[] = {
        {.name = "worker_id", .type = HONE_JSON_STRING, .required = 1, .min_len = 1},
        {.name = "epoch",
         .type = HONE_JSON_INT,
         .required = 1,
         .has_range = 1,
         .min = 1,
         .max = 100000},
        {.name = "metrics", .type = HONE_JSON_OBJECT, .required = 1},
        {.name = "log", .type = HONE_JSON_ARRAY, .max_len = HONE_REPORT_LOG_LINES},
    };
    const char *jid = hone_http_req_param(req, "id");
    json_t *body = hone_http_req_json(req, res), *job = NULL;
    if (!body)
        return;
    if (hone_json_check(body, fields, HONE_ARRAY_LEN(fields), res))
        goto fail;
    const char *wid = jstr(body, "worker_id");
    int epoch = (int)jint(body, "epoch");
    json_t *metrics = json_object_get(body, "metrics");
    char field[160], msg[256];
    if (ctl_report_metrics_check(metrics, CTL_REPORT_ANY, field, sizeof field, msg, sizeof msg)) {
        hone_http_res_error(res, 422, field, "%s", msg);
        goto fail;
    }
    json_t *log = json_object_get(body, "log");
    if (log && ctl_report_log_check(log, field, sizeof field, msg, sizeof msg)) {
        hone_http_res_error(res, 422, field, "%s", msg);
        goto fail;
    }
    if (ctl_auth_worker(c, req, res, wid, "worker_id"))
        goto fail;
    if (ctl_batch_begin(c)) {
        ctl_res_store_error(c, res);
        goto fail;
    }
    /* The hot path: only the columns a report needs, the experiment's metric joined in. */
    if (job_for_worker(c, res, jid, wid, 1, &job)) {
        ctl_batch_undo(c);
        goto fail;
    }
    ctl_report_form form = ctl_kind_of(job)->report;
    if (form == CTL_REPORT_PROGRESS) {
        convert_report(c, res, job, metrics, epoch);
        goto fail;
    }
    if (ctl_report_metrics_check(metrics, form ? form : CTL_REPORT_EPOCHS, field, sizeof field, msg,
                                 sizeof msg)) {
        ctl_batch_undo(c);
        hone_http_res_error(res, 422, field, "%s", msg);
        goto fail;
    }
    if (ctl_automl_busy(c, jstr(job, "parent_id"))) { /* its search is asking: wait for it */
        ctl_batch_undo(c);
        ctl_defer(c, jstr(job, "parent_id"), req, res, j_report);
        goto fail;
    }
    if (jint(job, "epochs_target") > 0 && epoch > jint(job, "epochs_target")) {
        ctl_batch_undo(c);
        hone_http_res_error(res, 422, "epoch", "epoch %d is past the job's target %lld", epoch,
                            jint(job, "epochs_target"));
        goto fail;
    }
    if (epoch > jint(job, "epoch") + 1) { /* a repeat of a stored epoch is fine: idempotent */
        ctl_batch_undo(c);
        hone_http_res_error(res, 422, "epoch",
                            "epoch %d skips ahead: the next epoch of job %s is %lld", epoch, jid,
                            jint(job, "epoch") + 1);
        goto fail;
    }
    const char *mname = jstr(job, "exp_metric");
    double m = jnum(metrics, mname);
    int trial = jstr(job, "parent_id") != NULL;
    if (trial && isnan(m)) {
        ctl_batch_undo(c);
        hone_http_res_error(res, 422, "metrics", "metrics.%s is required (the search's metric)",
                            mname);
        goto fail;
    }
    char *data = jdump(metrics);
    int fresh = store_metrics_append(c->db, jid, epoch, data, ctl_now());
    /* The epoch's log lines go in with its first report only: a replay stores nothing twice. */
    /* then the epoch as a person reads it (joblog.c), after the trainer's lines */
    if (fresh < 0 || (fresh > 0 && log && store_log_lines(c, jid, epoch, log)) ||
        (fresh > 0 && ctl_joblog_epoch(c, jid, epoch, (int)jint(job, "epochs_target"), metrics,
                                       (int)json_array_size(log)))) {
        free(data);
        ctl_res_store_error(c, res);
        goto fail;
    }
    hone_decision dec = HONE_DECIDE_CONTINUE;
    const char *ctl = jstr(job, "control");
    int rc = HONE_OK;
    if (ctl && !strcmp(ctl, "cancel"))
        dec = HONE_DECIDE_STOP;
    else if (trial)
        rc = ctl_automl_report(c, job, epoch, m, fresh > 0, &dec);
    else if (ctl && !strcmp(ctl, "pause"))
        dec = HONE_DECIDE_PAUSE;
    int maximize = strstr(mname, "loss") == NULL;
    double best = jnum(job, "best_metric");
    int better = !isnan(m) && (isnan(best) || (maximize ? m > best : m < best));
    if (!rc && fresh)
        rc = store_job_report_epoch(c->db, jid, epoch, better, m, data,
                                    ctl_now() + c->cfg.lease_seconds, dec_name(dec));
    else if (!rc)
        rc = store_job_set_decision(c->db, jid, dec_name(dec));
    free(data);
    if (rc || ctl_batch_release(c)) {
        ctl_res_store_error(c, res);
        if (trial)
            ctl_automl_rebuild(c, jstr(job, "parent_id"));
        goto fail;
    }
    c->n_reports++;
    ctl_batch_reply(c, res,
                    json_pack("{s:s,s:i,s:b}", "decision", dec_name(dec), "epoch", epoch,
                              "duplicate", fresh == 0));
fail:
    json_decref(job);
    json_decref(body);
}

static void j_complete(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    static const hone_json_field fields[] = {
        {.name = "worker_id", .type = HONE_JSON_STRING, .required = 1, .min_len = 1},
        {.name = "status", .type = HONE_JSON_STRING, .required = 1, .enum_values = end_states},
        {.name = "log_tail", .type = HONE_JSON_STRING, .nullable = 1, .max_len = 65536},
        {.name = "final", .type = HONE_JSON_OBJECT, .nullable = 1},
        {.name = "error", .type = HONE_JSON_STRING, .nullable = 1, .max_len = 65536},
    };
    const char *jid = hone_http_req_param(req, "id");
    json_t *body = hone_http_req_json(req, res), *job = NULL;
    if (!body)
        return;
    if (hone_json_check(body, fields, HONE_ARRAY_LEN(fields), res))
        goto fail;
    const char *wid = jstr(body, "worker_id");
    if (ctl_auth_worker(c, req, res, wid, "worker_id"))
        goto fail;
    /* A repeated complete (the reply was lost) finds the job already ended by this worker. */
    if (ctl_job_row(c, jid, &job) == HONE_OK && strcmp(jstr(job, "status"), "running") != 0 &&
        strcmp(jstr(job, "status"), "queued") != 0 && jstr(job, "last_worker_id") &&
        !strcmp(jstr(job, "last_worker_id"), wid)) {
        hone_http_res_json(res, 200, ctl_job_json(c, job));
        goto fail;
    }
    json_decref(job);
    job = NULL;
    if (db_begin(c->db)) {
        ctl_res_store_error(c, res);
        goto fail;
    }
    if (job_for_worker(c, res, jid, wid, 0, &job)) {
        db_rollback(c->db);
        goto fail;
    }
    if (ctl_automl_busy(c, jstr(job, "parent_id"))) {
        db_rollback(c->db);
        ctl_defer(c, jstr(job, "parent_id"), req, res, j_complete);
        goto fail;
    }
    const char *tail = jstr(body, "log_tail") ? jstr(body, "log_tail") : jstr(body, "error");
    int rc;
    if (!strcmp(jstr(body, "status"), "released")) {
        /* Shutting down: queued again at once (any action). The lease ends as `released`, so a
         * heartbeat of this worker that still names the job does not take it back. */
        rc = store_lease_end(c->db, jid, ctl_now(), "released") ? HONE_ESQL
                                                                : ctl_sched_release(c, job);
    } else {
        rc = ctl_job_finish(c, job, jstr(body, "status"), tail, json_object_get(body, "final"));
    }
    if (rc || db_commit(c->db)) {
        ctl_res_store_error(c, res);
        if (jstr(job, "parent_id"))
            ctl_automl_rebuild(c, jstr(job, "parent_id"));
        goto fail;
    }
    if (jstr(job, "parent_id"))
        ctl_automl_step(c, jstr(job, "parent_id"));
    ctl_sched_kick(c);
    json_decref(job);
    job = NULL;
    ctl_job_row(c, jid, &job);
    hone_http_res_json(res, 200, ctl_job_json(c, job));
fail:
    json_decref(job);
    json_decref(body);
}

static void w_list(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    json_t *rows = NULL, *r;
    size_t i;
    if (ctl_auth_admin_only(c, req, res, "the worker list (hosts, folders, GPUs)"))
        return;
    if (store_workers_list(c->db, &rows)) {
        ctl_res_store_error(c, res);
        return;
    }
    double now = ctl_now();
    json_array_foreach(rows, i, r)
    {
        json_object_set_new(r, "resources", jparse(jstr(r, "resources")));
        json_t *g = jstr(r, "gpus") ? jparse(jstr(r, "gpus")) : NULL;
        json_object_set_new(r, "gpus", g ? g : json_null());
        json_object_set_new(r, "alive",
                            json_boolean(jnum(r, "last_seen") > now - c->cfg.lease_seconds));
    }
    hone_http_res_json(res, 200, json_pack("{s:o}", "workers", rows));
}

int ctl_routes_workers(hone_controller *c)
{
    int rc = 0;
    rc |= hone_http_route(c->http, "POST", "/api/v1/workers", w_register, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/workers", w_list, c);
    rc |= hone_http_route(c->http, "POST", "/api/v1/workers/{id}/heartbeat", w_heartbeat, c);
    rc |= hone_http_route(c->http, "POST", "/api/v1/workers/{id}/lease", w_lease, c);
    rc |= hone_http_route(c->http, "POST", "/api/v1/jobs/{id}/report", j_report, c);
    rc |= hone_http_route(c->http, "POST", "/api/v1/jobs/{id}/complete", j_complete, c);
    return rc ? HONE_EINVAL : HONE_OK;
}
