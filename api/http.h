/* HTTP/1.1 server library for Hone: libuv event loop, http-parser, jansson bodies, routing with
 * path parameters, limits against abusive clients, and JSON error bodies that name the field.
 * Everything here runs on the loop thread; no function may be called from another thread. */
#ifndef HONE_API_HTTP_H
#define HONE_API_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <uv.h>
#include "hone.h"

typedef struct hone_http_server hone_http_server;
typedef struct hone_http_req hone_http_req; /* one request: method, path, params, query, body */
typedef struct hone_http_res hone_http_res; /* the answer to that request, under construction */

/* ---- limits ---------------------------------------------------------------------------------- */

typedef struct hone_http_limits {
    size_t max_header_bytes;     /* request line + headers; beyond: 431. Default 16 KiB */
    size_t max_body_bytes;       /* decoded body (chunked or not); beyond: 413. Default 1 MiB */
    int max_json_depth;          /* nesting of arrays/objects in JSON bodies; beyond: 400. 32 */
    size_t max_string_bytes;     /* longest JSON string in a body; beyond: 400. Default 64 KiB */
    unsigned idle_timeout_ms;    /* keep-alive connection with nothing to do is closed. 30 s */
    unsigned request_timeout_ms; /* first byte to last byte of one request; beyond: 408. 30 s */
    int max_connections;         /* open connections, see "fair connections" below. 1024 */
    int max_pipelined;           /* requests queued per connection before reading pauses. 16 */
    int max_per_address;         /* connections from one client address (IPv6: one /64).
                                  * Default max_connections / 4 (256) */
    int reserve_connections;     /* slots beyond max_connections for priority routes only.
                                  * Default 32; negative: none */
    unsigned busy_timeout_ms;    /* under pressure: first byte, idle gap, request head. 2 s */
} hone_http_limits;

/* Fair connections. A client cannot hold the server by opening connections and sending nothing:
 *  - under pressure (more than 3/4 of max_connections open) a connection that has not sent its
 *    first byte, sits idle between requests, or has not finished its request head within
 *    busy_timeout_ms is closed (408 for the unfinished head);
 *  - a new connection past max_connections evicts an open one that has no request in progress:
 *    first one that never sent a byte (oldest first), then one whose answer is written and is
 *    only waiting for the client to close, then the least recently active idle keep-alive one,
 *    then one stuck in its request head for busy_timeout_ms / 4;
 *  - a new connection past max_per_address evicts its own address's connection the same way,
 *    so one address (a host running several workers and the CLI over 127.0.0.1 alike) can
 *    neither take every slot nor lock itself out;
 *  - when nothing can be evicted (every connection is busy with a request), it is admitted on
 *    one of reserve_connections slots, where only priority routes are answered (others: 503
 *    and close); with the reserve full too it is answered 503 and closed.
 * max_connections + reserve_connections is cut to fit RLIMIT_NOFILE (less 1/8, at least 128
 * descriptors, for everything else) when the server is created. */

void hone_http_limits_default(hone_http_limits *l);

/* ---- server ---------------------------------------------------------------------------------- */

/* A route handler, called on the loop thread. It answers with one of the hone_http_res_* answering
 * functions (json, error, text, take, empty, stream_*, file, download) either before it returns,
 * or later from the loop (a long-poll, or after uv_queue_work): a deferred answer. req and res stay
 * valid until answered; after the answer (or after the abort callback, see hone_http_res_on_abort)
 * they are gone. A request is never answered twice: later answering calls are ignored. */
typedef void (*hone_http_handler)(hone_http_req *req, hone_http_res *res, void *ud);

/* Runs after routing, before the handler of every matched route (auth, rate limits). Returns 0 to
 * let the handler run, non-zero after having answered the request itself (e.g. 401). It runs in
 * the request's turn (earlier pipelined requests are answered first), and before any body is kept:
 * for a request whose body is still to come it runs once the headers are in (reading waits for it,
 * so at most the rest of one read is held). A refusal then keeps none of the body: a body already
 * received whole is dropped and the connection stays open; otherwise the connection closes after
 * the answer (the rest is never read). A request let in that way has its body read, and the filter
 * runs again just before the handler, so it must be idempotent (what changed in between, a
 * revoked key, counts). Upload routes: see hone_http_route_upload. */
typedef int (*hone_http_filter)(hone_http_req *req, hone_http_res *res, void *ud);

/* Called once per answered request (also for errors the server produces itself, such as 404 or
 * 431; then method and path may be "-"). micros: from the request's first byte to the answer. */
typedef void (*hone_http_access_log)(const char *method, const char *path, int status,
                                     uint64_t micros, void *ud);

typedef struct hone_http_stats {
    uint64_t connections_open, connections_total, connections_rejected;
    uint64_t connections_evicted; /* closed early to make room (see "fair connections") */
    uint64_t requests_total, responses_2xx, responses_4xx, responses_5xx;
} hone_http_stats;

/* limits may be NULL for the defaults; they are copied, and fields left 0 take the default. */
int hone_http_server_new(uv_loop_t *loop, const hone_http_limits *limits, hone_http_server **out);

/* pattern: "/api/v1/jobs/{id}/metrics"; {name} matches one non-empty path segment, passed to the
 * handler percent-decoded (hone_http_req_param). method: "GET", "POST", ... (GET routes answer
 * HEAD too). Literal segments win over {params} when several routes match. A path that matches some
 * route but not its method gets 405 with an Allow header; no match: 404. One trailing '/' in a
 * request path is ignored. Returns HONE_EINVAL for a malformed pattern, HONE_EEXIST for a
 * duplicate. */
int hone_http_route(hone_http_server *s, const char *method, const char *pattern,
                    hone_http_handler h, void *ud);
/* Same, with a body limit of its own for this route (uploads); 0 means the server's limit. */
int hone_http_route_ex(hone_http_server *s, const char *method, const char *pattern,
                       size_t max_body_bytes, hone_http_handler h, void *ud);

/* Marks a route (method NULL: every method of that exact pattern) as a priority route: one that
 * is answered on a reserve connection slot when every other slot is busy (health checks, the
 * calls workers must get through). HONE_ENOENT when no route matches. */
int hone_http_route_priority(hone_http_server *s, const char *method, const char *pattern);

void hone_http_set_filter(hone_http_server *s, hone_http_filter f, void *ud);
void hone_http_set_access_log(hone_http_server *s, hone_http_access_log f, void *ud);
void hone_http_server_stats(const hone_http_server *s, hone_http_stats *out);

/* Binds and listens; host "127.0.0.1", "0.0.0.0", "::1"...; port 0 picks a free port, written to
 * *bound_port (may be NULL). Returns HONE_EIO (bind failed, e.g. port in use) or HONE_EINVAL. */
int hone_http_listen(hone_http_server *s, const char *host, int port, int *bound_port);

/* Stops listening, closes every connection (deferred requests get their abort callbacks), and calls
 * done(arg) from the loop once all handles are closed. Then call hone_http_server_free. */
void hone_http_server_close(hone_http_server *s, void (*done)(void *arg), void *arg);
/* Frees a closed server (or one that never listened and was closed). NULL is fine. */
void hone_http_server_free(hone_http_server *s);

/* ---- uploads: bodies streamed to disk ------------------------------------------------------ */

/* An upload route's first callback, on the loop, once the request's headers are in and before any
 * of its body is stored. The server's filter (authentication) has already run, at this same point
 * for upload routes. Either answers (a refusal: 401, 403, 404, 409, 422 ...) and returns non-zero,
 * or writes the folder the body is to be spooled into to dir and returns 0. After a refusal no
 * byte of the body reaches the disk: a body already received whole is dropped and the connection
 * stays open; otherwise the connection closes after the answer (the rest is never read). */
typedef int (*hone_http_upload_begin)(hone_http_req *req, hone_http_res *res, void *ud, char *dir,
                                      size_t dircap);

/* A route whose body (Content-Length or chunked, at most max_body_bytes; 0: the server's limit;
 * beyond: 413) is streamed into a fresh temp file "<dir>/.upload-XXXXXX" (mode 0644) as it arrives,
 * written with uv_fs requests on the thread pool; at most hone_http_upload_limits.buffer_bytes wait
 * in memory per upload (reading from that client pauses above). Once the body is whole, written,
 * fsynced and closed, handler runs with hone_http_req_body_file(req) naming the file. Whatever the
 * handler has not taken (hone_http_req_body_file_take) is unlinked, off the loop, after the answer;
 * so is the file of an upload whose client leaves, or that fails (413, 408, disk errors: 500).
 * hone_http_req_body returns an empty body for these routes. Returns as hone_http_route does. */
int hone_http_route_upload(hone_http_server *s, const char *method, const char *pattern,
                           size_t max_body_bytes, hone_http_upload_begin begin,
                           hone_http_handler handler, void *ud);

typedef struct hone_http_upload_limits {
    int max_uploads;          /* bodies being spooled at once; later ones wait, unread. Default 4 */
    int max_priority_uploads; /* slots of their own for priority uploads (see the upload class
                               * below). Default: max_uploads */
    int max_per_owner;        /* slots, and places to wait, one owner may hold in its class.
                               * Default (0): half of them, at least one */
    int max_waiting;          /* uploads waiting for a slot, per class; beyond: 503 with
                               * Retry-After. 64 */
    size_t buffer_bytes;   /* one upload's bytes received, not yet written; above: pause. 1 MiB */
    size_t inflight_bytes; /* the same over every upload; above: all pause. 4 MiB */
} hone_http_upload_limits;

void hone_http_upload_limits_default(hone_http_upload_limits *l);
/* In an upload route's begin: whose upload this is (owner, copied: a user's or a worker's id; NULL:
 * no share applies, as for uploads whose begin does not call this) and its class: priority (a
 * worker's checkpoint) takes the max_priority_uploads slots, never waiting behind the others; the
 * others take the max_uploads slots. In each class an owner holds at most max_per_owner slots and
 * as many places to wait, so one client's slow uploads cannot hold every slot. HONE_ESTATE outside
 * a begin callback. */
int hone_http_req_set_upload_class(hone_http_req *req, const char *owner, int priority);
/* Copied; fields left 0 take the default. Applies to uploads that begin afterwards. */
void hone_http_set_upload_limits(hone_http_server *s, const hone_http_upload_limits *l);

typedef struct hone_http_upload_stats {
    uint64_t active, waiting;            /* now: holding a slot; waiting for one */
    uint64_t buffered_bytes;             /* now: received, not yet written */
    uint64_t buffered_peak;              /* the most buffered_bytes has been */
    uint64_t uploads_total, bytes_total; /* bodies spooled whole, and their bytes */
    uint64_t refused_busy;               /* 503s: every slot taken and too many waiting */
} hone_http_upload_stats;

void hone_http_upload_stats_get(const hone_http_server *s, hone_http_upload_stats *out);

/* In an upload route's handler: the spooled body's path (NULL elsewhere, or once taken) and size.
 */
const char *hone_http_req_body_file(const hone_http_req *req);
uint64_t hone_http_req_body_file_size(const hone_http_req *req);
/* The handler takes the file (to rename it into place, or to read it after answering from the
 * thread pool): returns its path (malloc'd; free it) and the server will not unlink it. NULL when
 * there is no file to take. */
char *hone_http_req_body_file_take(hone_http_req *req);

/* ---- request --------------------------------------------------------------------------------- */

const char *hone_http_req_method(const hone_http_req *req); /* "GET", "POST", ... */
const char *hone_http_req_path(const hone_http_req *req);   /* raw path, no query: "/api/v1/x" */
const char *hone_http_req_route(const hone_http_req *req);  /* the matched pattern, or NULL */
/* Percent-decoded {name} from the route pattern; NULL when the pattern has no such name. */
const char *hone_http_req_param(const hone_http_req *req, const char *name);
/* Decoded ('+' is a space) value of the first ?name=...; "" for "?name"; NULL if absent. */
const char *hone_http_req_query(const hone_http_req *req, const char *name);
/* First header of that name (case-insensitive); NULL if absent. */
const char *hone_http_req_header(const hone_http_req *req, const char *name);
/* Raw body (NUL-terminated for convenience; may contain NULs); *len may be NULL. */
const char *hone_http_req_body(const hone_http_req *req, size_t *len);
const char *hone_http_req_peer(const hone_http_req *req); /* "127.0.0.1:53122" or "-" */
/* A pointer for the filter to hand to the handler (e.g. the authenticated principal); not freed. */
void hone_http_req_set_data(hone_http_req *req, void *data);
void *hone_http_req_data(const hone_http_req *req);

/* Parses the body as a JSON object within the server's limits. On success returns a new reference
 * (json_decref it). Otherwise answers the request itself and returns NULL: 415 (Content-Type not
 * application/json), 400 (empty, malformed: the message names line and column; too deep; string
 * too long; duplicate key), 422 (valid JSON but not an object). */
json_t *hone_http_req_json(hone_http_req *req, hone_http_res *res);

/* ---- response -------------------------------------------------------------------------------- */

/* Adds a response header; call before answering. HONE_EINVAL for CR/LF or a reserved name
 * (Content-Length, Content-Type, Transfer-Encoding, Connection), HONE_ESTATE once answered. */
int hone_http_res_header(hone_http_res *res, const char *name, const char *value);

/* Answering functions: each sends the whole response (with Content-Length) and ends the request. */
void hone_http_res_json(hone_http_res *res, int status, json_t *body /* stolen; NULL: {} */);
void hone_http_res_text(hone_http_res *res, int status, const char *content_type, const char *body,
                        size_t len);
/* Like res_text but takes ownership of body (allocated with malloc/hone_xmalloc). */
void hone_http_res_take(hone_http_res *res, int status, const char *content_type, char *body,
                        size_t len);
void hone_http_res_empty(hone_http_res *res, int status); /* e.g. 204 */
/* Body {"error": {"status": 422, "code": "unprocessable_entity", "message": "...", "field": "x"}};
 * "field" is left out when field is NULL. */
void hone_http_res_error(hone_http_res *res, int status, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Streaming (live metrics, logs): a chunked response (close-delimited for HTTP/1.0 clients). The
 * request counts as answered only at stream_end. stream_write returns HONE_ESTATE when the client
 * has gone or has left more than 16 MiB unread (the connection is then closed): call stream_end,
 * or rely on the abort callback. */
int hone_http_res_stream_start(hone_http_res *res, int status, const char *content_type);
int hone_http_res_stream_write(hone_http_res *res, const void *data, size_t len);
void hone_http_res_stream_end(hone_http_res *res);

/* ---- files: a byte range of an open file, streamed -------------------------------------- */

/* Runs exactly once when a file answer is over: complete 1 once its last byte is queued to the
 * socket (or at once for HEAD and empty ranges), 0 when it was given up (the client left, the
 * file could not be read or shrank, the server closed). It may run before the answering call
 * returns; req and res must not be touched from it. */
typedef void (*hone_http_file_end)(void *ud, int complete);

/* Answers with length bytes of fd from offset (Content-Length: length) and takes ownership of fd,
 * which is closed off the loop when the answer is over, whatever happens. The bytes are read in
 * chunks of 256 KiB on the thread pool, the next one only once the socket's write queue is below
 * one chunk, so memory stays flat whatever the length and a client that stops reading makes the
 * server hold no more (after idle_timeout_ms without progress its connection is closed). HEAD: the
 * headers only, no read. The request counts as answered once the last chunk is queued; requests
 * pipelined after it wait until then. end (may be NULL) runs as described above. */
void hone_http_res_file(hone_http_res *res, int status, const char *content_type, int fd,
                        uint64_t offset, uint64_t length, hone_http_file_end end, void *ud);
/* Called before hone_http_res_file (or _download): ok(ud), ud being the end callback's, is asked
 * before every 16th chunk (4 MiB) is read; 0 ends the answer there (the connection closes: the
 * client sees a short body). For an answer whose right to go on can end (a revoked login). */
void hone_http_res_file_guard(hone_http_res *res, int (*ok)(void *ud));

typedef enum hone_http_range {
    HONE_HTTP_RANGE_WHOLE = 0,     /* no Range, or one to ignore: answer 200 with the whole */
    HONE_HTTP_RANGE_PART,          /* one satisfiable range: 206 with *off, *len */
    HONE_HTTP_RANGE_UNSATISFIABLE, /* 416 with Content-Range: bytes * /size */
} hone_http_range;

/* Parses a Range header value (NULL: none) against a representation of size bytes, RFC 9110
 * section 14: one range of unit "bytes", "N-M" (M past the end is cut to it), "N-" or "-S" (the
 * last S bytes). Several ranges, another unit or anything malformed are ignored (WHOLE), as the
 * RFC allows; a range starting at or past the end, or "-0", is UNSATISFIABLE. */
hone_http_range hone_http_range_parse(const char *value, uint64_t size, uint64_t *off,
                                      uint64_t *len);

/* A download of fd (size bytes; ownership taken as by res_file): 200 with Accept-Ranges: bytes,
 * or for a GET with one satisfiable Range 206 with Content-Range, or 416 (a JSON error naming
 * Range, Content-Range: bytes * /size; fd closed). HEAD, and a Range sent with If-Range (we send
 * no validators, so none can match), get the whole file's answer. end as for res_file. */
void hone_http_res_download(hone_http_res *res, const char *content_type, int fd, uint64_t size,
                            hone_http_file_end end, void *ud);

/* For deferred answers: cb runs when the client disconnects (or the server closes) before the
 * answer. After cb returns, req and res are freed: cb must drop every pointer to them. Without an
 * abort callback, a deferred res outlives its connection until answered (the answer is dropped). */
void hone_http_res_on_abort(hone_http_res *res, void (*cb)(hone_http_res *res, void *ud), void *ud);

/* "bad_request", "not_found", ... for an HTTP status; "error" for unknown ones. */
const char *hone_http_status_code(int status);
const char *hone_http_status_reason(int status); /* "Not Found" */

/* ---- JSON body validation -------------------------------------------------------------------- */

typedef enum hone_json_type {
    HONE_JSON_ANY = 0,
    HONE_JSON_STRING,
    HONE_JSON_INT, /* a JSON integer (no fraction, no exponent) */
    HONE_JSON_NUMBER,
    HONE_JSON_BOOL,
    HONE_JSON_OBJECT,
    HONE_JSON_ARRAY,
} hone_json_type;

/* One allowed member of a JSON object. Meant for designated initialisers:
 *   {.name = "lr", .type = HONE_JSON_NUMBER, .required = 1, .has_range = 1, .min = 0, .max = 1} */
typedef struct hone_json_field {
    const char *name;
    hone_json_type type;
    int required;
    int nullable;                   /* JSON null accepted (as if absent) */
    size_t min_len, max_len;        /* strings: bytes; arrays: items; max_len 0 = no limit */
    const char *const *enum_values; /* strings: NULL-terminated list of allowed values, or NULL */
    int has_range;                  /* numbers: min <= value <= max */
    double min, max;
} hone_json_field;

/* Checks obj against fields: unknown member, wrong type, missing required member, string too
 * short/long, value not in enum, number out of range. On the first problem answers 422 with
 * "field" naming the member (prefix.name when prefix is non-NULL, for nested objects) and returns
 * HONE_EINVAL; returns 0 when obj conforms. res may be NULL to check without answering. */
int hone_json_check(json_t *obj, const hone_json_field *fields, size_t n, hone_http_res *res);
int hone_json_check_prefix(json_t *obj, const char *prefix, const hone_json_field *fields, size_t n,
                           hone_http_res *res);

#endif
