/* cmd_job: `hone job list|curves|logs|cancel|pause|resume|artifacts|download|wait` and `hone
 * worker list`, plus the live progress line shared with `hone demo` (`job status` and `job trials`:
 * job_status.c; `job metrics`: job_metrics.c). */
#define _GNU_SOURCE /* fopencookie: the SSE reader of job logs --follow */
#include "cli.h"
#include "wire.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void job_path(const char *id, const char *suffix, char *buf, size_t len)
{
    char *e = hone_rest_escape(id);
    snprintf(buf, len, "/api/v1/jobs/%s%s", e, suffix);
    free(e);
}

static int job_list(cli_ctx *c)
{
    static const char *const h[] = {"ID",     "ACTION", "STATUS",     "TRIAL", "EPOCH",
                                    "TARGET", "BEST",   "EARLY STOP", "PARENT"};
    static const char *const k[] = {"id",
                                    "action",
                                    "status",
                                    "trial",
                                    "epoch",
                                    "epochs_target",
                                    "result.best_metric",
                                    "stopped_early",
                                    "parent_id"};
    static const char *const filters[] = {"experiment", "status", "parent", "limit"};
    char path[1024] = "/api/v1/jobs";
    size_t n = strlen(path);
    char sep = '?';

    for (size_t i = 0; i < HONE_ARRAY_LEN(filters); i++) {
        const char *v = cli_arg(c->a, filters[i]);
        if (v) {
            char *e = hone_rest_escape(v);
            n += (size_t)snprintf(path + n, sizeof(path) - n, "%c%s=%s", sep, filters[i], e);
            sep = '&';
            free(e);
        }
    }
    return cli_get_list(c, path, "jobs", h, k, 9);
}

const char *cli_job_metric(const json_t *job)
{
    const char *m = json_string_value(json_object_get(job, "metric"));
    const json_t *last = cli_path_get(job, "result.last");
    if (!m)
        m = json_string_value(cli_path_get(job, "automl.metric"));
    if (m && strcmp(m, "kpi") != 0)
        return m;
    /* not told: the metric the trainer reports that an experiment optimises by default */
    return json_object_get(last, "val_map") ? "val_map" : "val_accuracy";
}

void cli_job_experiment_metric(cli_ctx *c, const json_t *job, char *buf, size_t len)
{
    const char *eid = json_string_value(json_object_get(job, "experiment_id"));
    hone_rest_resp r;
    char path[512], err[256];
    buf[0] = '\0';
    if (!eid)
        return;
    char *e = hone_rest_escape(eid);
    snprintf(path, sizeof path, "/api/v1/experiments/%s", e);
    free(e);
    if (hone_rest_call(c->rest, "GET", path, NULL, 30, &r, err, sizeof err) != 0)
        return;
    const char *m = r.status == 200 ? json_string_value(json_object_get(r.json, "metric")) : NULL;
    if (m && !cli_needs_escape(m))
        snprintf(buf, len, "%s", m);
    hone_rest_resp_clear(&r);
}

void cli_job_progress(const json_t *job, double elapsed, char *buf, size_t len)
{
    const json_t *a = json_object_get(job, "automl");
    const char *st = json_string_value(json_object_get(job, "status"));
    char el[32], eta[32];

    cli_fmt_seconds(elapsed, el, sizeof(el));
    if (json_is_object(a)) {
        const json_t *best = json_object_get(a, "best_metric");
        const json_t *left = json_object_get(a, "epochs_remaining");
        double e = json_number_value(json_object_get(a, "eta_seconds"));
        char bestbuf[64], leftbuf[32], gpu[32] = "";
        const json_t *gu = json_object_get(a, "gpu_util_mean");

        if (json_is_number(json_object_get(a, "eta_seconds")))
            cli_fmt_seconds(e, eta, sizeof(eta));
        else
            snprintf(eta, sizeof(eta), "?");
        if (json_is_number(best))
            snprintf(bestbuf, sizeof(bestbuf), "%.4f", json_number_value(best));
        else
            snprintf(bestbuf, sizeof(bestbuf), "-");
        if (json_is_number(left))
            snprintf(leftbuf, sizeof(leftbuf), "%lld", (long long)json_number_value(left));
        else
            snprintf(leftbuf, sizeof(leftbuf), "?");
        if (json_is_number(gu)) /* GPU telemetry from the workers' NVML, when they have it */
            snprintf(gpu, sizeof(gpu), " | GPU %.0f%%", json_number_value(gu));
        char budget[80] = "";
        if (json_is_number(json_object_get(a, "budget_seconds"))) { /* a time budget's use */
            char used[32], all[32];
            cli_fmt_seconds(json_number_value(json_object_get(a, "budget_used_seconds")), used,
                            sizeof used);
            cli_fmt_seconds(json_number_value(json_object_get(a, "budget_seconds")), all,
                            sizeof all);
            snprintf(budget, sizeof budget, " | budget %s of %s", used, all);
        }
        snprintf(buf, len,
                 "%s | trials %lld done, %lld failed, %lld running, %lld halted at a rung, %lld "
                 "stopped early | best %s %s | %s epochs left | ETA %s%s%s | %s",
                 st ? st : "?", (long long)json_integer_value(json_object_get(a, "trials_done")),
                 (long long)json_integer_value(json_object_get(a, "trials_failed")),
                 (long long)json_integer_value(json_object_get(a, "trials_running")),
                 (long long)json_integer_value(json_object_get(a, "trials_paused")),
                 (long long)json_integer_value(json_object_get(a, "trials_stopped_early")),
                 json_string_value(json_object_get(a, "metric"))
                     ? json_string_value(json_object_get(a, "metric"))
                     : "metric",
                 bestbuf, leftbuf, eta, gpu, budget, el);
        return;
    }
    hone_kind kind;
    int known = hone_kind_parse(json_string_value(json_object_get(job, "action")), &kind) == 0;
    if (known && hone_kind_is_model_action(kind)) {
        /* evaluate, inference, export: no epochs of their own, so no epoch line */
        const char *parent = json_string_value(json_object_get(job, "parent_job_id"));
        snprintf(buf, len, "%s | %s of %s | %s", st ? st : "?", hone_kind_name(kind),
                 parent ? parent : "?", el);
        return;
    }
    if (known && kind == HONE_KIND_CONVERT) {
        const json_t *p = json_object_get(job, "progress");
        snprintf(buf, len, "%s | %lld/%lld images | %.0f images/s | %s", st ? st : "?",
                 (long long)json_number_value(json_object_get(p, "images_done")),
                 (long long)json_number_value(json_object_get(p, "images_total")),
                 json_number_value(json_object_get(p, "images_per_second")), el);
        return;
    }
    {
        const json_t *last = cli_path_get(job, "result.last");
        const char *metric = cli_job_metric(job);
        const json_t *acc = json_object_get(last, metric);
        char accbuf[32];
        if (json_is_number(acc))
            snprintf(accbuf, sizeof(accbuf), "%.4f", json_number_value(acc));
        else
            snprintf(accbuf, sizeof(accbuf), "-");
        snprintf(buf, len, "%s | epoch %lld/%lld | %s %s | %s", st ? st : "?",
                 (long long)json_integer_value(json_object_get(job, "epoch")),
                 (long long)json_integer_value(json_object_get(job, "epochs_target")), metric,
                 accbuf, el);
    }
}

/* Whether waiting ends at this status: an ended job, or a paused one (it waits for a resume). */
static int job_status_final(const char *st)
{
    hone_status s;
    return hone_status_parse(st, &s) == HONE_OK &&
           (hone_status_is_final(s) || s == HONE_STATUS_PAUSED);
}

/* Whether a job that ended so is a failure for `hone job wait` (exit 1). */
static int job_status_failed(const char *st)
{
    hone_status s;
    return hone_status_parse(st, &s) == HONE_OK &&
           (s == HONE_STATUS_FAILED || s == HONE_STATUS_CANCELED);
}

/* cli_job_wait and cli_job_wait_budget: a timeout is an error (--timeout) or a budget's end. */
static int job_wait_run(cli_ctx *c, const char *job_id, double timeout_s, FILE *progress,
                        json_t **final, int budget)
{
    int quiet = progress == NULL;
    int tty = progress && isatty(fileno(progress));
    double t0 = hone_now(), last_print = -1e9;
    char path[512], line[512], err[1024], metric[64] = "";
    int rc = 1, misses = 0, asked_metric = 0;

    if (final)
        *final = NULL;
    job_path(job_id, "", path, sizeof(path));
    while (!(c->stop && *c->stop)) {
        hone_rest_resp resp;
        const char *st;
        double now = hone_now();

        if (hone_rest_call(c->rest, "GET", path, NULL, 30, &resp, err, sizeof(err)) != 0) {
            /* The controller may be restarting: wait a while before giving up. */
            if (++misses > 30) {
                fprintf(stderr, "%serror: lost the controller at %s (%s)\n", tty ? "\n" : "",
                        c->url, err);
                return 1;
            }
            sleep(1);
            continue;
        }
        misses = 0;
        /* a failed job's last lines, read before the escaping below writes its newlines \n */
        char *elog = NULL;
        if (!c->json && json_is_string(json_object_get(resp.json, "error_log")))
            elog = hone_xstrdup(json_string_value(json_object_get(resp.json, "error_log")));
        if (!c->json)
            cli_json_escape(resp.json);
        if (resp.status != 200) {
            cli_error_text(&resp, err, sizeof(err));
            fprintf(stderr, "%serror: %s\n", tty ? "\n" : "", err);
            free(elog);
            hone_rest_resp_clear(&resp);
            return 1;
        }
        st = json_string_value(json_object_get(resp.json, "status"));
        if (!asked_metric) { /* once: the experiment says which metric the line shows */
            cli_job_experiment_metric(c, resp.json, metric, sizeof metric);
            asked_metric = 1;
        }
        if (metric[0] && !json_object_get(resp.json, "metric")) {
            json_object_set_new(resp.json, "metric", json_string(metric));
            cli_job_progress(resp.json, now - t0, line, sizeof(line));
            json_object_del(resp.json, "metric"); /* --json prints the job as the server sent it */
        } else {
            cli_job_progress(resp.json, now - t0, line, sizeof(line));
        }
        if (tty) {
            fprintf(progress, "\r%s\033[K", line);
            fflush(progress);
        } else if (!quiet && (now - last_print >= 10 || job_status_final(st))) {
            fprintf(progress, "%s\n", line);
            fflush(progress);
            last_print = now;
        }
        if (job_status_final(st)) {
            if (tty)
                fprintf(progress, "\n");
            rc = job_status_failed(st);
            if (rc != 0 && (!quiet || c->json)) { /* --json: the JSON error on stderr says it */
                const char *e = json_string_value(json_object_get(resp.json, "error"));
                fprintf(stderr, "%sjob %s %s%s%s\n", quiet ? "error: " : "", job_id, st,
                        e ? ":\n" : "", e ? e : "");
                if (elog) /* each line escaped; `hone job logs` has the whole log */
                    fprintf(stderr, "last lines (hone job logs %s):\n", job_id);
                for (char *l = elog; l;) {
                    char *nl = strchr(l, '\n'), *x;
                    if (nl)
                        *nl = '\0';
                    x = cli_escape_dup(l);
                    fprintf(stderr, "  %s\n", x);
                    free(x);
                    l = nl ? nl + 1 : NULL;
                }
            }
            if (final)
                *final = json_incref(resp.json);
            free(elog);
            hone_rest_resp_clear(&resp);
            return rc;
        }
        if (timeout_s > 0 && now - t0 > timeout_s) {
            if (budget && tty)
                fprintf(progress, "\n");
            else if (!budget)
                fprintf(stderr, "%serror: job %s still %s after %.0f s (--timeout)\n",
                        tty ? "\n" : "", job_id, st ? st : "?", timeout_s);
            free(elog);
            hone_rest_resp_clear(&resp);
            return 1;
        }
        free(elog);
        hone_rest_resp_clear(&resp);
        for (int i = 0; i < 10 && !(c->stop && *c->stop); i++)
            usleep(100000);
    }
    if (tty)
        fprintf(progress, "\n");
    fprintf(stderr, "interrupted; the job keeps running (hone job cancel %s stops it)\n", job_id);
    return 1;
}

int cli_job_wait(cli_ctx *c, const char *job_id, double timeout_s, FILE *progress, json_t **final)
{
    return job_wait_run(c, job_id, timeout_s, progress, final, 0);
}

int cli_job_wait_budget(cli_ctx *c, const char *job_id, double budget_s, FILE *progress,
                        json_t **final)
{
    return job_wait_run(c, job_id, budget_s, progress, final, 1);
}

static int job_wait(cli_ctx *c)
{
    double timeout = 0;
    char err[256];
    json_t *fin = NULL;
    int rc;

    if (cli_arg_num(c->a, "timeout", 0, 1e9, &timeout, err, sizeof(err)) != 0) {
        fprintf(stderr, "usage error: %s\n", err);
        return 2;
    }
    rc = cli_job_wait(c, c->a->pos[0], timeout, c->json ? NULL : stdout, &fin);
    if (c->json && fin)
        cli_print_json(fin);
    json_decref(fin);
    return rc;
}

/* `hone job artifacts ID`: the files a job stored (best_model/ of an AutoML job included). */
static int job_artifacts(cli_ctx *c)
{
    static const char *const h[] = {"NAME", "BYTES"};
    static const char *const k[] = {"name", "bytes"};
    char path[512];
    job_path(c->a->pos[0], "/artifacts", path, sizeof(path));
    return cli_get_list(c, path, "files", h, k, 2);
}

/* `hone job curves ID`: every trial's (or the job's) curve of one metric as an SVG file. */
static int job_curves(cli_ctx *c)
{
    const char *id = c->a->pos[0], *out = cli_arg(c->a, "out"), *metric = cli_arg(c->a, "metric");
    hone_rest_resp job = {0}, exp = {0}, met = {0};
    char path[1024], title[512], name[256], hl[64] = "", *svg = NULL;
    json_t *series = json_object();
    int rc = 1, ncurves = 0, npoints = 0;

    job_path(id, "", path, sizeof(path));
    if (cli_call(c, "GET", path, NULL, &job) != 0)
        goto out;
    const char *eid = json_string_value(json_object_get(job.json, "experiment_id"));
    if (!metric && eid) { /* the experiment's metric */
        char *e = hone_rest_escape(eid);
        snprintf(path, sizeof(path), "/api/v1/experiments/%s", e);
        free(e);
        if (cli_call(c, "GET", path, NULL, &exp) != 0)
            goto out;
        metric = json_string_value(json_object_get(exp.json, "metric"));
    }
    if (!metric)
        metric = "val_accuracy";
    job_path(id, "/metrics", path, sizeof(path));
    if (cli_call(c, "GET", path, NULL, &met) != 0)
        goto out;
    const json_t *trials = json_object_get(met.json, "trials");
    if (json_is_object(trials)) {
        const char *key;
        json_t *arr;
        json_object_foreach((json_t *)trials, key, arr)
        {
            snprintf(name, sizeof(name), "trial %s", key);
            json_object_set(series, name, arr);
        }
        const json_t *best = cli_path_get(job.json, "automl.best_trial");
        if (json_is_integer(best))
            snprintf(hl, sizeof(hl), "trial %lld", (long long)json_integer_value(best));
    } else {
        json_object_set(series, id, json_object_get(met.json, "metrics"));
    }
    snprintf(title, sizeof(title), "%s job %s: %s (%s)",
             json_string_value(json_object_get(job.json, "action")), id, metric,
             json_string_value(json_object_get(job.json, "status")));
    svg = cli_curves_svg(series, metric, title, hl[0] ? hl : NULL, &ncurves, &npoints);
    if (!out) {
        snprintf(name, sizeof(name), "%s-curves.svg", id);
        for (char *p = name; *p; p++)
            if (*p == '/')
                *p = '_';
        out = name;
    }
    if (!strcmp(out, "-")) {
        fputs(svg, stdout);
    } else {
        FILE *f = fopen(out, "w");
        if (!f || fputs(svg, f) < 0 || fclose(f) != 0) {
            fprintf(stderr, "error: cannot write %s: %s\n", out, strerror(errno));
            goto out;
        }
        if (c->json) {
            json_t *o = json_pack("{s:s,s:s,s:i,s:i}", "file", out, "metric", metric, "curves",
                                  ncurves, "points", npoints);
            cli_print_json(o);
            json_decref(o);
        } else {
            printf("%s: %d curve%s, %d epochs of %s\n", out, ncurves, ncurves == 1 ? "" : "s",
                   npoints, metric);
        }
    }
    rc = 0;
out:
    free(svg);
    json_decref(series);
    hone_rest_resp_clear(&job);
    hone_rest_resp_clear(&exp);
    hone_rest_resp_clear(&met);
    return rc;
}

/* `job logs --follow`: the Server-Sent Events of GET /jobs/{id}/logs/stream, read as curl writes
 * them (a FILE from fopencookie, unbuffered), each "log" event printed as it comes. */
typedef struct sse_reader {
    char *buf;
    size_t len, cap;
    char last_id[32]; /* the last event id: a reconnect resumes after it */
    int ended, json;
} sse_reader;

static void sse_event(sse_reader *r, char *ev)
{
    const char *event = "", *data = NULL;
    for (char *line = strtok(ev, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strncmp(line, "id: ", 4))
            snprintf(r->last_id, sizeof r->last_id, "%s", line + 4);
        else if (!strncmp(line, "event: ", 7))
            event = line + 7;
        else if (!strncmp(line, "data: ", 6))
            data = line + 6;
    }
    if (!strcmp(event, "end")) {
        r->ended = 1;
        return;
    }
    json_t *d = data && !strcmp(event, "log") ? json_loads(data, 0, NULL) : NULL;
    if (!json_is_object(d)) {
        json_decref(d);
        return;
    }
    if (r->json) {
        cli_print_json(d);
    } else {
        json_t *trial = json_object_get(d, "trial");
        if (json_is_integer(trial))
            printf("[trial %lld] ", (long long)json_integer_value(trial));
        const char *l = json_string_value(json_object_get(d, "line"));
        char *e = cli_escape_dup(l ? l : "");
        printf("%s\n", e);
        free(e);
    }
    fflush(stdout);
    json_decref(d);
}

static ssize_t sse_write(void *cookie, const char *p, size_t n)
{
    sse_reader *r = cookie;
    if (r->len + n + 1 > r->cap) {
        r->cap = (r->len + n + 1) * 2;
        r->buf = realloc(r->buf, r->cap);
        if (!r->buf)
            return -1;
    }
    memcpy(r->buf + r->len, p, n);
    r->len += n;
    r->buf[r->len] = '\0';
    char *end;
    while ((end = strstr(r->buf, "\n\n"))) { /* one whole event */
        *end = '\0';
        size_t used = (size_t)(end - r->buf) + 2;
        sse_event(r, r->buf);
        memmove(r->buf, r->buf + used, r->len - used + 1);
        r->len -= used;
    }
    return (ssize_t)n;
}

/* Follows the stream until its "end" event, reconnecting (resuming after the last event id) when
 * the connection drops. */
static int job_logs_follow(cli_ctx *c)
{
    sse_reader r = {.json = c->json};
    char path[512], base[400], err[256];
    cookie_io_functions_t io = {.write = sse_write};
    int rc = 1, tries = 0;

    job_path(c->a->pos[0], "/logs/stream", base, sizeof(base));
    while (!r.ended) {
        hone_rest_resp resp;
        FILE *f = fopencookie(&r, "w", io);
        if (!f) {
            fprintf(stderr, "error: out of memory\n");
            goto out;
        }
        setvbuf(f, NULL, _IONBF, 0);
        snprintf(path, sizeof(path), "%s%s%s", base, r.last_id[0] ? "?last_event_id=" : "",
                 r.last_id);
        r.len = 0;
        char seen[sizeof r.last_id];
        snprintf(seen, sizeof seen, "%s", r.last_id);
        int st = hone_rest_download(c->rest, path, f, 24 * 3600, &resp, err, sizeof(err));
        fclose(f);
        if (strcmp(seen, r.last_id)) /* it made progress: the drops are counted afresh */
            tries = 0;
        if (st == 0 && resp.status != 200 && resp.status != 503) { /* 503: too many streams */
            cli_error_text(&resp, err, sizeof(err));
            fprintf(stderr, "error: %s\n", err);
            hone_rest_resp_clear(&resp);
            goto out;
        }
        if (st == 0)
            snprintf(err, sizeof(err), "%s",
                     resp.status == 503 ? "the controller has too many streams open" : "closed");
        hone_rest_resp_clear(&resp);
        if (!r.ended && ++tries > 30) {
            fprintf(stderr, "error: lost the log stream: %s\n", err);
            goto out;
        }
        if (!r.ended)
            sleep(2);
    }
    rc = 0;
out:
    free(r.buf);
    return rc;
}

static int job_logs(cli_ctx *c)
{
    hone_rest_resp resp;
    char path[512];

    if (cli_flag(c->a, "follow"))
        return job_logs_follow(c);
    job_path(c->a->pos[0], "/logs", path, sizeof(path));
    if (cli_call(c, "GET", path, NULL, &resp) != 0)
        return 1;
    if (c->json) {
        json_t *o = json_pack("{s:s}", "logs", resp.body ? resp.body : "");
        cli_print_json(o);
        json_decref(o);
    } else {
        /* line by line, each escaped: a log holds what the trainer printed */
        for (char *l = resp.body, *nl; l && *l; l = nl ? nl + 1 : NULL) {
            if ((nl = strchr(l, '\n')))
                *nl = '\0';
            char *e = cli_escape_dup(l);
            puts(e);
            free(e);
        }
    }
    hone_rest_resp_clear(&resp);
    return 0;
}

static int job_action(cli_ctx *c, const char *action)
{
    hone_rest_resp resp;
    char path[512], suffix[32];

    snprintf(suffix, sizeof(suffix), ":%s", action);
    job_path(c->a->pos[0], suffix, path, sizeof(path));
    if (cli_call(c, "POST", path, NULL, &resp) != 0)
        return 1;
    if (c->json)
        cli_print_json(resp.json);
    else
        printf("job %s: %s\n", c->a->pos[0],
               json_string_value(json_object_get(resp.json, "status"))
                   ? json_string_value(json_object_get(resp.json, "status"))
                   : action);
    hone_rest_resp_clear(&resp);
    return 0;
}

static int job_cancel(cli_ctx *c)
{
    return job_action(c, "cancel");
}
static int job_pause(cli_ctx *c)
{
    return job_action(c, "pause");
}
static int job_resume(cli_ctx *c)
{
    return job_action(c, "resume");
}

/* Makes the parent folders of path (a file path). */
static int job_mkparents(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return HONE_EIO;
            *p = '/';
        }
    }
    return HONE_OK;
}

static int job_download(cli_ctx *c)
{
    const char *id = c->a->pos[0], *only = cli_arg(c->a, "file");
    const char *dir = cli_arg(c->a, "out") ? cli_arg(c->a, "out") : id;
    hone_rest_resp resp, r2;
    char path[2200], err[1024];
    const json_t *files;
    json_t *f, *got = json_array();
    size_t i;
    int rc = 0;

    job_path(id, "/artifacts", path, sizeof(path));
    if (cli_call(c, "GET", path, NULL, &resp) != 0) {
        json_decref(got);
        return 1;
    }
    files = json_object_get(resp.json, "files");
    json_array_foreach(files, i, f)
    {
        const char *name = json_string_value(json_object_get(f, "name"));
        char dest[4096], suffix[1024];
        FILE *out;
        if (!name || (only && strcmp(only, name) != 0))
            continue;
        if (strstr(name, "..") || name[0] == '/') {
            fprintf(stderr, "warning: skipping unsafe artifact name %s\n", name);
            continue;
        }
        snprintf(dest, sizeof(dest), "%s/%s", dir, name);
        snprintf(suffix, sizeof(suffix), "/artifacts/%s", name);
        job_path(id, suffix, path, sizeof(path));
        if (job_mkparents(dest) != 0 || !(out = fopen(dest, "wb"))) {
            fprintf(stderr, "error: cannot write %s: %s\n", dest, strerror(errno));
            rc = 1;
            break;
        }
        cli_progress bar;
        cli_progress_begin(c, &bar, name, 0);
        int drc = hone_rest_download(c->rest, path, out, 600, &r2, err, sizeof(err));
        cli_progress_end(c, &bar);
        if (drc != 0 || r2.status != 200) {
            if (r2.status)
                cli_error_text(&r2, err, sizeof(err));
            fprintf(stderr, "error: downloading %s: %s\n", name, err);
            rc = 1;
        }
        hone_rest_resp_clear(&r2);
        fclose(out);
        if (rc)
            break;
        json_array_append_new(got, json_string(dest));
        if (!c->json)
            printf("%s\n", dest);
    }
    if (rc == 0 && json_array_size(got) == 0) {
        fprintf(stderr, "error: job %s has no artifact%s%s\n", id, only ? " named " : "s",
                only ? only : "");
        rc = 1;
    }
    if (c->json && rc == 0) {
        json_t *o = json_pack("{s:O}", "files", got);
        cli_print_json(o);
        json_decref(o);
    }
    json_decref(got);
    hone_rest_resp_clear(&resp);
    return rc;
}

static int worker_list(cli_ctx *c)
{
    static const char *const h[] = {"ID", "NAME", "ALIVE", "CPUS", "GPUS", "LAST SEEN"};
    static const char *const k[] = {"id", "name", "alive", "resources.cpus", "gpus", "seen"};
    hone_rest_resp resp;
    const json_t *ws;
    json_t *w;
    size_t i;

    if (cli_call(c, "GET", "/api/v1/workers", NULL, &resp) != 0)
        return 1;
    if (c->json) {
        cli_print_json(resp.json);
        hone_rest_resp_clear(&resp);
        return 0;
    }
    ws = json_object_get(resp.json, "workers");
    json_array_foreach(ws, i, w)
    { /* a count reads better than the list of GPU objects */
        char ago[48];
        json_object_set_new(
            w, "gpus",
            json_integer((json_int_t)json_array_size(cli_path_get(w, "resources.gpus"))));
        if (json_is_number(json_object_get(w, "last_seen"))) {
            cli_fmt_seconds((double)time(NULL) - json_number_value(json_object_get(w, "last_seen")),
                            ago, sizeof(ago) - 8);
            strcat(ago, " ago");
            json_object_set_new(w, "seen", json_string(ago));
        }
    }
    cli_print_list(ws, h, k, 6);
    hone_rest_resp_clear(&resp);
    return 0;
}

static const cli_opt list_opts[] = {
    {"experiment", CLI_VALUE, "ID  only this experiment's jobs", 0},
    {"status", CLI_VALUE, "STATUS  only jobs in this status", 0},
    {"parent", CLI_VALUE, "ID  only the trials of this AutoML job", 0},
    {"limit", CLI_VALUE, "N  rows per page asked of the server (every page is listed)", 0},
};
static const cli_opt metrics_opts[] = {
    {"csv", CLI_FLAG, "  print CSV (a header line, then one line per epoch) instead of a table", 0},
};
static const cli_opt wait_opts[] = {
    {"timeout", CLI_VALUE, "SECONDS  give up after this long (exit 1)", 0},
};
static const cli_opt curves_opts[] = {
    {"out", CLI_VALUE, "FILE  the SVG to write (default: ID-curves.svg; - for stdout)", 0},
    {"metric", CLI_VALUE, "NAME  the metric to draw (default: the experiment's)", 0},
};
static const cli_opt logs_opts[] = {
    {"follow", CLI_FLAG, "  print new lines as the trainer writes them, until the job ends", 0},
};
static const cli_opt download_opts[] = {
    {"out", CLI_VALUE, "DIR  where to put the files (default: ./JOB_ID)", 0},
    {"file", CLI_VALUE, "NAME  only this artifact (e.g. best_model/model.bin)", 0},
};

const cli_command cli_job_commands[] = {
    {"job", "list", job_list, list_opts, (int)HONE_ARRAY_LEN(list_opts), 0, 0,
     "[--experiment ID] [--status S] [--parent ID] [--limit N]", "list jobs", 0},
    {"job", "status", cli_job_status, NULL, 0, 1, 1, "ID",
     "a job in brief: status, progress, best, error, times (an AutoML job: its best trials)", 0},
    {"job", "metrics", cli_job_metrics, metrics_opts, (int)HONE_ARRAY_LEN(metrics_opts), 1, 1,
     "ID [--csv]", "per-epoch metrics (every trial's for an AutoML job), a column per metric", 0},
    {"job", "trials", cli_job_trials, NULL, 0, 1, 1, "ID",
     "an AutoML job's trials with their status, best metric and configuration", 0},
    {"job", "curves", job_curves, curves_opts, (int)HONE_ARRAY_LEN(curves_opts), 1, 1,
     "ID [--out FILE.svg] [--metric NAME]", "draw the learning curves of a job's trials as an SVG",
     0},
    {"job", "logs", job_logs, logs_opts, (int)HONE_ARRAY_LEN(logs_opts), 1, 1, "ID [--follow]",
     "the trainer's log lines (--follow: live, until the job ends)", 0},
    {"job", "cancel", job_cancel, NULL, 0, 1, 1, "ID", "cancel a job", 0},
    {"job", "pause", job_pause, NULL, 0, 1, 1, "ID", "pause a job (keeps its checkpoint)", 0},
    {"job", "resume", job_resume, NULL, 0, 1, 1, "ID", "resume a paused job", 0},
    {"job", "artifacts", job_artifacts, NULL, 0, 1, 1, "ID", "list a job's stored files", 0},
    {"job", "download", job_download, download_opts, (int)HONE_ARRAY_LEN(download_opts), 1, 1,
     "ID [--out DIR] [--file NAME]", "download a job's artifacts", 0},
    {"job", "wait", job_wait, wait_opts, (int)HONE_ARRAY_LEN(wait_opts), 1, 1, "ID [--timeout S]",
     "wait for a job to end, with a live progress line", 0},
    {"worker", "list", worker_list, NULL, 0, 0, 0, "", "list registered workers", 0},
};
const int cli_njob_commands = (int)HONE_ARRAY_LEN(cli_job_commands);
