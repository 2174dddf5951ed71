/* Shared fixture of the api/ server tests: a server with test routes running its loop in a
 * thread, the raw-socket client, and helpers to send requests and check JSON error bodies. */
#ifndef HONE_HTTP_TEST_SERVER_H
#define HONE_HTTP_TEST_SERVER_H

#include <stdatomic.h>
#include <stdio.h>
#include "http.h"
#include "http_test_client.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "  %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);             \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

extern int port;            /* the main server: small limits, every test route */
extern int port_small;      /* a second server with max_connections = 1, no reserve */
extern int port_fair;       /* a third: max_connections 64, 16 per address, reserve 4 (fair.c) */
extern char upload_dir[64]; /* where the main server's upload routes spool (and keep) files */
extern char file_dir[64];   /* what GET /file/{name} downloads (hone_http_res_download) */
extern atomic_int file_ends_complete, file_ends_given_up; /* its end callbacks */
extern atomic_int aborted, zombie_answered, log_count;
extern atomic_int hangs; /* /hang and /poll requests that reached their handler */
extern const hone_json_field job_fields[4];

/* upload limits of the main server: 2 slots, 1 waiting, and these memory bounds */
#define UPLOAD_TEST_BUFFER (64 << 10)
#define UPLOAD_TEST_INFLIGHT (96 << 10)

int hts_start(void); /* 0 once both servers listen and the loop thread runs */
int hts_stop(void);  /* shuts down (checking aborts, bookkeeping, no handles left); failures */

int hts_get(tc_conn *c, const char *path, tc_response *r);
/* Waits (up to 5 s) until n long-polls have reached their handler: 0, or -1. */
int hts_wait_hangs(int n);
int hts_post_json(tc_conn *c, const char *path, const char *ctype, const char *body,
                  tc_response *r);
/* Is r an error answer with this status, code and (when non-NULL) field? Prints it when not. */
int hts_error_is(const tc_response *r, int status, const char *code, const char *field);

/* Every test, one behaviour each: X(name) declares int test_name(void). */
#define HTS_TESTS(X)                                                                               \
    X(keep_alive)                                                                                  \
    X(pipelining)                                                                                  \
    X(params_and_query)                                                                            \
    X(404_405)                                                                                     \
    X(head)                                                                                        \
    X(chunked_body)                                                                                \
    X(connection_close_and_http10)                                                                 \
    X(stream)                                                                                      \
    X(stream_http10)                                                                               \
    X(expect_continue)                                                                             \
    X(pipeline_flood)                                                                              \
    X(filter)                                                                                      \
    X(filter_before_body)                                                                          \
    X(body_limits)                                                                                 \
    X(header_too_large)                                                                            \
    X(malformed)                                                                                   \
    X(garbage)                                                                                     \
    X(strict_scan)                                                                                 \
    X(strict_space_before_colon)                                                                   \
    X(strict_chunk_terminator)                                                                     \
    X(strict_version)                                                                              \
    X(strict_obs_fold)                                                                             \
    X(strict_header_name)                                                                          \
    X(strict_framing_conflicts)                                                                    \
    X(strict_legitimate)                                                                           \
    X(idle_timeout)                                                                                \
    X(request_timeout)                                                                             \
    X(max_connections)                                                                             \
    X(fair_idle_flood)                                                                             \
    X(fair_global_evict)                                                                           \
    X(fair_first_byte)                                                                             \
    X(fair_reserve)                                                                                \
    X(json_bodies)                                                                                 \
    X(json_check)                                                                                  \
    X(deferred)                                                                                    \
    X(abort)                                                                                       \
    X(upload_streamed)                                                                             \
    X(upload_chunked)                                                                              \
    X(upload_kept_then_keep_alive)                                                                 \
    X(upload_refused_before_body)                                                                  \
    X(upload_refused_small_body)                                                                   \
    X(upload_filter_first)                                                                         \
    X(upload_too_large)                                                                            \
    X(upload_client_gone)                                                                          \
    X(upload_stalled)                                                                              \
    X(upload_trickle)                                                                              \
    X(upload_slots)                                                                                \
    X(upload_shares)                                                                               \
    X(upload_pipelined)                                                                            \
    X(range_parse)                                                                                 \
    X(file_whole_and_head)                                                                         \
    X(file_ranges)                                                                                 \
    X(file_pipelined)                                                                              \
    X(file_client_gone)                                                                            \
    X(file_half_close)                                                                             \
    X(file_stalled)                                                                                \
    X(file_answered_twice)

#define HTS_DECLARE(name) int test_##name(void);
HTS_TESTS(HTS_DECLARE)

#endif
