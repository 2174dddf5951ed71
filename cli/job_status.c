/* job_status: `hone job status ID`, a job in brief (status, progress, best, error, times; an
 * AutoML job's search, counts and best trials) with --json for the whole job, and `hone job
 * trials ID`, every trial of an AutoML job. Reads only; prints the controller's words escaped. */
#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void show_path(const char *id, const char *suffix, char *buf, size_t len)
{
    char *e = hone_rest_escape(id);
    snprintf(buf, len, "/api/v1/jobs/%s%s", e, suffix);
    free(e);
}

/* Every trial of an AutoML job (all pages), as the list answers them. NULL after printing why. */
static json_t *job_trials_get(cli_ctx *c, const char *parent)
{
    char path[600], *e = hone_rest_escape(parent);
    snprintf(path, sizeof(path), "/api/v1/jobs?parent=%s&limit=1000", e);
    free(e);
    json_t *page = cli_get_all(c, path, "jobs");
    json_t *jobs = json_object_get(page, "jobs"), *all = NULL;
    if (page)
        all = json_is_array(jobs) ? json_incref(jobs) : json_array();
    json_decref(page);
    return all;
}

/* `hone job trials ID`: an AutoML job's trials, one row each, with their configurations. */
int cli_job_trials(cli_ctx *c)
{
    static const char *const h[] = {"TRIAL", "ID",         "STATUS", "EPOCH",
                                    "BEST",  "EARLY STOP", "CONFIG"};
    static const char *const k[] = {
        "trial", "id", "status", "epoch", "result.best_metric", "stopped_early", "config"};
    json_t *all = job_trials_get(c, c->a->pos[0]);
    if (!all)
        return 1;
    if (c->json) {
        json_t *o = json_pack("{s:O}", "jobs", all);
        cli_print_json(o);
        json_decref(o);
    } else {
        cli_print_list(all, h, k, 7);
    }
    json_decref(all);
    return 0;
}

/* The trial order of `job status`: the best metric first (by the search's direction), trials
 * without one last, then by trial number. */
static int trials_maximize = 1;
static int trial_cmp(const void *pa, const void *pb)
{
    const json_t *a = *(json_t *const *)pa, *b = *(json_t *const *)pb;
    const json_t *ma = cli_path_get(a, "result.best_metric"),
                 *mb = cli_path_get(b, "result.best_metric");
    if (json_is_number(ma) != json_is_number(mb))
        return json_is_number(ma) ? -1 : 1;
    if (json_is_number(ma)) {
        double x = json_number_value(ma), y = json_number_value(mb);
        if (x != y)
            return (x > y) == trials_maximize ? -1 : 1;
    }
    return (int)(json_integer_value(json_object_get(a, "trial")) -
                 json_integer_value(json_object_get(b, "trial")));
}

#define STATUS_TRIALS_SHOWN 10

static void status_line(const char *key, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void status_line(const char *key, const char *fmt, ...)
{
    va_list ap;
    printf("%-10s ", key);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

/* A text of several lines (a job's error with the trainer's last lines) under key, each line after
 * the first indented to the value column. The text comes escaped for the terminal (escape.c), its
 * line breaks as the two characters \n: they break the line here. */
static void status_text(const char *key, const char *text)
{
    printf("%-10s ", key);
    for (const char *p = text; *p; p++) {
        if (p[0] == '\\' && p[1] == 'n') {
            p++;
            if (p[1])
                printf("\n%-10s ", "");
            continue;
        }
        putchar(*p);
    }
    putchar('\n');
}

/* "a=1 b=0.03" from an object of scalars (a trial's configuration). */
static void config_text(const json_t *cfg, char *buf, size_t len)
{
    const char *key;
    json_t *v;
    size_t n = 0;
    char cell[128];
    buf[0] = '\0';
    json_object_foreach((json_t *)cfg, key, v)
    {
        if (n < len)
            n += (size_t)snprintf(buf + n, len - n, "%s%s=%s", n ? " " : "", key,
                                  cli_cell(v, cell, sizeof cell));
    }
}

static void status_times(const json_t *job)
{
    const char *cr = json_string_value(json_object_get(job, "created"));
    const char *sa = json_string_value(json_object_get(job, "started"));
    const char *fi = json_string_value(json_object_get(job, "finished"));
    const json_t *s0 = json_object_get(job, "started_unix"),
                 *s1 = json_object_get(job, "finished_unix");
    char took[32] = "";
    if (json_is_number(s0) && json_is_number(s1)) {
        char d[24];
        cli_fmt_seconds(json_number_value(s1) - json_number_value(s0), d, sizeof d);
        snprintf(took, sizeof took, " (took %s)", d);
    }
    status_line("created", "%s", cr ? cr : "-");
    if (sa)
        status_line("started", "%s", sa);
    if (fi)
        status_line("finished", "%s%s", fi, took);
}

/* The AutoML part of `job status`: its search, counts, best and its trials, briefly. */
static void status_automl(cli_ctx *c, const json_t *job)
{
    const json_t *a = json_object_get(job, "automl");
    const char *id = json_string_value(json_object_get(job, "id"));
    const char *metric = cli_job_metric(job);
    char cell[64], cfg[1024];
    const json_t *best = json_object_get(a, "best_metric");

    status_line("search", "%s, %zu parameters swept, %s %s",
                json_string_value(json_object_get(a, "algorithm"))
                    ? json_string_value(json_object_get(a, "algorithm"))
                    : "?",
                json_object_size(json_object_get(a, "search_space")),
                json_is_false(json_object_get(a, "maximize")) ? "minimising" : "maximising",
                metric);
    status_line(
        "trials",
        "%lld done (%lld stopped early), %lld failed, %lld running, %lld queued, %lld paused",
        (long long)json_integer_value(json_object_get(a, "trials_done")),
        (long long)json_integer_value(json_object_get(a, "trials_stopped_early")),
        (long long)json_integer_value(json_object_get(a, "trials_failed")),
        (long long)json_integer_value(json_object_get(a, "trials_running")),
        (long long)json_integer_value(json_object_get(a, "trials_queued")),
        (long long)json_integer_value(json_object_get(a, "trials_paused")));
    {
        char eta[32] = "?";
        if (json_is_number(json_object_get(a, "eta_seconds")))
            cli_fmt_seconds(json_number_value(json_object_get(a, "eta_seconds")), eta, sizeof eta);
        status_line("epochs", "%lld done, %s left, ETA %s",
                    (long long)json_integer_value(json_object_get(a, "epochs_done")),
                    json_is_number(json_object_get(a, "epochs_remaining"))
                        ? cli_cell(json_object_get(a, "epochs_remaining"), cell, sizeof cell)
                        : "?",
                    eta);
    }
    if (json_is_number(json_object_get(a, "budget_seconds"))) {
        /* budget 5m: 3m12s used, 1m48s left; and what it cut once the search ended */
        char bs[32], used[32], left[32];
        cli_fmt_seconds(json_number_value(json_object_get(a, "budget_seconds")), bs, sizeof bs);
        cli_fmt_seconds(json_number_value(json_object_get(a, "budget_used_seconds")), used,
                        sizeof used);
        cli_fmt_seconds(json_number_value(json_object_get(a, "budget_left_seconds")), left,
                        sizeof left);
        status_line("budget", "%s: %s used, %s left", bs, used, left);
        if (json_is_string(json_object_get(a, "budget_note")))
            status_line("budget cut", "%s", json_string_value(json_object_get(a, "budget_note")));
    }
    if (json_is_number(best)) {
        char b[64];
        snprintf(b, sizeof b, "%.4f", json_number_value(best));
        status_line("best", "%s %s (trial %s, job %s)", metric, b,
                    cli_cell(json_object_get(a, "best_trial"), cell, sizeof cell),
                    json_string_value(json_object_get(a, "best_job_id"))
                        ? json_string_value(json_object_get(a, "best_job_id"))
                        : "-");
        config_text(json_object_get(a, "best_config"), cfg, sizeof cfg);
        if (cfg[0])
            status_line("config", "%s", cfg);
    } else {
        status_line("best", "- (no trial has reported %s yet)", metric);
    }
    status_times(job);
    json_t *trials = job_trials_get(c, id);
    size_t n = json_array_size(trials);
    if (n > 0) {
        static const char *const h[] = {"TRIAL", "STATUS", "EPOCH", "BEST", "ID"};
        static const char *const k[] = {"trial", "status", "epoch", "result.best_metric", "id"};
        json_t **v = hone_xcalloc(n, sizeof(json_t *)), *shown = json_array();
        for (size_t i = 0; i < n; i++)
            v[i] = json_array_get(trials, i);
        trials_maximize = !json_is_false(json_object_get(a, "maximize"));
        qsort(v, n, sizeof(json_t *), trial_cmp);
        for (size_t i = 0; i < n && i < STATUS_TRIALS_SHOWN; i++)
            json_array_append(shown, v[i]);
        printf("\n%s:\n", n > STATUS_TRIALS_SHOWN ? "best trials" : "trials");
        cli_print_list(shown, h, k, 5);
        if (n > STATUS_TRIALS_SHOWN)
            printf("... and %zu more\n", n - STATUS_TRIALS_SHOWN);
        free(v);
        json_decref(shown);
    }
    json_decref(trials);
    printf("\nall trials: hone job trials %s; their epochs: hone job metrics %s; everything: hone "
           "job status %s --json\n",
           id, id, id);
}

/* An object's scalars as "k v, k v" on one line under label, and the names of its tables (the
 * per-class ones of an evaluation: `job evaluate` prints them, --json has them) on a second. */
static void status_scalars(const char *label, const json_t *obj)
{
    const char *key;
    json_t *v;
    char cell[128], line[1024], more[512];
    size_t n = 0, m = 0;
    line[0] = more[0] = '\0';
    json_object_foreach((json_t *)obj, key, v)
    {
        if (!strcmp(key, "best_metric") || !strcmp(key, "best_epoch") || json_is_null(v))
            continue; /* the best has its own line */
        if (json_is_object(v) || json_is_array(v)) {
            if (m < sizeof more)
                m += (size_t)snprintf(more + m, sizeof more - m, "%s%s", m ? ", " : "", key);
        } else if (n < sizeof line) {
            n += (size_t)snprintf(line + n, sizeof line - n, "%s%s %s", n ? ", " : "", key,
                                  cli_cell(v, cell, sizeof cell));
        }
    }
    if (line[0])
        status_line(label, "%s", line);
    if (more[0])
        status_line("", "also %s (--json)", more);
}

int cli_job_status(cli_ctx *c)
{
    hone_rest_resp resp;
    char path[512], line[512], cell[64], metric[64];

    show_path(c->a->pos[0], "", path, sizeof(path));
    if (cli_call(c, "GET", path, NULL, &resp) != 0)
        return 1;
    if (c->json) {
        cli_print_json(resp.json);
        hone_rest_resp_clear(&resp);
        return 0;
    }
    const json_t *j = resp.json;
    const char *name = json_string_value(json_object_get(j, "name"));
    const char *err = json_string_value(json_object_get(j, "error"));
    const char *elog = json_string_value(json_object_get(j, "error_log"));
    const char *eid = json_string_value(json_object_get(j, "experiment_id"));
    const char *parent = json_string_value(json_object_get(j, "parent_id"));
    const char *model = json_string_value(json_object_get(j, "parent_job_id"));
    const char *action = json_string_value(json_object_get(j, "action"));
    cli_job_experiment_metric(c, j, metric, sizeof metric);
    if (metric[0] && !json_object_get(j, "metric"))
        json_object_set_new(resp.json, "metric", json_string(metric));

    printf("job %s%s%s%s (%s", json_string_value(json_object_get(j, "id")),
           name && *name ? " \"" : "", name && *name ? name : "", name && *name ? "\"" : "",
           action ? action : "?");
    if (json_is_integer(json_object_get(j, "trial")) && parent)
        printf(", trial %lld of %s", (long long)json_integer_value(json_object_get(j, "trial")),
               parent);
    else if (model)
        printf(" of %s", model);
    if (eid)
        printf(", experiment %s", eid);
    printf(")\n");
    status_line("status", "%s",
                json_string_value(json_object_get(j, "status"))
                    ? json_string_value(json_object_get(j, "status"))
                    : "?");
    if (err)
        status_text("error", err);
    if (elog) /* a failed job's last lines, one a line (`hone job logs` has them all) */
        status_text("last lines", elog);
    if (json_is_object(json_object_get(j, "automl"))) {
        status_automl(c, j);
        json_object_del(resp.json, "metric");
        hone_rest_resp_clear(&resp);
        return 0;
    }
    if (json_string_value(json_object_get(j, "dataset_id")))
        status_line("dataset", "%s", json_string_value(json_object_get(j, "dataset_id")));
    if (json_is_object(json_object_get(j, "progress"))) { /* a convert job's own counts */
        status_scalars("progress", json_object_get(j, "progress"));
        line[0] = '\0';
    } else {
        cli_job_progress(j, 0, line, sizeof line);
    }
    {
        /* the progress line less its status and elapsed time: what the job has done */
        char *first = strstr(line, " | "), *last = strrchr(line, '|');
        if (first && last && last > first + 3) {
            *(last - 1) = '\0';
            status_line("progress", "%s", first + 3);
        }
    }
    const json_t *best = cli_path_get(j, "result.best_metric");
    if (json_is_number(best) && !json_object_get(j, "automl"))
        status_line("best", "%s %.4f at epoch %s", cli_job_metric(j), json_number_value(best),
                    cli_cell(cli_path_get(j, "result.best_epoch"), cell, sizeof cell));
    if (json_is_object(json_object_get(j, "config")) &&
        json_object_size(json_object_get(j, "config"))) {
        char cfg[1024];
        config_text(json_object_get(j, "config"), cfg, sizeof cfg);
        status_line("config", "%s", cfg);
    }
    if (json_string_value(json_object_get(j, "worker_id")))
        status_line("worker", "%s (attempt %lld)",
                    json_string_value(json_object_get(j, "worker_id")),
                    (long long)json_integer_value(json_object_get(j, "attempts")));
    status_times(j);
    status_scalars("result", json_object_get(j, "result"));
    printf("\nits epochs: hone job metrics %s; its log: hone job logs %s; everything: hone job "
           "status %s --json\n",
           c->a->pos[0], c->a->pos[0], c->a->pos[0]);
    json_object_del(resp.json, "metric");
    hone_rest_resp_clear(&resp);
    return 0;
}
