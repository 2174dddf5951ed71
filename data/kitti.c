/* data/kitti.c: the KITTI label parser (data.h's rules) over memory, and the bounded list of
 * problems a dataset check collects. Strict: a line is an object only when every field parses;
 * a broken line is reported with its number, never guessed at. Reads no files (fuzzed alone). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_internal.h"

void hone_data_kitti_problems_clear(hone_data_kitti_problems *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->kept; i++)
        free(p->msg[i]);
    memset(p, 0, sizeof *p);
}

void hone_data_kitti_problems_join(const hone_data_kitti_problems *p, char *buf, size_t n)
{
    if (!n)
        return;
    size_t o = (size_t)snprintf(buf, n, "%zu problem%s: ", p->count, p->count == 1 ? "" : "s");
    for (size_t i = 0; i < p->kept && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%s", i ? "; " : "", p->msg[i]);
    if (o >= n && n > 4)
        memcpy(buf + n - 4, "...", 4); /* cut short: say so */
}

void data__kitti_problem(hone_data_kitti_problems *p, const char *fmt, ...)
{
    if (!p)
        return;
    p->count++;
    if (p->kept == HONE_DATA_KITTI_MAX_PROBLEMS)
        return;
    char b[600], shown[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    /* file and class names are bytes from the disk: anything but printable ASCII is shown as
     * \xNN, so a message is valid UTF-8 (JSON) however it is cut short */
    size_t o = 0;
    for (const unsigned char *c = (const unsigned char *)b; *c && o + 5 < sizeof shown; c++) {
        if (*c >= 0x20 && *c < 0x7f)
            shown[o++] = (char)*c;
        else
            o += (size_t)snprintf(shown + o, sizeof shown - o, "\\x%02x", *c);
    }
    shown[o] = 0;
    p->msg[p->kept++] = hone_xstrdup(shown);
}

int data__printable_utf8(const unsigned char *s, size_t n, size_t max)
{
    if (n == 0 || n > max)
        return 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        size_t len = c < 0x80             ? 1
                     : (c & 0xe0) == 0xc0 ? 2
                     : (c & 0xf0) == 0xe0 ? 3
                     : (c & 0xf8) == 0xf0 ? 4
                                          : 0;
        if (len == 0 || c < 0x20 || c == 0x7f || (len == 2 && c < 0xc2) || (len == 4 && c > 0xf4) ||
            i + len > n)
            return 0;
        for (size_t k = 1; k < len; k++)
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
        i += len;
    }
    return 1;
}

/* Printable UTF-8 (well-formed, no control bytes), 1..255 bytes: names go into JSON and the
 * packed file's class map. */
static int name_ok(const unsigned char *s, size_t n)
{
    return data__printable_utf8(s, n, 255);
}

/* A finite decimal number filling the whole token (strtod's syntax, no hex, no inf/nan). */
static int number(const unsigned char *t, size_t n, double *v)
{
    char b[64];
    if (n == 0 || n >= sizeof b)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!strchr("0123456789+-.eE", t[i]))
            return 0;
    memcpy(b, t, n);
    b[n] = 0;
    char *end;
    *v = strtod(b, &end);
    return end == b + n && isfinite(*v);
}

#define KITTI_MAX_FIELDS 16

/* One line (without its end): an object, or a reason it is not one. */
static const char *parse_line(const unsigned char *s, size_t n, int width, int height,
                              hone_data_kitti_obj *o, char *why, size_t whylen)
{
    const unsigned char *tok[KITTI_MAX_FIELDS + 1];
    size_t tlen[KITTI_MAX_FIELDS + 1];
    int nt = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] == ' ' || s[i] == '\t') {
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && s[j] != ' ' && s[j] != '\t')
            j++;
        if (nt == KITTI_MAX_FIELDS + 1)
            return "more than 16 fields";
        tok[nt] = s + i;
        tlen[nt++] = j - i;
        i = j;
    }
    if (nt > KITTI_MAX_FIELDS)
        return "more than 16 fields";
    if (nt < 15) {
        snprintf(why, whylen,
                 "%d field%s, want 15 (class truncation occlusion alpha x1 y1 x2 y2 "
                 "h w l x y z ry) or 16 (with a score)",
                 nt, nt == 1 ? "" : "s");
        return why;
    }
    if (!name_ok(tok[0], tlen[0]))
        return "class name is not printable UTF-8 of at most 255 bytes";
    double v[KITTI_MAX_FIELDS];
    for (int i = 1; i < nt; i++)
        if (!number(tok[i], tlen[i], &v[i])) {
            snprintf(why, whylen, "field %d (%.*s) is not a finite number", i + 1,
                     (int)(tlen[i] > 24 ? 24 : tlen[i]), (const char *)tok[i]);
            for (char *p = why; *p; p++)
                if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
                    *p = '?'; /* the message stays printable */
            return why;
        }
    double x1 = v[4], y1 = v[5], x2 = v[6], y2 = v[7];
    if (x2 <= x1 || y2 <= y1) {
        snprintf(why, whylen, "box (%g, %g, %g, %g) is inverted or empty (want x1 < x2, y1 < y2)",
                 x1, y1, x2, y2);
        return why;
    }
    if (x1 < 0 || y1 < 0 || (width > 0 && x2 > width) || (height > 0 && y2 > height)) {
        snprintf(why, whylen, "box (%g, %g, %g, %g) lies outside the %dx%d image", x1, y1, x2, y2,
                 width, height);
        return why;
    }
    o->name = (const char *)tok[0];
    o->name_len = tlen[0];
    o->x1 = (float)x1;
    o->y1 = (float)y1;
    o->x2 = (float)x2;
    o->y2 = (float)y2;
    return NULL;
}

int hone_data_kitti_parse(const uint8_t *buf, size_t len, const char *name, int width, int height,
                          hone_data_kitti_obj **objs, size_t *n, hone_data_kitti_problems *probs)
{
    *objs = NULL;
    *n = 0;
    size_t cap = 0, bad = 0, count = 0;
    hone_data_kitti_obj *v = NULL;
    int line = 0;
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && buf[j] != '\n')
            j++;
        size_t end = j > i && buf[j - 1] == '\r' ? j - 1 : j;
        line++;
        const unsigned char *s = buf + i;
        size_t sl = end - i;
        i = j + 1;
        size_t k = 0;
        while (k < sl && (s[k] == ' ' || s[k] == '\t'))
            k++;
        if (k == sl)
            continue; /* blank */
        char why[200];
        const char *reason = NULL;
        hone_data_kitti_obj o;
        if (memchr(s, 0, sl))
            reason = "holds a NUL byte";
        else
            reason = parse_line(s, sl, width, height, &o, why, sizeof why);
        if (reason) {
            bad++;
            data__kitti_problem(probs, "%s:%d: %s", name, line, reason);
            continue;
        }
        if (++count > HONE_DATA_KITTI_MAX_BOXES) {
            if (count == HONE_DATA_KITTI_MAX_BOXES + 1) {
                bad++;
                data__kitti_problem(probs, "%s:%d: more than %d objects in one image", name, line,
                                    HONE_DATA_KITTI_MAX_BOXES);
            }
            continue;
        }
        o.line = line;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            v = hone_xrealloc(v, cap * sizeof *v);
        }
        v[(*n)++] = o;
    }
    if (bad) {
        free(v);
        *n = 0;
        return HONE_EPARSE;
    }
    *objs = v;
    return HONE_OK;
}
