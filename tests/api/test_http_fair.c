/* Fair connections (api/fair.c) against a server with max_connections 64, 16 per address and a
 * reserve of 4: idle floods from one address or from several, connections that never send a
 * byte while the server is under pressure, and every slot busy. No timing assertions: each check
 * is an answer's status or a connection being closed (within generous bounds). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "http_test_server.h"

enum { FLOOD = 200 };

static tc_conn flood[FLOOD], fill[64], extra[8];

static int connect_n(tc_conn *cs, int n, const char *from)
{
    for (int i = 0; i < n; i++)
        if (tc_connect_from(&cs[i], port_fair, from)) {
            fprintf(stderr, "  connect %d from %s failed\n", i, from);
            return -1;
        }
    return 0;
}

static void close_n(tc_conn *cs, int n)
{
    for (int i = 0; i < n; i++)
        tc_close(&cs[i]);
}

static int get_is(tc_conn *c, const char *path, int status)
{
    tc_response r;
    int ok = hts_get(c, path, &r) == 0 && r.status == status;
    if (!ok)
        fprintf(stderr, "  GET %s: %d %s, expected %d\n", path, r.status, r.body ? r.body : "",
                status);
    tc_response_free(&r);
    return ok;
}

/* Fills the 64 slots from 127.0.0.3 .. 127.0.0.6 (16 each, the per-address limit). */
static int fill_slots(const char *request)
{
    char from[32];
    int before = atomic_load(&hangs);
    for (int a = 0; a < 4; a++) {
        snprintf(from, sizeof(from), "127.0.0.%d", 3 + a);
        if (connect_n(fill + 16 * a, 16, from))
            return -1;
        for (int i = 0; request && i < 16; i++)
            if (tc_send_str(&fill[16 * a + i], request))
                return -1;
    }
    return request ? hts_wait_hangs(before + 64) : 0;
}

int test_fair_idle_flood(void)
{
    /* 200 connections from 127.0.0.1 that send nothing: they evict one another (16 per
     * address), so /healthz and a normal request from that same address still get 200, and
     * another address's keep-alive connections are untouched */
    tc_conn c;
    CHECK(connect_n(extra, 8, "127.0.0.2") == 0);
    for (int i = 0; i < 8; i++)
        CHECK(get_is(&extra[i], "/hello", 200));
    CHECK(connect_n(flood, FLOOD, "127.0.0.1") == 0);
    CHECK(tc_connect(&c, port_fair) == 0);
    CHECK(get_is(&c, "/healthz", 200));
    CHECK(get_is(&c, "/hello", 200));
    tc_close(&c);
    CHECK(tc_connect(&c, port_fair) == 0);
    CHECK(get_is(&c, "/hello", 200));
    tc_close(&c);
    CHECK(tc_wait_closed(&flood[0], 3000)); /* the oldest idle connection was evicted */
    for (int i = 0; i < 8; i++)
        CHECK(get_is(&extra[i], "/hello", 200));
    close_n(flood, FLOOD);
    close_n(extra, 8);
    return 0;
}

int test_fair_global_evict(void)
{
    /* every slot taken by connections that sent nothing, each address within its limit: a
     * newcomer evicts the oldest of them */
    tc_conn c;
    CHECK(fill_slots(NULL) == 0);
    CHECK(tc_connect_from(&c, port_fair, "127.0.0.7") == 0);
    CHECK(get_is(&c, "/healthz", 200));
    CHECK(get_is(&c, "/hello", 200));
    tc_close(&c);
    CHECK(tc_wait_closed(&fill[0], 3000));
    close_n(fill, 64);
    return 0;
}

int test_fair_first_byte(void)
{
    /* above 3/4 of max_connections, connections that send nothing for busy_timeout_ms (600) are
     * closed, oldest first, and so are keep-alive connections idle that long */
    tc_conn c;
    CHECK(tc_connect_from(&c, port_fair, "127.0.0.7") == 0);
    CHECK(get_is(&c, "/hello", 200));
    CHECK(fill_slots(NULL) == 0); /* the last of them evicts fill[0] */
    CHECK(tc_wait_closed(&c, 5000));
    CHECK(tc_wait_closed(&fill[1], 5000));
    tc_close(&c);
    close_n(fill, 64);
    return 0;
}

int test_fair_reserve(void)
{
    /* every slot busy with a long-poll: a newcomer lands on a reserve slot, where /healthz is
     * answered and /hello gets 503; with the reserve busy too, the next one gets 503 at once */
    tc_conn x, y, z;
    tc_response r;
    CHECK(fill_slots("GET /hang HTTP/1.1\r\n\r\n") == 0);
    CHECK(tc_connect_from(&x, port_fair, "127.0.0.7") == 0);
    CHECK(hts_get(&x, "/hello", &r) == 0 && hts_error_is(&r, 503, "unavailable", NULL));
    tc_response_free(&r);
    CHECK(tc_wait_closed(&x, 3000));
    tc_close(&x);
    CHECK(tc_connect_from(&y, port_fair, "127.0.0.7") == 0);
    CHECK(get_is(&y, "/healthz", 200));
    CHECK(get_is(&y, "/healthz", 200));
    for (int i = 0; i < 4; i++) { /* one at a time: a newcomer may evict one not yet polling */
        int before = atomic_load(&hangs);
        CHECK(tc_connect_from(&extra[i], port_fair, "127.0.0.8") == 0);
        CHECK(tc_send_str(&extra[i], "GET /poll HTTP/1.1\r\n\r\n") == 0);
        CHECK(hts_wait_hangs(before + 1) == 0);
    }
    CHECK(tc_wait_closed(&y, 3000)); /* its idle reserve slot went to a poll */
    tc_close(&y);
    CHECK(tc_connect_from(&z, port_fair, "127.0.0.9") == 0);
    CHECK(hts_get(&z, "/healthz", &r) == 0 && hts_error_is(&r, 503, "unavailable", NULL));
    tc_response_free(&r);
    tc_close(&z);
    close_n(extra, 4);
    close_n(fill, 64); /* their long-polls are aborted */
    return 0;
}
