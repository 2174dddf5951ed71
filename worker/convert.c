/* convert: one leased convert job on this worker. Runs hone-pack --json on the dataset's folder
 * (--kitti with the lease's class map for a KITTI set, --coco for a COCO set) into the lease's
 * packed file (hone-pack writes a temp file and renames it, so the file at its name is whole even
 * when this worker dies mid-way), relays progress lines as reports (the first at once, then at most
 * one a second), stops on cancel, and completes the job with hone-pack's final line. A worker told
 * to shut down stops hone-pack, removes its partial output and hands the lease back (status
 * `released`). With
 * --storage http the folder is downloaded first and the packed file uploaded to the controller once
 * whole. */
#include "convert.h"

#include "storage.h"
#include "uploads.h"

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CONVERT_REPORT_EVERY_S 1.0

typedef struct convert_ctx {
    hone_worker *w;
    const char *id;
    int seq;       /* reports sent (the report's "epoch"; 1 for the first) */
    double last;   /* monotonic time of the last report */
    int stop;      /* the controller answered stop (a cancel) */
    int lost;      /* the controller no longer knows this job as ours */
    int abandoned; /* a report could not be delivered while stopping */
} convert_ctx;

/* A worker killed mid-pack leaves hone-pack's temp file (<out>.tmp-XXXXXX, data/pack.c) beside
 * the target. This worker now holds the job's only lease, so no live packer writes those: they
 * are removed before packing again. */
static void convert_sweep_temps(hone_worker *w, const char *out)
{
    size_t n = strlen(out) + 16;
    char *pat = hone_xmalloc(n);
    snprintf(pat, n, "%s.tmp-??????", out);
    glob_t g;
    if (glob(pat, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++)
            if (unlink(g.gl_pathv[i]) == 0)
                worker_log(w, "removed %s, left by a packer that died", g.gl_pathv[i]);
        globfree(&g);
    }
    free(pat);
}

/* Shutting down: completes the job as `released` (the controller queues it again at once). */
static void convert_release(hone_worker *w, const char *id, hone_trun_result *res, const char *what)
{
    char msg[256];
    snprintf(msg, sizeof msg, "hone-worker: shutting down; %s was stopped and the job handed back",
             what);
    if (!res->log_tail)
        res->log_tail = hone_xstrdup(msg);
    worker_log(w, "job %s: %s", id, msg + strlen("hone-worker: "));
    worker_set_job(w, NULL); /* no heartbeat after this takes the queued job back */
    worker_job_complete(w, id, "released", res);
}

static void convert_report(convert_ctx *c, const json_t *line)
{
    static const char *const keys[] = {"images_done", "images_total", "images_per_second",
                                       "seconds"};
    hone_worker *w = c->w;
    json_t *body = json_object(), *m = json_object();
    hone_rest_resp resp;
    char id[128], path[256];

    for (size_t i = 0; i < HONE_ARRAY_LEN(keys); i++) {
        json_t *v = json_object_get(line, keys[i]);
        if (json_is_number(v))
            json_object_set(m, keys[i], v);
    }
    worker_id_auth(w, w->rest, id, sizeof(id));
    json_object_set_new(body, "worker_id", json_string(id));
    json_object_set_new(body, "epoch", json_integer(++c->seq));
    json_object_set_new(body, "metrics", m);
    snprintf(path, sizeof(path), "/api/v1/jobs/%s/report", c->id);
    c->last = hone_now();
    if (worker_post(w, path, body, 0, &resp) != 0) {
        json_decref(body);
        c->abandoned = 1;
        return;
    }
    json_decref(body);
    if (resp.status == 200) {
        if (hone_wdecision_parse(json_string_value(json_object_get(resp.json, "decision"))) !=
            HONE_WDECISION_CONTINUE) {
            worker_log(w, "job %s: convert answered stop", c->id);
            c->stop = 1;
        }
    } else {
        char msg[512];
        hone_rest_error_text(&resp, msg, sizeof(msg));
        worker_log(w, "job %s: progress report refused: %s", c->id, msg);
        if (resp.status == 401 || resp.status == 403 || resp.status == 404 || resp.status == 409 ||
            resp.status == 410)
            c->lost = 1;
    }
    hone_rest_resp_clear(&resp);
}

static void convert_on_event(void *arg, json_t *line)
{
    convert_ctx *c = arg;
    const char *ev = json_string_value(json_object_get(line, "event"));
    /* Stopping: no more progress (the lines already read would each be a report; the release
     * says all that is left to say). */
    if (!ev || strcmp(ev, "progress") != 0 || c->stop || c->lost || c->abandoned ||
        worker_stopping(c->w))
        return;
    if (c->seq > 0 && hone_now() - c->last < CONVERT_REPORT_EVERY_S)
        return;
    convert_report(c, line);
}

static int convert_should_stop(void *arg)
{
    convert_ctx *c = arg;
    return worker_stopping(c->w) || worker_canceled(c->w) || c->stop || c->lost || c->abandoned;
}

void worker_convert_run(hone_worker *w, hone_kind kind, const json_t *job)
{
    const char *id = json_string_value(json_object_get(job, "id"));
    const char *src = json_string_value(json_object_get(job, "dataset_path"));
    const char *out = json_string_value(json_object_get(job, "out_path"));
    json_int_t size = json_integer_value(json_object_get(job, "input_size"));
    json_int_t ch = json_integer_value(json_object_get(job, "channels"));
    convert_ctx ctx = {.w = w, .id = id};
    hone_trun_hooks hooks = {
        .on_event = convert_on_event, .should_stop = convert_should_stop, .arg = &ctx};
    /* hone-pack dies at SIGTERM; SIGKILL comes at half the grace, leaving the rest of it for
     * handing the lease back. */
    hone_trun_opts topts = {.grace_s = w->o->grace_s / 2};
    hone_trun_result res = {0};
    char sz[64], th[32], local_out[4096 + 512];
    const char *status;
    json_t *sets = NULL; /* http storage: where the downloaded folder is */
    char **argv = NULL;

    (void)kind; /* the table's row: HONE_KIND_CONVERT */
    worker_set_job(w, id);
    if (w->http_storage && out && out[0]) {
        /* The folder comes over HTTP into the cache; the packed file is written here and
         * uploaded to the controller once whole. */
        char msg[1024];
        const char *base = strrchr(out, '/') ? strrchr(out, '/') + 1 : out;
        sets = json_object();
        if (worker_fetch_dataset(w, job, sets, msg, sizeof msg)) {
            if (worker_stopping(w)) {
                convert_release(w, id, &res, "the download of the folder");
                goto fail;
            }
            res.log_tail = hone_xstrdup(msg);
            worker_log(w, "job %s: %s", id, msg);
            worker_job_complete(w, id, "failed", &res);
            goto fail;
        }
        src = json_string_value(json_object_get(sets, "data.path"));
        snprintf(local_out, sizeof local_out, "%s/jobs/%s/%s", w->work_dir, id, base);
        out = local_out;
    }
    if (!src || !src[0] || !out || !out[0] || size < 1 || (ch != 1 && ch != 3) ||
        worker_mkdirs(out, 1) != 0) {
        char msg[4400 + 512];
        snprintf(msg, sizeof(msg),
                 "hone-worker: bad convert lease or cannot create the folder of %s: %s",
                 out ? out : "(none)", strerror(errno));
        res.log_tail = hone_xstrdup(msg);
        worker_log(w, "job %s: %s", id, msg);
        worker_job_complete(w, id, "failed", &res);
        goto fail;
    }
    convert_sweep_temps(w, out);
    snprintf(sz, sizeof(sz), "%lldx%lld", (long long)size, (long long)size);
    snprintf(th, sizeof(th), "%d", w->o->threads > 0 ? w->o->threads : 0);
    /* A KITTI set: --kitti, and its class map one --class at a time (names may hold commas) */
    const char *fmt = json_string_value(json_object_get(job, "format"));
    int kitti = fmt && !strcmp(fmt, "kitti"), coco = fmt && !strcmp(fmt, "coco");
    json_t *classes = json_object_get(job, "classes");
    size_t ncl = kitti ? json_array_size(classes) : 0, na = 0;
    argv = hone_xcalloc(12 + 2 * ncl, sizeof *argv);
    char *fixed[] = {
        w->packer,   "--json", (char *)src, (char *)out, "--size", sz, ch == 1 ? "--grey" : "--rgb",
        "--threads", th};
    for (size_t i = 0; i < HONE_ARRAY_LEN(fixed); i++)
        argv[na++] = fixed[i];
    if (kitti)
        argv[na++] = "--kitti";
    if (coco) /* a COCO set: its classes are its categories, numbered by id */
        argv[na++] = "--coco";
    for (size_t i = 0; i < ncl; i++) {
        const char *name = json_string_value(json_array_get(classes, i));
        if (name) {
            argv[na++] = "--class";
            argv[na++] = (char *)name;
        }
    }
    worker_log(w, "job %s: %s %s%s -> %s at %s, %lld channel(s)", id, w->packer,
               kitti  ? "KITTI set "
               : coco ? "COCO set "
                      : "",
               src, out, sz, (long long)ch);
    if (hone_trun_run(argv, &topts, &hooks, &res) != 0)
        worker_log(w, "job %s: hone-pack did not start: %s", id, res.log_tail);
    if (res.outcome == HONE_TRUN_ABORTED)
        status = ctx.stop || worker_canceled(w) ? "stopped" : NULL;
    else
        status = res.outcome == HONE_TRUN_DONE ? "done" : "failed";
    if (sets && status && !strcmp(status, "done") && !ctx.lost &&
        worker_upload_packed(w, id, json_string_value(json_object_get(job, "dataset_id")), out)) {
        free(res.log_tail);
        res.log_tail = hone_xstrdup("hone-worker: the packed file could not be uploaded");
        status = worker_stopping(w) ? NULL : "failed";
    }
    if (!status && !ctx.lost) {
        /* Killed mid-pack, hone-pack left its temp file; with http storage a whole file that
         * never reached the controller is ours alone. Neither is of use to the next worker.
         * (Still our lease: no other packer writes beside that file.) */
        convert_sweep_temps(w, out);
        if (sets)
            unlink(out);
    }
    worker_log(w, "job %s: convert %s after %d report(s), exit %d", id,
               status               ? status
               : worker_stopping(w) ? "stopped (shutting down)"
                                    : "abandoned",
               ctx.seq, res.exit_code);
    /* Lost: not ours anymore. Shutting down: the lease is handed back (queued again at once, a
     * later worker packs from the start); if that cannot be said, it lapses to the same end. */
    if (status && !ctx.lost)
        worker_job_complete(w, id, status, &res);
    else if (!status && worker_stopping(w) && !ctx.lost && !ctx.abandoned)
        convert_release(w, id, &res, "hone-pack");
fail:
    free(argv);
    if (sets)
        worker_drop_dataset(w, id);
    json_decref(sets);
    hone_trun_result_clear(&res);
    worker_set_job(w, NULL);
}
