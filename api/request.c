/* Request accessors for handlers: method, path, params, query, headers, body, and the JSON body
 * parser with its limits (depth, string length, content type). Never writes to the socket itself:
 * errors are answered through the response functions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "http_internal.h"

static void kv_free(http_kv *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(kv[i].name);
        free(kv[i].value);
    }
    free(kv);
}

void http_req_free(hone_http_req *req)
{
    if (!req)
        return;
    http_upload_release(req);
    http_file_release(req);
    http_res_free(&req->res);
    free(req->url);
    free(req->path);
    free(req->path_norm);
    free(req->query_raw);
    kv_free(req->headers, req->nheaders);
    kv_free(req->params, req->nparams);
    kv_free(req->query, req->nquery);
    http_buf_free(&req->body);
    free(req);
}

const char *http_kv_get(const http_kv *kv, size_t n, const char *name, int icase)
{
    for (size_t i = 0; i < n; i++)
        if (icase ? !strcasecmp(kv[i].name, name) : !strcmp(kv[i].name, name))
            return kv[i].value;
    return NULL;
}

const char *hone_http_req_method(const hone_http_req *req)
{
    return req->method;
}

const char *hone_http_req_path(const hone_http_req *req)
{
    return req->path ? req->path : "-";
}

const char *hone_http_req_route(const hone_http_req *req)
{
    return req->route ? req->route->pattern : NULL;
}

const char *hone_http_req_param(const hone_http_req *req, const char *name)
{
    return http_kv_get(req->params, req->nparams, name, 0);
}

/* Splits the query string lazily, on first use; pairs that do not decode are skipped. */
static void query_parse(hone_http_req *req)
{
    req->query_parsed = 1;
    const char *p = req->query_raw;
    while (p && *p) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t klen = eq ? (size_t)(eq - p) : len;
        char *k = NULL, *v = NULL;
        if (klen > 0 && http_pct_decode(p, klen, 1, &k) == HONE_OK) {
            const char *vs = eq ? eq + 1 : p + len;
            if (http_pct_decode(vs, (size_t)(p + len - vs), 1, &v) == HONE_OK) {
                req->query = hone_xrealloc(req->query, (req->nquery + 1) * sizeof(http_kv));
                req->query[req->nquery].name = k;
                req->query[req->nquery++].value = v;
                k = NULL;
            }
        }
        free(k);
        p = amp ? amp + 1 : NULL;
    }
}

const char *hone_http_req_query(const hone_http_req *req, const char *name)
{
    hone_http_req *r = (hone_http_req *)req;
    if (!r->query_parsed)
        query_parse(r);
    return http_kv_get(r->query, r->nquery, name, 0);
}

const char *hone_http_req_header(const hone_http_req *req, const char *name)
{
    return http_kv_get(req->headers, req->nheaders, name, 1);
}

const char *hone_http_req_body(const hone_http_req *req, size_t *len)
{
    if (len)
        *len = req->body.len;
    return req->body.data ? req->body.data : "";
}

const char *hone_http_req_peer(const hone_http_req *req)
{
    return req->conn && req->conn->peer[0] ? req->conn->peer : "-";
}

void hone_http_req_set_data(hone_http_req *req, void *data)
{
    req->data = data;
}

void *hone_http_req_data(const hone_http_req *req)
{
    return req->data;
}

/* jansson has no depth or string-size limit of its own (beyond a compile-time 2048 depth), so the
 * body is scanned once first. Returns 0, or a status with msg filled. */
static int json_prescan(const char *p, size_t n, int max_depth, size_t max_str, char *msg,
                        size_t cap)
{
    int depth = 0, in_str = 0, esc = 0, line = 1, col = 0;
    size_t slen = 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        col++;
        if (c == '\n') {
            line++;
            col = 0;
        }
        if (in_str) {
            if (esc) {
                esc = 0;
            } else if (c == '\\') {
                esc = 1;
                continue;
            } else if (c == '"') {
                in_str = 0;
                continue;
            }
            if (++slen > max_str) {
                snprintf(msg, cap, "JSON string longer than %zu bytes at line %d column %d",
                         max_str, line, col);
                return 400;
            }
        } else if (c == '"') {
            in_str = 1;
            slen = 0;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth) {
                snprintf(msg, cap, "JSON nested deeper than %d levels at line %d column %d",
                         max_depth, line, col);
                return 400;
            }
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return 0;
}

static int content_type_is_json(const char *ct)
{
    if (!ct)
        return 0;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    size_t n = strlen("application/json");
    if (strncasecmp(ct, "application/json", n))
        return 0;
    ct += n;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    return *ct == '\0' || *ct == ';';
}

json_t *hone_http_req_json(hone_http_req *req, hone_http_res *res)
{
    const hone_http_limits *l = req->conn ? &req->conn->server->limits : NULL;
    char msg[160];
    if (!content_type_is_json(hone_http_req_header(req, "content-type"))) {
        hone_http_res_error(res, 415, NULL, "Content-Type must be application/json");
        return NULL;
    }
    if (req->body.len == 0) {
        hone_http_res_error(res, 400, NULL, "request body is empty; expected a JSON object");
        return NULL;
    }
    int st = json_prescan(req->body.data, req->body.len, l ? l->max_json_depth : 32,
                          l ? l->max_string_bytes : 65536, msg, sizeof(msg));
    if (st) {
        hone_http_res_error(res, st, NULL, "%s", msg);
        return NULL;
    }
    json_error_t err;
    json_t *j = json_loadb(req->body.data, req->body.len, JSON_REJECT_DUPLICATES, &err);
    if (!j) {
        hone_http_res_error(res, 400, NULL, "malformed JSON at line %d column %d: %s", err.line,
                            err.column, err.text);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        hone_http_res_error(res, 422, NULL, "body must be a JSON object");
        return NULL;
    }
    return j;
}
