/* joblog: the controller's own lines in a job's log (epoch 0 of job_logs), timed in ISO 8601 UTC,
 * and a failure's cause read from the trainer's stderr tail (joblog.h). Never opens a
 * transaction: callers already hold one. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "joblog.h"
#include "store.h"
#include "util.h"

static int starts(const char *s, size_t n, const char *prefix)
{
    size_t p = strlen(prefix);
    return n >= p && !strncmp(s, prefix, p);
}

void ctl_failure_cause(const char *tail, char *out, size_t len)
{
    static const char exited[] = "hone-worker: trainer exited with status ";
    const char *end = tail ? tail + strlen(tail) : NULL;
    const char *last = NULL;
    size_t last_n = 0;
    int status = -1;
    out[0] = '\0';
    if (!tail)
        return;
    /* from the newest line back */
    while (end > tail) {
        const char *e = end;
        while (e > tail && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' '))
            e--;
        const char *b = e;
        while (b > tail && b[-1] != '\n')
            b--;
        size_t n = (size_t)(e - b);
        end = b;
        if (n == 0)
            continue;
        if (starts(b, n, exited)) {
            if (status < 0)
                status = atoi(b + sizeof exited - 1);
            continue;
        }
        if (!last) {
            last = b;
            last_n = n;
        }
        if (status > 128) /* killed by a signal: no message of its own to find */
            break;
        if (starts(b, n, "hone-train: ")) {
            snprintf(out, len, "%.*s", (int)(n - 12), b + 12);
            return;
        }
        if (starts(b, n, "hone-worker: ")) {
            snprintf(out, len, "%.*s", (int)(n - 13), b + 13);
            return;
        }
    }
    if (status > 128)
        snprintf(out, len, "the trainer was killed by signal %d (%s)", status - 128,
                 strsignal(status - 128));
    else if (last)
        snprintf(out, len, "%.*s", (int)last_n, last);
    else if (status >= 0)
        snprintf(out, len, "the trainer exited with status %d and wrote nothing", status);
}

char *ctl_failure_tail(const char *tail)
{
    if (!tail || !*tail)
        return NULL;
    size_t n = strlen(tail);
    while (n > 0 && (tail[n - 1] == '\n' || tail[n - 1] == '\r'))
        n--;
    /* back from the end, CTL_ERRLOG_LINES lines that fit CTL_ERRLOG_BYTES (a longer last line
     * keeps its end) */
    size_t from = n;
    int lines = 0;
    while (from > 0 && lines < CTL_ERRLOG_LINES) {
        size_t b = from;
        while (b > 0 && tail[b - 1] != '\n')
            b--;
        if (n - b > CTL_ERRLOG_BYTES) {
            if (lines == 0)
                from = n - CTL_ERRLOG_BYTES;
            break;
        }
        from = b > 0 ? b - 1 : 0;
        lines++;
        if (b == 0)
            break;
    }
    if (from > 0 && tail[from] == '\n')
        from++;
    while (from < n && ((unsigned char)tail[from] & 0xc0) == 0x80) /* not inside a character */
        from++;
    if (from >= n)
        return NULL;
    char *o = hone_xmalloc((n - from) * 4 + 1), *p = o;
    for (size_t i = from; i < n; i++) {
        unsigned char ch = (unsigned char)tail[i];
        if ((ch < 0x20 && ch != '\n') || ch == 0x7f)
            p += sprintf(p, "\\x%02x", ch);
        else
            *p++ = (char)ch;
    }
    *p = '\0';
    return o;
}

int ctl_joblog(hone_controller *c, const char *job_id, const char *fmt, ...)
{
    char line[2048], ts[32];
    double now = ctl_now();
    ctl_time_str(now, ts, sizeof ts);
    int k = snprintf(line, sizeof line, "%s ", ts);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + k, sizeof line - (size_t)k, fmt, ap);
    va_end(ap);
    for (char *p = line; *p; p++) /* one line, whatever the text held */
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return store_logs_add(c->db, job_id, line, now);
}

int ctl_joblog_epoch(hone_controller *c, const char *job_id, int epoch, int epochs,
                     const json_t *metrics, int n)
{
    char line[1024], ts[32];
    double now = ctl_now();
    size_t k;
    ctl_time_str(now, ts, sizeof ts);
    k = (size_t)snprintf(line, sizeof line, "%s epoch %d", ts, epoch);
    if (epochs > 0)
        k += (size_t)snprintf(line + k, sizeof line - k, "/%d", epochs);
    const char *key, *sep = ": ";
    json_t *v;
    /* the metrics in the order the trainer wrote them; time and speed last */
    json_object_foreach((json_t *)metrics, key, v)
    {
        if (!json_is_number(v) || !strcmp(key, "seconds") || !strcmp(key, "images_per_second") ||
            !strcmp(key, "epoch") || !strcmp(key, "epochs") || k >= sizeof line - 1)
            continue;
        k += (size_t)snprintf(line + k, sizeof line - k, "%s%s %.4g", sep, key,
                              json_number_value(v));
        sep = ", ";
    }
    v = json_object_get(metrics, "seconds");
    if (json_is_number(v) && k < sizeof line - 1)
        k += (size_t)snprintf(line + k, sizeof line - k, "%s%.2f s", sep, json_number_value(v));
    v = json_object_get(metrics, "images_per_second");
    if (json_is_number(v) && k < sizeof line - 1)
        snprintf(line + k, sizeof line - k, " (%.0f images/s)", json_number_value(v));
    (void)n;
    return store_logs_append(c->db, job_id, epoch, CTL_LOG_N_EPOCH, line, now) < 0 ? HONE_ESQL
                                                                                   : HONE_OK;
}

/* The tail's lines after the last line a report carried (all of them when that line is not in
 * it), at most 50, into the log. */
static int log_unreported(hone_controller *c, const char *id, const char *tail)
{
    json_t *row = NULL;
    const char *from = tail;
    if (store_logs_last_reported(c->db, id, &row) == HONE_OK && jstr(row, "line")) {
        const char *last = jstr(row, "line"), *p = tail;
        size_t ll = strlen(last);
        while (ll && (p = strstr(p, last))) {
            if ((p == tail || p[-1] == '\n') && (p[ll] == '\n' || !p[ll]))
                from = p[ll] ? p + ll + 1 : p + ll;
            p++;
        }
    }
    json_decref(row);
    int total = 0;
    for (const char *p = from; *p; p++)
        total += *p == '\n';
    int skip = total > 50 ? total - 50 : 0, rc = HONE_OK;
    double now = ctl_now();
    while (*from && rc == HONE_OK) {
        const char *e = strchr(from, '\n');
        size_t n = e ? (size_t)(e - from) : strlen(from);
        if (skip > 0) {
            skip--;
        } else if (n > 0) {
            char *l = hone_xmalloc(n + 1);
            memcpy(l, from, n);
            l[n] = '\0';
            rc = store_logs_add(c->db, id, l, now);
            free(l);
        }
        from += n + (e != NULL);
    }
    return rc;
}

int ctl_joblog_tail(hone_controller *c, const json_t *job, const char *status, const char *log_tail)
{
    if (!log_tail || strcmp(status, "failed") != 0)
        return HONE_OK;
    return log_unreported(c, jstr(job, "id"), log_tail);
}

int ctl_joblog_finished(hone_controller *c, const json_t *before, const char *log_tail)
{
    const char *id = jstr(before, "id");
    json_t *row = NULL;
    int rc = store_job_get(c->db, id, &row);
    if (rc)
        return rc == HONE_ENOENT ? HONE_OK : rc;
    const char *st = jstr(row, "status");
    int failed = !strcmp(st, "failed");
    int retried = !strcmp(st, "queued") && jint(row, "attempts") > jint(before, "attempts");
    if (!failed && !retried)
        goto done;
    char cause[1024];
    const char *err = jstr(row, "error");
    /* a kind that made its own message keeps it; a raw tail becomes its cause */
    if (err && log_tail && strcmp(err, log_tail) != 0)
        snprintf(cause, sizeof cause, "%s", err);
    else
        ctl_failure_cause(log_tail ? log_tail : err, cause, sizeof cause);
    if (!cause[0])
        snprintf(cause, sizeof cause, "the worker reported a failure without a message");
    if ((rc = store_job_set_error(c->db, id, cause, NULL)))
        goto done;
    /* the cause the attempt before failed of: the job's own, not tried again (kinds/train.c) */
    const char *prev = jstr(before, "error");
    int again = failed && jint(before, "attempts") >= 1 &&
                jint(row, "attempts") < c->cfg.max_attempts && prev && strcmp(prev, cause) == 0;
    if (failed)
        rc =
            ctl_joblog(c, id, "failed after %lld attempt%s: %s%s", (long long)jint(row, "attempts"),
                       jint(row, "attempts") == 1 ? "" : "s", cause,
                       again ? " (the same cause as the attempt before: not tried again)" : "");
    else
        rc = ctl_joblog(c, id, "attempt %lld failed: %s; queued again (at most %d attempts)",
                        (long long)jint(row, "attempts"), cause, c->cfg.max_attempts);
done:
    json_decref(row);
    return rc;
}
