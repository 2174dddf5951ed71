/* Upload routes of the api/ server (hone_http_route_upload): bodies spooled to a temp file and read
 * back byte-exact (Content-Length and chunked), memory held within the limits, refusals (begin,
 * filter, 413, 503) before any byte is stored, and no temp file left by a client that leaves, a
 * stalled client (408) or a refused upload. */
#define _GNU_SOURCE /* memmem */
#include <dirent.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "http_test_server.h"

static int count_temp(void)
{
    int n = 0;
    DIR *d = opendir(upload_dir);
    for (struct dirent *e; d && (e = readdir(d));)
        n += !strncmp(e->d_name, ".upload-", 8);
    if (d)
        closedir(d);
    return n;
}

/* Temp files go off the loop, just after the answer (or the client): wait for them (5 s). */
static int no_temp_left(void)
{
    for (int i = 0; i < 500 && count_temp(); i++)
        usleep(10000);
    return count_temp() == 0;
}

static char *pattern(size_t n, unsigned seed)
{
    char *b = malloc(n);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        b[i] = (char)(seed >> 16);
    }
    return b;
}

static void fnv_hex(const char *b, size_t n, char out[17])
{
    unsigned long long h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)b[i]) * 1099511628211ull;
    snprintf(out, 17, "%016llx", h);
}

/* Does the JSON answer name this size and hash? */
static int body_matches(const tc_response *r, const char *data, size_t n)
{
    char want[17], needle[64];
    fnv_hex(data, n, want);
    snprintf(needle, sizeof(needle), "\"size\":%zu", n);
    if (strstr(r->body, needle) && strstr(r->body, want))
        return 1;
    fprintf(stderr, "  got %d %s (want size %zu fnv %s)\n", r->status, r->body, n, want);
    return 0;
}

/* Reads one interim or final header block raw: its status (100 for "100 Continue"), or -1. The
 * block is consumed; a final answer's body is not. */
static int read_head(tc_conn *c)
{
    for (;;) {
        char *e = c->len >= 4 ? memmem(c->buf, c->len, "\r\n\r\n", 4) : NULL;
        if (e) {
            int st = -1;
            sscanf(c->buf, "HTTP/1.%*d %d", &st);
            size_t n = (size_t)(e - c->buf) + 4;
            memmove(c->buf, c->buf + n, c->len - n);
            c->len -= n;
            return st;
        }
        ssize_t k = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
        if (k <= 0)
            return -1;
        c->len += (size_t)k;
    }
}

static int quiet_for(tc_conn *c, int ms)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    return c->len == 0 && poll(&p, 1, ms) == 0;
}

static int put(tc_conn *c, const char *path, const char *extra, const char *data, size_t n,
               tc_response *r)
{
    char head[512];
    snprintf(head, sizeof(head), "PUT %s HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n%s\r\n",
             path, n, extra ? extra : "");
    if (tc_send_str(c, head) || tc_send(c, data, n))
        return -1;
    return tc_read_response(c, r, 0);
}

int test_upload_streamed(void)
{
    tc_conn c;
    tc_response r;
    size_t n = 8u << 20;
    char *data = pattern(n, 1);
    CHECK(tc_connect(&c, port) == 0);
    CHECK(put(&c, "/up/a", NULL, data, n, &r) == 0 && r.status == 200);
    CHECK(body_matches(&r, data, n));
    tc_response_free(&r);
    /* memory stayed within the bounds: per upload, plus at most one read (16 KiB) each */
    CHECK(hts_get(&c, "/upstats", &r) == 0 && r.status == 200);
    json_t *st = json_loads(r.body, 0, NULL);
    json_int_t peak = json_integer_value(json_object_get(st, "peak"));
    CHECK(peak > 0 && peak <= UPLOAD_TEST_INFLIGHT + 2 * 16384);
    CHECK(json_integer_value(json_object_get(st, "active")) == 0);
    CHECK(json_integer_value(json_object_get(st, "buffered")) == 0);
    json_decref(st);
    tc_response_free(&r);
    tc_close(&c);
    free(data);
    CHECK(no_temp_left());
    return 0;
}

int test_upload_chunked(void)
{
    tc_conn c;
    tc_response r;
    size_t n = 3u << 20, off = 0, sizes[] = {1, 1000, 70000, 300000, 4096};
    char *data = pattern(n, 2), line[32];
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "PUT /up/c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n") == 0);
    for (int i = 0; off < n; i++) {
        size_t k = sizes[i % 5] < n - off ? sizes[i % 5] : n - off;
        snprintf(line, sizeof(line), "%zx\r\n", k);
        CHECK(tc_send_str(&c, line) == 0 && tc_send(&c, data + off, k) == 0);
        CHECK(tc_send_str(&c, "\r\n") == 0);
        off += k;
    }
    CHECK(tc_send_str(&c, "0\r\n\r\n") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200 && body_matches(&r, data, n));
    tc_response_free(&r);
    tc_close(&c);
    free(data);
    CHECK(no_temp_left());
    return 0;
}

int test_upload_kept_then_keep_alive(void)
{
    tc_conn c;
    tc_response r;
    struct stat st;
    char path[128], *data = pattern(100000, 3);
    CHECK(tc_connect(&c, port) == 0);
    CHECK(put(&c, "/up/kept.bin?keep=1", NULL, data, 100000, &r) == 0 && r.status == 201);
    tc_response_free(&r);
    snprintf(path, sizeof(path), "%s/kept.bin", upload_dir);
    CHECK(stat(path, &st) == 0 && st.st_size == 100000 && (st.st_mode & 0777) == 0644);
    /* an empty body is a file too */
    CHECK(put(&c, "/up/empty", NULL, "", 0, &r) == 0 && r.status == 200);
    CHECK(body_matches(&r, "", 0));
    tc_response_free(&r);
    CHECK(hts_get(&c, "/hello", &r) == 0 && r.status == 200); /* same connection */
    tc_response_free(&r);
    tc_close(&c);
    CHECK(unlink(path) == 0);
    free(data);
    CHECK(no_temp_left());
    return 0;
}

int test_upload_refused_before_body(void)
{
    tc_conn c;
    tc_response r;
    char v[32];
    /* 10 MiB announced, none sent: the refusal comes anyway, and the connection closes */
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(
              &c, "PUT /up/x HTTP/1.1\r\nContent-Length: 10485760\r\nX-Refuse: 1\r\n\r\n") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && hts_error_is(&r, 403, "forbidden", "X-Refuse"));
    CHECK(tc_header(&r, "connection", v, sizeof(v)) == 0 && !strcasecmp(v, "close"));
    tc_response_free(&r);
    CHECK(tc_wait_closed(&c, 3000));
    tc_close(&c);
    /* with Expect: 100-continue the refusal is the only answer */
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "PUT /up/x HTTP/1.1\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n"
                          "X-Refuse: 1\r\n\r\n") == 0);
    CHECK(read_head(&c) == 403);
    tc_close(&c);
    CHECK(count_temp() == 0);
    return 0;
}

int test_upload_refused_small_body(void)
{
    tc_conn c;
    tc_response r;
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "PUT /up/x HTTP/1.1\r\nContent-Length: 5\r\nX-Refuse: 1\r\n\r\nhello") ==
          0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 403);
    tc_response_free(&r);
    CHECK(hts_get(&c, "/hello", &r) == 0 && r.status == 200); /* whole body read: still open */
    tc_response_free(&r);
    tc_close(&c);
    CHECK(count_temp() == 0);
    return 0;
}

int test_upload_filter_first(void)
{
    tc_conn c;
    tc_response r;
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "PUT /secret/up HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && hts_error_is(&r, 401, "unauthorized", NULL));
    tc_response_free(&r);
    tc_close(&c);
    CHECK(tc_connect(&c, port) == 0);
    CHECK(put(&c, "/secret/up", "Authorization: x\r\n", "abc", 3, &r) == 0 && r.status == 200);
    CHECK(body_matches(&r, "abc", 3));
    tc_response_free(&r);
    tc_close(&c);
    CHECK(no_temp_left());
    return 0;
}

int test_upload_too_large(void)
{
    tc_conn c;
    tc_response r;
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "PUT /up/big HTTP/1.1\r\nContent-Length: 33554433\r\n\r\n") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && hts_error_is(&r, 413, "payload_too_large", NULL));
    tc_response_free(&r);
    tc_close(&c);
    /* chunked: found out only past the limit, with part of it on disk already */
    size_t k = 1 << 20;
    char *data = pattern(k, 4), line[32];
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "PUT /up/big HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n") == 0);
    snprintf(line, sizeof(line), "%zx\r\n", k);
    for (int i = 0; i < 33; i++)
        CHECK(tc_send_str(&c, line) == 0 && tc_send(&c, data, k) == 0 &&
              tc_send_str(&c, "\r\n") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && hts_error_is(&r, 413, "payload_too_large", NULL));
    tc_response_free(&r);
    tc_close(&c);
    free(data);
    CHECK(no_temp_left());
    return 0;
}

int test_upload_client_gone(void)
{
    tc_conn c;
    size_t n = 1 << 20;
    char *data = pattern(n, 5);
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "PUT /up/gone HTTP/1.1\r\nContent-Length: 4194304\r\n\r\n") == 0);
    CHECK(tc_send(&c, data, n) == 0);
    for (int i = 0; i < 500 && !count_temp(); i++) /* half-way: its file exists */
        usleep(10000);
    CHECK(count_temp() == 1);
    tc_close(&c);
    free(data);
    CHECK(no_temp_left());
    return 0;
}

int test_upload_stalled(void)
{
    tc_conn c;
    tc_response r;
    char *data = pattern(100000, 6);
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "PUT /up/slow HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n") == 0);
    CHECK(tc_send(&c, data, 100000) == 0);
    /* no byte for request_timeout_ms (600 ms here): 408, and the file goes */
    CHECK(tc_read_response(&c, &r, 0) == 0 && hts_error_is(&r, 408, "request_timeout", NULL));
    tc_response_free(&r);
    tc_close(&c);
    free(data);
    CHECK(no_temp_left());
    return 0;
}

/* A byte now and then is no progress (slowloris on a slot): 100 KB, then one byte every 50 ms.
 * The clock restarts only once 64 KiB more came, so the 408 comes after request_timeout_ms
 * (600 ms here); a server that took each byte for progress would wait for ever. */
int test_upload_trickle(void)
{
    tc_conn c;
    tc_response r;
    char *data = pattern(100000, 7);
    struct pollfd pf;
    int i;
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "PUT /up/trickle HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n") == 0);
    CHECK(tc_send(&c, data, 100000) == 0);
    pf.fd = c.fd;
    pf.events = POLLIN;
    for (i = 0; i < 80; i++) { /* 4 s at most; the answer comes after about 0.6 s */
        pf.revents = 0;
        if (poll(&pf, 1, 50) > 0)
            break;
        if (tc_send(&c, "x", 1) != 0)
            break;
    }
    CHECK(i < 80);
    CHECK(tc_read_response(&c, &r, 0) == 0 && hts_error_is(&r, 408, "request_timeout", NULL));
    tc_response_free(&r);
    tc_close(&c);
    free(data);
    CHECK(no_temp_left());
    return 0;
}

/* Two slots, one place to wait: a third upload waits unread (no 100 Continue yet), a fourth gets
 * 503 with Retry-After; the third goes on once a slot frees. */
int test_upload_slots(void)
{
    tc_conn a, b, w, d;
    tc_response r;
    char v[32];
    size_t n = 200000;
    char *data = pattern(n, 7);
    const char *head =
        "PUT /up/s HTTP/1.1\r\nContent-Length: 200000\r\nExpect: 100-continue\r\n\r\n";
    CHECK(tc_connect(&a, port) == 0 && tc_send_str(&a, head) == 0 && read_head(&a) == 100);
    CHECK(tc_connect(&b, port) == 0 && tc_send_str(&b, head) == 0 && read_head(&b) == 100);
    CHECK(tc_connect(&w, port) == 0 && tc_send_str(&w, head) == 0);
    CHECK(tc_connect(&d, port) == 0 && tc_send_str(&d, head) == 0);
    CHECK(tc_read_response(&d, &r, 0) == 0 && hts_error_is(&r, 503, "unavailable", NULL));
    CHECK(tc_header(&r, "retry-after", v, sizeof(v)) == 0 && atoi(v) >= 1);
    tc_response_free(&r);
    tc_close(&d);
    CHECK(quiet_for(&w, 50)); /* still waiting for a slot */
    CHECK(tc_send(&a, data, n) == 0);
    CHECK(tc_read_response(&a, &r, 0) == 0 && r.status == 200 && body_matches(&r, data, n));
    tc_response_free(&r);
    CHECK(read_head(&w) == 100); /* a's slot */
    CHECK(tc_send(&w, data, n) == 0);
    CHECK(tc_read_response(&w, &r, 0) == 0 && r.status == 200 && body_matches(&r, data, n));
    tc_response_free(&r);
    CHECK(tc_send(&b, data, n) == 0);
    CHECK(tc_read_response(&b, &r, 0) == 0 && r.status == 200 && body_matches(&r, data, n));
    tc_response_free(&r);
    tc_close(&a);
    tc_close(&b);
    tc_close(&w);
    free(data);
    CHECK(no_temp_left());
    return 0;
}

/* Shares of the two slots: Alice holds one and waits for a second (her share is half); Bob's
 * upload gets the other slot at once, and a worker's (priority) upload is answered while every
 * users' slot is taken and one waits: it has slots of its own. Alice's second goes on when her
 * first is done. (Before shares, Alice's second took the last slot, Bob waited and the worker was
 * refused 503.) */
int test_upload_shares(void)
{
    tc_conn a1, a2, b, w;
    tc_response r;
    size_t n = 100000;
    char *data = pattern(n, 11), head[256];
    const char *fmt =
        "PUT /up/%s HTTP/1.1\r\nContent-Length: %zu\r\nExpect: 100-continue\r\n%s\r\n";
    snprintf(head, sizeof(head), fmt, "a1", n, "X-Owner: alice\r\n");
    CHECK(tc_connect(&a1, port) == 0 && tc_send_str(&a1, head) == 0 && read_head(&a1) == 100);
    snprintf(head, sizeof(head), fmt, "a2", n, "X-Owner: alice\r\n");
    CHECK(tc_connect(&a2, port) == 0 && tc_send_str(&a2, head) == 0);
    CHECK(quiet_for(&a2, 100)); /* her share (one of two) is held: she waits */
    snprintf(head, sizeof(head), fmt, "b", n, "X-Owner: bob\r\n");
    CHECK(tc_connect(&b, port) == 0 && tc_send_str(&b, head) == 0 && read_head(&b) == 100);
    snprintf(head, sizeof(head), fmt, "w", (size_t)1024, "X-Owner: worker-1\r\nX-Priority: 1\r\n");
    CHECK(tc_connect(&w, port) == 0 && tc_send_str(&w, head) == 0 && read_head(&w) == 100);
    CHECK(tc_send(&w, data, 1024) == 0);
    CHECK(tc_read_response(&w, &r, 0) == 0 && r.status == 200 && body_matches(&r, data, 1024));
    tc_response_free(&r);
    CHECK(quiet_for(&a2, 50));
    CHECK(tc_send(&a1, data, n) == 0);
    CHECK(tc_read_response(&a1, &r, 0) == 0 && r.status == 200 && body_matches(&r, data, n));
    tc_response_free(&r);
    CHECK(read_head(&a2) == 100); /* her first is done: her second's turn */
    CHECK(tc_send(&a2, data, n) == 0 && tc_send(&b, data, n) == 0);
    CHECK(tc_read_response(&a2, &r, 0) == 0 && r.status == 200 && body_matches(&r, data, n));
    tc_response_free(&r);
    CHECK(tc_read_response(&b, &r, 0) == 0 && r.status == 200 && body_matches(&r, data, n));
    tc_response_free(&r);
    tc_close(&a1);
    tc_close(&a2);
    tc_close(&b);
    tc_close(&w);
    free(data);
    CHECK(no_temp_left());
    return 0;
}

/* An upload behind a deferred answer: its begin waits its turn, answers leave in order. */
int test_upload_pipelined(void)
{
    tc_conn c;
    tc_response r;
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "GET /slow?ms=100 HTTP/1.1\r\n\r\n"
                          "PUT /up/p HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"
                          "PUT /up/q HTTP/1.1\r\nContent-Length: 3\r\nX-Refuse: 1\r\n\r\nabc"
                          "GET /hello HTTP/1.1\r\n\r\n") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200 && !strcmp(r.body, "late"));
    tc_response_free(&r);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200 && body_matches(&r, "hello", 5));
    tc_response_free(&r);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 403);
    tc_response_free(&r);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200 && !strcmp(r.body, "hello"));
    tc_response_free(&r);
    tc_close(&c);
    CHECK(no_temp_left());
    return 0;
}
