/* Small shared helpers: typed JSON accessors that never crash on a missing key, JSON text in and
 * out, wall-clock time, ids, the structured logger (one JSON object per line on stderr, or plain
 * text), the check of users' free text (names that reach a terminal) and the count-down of the
 * controller's close (ctl_close_step, declared in ctl.h). Calls nothing of the
 * controller above it (the reply to a store failure is batch.c's: it knows whether the report
 * batch is open). */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "text.h"
#include "util.h"

const char *jstr(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

long long jint(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (json_is_integer(v))
        return json_integer_value(v);
    if (json_is_real(v))
        return (long long)json_real_value(v);
    return 0;
}

double jnum(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

json_t *jparse(const char *text)
{
    if (!text)
        return NULL;
    return json_loads(text, JSON_DECODE_ANY, NULL);
}

char *jdump(const json_t *v)
{
    return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY);
}

double ctl_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void ctl_time_str(double t, char *buf, size_t n)
{
    time_t s = (time_t)t;
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Ids: prefix + 16 hex digits from a splitmix64 stream seeded once from /dev/urandom and the
 * clock; unique per store in practice and never reused across restarts. */
void ctl_new_id(hone_controller *c, const char *prefix, char *buf, size_t n)
{
    if (c->id_state == 0) {
        int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            if (read(fd, &c->id_state, sizeof c->id_state) != (ssize_t)sizeof c->id_state)
                c->id_state = 0;
            close(fd);
        }
        c->id_state ^= (uint64_t)(ctl_now() * 1e6) ^ ((uint64_t)getpid() << 32);
    }
    uint64_t z = (c->id_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    snprintf(buf, n, "%s-%016llx", prefix, (unsigned long long)z);
}

void ctl_log(hone_controller *c, const char *level, const char *event, json_t *fields)
{
    char ts[32];
    double now = ctl_now();
    ctl_time_str(now, ts, sizeof ts);
    if (!fields)
        fields = json_object();
    if (c && !c->cfg.log_json) {
        char *f = json_dumps(fields, JSON_COMPACT | JSON_REAL_PRECISION(6));
        fprintf(stderr, "%s %s %s %s\n", ts, level, event, f ? f : "");
        free(f);
    } else {
        json_t *line =
            json_pack("{s:s,s:f,s:s,s:s}", "ts", ts, "unix", now, "level", level, "event", event);
        json_object_update(line, fields);
        char *s = json_dumps(line, JSON_COMPACT | JSON_REAL_PRECISION(15));
        fprintf(stderr, "%s\n", s ? s : "{}");
        free(s);
        json_decref(line);
    }
    json_decref(fields);
}

int ctl_text_ok(const char *s, int allow_newline, char *why, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; p[i];) {
        int len;
        long cp = hone_utf8_next(p + i, &len);
        hone_text_class cls = cp < 0 ? HONE_TEXT_PRINTABLE : hone_text_classify(cp);
        const char *what = NULL;
        if (cp < 0)
            what = "invalid UTF-8";
        else if ((cp == '\n' || cp == '\t') && allow_newline)
            what = NULL;
        else if (cls != HONE_TEXT_PRINTABLE && cls != HONE_TEXT_ZERO_WIDTH)
            what = hone_text_class_name(cls);
        if (what) {
            if (cp < 0)
                snprintf(why, n, "holds invalid UTF-8 at byte %zu", i);
            else
                snprintf(why, n, "holds %s (U+%04lX) at byte %zu", what, (unsigned long)cp, i);
            return 0;
        }
        i += (size_t)len;
    }
    return 1;
}

int ctl_text_check(hone_http_res *res, const char *field, const char *value, int allow_newline)
{
    char why[96];
    if (!value || ctl_text_ok(value, allow_newline, why, sizeof why))
        return HONE_OK;
    hone_http_res_error(res, 422, field, "%s %s: it must be printable text%s", field, why,
                        allow_newline ? " (new lines and tabs allowed)" : "");
    return HONE_EINVAL;
}

void ctl_close_step(hone_controller *c)
{
    if (--c->close_pending == 0 && c->close_done)
        c->close_done(c->close_arg);
}
