/* action: one leased evaluate, inference or export job on this worker. Runs hone-train
 * --evaluate or --infer on the lease's model folder (argv: trainer_argv.c) with --out the job's
 * artifact folder (inference writes labels.jsonl there), or --export into that folder's
 * model.onnx, stops it on cancel, and completes the job with its result line ({"event":
 * "evaluate",...}, {"event":"inference",...} or {"event":"export",...}) as the final. With
 * --storage http the parent's model (and evaluate's dataset, inference's image folder) are
 * downloaded first and the out folder is uploaded before completing. A worker told to shut down
 * stops hone-train, removes its half-written output and hands the lease back (`released`). */
#include "action.h"

#include "storage.h"
#include "trainer_argv.h"
#include "uploads.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct action_ctx {
    hone_worker *w;
    hone_kind kind; /* evaluate, inference or export: its result line's event is the kind's name */
    json_t *result; /* hone-train's result line (owned) */
} action_ctx;

static void action_on_event(void *arg, json_t *line)
{
    action_ctx *a = arg;
    hone_kind ev;
    if (hone_kind_parse(json_string_value(json_object_get(line, "event")), &ev) == HONE_OK &&
        ev == a->kind) {
        json_decref(a->result);
        a->result = json_incref(line);
    }
}

/* Shutting down: removes what a killed hone-train left half-written in the out folder (its
 * outputs are written as NAME.tmp and renamed) and completes the job as `released` (the
 * controller queues it again at once; a later worker runs it from the start). */
static void action_release(hone_worker *w, const char *id, const char *out_dir,
                           hone_trun_result *res, const char *what)
{
    static const char *const temps[] = {"evaluate.json.tmp", "labels.jsonl.tmp",
                                        "coco_results.json.tmp", "model.onnx.tmp"};
    char msg[256], path[4096 + 64];
    for (size_t i = 0; out_dir && out_dir[0] && i < HONE_ARRAY_LEN(temps); i++)
        if (snprintf(path, sizeof path, "%s/%s", out_dir, temps[i]) < (int)sizeof path &&
            unlink(path) == 0)
            worker_log(w, "job %s: removed %s, left by the stopped trainer", id, path);
    snprintf(msg, sizeof msg, "hone-worker: shutting down; %s was stopped and the job handed back",
             what);
    if (!res->log_tail)
        res->log_tail = hone_xstrdup(msg);
    worker_log(w, "job %s: %s", id, msg + strlen("hone-worker: "));
    json_decref(res->done);
    res->done = NULL;
    worker_set_job(w, NULL); /* no heartbeat after this takes the queued job back */
    worker_job_complete(w, id, "released", res);
}

static int action_should_stop(void *arg)
{
    action_ctx *a = arg;
    return worker_stopping(a->w) || worker_canceled(a->w);
}

void worker_action_run(hone_worker *w, hone_kind kind, const json_t *job)
{
    const char *id = json_string_value(json_object_get(job, "id"));
    const char *action = hone_kind_name(kind);
    action_ctx ctx = {.w = w, .kind = kind};
    hone_trun_hooks hooks = {
        .on_event = action_on_event, .should_stop = action_should_stop, .arg = &ctx};
    /* SIGKILL at half the grace, leaving the rest of it for handing the lease back */
    hone_trun_opts topts = {.grace_s = w->o->grace_s / 2};
    hone_trun_result res = {0};
    const char *status;
    json_t *local = NULL; /* http storage: the lease with our own paths */
    char out_dir[4096 + 64];

    worker_set_job(w, id);
    char **argv = NULL;
    if (w->http_storage) {
        /* The parent's model comes over HTTP, evaluate's dataset and inference's image folder
         * into the cache; the trainer writes into our own out folder, uploaded before the job
         * completes. */
        char msg[4096 + 256], model[4096 + 64];
        snprintf(model, sizeof model, "%s/jobs/%s/model", w->work_dir, id);
        snprintf(out_dir, sizeof out_dir, "%s/jobs/%s/out", w->work_dir, id);
        local = json_deep_copy(job);
        json_object_set_new(local, "model_dir", json_string(model));
        json_object_set_new(local, "out_dir", json_string(out_dir));
        if (!json_is_array(json_object_get(local, "sets")))
            json_object_set_new(local, "sets", json_array());
        int rc = worker_mkdirs(out_dir, 0) != 0;
        if (rc)
            snprintf(msg, sizeof msg, "hone-worker: cannot make %s", out_dir);
        else
            rc = worker_fetch_model(w, id, json_string_value(json_object_get(job, "parent_job_id")),
                                    json_string_value(json_object_get(job, "model_subdir")), model,
                                    msg, sizeof msg);
        if (!rc && kind == HONE_KIND_INFERENCE) {
            char folder[4096 + 256];
            rc = worker_fetch_input(w, id, folder, sizeof folder, msg, sizeof msg);
            if (!rc)
                json_object_set_new(local, "folder", json_string(folder));
        }
        if (!rc && kind == HONE_KIND_EVALUATE) {
            json_t *sets = json_object();
            rc = worker_fetch_dataset(w, job, sets, msg, sizeof msg);
            if (!rc) {
                char kv[4096 + 64];
                json_t *arr = json_object_get(local, "sets");
                snprintf(kv, sizeof kv, "data.path=%s",
                         json_string_value(json_object_get(sets, "data.path")));
                json_array_append_new(arr, json_string(kv));
                json_array_append_new(arr, json_string("data.packed="));
            }
            json_decref(sets);
        }
        if (rc) {
            if (worker_stopping(w)) {
                action_release(w, id, NULL, &res, "the download of its inputs");
                goto fail;
            }
            res.log_tail = hone_xstrdup(msg);
            worker_log(w, "job %s: %s", id, msg);
            worker_job_complete(w, id, "failed", &res);
            goto fail;
        }
        job = local;
    }
    argv = hone_worker_action_argv(w->o, w->trainer, job);
    if (!argv) {
        res.log_tail = hone_xstrdup("hone-worker: bad lease: no model_dir, out_dir or folder");
        worker_log(w, "job %s: %s", id, res.log_tail);
        worker_job_complete(w, id, "failed", &res);
        goto fail;
    }
    worker_log(w, "job %s: %s %s on %s", id, w->trainer, action,
               json_string_value(json_object_get(job, "model_dir")));
    if (hone_trun_run(argv, &topts, &hooks, &res) != 0)
        worker_log(w, "job %s: hone-train did not start: %s", id, res.log_tail);
    if (res.outcome == HONE_TRUN_ABORTED)
        status = worker_canceled(w) ? "stopped" : NULL;
    else
        status = res.outcome == HONE_TRUN_DONE && ctx.result ? "done" : "failed";
    worker_log(w, "job %s: %s %s, exit %d", id, action,
               status               ? status
               : worker_stopping(w) ? "stopped (shutting down)"
                                    : "abandoned",
               res.exit_code);
    if (local && status && !strcmp(status, "done") &&
        worker_upload_outputs(w, id, out_dir) != HONE_OK)
        status = worker_stopping(w) ? NULL : "failed";
    if (status) {
        json_decref(res.done);
        res.done = ctx.result ? json_incref(ctx.result) : NULL;
        worker_job_complete(w, id, status, &res);
    } else if (worker_stopping(w) && !worker_canceled(w)) {
        action_release(w, id, json_string_value(json_object_get(job, "out_dir")), &res,
                       "hone-train");
    }
fail:
    if (local)
        worker_drop_dataset(w, id);
    json_decref(local);
    hone_worker_argv_free(argv);
    json_decref(ctx.result);
    hone_trun_result_clear(&res);
    worker_set_job(w, NULL);
}
