/* Route table: patterns with {params}, matching a request path to its route (literal segments beat
 * parameters), the Allow list for 405, and percent-decoding. Pure string work, no I/O. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "http_internal.h"

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes %XX (and '+' as space when plus_space). Rejects bad escapes and %00, since values are
 * handed out as C strings. *out is hone_xmalloc'd. */
int http_pct_decode(const char *in, size_t n, int plus_space, char **out)
{
    char *o = hone_xmalloc(n + 1);
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        char c = in[i];
        if (c == '%') {
            int hi = i + 2 < n ? hexval(in[i + 1]) : -1;
            int lo = i + 2 < n ? hexval(in[i + 2]) : -1;
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                free(o);
                *out = NULL;
                return HONE_EINVAL;
            }
            o[j++] = (char)(hi * 16 + lo);
            i += 2;
        } else if (c == '+' && plus_space) {
            o[j++] = ' ';
        } else if (c == '\0') {
            free(o);
            *out = NULL;
            return HONE_EINVAL;
        } else {
            o[j++] = c;
        }
    }
    o[j] = '\0';
    *out = o;
    return HONE_OK;
}

static void route_free(hone_http_route_t *r)
{
    for (size_t i = 0; i < r->nsegs; i++)
        free(r->segs[i]);
    free(r->segs);
    free(r->pattern);
}

void http_routes_free(hone_http_server *s)
{
    for (size_t i = 0; i < s->nroutes; i++)
        route_free(&s->routes[i]);
    free(s->routes);
    s->routes = NULL;
    s->nroutes = 0;
}

/* Splits "/a/{b}/c" into segments; rejects empty segments, unbalanced braces and empty names. */
static int pattern_split(const char *pattern, char ***segs_out, size_t *n_out)
{
    char **segs = NULL;
    size_t n = 0;
    if (pattern[0] != '/')
        return HONE_EINVAL;
    const char *p = pattern + 1;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0 || (e && e[1] == '\0'))
            goto fail;
        int open = p[0] == '{', close = p[len - 1] == '}';
        if (open != close || (open && len < 3) || memchr(p + open, '{', len - open - close) ||
            memchr(p + open, '}', len - open - close))
            goto fail;
        segs = hone_xrealloc(segs, (n + 1) * sizeof(*segs));
        segs[n] = hone_xmalloc(len + 1);
        memcpy(segs[n], p, len);
        segs[n][len] = '\0';
        n++;
        p += len;
        if (*p == '/')
            p++;
    }
    *segs_out = segs;
    *n_out = n;
    return HONE_OK;
fail:
    for (size_t i = 0; i < n; i++)
        free(segs[i]);
    free(segs);
    return HONE_EINVAL;
}

static int method_ok(const char *m)
{
    size_t n = strlen(m);
    if (n == 0 || n >= 24)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (m[i] < 'A' || m[i] > 'Z')
            return 0;
    return 1;
}

int hone_http_route_ex(hone_http_server *s, const char *method, const char *pattern,
                       size_t max_body_bytes, hone_http_handler h, void *ud)
{
    char **segs = NULL;
    size_t nsegs = 0;
    if (!s || !method || !pattern || !h || !method_ok(method))
        return HONE_EINVAL;
    if (pattern_split(pattern, &segs, &nsegs) != HONE_OK)
        return HONE_EINVAL;
    hone_http_route_t r = {0};
    strcpy(r.method, method);
    r.pattern = hone_xstrdup(pattern);
    r.segs = segs;
    r.nsegs = nsegs;
    r.max_body = max_body_bytes;
    r.handler = h;
    r.ud = ud;
    for (size_t i = 0; i < s->nroutes; i++) {
        hone_http_route_t *o = &s->routes[i];
        if (strcmp(o->method, method) || o->nsegs != nsegs)
            continue;
        size_t k = 0;
        for (; k < nsegs; k++) {
            int pa = segs[k][0] == '{', pb = o->segs[k][0] == '{';
            if (pa != pb || (!pa && strcmp(segs[k], o->segs[k])))
                break;
        }
        if (k == nsegs) {
            route_free(&r);
            return HONE_EEXIST;
        }
    }
    s->routes = hone_xrealloc(s->routes, (s->nroutes + 1) * sizeof(*s->routes));
    s->routes[s->nroutes++] = r;
    return HONE_OK;
}

int hone_http_route(hone_http_server *s, const char *method, const char *pattern,
                    hone_http_handler h, void *ud)
{
    return hone_http_route_ex(s, method, pattern, 0, h, ud);
}

/* Splits a raw path into its segments (pointers into a copy). Returns the segment count or -1. */
static int path_split(const char *path, char *copy, char **segs, int max)
{
    int n = 0;
    strcpy(copy, path);
    char *p = copy + (copy[0] == '/');
    if (*p == '\0')
        return 0;
    for (;;) {
        if (n == max)
            return -1;
        segs[n++] = p;
        char *e = strchr(p, '/');
        if (!e)
            break;
        *e = '\0';
        p = e + 1;
    }
    return n;
}

/* Does route r match the decoded segments? Returns a rank (higher = more literal, earlier literal
 * wins) or -1. */
static long route_rank(const hone_http_route_t *r, char **dsegs, int n)
{
    if ((size_t)n != r->nsegs)
        return -1;
    long rank = 0;
    for (int i = 0; i < n; i++) {
        rank <<= 1;
        if (r->segs[i][0] == '{') {
            if (dsegs[i][0] == '\0')
                return -1;
            continue;
        }
        if (strcmp(r->segs[i], dsegs[i]))
            return -1;
        rank |= 1;
    }
    return rank;
}

/* Finds the route for req (method and path_norm set). Returns 200 on a match (req->route and
 * req->params filled), 404, 405 (allow filled: "GET, HEAD, POST"), or 400 for a path that does not
 * percent-decode. */
int http_route_match(hone_http_server *s, hone_http_req *req, char *allow, size_t allow_cap)
{
    enum { MAXSEG = 32 };
    char *raw[MAXSEG], *dec[MAXSEG];
    size_t plen = strlen(req->path_norm);
    char *copy = hone_xmalloc(plen + 1);
    int status = 404, n = path_split(req->path_norm, copy, raw, MAXSEG), ndec = 0;
    if (n < 0)
        goto fail;
    for (; ndec < n; ndec++) {
        if (http_pct_decode(raw[ndec], strlen(raw[ndec]), 0, &dec[ndec]) != HONE_OK) {
            status = 400;
            goto fail;
        }
    }
    const hone_http_route_t *best = NULL;
    long best_rank = -1;
    allow[0] = '\0';
    for (size_t i = 0; i < s->nroutes; i++) {
        const hone_http_route_t *r = &s->routes[i];
        long rank = route_rank(r, dec, n);
        if (rank < 0)
            continue;
        int exact = !strcmp(r->method, req->method);
        if (exact || (req->is_head && !strcmp(r->method, "GET"))) {
            rank = rank * 2 + exact; /* an explicit HEAD route beats the GET one */
            if (rank > best_rank) {
                best = r;
                best_rank = rank;
            }
        } else if (!strstr(allow, r->method)) {
            size_t l = strlen(allow);
            snprintf(allow + l, allow_cap - l, "%s%s%s", l ? ", " : "", r->method,
                     !strcmp(r->method, "GET") ? ", HEAD" : "");
        }
    }
    if (best) {
        status = 200;
        req->route = best;
        for (int i = 0; i < n; i++) {
            if (best->segs[i][0] != '{')
                continue;
            size_t nl = strlen(best->segs[i]) - 2;
            req->params = hone_xrealloc(req->params, (req->nparams + 1) * sizeof(http_kv));
            http_kv *kv = &req->params[req->nparams++];
            kv->name = hone_xmalloc(nl + 1);
            memcpy(kv->name, best->segs[i] + 1, nl);
            kv->name[nl] = '\0';
            kv->value = dec[i];
            dec[i] = NULL;
        }
    } else if (allow[0]) {
        status = 405;
    }
fail:
    for (int i = 0; i < ndec; i++)
        free(dec[i]);
    free(copy);
    return status;
}

int hone_http_route_priority(hone_http_server *s, const char *method, const char *pattern)
{
    int found = 0;
    for (size_t i = 0; s && pattern && i < s->nroutes; i++) {
        hone_http_route_t *r = &s->routes[i];
        if (!strcmp(r->pattern, pattern) && (!method || !strcmp(r->method, method))) {
            r->priority = 1;
            found = 1;
        }
    }
    return found ? HONE_OK : HONE_ENOENT;
}
