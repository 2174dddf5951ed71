/* File answers of the api/ server (hone_http_res_file, hone_http_res_download) and Range parsing:
 * a file of several chunks comes whole and exact; HEAD sends its length and no body; one Range is
 * 206, an unsatisfiable one 416, several or malformed ones the whole; pipelined requests wait
 * their turn; a client that leaves mid-file, or stops reading, ends the answer with the file
 * closed; an answer made twice is ignored and its file closed. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "http_test_server.h"

enum { DATA_LEN = (1 << 20) + 7, BIG_LEN = 64 << 20 };

static char *pattern(size_t n)
{
    char *p = malloc(n);
    for (size_t i = 0; i < n; i++)
        p[i] = (char)((i * 131 + i / 251) & 0xff);
    return p;
}

/* Writes file_dir/<name>: data (len bytes), or a sparse file of len bytes when data is NULL. */
static int put_file(const char *name, const char *data, size_t len)
{
    char p[160];
    snprintf(p, sizeof(p), "%s/%s", file_dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    int bad = data ? write(fd, data, len) != (ssize_t)len : ftruncate(fd, (off_t)len) != 0;
    close(fd);
    return bad ? -1 : 0;
}

static void rm_file(const char *name)
{
    char p[160];
    snprintf(p, sizeof(p), "%s/%s", file_dir, name);
    unlink(p);
}

/* How many of this process's descriptors (the server's included: it runs in a thread) have
 * file_dir/<name> open. */
static int open_count(const char *name)
{
    char want[160], link[256], fdp[320];
    int n = 0;
    snprintf(want, sizeof(want), "%s/%s", file_dir, name);
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *e; d && (e = readdir(d));) {
        snprintf(fdp, sizeof(fdp), "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(fdp, link, sizeof(link) - 1);
        if (k > 0) {
            link[k] = '\0';
            n += !strcmp(link, want);
        }
    }
    if (d)
        closedir(d);
    return n;
}

/* Waits (up to 5 s) until no descriptor has the file open: 0, or -1. */
static int wait_closed_file(const char *name)
{
    for (int i = 0; i < 500 && open_count(name); i++)
        usleep(10000);
    return open_count(name) ? -1 : 0;
}

/* One request's head (head_only) then n bytes of body into out: what tc_read_response already
 * buffered first, then the socket. 0, or -1. */
static int read_answer(tc_conn *c, tc_response *r, char *out, size_t n)
{
    if (tc_read_response(c, r, 1))
        return -1;
    size_t got = c->len < n ? c->len : n;
    memcpy(out, c->buf, got);
    memmove(c->buf, c->buf + got, c->len - got);
    c->len -= got;
    while (got < n) {
        ssize_t k = recv(c->fd, out + got, n - got, 0);
        if (k <= 0)
            return -1;
        got += (size_t)k;
    }
    return 0;
}

static int header_is(const tc_response *r, const char *name, const char *want)
{
    char v[128];
    if (tc_header(r, name, v, sizeof(v)) || strcmp(v, want)) {
        fprintf(stderr, "  %s: got %s, want %s\n", name, tc_header(r, name, v, sizeof(v)) ? "-" : v,
                want);
        return 0;
    }
    return 1;
}

int test_range_parse(void)
{
    static const struct {
        const char *v;
        uint64_t size;
        hone_http_range want;
        uint64_t off, len;
    } cases[] = {
        {NULL, 10, HONE_HTTP_RANGE_WHOLE, 0, 0},
        {"bytes=0-0", 10, HONE_HTTP_RANGE_PART, 0, 1},
        {"bytes=2-5", 10, HONE_HTTP_RANGE_PART, 2, 4},
        {"bytes=2-", 10, HONE_HTTP_RANGE_PART, 2, 8},
        {"bytes=9-", 10, HONE_HTTP_RANGE_PART, 9, 1},
        {"bytes=3-1000", 10, HONE_HTTP_RANGE_PART, 3, 7},
        {"bytes=-3", 10, HONE_HTTP_RANGE_PART, 7, 3},
        {"bytes=-30", 10, HONE_HTTP_RANGE_PART, 0, 10},
        {" Bytes = 4-4 ", 10, HONE_HTTP_RANGE_PART, 4, 1},
        {"bytes=0-", 1ull << 40, HONE_HTTP_RANGE_PART, 0, 1ull << 40},
        {"bytes=10-", 10, HONE_HTTP_RANGE_UNSATISFIABLE, 0, 0},
        {"bytes=10-20", 10, HONE_HTTP_RANGE_UNSATISFIABLE, 0, 0},
        {"bytes=-0", 10, HONE_HTTP_RANGE_UNSATISFIABLE, 0, 0},
        {"bytes=0-", 0, HONE_HTTP_RANGE_UNSATISFIABLE, 0, 0},
        {"bytes=-5", 0, HONE_HTTP_RANGE_UNSATISFIABLE, 0, 0},
        {"bytes=0-1,4-5", 10, HONE_HTTP_RANGE_WHOLE, 0, 0},
        {"bytes=0-1, 4-5", 10, HONE_HTTP_RANGE_WHOLE, 0, 0},
        {"items=0-1", 10, HONE_HTTP_RANGE_WHOLE, 0, 0},
        {"bytes 0-1", 10, HONE_HTTP_RANGE_WHOLE, 0, 0},
        {"bytes=", 10, HONE_HTTP_RANGE_WHOLE, 0, 0},
        {"bytes=-", 10, HONE_HTTP_RANGE_WHOLE, 0, 0},
        {"bytes=5-2", 10, HONE_HTTP_RANGE_WHOLE, 0, 0},
        {"bytes=a-2", 10, HONE_HTTP_RANGE_WHOLE, 0, 0},
        {"bytes=1-2x", 10, HONE_HTTP_RANGE_WHOLE, 0, 0},
        {"bytes=+1-2", 10, HONE_HTTP_RANGE_WHOLE, 0, 0},
        {"bytes=--2", 10, HONE_HTTP_RANGE_WHOLE, 0, 0},
        {"bytes=99999999999999999999-", 10, HONE_HTTP_RANGE_WHOLE, 0, 0},
        {"bytes=0-99999999999999999999", 10, HONE_HTTP_RANGE_WHOLE, 0, 0},
        {"bytes=18446744073709551615-", 10, HONE_HTTP_RANGE_UNSATISFIABLE, 0, 0},
    };
    for (size_t i = 0; i < HONE_ARRAY_LEN(cases); i++) {
        uint64_t off = 77, len = 77;
        hone_http_range got = hone_http_range_parse(cases[i].v, cases[i].size, &off, &len);
        int ok = got == cases[i].want;
        if (ok && got == HONE_HTTP_RANGE_PART)
            ok = off == cases[i].off && len == cases[i].len;
        if (!ok)
            fprintf(stderr, "  range %s of %llu: got %d (%llu, %llu)\n",
                    cases[i].v ? cases[i].v : "(none)", (unsigned long long)cases[i].size, got,
                    (unsigned long long)off, (unsigned long long)len);
        CHECK(ok);
    }
    return 0;
}

int test_file_whole_and_head(void)
{
    tc_conn c;
    tc_response r;
    char *data = pattern(DATA_LEN), *got = malloc(DATA_LEN), len[32];
    int before = atomic_load(&file_ends_complete);
    snprintf(len, sizeof(len), "%d", DATA_LEN);
    CHECK(put_file("data", data, DATA_LEN) == 0 && put_file("empty", "", 0) == 0);
    CHECK(tc_connect(&c, port) == 0);
    /* the whole (five chunks), then HEAD and an empty file: their heads alone, in turn */
    CHECK(tc_send_str(&c, "GET /file/data HTTP/1.1\r\n\r\nHEAD /file/data HTTP/1.1\r\n\r\n"
                          "GET /file/empty HTTP/1.1\r\n\r\nGET /hello HTTP/1.1\r\n\r\n") == 0);
    CHECK(read_answer(&c, &r, got, DATA_LEN) == 0 && r.status == 200);
    CHECK(header_is(&r, "content-length", len) && header_is(&r, "accept-ranges", "bytes"));
    CHECK(memcmp(got, data, DATA_LEN) == 0);
    tc_response_free(&r);
    CHECK(tc_read_response(&c, &r, 1) == 0 && r.status == 200 &&
          header_is(&r, "content-length", len));
    tc_response_free(&r);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200 && r.body_len == 0);
    CHECK(header_is(&r, "content-length", "0"));
    tc_response_free(&r);
    /* nothing of a body after HEAD: the next answer is /hello's */
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200 && !strcmp(r.body, "hello"));
    tc_response_free(&r);
    tc_close(&c);
    CHECK(atomic_load(&file_ends_complete) == before + 3);
    CHECK(wait_closed_file("data") == 0 && wait_closed_file("empty") == 0);
    rm_file("data");
    rm_file("empty");
    free(data);
    free(got);
    return 0;
}

int test_file_ranges(void)
{
    tc_conn c;
    tc_response r;
    char *data = pattern(DATA_LEN), *got = malloc(DATA_LEN), want[96];
    CHECK(put_file("data", data, DATA_LEN) == 0);
    CHECK(tc_connect(&c, port) == 0);
    /* a range across chunk boundaries */
    CHECK(tc_send_str(&c, "GET /file/data HTTP/1.1\r\nRange: bytes=262000-600000\r\n\r\n") == 0);
    CHECK(read_answer(&c, &r, got, 338001) == 0 && r.status == 206);
    snprintf(want, sizeof(want), "bytes 262000-600000/%d", DATA_LEN);
    CHECK(header_is(&r, "content-range", want) && header_is(&r, "content-length", "338001"));
    CHECK(memcmp(got, data + 262000, 338001) == 0);
    tc_response_free(&r);
    /* the last 5 bytes */
    CHECK(tc_send_str(&c, "GET /file/data HTTP/1.1\r\nRange: bytes=-5\r\n\r\n") == 0);
    CHECK(read_answer(&c, &r, got, 5) == 0 && r.status == 206);
    CHECK(memcmp(got, data + DATA_LEN - 5, 5) == 0);
    tc_response_free(&r);
    /* past the end: 416 naming Range, with the size; the connection goes on */
    CHECK(tc_send_str(&c, "GET /file/data HTTP/1.1\r\nRange: bytes=2000000-\r\n\r\n") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 &&
          hts_error_is(&r, 416, "range_not_satisfiable", "Range"));
    snprintf(want, sizeof(want), "bytes */%d", DATA_LEN);
    CHECK(header_is(&r, "content-range", want));
    tc_response_free(&r);
    /* several ranges: the whole, 200 */
    CHECK(tc_send_str(&c, "GET /file/data HTTP/1.1\r\nRange: bytes=0-1,5-9\r\n\r\n") == 0);
    CHECK(read_answer(&c, &r, got, DATA_LEN) == 0 && r.status == 200);
    CHECK(tc_header(&r, "content-range", want, sizeof(want)) != 0);
    CHECK(memcmp(got, data, DATA_LEN) == 0);
    tc_response_free(&r);
    tc_close(&c);
    CHECK(wait_closed_file("data") == 0);
    rm_file("data");
    free(data);
    free(got);
    return 0;
}

/* Pipelined after a file answer: each waits its turn, and the file answers' bytes do not mix. */
int test_file_pipelined(void)
{
    tc_conn c;
    tc_response r;
    char *data = pattern(DATA_LEN), *got = malloc(DATA_LEN);
    CHECK(put_file("data", data, DATA_LEN) == 0);
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "GET /file/data HTTP/1.1\r\n\r\nGET /hello HTTP/1.1\r\n\r\n"
                          "GET /file/data HTTP/1.1\r\nRange: bytes=1000-1999\r\n\r\n"
                          "GET /jobs/7 HTTP/1.1\r\nConnection: close\r\n\r\n") == 0);
    CHECK(read_answer(&c, &r, got, DATA_LEN) == 0 && r.status == 200);
    CHECK(memcmp(got, data, DATA_LEN) == 0);
    tc_response_free(&r);
    CHECK(tc_read_response(&c, &r, 0) == 0 && !strcmp(r.body, "hello"));
    tc_response_free(&r);
    CHECK(read_answer(&c, &r, got, 1000) == 0 && r.status == 206);
    CHECK(memcmp(got, data + 1000, 1000) == 0);
    tc_response_free(&r);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200 && strstr(r.body, "\"7\""));
    tc_response_free(&r);
    CHECK(tc_wait_closed(&c, 2000) == 1);
    tc_close(&c);
    CHECK(wait_closed_file("data") == 0);
    rm_file("data");
    free(data);
    free(got);
    return 0;
}

/* The client leaves after a few bytes of a 64 MiB file: the answer is given up, the file closed.
 */
int test_file_client_gone(void)
{
    tc_conn c;
    tc_response r;
    char buf[4096];
    int before = atomic_load(&file_ends_given_up);
    CHECK(put_file("big", NULL, BIG_LEN) == 0);
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "GET /file/big HTTP/1.1\r\n\r\n") == 0);
    CHECK(read_answer(&c, &r, buf, sizeof(buf)) == 0 && r.status == 200);
    tc_response_free(&r);
    tc_close(&c);
    for (int i = 0; i < 500 && atomic_load(&file_ends_given_up) == before; i++)
        usleep(10000);
    CHECK(atomic_load(&file_ends_given_up) == before + 1);
    CHECK(wait_closed_file("big") == 0);
    rm_file("big");
    return 0;
}

/* A client that half-closes after its request still reads the whole file, then the server closes.
 */
int test_file_half_close(void)
{
    tc_conn c;
    tc_response r;
    size_t n = 16 << 20; /* more than loopback's socket buffers hold */
    char *data = pattern(n), *got = malloc(n);
    CHECK(put_file("data", data, n) == 0);
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "GET /file/data HTTP/1.1\r\n\r\n") == 0);
    CHECK(shutdown(c.fd, SHUT_WR) == 0);
    usleep(100000); /* the server sees the end of input while the file is still being sent */
    CHECK(read_answer(&c, &r, got, n) == 0 && r.status == 200);
    CHECK(memcmp(got, data, n) == 0);
    tc_response_free(&r);
    CHECK(tc_wait_closed(&c, 2000) == 1);
    tc_close(&c);
    CHECK(wait_closed_file("data") == 0);
    rm_file("data");
    free(data);
    free(got);
    return 0;
}

/* A client that stops reading: the server holds no more than its bound, and after idle_timeout_ms
 * (300 ms here) without progress it closes the connection and the file. */
int test_file_stalled(void)
{
    tc_conn c;
    int before = atomic_load(&file_ends_given_up);
    CHECK(put_file("big", NULL, BIG_LEN) == 0);
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "GET /file/big HTTP/1.1\r\n\r\n") == 0);
    for (int i = 0; i < 500 && atomic_load(&file_ends_given_up) == before; i++)
        usleep(10000);
    CHECK(atomic_load(&file_ends_given_up) == before + 1);
    CHECK(wait_closed_file("big") == 0);
    /* what came is less than the file: the kernel's buffers, not 64 MiB */
    size_t total = 0;
    char buf[65536];
    for (ssize_t k; (k = recv(c.fd, buf, sizeof(buf), 0)) > 0;)
        total += (size_t)k;
    CHECK(total < BIG_LEN);
    tc_close(&c);
    rm_file("big");
    return 0;
}

int test_file_answered_twice(void)
{
    tc_conn c;
    tc_response r;
    int before = atomic_load(&file_ends_given_up);
    CHECK(put_file("small", "abc", 3) == 0);
    CHECK(tc_connect(&c, port) == 0);
    CHECK(hts_get(&c, "/file-twice", &r) == 0 && r.status == 200 && !strcmp(r.body, "first"));
    tc_response_free(&r);
    CHECK(hts_get(&c, "/hello", &r) == 0 && !strcmp(r.body, "hello"));
    tc_response_free(&r);
    tc_close(&c);
    CHECK(atomic_load(&file_ends_given_up) == before + 1);
    CHECK(wait_closed_file("small") == 0);
    rm_file("small");
    return 0;
}
