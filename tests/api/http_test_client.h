/* Blocking raw-socket HTTP client for the api tests: send exact bytes, read back one response at a
 * time (Content-Length or chunked), and see whether the server closed the connection. */
#ifndef HONE_HTTP_TEST_CLIENT_H
#define HONE_HTTP_TEST_CLIENT_H

#include <stddef.h>

typedef struct tc_conn {
    int fd;
    char buf[1 << 16];
    size_t len; /* bytes received but not yet consumed */
} tc_conn;

typedef struct tc_response {
    int status;
    char headers[4096]; /* raw header block, lines "Name: value\r\n" */
    char *body;         /* NUL-terminated; free with tc_response_free */
    size_t body_len;
} tc_response;

int tc_connect(tc_conn *c, int port); /* 0 or -1; 5 s receive timeout */
/* The same from a given loopback source address ("127.0.0.2": all of 127/8 is loopback). */
int tc_connect_from(tc_conn *c, int port, const char *from);
int tc_send(tc_conn *c, const char *data, size_t len);
int tc_send_str(tc_conn *c, const char *s);
/* Reads one response; head_only for answers to HEAD. 0 or -1 (closed, timeout, garbage). */
int tc_read_response(tc_conn *c, tc_response *r, int head_only);
/* Value of a response header (case-insensitive) copied into out; 0 found, -1 not. */
int tc_header(const tc_response *r, const char *name, char *out, size_t cap);
/* Waits up to ms for the server to close: 1 closed (EOF or reset), 0 still open. */
int tc_wait_closed(tc_conn *c, int ms);
void tc_close(tc_conn *c);
void tc_response_free(tc_response *r);

#endif
