/* out: how the hone command talks to people and scripts: controller calls with the error
 * message built once here ("error: <message> (field: x)"), tables, key/value listings, JSON.
 * Text output is escaped (escape.c): server strings never reach the terminal raw. */
#include "cli.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The stderr that --json holds (out.c's end), and the real one under it. */
static FILE *json_err_orig, *json_err_mem;
static char *json_err_buf;
static size_t json_err_len;

/* Where a progress bar goes: the terminal's stderr, never the --json error being collected. */
static FILE *progress_out(void)
{
    return json_err_mem ? json_err_orig : stderr;
}

int cli_call(cli_ctx *c, const char *method, const char *path, const json_t *body,
             hone_rest_resp *resp)
{
    char err[1024];
    int rc = hone_rest_call(c->rest, method, path, body, 60, resp, err, sizeof(err));

    if (rc != 0) {
        fprintf(stderr,
                "error: cannot reach the controller at %s (%s)\n"
                "hint: start one with `hone local`, or pass --url / set HONE_URL\n",
                c->url, err);
        return 1;
    }
    if (resp->status >= 200 && resp->status < 300) {
        if (!c->json) /* text output: nothing from the server reaches the terminal raw */
            cli_json_escape(resp->json);
        return 0;
    }
    cli_error_text(resp, err, sizeof(err));
    fprintf(stderr, "error: %s\n", err);
    if (resp->status == 401 && strcmp(path, "/api/v1/login") != 0)
        fprintf(stderr, "hint: run hone login --url %s --key-file FILE\n", c->url);
    hone_rest_resp_clear(resp);
    return 1;
}

void cli_error_text(const hone_rest_resp *resp, char *buf, size_t cap)
{
    hone_rest_error_text(resp, buf, cap);
    if (cli_needs_escape(buf)) {
        char *e = cli_escape_dup(buf);
        snprintf(buf, cap, "%s", e);
        free(e);
    }
}

void cli_print_json(const json_t *v)
{
    char *s = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY | JSON_REAL_PRECISION(10));
    if (s) {
        fputs(s, stdout);
        fputc('\n', stdout);
        free(s);
    }
}

const char *cli_cell(const json_t *v, char *buf, size_t len)
{
    if (!v || json_is_null(v))
        snprintf(buf, len, "-");
    else if (json_is_string(v))
        cli_escape(json_string_value(v), buf, len);
    else if (json_is_integer(v))
        snprintf(buf, len, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d != 0 && (fabs(d) < 1e-3 || fabs(d) >= 1e6))
            snprintf(buf, len, "%.3g", d);
        else
            snprintf(buf, len, "%.4f", d);
    } else if (json_is_boolean(v))
        snprintf(buf, len, "%s", json_is_true(v) ? "yes" : "no");
    else {
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(6));
        snprintf(buf, len, "%s", s ? s : "?");
        free(s);
    }
    return buf;
}

void cli_print_table(const char *const *headers, int ncols, char ***rows, int nrows)
{
    int *w = hone_xcalloc((size_t)ncols, sizeof(int));

    for (int j = 0; j < ncols; j++)
        w[j] = (int)strlen(headers[j]);
    for (int i = 0; i < nrows; i++)
        for (int j = 0; j < ncols; j++) {
            int n = rows[i][j] ? (int)strlen(rows[i][j]) : 1;
            if (n > w[j])
                w[j] = n;
        }
    for (int j = 0; j < ncols; j++)
        printf("%-*s%s", j + 1 < ncols ? w[j] : 0, headers[j], j + 1 < ncols ? "  " : "\n");
    for (int i = 0; i < nrows; i++)
        for (int j = 0; j < ncols; j++)
            printf("%-*s%s", j + 1 < ncols ? w[j] : 0, rows[i][j] ? rows[i][j] : "-",
                   j + 1 < ncols ? "  " : "\n");
    if (nrows == 0)
        printf("(none)\n");
    free(w);
}

void cli_print_kv(const json_t *obj, int indent)
{
    const char *key;
    json_t *v;
    char buf[512], kbuf[1024];

    json_object_foreach((json_t *)obj, key, v)
    {
        size_t kl = strlen(key);
        if (kl > 5 && strcmp(key + kl - 5, "_unix") == 0)
            continue; /* the RFC 3339 twin is printed */
        const char *k = cli_escape(key, kbuf, sizeof kbuf);
        if (json_is_object(v) && json_object_size(v) > 0) {
            printf("%*s%s:\n", indent, "", k);
            cli_print_kv(v, indent + 2);
        } else {
            printf("%*s%s: %s\n", indent, "", k, cli_cell(v, buf, sizeof(buf)));
        }
    }
}

void cli_fmt_seconds(double s, char *buf, size_t len)
{
    long t;

    if (!isfinite(s) || s < 0) {
        snprintf(buf, len, "?");
        return;
    }
    t = lround(s);
    if (t >= 3600)
        snprintf(buf, len, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    else if (t >= 60)
        snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, len, "%lds", t);
}

const json_t *cli_path_get(const json_t *obj, const char *dotted)
{
    char key[128];
    const char *p = dotted;

    while (obj && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof(key))
            return NULL;
        memcpy(key, p, n);
        key[n] = '\0';
        obj = json_object_get(obj, key);
        p = dot ? dot + 1 : p + n;
    }
    return obj;
}

void cli_print_list(const json_t *arr, const char *const *headers, const char *const *keys,
                    int ncols)
{
    int n = (int)json_array_size(arr);
    char ***rows = hone_xcalloc((size_t)(n ? n : 1), sizeof(char **));
    char buf[512];

    for (int i = 0; i < n; i++) {
        rows[i] = hone_xcalloc((size_t)ncols, sizeof(char *));
        for (int j = 0; j < ncols; j++)
            rows[i][j] = hone_xstrdup(
                cli_cell(cli_path_get(json_array_get(arr, (size_t)i), keys[j]), buf, sizeof(buf)));
    }
    cli_print_table(headers, ncols, rows, n);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < ncols; j++)
            free(rows[i][j]);
        free(rows[i]);
    }
    free(rows);
}

json_t *cli_get_all(cli_ctx *c, const char *path, const char *member)
{
    hone_rest_resp resp;
    json_t *all = NULL; /* the first page, with every later page's rows merged in */
    json_int_t offset = 0;
    size_t plen = strlen(path) + 32;
    char *page = hone_xmalloc(plen);

    /* lists are paged (limit/offset): follow next_offset until the last page */
    for (;;) {
        snprintf(page, plen, "%s%s", path, offset ? (strchr(path, '?') ? "&" : "?") : "");
        if (offset)
            snprintf(page + strlen(page), plen - strlen(page), "offset=%lld", (long long)offset);
        if (cli_call(c, "GET", page, NULL, &resp) != 0) {
            json_decref(all);
            all = NULL;
            break;
        }
        const json_t *next = json_object_get(resp.json, "next_offset");
        if (!all) {
            all = json_incref(resp.json);
        } else {
            const char *key;
            json_t *v;
            json_object_foreach(resp.json, key, v)
            {
                json_t *to = json_object_get(all, key);
                if (member && strcmp(key, member))
                    continue;
                if (json_is_array(to) && json_is_array(v))
                    json_array_extend(to, v);
                else if (json_is_object(to) && json_is_object(v))
                    json_object_update(to, v);
            }
        }
        json_int_t n = json_is_integer(next) ? json_integer_value(next) : 0;
        hone_rest_resp_clear(&resp);
        if (n <= offset) /* null on the last page (and never backwards) */
            break;
        offset = n;
    }
    if (all && json_object_get(all, "next_offset"))
        json_object_set_new(all, "next_offset", json_null());
    free(page);
    return all;
}

int cli_get_list(cli_ctx *c, const char *path, const char *member, const char *const *headers,
                 const char *const *keys, int ncols)
{
    json_t *all = cli_get_all(c, path, member);
    if (!all)
        return 1;
    if (c->json)
        cli_print_json(all);
    else
        cli_print_list(json_object_get(all, member), headers, keys, ncols);
    json_decref(all);
    return 0;
}

int cli_get_show(cli_ctx *c, const char *path)
{
    hone_rest_resp resp;

    if (cli_call(c, "GET", path, NULL, &resp) != 0)
        return 1;
    if (c->json)
        cli_print_json(resp.json);
    else
        cli_print_kv(resp.json, 0);
    hone_rest_resp_clear(&resp);
    return 0;
}

static void fmt_bytes(double b, char *buf, size_t len)
{
    static const char *const u[] = {"B", "kB", "MB", "GB", "TB"};
    int i = 0;
    while (b >= 1000.0 && i < 4)
        b /= 1000.0, i++;
    snprintf(buf, len, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

static void progress_draw(cli_progress *p, double now)
{
    char done[32], total[32], rate[32], bar[31];
    double frac = p->total > 0 ? (double)p->done / (double)p->total : 0.0;
    double dt = now - p->t0;
    int fill = (int)(frac * 30.0 + 0.5);
    for (int i = 0; i < 30; i++)
        bar[i] = i < fill ? '#' : ' ';
    bar[30] = '\0';
    fmt_bytes((double)p->done, done, sizeof done);
    fmt_bytes((double)p->total, total, sizeof total);
    fmt_bytes(dt > 0 ? (double)p->done / dt : 0.0, rate, sizeof rate);
    fprintf(progress_out(), "\r%s %3d%% [%s] %s / %s  %s/s  ", p->what, (int)(frac * 100.0 + 0.5),
            bar, done, total, rate);
    fflush(progress_out());
    p->shown = 1;
    p->last = now;
}

static void progress_cb(void *user, int64_t sent, int64_t send_total, int64_t got,
                        int64_t got_total)
{
    cli_progress *p = user;
    p->done = p->upload ? sent : got;
    p->total = p->upload ? send_total : got_total;
    double now = hone_now();
    if (p->total > 0 && now - p->last >= 0.1) /* ten frames a second at most */
        progress_draw(p, now);
}

void cli_progress_begin(cli_ctx *c, cli_progress *p, const char *what, int upload)
{
    const char *force = getenv("HONE_PROGRESS");
    memset(p, 0, sizeof(*p));
    if (force ? strcmp(force, "1") != 0 : (c->json || !isatty(2)))
        return;
    p->what = what;
    p->upload = upload;
    p->t0 = hone_now();
    hone_rest_set_progress(c->rest, progress_cb, p);
}

void cli_progress_end(cli_ctx *c, cli_progress *p)
{
    if (!p->what)
        return;
    hone_rest_set_progress(c->rest, NULL, NULL);
    if (p->total > 0) {
        progress_draw(p, hone_now());
        fputc('\n', progress_out());
    }
}

/* --json errors: whatever the command writes on stderr (its own "error: ...", the controller's
 * message, a usage error, from any file of the CLI) is held in memory and handed back at the end
 * as one JSON object on stderr, so that a script reads every failure the same way. */

void cli_json_errors_begin(void)
{
    fflush(stderr);
    json_err_mem = open_memstream(&json_err_buf, &json_err_len);
    if (!json_err_mem)
        return; /* plain text then */
    json_err_orig = stderr;
    stderr = json_err_mem;
}

/* " (field: x)" at the end of msg: cut off, x into field. */
static void json_err_field(char *msg, char *field, size_t cap)
{
    char *f = strstr(msg, " (field: ");
    size_t n = strlen(msg);
    if (f && n > 0 && msg[n - 1] == ')' && !strchr(f + 9, '(')) {
        snprintf(field, cap, "%.*s", (int)(msg + n - 1 - (f + 9)), f + 9);
        *f = '\0';
    }
}

static void json_err_append(char **dst, const char *line)
{
    size_t a = *dst ? strlen(*dst) : 0, b = strlen(line);
    *dst = hone_xrealloc(*dst, a + b + 2);
    if (a)
        (*dst)[a++] = '\n';
    memcpy(*dst + a, line, b + 1);
}

int cli_json_errors_end(int rc)
{
    char *msg = NULL, *hint = NULL, *usage = NULL, field[128] = "";
    int is_usage = 0;

    if (!json_err_mem)
        return rc;
    fclose(json_err_mem);
    json_err_mem = NULL;
    stderr = json_err_orig;
    for (char *l = json_err_buf, *nl; l && *l; l = nl ? nl + 1 : NULL) {
        if ((nl = strchr(l, '\n')))
            *nl = '\0';
        char *cr = strrchr(l, '\r'); /* a progress line rewritten in place: its last state */
        if (cr)
            l = cr + 1;
        if (!*l)
            continue;
        if (!strncmp(l, "usage error: ", 13)) {
            is_usage = 1;
            json_err_append(&msg, l + 13);
        } else if (!strncmp(l, "error: ", 7)) {
            json_err_append(&msg, l + 7);
        } else if (!strncmp(l, "hint: ", 6)) {
            json_err_append(&hint, l + 6);
        } else if (!strncmp(l, "usage: ", 7)) {
            json_err_append(&usage, l + 7);
        } else {
            json_err_append(&msg, l);
        }
    }
    if (msg || rc != 0) {
        json_t *o = json_object();
        if (msg) { /* the field belongs to the first line, the message's own */
            char *nl = strchr(msg, '\n'), *tail = nl ? hone_xstrdup(nl + 1) : NULL;
            if (nl)
                *nl = '\0';
            json_err_field(msg, field, sizeof field);
            if (tail)
                json_err_append(&msg, tail);
            free(tail);
        }
        if (!field[0] && msg && is_usage) { /* a usage error names its option */
            const char *d = strstr(msg, "--");
            size_t n = 0;
            if (d)
                while (d[2 + n] && (isalnum((unsigned char)d[2 + n]) || d[2 + n] == '-') &&
                       n + 1 < sizeof field)
                    n++;
            if (n)
                snprintf(field, sizeof field, "%.*s", (int)n, d + 2);
            else if (strstr(msg, "unknown command"))
                snprintf(field, sizeof field, "command");
        }
        json_object_set_new(o, rc != 0 ? "error" : "warning",
                            json_string(msg ? msg : "the command failed"));
        json_object_set_new(o, "field", field[0] ? json_string(field) : json_null());
        if (hint)
            json_object_set_new(o, "hint", json_string(hint));
        if (usage)
            json_object_set_new(o, "usage", json_string(usage));
        json_object_set_new(o, "exit", json_integer(rc));
        char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
        if (s)
            fprintf(stderr, "%s\n", s);
        free(s);
        json_decref(o);
    }
    free(msg);
    free(hint);
    free(usage);
    free(json_err_buf);
    json_err_buf = NULL;
    return rc;
}
