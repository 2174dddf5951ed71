/* kinds: the worker's job-kind table, one row per kind a lease can carry: kind -> runner. The
 * lease's `action` is parsed here once; the runners get the enum and no file below names a kind.
 * Adding a kind the worker runs is one runner file and one row here. */
#include "kinds.h"

#include <stdio.h>

#include "action.h"
#include "convert.h"
#include "job.h"
#include "wire.h"

typedef struct worker_kind {
    /* Runs one lease of this kind to the end and completes it; NULL: never leased to a worker. */
    void (*run)(hone_worker *w, hone_kind kind, const json_t *lease);
} worker_kind;

static const worker_kind worker_kinds[HONE_KIND_COUNT] = {
    [HONE_KIND_TRAIN] = {worker_train_run},
    [HONE_KIND_AUTOML] = {NULL}, /* a search runs on the controller; its trials are train jobs */
    [HONE_KIND_CONVERT] = {worker_convert_run},
    [HONE_KIND_EVALUATE] = {worker_action_run},
    [HONE_KIND_INFERENCE] = {worker_action_run},
    [HONE_KIND_EXPORT] = {worker_action_run},
};

/* Fails a lease this worker has no runner for, naming what it carried. */
static void kind_refuse(hone_worker *w, const char *id, const char *action)
{
    hone_trun_result res = {0};
    char msg[512];

    snprintf(msg, sizeof msg, "hone-worker: cannot run a job of kind \"%.200s\"", action);
    res.log_tail = msg;
    worker_log(w, "job %s: %s", id, msg + sizeof("hone-worker: ") - 1);
    worker_set_job(w, id);
    worker_job_complete(w, id, "failed", &res);
    worker_set_job(w, NULL);
}

void worker_kind_run(hone_worker *w, const json_t *lease)
{
    const char *id = json_string_value(json_object_get(lease, "id"));
    const json_t *action = json_object_get(lease, "action");
    hone_kind kind = HONE_KIND_TRAIN; /* a train lease names no action */

    if (!id) {
        worker_log(w, "lease without a job id; ignored");
        return;
    }
    if (action && !json_is_null(action) &&
        (hone_kind_parse(json_string_value(action), &kind) != HONE_OK || !worker_kinds[kind].run)) {
        kind_refuse(w, id, json_is_string(action) ? json_string_value(action) : "(not a string)");
        return;
    }
    worker_kinds[kind].run(w, kind, lease);
}
