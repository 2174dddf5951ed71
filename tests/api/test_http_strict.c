/* Strict HTTP/1.1 framing (api/strict.c): the scanner alone on a table of requests, whole and one
 * byte at a time, then each refused case over loopback: 400, the connection closed, and a request
 * smuggled behind it never answered. Legitimate framings (bare LF, chunk extensions, trailers,
 * HTTP/1.0, empty lines between requests) keep working. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "http_internal.h"
#include "http_test_server.h"

typedef struct scan_case {
    const char *name, *in;
    int msgs; /* requests that end in it; -1: refused */
} scan_case;

#define CHUNKED "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"

static const scan_case scan_cases[] = {
    /* refused: the cases of the hardening issue */
    {"space before colon (CL)", "POST / HTTP/1.1\r\nContent-Length : 2\r\n\r\n{}", -1},
    {"space before colon (TE)", "POST / HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
     -1},
    {"tab before colon", "GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", -1},
    {"bad chunk terminator", CHUNKED "2\r\n{}XX0\r\n\r\n", -1},
    {"chunk data then bare LF", CHUNKED "2\r\n{}\n0\r\n\r\n", -1},
    {"HTTP/9.9", "GET / HTTP/9.9\r\n\r\n", -1},
    {"HTTP/2.0", "GET / HTTP/2.0\r\n\r\n", -1},
    {"HTTP/0.9 version", "GET / HTTP/0.9\r\n\r\n", -1},
    {"no version (HTTP/0.9)", "GET /\r\n\r\n", -1},
    {"lowercase http", "GET / http/1.1\r\n\r\n", -1},
    {"obs-fold (SP)", "GET / HTTP/1.1\r\nX-A: a\r\n b\r\n\r\n", -1},
    {"obs-fold (HTAB)", "GET / HTTP/1.1\r\nX-A: a\r\n\tb\r\n\r\n", -1},
    {"whitespace before the first header", "GET / HTTP/1.1\r\n Host: a\r\n\r\n", -1},
    {"space inside a header name", "GET / HTTP/1.1\r\nX A: b\r\n\r\n", -1},
    {"quote in a header name", "GET / HTTP/1.1\r\nX\"A: b\r\n\r\n", -1},
    {"@ in a header name", "GET / HTTP/1.1\r\nX@A: b\r\n\r\n", -1},
    {"high byte in a header name", "GET / HTTP/1.1\r\nX\xc3\xa9: b\r\n\r\n", -1},
    {"empty header name", "GET / HTTP/1.1\r\n: b\r\n\r\n", -1},
    {"header line without colon", "GET / HTTP/1.1\r\nX-A\r\n\r\n", -1},
    /* refused: the ambiguous framings */
    {"CL and TE",
     "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
     "0\r\n\r\n",
     -1},
    {"TE gzip", "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", -1},
    {"TE gzip, chunked", "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
     -1},
    {"TE xchunked", "POST / HTTP/1.1\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", -1},
    {"two TE fields",
     "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
     "chunked\r\n\r\n0\r\n\r\n",
     -1},
    {"TE in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", -1},
    {"differing CL", "POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}x", -1},
    {"CL with sign", "POST / HTTP/1.1\r\nContent-Length: +2\r\n\r\n{}", -1},
    {"CL list", "POST / HTTP/1.1\r\nContent-Length: 2, 2\r\n\r\n{}", -1},
    {"empty CL", "POST / HTTP/1.1\r\nContent-Length: \r\n\r\n", -1},
    {"bare CR in a value", "GET / HTTP/1.1\r\nX-A: a\rb\r\n\r\n", -1},
    {"bare CR ending a line", "GET / HTTP/1.1\r\nX-A: a\r\r\n\r\n", -1},
    {"bare CR ending the head", "GET / HTTP/1.1\r\nX-A: a\r\n\rX", -1},
    {"bare CR in the request line", "GET / HTTP/1.1\rX\r\n\r\n", -1},
    {"bare CR before the request", "\rGET / HTTP/1.1\r\n\r\n", -1},
    {"control byte in a value", "GET / HTTP/1.1\r\nX-A: a\x01\r\n\r\n", -1},
    {"NUL in the target", "GET /a\0b HTTP/1.1\r\n\r\n", -1},
    {"two spaces after the method", "GET  / HTTP/1.1\r\n\r\n", -1},
    {"chunk size bare LF", CHUNKED "2\n{}\r\n0\r\n\r\n", -1},
    {"chunk size not hex", CHUNKED "zz\r\n{}\r\n0\r\n\r\n", -1},
    {"chunk size overflow", CHUNKED "FFFFFFFFFFFFFFFFF\r\n", -1},
    {"chunk size junk after BWS", CHUNKED "2 x\r\n{}\r\n0\r\n\r\n", -1},
    {"control byte in a chunk extension", CHUNKED "2;a\x01\r\n{}\r\n0\r\n\r\n", -1},
    {"CL in the trailers", CHUNKED "0\r\nContent-Length: 5\r\n\r\n", -1},
    {"obs-fold in the trailers", CHUNKED "0\r\nX-T: 1\r\n 2\r\n\r\n", -1},
    {"bare LF ending the trailers", CHUNKED "0\r\n\n", -1},
    /* accepted */
    {"plain GET", "GET /a?b=c HTTP/1.1\r\nHost: a\r\n\r\n", 1},
    {"two pipelined", "GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nHost: b\r\n\r\n", 2},
    {"bare LF line ends", "GET / HTTP/1.1\nHost: a\n\n", 1},
    {"empty lines before a request", "\r\n\nGET / HTTP/1.1\r\n\r\n", 1},
    {"HTTP/1.0", "GET / HTTP/1.0\r\n\r\n", 1},
    {"HTTP/1.2 (a higher minor)", "GET / HTTP/1.2\r\n\r\n", 1},
    {"CL body then a request",
     "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\n\r\n", 2},
    {"equal duplicate CL", "POST / HTTP/1.1\r\nContent-Length: 2\r\ncontent-length:2\r\n\r\n{}", 1},
    {"CL 0", "POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 1},
    {"CL with OWS", "POST / HTTP/1.1\r\nContent-Length:\t 2 \r\n\r\n{}", 1},
    {"chunked with extension and trailer", CHUNKED "5;a=b\r\nhello\r\n0\r\nX-T: 1\r\n\r\n", 1},
    {"chunked, upper-case hex, BWS", CHUNKED "A \r\n0123456789\r\n000\r\n\r\n", 1},
    {"TE Chunked with OWS", "POST / HTTP/1.1\r\nTRANSFER-ENCODING:  Chunked \r\n\r\n0\r\n\r\n", 1},
    {"obs-text and tab in a value", "GET / HTTP/1.1\r\nX-A: caf\xc3\xa9\tb\r\n\r\n", 1},
    {"body bytes that look like framing", "POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\n\r \n ", 1},
    {"CONNECT ends at its head", "CONNECT a:443 HTTP/1.1\r\nContent-Length: 9\r\n\r\n", 1},
    {"tchar punctuation in a name", "GET / HTTP/1.1\r\nX-!#$%&'*+.^_`|~: v\r\n\r\n", 1},
};

/* Feeds in (n bytes) in pieces of step bytes (0: whole). Requests ended, or -1 when refused. */
static int scan(const char *in, size_t n, size_t step)
{
    http_strict st;
    memset(&st, 0, sizeof(st));
    int msgs = 0;
    size_t off = 0;
    while (off < n) {
        size_t piece = step && n - off > step ? step : n - off, used;
        const char *p = in + off, *why;
        while (piece > 0) {
            int end;
            if (http_strict_scan(&st, p, piece, &used, &end, &why))
                return -1;
            if (!why && end)
                msgs++;
            p += used;
            piece -= used;
            off += used;
        }
    }
    return msgs;
}

int test_strict_scan(void)
{
    int failed = 0;
    for (size_t i = 0; i < HONE_ARRAY_LEN(scan_cases); i++) {
        const scan_case *sc = &scan_cases[i];
        size_t n = strlen(sc->in);
        if (!strcmp(sc->name, "NUL in the target"))
            n = 21;
        for (size_t step = 0; step <= 3; step++) {
            int got = scan(sc->in, n, step);
            if (got != sc->msgs) {
                fprintf(stderr, "  %s (step %zu): %d, expected %d\n", sc->name, step, got,
                        sc->msgs);
                failed = 1;
                break;
            }
        }
    }
    return failed;
}

/* Sends raw, expects a JSON 400 naming what was wrong, then a closed connection with nothing
 * else answered (raw may carry a request smuggled behind the bad one). */
static int expect_refused(const char *raw, const char *why)
{
    tc_conn c;
    tc_response r;
    if (tc_connect(&c, port) || tc_send_str(&c, raw) || tc_read_response(&c, &r, 0)) {
        fprintf(stderr, "  no answer to %s\n", why);
        tc_close(&c);
        return 1;
    }
    int ok = hts_error_is(&r, 400, "bad_request", NULL) && strstr(r.body, why) != NULL;
    if (!ok)
        fprintf(stderr, "  expected 400 \"%s\", got %d %s\n", why, r.status, r.body);
    char v[32];
    ok = ok && tc_header(&r, "connection", v, sizeof(v)) == 0 && !strcmp(v, "close");
    tc_response_free(&r);
    if (ok && tc_read_response(&c, &r, 0) == 0) {
        fprintf(stderr, "  a smuggled request was answered: %d\n", r.status);
        ok = 0;
    }
    tc_response_free(&r);
    ok = ok && tc_wait_closed(&c, 3000);
    tc_close(&c);
    return !ok;
}

#define SMUGGLED "GET /hello HTTP/1.1\r\n\r\n"

int test_strict_space_before_colon(void)
{
    CHECK(expect_refused("POST /jobs/1/body HTTP/1.1\r\nContent-Length : 2\r\n\r\n{}" SMUGGLED,
                         "whitespace between a header name and its colon") == 0);
    CHECK(expect_refused("POST /jobs/1/body HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n"
                         "2\r\n{}\r\n0\r\n\r\n" SMUGGLED,
                         "whitespace between a header name and its colon") == 0);
    return 0;
}

int test_strict_chunk_terminator(void)
{
    CHECK(expect_refused("POST /jobs/1/body HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                         "2\r\n{}XX0\r\n\r\n" SMUGGLED,
                         "chunk data not followed by CRLF") == 0);
    return 0;
}

int test_strict_version(void)
{
    CHECK(expect_refused("GET /hello HTTP/9.9\r\n\r\n", "unsupported HTTP version") == 0);
    CHECK(expect_refused("GET /hello HTTP/2.0\r\n\r\n", "unsupported HTTP version") == 0);
    CHECK(expect_refused("GET /hello\r\n\r\n", "request line without an HTTP version") == 0);
    return 0;
}

int test_strict_obs_fold(void)
{
    CHECK(expect_refused("GET /hello HTTP/1.1\r\nX-A: a\r\n b\r\n\r\n", "obsolete line folding") ==
          0);
    CHECK(expect_refused("GET /hello HTTP/1.1\r\nX-A: a\r\n\tb\r\n\r\n", "obsolete line folding") ==
          0);
    return 0;
}

int test_strict_header_name(void)
{
    CHECK(expect_refused("GET /hello HTTP/1.1\r\nX A: b\r\n\r\n", "whitespace between") == 0);
    CHECK(expect_refused("GET /hello HTTP/1.1\r\nX(A): b\r\n\r\n",
                         "invalid byte in a header name") == 0);
    CHECK(expect_refused("GET /hello HTTP/1.1\r\nX\x7f: b\r\n\r\n",
                         "invalid byte in a header name") == 0);
    return 0;
}

int test_strict_framing_conflicts(void)
{
    CHECK(expect_refused("POST /jobs/1/body HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: "
                         "chunked\r\n\r\n0\r\n\r\n" SMUGGLED,
                         "both Content-Length and Transfer-Encoding") == 0);
    CHECK(expect_refused("POST /jobs/1/body HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
                         "0\r\n\r\n" SMUGGLED,
                         "Transfer-Encoding other than chunked") == 0);
    CHECK(expect_refused("POST /jobs/1/body HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 40\r\n"
                         "\r\n{}" SMUGGLED,
                         "malformed HTTP request") == 0); /* http-parser refuses it first */
    CHECK(expect_refused("GET /hello HTTP/1.1\r\nX-A: a\rb: c\r\n\r\n", "bare CR") == 0);
    /* a framing error in a later pipelined request: the earlier one is answered first */
    tc_conn c;
    tc_response r;
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "GET /hello HTTP/1.1\r\n\r\nGET /hello HTTP/7.0\r\n\r\n") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200);
    tc_response_free(&r);
    CHECK(tc_read_response(&c, &r, 0) == 0 && hts_error_is(&r, 400, "bad_request", NULL));
    tc_response_free(&r);
    CHECK(tc_wait_closed(&c, 3000));
    tc_close(&c);
    return 0;
}

int test_strict_legitimate(void)
{
    tc_conn c;
    tc_response r;
    CHECK(tc_connect(&c, port) == 0);
    /* empty lines before a request, bare LF, a chunk extension and a trailer, HTTP/1.0 */
    CHECK(tc_send_str(&c, "\r\nGET /hello HTTP/1.1\nHost: a\n\n") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200);
    tc_response_free(&r);
    CHECK(tc_send_str(&c, "POST /jobs/7/body HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n"
                          "5;name=value\r\nhello\r\n1\r\n!\r\n0\r\nX-Trailer: 1\r\n\r\n") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200);
    CHECK(!strcmp(r.body, "{\"len\":6,\"body\":\"hello!\"}"));
    tc_response_free(&r);
    CHECK(tc_send_str(&c, "GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200);
    tc_response_free(&r);
    tc_close(&c);
    return 0;
}
