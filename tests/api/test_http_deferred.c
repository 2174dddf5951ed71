/* Deferred answers of the api/ server: answered later from a timer, answered after the client
 * left (dropped, freed), and the abort callback when a long-poll's client disconnects. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "http_test_server.h"

int test_deferred(void)
{
    tc_conn c;
    tc_response r;
    CHECK(tc_connect(&c, port) == 0);
    CHECK(hts_get(&c, "/slow", &r) == 0 && r.status == 200 && !strcmp(r.body, "late"));
    tc_response_free(&r);
    tc_close(&c);
    /* the client leaves before the timer: the answer goes nowhere, nothing crashes or leaks */
    int before = atomic_load(&zombie_answered);
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "GET /slow HTTP/1.1\r\n\r\n") == 0);
    tc_close(&c);
    for (int i = 0; i < 300 && atomic_load(&zombie_answered) == before; i++)
        usleep(10000);
    CHECK(atomic_load(&zombie_answered) > before);
    return 0;
}

int test_abort(void)
{
    tc_conn c;
    int before = atomic_load(&aborted);
    CHECK(tc_connect(&c, port) == 0);
    CHECK(tc_send_str(&c, "GET /hang HTTP/1.1\r\n\r\n") == 0);
    usleep(100000); /* let the handler run and defer (well past idle timeout: must not close) */
    CHECK(atomic_load(&aborted) == before);
    CHECK(tc_wait_closed(&c, 400) == 0);
    tc_close(&c);
    for (int i = 0; i < 300 && atomic_load(&aborted) == before; i++)
        usleep(10000);
    CHECK(atomic_load(&aborted) == before + 1);
    return 0;
}
