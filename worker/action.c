/* action: one leased evaluate, inference or export job on this worker. Runs hone-train
 * --evaluate or --infer on the lease's model folder (argv: trainer_argv.c) with --out the job's
 * artifact folder (inference writes labels.jsonl there), or --export into that folder's
 * model.onnx, stops it on cancel, and completes the job with its result line ({"event":
 * "evaluate",...}, {"event":"inference",...} or {"event":"export",...}) as the final. The folders
 * are the controller's: a worker with --storage http fails these jobs, saying so. */
#include "worker_internal.h"

#include <stdio.h>
#include <string.h>

typedef struct action_ctx {
    hone_worker *w;
    json_t *result; /* hone-train's result line (owned) */
} action_ctx;

static void action_on_event(void *arg, json_t *line)
{
    action_ctx *a = arg;
    const char *ev = json_string_value(json_object_get(line, "event"));
    if (ev && (!strcmp(ev, "evaluate") || !strcmp(ev, "inference") || !strcmp(ev, "export"))) {
        json_decref(a->result);
        a->result = json_incref(line);
    }
}

static int action_should_stop(void *arg)
{
    action_ctx *a = arg;
    return *a->w->stop || atomic_load(&a->w->cancel);
}

void worker_action_run(hone_worker *w, const json_t *job)
{
    const char *id = json_string_value(json_object_get(job, "id"));
    const char *action = json_string_value(json_object_get(job, "action"));
    action_ctx ctx = {.w = w};
    hone_trun_hooks hooks = {
        .on_event = action_on_event, .should_stop = action_should_stop, .arg = &ctx};
    hone_trun_opts topts = {.grace_s = w->o->grace_s};
    hone_trun_result res = {0};
    const char *status;

    worker_set_job(w, id);
    char **argv = NULL;
    if (w->http_storage) {
        /* The model folder (and inference's image folder) are the controller's paths; fetching
         * them over HTTP is not built yet. Say so rather than fail reading them. */
        res.log_tail =
            hone_xstrdup("hone-worker: evaluate, inference and export jobs need a worker "
                         "that shares the controller's disk (--storage shared)");
        worker_log(w, "job %s: %s", id, res.log_tail);
        worker_job_complete(w, id, "failed", &res);
        goto fail;
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
        status = atomic_load(&w->cancel) ? "stopped" : NULL;
    else
        status = res.outcome == HONE_TRUN_DONE && ctx.result ? "done" : "failed";
    worker_log(w, "job %s: %s %s, exit %d", id, action, status ? status : "abandoned",
               res.exit_code);
    /* Shutting down: the lease expires and another worker runs it again. */
    if (status) {
        json_decref(res.done);
        res.done = ctx.result ? json_incref(ctx.result) : NULL;
        worker_job_complete(w, id, status, &res);
    }
fail:
    hone_worker_argv_free(argv);
    json_decref(ctx.result);
    hone_trun_result_clear(&res);
    worker_set_job(w, NULL);
}
