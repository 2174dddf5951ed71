/* Limits and hostile input against the api/ server: body and header size (413/431), malformed
 * requests, random garbage, idle and request (slowloris) timeouts, max connections (eviction, then
 * 503). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "http_test_server.h"

int test_body_limits(void)
{
    tc_conn c;
    tc_response r;
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "POST /jobs/1/body HTTP/1.1\r\nContent-Length: 5000\r\n\r\n") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && hts_error_is(&r, 413, "payload_too_large", NULL));
    tc_response_free(&r);
    CHECK(tc_wait_closed(&c, 3000));
    tc_close(&c);
    /* chunked, growing past the limit */
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "POST /jobs/1/body HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n") == 0);
    char chunk[700];
    memset(chunk, 'a', sizeof(chunk));
    for (int i = 0; i < 2; i++) {
        CHECK(tc_send_str(&c, "2bc\r\n") == 0);
        CHECK(tc_send(&c, chunk, sizeof(chunk)) == 0 && tc_send_str(&c, "\r\n") == 0);
    }
    CHECK(tc_read_response(&c, &r, 0) == 0 && hts_error_is(&r, 413, "payload_too_large", NULL));
    tc_response_free(&r);
    tc_close(&c);
    /* a route with its own larger limit */
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "POST /upload HTTP/1.1\r\nContent-Length: 3000\r\n\r\n") == 0);
    char big[3000];
    memset(big, 'b', sizeof(big));
    CHECK(tc_send(&c, big, sizeof(big)) == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200 && strstr(r.body, "\"len\":3000"));
    tc_response_free(&r);
    tc_close(&c);
    return 0;
}

int test_header_too_large(void)
{
    tc_conn c;
    tc_response r;
    char big[2100];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "GET /hello HTTP/1.1\r\nX-Big: ") == 0);
    CHECK(tc_send_str(&c, big) == 0 && tc_send_str(&c, "\r\n\r\n") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && hts_error_is(&r, 431, "header_too_large", NULL));
    tc_response_free(&r);
    CHECK(tc_wait_closed(&c, 3000));
    tc_close(&c);
    return 0;
}

int test_malformed(void)
{
    tc_conn c;
    tc_response r;
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "GET /hello HTTP/1.1\r\n\r\nBLAH\x01\x02 / HTTP/9\r\n\r\n") == 0);
    CHECK(tc_read_response(&c, &r, 0) == 0 && r.status == 200);
    tc_response_free(&r);
    CHECK(tc_read_response(&c, &r, 0) == 0 && hts_error_is(&r, 400, "bad_request", NULL));
    tc_response_free(&r);
    CHECK(tc_wait_closed(&c, 3000));
    tc_close(&c);
    return 0;
}

int test_garbage(void)
{
    /* random bytes on several connections, then the server still answers */
    unsigned seed = 12345;
    for (int k = 0; k < 20; k++) {
        tc_conn c;
        char junk[600];
        CHECK(tc_connect(&c, port) == 0);
        size_t n = 1 + (size_t)(rand_r(&seed) % sizeof(junk));
        for (size_t i = 0; i < n; i++)
            junk[i] = (char)rand_r(&seed);
        if (k % 2)
            memcpy(junk, "GET /", n < 5 ? n : 5);
        tc_send(&c, junk, n);
        tc_close(&c);
    }
    tc_conn c;
    tc_response r;
    CHECK(tc_connect(&c, port) == 0);
    CHECK(hts_get(&c, "/hello", &r) == 0 && r.status == 200);
    tc_response_free(&r);
    tc_close(&c);
    return 0;
}

int test_idle_timeout(void)
{
    tc_conn c;
    tc_response r;
    CHECK(tc_connect(&c, port) == 0);
    CHECK(hts_get(&c, "/hello", &r) == 0 && r.status == 200);
    tc_response_free(&r);
    CHECK(tc_wait_closed(&c, 3000)); /* idle_timeout_ms = 300 */
    tc_close(&c);
    return 0;
}

int test_request_timeout(void)
{
    tc_conn c;
    tc_response r;
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "GET /hello HTTP/1.1\r\nX-Slow: ") == 0);
    for (int i = 0; i < 8; i++) { /* trickle a byte every 100 ms: slower than the 600 ms limit */
        usleep(100000);
        if (tc_send_str(&c, "a"))
            break;
    }
    CHECK(tc_read_response(&c, &r, 0) == 0 && hts_error_is(&r, 408, "request_timeout", NULL));
    tc_response_free(&r);
    CHECK(tc_wait_closed(&c, 3000));
    tc_close(&c);
    return 0;
}

int test_max_connections(void)
{
    /* max_connections 1, no reserve: a newcomer evicts the idle connection; 503 only when the
     * one slot is busy with a request */
    tc_conn a, b, c;
    tc_response r;
    CHECK(tc_connect(&a, port_small) == 0);
    CHECK(hts_get(&a, "/hello", &r) == 0 && r.status == 200);
    tc_response_free(&r);
    CHECK(tc_connect(&b, port_small) == 0);
    CHECK(hts_get(&b, "/hello", &r) == 0 && r.status == 200);
    tc_response_free(&r);
    CHECK(tc_wait_closed(&a, 3000)); /* evicted */
    tc_close(&a);
    int before = atomic_load(&hangs);
    CHECK(tc_send_str(&b, "GET /hang HTTP/1.1\r\n\r\n") == 0);
    CHECK(hts_wait_hangs(before + 1) == 0);
    CHECK(tc_connect(&c, port_small) == 0);
    CHECK(hts_get(&c, "/hello", &r) == 0 && hts_error_is(&r, 503, "unavailable", NULL));
    tc_response_free(&r);
    CHECK(tc_wait_closed(&c, 3000));
    tc_close(&c);
    tc_close(&b); /* its long-poll is aborted */
    return 0;
}
