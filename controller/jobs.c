/* Jobs: the API view of a job row and the end of a leased job, each through its kind's row
 * (kinds/kind.h): this file names no kind. A failed job's error is its cause, one line; its
 * error_log the trainer's last lines (joblog.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "jobs.h"
#include "joblog.h"
#include "kind.h"
#include "store.h"
#include "util.h"

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
    /* the failure's last lines (the trainer's stderr, or the trials' of a failed search) */
    char *elog = !strcmp(jstr(row, "status") ? jstr(row, "status") : "", "failed")
                     ? ctl_failure_tail(jstr(row, "log_tail"))
                     : NULL;
    json_object_set_new(o, "error_log", elog ? json_string(elog) : json_null());
    free(elog);
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
    const ctl_kind *k = ctl_kind_of(row);
    if (k->view)
        k->view(c, o, row);
    return o;
}

json_t *ctl_job_json_one(hone_controller *c, const json_t *row)
{
    json_t *o = ctl_job_json(c, row), *flat = NULL;
    const ctl_kind *k = ctl_kind_of(row);
    if (k->resolved_spec && k->resolved_spec(c, row, &flat) == HONE_OK)
        json_object_set_new(o, "resolved_spec", flat);
    return o;
}

int ctl_job_finish(hone_controller *c, const json_t *job, const char *status, const char *log_tail,
                   const json_t *final)
{
    const ctl_kind *k = ctl_kind_of(job);
    int rc = k->finish ? ctl_joblog_tail(c, job, status, log_tail) : HONE_ESTATE;
    if (rc == HONE_OK)
        rc = k->finish(c, job, status, log_tail, final);
    return rc ? rc : ctl_joblog_finished(c, job, log_tail);
}
