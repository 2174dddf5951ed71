/* The fixture of the api/ server tests (see http_test_server.h): test route handlers, a deferred
 * answer from a timer, a long-poll that only its abort callback ends, the filter and access log,
 * and the loop thread with its orderly shutdown. */
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "http_test_server.h"

int port, port_small, port_fair;
char upload_dir[64], file_dir[64];
atomic_int file_ends_complete, file_ends_given_up;
atomic_int aborted, zombie_answered, log_count, hangs;
static uv_loop_t loop;
static uv_async_t stop_async;
static hone_http_server *srv, *srv_small, *srv_fair;
static pthread_t loop_tid;

/* ---- handlers (loop thread) ------------------------------------------------------------------ */

static void h_hello(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)req;
    (void)ud;
    hone_http_res_header(res, "X-Test", "1");
    hone_http_res_text(res, 200, "text/plain", "hello", 5);
}

static void h_echo_params(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)ud;
    const char *q = hone_http_req_query(req, "q");
    hone_http_res_json(res, 200,
                       json_pack("{s:s, s:s?, s:s}", "id", hone_http_req_param(req, "id"), "q", q,
                                 "route", hone_http_req_route(req)));
}

static void h_body_len(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)ud;
    size_t len;
    const char *b = hone_http_req_body(req, &len);
    hone_http_res_json(res, 200, json_pack("{s:i, s:s%}", "len", (int)len, "body", b, len));
}

static void h_json(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)ud;
    json_t *j = hone_http_req_json(req, res);
    if (!j)
        return;
    hone_http_res_json(res, 201, j);
}

static const char *const kinds[] = {"train", "evaluate", "export", NULL};

const hone_json_field job_fields[4] = {
    {.name = "kind", .type = HONE_JSON_STRING, .required = 1, .enum_values = kinds},
    {.name = "name", .type = HONE_JSON_STRING, .min_len = 1, .max_len = 8},
    {.name = "epochs", .type = HONE_JSON_INT, .has_range = 1, .min = 1, .max = 100},
    {.name = "spec", .type = HONE_JSON_OBJECT},
};

static const hone_json_field spec_fields[] = {
    {.name = "lr", .type = HONE_JSON_NUMBER, .required = 1, .has_range = 1, .min = 0, .max = 1},
};

static void h_validate(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)ud;
    json_t *j = hone_http_req_json(req, res);
    if (!j)
        return;
    json_t *spec = json_object_get(j, "spec");
    if (hone_json_check(j, job_fields, HONE_ARRAY_LEN(job_fields), res) == 0 &&
        (!spec ||
         hone_json_check_prefix(spec, "spec", spec_fields, HONE_ARRAY_LEN(spec_fields), res) == 0))
        hone_http_res_empty(res, 204);
    json_decref(j);
}

typedef struct deferred {
    uv_timer_t timer;
    hone_http_res *res;
} deferred;

static void deferred_closed(uv_handle_t *h)
{
    free(h->data);
}

static void deferred_fire(uv_timer_t *t)
{
    deferred *d = t->data;
    hone_http_res_text(d->res, 200, "text/plain", "late", 4);
    atomic_fetch_add(&zombie_answered, 1);
    uv_close((uv_handle_t *)&d->timer, deferred_closed);
}

/* Answers 150 ms (or ?ms=) later from a timer, with no abort callback: survives its client
 * leaving. */
static void h_slow(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)ud;
    const char *ms = hone_http_req_query(req, "ms");
    deferred *d = calloc(1, sizeof(*d));
    d->res = res;
    uv_timer_init(&loop, &d->timer);
    d->timer.data = d;
    uv_timer_start(&d->timer, deferred_fire, ms ? strtoul(ms, NULL, 10) : 150, 0);
}

static void hang_abort(hone_http_res *res, void *ud)
{
    (void)res;
    (void)ud;
    atomic_fetch_add(&aborted, 1);
}

/* A long-poll that never answers: only the abort callback ends it. */
static void h_hang(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)req;
    (void)ud;
    hone_http_res_on_abort(res, hang_abort, NULL);
    atomic_fetch_add(&hangs, 1);
}

static void h_stream(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)req;
    (void)ud;
    hone_http_res_stream_start(res, 200, "text/plain");
    hone_http_res_stream_write(res, "ab", 2);
    hone_http_res_stream_write(res, "cde", 3);
    hone_http_res_stream_end(res);
}

static int filter(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)ud;
    const char *p = hone_http_req_path(req);
    if (!strncmp(p, "/secret", 7) && !hone_http_req_header(req, "authorization")) {
        hone_http_res_error(res, 401, NULL, "missing token");
        return 1;
    }
    return 0;
}

/* Upload routes: begin refuses with X-Refuse (403) before any byte is stored, else spools into
 * upload_dir; X-Owner names whose upload it is and X-Priority makes it a priority one (its class,
 * hone_http_req_set_upload_class). The handler answers the body's size and FNV-1a hash (read back
 * from the file), and with ?keep=1 takes the file and renames it to upload_dir/<name>. */
static int up_begin(hone_http_req *req, hone_http_res *res, void *ud, char *dir, size_t cap)
{
    (void)ud;
    if (hone_http_req_header(req, "x-refuse")) {
        hone_http_res_error(res, 403, "X-Refuse", "refused before the body");
        return 1;
    }
    const char *owner = hone_http_req_header(req, "x-owner");
    if ((owner || hone_http_req_header(req, "x-priority")) &&
        hone_http_req_set_upload_class(req, owner, hone_http_req_header(req, "x-priority") != NULL))
        return 1;
    snprintf(dir, cap, "%s", upload_dir);
    return 0;
}

static void up_done(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)ud;
    const char *path = hone_http_req_body_file(req);
    size_t blen = 1;
    hone_http_req_body(req, &blen);
    uint64_t h = 14695981039346656037ull, n = 0;
    char buf[65536];
    int fd = path ? open(path, O_RDONLY) : -1;
    for (ssize_t k; fd >= 0 && (k = read(fd, buf, sizeof(buf))) > 0; n += (uint64_t)k)
        for (ssize_t i = 0; i < k; i++)
            h = (h ^ (unsigned char)buf[i]) * 1099511628211ull;
    if (fd >= 0)
        close(fd);
    if (!path || n != hone_http_req_body_file_size(req) || blen != 0) {
        hone_http_res_error(res, 500, NULL, "spooled file missing or wrong size");
        return;
    }
    const char *keep = hone_http_req_query(req, "keep");
    if (keep) {
        char *tmp = hone_http_req_body_file_take(req), dst[128];
        snprintf(dst, sizeof(dst), "%s/%s", upload_dir, hone_http_req_param(req, "name"));
        int bad = rename(tmp, dst);
        free(tmp);
        if (bad) {
            hone_http_res_error(res, 500, NULL, "rename failed");
            return;
        }
    }
    char hex[17];
    snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)h);
    hone_http_res_json(res, keep ? 201 : 200,
                       json_pack("{s:I, s:s}", "size", (json_int_t)n, "fnv", hex));
}

static void h_upstats(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)req;
    (void)ud;
    hone_http_upload_stats st;
    hone_http_upload_stats_get(srv, &st);
    hone_http_res_json(
        res, 200,
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "active", (json_int_t)st.active, "waiting",
                  (json_int_t)st.waiting, "buffered", (json_int_t)st.buffered_bytes, "peak",
                  (json_int_t)st.buffered_peak, "uploads", (json_int_t)st.uploads_total, "busy",
                  (json_int_t)st.refused_busy));
}

static void file_end(void *ud, int complete)
{
    (void)ud;
    atomic_fetch_add(complete ? &file_ends_complete : &file_ends_given_up, 1);
}

/* A download of file_dir/<name>: the whole, or the one Range asked for. */
static void h_file(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)ud;
    char p[160];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s", file_dir, hone_http_req_param(req, "name"));
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st)) {
        if (fd >= 0)
            close(fd);
        hone_http_res_error(res, 404, "name", "no such file");
        return;
    }
    hone_http_res_download(res, "application/octet-stream", fd, (uint64_t)st.st_size, file_end,
                           NULL);
}

/* A handler that answers, then (wrongly) answers again with a file: ignored, the fd closed. */
static void h_file_twice(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)req;
    (void)ud;
    char p[160];
    snprintf(p, sizeof(p), "%s/small", file_dir);
    hone_http_res_text(res, 200, "text/plain", "first", 5);
    hone_http_res_file(res, 200, "text/plain", open(p, O_RDONLY | O_CLOEXEC), 0, 3, file_end, NULL);
}

static void access_log(const char *m, const char *p, int st, uint64_t us, void *ud)
{
    (void)m, (void)p, (void)st, (void)us, (void)ud;
    atomic_fetch_add(&log_count, 1);
}

/* ---- server thread --------------------------------------------------------------------------- */

static void closed_one(void *arg)
{
    (void)arg;
}

static void on_stop(uv_async_t *a)
{
    hone_http_server_close(srv, closed_one, NULL);
    hone_http_server_close(srv_small, closed_one, NULL);
    hone_http_server_close(srv_fair, closed_one, NULL);
    uv_close((uv_handle_t *)a, NULL);
}

static void *loop_thread(void *arg)
{
    (void)arg;
    uv_run(&loop, UV_RUN_DEFAULT);
    return NULL;
}

int hts_start(void)
{
    hone_http_limits l;
    hone_http_limits_default(&l);
    l.max_header_bytes = 1024;
    l.max_body_bytes = 1024;
    l.max_json_depth = 8;
    l.max_string_bytes = 256;
    l.idle_timeout_ms = 300;
    l.request_timeout_ms = 600;
    uv_loop_init(&loop);
    uv_async_init(&loop, &stop_async, on_stop);
    if (hone_http_server_new(&loop, &l, &srv))
        return -1;
    struct {
        const char *m, *p;
        hone_http_handler h;
    } routes[] = {
        {"GET", "/hello", h_hello},
        {"GET", "/jobs/{id}", h_echo_params},
        {"GET", "/jobs/stats", h_hello},
        {"POST", "/jobs/{id}/body", h_body_len},
        {"POST", "/json", h_json},
        {"POST", "/validate", h_validate},
        {"GET", "/slow", h_slow},
        {"GET", "/hang", h_hang},
        {"GET", "/stream", h_stream},
        {"GET", "/secret", h_hello},
        {"DELETE", "/hello", h_hello},
        {"GET", "/upstats", h_upstats},
        {"POST", "/secret/body", h_body_len},
        {"GET", "/file/{name}", h_file},
        {"GET", "/file-twice", h_file_twice},
    };
    for (size_t i = 0; i < HONE_ARRAY_LEN(routes); i++)
        if (hone_http_route(srv, routes[i].m, routes[i].p, routes[i].h, NULL))
            return -1;
    if (hone_http_route(srv, "GET", "/hello", h_hello, NULL) != HONE_EEXIST ||
        hone_http_route(srv, "GET", "no-slash", h_hello, NULL) != HONE_EINVAL ||
        hone_http_route(srv, "GET", "/a/{}", h_hello, NULL) != HONE_EINVAL ||
        hone_http_route(srv, "get", "/a", h_hello, NULL) != HONE_EINVAL)
        return -1;
    if (hone_http_route_ex(srv, "POST", "/upload", 4096, h_body_len, NULL))
        return -1;
    snprintf(file_dir, sizeof(file_dir), "/tmp/hone-http-file-XXXXXX");
    if (!mkdtemp(file_dir))
        return -1;
    snprintf(upload_dir, sizeof(upload_dir), "/tmp/hone-http-up-XXXXXX");
    hone_http_upload_limits ul = {.max_uploads = 2,
                                  .max_waiting = 1,
                                  .buffer_bytes = UPLOAD_TEST_BUFFER,
                                  .inflight_bytes = UPLOAD_TEST_INFLIGHT};
    hone_http_set_upload_limits(srv, &ul);
    if (!mkdtemp(upload_dir) ||
        hone_http_route_upload(srv, "PUT", "/up/{name}", 32 << 20, up_begin, up_done, NULL) ||
        hone_http_route_upload(srv, "PUT", "/secret/up", 1 << 20, up_begin, up_done, NULL) ||
        hone_http_route_upload(srv, "PUT", "/up/{name}", 0, up_begin, up_done, NULL) != HONE_EEXIST)
        return -1;
    hone_http_set_filter(srv, filter, NULL);
    hone_http_set_access_log(srv, access_log, NULL);
    if (hone_http_listen(srv, "127.0.0.1", 0, &port))
        return -1;
    l.max_connections = 1;
    l.reserve_connections = -1;
    if (hone_http_server_new(&loop, &l, &srv_small) ||
        hone_http_route(srv_small, "GET", "/hello", h_hello, NULL) ||
        hone_http_route(srv_small, "GET", "/hang", h_hang, NULL) ||
        hone_http_listen(srv_small, "127.0.0.1", 0, &port_small))
        return -1;
    /* fair connections: 64 slots, 16 per address (the default quarter), a reserve of 4 */
    l.max_connections = 64;
    l.reserve_connections = 4;
    l.idle_timeout_ms = l.request_timeout_ms = 20000;
    l.busy_timeout_ms = 600;
    if (hone_http_server_new(&loop, &l, &srv_fair) ||
        hone_http_route(srv_fair, "GET", "/hello", h_hello, NULL) ||
        hone_http_route(srv_fair, "GET", "/healthz", h_hello, NULL) ||
        hone_http_route(srv_fair, "GET", "/hang", h_hang, NULL) ||
        hone_http_route(srv_fair, "GET", "/poll", h_hang, NULL) ||
        hone_http_route_priority(srv_fair, "GET", "/healthz") ||
        hone_http_route_priority(srv_fair, NULL, "/poll") ||
        hone_http_route_priority(srv_fair, "POST", "/poll") != HONE_ENOENT ||
        hone_http_listen(srv_fair, "127.0.0.1", 0, &port_fair))
        return -1;
    return pthread_create(&loop_tid, NULL, loop_thread, NULL) ? -1 : 0;
}

int hts_stop(void)
{
    int failed = 0;
    /* a long-poll still waiting when the server shuts down gets its abort callback */
    tc_conn hang;
    int before = atomic_load(&aborted);
    if (tc_connect(&hang, port) || tc_send_str(&hang, "GET /hang HTTP/1.1\r\n\r\n"))
        failed++;
    usleep(50000);
    uv_async_send(&stop_async);
    pthread_join(loop_tid, NULL);
    tc_close(&hang);
    if (atomic_load(&aborted) != before + 1) {
        fprintf(stderr, "FAIL abort at shutdown\n");
        failed++;
    }
    hone_http_stats st;
    hone_http_server_stats(srv, &st);
    printf("requests %llu, 4xx %llu, connections %llu, log lines %d\n",
           (unsigned long long)st.requests_total, (unsigned long long)st.responses_4xx,
           (unsigned long long)st.connections_total, atomic_load(&log_count));
    if (st.connections_open != 0 || atomic_load(&log_count) == 0 || st.requests_total == 0) {
        fprintf(stderr, "FAIL server bookkeeping\n");
        failed++;
    }
    hone_http_server_stats(srv_fair, &st);
    printf("fair server: connections %llu, evicted %llu, rejected %llu\n",
           (unsigned long long)st.connections_total, (unsigned long long)st.connections_evicted,
           (unsigned long long)st.connections_rejected);
    if (st.connections_open != 0 || st.connections_evicted == 0 || st.connections_rejected == 0) {
        fprintf(stderr, "FAIL fair server bookkeeping\n");
        failed++;
    }
    hone_http_server_free(srv);
    hone_http_server_free(srv_small);
    hone_http_server_free(srv_fair);
    if (rmdir(file_dir) != 0) { /* every file test removes its files */
        fprintf(stderr, "FAIL files left in %s\n", file_dir);
        failed++;
    }
    if (rmdir(upload_dir) != 0) { /* every test leaves it empty */
        fprintf(stderr, "FAIL files left in %s\n", upload_dir);
        failed++;
    }
    if (uv_loop_close(&loop) != 0) {
        fprintf(stderr, "FAIL loop still has handles\n");
        failed++;
    }
    return failed;
}

int hts_get(tc_conn *c, const char *path, tc_response *r)
{
    char req[512];
    snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
    if (tc_send_str(c, req))
        return -1;
    return tc_read_response(c, r, 0);
}

int hts_error_is(const tc_response *r, int status, const char *code, const char *field)
{
    json_error_t e;
    json_t *j = json_loads(r->body, 0, &e);
    json_t *err = json_object_get(j, "error");
    int ok = r->status == status && json_integer_value(json_object_get(err, "status")) == status &&
             !strcmp(json_string_value(json_object_get(err, "code")) ?: "", code) &&
             json_is_string(json_object_get(err, "message"));
    if (ok && field)
        ok = !strcmp(json_string_value(json_object_get(err, "field")) ?: "", field);
    if (!ok)
        fprintf(stderr, "  got %d %s\n", r->status, r->body);
    json_decref(j);
    return ok;
}

int hts_post_json(tc_conn *c, const char *path, const char *ctype, const char *body, tc_response *r)
{
    char head[256];
    snprintf(head, sizeof(head),
             "POST %s HTTP/1.1\r\nContent-Type: %s\r\nContent-Length: %zu\r\n\r\n", path, ctype,
             strlen(body));
    if (tc_send_str(c, head) || tc_send_str(c, body))
        return -1;
    return tc_read_response(c, r, 0);
}

int hts_wait_hangs(int n)
{
    for (int i = 0; i < 5000 && atomic_load(&hangs) < n; i++)
        usleep(1000);
    return atomic_load(&hangs) >= n ? 0 : -1;
}
