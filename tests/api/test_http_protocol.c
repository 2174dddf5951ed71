/* HTTP/1.1 protocol behaviour of the api/ server over loopback: keep-alive, pipelining in order,
 * routing with params and query, 404/405, HEAD, chunked bodies, Connection: close, HTTP/1.0,
 * streaming, Expect: 100-continue, and the filter hook. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include "http_test_server.h"

int test_keep_alive(void)
{
    tc_conn c;
    tc_response r;
    char v[64];
    CHECK(tc_connect(&c, port) == 0);
    for (int i = 0; i < 2; i++) {
        CHECK(hts_get(&c, "/hello", &r) == 0);
        CHECK(r.status == 200 && !strcmp(r.body, "hello"));
        CHECK(tc_header(&r, "content-length", v, sizeof(v)) == 0 && !strcmp(v, "5"));
        CHECK(tc_header(&r, "x-test", v, sizeof(v)) == 0);
        tc_response_free(&r);
    }
    tc_close(&c);
    return 0;
}

int test_pipelining(void)
{
    tc_conn c;
    tc_response r;
    CHECK(tc_connect(&c, port) == 0);
    /* the slow one in the middle must not let the third overtake it */
    CHECK(tc_send_str(&c, "GET /jobs/1 HTTP/1.1\r\n\r\nGET /slow HTTP/1.1\r\n\r\n"
                          "GET /jobs/3 HTTP/1.1\r\n\r\n") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200 && strstr(r.body, "\"1\""));
    tc_response_free(&r);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200 && !strcmp(r.body, "late"));
    tc_response_free(&r);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200 && strstr(r.body, "\"3\""));
    tc_response_free(&r);
    tc_close(&c);
    return 0;
}

int test_params_and_query(void)
{
    tc_conn c;
    tc_response r;
    CHECK(tc_connect(&c, port) == 0);
    CHECK(hts_get(&c, "/jobs/a%20b%2Fc?x=1&q=hello+w%C3%B6rld", &r) == 0 && r.status == 200);
    CHECK(!strcmp(r.body,
                  "{\"id\":\"a b/c\",\"q\":\"hello w\xc3\xb6rld\",\"route\":\"/jobs/{id}\"}"));
    tc_response_free(&r);
    CHECK(hts_get(&c, "/jobs/stats/", &r) == 0 && r.status == 200 && !strcmp(r.body, "hello"));
    tc_response_free(&r);
    CHECK(hts_get(&c, "/jobs/bad%zz", &r) == 0 && hts_error_is(&r, 400, "bad_request", NULL));
    tc_response_free(&r);
    tc_close(&c);
    return 0;
}

int test_404_405(void)
{
    tc_conn c;
    tc_response r;
    char v[64];
    CHECK(tc_connect(&c, port) == 0);
    CHECK(hts_get(&c, "/nope", &r) == 0 && hts_error_is(&r, 404, "not_found", NULL));
    tc_response_free(&r);
    CHECK(tc_send_str(&c, "PUT /hello HTTP/1.1\r\nContent-Length: 0\r\n\r\n") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && hts_error_is(&r, 405, "method_not_allowed", NULL));
    CHECK(tc_header(&r, "allow", v, sizeof(v)) == 0 && !strcmp(v, "GET, HEAD, DELETE"));
    tc_response_free(&r);
    CHECK(hts_get(&c, "/hello", &r) == 0 && r.status == 200); /* connection still usable */
    tc_response_free(&r);
    tc_close(&c);
    return 0;
}

int test_head(void)
{
    tc_conn c;
    tc_response r;
    char v[64];
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "HEAD /hello HTTP/1.1\r\n\r\n") == 0);
    CHECK(tc_read_response(&c, &r, 1) == 0 && r.status == 200);
    CHECK(tc_header(&r, "content-length", v, sizeof(v)) == 0 && !strcmp(v, "5"));
    tc_response_free(&r);
    CHECK(hts_get(&c, "/hello", &r) == 0 && !strcmp(r.body, "hello")); /* no stray body bytes */
    tc_response_free(&r);
    tc_close(&c);
    return 0;
}

int test_chunked_body(void)
{
    tc_conn c;
    tc_response r;
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "POST /jobs/7/body HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                          "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200);
    CHECK(!strcmp(r.body, "{\"len\":11,\"body\":\"hello world\"}"));
    tc_response_free(&r);
    tc_close(&c);
    return 0;
}

int test_connection_close_and_http10(void)
{
    tc_conn c;
    tc_response r;
    char v[64];
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "GET /hello HTTP/1.1\r\nConnection: close\r\n\r\n") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200);
    CHECK(tc_header(&r, "connection", v, sizeof(v)) == 0 && !strcmp(v, "close"));
    tc_response_free(&r);
    CHECK(tc_wait_closed(&c, 3000));
    tc_close(&c);
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "GET /hello HTTP/1.0\r\n\r\n") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200 && !strcmp(r.body, "hello"));
    tc_response_free(&r);
    CHECK(tc_wait_closed(&c, 3000));
    tc_close(&c);
    CHECK(tc_connect(&c, port) == 0); /* HTTP/1.0 keep-alive */
    for (int i = 0; i < 2; i++) {
        CHECK(tc_send_str(&c, "GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n") == 0);
        CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200);
        CHECK(tc_header(&r, "connection", v, sizeof(v)) == 0 && !strcmp(v, "keep-alive"));
        tc_response_free(&r);
    }
    tc_close(&c);
    return 0;
}

int test_stream(void)
{
    tc_conn c;
    tc_response r;
    char v[64];
    CHECK(tc_connect(&c, port) == 0);
    CHECK(hts_get(&c, "/stream", &r) == 0 && r.status == 200 && !strcmp(r.body, "abcde"));
    CHECK(tc_header(&r, "transfer-encoding", v, sizeof(v)) == 0);
    tc_response_free(&r);
    CHECK(hts_get(&c, "/hello", &r) == 0 && r.status == 200);
    tc_response_free(&r);
    tc_close(&c);
    return 0;
}

int test_stream_http10(void)
{
    tc_conn c;
    tc_response r;
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "GET /stream HTTP/1.0\r\n\r\n") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200 && !strcmp(r.body, "abcde"));
    tc_response_free(&r);
    tc_close(&c);
    return 0;
}

int test_expect_continue(void)
{
    tc_conn c;
    tc_response r;
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "POST /jobs/1/body HTTP/1.1\r\nContent-Length: 3\r\n"
                          "Expect: 100-continue\r\n\r\n") == 0);
    char buf[64] = {0};
    CHECK(recv(c.fd, buf, 25, MSG_WAITALL) == 25 && !strcmp(buf, "HTTP/1.1 100 Continue\r\n\r\n"));
    CHECK(tc_send_str(&c, "abc") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200 && strstr(r.body, "\"len\":3"));
    tc_response_free(&r);
    tc_close(&c);
    return 0;
}

int test_pipeline_flood(void)
{
    /* more deferred requests than max_pipelined (16): reading pauses and resumes, order holds */
    tc_conn c;
    tc_response r;
    char buf[40 * 64], *p = buf;
    CHECK(tc_connect(&c, port) == 0);
    for (int i = 0; i < 40; i++)
        p += sprintf(p, "GET /slow?ms=%d HTTP/1.1\r\n\r\n", i % 2);
    p += sprintf(p, "GET /jobs/last HTTP/1.1\r\n\r\n");
    CHECK(tc_send(&c, buf, (size_t)(p - buf)) == 0);
    for (int i = 0; i < 40; i++) {
        CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200 && !strcmp(r.body, "late"));
        tc_response_free(&r);
    }
    CHECK(tc_read_response(&c, &r, 0) == 0 && strstr(r.body, "\"last\""));
    tc_response_free(&r);
    tc_close(&c);
    return 0;
}

int test_filter(void)
{
    tc_conn c;
    tc_response r;
    CHECK(tc_connect(&c, port) == 0);
    CHECK(hts_get(&c, "/secret", &r) == 0 && hts_error_is(&r, 401, "unauthorized", NULL));
    tc_response_free(&r);
    CHECK(tc_send_str(&c, "GET /secret HTTP/1.1\r\nAuthorization: Bearer x\r\n\r\n") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200);
    tc_response_free(&r);
    tc_close(&c);
    return 0;
}

/* The filter decides once the headers are in, before the body: a refusal of a body still to come
 * is answered at once (not after the body, nor a 408 for the missing rest) and the connection
 * closes; in order behind an earlier, slow answer; a refused body already whole is dropped and
 * the connection stays open; a request let in gets its 100 Continue and its whole body. */
int test_filter_before_body(void)
{
    tc_conn c;
    tc_response r;
    char v[64], buf[64] = {0};
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "POST /secret/body HTTP/1.1\r\nContent-Length: 1000\r\n\r\n0123") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && hts_error_is(&r, 401, "unauthorized", NULL));
    CHECK(tc_header(&r, "connection", v, sizeof(v)) == 0 && !strcasecmp(v, "close"));
    tc_response_free(&r);
    CHECK(tc_wait_closed(&c, 3000) == 1);
    tc_close(&c);
    /* pipelined behind a slow answer: that one first */
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "GET /slow?ms=200 HTTP/1.1\r\n\r\n"
                          "POST /secret/body HTTP/1.1\r\nContent-Length: 1000\r\n\r\n01") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200 && !strcmp(r.body, "late"));
    tc_response_free(&r);
    CHECK(tc_read_response(&c, &r, 0) == 0 && hts_error_is(&r, 401, "unauthorized", NULL));
    tc_response_free(&r);
    CHECK(tc_wait_closed(&c, 3000) == 1);
    tc_close(&c);
    /* whole already: dropped, the connection goes on */
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "POST /secret/body HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && hts_error_is(&r, 401, "unauthorized", NULL));
    tc_response_free(&r);
    CHECK(hts_get(&c, "/hello", &r) == 0 && r.status == 200);
    tc_response_free(&r);
    /* let in: 100 Continue, then the body, whole, to the handler */
    CHECK(tc_send_str(&c, "POST /secret/body HTTP/1.1\r\nAuthorization: x\r\n"
                          "Content-Length: 5\r\nExpect: 100-continue\r\n\r\n") == 0);
    CHECK(recv(c.fd, buf, 25, MSG_WAITALL) == 25 && !strcmp(buf, "HTTP/1.1 100 Continue\r\n\r\n"));
    CHECK(tc_send_str(&c, "he") == 0 && tc_send_str(&c, "llo") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200 && strstr(r.body, "\"len\":5") &&
          strstr(r.body, "hello"));
    tc_response_free(&r);
    tc_close(&c);
    return 0;
}
