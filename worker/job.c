/* job: one leased job on this worker. Writes the resolved spec, runs hone-train with the lease's
 * overrides, relays each epoch line as a report (retrying while the controller is away, so a
 * restarted controller finds the job still reporting), obeys the reply, and completes the job. */
#include "worker_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct job_ctx {
    hone_worker *w;
    const char *id;
    int lost; /* the controller no longer knows this job as ours: stop it */
} job_ctx;

static char *job_value_text(const json_t *v)
{
    char buf[64];

    if (json_is_string(v))
        return hone_xstrdup(json_string_value(v));
    if (json_is_integer(v)) {
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
        return hone_xstrdup(buf);
    }
    if (json_is_real(v)) {
        snprintf(buf, sizeof(buf), "%.17g", json_real_value(v));
        return hone_xstrdup(buf);
    }
    if (json_is_true(v))
        return hone_xstrdup("true");
    if (json_is_false(v))
        return hone_xstrdup("false");
    if (json_is_null(v))
        return hone_xstrdup("null");
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

static void job_argv_push(char ***argv, size_t *n, size_t *cap, char *s)
{
    if (*n + 2 > *cap) {
        *cap = *cap ? *cap * 2 : 32;
        *argv = hone_xrealloc(*argv, *cap * sizeof(char *));
    }
    (*argv)[(*n)++] = s;
    (*argv)[*n] = NULL;
}

char **hone_worker_trainer_argv(const hone_worker_opts *o, const char *trainer, const json_t *job,
                                const char *spec_path, const char *out_dir)
{
    char **argv = NULL;
    size_t n = 0, cap = 0;
    const json_t *ov = json_object_get(job, "overrides");
    const json_t *eu = json_object_get(job, "epochs_until");
    const char *key;
    json_t *v;
    char buf[64];

    job_argv_push(&argv, &n, &cap, hone_xstrdup(trainer));
    job_argv_push(&argv, &n, &cap, hone_xstrdup("--spec"));
    job_argv_push(&argv, &n, &cap, hone_xstrdup(spec_path));
    json_object_foreach((json_t *)ov, key, v)
    {
        char *text = job_value_text(v);
        size_t len = strlen(key) + strlen(text) + 2;
        char *kv = hone_xmalloc(len);
        snprintf(kv, len, "%s=%s", key, text);
        free(text);
        job_argv_push(&argv, &n, &cap, hone_xstrdup("--set"));
        job_argv_push(&argv, &n, &cap, kv);
    }
    if (json_is_integer(eu) && json_integer_value(eu) > 0) {
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(eu));
        job_argv_push(&argv, &n, &cap, hone_xstrdup("--epochs-until"));
        job_argv_push(&argv, &n, &cap, hone_xstrdup(buf));
    }
    if (json_is_true(json_object_get(job, "resume"))) {
        /* The lease names a checkpoint file, or the folder holding it (then it is that folder's
         * checkpoint.bin); the job's own out folder, or none, is hone-train's "auto". */
        const char *ck = json_string_value(json_object_get(job, "checkpoint"));
        size_t len = ck ? strlen(ck) : 0;
        char *arg;
        if (!ck || !ck[0] || strcmp(ck, out_dir) == 0) {
            arg = hone_xstrdup("auto");
        } else if (len > 4 && strcmp(ck + len - 4, ".bin") == 0) {
            arg = hone_xstrdup(ck);
        } else {
            arg = hone_xmalloc(len + 20);
            snprintf(arg, len + 20, "%s/checkpoint.bin", ck);
        }
        job_argv_push(&argv, &n, &cap, hone_xstrdup("--resume"));
        job_argv_push(&argv, &n, &cap, arg);
    }
    job_argv_push(&argv, &n, &cap, hone_xstrdup("--out"));
    job_argv_push(&argv, &n, &cap, hone_xstrdup(out_dir));
    if (o->device && o->device[0]) {
        job_argv_push(&argv, &n, &cap, hone_xstrdup("--device"));
        job_argv_push(&argv, &n, &cap, hone_xstrdup(o->device));
    }
    if (o->threads > 0) {
        snprintf(buf, sizeof(buf), "%d", o->threads);
        job_argv_push(&argv, &n, &cap, hone_xstrdup("--threads"));
        job_argv_push(&argv, &n, &cap, hone_xstrdup(buf));
    }
    return argv;
}

void hone_worker_argv_free(char **argv)
{
    if (!argv)
        return;
    for (char **p = argv; *p; p++)
        free(*p);
    free(argv);
}

static int job_mkdirs(const char *path)
{
    char tmp[4096];
    size_t n = strlen(path);

    if (n == 0 || n >= sizeof(tmp))
        return HONE_EINVAL;
    memcpy(tmp, path, n + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return HONE_EIO;
            *p = '/';
        }
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return HONE_EIO;
    return HONE_OK;
}

static int job_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    size_t n = strlen(text);

    if (!f)
        return HONE_EIO;
    if (fwrite(text, 1, n, f) != n) {
        fclose(f);
        return HONE_EIO;
    }
    return fclose(f) == 0 ? HONE_OK : HONE_EIO;
}

/* POSTs body to path until an HTTP answer comes, backing off while the controller is away.
 * Gives up (HONE_EIO) only when the worker is stopping and `patient` is 0. */
static int job_post(hone_worker *w, const char *path, json_t *body, int patient,
                    hone_rest_resp *resp)
{
    int delay = 0, warned = 0, tries = 0;
    char err[512];

    for (;;) {
        if (hone_rest_call(w->rest, "POST", path, body, 30, resp, err, sizeof(err)) == 0) {
            if (resp->status < 500 || resp->status == 501)
                return HONE_OK;
            hone_rest_resp_clear(resp);
        }
        if (!warned++)
            worker_log(w, "%s: controller unreachable (%s); retrying", path, err);
        if (*w->stop && !patient)
            return HONE_EIO;
        /* While stopping, try a few more times without the abort flag, then give up: the
         * lease will expire and the controller requeues the job from its checkpoint. */
        if (*w->stop) {
            if (++tries > 5)
                return HONE_EIO;
            hone_rest_set_abort(w->rest, NULL);
            usleep(500000);
            hone_rest_set_abort(w->rest, w->stop);
            continue;
        }
        worker_sleep(w, worker_backoff(w, &delay));
    }
}

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
    json_t *body = json_object();
    hone_rest_resp resp;
    char id[128], path[256];
    hone_wdecision d = HONE_WDECISION_CONTINUE;

    worker_id(w, id, sizeof(id));
    json_object_set_new(body, "worker_id", json_string(id));
    json_object_set_new(body, "epoch", json_integer(epoch));
    json_object_set_new(body, "metrics", job_numeric_fields(line));
    snprintf(path, sizeof(path), "/api/v1/jobs/%s/report", c->id);
    if (job_post(w, path, body, 0, &resp) != 0) {
        json_decref(body);
        return HONE_WDECISION_CONTINUE; /* stopping: should_stop takes over */
    }
    json_decref(body);
    if (resp.status == 200) {
        d = hone_wdecision_parse(json_string_value(json_object_get(resp.json, "decision")));
        if (w->o->verbose || d != HONE_WDECISION_CONTINUE)
            worker_log(w, "job %s: epoch %d reported, decision %s", c->id, epoch,
                       d == HONE_WDECISION_STOP    ? "stop"
                       : d == HONE_WDECISION_PAUSE ? "pause"
                                                   : "continue");
    } else if (resp.status == 404 || resp.status == 409 || resp.status == 410) {
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
    return *c->w->stop || atomic_load(&c->w->cancel) || c->lost;
}

static void job_complete(hone_worker *w, const char *job_id, const char *status,
                         const hone_trun_result *res)
{
    json_t *body = json_object();
    hone_rest_resp resp;
    char id[128], path[256];

    worker_id(w, id, sizeof(id));
    json_object_set_new(body, "worker_id", json_string(id));
    json_object_set_new(body, "status", json_string(status));
    json_object_set_new(body, "log_tail", json_string(res->log_tail ? res->log_tail : ""));
    if (res->done)
        json_object_set(body, "final", res->done);
    snprintf(path, sizeof(path), "/api/v1/jobs/%s/complete", job_id);
    if (job_post(w, path, body, 1, &resp) == 0) {
        if (resp.status != 200 && resp.status != 204) {
            char msg[512];
            hone_rest_error_text(&resp, msg, sizeof(msg));
            worker_log(w, "job %s: complete refused: %s", job_id, msg);
        }
        hone_rest_resp_clear(&resp);
    }
    json_decref(body);
}

static void job_set_current(hone_worker *w, const char *id)
{
    pthread_mutex_lock(&w->mu);
    snprintf(w->job_id, sizeof(w->job_id), "%s", id ? id : "");
    pthread_mutex_unlock(&w->mu);
    atomic_store(&w->cancel, 0);
}

void worker_job_run(hone_worker *w, const json_t *job)
{
    const char *id = json_string_value(json_object_get(job, "id"));
    const char *spec = json_string_value(json_object_get(job, "spec_yaml"));
    const char *out = json_string_value(json_object_get(job, "out_dir"));
    const json_t *eu = json_object_get(job, "epochs_until");
    char out_dir[4096 + 256], spec_path[4096 + 400], specs_dir[4096 + 16];
    job_ctx ctx = {0};
    hone_trun_hooks hooks = {0};
    hone_trun_opts topts = {0};
    hone_trun_result res = {0};
    char **argv = NULL;
    const char *status;
    int rc;

    if (!id) {
        worker_log(w, "lease without a job id; ignored");
        return;
    }
    job_set_current(w, id);
    if (out && out[0])
        snprintf(out_dir, sizeof(out_dir), "%s", out);
    else
        snprintf(out_dir, sizeof(out_dir), "%s/jobs/%s", w->work_dir, id);
    snprintf(specs_dir, sizeof(specs_dir), "%s/specs", w->work_dir);
    snprintf(spec_path, sizeof(spec_path), "%s/%s.yaml", specs_dir, id);
    if (job_mkdirs(out_dir) != 0 || job_mkdirs(specs_dir) != 0 ||
        job_write_file(spec_path, spec ? spec : "") != 0) {
        char msg[9400];
        snprintf(msg, sizeof(msg), "hone-worker: cannot write %s or %s: %s", spec_path, out_dir,
                 strerror(errno));
        res.log_tail = hone_xstrdup(msg);
        worker_log(w, "job %s: %s", id, msg);
        job_complete(w, id, "failed", &res);
        goto out;
    }
    argv = hone_worker_trainer_argv(w->o, w->trainer, job, spec_path, out_dir);
    worker_log(w, "job %s: starting %s (epochs until %lld%s)", id, w->trainer,
               json_is_integer(eu) ? (long long)json_integer_value(eu) : 0LL,
               json_is_true(json_object_get(job, "resume")) ? ", resumed" : "");
    ctx.w = w;
    ctx.id = id;
    hooks.on_epoch = job_on_epoch;
    hooks.should_stop = job_should_stop;
    hooks.arg = &ctx;
    topts.grace_s = w->o->grace_s;
    topts.last_epoch = json_is_integer(eu) ? (int)json_integer_value(eu) : 0;
    rc = hone_trun_run(argv, &topts, &hooks, &res);
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
        /* Canceled: the controller already knows. Shutting down: leave the lease to expire so
         * the controller requeues the job from its last checkpoint. Lost: not ours anymore. */
        status = NULL;
        break;
    default:
        status = "failed";
        break;
    }
    worker_log(w, "job %s: %s after %d epoch line(s), exit %d", id,
               status ? status : (atomic_load(&w->cancel) ? "canceled" : "abandoned"),
               res.epochs_seen, res.exit_code);
    if (status)
        job_complete(w, id, status, &res);
    else if (atomic_load(&w->cancel) && !ctx.lost)
        job_complete(w, id, "stopped", &res);
out:
    hone_worker_argv_free(argv);
    hone_trun_result_clear(&res);
    job_set_current(w, NULL);
}
