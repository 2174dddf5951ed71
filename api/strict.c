/* Strict HTTP/1.1 framing (RFC 9112), checked on the raw bytes before http-parser sees them.
 * Debian's http-parser is built lenient: it honours "Content-Length : 2", skips the two bytes
 * after chunk data unchecked, takes any major version, obs-fold and bare CR. Those leniencies are
 * request-smuggling risks, so this scanner refuses them first. It only reads: it never buffers or
 * allocates, and it must accept everything a real client sends (curl, Python). */
#include <string.h>
#include "http_internal.h"

enum {
    ST_START = 0, /* before a request line; empty lines are skipped (RFC 9112 2.2) */
    ST_START_CR,
    ST_METHOD,
    ST_TARGET_START,
    ST_TARGET,
    ST_VERSION,
    ST_RL_END,
    ST_RL_CR,
    ST_LINE_START, /* a header (or trailer) line, or the empty line ending the section */
    ST_NAME,
    ST_VALUE,
    ST_VALUE_CR,
    ST_END_CR,
    ST_BODY, /* Content-Length bytes */
    ST_CHUNK_START,
    ST_CHUNK_SIZE,
    ST_CHUNK_BWS,
    ST_CHUNK_EXT,
    ST_CHUNK_CR,
    ST_CHUNK_DATA,
    ST_DATA_CR,
    ST_DATA_LF,
};

static const char CL_NAME[] = "content-length", TE_NAME[] = "transfer-encoding";

/* tchar of RFC 9110 5.6.2: the only bytes allowed in a method or a header name */
static int is_tchar(unsigned char ch)
{
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
        return 1;
    return ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

/* field-vchar, SP or HTAB (obs-text included): what a field value or chunk extension may hold */
static int is_value_char(unsigned char ch)
{
    return ch == '\t' || (ch >= 0x20 && ch != 0x7f);
}

static int hex_digit(unsigned char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

static int lower(unsigned char ch)
{
    return ch >= 'A' && ch <= 'Z' ? ch + 32 : ch;
}

/* The captured value of a Content-Length or Transfer-Encoding field, OWS trimmed. */
static void value_trimmed(const http_strict *st, const char **v, size_t *n)
{
    const char *p = st->val;
    size_t len = st->val_len;
    while (len && (*p == ' ' || *p == '\t'))
        p++, len--;
    while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
        len--;
    *v = p;
    *n = len;
}

/* A header line has ended: remember what decides the framing. NULL, or why it is refused. */
static const char *line_done(http_strict *st)
{
    const char *v;
    size_t n;
    if (!st->name_cl && !st->name_te)
        return NULL;
    if (st->trailers)
        return "Content-Length or Transfer-Encoding in the trailer section";
    value_trimmed(st, &v, &n);
    if (st->name_cl) {
        uint64_t cl = 0;
        if (st->val_over || n == 0 || n > 18)
            return "invalid Content-Length";
        for (size_t i = 0; i < n; i++) {
            if (v[i] < '0' || v[i] > '9')
                return "invalid Content-Length";
            cl = cl * 10 + (uint64_t)(v[i] - '0');
        }
        if (st->has_cl && cl != st->cl)
            return "several differing Content-Length values";
        st->has_cl = 1;
        st->cl = cl;
    } else {
        st->te_count++;
        st->te_chunked = !st->val_over && n == 7;
        for (size_t i = 0; i < n && st->te_chunked; i++)
            st->te_chunked = lower((unsigned char)v[i]) == "chunked"[i];
    }
    return NULL;
}

/* The empty line after the headers: decide how the body is framed. 1 when the message ends here,
 * 0 when a body follows, -1 (with *why) when the framing is refused. */
static int head_done(http_strict *st, const char **why)
{
    if (st->connect) /* http-parser hands everything after a CONNECT head to the upgrade */
        return 1;
    if (st->te_count && st->has_cl) {
        *why = "both Content-Length and Transfer-Encoding";
        return -1;
    }
    if (st->te_count) {
        if (st->te_count > 1 || !st->te_chunked) {
            *why = "Transfer-Encoding other than chunked";
            return -1;
        }
        if (st->http10) {
            *why = "Transfer-Encoding in an HTTP/1.0 request";
            return -1;
        }
        st->state = ST_CHUNK_START;
        return 0;
    }
    if (st->has_cl && st->cl > 0) {
        st->remaining = st->cl;
        st->state = ST_BODY;
        return 0;
    }
    return 1;
}

/* One byte of a header or trailer section (states ST_LINE_START .. ST_END_CR). Returns 1 when
 * the message ends with it, 0 to go on, -1 (with *why) when it is refused. */
static int section_byte(http_strict *st, unsigned char ch, const char **why)
{
    switch (st->state) {
    case ST_LINE_START:
        if (ch == '\r') {
            st->state = ST_END_CR;
        } else if (ch == '\n' && !st->trailers) { /* bare LF ends a line (RFC 9112 2.2 MAY) */
            return head_done(st, why);
        } else if (ch == ' ' || ch == '\t') {
            *why = "obsolete line folding (a header line starting with whitespace)";
            return -1;
        } else if (is_tchar(ch)) {
            st->state = ST_NAME;
            st->name_len = 1;
            st->name_cl = lower(ch) == CL_NAME[0];
            st->name_te = lower(ch) == TE_NAME[0];
            st->val_len = 0;
            st->val_over = 0;
        } else {
            *why = ch == '\n' ? "bare LF in chunked framing" : "invalid byte in a header name";
            return -1;
        }
        return 0;
    case ST_NAME:
        if (ch == ':') {
            st->name_cl = st->name_cl && st->name_len == sizeof(CL_NAME) - 1;
            st->name_te = st->name_te && st->name_len == sizeof(TE_NAME) - 1;
            st->state = ST_VALUE;
        } else if (is_tchar(ch)) {
            size_t i = st->name_len++;
            st->name_cl = st->name_cl && i < sizeof(CL_NAME) - 1 && lower(ch) == CL_NAME[i];
            st->name_te = st->name_te && i < sizeof(TE_NAME) - 1 && lower(ch) == TE_NAME[i];
        } else if (ch == ' ' || ch == '\t') {
            *why = "whitespace between a header name and its colon";
            return -1;
        } else {
            *why = ch == '\r' || ch == '\n' ? "header line without a colon"
                                            : "invalid byte in a header name";
            return -1;
        }
        return 0;
    case ST_VALUE:
        if (ch == '\r') {
            st->state = ST_VALUE_CR;
        } else if (ch == '\n' && !st->trailers) {
            if ((*why = line_done(st)))
                return -1;
            st->state = ST_LINE_START;
        } else if (is_value_char(ch)) {
            if ((st->name_cl || st->name_te) && !st->val_over) {
                if (st->val_len < sizeof(st->val))
                    st->val[st->val_len++] = (char)ch;
                else
                    st->val_over = 1;
            }
        } else {
            *why = ch == '\n' ? "bare LF in chunked framing" : "invalid byte in a header value";
            return -1;
        }
        return 0;
    case ST_VALUE_CR:
        if (ch != '\n') {
            *why = "bare CR in a header line";
            return -1;
        }
        if ((*why = line_done(st)))
            return -1;
        st->state = ST_LINE_START;
        return 0;
    case ST_END_CR:
        if (ch != '\n') {
            *why = "bare CR in a header line";
            return -1;
        }
        return st->trailers ? 1 : head_done(st, why);
    }
    *why = "internal framing state";
    return -1;
}

/* One byte of a chunked body's framing (sizes, extensions, the CRLF after data). */
static int chunk_byte(http_strict *st, unsigned char ch, const char **why)
{
    int h = hex_digit(ch);
    switch (st->state) {
    case ST_CHUNK_START:
        if (h < 0) {
            *why = "invalid chunk size";
            return -1;
        }
        st->remaining = (uint64_t)h;
        st->state = ST_CHUNK_SIZE;
        return 0;
    case ST_CHUNK_SIZE:
        if (h >= 0) {
            if (st->remaining >> 60) {
                *why = "chunk size overflows 64 bits";
                return -1;
            }
            st->remaining = st->remaining * 16 + (uint64_t)h;
            return 0;
        }
        st->state = ST_CHUNK_BWS; /* what may follow the digits */
        return chunk_byte(st, ch, why);
    case ST_CHUNK_BWS:
        if (ch == ' ' || ch == '\t')
            st->state = ST_CHUNK_BWS;
        else if (ch == ';')
            st->state = ST_CHUNK_EXT;
        else if (ch == '\r')
            st->state = ST_CHUNK_CR;
        else {
            *why = "invalid chunk size line";
            return -1;
        }
        return 0;
    case ST_CHUNK_EXT:
        if (ch == '\r') {
            st->state = ST_CHUNK_CR;
        } else if (!is_value_char(ch)) {
            *why = "invalid byte in a chunk extension";
            return -1;
        }
        return 0;
    case ST_CHUNK_CR:
        if (ch != '\n') {
            *why = "chunk size line not ended by CRLF";
            return -1;
        }
        if (st->remaining == 0) { /* the last chunk: trailers, then an empty line */
            st->trailers = 1;
            st->state = ST_LINE_START;
        } else {
            st->state = ST_CHUNK_DATA;
        }
        return 0;
    case ST_DATA_CR:
    case ST_DATA_LF:
        if (ch != (st->state == ST_DATA_CR ? '\r' : '\n')) {
            *why = "chunk data not followed by CRLF";
            return -1;
        }
        st->state = st->state == ST_DATA_CR ? ST_DATA_LF : ST_CHUNK_START;
        return 0;
    }
    *why = "internal framing state";
    return -1;
}

/* One byte of the request line. */
static int line_byte(http_strict *st, unsigned char ch, const char **why)
{
    static const char CONNECT[] = "CONNECT", VERSION[] = "HTTP/1.";
    switch (st->state) {
    case ST_START:
        if (ch == '\r') {
            st->state = ST_START_CR;
        } else if (ch != '\n') {
            if (!is_tchar(ch)) {
                *why = "invalid byte in the request method";
                return -1;
            }
            st->state = ST_METHOD;
            st->name_len = 1;
            st->connect = ch == 'C';
        }
        return 0;
    case ST_START_CR:
        if (ch != '\n') {
            *why = "bare CR before the request line";
            return -1;
        }
        st->state = ST_START;
        return 0;
    case ST_METHOD:
        if (ch == ' ') {
            st->connect = st->connect && st->name_len == sizeof(CONNECT) - 1;
            st->state = ST_TARGET_START;
        } else if (is_tchar(ch)) {
            size_t i = st->name_len++;
            st->connect = st->connect && i < sizeof(CONNECT) - 1 && ch == (unsigned char)CONNECT[i];
        } else {
            *why = "invalid byte in the request method";
            return -1;
        }
        return 0;
    case ST_TARGET_START:
    case ST_TARGET:
        if (ch == ' ' && st->state == ST_TARGET) {
            st->state = ST_VERSION;
            st->name_len = 0;
        } else if (ch <= 0x20 || ch == 0x7f) {
            *why = ch == '\r' || ch == '\n' ? "request line without an HTTP version"
                                            : "invalid byte in the request target";
            return -1;
        } else {
            st->state = ST_TARGET;
        }
        return 0;
    case ST_VERSION: {
        size_t i = st->name_len++;
        if (i == 5 && ch >= '0' && ch <= '9' && ch != '1') {
            *why = "unsupported HTTP version (this server speaks HTTP/1.0 and HTTP/1.1)";
            return -1;
        }
        if (i < sizeof(VERSION) - 1 ? ch != (unsigned char)VERSION[i] : ch < '0' || ch > '9') {
            *why = "malformed HTTP version";
            return -1;
        }
        if (i == sizeof(VERSION) - 1) {
            st->http10 = ch == '0';
            st->state = ST_RL_END;
        }
        return 0;
    }
    case ST_RL_END:
        if (ch == '\r') {
            st->state = ST_RL_CR;
        } else if (ch == '\n') {
            st->state = ST_LINE_START;
        } else {
            *why = "malformed request line";
            return -1;
        }
        return 0;
    case ST_RL_CR:
        if (ch != '\n') {
            *why = "bare CR in the request line";
            return -1;
        }
        st->state = ST_LINE_START;
        return 0;
    }
    *why = "internal framing state";
    return -1;
}

int http_strict_scan(http_strict *st, const char *data, size_t len, size_t *used, int *msg_end,
                     const char **why)
{
    size_t i = 0;
    *msg_end = 0;
    *why = NULL;
    while (i < len) {
        if (st->state == ST_BODY || st->state == ST_CHUNK_DATA) {
            size_t take = len - i;
            if ((uint64_t)take > st->remaining)
                take = (size_t)st->remaining;
            st->remaining -= take;
            i += take;
            if (st->remaining > 0)
                break;
            if (st->state == ST_CHUNK_DATA) {
                st->state = ST_DATA_CR;
                continue;
            }
            *msg_end = 1;
            break;
        }
        unsigned char ch = (unsigned char)data[i];
        int r;
        if (st->state < ST_LINE_START)
            r = line_byte(st, ch, why);
        else if (st->state <= ST_END_CR)
            r = section_byte(st, ch, why);
        else
            r = chunk_byte(st, ch, why);
        if (r < 0) {
            *used = i;
            return -1;
        }
        i++;
        if (r > 0) {
            *msg_end = 1;
            break;
        }
    }
    if (*msg_end)
        memset(st, 0, sizeof(*st)); /* ST_START for the next request */
    *used = i;
    return 0;
}
