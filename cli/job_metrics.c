/* job_metrics: `hone job metrics ID [--csv]`, every epoch of a job (of each trial of an AutoML
 * job, every page), a column per metric the trainer reported (val_map for a detector), as a table
 * or as the controller's CSV shape. Reads only. */
#include "cli.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static void show_path(const char *id, const char *suffix, char *buf, size_t len)
{
    char *e = hone_rest_escape(id);
    snprintf(buf, len, "/api/v1/jobs/%s%s", e, suffix);
    free(e);
}

/* A job's metrics, every page: {"metrics": [...]} or {"trials": {"<trial>": [...]}}. NULL after
 * printing why. */
static json_t *metrics_get(cli_ctx *c, const char *id)
{
    char path[512];
    show_path(id, "/metrics", path, sizeof(path));
    return cli_get_all(c, path, NULL); /* "metrics" appended, or "trials" merged */
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The metric names of every epoch of arr (but "epoch"), added to names (sorted, unique). */
static void metric_names(const json_t *arr, const char **names, int *n, int cap)
{
    size_t i;
    json_t *m;
    json_array_foreach(arr, i, m)
    {
        const char *key;
        json_t *v;
        json_object_foreach(m, key, v)
        {
            int seen = !strcmp(key, "epoch") || !strcmp(key, "trial");
            for (int j = 0; j < *n && !seen; j++)
                seen = !strcmp(names[j], key);
            if (!seen && *n < cap)
                names[(*n)++] = key;
        }
    }
    qsort(names, (size_t)*n, sizeof(char *), str_cmp);
}

/* One CSV field (RFC 4180): as is, or quoted when it holds a comma, quote or line break. */
static void csv_field(const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"')
            putchar('"');
        putchar(*s);
    }
    putchar('"');
}

static void csv_value(const json_t *v)
{
    char buf[64];
    if (!v || json_is_null(v))
        return;
    if (json_is_integer(v))
        printf("%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        printf("%.10g", json_real_value(v));
    else if (json_is_string(v))
        csv_field(json_string_value(v));
    else
        csv_field(cli_cell(v, buf, sizeof buf));
}

/* The rows of one series (a trial's or the job's) as table cells or CSV lines. */
static void metrics_rows(const json_t *arr, const char *trial, const char **names, int nn, int csv,
                         char ****rows, int *n, int *cap)
{
    size_t i;
    json_t *m;
    char buf[64];

    json_array_foreach(arr, i, m)
    {
        if (csv) {
            if (trial)
                printf("%s,", trial);
            csv_value(json_object_get(m, "epoch"));
            for (int j = 0; j < nn; j++) {
                putchar(',');
                csv_value(json_object_get(m, names[j]));
            }
            putchar('\n');
            continue;
        }
        if (*n >= *cap) {
            *cap = *cap ? *cap * 2 : 64;
            *rows = hone_xrealloc(*rows, (size_t)*cap * sizeof(char **));
        }
        int off = trial ? 1 : 0;
        char **r = hone_xcalloc((size_t)(nn + 2), sizeof(char *));
        if (trial)
            r[0] = hone_xstrdup(trial);
        r[off] = hone_xstrdup(cli_cell(json_object_get(m, "epoch"), buf, sizeof(buf)));
        for (int j = 0; j < nn; j++)
            r[off + 1 + j] = hone_xstrdup(cli_cell(json_object_get(m, names[j]), buf, sizeof(buf)));
        (*rows)[(*n)++] = r;
    }
}

/* `hone job metrics ID [--csv]`: every epoch (of every trial), a column per metric the trainer
 * reported (val_map for a detector, val_accuracy for a classifier, and whatever else it sent). */
int cli_job_metrics(cli_ctx *c)
{
    json_t *all = metrics_get(c, c->a->pos[0]);
    const char *names[64], *hdr[66];
    char ***rows = NULL, heads[66][48];
    int n = 0, cap = 0, nn = 0, csv = cli_flag(c->a, "csv") > 0;

    if (!all)
        return 1;
    if (c->json) {
        cli_print_json(all);
        json_decref(all);
        return 0;
    }
    const json_t *trials = json_object_get(all, "trials");
    int automl = json_is_object(trials);
    const char *key;
    json_t *arr;
    if (automl) {
        json_object_foreach((json_t *)trials, key, arr)
            metric_names(arr, names, &nn, (int)HONE_ARRAY_LEN(names));
    } else {
        metric_names(json_object_get(all, "metrics"), names, &nn, (int)HONE_ARRAY_LEN(names));
    }
    int nh = 0;
    if (automl)
        hdr[nh++] = "TRIAL";
    hdr[nh++] = "EPOCH";
    for (int j = 0; j < nn; j++) { /* val_accuracy → VAL ACCURACY */
        size_t k = 0;
        for (; names[j][k] && k + 1 < sizeof heads[0]; k++)
            heads[j][k] = names[j][k] == '_' ? ' ' : (char)toupper((unsigned char)names[j][k]);
        heads[j][k] = '\0';
        hdr[nh++] = heads[j];
    }
    if (csv) { /* the controller's own CSV shape: trial (AutoML), epoch, the metrics sorted */
        printf("%sepoch", automl ? "trial," : "");
        for (int j = 0; j < nn; j++) {
            putchar(',');
            csv_field(names[j]);
        }
        putchar('\n');
    }
    if (automl) {
        json_object_foreach((json_t *)trials, key, arr)
            metrics_rows(arr, key, names, nn, csv, &rows, &n, &cap);
    } else {
        metrics_rows(json_object_get(all, "metrics"), NULL, names, nn, csv, &rows, &n, &cap);
    }
    if (!csv)
        cli_print_table(hdr, nh, rows, n);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < nh; j++)
            free(rows[i][j]);
        free(rows[i]);
    }
    free(rows);
    json_decref(all);
    return 0;
}
