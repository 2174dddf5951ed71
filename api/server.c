/* The server: limits, listening socket, accepting connections (admitted, or answered 503, as
 * fair.c decides), reading into each connection, orderly shutdown that closes every handle, and
 * the fuzzing entry point that drives a connection without a socket. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "http_internal.h"

/* Connections accepted per loop iteration. libuv would otherwise accept the whole backlog in one
 * go: under a flood that reconnects as fast as it is evicted, the loop would do little else and
 * requests on open connections would wait. Larger batches shorten the wait of new connections
 * behind such a flood at the cost of the open ones; 256 was the best trade measured (bench_load
 * --idle-reconnect, bench/README.md). */
enum { ACCEPT_BATCH = 256 };

/* A burst of connects (a flood, or every worker reconnecting at once) waits in the kernel rather
 * than being dropped, which costs a client a 1 s SYN retry. Capped by net.core.somaxconn. */
enum { LISTEN_BACKLOG = 4096 };

void hone_http_limits_default(hone_http_limits *l)
{
    l->max_header_bytes = 16 * 1024;
    l->max_body_bytes = 1024 * 1024;
    l->max_json_depth = 32;
    l->max_string_bytes = 64 * 1024;
    l->idle_timeout_ms = 30000;
    l->request_timeout_ms = 30000;
    l->max_connections = 1024;
    l->max_pipelined = 16;
    l->max_per_address = 256;
    l->reserve_connections = 32;
    l->busy_timeout_ms = 2000;
}

/* Descriptors must run out after the connection limit does, never before: an accept failing with
 * EMFILE serves nobody. The rest of the process (store, files, thread pool) keeps 1/8 of them. */
static void limits_fit_descriptors(hone_http_limits *l)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY)
        return;
    long fds = (long)r.rlim_cur, spare = fds / 8 > 128 ? fds / 8 : 128;
    long room = fds - spare > 2 ? fds - spare : 2;
    if (l->reserve_connections > room / 8)
        l->reserve_connections = (int)(room / 8);
    if ((long)l->max_connections + l->reserve_connections > room)
        l->max_connections = (int)(room - l->reserve_connections);
    if (l->max_per_address > l->max_connections)
        l->max_per_address = l->max_connections;
}

uint64_t http_now_us(void)
{
    return uv_hrtime() / 1000;
}

int hone_http_server_new(uv_loop_t *loop, const hone_http_limits *limits, hone_http_server **out)
{
    if (!loop || !out)
        return HONE_EINVAL;
    hone_http_server *s = hone_xcalloc(1, sizeof(*s));
    s->loop = loop;
    hone_http_limits_default(&s->limits);
    if (limits) {
        s->limits = *limits;
        hone_http_limits l;
        hone_http_limits_default(&l);
        if (!s->limits.max_body_bytes)
            s->limits.max_body_bytes = l.max_body_bytes;
        if (!s->limits.max_header_bytes)
            s->limits.max_header_bytes = l.max_header_bytes;
        if (s->limits.max_json_depth <= 0)
            s->limits.max_json_depth = l.max_json_depth;
        if (!s->limits.max_string_bytes)
            s->limits.max_string_bytes = l.max_string_bytes;
        if (!s->limits.idle_timeout_ms)
            s->limits.idle_timeout_ms = l.idle_timeout_ms;
        if (!s->limits.request_timeout_ms)
            s->limits.request_timeout_ms = l.request_timeout_ms;
        if (s->limits.max_connections <= 0)
            s->limits.max_connections = l.max_connections;
        if (s->limits.max_pipelined <= 0)
            s->limits.max_pipelined = l.max_pipelined;
        if (s->limits.max_per_address <= 0) /* a quarter of what was asked for, not of 1024 */
            s->limits.max_per_address =
                s->limits.max_connections / 4 ? s->limits.max_connections / 4 : 1;
        if (s->limits.reserve_connections == 0)
            s->limits.reserve_connections = l.reserve_connections;
        else if (s->limits.reserve_connections < 0)
            s->limits.reserve_connections = 0;
        if (!s->limits.busy_timeout_ms)
            s->limits.busy_timeout_ms = l.busy_timeout_ms;
    }
    limits_fit_descriptors(&s->limits);
    if (uv_tcp_init(loop, &s->listener) < 0) {
        free(s);
        return HONE_EIO;
    }
    s->listener.data = s;
    s->listener_open = 1;
    uv_prepare_init(loop, &s->tick);
    s->tick.data = s;
    s->tick_open = 1;
    http_fair_init(s);
    *out = s;
    return HONE_OK;
}

void hone_http_set_filter(hone_http_server *s, hone_http_filter f, void *ud)
{
    s->filter = f;
    s->filter_ud = ud;
}

void hone_http_set_access_log(hone_http_server *s, hone_http_access_log f, void *ud)
{
    s->log = f;
    s->log_ud = ud;
}

void hone_http_server_stats(const hone_http_server *s, hone_http_stats *out)
{
    *out = s->stats;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    hone_http_conn *c = h->data;
    (void)suggested;
    *buf = uv_buf_init(c->server->rbuf, sizeof(c->server->rbuf));
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    hone_http_conn *c = st->data;
    if (c->closing)
        return;
    if (nread == UV_EOF) {
        http_conn_on_eof(c);
        return;
    }
    if (nread < 0) {
        http_conn_close(c);
        return;
    }
    if (nread == 0 || c->lingering)
        return;
    if (c->stop_parsing) { /* dropped, but a client trickling bytes does not keep us forever */
        return;
    }
    http_conn_feed(c, buf->base, (size_t)nread);
}

void http_server_read_start(hone_http_conn *c)
{
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
        c->reading = 1;
    else
        http_conn_close(c);
}

static void conn_set_peer(hone_http_conn *c, struct sockaddr_storage *ss)
{
    int len = sizeof(*ss);
    char host[INET6_ADDRSTRLEN] = "?";
    strcpy(c->peer, "-");
    memset(ss, 0, sizeof(*ss));
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)ss, &len) < 0)
        return;
    if (ss->ss_family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)ss;
        uv_ip4_name(a, host, sizeof(host));
        snprintf(c->peer, sizeof(c->peer), "%s:%d", host, ntohs(a->sin_port));
    } else if (ss->ss_family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        uv_ip6_name(a, host, sizeof(host));
        snprintf(c->peer, sizeof(c->peer), "[%s]:%d", host, ntohs(a->sin6_port));
    }
}

static void server_accept(hone_http_server *s);

static void on_connection(uv_stream_t *listener, int status)
{
    hone_http_server *s = listener->data;
    if (s->closing)
        return;
    if (status < 0) {
        /* Out of descriptors. libuv has accepted and dropped the waiting clients with the one it
         * keeps spare, so the listener does not spin; close a connection to make room. */
        if (status == UV_EMFILE || status == UV_ENFILE) {
            s->stats.connections_rejected++;
            http_fair_make_room(s);
        }
        return;
    }
    if (s->accepted_this_tick >= ACCEPT_BATCH) {
        /* left pending: libuv stops watching the listener until on_tick accepts it */
        s->accept_pending = 1;
        return;
    }
    server_accept(s);
}

/* Before the loop polls again: a new batch of accepts. */
static void on_tick(uv_prepare_t *p)
{
    hone_http_server *s = p->data;
    s->accepted_this_tick = 0;
    if (s->accept_pending && !s->closing) {
        s->accept_pending = 0;
        server_accept(s);
    }
}

static void server_accept(hone_http_server *s)
{
    uv_stream_t *listener = (uv_stream_t *)&s->listener;
    struct sockaddr_storage ss;
    s->accepted_this_tick++;
    hone_http_conn *c = http_conn_new(s, 0);
    uv_tcp_init(s->loop, &c->tcp);
    uv_timer_init(s->loop, &c->timer);
    c->handles_open = 2;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->stats.connections_open++;
    s->stats.connections_total++;
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) < 0) {
        http_conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    conn_set_peer(c, &ss);
    if (http_fair_admit(s, c, &ss) < 0) {
        size_t blen;
        char *body = http_error_body(503, NULL, "too many connections", &blen);
        http_buf out = {0};
        http_buf_printf(&out,
                        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                        "Content-Length: %zu\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s",
                        blen, body);
        free(body);
        s->stats.connections_rejected++;
        c->stop_parsing = 1;
        c->close_after_flush = 1;
        http_server_read_start(c);
        http_conn_write(c, out.data, out.len);
        http_conn_pump(c); /* nothing queued: lingers once the 503 is written */
        return;
    }
    http_server_read_start(c);
    http_conn_arm_timer(c);
}

int hone_http_listen(hone_http_server *s, const char *host, int port, int *bound_port)
{
    struct sockaddr_storage ss;
    if (!s || !host || port < 0 || port > 65535 || s->closing)
        return HONE_EINVAL;
    if (s->listening)
        return HONE_ESTATE;
    if (uv_ip4_addr(host, port, (struct sockaddr_in *)&ss) != 0 &&
        uv_ip6_addr(host, port, (struct sockaddr_in6 *)&ss) != 0)
        return HONE_EINVAL;
    if (uv_tcp_bind(&s->listener, (struct sockaddr *)&ss, 0) < 0 ||
        uv_listen((uv_stream_t *)&s->listener, LISTEN_BACKLOG, on_connection) < 0)
        return HONE_EIO;
    s->listening = 1;
    uv_prepare_start(&s->tick, on_tick);
    uv_unref((uv_handle_t *)&s->tick); /* it must not keep the loop alive by itself */
    if (bound_port) {
        struct sockaddr_storage name;
        int len = sizeof(name);
        if (uv_tcp_getsockname(&s->listener, (struct sockaddr *)&name, &len) < 0)
            return HONE_EIO;
        *bound_port = ntohs(name.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&name)->sin6_port
                                                       : ((struct sockaddr_in *)&name)->sin_port);
    }
    return HONE_OK;
}

void http_server_maybe_done(hone_http_server *s)
{
    if (!s->closing || s->listener_open || s->tick_open || s->sweep_open || s->conns ||
        !s->close_done || http_uploads_live(s) || s->files_live)
        return;
    void (*done)(void *) = s->close_done;
    s->close_done = NULL;
    done(s->close_arg);
}

void http_server_conn_gone(hone_http_server *s, hone_http_conn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->stats.connections_open--;
    free(c);
    http_server_maybe_done(s);
}

static void on_listener_close(uv_handle_t *h)
{
    hone_http_server *s = h->data;
    s->listener_open = 0;
    http_server_maybe_done(s);
}

static void on_tick_close(uv_handle_t *h)
{
    hone_http_server *s = h->data;
    s->tick_open = 0;
    http_server_maybe_done(s);
}

void hone_http_server_close(hone_http_server *s, void (*done)(void *arg), void *arg)
{
    if (s->closing)
        return;
    s->closing = 1;
    s->close_done = done;
    s->close_arg = arg;
    if (s->listener_open)
        uv_close((uv_handle_t *)&s->listener, on_listener_close);
    if (s->tick_open)
        uv_close((uv_handle_t *)&s->tick, on_tick_close);
    http_fair_close(s);
    for (hone_http_conn *c = s->conns; c; c = c->next)
        http_conn_close(c);
}

void hone_http_server_free(hone_http_server *s)
{
    if (!s)
        return;
    http_routes_free(s);
    http_uploads_free(s);
    http_fair_free(s);
    free(s);
}

size_t hone_http__feed_for_fuzz(hone_http_server *s, const char *data, size_t len, size_t chunk)
{
    hone_http_conn *c = http_conn_new(s, 1);
    if (chunk == 0)
        chunk = len ? len : 1;
    for (size_t off = 0; off < len && !c->closing; off += chunk)
        http_conn_feed(c, data + off, len - off < chunk ? len - off : chunk);
    size_t out = c->fake_out.len;
    http_conn_close(c);
    http_conn_release_requests(c);
    free(c);
    return out;
}
