/* Blocking raw-socket HTTP client for the api tests (see http_test_client.h). Deliberately small
 * and independent of the server code so that it checks the bytes on the wire. */
#define _GNU_SOURCE /* memmem */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include "http_test_client.h"

int tc_connect_from(tc_conn *c, int port, const char *from)
{
    struct sockaddr_in a = {0};
    memset(c, 0, sizeof(*c));
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c->fd < 0)
        return -1;
    struct timeval tv = {5, 0};
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    a.sin_family = AF_INET;
    if (from) {
        struct sockaddr_in src = {.sin_family = AF_INET};
        if (inet_pton(AF_INET, from, &src.sin_addr) != 1 ||
            bind(c->fd, (struct sockaddr *)&src, sizeof(src)) < 0)
            goto fail;
    }
    a.sin_port = htons((unsigned short)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof(a)) < 0)
        goto fail;
    return 0;
fail:
    close(c->fd);
    c->fd = -1;
    return -1;
}

int tc_connect(tc_conn *c, int port)
{
    return tc_connect_from(c, port, NULL);
}

int tc_send(tc_conn *c, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

int tc_send_str(tc_conn *c, const char *s)
{
    return tc_send(c, s, strlen(s));
}

static int fill(tc_conn *c)
{
    if (c->len == sizeof(c->buf))
        return -1;
    ssize_t n;
    do
        n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return -1;
    c->len += (size_t)n;
    return 0;
}

static void consume(tc_conn *c, size_t n)
{
    memmove(c->buf, c->buf + n, c->len - n);
    c->len -= n;
}

/* Finds "\r\n" at or after from in the buffer, reading more as needed; returns its offset. */
static long find_crlf(tc_conn *c, size_t from)
{
    for (;;) {
        for (size_t i = from; i + 1 < c->len; i++)
            if (c->buf[i] == '\r' && c->buf[i + 1] == '\n')
                return (long)i;
        if (fill(c))
            return -1;
    }
}

static int need(tc_conn *c, size_t n)
{
    while (c->len < n)
        if (fill(c))
            return -1;
    return 0;
}

static void body_append(tc_response *r, const char *p, size_t n)
{
    r->body = realloc(r->body, r->body_len + n + 1);
    memcpy(r->body + r->body_len, p, n);
    r->body_len += n;
    r->body[r->body_len] = '\0';
}

int tc_read_response(tc_conn *c, tc_response *r, int head_only)
{
    memset(r, 0, sizeof(*r));
    body_append(r, "", 0);
    long end;
    for (;;) { /* header block; skips interim 1xx answers */
        char *hdr_end = NULL;
        for (;;) {
            hdr_end = c->len >= 4 ? memmem(c->buf, c->len, "\r\n\r\n", 4) : NULL;
            if (hdr_end)
                break;
            if (fill(c))
                return -1;
        }
        end = hdr_end - c->buf;
        if (sscanf(c->buf, "HTTP/1.%*d %d", &r->status) != 1)
            return -1;
        if (r->status >= 200)
            break;
        consume(c, (size_t)end + 4);
    }
    char *line_end = memmem(c->buf, (size_t)end + 2, "\r\n", 2);
    size_t hstart = (size_t)(line_end - c->buf) + 2, hlen = (size_t)end + 2 - hstart;
    if (hlen >= sizeof(r->headers))
        return -1;
    memcpy(r->headers, c->buf + hstart, hlen);
    r->headers[hlen] = '\0';
    consume(c, (size_t)end + 4);
    char v[64];
    if (head_only || r->status == 204 || r->status == 304)
        return 0;
    if (tc_header(r, "content-length", v, sizeof(v)) == 0) {
        size_t n = strtoul(v, NULL, 10);
        if (need(c, n))
            return -1;
        body_append(r, c->buf, n);
        consume(c, n);
        return 0;
    }
    if (tc_header(r, "transfer-encoding", v, sizeof(v)) == 0 && !strcasecmp(v, "chunked")) {
        for (;;) {
            long e = find_crlf(c, 0);
            if (e < 0)
                return -1;
            size_t n = strtoul(c->buf, NULL, 16);
            consume(c, (size_t)e + 2);
            if (need(c, n + 2))
                return -1;
            body_append(r, c->buf, n);
            consume(c, n + 2);
            if (n == 0)
                return 0;
        }
    }
    while (fill(c) == 0) /* close-delimited */
        ;
    body_append(r, c->buf, c->len);
    consume(c, c->len);
    return 0;
}

int tc_header(const tc_response *r, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    for (const char *p = r->headers; *p;) {
        const char *e = strstr(p, "\r\n");
        if (!e)
            break;
        if ((size_t)(e - p) > nl && !strncasecmp(p, name, nl) && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (*v == ' ')
                v++;
            snprintf(out, cap, "%.*s", (int)(e - v), v);
            return 0;
        }
        p = e + 2;
    }
    return -1;
}

int tc_wait_closed(tc_conn *c, int ms)
{
    struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
    for (;;) {
        int n = poll(&pfd, 1, ms);
        if (n <= 0)
            return 0;
        char tmp[4096];
        ssize_t r = recv(c->fd, tmp, sizeof(tmp), 0);
        if (r <= 0)
            return 1;
    }
}

void tc_close(tc_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

void tc_response_free(tc_response *r)
{
    free(r->body);
    r->body = NULL;
}
