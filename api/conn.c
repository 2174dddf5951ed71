/* One client connection: feeding bytes (through strict.c) to http-parser, assembling requests under
 * the limits, queueing pipelined requests and dispatching them one at a time so answers leave in
 * order, timeouts, and a graceful (lingering) close. Never blocks: all I/O is libuv's. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "http_internal.h"

enum { MAX_HEADERS = 100, LINGER_MS = 2000, WRITE_QUEUE_HIGH = 4 << 20 };

typedef struct conn_write_req {
    uv_write_t w;
    char *buf;
    hone_http_conn *conn;
} conn_write_req;

static const hone_http_limits *conn_limits(const hone_http_conn *c)
{
    return &c->server->limits;
}

static uint64_t conn_now_ms(const hone_http_conn *c)
{
    return c->fake ? 1 : uv_now(c->server->loop);
}

/* Marks the request being parsed (or a fresh one) as failed with status; it is queued so that
 * earlier pipelined requests are answered first, and parsing stops: the connection closes after. */
static void conn_fail(hone_http_conn *c, int status, const char *msg)
{
    hone_http_req *req = c->cur;
    if (!req) {
        req = hone_xcalloc(1, sizeof(*req));
        req->conn = c;
        http_res_init(&req->res, req);
        req->start_us = http_now_us();
        req->http_major = 1;
        req->http_minor = 1;
    }
    c->cur = NULL;
    req->body_pending = 0; /* no more of it is read */
    if (!req->err_status) {
        req->err_status = status;
        snprintf(req->err_msg, sizeof(req->err_msg), "%s", msg);
    }
    if (!req->method[0])
        strcpy(req->method, "-");
    req->keep_alive = 0;
    req->allow[0] = '\0';
    http_conn_enqueue(c, req);
    c->stop_parsing = 1;
    c->msg_start_ms = 0;
}

void http_conn_enqueue(hone_http_conn *c, hone_http_req *req)
{
    if (req->queued) /* an upload: queued when its headers came in */
        return;
    req->queued = 1;
    if (c->tail)
        c->tail->next = req;
    else
        c->head = req;
    c->tail = req;
    c->nqueued++;
}

static int header_budget(hone_http_conn *c, size_t n)
{
    c->header_bytes += n;
    if (c->header_bytes > conn_limits(c)->max_header_bytes) {
        char msg[96];
        snprintf(msg, sizeof(msg), "request line and headers exceed %zu bytes",
                 conn_limits(c)->max_header_bytes);
        if (c->cur) {
            c->cur->err_status = 431;
            snprintf(c->cur->err_msg, sizeof(c->cur->err_msg), "%s", msg);
        }
        return -1;
    }
    return 0;
}

static int on_message_begin(http_parser *p)
{
    hone_http_conn *c = p->data;
    hone_http_req *req = hone_xcalloc(1, sizeof(*req));
    req->conn = c;
    http_res_init(&req->res, req);
    req->start_us = http_now_us();
    c->cur = req;
    c->header_bytes = 0;
    c->last_was_value = 0;
    c->url_buf.len = c->hfield.len = c->hvalue.len = 0;
    if (!c->msg_start_ms)
        c->msg_start_ms = conn_now_ms(c);
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
    hone_http_conn *c = p->data;
    if (header_budget(c, len))
        return -1;
    http_buf_append(&c->url_buf, at, len);
    return 0;
}

static int flush_header(hone_http_conn *c)
{
    hone_http_req *req = c->cur;
    if (!c->last_was_value)
        return 0;
    if (req->nheaders >= MAX_HEADERS) {
        req->err_status = 431;
        snprintf(req->err_msg, sizeof(req->err_msg), "more than %d header fields", MAX_HEADERS);
        return -1;
    }
    req->headers = hone_xrealloc(req->headers, (req->nheaders + 1) * sizeof(http_kv));
    http_kv *kv = &req->headers[req->nheaders++];
    kv->name = hone_xstrdup(c->hfield.data ? c->hfield.data : "");
    kv->value = hone_xstrdup(c->hvalue.data ? c->hvalue.data : "");
    /* a NUL inside a field would silently truncate it; the copies above stop there, harmlessly */
    c->hfield.len = c->hvalue.len = 0;
    if (c->hfield.data)
        c->hfield.data[0] = '\0';
    if (c->hvalue.data)
        c->hvalue.data[0] = '\0';
    c->last_was_value = 0;
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
    hone_http_conn *c = p->data;
    if (header_budget(c, len) || flush_header(c))
        return -1;
    http_buf_append(&c->hfield, at, len);
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
    hone_http_conn *c = p->data;
    if (header_budget(c, len))
        return -1;
    http_buf_append(&c->hvalue, at, len);
    c->last_was_value = 1;
    return 0;
}

/* Splits the URL into path and query; "/" when the request target has no path. */
static int req_set_url(hone_http_req *req, const char *url, size_t len, int is_connect)
{
    struct http_parser_url u;
    http_parser_url_init(&u);
    if (len == 0 || memchr(url, '\0', len) || http_parser_parse_url(url, len, is_connect, &u))
        return -1;
    req->url = hone_xstrdup(url);
    if (u.field_set & (1 << UF_PATH)) {
        req->path = hone_xmalloc(u.field_data[UF_PATH].len + 1u);
        memcpy(req->path, url + u.field_data[UF_PATH].off, u.field_data[UF_PATH].len);
        req->path[u.field_data[UF_PATH].len] = '\0';
    } else {
        req->path = hone_xstrdup("/");
    }
    if (req->path[0] != '/')
        return -1;
    if (u.field_set & (1 << UF_QUERY)) {
        req->query_raw = hone_xmalloc(u.field_data[UF_QUERY].len + 1u);
        memcpy(req->query_raw, url + u.field_data[UF_QUERY].off, u.field_data[UF_QUERY].len);
        req->query_raw[u.field_data[UF_QUERY].len] = '\0';
    }
    size_t pl = strlen(req->path);
    req->path_norm = hone_xstrdup(req->path);
    if (pl > 1 && req->path_norm[pl - 1] == '/')
        req->path_norm[pl - 1] = '\0';
    return 0;
}

static int on_headers_complete(http_parser *p)
{
    hone_http_conn *c = p->data;
    hone_http_req *req = c->cur;
    if (flush_header(c))
        return -1;
    snprintf(req->method, sizeof(req->method), "%s", http_method_str(p->method));
    req->http_major = p->http_major;
    req->http_minor = p->http_minor;
    req->keep_alive = http_should_keep_alive(p);
    req->is_head = p->method == HTTP_HEAD;
    req->max_body = conn_limits(c)->max_body_bytes;
    if (req_set_url(req, c->url_buf.data ? c->url_buf.data : "", c->url_buf.len,
                    p->method == HTTP_CONNECT)) {
        req->err_status = 400;
        snprintf(req->err_msg, sizeof(req->err_msg), "malformed request target");
    } else {
        int st = http_route_match(c->server, req, req->allow, sizeof(req->allow));
        if (st == 200 && req->route->max_body)
            req->max_body = req->route->max_body;
        else if (st == 404)
            snprintf(req->err_msg, sizeof(req->err_msg), "no such resource: %.120s", req->path);
        else if (st == 405)
            snprintf(req->err_msg, sizeof(req->err_msg),
                     "method %.20s not allowed here; allowed: %.100s", req->method, req->allow);
        else if (st == 400)
            snprintf(req->err_msg, sizeof(req->err_msg), "bad percent-encoding in path");
        if (st != 200)
            req->err_status = st;
    }
    if (!req->err_status && c->reserve && !req->route->priority) { /* see fair.c */
        req->err_status = 503;
        req->keep_alive = 0; /* frees the reserve slot for the next health check */
        snprintf(req->err_msg, sizeof(req->err_msg),
                 "too many connections: only health checks and worker calls are answered now");
    }
    if (p->content_length != ULLONG_MAX && p->content_length > req->max_body) {
        req->err_status = 413;
        snprintf(req->err_msg, sizeof(req->err_msg), "request body exceeds %zu bytes",
                 req->max_body);
        return -1;
    }
    if (!req->err_status && req->route->begin) {
        http_upload_attach(c, req); /* its begin, then 100 Continue, come when it is due */
        return 0;
    }
    int body_coming =
        (p->flags & F_CHUNKED) || (p->content_length != ULLONG_MAX && p->content_length > 0);
    if (!req->err_status && c->server->filter && body_coming) {
        /* the filter runs in its turn, before the body is kept (conn_gate); so does 100 Continue */
        req->gate = HTTP_GATE_PENDING;
        req->body_pending = 1;
        http_conn_enqueue(c, req);
        return 0;
    }
    const char *expect = hone_http_req_header(req, "expect");
    if (expect && !strcasecmp(expect, "100-continue") && !c->head && !c->fake)
        http_conn_write(c, hone_xstrdup("HTTP/1.1 100 Continue\r\n\r\n"), 25);
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
    hone_http_conn *c = p->data;
    hone_http_req *req = c->cur;
    req->body_seen += len;
    if (req->body_seen > req->max_body) {
        req->err_status = 413;
        snprintf(req->err_msg, sizeof(req->err_msg), "request body exceeds %zu bytes",
                 req->max_body);
        return -1;
    }
    if (req->err_status) /* answered with an error anyway: count the bytes, keep none */
        return 0;
    if (req->up)
        return http_upload_body(req, at, len);
    http_buf_append(&req->body, at, len);
    return 0;
}

static int on_message_complete(http_parser *p)
{
    hone_http_conn *c = p->data;
    hone_http_req *req = c->cur;
    if (p->upgrade)
        req->keep_alive = 0;
    c->cur = NULL;
    c->msg_start_ms = 0;
    c->msgs_parsed++;
    req->body_pending = 0;
    if (req->up)
        http_upload_body_done(req);
    http_conn_enqueue(c, req);
    if (!req->keep_alive) { /* nothing after this request will be read */
        c->stop_parsing = 1;
        http_parser_pause(p, 1);
    }
    return 0;
}

static const http_parser_settings parser_settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

hone_http_conn *http_conn_new(hone_http_server *s, int fake)
{
    hone_http_conn *c = hone_xcalloc(1, sizeof(*c));
    c->server = s;
    c->fake = fake;
    http_parser_init(&c->parser, HTTP_REQUEST);
    c->parser.data = c;
    c->tcp.data = c;
    c->timer.data = c;
    return c;
}

/* Runs http-parser over data, which strict.c has passed. Returns -1 when parsing stopped. */
static int conn_parse(hone_http_conn *c, const char *data, size_t len)
{
    size_t n = http_parser_execute(&c->parser, &parser_settings, data, len);
    enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);
    if (e == HPE_PAUSED) {
        c->stop_parsing = 1;
    } else if (e != HPE_OK) {
        char msg[128];
        if (c->cur && !(e >= HPE_CB_message_begin && e <= HPE_CB_chunk_complete))
            c->cur->err_status = 0; /* the parser's complaint wins over a routing verdict */
        int status = e == HPE_HEADER_OVERFLOW ? 431 : 400;
        snprintf(msg, sizeof(msg), "malformed HTTP request: %s", http_errno_description(e));
        conn_fail(c, status, msg);
    } else if (n < len && c->parser.upgrade) {
        c->stop_parsing = 1; /* the rest belongs to a protocol we do not speak */
    }
    return c->stop_parsing ? -1 : 0;
}

static void conn_fail_framing(hone_http_conn *c, const char *why)
{
    char msg[128];
    if (c->cur) /* bad framing is the answer, whatever routing said */
        c->cur->err_status = 0;
    snprintf(msg, sizeof(msg), "malformed HTTP request: %s", why);
    conn_fail(c, 400, msg);
}

/* Bytes go to the strict framing check first and to http-parser only as far as they passed it,
 * one request at a time: where a request ends by our reckoning, the parser must have ended it
 * too, or the two disagree on framing (a smuggling attempt) and the connection is failed. */
void http_conn_feed(hone_http_conn *c, const char *data, size_t len)
{
    if (c->stop_parsing || c->closing || len == 0)
        return;
    c->got_bytes = 1;
    if (!c->msg_start_ms)
        c->msg_start_ms = conn_now_ms(c);
    while (len > 0 && !c->stop_parsing) {
        size_t used;
        int end;
        const char *why;
        unsigned before = c->msgs_parsed;
        int bad = http_strict_scan(&c->strict, data, len, &used, &end, &why);
        if (used > 0 && conn_parse(c, data, used))
            break;
        if (bad) {
            conn_fail_framing(c, why);
            break;
        }
        if (end && (c->msgs_parsed != before + 1 || c->cur)) {
            conn_fail_framing(c, "ambiguous message framing");
            break;
        }
        data += used;
        len -= used;
    }
    http_conn_pump(c);
}

static void conn_dispatch(hone_http_conn *c, hone_http_req *req)
{
    hone_http_server *s = c->server;
    req->dispatched = 1;
    req->in_handler = 1;
    s->stats.requests_total++;
    if (req->err_status) {
        if (req->err_status == 405 && req->allow[0])
            hone_http_res_header(&req->res, "Allow", req->allow);
        if (req->err_status == 503)
            hone_http_res_header(&req->res, "Retry-After", "1");
        hone_http_res_error(&req->res, req->err_status, NULL, "%s", req->err_msg);
    } else if (!req->route) { /* cannot happen: every queued request was routed or failed */
        hone_http_res_error(&req->res, 500, NULL, "request was not routed");
    } else if (req->up || !s->filter || s->filter(req, &req->res, s->filter_ud) == 0) {
        /* (an upload's filter ran with its begin, before the body) */
        req->route->handler(req, &req->res, req->route->ud);
    }
    req->in_handler = 0;
}

static void conn_linger(hone_http_conn *c);

/* A request whose body was still to come when its headers were in, now at the head of the queue
 * (every earlier answer is out, so this one's leaves in order): the filter runs before any more of
 * the body is read (reading waits for this, so at most the rest of one read is held). A refusal
 * ends the request: none of the body is kept, parsing stops and the connection closes after the
 * answer (keep_alive is cleared before the filter answers, so the answer says so). Once let in,
 * the body is read and the filter runs again before the handler (conn_dispatch): what changed in
 * between (a revoked key) still counts. Returns whether the request can be dispatched (or is
 * answered) now. */
static int conn_gate(hone_http_conn *c, hone_http_req *req)
{
    hone_http_server *s = c->server;
    if (req->gate == HTTP_GATE_PENDING && req->body_pending && !req->err_status) {
        int keep = req->keep_alive;
        req->keep_alive = 0;
        req->in_handler = 1;
        int rc = s->filter(req, &req->res, s->filter_ud);
        req->in_handler = 0;
        if (rc || req->res.answered) {
            if (!req->res.answered)
                hone_http_res_error(&req->res, 500, NULL, "the filter refused without an answer");
            s->stats.requests_total++; /* conn_dispatch, which counts the others, will not run */
            req->dispatched = 1;
            req->body_pending = 0;
            http_buf_free(&req->body);
            if (c->cur == req) {
                c->cur = NULL;
                c->stop_parsing = 1;
                c->msg_start_ms = 0;
            }
            return 1;
        }
        req->keep_alive = keep;
        req->gate = HTTP_GATE_PASSED;
        if (c->cur == req) /* the client may have waited on earlier answers: its clock restarts */
            c->msg_start_ms = conn_now_ms(c);
        const char *expect = hone_http_req_header(req, "expect");
        if (expect && !strcasecmp(expect, "100-continue") && !c->fake)
            http_conn_write(c, hone_xstrdup("HTTP/1.1 100 Continue\r\n\r\n"), 25);
    }
    return !req->body_pending || req->err_status;
}

/* Whether reading waits for the request being received to pass its filter (conn_gate). */
static int conn_gate_holds(const hone_http_conn *c)
{
    return c->cur && c->cur->gate == HTTP_GATE_PENDING && c->cur->body_pending;
}

/* Reading is paused while too many requests wait, or the client does not read its answers. */
static void conn_update_reading(hone_http_conn *c)
{
    if (c->fake || c->closing)
        return;
    /* reading goes on after parsing stopped (bytes are dropped) so a vanished client is noticed */
    int want = c->lingering || (!c->eof && c->nqueued < conn_limits(c)->max_pipelined &&
                                c->tcp.write_queue_size < WRITE_QUEUE_HIGH &&
                                !http_upload_holds_reading(c) && !conn_gate_holds(c));
    if (want && !c->reading) {
        http_server_read_start(c);
    } else if (!want && c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = 0;
    }
}

void http_conn_pump(hone_http_conn *c)
{
    if (c->pumping || c->closing)
        return;
    c->pumping = 1;
    while (c->head && !c->closing) {
        hone_http_req *req = c->head;
        if (req->up && !req->dispatched && !http_upload_ready(c, req))
            break; /* an upload: its handler waits for the whole body on disk */
        /* A client that does not read its answers gets no more made: each would wait in memory.
         * Reading is paused too, but one read may hold hundreds of pipelined requests; on_write
         * pumps again as the queue drains. */
        if (!req->dispatched && !c->fake && c->tcp.write_queue_size >= WRITE_QUEUE_HIGH)
            break;
        if (!req->up && !req->dispatched && !conn_gate(c, req))
            break; /* let in, its body still arriving */
        if (!req->dispatched)
            conn_dispatch(c, req);
        if (req->res.file) /* a file answer: its next chunk, if the write queue has room */
            http_file_pump(req);
        if (!req->res.answered)
            break;
        c->head = req->next;
        if (!c->head)
            c->tail = NULL;
        c->nqueued--;
        int keep = req->keep_alive;
        http_req_free(req);
        if (!keep) {
            c->close_after_flush = 1;
            break;
        }
    }
    c->pumping = 0;
    if (c->closing)
        return;
    if (c->close_after_flush && c->writes_pending == 0)
        conn_linger(c);
    else if (c->eof && !c->head && c->writes_pending == 0)
        http_conn_close(c);
    conn_update_reading(c);
    http_conn_arm_timer(c);
}

int http_conn_can_write(const hone_http_conn *c)
{
    return !c->closing && !c->lingering;
}

/* A stream to a client that stopped reading would grow without bound: give up on it. */
int http_conn_stream_ok(hone_http_conn *c)
{
    if (!http_conn_can_write(c))
        return 0;
    if (!c->fake && c->tcp.write_queue_size > 4 * WRITE_QUEUE_HIGH) {
        http_conn_close(c);
        return 0;
    }
    return 1;
}

void http_conn_answered(hone_http_conn *c, hone_http_req *req)
{
    if (!c) { /* the client left before this deferred answer: nobody to tell */
        if (!req->in_handler)
            http_req_free(req);
        return;
    }
    hone_http_server *s = c->server;
    int st = req->res.status;
    if (st >= 200 && st < 300)
        s->stats.responses_2xx++;
    else if (st >= 400 && st < 500)
        s->stats.responses_4xx++;
    else if (st >= 500)
        s->stats.responses_5xx++;
    if (s->log)
        s->log(req->method[0] ? req->method : "-", req->path ? req->path : "-", st,
               http_now_us() - req->start_us, s->log_ud);
    http_conn_pump(c);
}

static void on_write(uv_write_t *w, int status)
{
    conn_write_req *wr = (conn_write_req *)w;
    hone_http_conn *c = wr->conn;
    free(wr->buf);
    free(wr);
    c->writes_pending--;
    if (c->closing)
        return;
    if (status < 0) {
        http_conn_close(c);
        return;
    }
    if (c->writes_pending == 0 && c->close_after_flush && !c->lingering)
        conn_linger(c);
    else if (c->writes_pending == 0 && c->eof && !c->head)
        http_conn_close(c);
    else
        http_conn_pump(c); /* requests held back while the queue was full; reading, the timer */
}

void http_conn_write(hone_http_conn *c, char *buf, size_t len)
{
    if (c->fake) {
        if (c->fake_out.len < (1u << 20))
            http_buf_append(&c->fake_out, buf, len);
        else
            c->fake_out.len += len;
        free(buf);
        return;
    }
    if (c->closing || c->lingering) {
        free(buf);
        return;
    }
    conn_write_req *wr = hone_xmalloc(sizeof(*wr));
    wr->buf = buf;
    wr->conn = c;
    uv_buf_t b = uv_buf_init(buf, (unsigned)len);
    if (uv_write(&wr->w, (uv_stream_t *)&c->tcp, &b, 1, on_write) < 0) {
        free(buf);
        free(wr);
        http_conn_close(c);
        return;
    }
    c->writes_pending++;
}

static void on_shutdown(uv_shutdown_t *r, int status)
{
    hone_http_conn *c = r->data;
    if (status < 0 && !c->closing)
        http_conn_close(c);
}

/* Every answer is written: send FIN, then drain what the client still sends for a moment before
 * closing. Closing at once with unread input makes the kernel send RST, which can destroy the
 * answer (e.g. a 413) before the client has read it. */
static void conn_linger(hone_http_conn *c)
{
    if (c->lingering || c->closing)
        return;
    if (c->fake || c->eof) {
        http_conn_close(c);
        return;
    }
    c->lingering = 1;
    c->stop_parsing = 1;
    c->shut.data = c;
    if (uv_shutdown(&c->shut, (uv_stream_t *)&c->tcp, on_shutdown) < 0) {
        http_conn_close(c);
        return;
    }
    conn_update_reading(c);
    http_conn_arm_timer(c);
}

void http_conn_expire(hone_http_conn *c, unsigned limit_ms)
{
    if (c->msg_start_ms && !c->stop_parsing) {
        char msg[96];
        if (c->cur) /* slowness is the answer, whatever routing said */
            c->cur->err_status = 0;
        snprintf(msg, sizeof(msg), "request not received within %u ms", limit_ms);
        conn_fail(c, 408, msg);
        http_conn_pump(c);
        return;
    }
    http_conn_close(c);
}

static void on_timer(uv_timer_t *t)
{
    hone_http_conn *c = t->data;
    if (c->closing)
        return;
    if (c->lingering) {
        http_conn_close(c);
        return;
    }
    hone_http_req *h = c->head;
    if (h && h->res.file && c->writes_pending) { /* a file answer: did its client read? */
        if (http_file_stalled(h, c->tcp.write_queue_size))
            http_conn_close(c);
        else
            uv_timer_start(&c->timer, on_timer, conn_limits(c)->idle_timeout_ms, 0);
        return;
    }
    if (h && (h->dispatched || http_upload_writing(h)) && !h->res.answered)
        return; /* a deferred answer (or an upload going to disk): its handler owns the clock */
    http_conn_expire(c, conn_limits(c)->request_timeout_ms);
}

void http_conn_arm_timer(hone_http_conn *c)
{
    if (c->fake || c->closing)
        return;
    http_fair_update(c); /* every change of state ends here */
    const hone_http_limits *l = conn_limits(c);
    uint64_t now = uv_now(c->server->loop), deadline;
    hone_http_req *h = c->head;
    if (c->lingering) {
        if (!uv_is_active((uv_handle_t *)&c->timer) || c->timer.timeout > now + LINGER_MS)
            uv_timer_start(&c->timer, on_timer, LINGER_MS, 0);
        return;
    }
    /* a file answer being written: its client's reading is the clock, restarted by each write */
    if (h && h->res.file && c->writes_pending) {
        http_file_mark(h, c->tcp.write_queue_size);
        uv_timer_start(&c->timer, on_timer, l->idle_timeout_ms, 0);
        return;
    }
    if (h && (h->dispatched || http_upload_writing(h)) && !h->res.answered &&
        c->writes_pending == 0) {
        uv_timer_stop(&c->timer);
        return;
    }
    if (c->msg_start_ms && !c->stop_parsing)
        deadline = c->msg_start_ms + l->request_timeout_ms;
    else
        deadline = now + l->idle_timeout_ms;
    uv_timer_start(&c->timer, on_timer, deadline > now ? deadline - now : 0, 0);
}

void http_conn_on_eof(hone_http_conn *c)
{
    c->eof = 1;
    c->stop_parsing = 1;
    /* After a pump the head, if any, is a deferred answer: its client has gone, so abort it. With
     * no head, close once the last answer is written (on_write sees eof). A file answer under way
     * goes on: a client may half-close after its request and read the file (as it would have read
     * any other answer written whole); one that has really gone fails the next write. */
    int file = c->head && c->head->res.file;
    if ((c->head && !file) || c->lingering || (c->writes_pending == 0 && !file))
        http_conn_close(c);
    else
        conn_update_reading(c);
}

static void on_handle_close(uv_handle_t *h)
{
    hone_http_conn *c = h->data;
    if (--c->handles_open > 0)
        return;
    http_conn_release_requests(c);
    http_server_conn_gone(c->server, c);
}

void http_conn_close(hone_http_conn *c)
{
    if (c->closing)
        return;
    c->closing = 1;
    if (c->fake)
        return;
    http_fair_forget(c);
    uv_close((uv_handle_t *)&c->tcp, on_handle_close);
    uv_close((uv_handle_t *)&c->timer, on_handle_close);
}

/* After the handles are closed: queued requests go; a deferred one gets its abort callback (then
 * goes) or, without one, lives on detached until its handler answers. A file answer under way is
 * given up (http_req_free closes its file). */
void http_conn_release_requests(hone_http_conn *c)
{
    if (c->cur && !c->cur->queued) /* an upload being received is in the queue too */
        http_req_free(c->cur);
    c->cur = NULL;
    hone_http_req *req = c->head;
    c->head = c->tail = NULL;
    while (req) {
        hone_http_req *next = req->next;
        req->next = NULL;
        req->conn = NULL;
        if (req->dispatched && !req->res.answered && !req->res.file) {
            if (req->res.abort_cb) {
                req->in_handler = 1; /* an answer from inside the callback must not free req */
                req->res.abort_cb(&req->res, req->res.abort_ud);
                http_req_free(req);
            }
        } else {
            http_req_free(req);
        }
        req = next;
    }
    http_buf_free(&c->url_buf);
    http_buf_free(&c->hfield);
    http_buf_free(&c->hvalue);
    http_buf_free(&c->fake_out);
}
