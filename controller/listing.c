/* Pages and CSV for the list routes (datasets, experiments, jobs, a job's metrics): ?limit= and
 * ?offset= read strictly, a page answered with the offset of the next one, and metric rows written
 * as CSV. Pure formatting over rows the caller read: no store access here. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "routes.h"
#include "util.h"

#define PAGE_DEFAULT 1000
#define PAGE_MAX 10000
#define OFFSET_MAX 1000000000

static int parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

int ctl_page_parse(hone_http_req *req, hone_http_res *res, ctl_page *pg)
{
    const char *lim = hone_http_req_query(req, "limit"), *off = hone_http_req_query(req, "offset");
    pg->limit = PAGE_DEFAULT;
    pg->offset = 0;
    if (lim && parse_int(lim, 1, PAGE_MAX, &pg->limit)) {
        hone_http_res_error(res, 422, "limit", "limit must be an integer in [1, %d]", PAGE_MAX);
        return -1;
    }
    if (off && parse_int(off, 0, OFFSET_MAX, &pg->offset)) {
        hone_http_res_error(res, 422, "offset", "offset must be an integer in [0, %d]", OFFSET_MAX);
        return -1;
    }
    return 0;
}

json_t *ctl_page_body(const char *key, json_t *items, const ctl_page *pg)
{
    int more = json_array_size(items) > (size_t)pg->limit;
    if (more)
        json_array_remove(items, (size_t)pg->limit);
    return json_pack("{s:o,s:i,s:i,s:o}", key, items, "limit", pg->limit, "offset", pg->offset,
                     "next_offset",
                     more ? json_integer((json_int_t)pg->offset + pg->limit) : json_null());
}

int ctl_wants_csv(hone_http_req *req, hone_http_res *res, int *csv)
{
    const char *fmt = hone_http_req_query(req, "format");
    const char *accept = hone_http_req_header(req, "Accept");
    *csv = 0;
    if (fmt) {
        if (!strcmp(fmt, "csv"))
            *csv = 1;
        else if (strcmp(fmt, "json")) {
            hone_http_res_error(res, 422, "format", "format must be json or csv");
            return -1;
        }
        return 0;
    }
    *csv = accept && strstr(accept, "text/csv") != NULL;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void put_value(FILE *f, const json_t *v)
{
    if (json_is_integer(v))
        fprintf(f, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v) && isfinite(json_real_value(v)))
        fprintf(f, "%.17g", json_real_value(v));
    else if (json_is_true(v) || json_is_false(v))
        fputs(json_is_true(v) ? "true" : "false", f);
    /* null, strings and anything else: an empty field (metrics are numbers or null) */
}

char *ctl_metrics_csv(const json_t *rows, size_t *len)
{
    /* The columns: trial (when any row has one), epoch, then every other name, sorted. */
    const char **names = NULL;
    size_t n = 0, i;
    int trial = 0;
    const json_t *r;
    json_array_foreach(rows, i, r)
    {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)r, k, v)
        {
            (void)v;
            if (!strcmp(k, "trial")) {
                trial = 1;
                continue;
            }
            if (!strcmp(k, "epoch"))
                continue;
            size_t j = 0;
            while (j < n && strcmp(names[j], k))
                j++;
            if (j == n) {
                names = hone_xrealloc(names, (n + 1) * sizeof *names);
                names[n++] = k;
            }
        }
    }
    if (n)
        qsort(names, n, sizeof *names, cmp_str);
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    if (!f) { /* out of memory aborts (STYLE.md), like hone_xmalloc */
        fputs("hone-controller: out of memory\n", stderr);
        abort();
    }
    fputs(trial ? "trial,epoch" : "epoch", f);
    for (size_t j = 0; j < n; j++)
        fprintf(f, ",%s", names[j]);
    fputs("\r\n", f);
    json_array_foreach(rows, i, r)
    {
        if (trial) {
            put_value(f, json_object_get(r, "trial"));
            fputc(',', f);
        }
        put_value(f, json_object_get(r, "epoch"));
        for (size_t j = 0; j < n; j++) {
            fputc(',', f);
            put_value(f, json_object_get(r, names[j]));
        }
        fputs("\r\n", f);
    }
    fclose(f);
    free(names);
    return buf;
}
