/* job: the train runner: one leased train job on this worker. Writes the lease's flat spec (with
 * this worker's own data paths under --storage http) as the trainer's spec file, runs hone-train
 * on it (its argv: trainer_argv.c), relays each epoch line as a report (retrying while the
 * controller is away, so a restarted controller finds the job still reporting), obeys the reply,
 * and completes the job. A resumed job first reports the epochs its checkpoint holds past the
 * lease's acknowledged one (read by replay.c). */
#include "job.h"

#include "replay.h"
#include "storage.h"
#include "trainer_argv.h"
#include "uploads.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct job_ctx {
    hone_worker *w;
    const char *id;
    int lost;      /* the controller no longer knows this job as ours: stop it */
    int abandoned; /* a report could not be delivered while stopping: leave the lease to expire */
    int acked;     /* epochs up to this one are stored by the controller: not reported again */
    int next;      /* the epoch expected next from the trainer */
    int check_gap; /* resumed from our own checkpoint: the first epoch line must be `next` */
    int gap;       /* it was not: an epoch between is lost from the checkpoint's run */
    worker_ckpt_up *up; /* http storage: uploads each epoch's checkpoint, off the report path */
} job_ctx;

/* The report's metrics: the line's numeric members (the controller takes numbers only). */
static json_t *job_numeric_fields(const json_t *line)
{
    json_t *m = json_object(), *v;
    const char *k;

    json_object_foreach((json_t *)line, k, v)
    {
        if (json_is_number(v))
            json_object_set(m, k, v);
    }
    return m;
}

static hone_wdecision job_on_epoch(void *arg, int epoch, json_t *line)
{
    job_ctx *c = arg;
    hone_worker *w = c->w;
    json_t *body;
    hone_rest_resp resp;
    char id[128], path[256];
    hone_wdecision d = HONE_WDECISION_CONTINUE;

    if (c->check_gap) {
        c->check_gap = 0;
        if (epoch > c->next) {
            /* The checkpoint is ahead of every epoch line we have: the ones between were
             * trained but their metrics are gone. Stop; the job is run again from scratch. */
            worker_log(w, "job %s: trainer resumed at epoch %d but epoch %d was never reported",
                       c->id, epoch, c->next);
            c->gap = 1;
            return HONE_WDECISION_CONTINUE;
        }
    }
    if (epoch >= c->next)
        c->next = epoch + 1;
    if (epoch <= c->acked)
        return HONE_WDECISION_CONTINUE; /* stored already; its decision was obeyed then */
    body = json_object();
    worker_id_auth(w, w->rest, id, sizeof(id));
    json_object_set_new(body, "worker_id", json_string(id));
    json_object_set_new(body, "epoch", json_integer(epoch));
    json_object_set_new(body, "metrics", job_numeric_fields(line));
    if (json_is_array(json_object_get(line, "log")) &&
        json_array_size(json_object_get(line, "log")))
        json_object_set(body, "log", json_object_get(line, "log"));
    snprintf(path, sizeof(path), "/api/v1/jobs/%s/report", c->id);
    if (worker_post(w, path, body, 0, &resp) != 0) {
        json_decref(body);
        c->abandoned = 1;
        return HONE_WDECISION_CONTINUE; /* stopping: should_stop takes over */
    }
    json_decref(body);
    if (resp.status == 200) {
        c->acked = epoch;
        worker_ckpt_up_kick(c->up);
        d = hone_wdecision_parse(json_string_value(json_object_get(resp.json, "decision")));
        if (w->o->verbose || d != HONE_WDECISION_CONTINUE)
            worker_log(w, "job %s: epoch %d reported, decision %s", c->id, epoch,
                       d == HONE_WDECISION_STOP    ? "stop"
                       : d == HONE_WDECISION_PAUSE ? "pause"
                                                   : "continue");
    } else if (resp.status == 401 || resp.status == 403 || resp.status == 404 ||
               resp.status == 409 || resp.status == 410) {
        char msg[512];
        hone_rest_error_text(&resp, msg, sizeof(msg));
        worker_log(w, "job %s: controller refused the report (%s); stopping it", c->id, msg);
        c->lost = 1;
    } else {
        char msg[512];
        hone_rest_error_text(&resp, msg, sizeof(msg));
        worker_log(w, "job %s: report for epoch %d refused: %s", c->id, epoch, msg);
    }
    hone_rest_resp_clear(&resp);
    return d;
}

static int job_should_stop(void *arg)
{
    job_ctx *c = arg;
    return worker_stopping(c->w) || worker_canceled(c->w) || c->lost || c->gap;
}

/* Reports the epochs our own checkpoint holds beyond the last acknowledged one (the trainer
 * checkpointed them, but their reports never reached the controller: a worker that died in
 * between). Returns the decision to obey; c->lost or c->abandoned when the job is not to go on. */
static hone_wdecision job_replay(job_ctx *c, const char *out_dir, int upto, int *last)
{
    json_t *lines = hone_worker_unreported_epochs(out_dir, c->acked, upto), *line;
    hone_wdecision d = HONE_WDECISION_CONTINUE;
    size_t i;

    *last = 0;
    if (json_array_size(lines) > 0)
        worker_log(c->w,
                   "job %s: replaying epoch(s) %d..%d from metrics.jsonl (checkpointed, "
                   "never acknowledged)",
                   c->id, c->acked + 1, c->acked + (int)json_array_size(lines));
    json_array_foreach(lines, i, line)
    {
        int epoch = (int)json_integer_value(json_object_get(line, "epoch"));
        d = job_on_epoch(c, epoch, line);
        *last = epoch;
        if (d != HONE_WDECISION_CONTINUE || c->lost || c->abandoned || job_should_stop(c))
            break;
    }
    json_decref(lines);
    return d;
}

/* Runs the trainer for the lease; when it resumed past an epoch nobody reported (see
 * job_on_epoch), runs it once more from scratch, the stored epochs going unreported. */
static int job_run_trainer(hone_worker *w, job_ctx *ctx, const json_t *job, const char *spec_path,
                           const char *out_dir, hone_trun_result *res)
{
    const json_t *eu = json_object_get(job, "epochs_until");
    hone_trun_hooks hooks = {.on_epoch = job_on_epoch, .should_stop = job_should_stop, .arg = ctx};
    hone_trun_opts topts = {0};
    json_t *fresh = NULL;
    int rc;

    topts.grace_s = w->o->grace_s;
    if (w->resident || w->sock) { /* a resident trainer says it is alive every 2 s in a job */
        pthread_mutex_lock(&w->mu);
        topts.silence_s = w->heartbeat_s * 3 > 10 ? w->heartbeat_s * 3 : 10;
        pthread_mutex_unlock(&w->mu);
    }
    topts.last_epoch = json_is_integer(eu) ? (int)json_integer_value(eu) : 0;
    for (;;) {
        const json_t *lease = fresh ? fresh : job;
        char **argv = hone_worker_trainer_argv(w->o, w->trainer, lease, spec_path, out_dir);
        worker_log(w, "job %s: starting %s (epochs until %lld%s)", ctx->id, w->trainer,
                   json_is_integer(eu) ? (long long)json_integer_value(eu) : 0LL,
                   json_is_true(json_object_get(lease, "resume")) ? ", resumed" : "");
        if (w->sock) {
            int started = hone_trun_sock_started(w->sock);
            rc = hone_trun_run_socket(w->sock, argv, &topts, &hooks, res);
            if (hone_trun_sock_started(w->sock) > started)
                worker_log(w, "job %s: started the trainer server at %s", ctx->id,
                           w->o->trainer_socket);
            if (hone_trun_sock_pid(w->sock) > 0)
                worker_log(w, "job %s: ran on the trainer server pid %d", ctx->id,
                           hone_trun_sock_pid(w->sock));
        } else {
            rc = w->resident ? hone_trun_run_resident(&w->server, argv, &topts, &hooks, res)
                             : hone_trun_run(argv, &topts, &hooks, res);
        }
        hone_worker_argv_free(argv);
        if (!ctx->gap || fresh)
            break;
        ctx->gap = 0;
        if (job_should_stop(ctx))
            break; /* stopping or canceled as well: handled as any abort */
        worker_log(w,
                   "job %s: running it again from epoch 1; epochs up to %d are not reported "
                   "again",
                   ctx->id, ctx->acked);
        hone_trun_result_clear(res);
        fresh = json_deep_copy(job);
        json_object_set_new(fresh, "resume", json_false());
    }
    json_decref(fresh);
    return rc;
}

/* An input (the dataset, a parent's model) could not be had: the job fails with msg as its log
 * tail, or, while the worker shuts down, is handed back and queued again at once. */
static void input_failed(hone_worker *w, const char *id, hone_trun_result *res, const char *msg)
{
    if (worker_stopping(w)) {
        worker_set_job(w, NULL);
        worker_job_complete(w, id, "released", res);
        return;
    }
    res->log_tail = hone_xstrdup(msg);
    worker_log(w, "job %s: %s", id, msg);
    worker_job_complete(w, id, "failed", res);
}

void worker_train_run(hone_worker *w, hone_kind kind, const json_t *job)
{
    const char *id = json_string_value(json_object_get(job, "id"));
    const char *out = json_string_value(json_object_get(job, "out_dir"));
    const char *ck = json_string_value(json_object_get(job, "checkpoint"));
    const json_t *eu = json_object_get(job, "epochs_until");
    const json_t *ep = json_object_get(job, "epoch");
    char out_dir[4096 + 256], spec_path[4096 + 400], specs_dir[4096 + 16];
    job_ctx ctx = {0};
    hone_trun_result res = {0};
    json_t *local = NULL; /* http storage: the lease with our own paths */
    json_t *spec = NULL;  /* the lease's flat spec, with this worker's own data paths */
    const char *status;
    int rc;

    (void)kind;
    if (!id) {
        worker_log(w, "lease without a job id; ignored");
        return;
    }
    worker_set_job(w, id);
    if (out && out[0] && !w->http_storage)
        snprintf(out_dir, sizeof(out_dir), "%s", out);
    else
        snprintf(out_dir, sizeof(out_dir), "%s/jobs/%s", w->work_dir, id);
    snprintf(specs_dir, sizeof(specs_dir), "%s/specs", w->work_dir);
    snprintf(spec_path, sizeof(spec_path), "%s/%s.json", specs_dir, id);
    if (worker_mkdirs(out_dir, 0) != 0 || worker_mkdirs(specs_dir, 0) != 0) {
        char msg[9400];
        snprintf(msg, sizeof(msg), "hone-worker: cannot make %s or %s: %s", specs_dir, out_dir,
                 strerror(errno));
        res.log_tail = hone_xstrdup(msg);
        worker_log(w, "job %s: %s", id, msg);
        worker_job_complete(w, id, "failed", &res);
        goto fail;
    }
    if (!json_is_object(json_object_get(job, "spec"))) {
        res.log_tail = hone_xstrdup("hone-worker: bad lease: no spec object");
        worker_log(w, "job %s: %s", id, res.log_tail);
        worker_job_complete(w, id, "failed", &res);
        goto fail;
    }
    spec = json_deep_copy(json_object_get(job, "spec"));
    if (w->http_storage) {
        /* Nothing of the controller's disk is read or written: the dataset comes into the
         * cache (its data.path and data.packed, in the spec, are ours), an uploaded checkpoint
         * into our own out folder. */
        char msg[1024];
        local = json_deep_copy(job);
        if (worker_fetch_dataset(w, job, spec, msg, sizeof msg)) {
            input_failed(w, id, &res, msg);
            goto fail;
        }
        if (json_is_true(json_object_get(job, "resume"))) {
            char have[4096 + 300];
            snprintf(have, sizeof have, "%s/checkpoint.bin", out_dir);
            if (access(have, R_OK) != 0 && worker_fetch_checkpoint(w, id, out_dir) == HONE_ENOENT)
                json_object_set_new(local, "resume", json_false());
            json_object_set_new(local, "checkpoint", json_string(out_dir));
            ck = out_dir;
        }
        job = local;
        ctx.up = worker_ckpt_up_start(w, id, out_dir);
    }
    /* Fine-tuning: the parent's model, where the controller says it is (shared disk) or
     * downloaded into the cache (http storage); hone-train starts from it unless it resumes. */
    const json_t *pre = json_object_get(job, "pretrained");
    if (json_is_object(pre)) {
        char msg[4096 + 512], model[4096 + 64];
        const char *pdir = json_string_value(json_object_get(pre, "dir"));
        const char *pid = json_string_value(json_object_get(pre, "job_id"));
        int prc = HONE_OK;
        if (w->http_storage) {
            snprintf(model, sizeof model, "%s/parents/%s", w->work_dir, id);
            prc = pid ? worker_fetch_model(w, id, pid,
                                           json_string_value(json_object_get(pre, "subdir")), model,
                                           msg, sizeof msg)
                      : HONE_EINVAL;
            pdir = model;
        }
        if (prc == HONE_OK && (!pdir || !pdir[0])) {
            snprintf(msg, sizeof msg, "hone-worker: bad lease: pretrained without a folder");
            prc = HONE_EINVAL;
        }
        if (prc != HONE_OK) {
            input_failed(w, id, &res, msg);
            goto fail;
        }
        if (!local)
            local = json_deep_copy(job);
        json_object_set_new(local, "pretrained_dir", json_string(pdir));
        job = local;
    }
    /* The trainer's spec file: the flat dotted JSON object, as the controller stored it. */
    if (json_dump_file(spec, spec_path, JSON_COMPACT) != 0) {
        char msg[4600];
        snprintf(msg, sizeof(msg), "hone-worker: cannot write %s: %s", spec_path, strerror(errno));
        res.log_tail = hone_xstrdup(msg);
        worker_log(w, "job %s: %s", id, msg);
        worker_job_complete(w, id, "failed", &res);
        goto fail;
    }
    ctx.w = w;
    ctx.id = id;
    /* The lease's epoch is the last one the controller stored: later ones are reported. */
    ctx.acked = json_is_integer(ep) && json_integer_value(ep) > 0 ? (int)json_integer_value(ep) : 0;
    ctx.next = ctx.acked + 1;
    if (json_is_true(json_object_get(job, "resume")) &&
        (!ck || !ck[0] || strcmp(ck, out_dir) == 0)) {
        /* Resuming from our own checkpoint, which may hold epochs never acknowledged: report
         * them from metrics.jsonl first and obey the answers, as if the trainer had sent them. */
        int last;
        hone_wdecision d =
            job_replay(&ctx, out_dir, json_is_integer(eu) ? (int)json_integer_value(eu) : 0, &last);
        if (ctx.lost || ctx.abandoned || job_should_stop(&ctx)) {
            worker_log(w, "job %s: %s while replaying epochs", id,
                       ctx.lost             ? "lost"
                       : worker_canceled(w) ? "canceled"
                                            : "abandoned");
            if (worker_canceled(w) && !ctx.lost)
                worker_job_complete(w, id, "stopped", &res);
            goto fail;
        }
        if (d != HONE_WDECISION_CONTINUE) {
            char msg[256];
            status = d == HONE_WDECISION_STOP ? "stopped" : "paused";
            snprintf(msg, sizeof(msg),
                     "hone-worker: epoch %d (replayed from metrics.jsonl) was answered %s; the "
                     "trainer was not started",
                     last, d == HONE_WDECISION_STOP ? "stop" : "pause");
            res.log_tail = hone_xstrdup(msg);
            worker_log(w, "job %s: %s after replaying epoch %d", id, status, last);
            worker_job_complete(w, id, status, &res);
            goto fail;
        }
        ctx.check_gap = 1;
    }
    rc = job_run_trainer(w, &ctx, job, spec_path, out_dir, &res);
    if (rc != 0)
        worker_log(w, "job %s: trainer did not start: %s", id, res.log_tail);
    switch (res.outcome) {
    case HONE_TRUN_DONE:
        status = "done";
        break;
    case HONE_TRUN_STOPPED:
        status = "stopped";
        break;
    case HONE_TRUN_PAUSED:
        status = "paused";
        break;
    case HONE_TRUN_ABORTED:
        /* Canceled: the controller already knows. Shutting down: hand the lease back (below)
         * so the controller requeues the job from its last checkpoint at once; if that cannot
         * be said, the lease lapses to the same end. Lost: not ours anymore. */
        status = NULL;
        break;
    default:
        status = "failed";
        break;
    }
    worker_log(w, "job %s: %s after %d epoch line(s), exit %d", id,
               status ? status : (worker_canceled(w) ? "canceled" : "abandoned"), res.epochs_seen,
               res.exit_code);
    if (ctx.up) {
        /* The outputs reach the controller before the job is completed (a done job's model,
         * a paused one's checkpoint); a worker shutting down leaves its last checkpoint there
         * for whoever gets the job next. Not for a job that is no longer ours. */
        worker_ckpt_up_stop(ctx.up);
        ctx.up = NULL;
        if (!ctx.lost && !worker_canceled(w) && worker_upload_outputs(w, id, out_dir) == HONE_EPERM)
            ctx.lost = 1;
    }
    if (status)
        worker_job_complete(w, id, status, &res);
    else if (worker_canceled(w) && !ctx.lost)
        worker_job_complete(w, id, "stopped", &res);
    else if (worker_stopping(w) && !ctx.lost && !ctx.abandoned)
        worker_job_complete(w, id, "released", &res);
fail:
    worker_ckpt_up_stop(ctx.up);
    if (local)
        worker_drop_dataset(w, id);
    if (w->http_storage)
        worker_drop_parent(w, id);
    json_decref(local);
    json_decref(spec);
    hone_trun_result_clear(&res);
    worker_set_job(w, NULL);
}
