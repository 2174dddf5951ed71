/* Building and sending responses: status line, headers, Content-Length (or chunks for streams),
 * JSON and error bodies. Every response leaves through http_conn_write, in request order (the
 * connection's pump guarantees only the head of its queue is ever dispatched). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "http_internal.h"

void http_buf_append(http_buf *b, const char *p, size_t n)
{
    if (n > SIZE_MAX / 2 - b->len) /* cannot come from a socket or a limit; and no wrap below */
        abort();
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->data = hone_xrealloc(b->data, cap);
        b->cap = cap;
    }
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void http_buf_printf(http_buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof(small)) {
        http_buf_append(b, small, (size_t)n);
        return;
    }
    char *big = hone_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    http_buf_append(b, big, (size_t)n);
    free(big);
}

void http_buf_free(http_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

static const struct {
    int status;
    const char *code, *reason;
} status_table[] = {
    {100, "continue", "Continue"},
    {200, "ok", "OK"},
    {201, "created", "Created"},
    {202, "accepted", "Accepted"},
    {204, "no_content", "No Content"},
    {206, "partial_content", "Partial Content"},
    {301, "moved_permanently", "Moved Permanently"},
    {302, "found", "Found"},
    {304, "not_modified", "Not Modified"},
    {400, "bad_request", "Bad Request"},
    {401, "unauthorized", "Unauthorized"},
    {403, "forbidden", "Forbidden"},
    {404, "not_found", "Not Found"},
    {405, "method_not_allowed", "Method Not Allowed"},
    {408, "request_timeout", "Request Timeout"},
    {409, "conflict", "Conflict"},
    {410, "gone", "Gone"},
    {411, "length_required", "Length Required"},
    {412, "precondition_failed", "Precondition Failed"},
    {413, "payload_too_large", "Payload Too Large"},
    {414, "uri_too_long", "URI Too Long"},
    {415, "unsupported_media_type", "Unsupported Media Type"},
    {416, "range_not_satisfiable", "Range Not Satisfiable"},
    {422, "unprocessable_entity", "Unprocessable Entity"},
    {429, "too_many_requests", "Too Many Requests"},
    {431, "header_too_large", "Request Header Fields Too Large"},
    {500, "internal_error", "Internal Server Error"},
    {501, "not_implemented", "Not Implemented"},
    {503, "unavailable", "Service Unavailable"},
    {504, "timeout", "Gateway Timeout"},
};

const char *hone_http_status_code(int status)
{
    for (size_t i = 0; i < HONE_ARRAY_LEN(status_table); i++)
        if (status_table[i].status == status)
            return status_table[i].code;
    return "error";
}

const char *hone_http_status_reason(int status)
{
    for (size_t i = 0; i < HONE_ARRAY_LEN(status_table); i++)
        if (status_table[i].status == status)
            return status_table[i].reason;
    return status >= 500 ? "Error" : status >= 400 ? "Client Error" : "Status";
}

void http_res_init(hone_http_res *res, hone_http_req *req)
{
    memset(res, 0, sizeof(*res));
    res->req = req;
}

void http_res_free(hone_http_res *res)
{
    for (size_t i = 0; i < res->nheaders; i++) {
        free(res->headers[i].name);
        free(res->headers[i].value);
    }
    free(res->headers);
    res->headers = NULL;
    res->nheaders = 0;
}

char *http_error_body(int status, const char *field, const char *msg, size_t *len)
{
    json_t *e = json_pack("{s:i, s:s, s:s}", "status", status, "code",
                          hone_http_status_code(status), "message", msg ? msg : "");
    if (!e)
        e = json_pack("{s:i, s:s, s:s}", "status", status, "code", hone_http_status_code(status),
                      "message", "(message was not valid UTF-8)");
    if (field)
        json_object_set_new(e, "field", json_string(field));
    json_t *root = json_pack("{s:o}", "error", e);
    char *s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!s)
        s = hone_xstrdup("{\"error\":{\"status\":500,\"code\":\"internal_error\"}}");
    *len = strlen(s);
    return s;
}

int hone_http_res_header(hone_http_res *res, const char *name, const char *value)
{
    static const char *const reserved[] = {"content-length", "content-type", "transfer-encoding",
                                           "connection"};
    if (res->answered || res->streaming || res->file)
        return HONE_ESTATE;
    if (!name || !value || !name[0] || strpbrk(name, "\r\n: \t") || strpbrk(value, "\r\n"))
        return HONE_EINVAL;
    for (size_t i = 0; i < HONE_ARRAY_LEN(reserved); i++)
        if (!strcasecmp(name, reserved[i]))
            return HONE_EINVAL;
    res->headers = hone_xrealloc(res->headers, (res->nheaders + 1) * sizeof(http_kv));
    res->headers[res->nheaders].name = hone_xstrdup(name);
    res->headers[res->nheaders++].value = hone_xstrdup(value);
    return HONE_OK;
}

int http_res_body_allowed(int status)
{
    return status >= 200 && status != 204 && status != 304;
}

void http_res_head(http_buf *out, hone_http_res *res, int status, const char *ctype, uint64_t len,
                   int chunked)
{
    hone_http_req *req = res->req;
    http_buf_printf(out, "HTTP/1.1 %d %s\r\n", status, hone_http_status_reason(status));
    if (ctype && http_res_body_allowed(status))
        http_buf_printf(out, "Content-Type: %s\r\n", ctype);
    if (chunked > 0)
        http_buf_printf(out, "Transfer-Encoding: chunked\r\n");
    else if (chunked == 0 && http_res_body_allowed(status))
        http_buf_printf(out, "Content-Length: %" PRIu64 "\r\n", len);
    if (!req->keep_alive)
        http_buf_printf(out, "Connection: close\r\n");
    else if (req->http_major == 1 && req->http_minor == 0)
        http_buf_printf(out, "Connection: keep-alive\r\n");
    for (size_t i = 0; i < res->nheaders; i++)
        http_buf_printf(out, "%s: %s\r\n", res->headers[i].name, res->headers[i].value);
    http_buf_append(out, "\r\n", 2);
}

/* The one place a complete response is sent. Takes ownership of body. */
static void res_finish(hone_http_res *res, int status, const char *ctype, char *body, size_t len)
{
    hone_http_req *req = res->req;
    if (res->answered || res->streaming || res->file) {
        free(body);
        return;
    }
    if (status < 100 || status > 999)
        status = 500;
    res->answered = 1;
    res->status = status;
    if (req->conn && http_conn_can_write(req->conn)) {
        http_buf out = {0};
        http_res_head(&out, res, status, ctype, len, 0);
        if (!req->is_head && http_res_body_allowed(status))
            http_buf_append(&out, body, len);
        http_conn_write(req->conn, out.data, out.len);
    }
    free(body);
    http_conn_answered(req->conn, req);
}

void hone_http_res_take(hone_http_res *res, int status, const char *content_type, char *body,
                        size_t len)
{
    res_finish(res, status, content_type, body, body ? len : 0);
}

void hone_http_res_text(hone_http_res *res, int status, const char *content_type, const char *body,
                        size_t len)
{
    char *copy = NULL;
    if (body && len) {
        copy = hone_xmalloc(len);
        memcpy(copy, body, len);
    }
    res_finish(res, status, content_type, copy, copy ? len : 0);
}

void hone_http_res_empty(hone_http_res *res, int status)
{
    res_finish(res, status, NULL, NULL, 0);
}

void hone_http_res_json(hone_http_res *res, int status, json_t *body)
{
    char *s = body ? json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY) : hone_xstrdup("{}");
    json_decref(body);
    if (!s) {
        size_t len;
        char *e = http_error_body(500, NULL, "response could not be encoded as JSON", &len);
        res_finish(res, 500, "application/json", e, len);
        return;
    }
    res_finish(res, status, "application/json", s, strlen(s));
}

void hone_http_res_error(hone_http_res *res, int status, const char *field, const char *fmt, ...)
{
    char small[256], *msg = small;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) {
        small[0] = '\0';
    } else if ((size_t)n >= sizeof(small)) {
        msg = hone_xmalloc((size_t)n + 1);
        va_start(ap, fmt);
        vsnprintf(msg, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    size_t len;
    char *body = http_error_body(status, field, msg, &len);
    if (msg != small)
        free(msg);
    res_finish(res, status, "application/json", body, len);
}

int hone_http_res_stream_start(hone_http_res *res, int status, const char *content_type)
{
    hone_http_req *req = res->req;
    if (res->answered || res->streaming || res->file)
        return HONE_ESTATE;
    res->streaming = 1;
    res->status = status;
    if (!req->conn || !http_conn_can_write(req->conn))
        return HONE_ESTATE;
    int chunked = req->http_major > 1 || (req->http_major == 1 && req->http_minor >= 1);
    if (!chunked)
        req->keep_alive = 0;
    http_buf out = {0};
    http_res_head(&out, res, status, content_type, 0, chunked ? 1 : -1);
    http_conn_write(req->conn, out.data, out.len);
    return HONE_OK;
}

static int res_chunked(const hone_http_res *res)
{
    const hone_http_req *req = res->req;
    return req->http_major > 1 || (req->http_major == 1 && req->http_minor >= 1);
}

int hone_http_res_stream_write(hone_http_res *res, const void *data, size_t len)
{
    hone_http_req *req = res->req;
    if (!res->streaming || !req->conn || !http_conn_stream_ok(req->conn))
        return HONE_ESTATE;
    if (len == 0 || req->is_head)
        return HONE_OK;
    http_buf out = {0};
    if (res_chunked(res))
        http_buf_printf(&out, "%zx\r\n", len);
    http_buf_append(&out, data, len);
    if (res_chunked(res))
        http_buf_append(&out, "\r\n", 2);
    http_conn_write(req->conn, out.data, out.len);
    return HONE_OK;
}

void hone_http_res_stream_end(hone_http_res *res)
{
    hone_http_req *req = res->req;
    if (!res->streaming)
        return;
    res->streaming = 0;
    res->answered = 1;
    if (req->conn && http_conn_can_write(req->conn) && res_chunked(res) && !req->is_head)
        http_conn_write(req->conn, hone_xstrdup("0\r\n\r\n"), 5);
    http_conn_answered(req->conn, req);
}

void hone_http_res_on_abort(hone_http_res *res, void (*cb)(hone_http_res *res, void *ud), void *ud)
{
    res->abort_cb = cb;
    res->abort_ud = ud;
}
