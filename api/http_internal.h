/* Private structures shared by the api/ files: server, connection, request, response, router.
 * Nothing outside api/ (besides the fuzz target and tests) may include this header. */
#ifndef HONE_API_HTTP_INTERNAL_H
#define HONE_API_HTTP_INTERNAL_H

#include <http_parser.h>
#include "hone.h"
#include "http.h"

typedef struct hone_http_conn hone_http_conn;
typedef struct hone_http_route_t hone_http_route_t;
typedef struct http_upload http_upload;   /* upload.c: one body being spooled to disk */
typedef struct http_uploads http_uploads; /* upload.c: the server's slots, limits, bytes */
typedef struct http_file http_file;       /* file.c: a file answer being streamed */

typedef struct http_kv {
    char *name, *value;
} http_kv;

/* A growable byte buffer; data is always NUL-terminated when non-NULL. */
typedef struct http_buf {
    char *data;
    size_t len, cap;
} http_buf;

void http_buf_append(http_buf *b, const char *p, size_t n);
void http_buf_printf(http_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void http_buf_free(http_buf *b);

struct hone_http_res {
    hone_http_req *req;
    http_kv *headers;
    size_t nheaders;
    int answered;  /* an answering function ran (or the stream ended) */
    int streaming; /* stream_start ran, stream_end not yet */
    int status;
    void (*abort_cb)(hone_http_res *, void *);
    void *abort_ud;
    http_file *file; /* a file answer under way (file.c): not answered until its last chunk */
    int (*file_guard)(void *ud); /* hone_http_res_file_guard: asked as the file answer goes */
};

struct hone_http_req {
    hone_http_conn *conn; /* NULL once the connection has gone (a zombie awaiting its answer) */
    hone_http_req *next;  /* the connection's queue, in arrival order */
    hone_http_res res;
    char method[24];
    char *url;       /* as received */
    char *path;      /* raw path without the query */
    char *path_norm; /* path without one trailing '/' */
    char *query_raw; /* may be NULL */
    http_kv *headers;
    size_t nheaders;
    http_kv *params, *query;
    size_t nparams, nquery;
    int query_parsed;
    http_buf body;
    size_t body_seen; /* body bytes received, kept or not */
    int http_major, http_minor;
    int keep_alive;
    int is_head;
    int dispatched;
    int in_handler;
    uint64_t start_us;
    const hone_http_route_t *route;
    size_t max_body;
    void *data;
    /* set when the server itself must answer (parse error, limits): status and message */
    int err_status;
    char err_msg[160];
    char allow[128]; /* for 405 */
    http_upload *up; /* upload routes: the body's way to disk (upload.c) */
    int queued;      /* in the connection's queue (uploads join it once their headers are in) */
    /* A body still to come when the headers were in: the filter runs first, in the request's turn
     * (conn.c, conn_gate), so a refusal keeps none of it. gate: HTTP_GATE_*; body_pending: the
     * body is still arriving. */
    int gate, body_pending;
};
enum { HTTP_GATE_NONE = 0, HTTP_GATE_PENDING, HTTP_GATE_PASSED };

/* strict.c: the framing checks http-parser leaves out (see there). Zeroed: before a request. */
typedef struct http_strict {
    int state;
    unsigned name_cl : 1, name_te : 1, val_over : 1, trailers : 1, has_cl : 1, te_chunked : 1,
        http10 : 1, connect : 1;
    unsigned te_count;
    size_t name_len;        /* bytes of the method, header name or version so far */
    uint64_t cl, remaining; /* Content-Length; body or chunk bytes still to come */
    char val[32];           /* a Content-Length or Transfer-Encoding value */
    size_t val_len;
} http_strict;

struct hone_http_route_t {
    char method[24];
    char *pattern;
    char **segs; /* literal segment, or "{name}" */
    size_t nsegs;
    size_t max_body;
    int priority; /* answered on a reserve connection slot too */
    hone_http_handler handler;
    hone_http_upload_begin begin; /* upload routes only */
    void *ud;
};

/* fair.c: what a connection is doing, for eviction. Every class but BUSY has a list in the
 * server, oldest (by klass_since_ms) first. */
enum {
    HTTP_CLASS_BUSY = 0, /* a request in progress (body, handler, answer being written) */
    HTTP_CLASS_FRESH,    /* not a byte received yet */
    HTTP_CLASS_LINGER,   /* answered, waiting for the client to close */
    HTTP_CLASS_IDLE,     /* keep-alive, between requests */
    HTTP_CLASS_HEADERS,  /* receiving a request head */
    HTTP_CLASS_N
};

typedef struct http_conn_list {
    hone_http_conn *head, *tail;
} http_conn_list;

/* One client address (an IPv6 /64) with open connections. */
typedef struct http_peer_addr {
    unsigned char key[17]; /* family byte, then 4 (IPv4) or 8 (IPv6 prefix) address bytes */
    int nconns;
    struct http_peer_addr *next; /* hash chain */
} http_peer_addr;

struct hone_http_conn {
    hone_http_server *server;
    uv_tcp_t tcp;
    uv_timer_t timer;
    int fake; /* fuzzing: no socket, output goes to fake_out */
    http_buf fake_out;
    http_parser parser;
    http_strict strict;
    unsigned msgs_parsed; /* requests http-parser has completed, to check it agrees with strict */
    http_buf url_buf, hfield, hvalue; /* pieces of the request line and header being parsed */
    uv_shutdown_t shut;
    hone_http_req *cur;         /* request being parsed */
    hone_http_req *head, *tail; /* parsed requests, answered in order */
    int nqueued;
    size_t header_bytes;
    int last_was_value; /* header callback state */
    int closing, reading, eof, lingering, stop_parsing, close_after_flush;
    int handles_open;
    int pumping;
    int writes_pending;
    uint64_t last_activity_ms;
    uint64_t msg_start_ms; /* 0 when no request is partly received */
    char peer[64];
    /* fair.c */
    int live;    /* counted in the server's open connections (and its address's) */
    int reserve; /* admitted on a reserve slot: only priority routes are answered */
    int got_bytes;
    int klass;
    uint64_t klass_since_ms;
    hone_http_conn *kprev, *knext; /* the server's list of this class */
    http_peer_addr *addr;
    hone_http_conn *prev, *next;
};

struct hone_http_server {
    uv_loop_t *loop;
    hone_http_limits limits;
    uv_tcp_t listener;
    int listener_open, listening, closing;
    uv_prepare_t tick; /* once per loop iteration: resumes accepting (see server.c) */
    int tick_open, accepted_this_tick, accept_pending;
    hone_http_route_t *routes;
    size_t nroutes;
    hone_http_filter filter;
    void *filter_ud;
    hone_http_access_log log;
    void *log_ud;
    hone_http_stats stats;
    hone_http_conn *conns;
    /* Every read lands here: libuv reads one stream at a time and each read is fed to the parser
     * (which copies what it keeps) before the next, so connections need no buffer of their own.
     * 16 KiB: one read is the most an upload can overshoot its memory bound by (upload.c). */
    char rbuf[16384];
    /* fair.c */
    int nlive, nreserve;
    http_conn_list classes[HTTP_CLASS_N];
    http_peer_addr **addrs;
    size_t addr_buckets, naddrs;
    uv_timer_t sweep; /* under pressure: closes connections past busy_timeout_ms */
    int sweep_open;
    void (*close_done)(void *);
    void *close_arg;
    int close_pending; /* handles still to close before close_done runs */
    http_uploads *uploads;
    int files_live; /* file.c: file answers not yet freed (a read or close still in flight) */
};

/* router.c */
int http_route_match(hone_http_server *s, hone_http_req *req, char *allow, size_t allow_cap);
int http_pct_decode(const char *in, size_t n, int plus_space, char **out);
void http_routes_free(hone_http_server *s);

/* request.c */
void http_req_free(hone_http_req *req);
const char *http_kv_get(const http_kv *kv, size_t n, const char *name, int icase);

/* response.c */
void http_res_init(hone_http_res *res, hone_http_req *req);
void http_res_free(hone_http_res *res);
/* Status line and headers. chunked: -1 close-delimited stream, 1 chunked stream, 0 fixed length */
void http_res_head(http_buf *out, hone_http_res *res, int status, const char *ctype, uint64_t len,
                   int chunked);
int http_res_body_allowed(int status);
/* what the server answers for its own errors, also used by the 503 on connection overload */
char *http_error_body(int status, const char *field, const char *msg, size_t *len);

/* conn.c */
hone_http_conn *http_conn_new(hone_http_server *s, int fake);
void http_conn_feed(hone_http_conn *c, const char *data, size_t len);
void http_conn_on_eof(hone_http_conn *c);
void http_conn_write(hone_http_conn *c, char *buf, size_t len); /* takes buf */
void http_conn_pump(hone_http_conn *c);
void http_conn_close(hone_http_conn *c);
void http_conn_arm_timer(hone_http_conn *c);
/* The request (or connection) ran out of time: 408 for a request partly received, else close. */
void http_conn_expire(hone_http_conn *c, unsigned limit_ms);
void http_conn_release_requests(hone_http_conn *c);
void http_conn_enqueue(hone_http_conn *c, hone_http_req *req); /* once; answered in order */
void http_conn_answered(hone_http_conn *c, hone_http_req *req);
int http_conn_can_write(const hone_http_conn *c);
int http_conn_stream_ok(hone_http_conn *c);

/* strict.c: scans data, the next bytes of a connection. *used: how many of them are valid; with
 * *msg_end set, a request ends exactly there (the parser must be fed no further before the next
 * scan). Returns 0, or -1 when data[*used] breaks the framing (*why says how, a static string). */
int http_strict_scan(http_strict *st, const char *data, size_t len, size_t *used, int *msg_end,
                     const char **why);

/* fair.c */
void http_fair_init(hone_http_server *s);
/* A connection was accepted from *sa: counts it and makes room (evicting others) as the limits
 * say. Returns 0 (admitted), 1 (admitted on a reserve slot) or -1 (refuse it: 503). */
int http_fair_admit(hone_http_server *s, hone_http_conn *c, const struct sockaddr_storage *sa);
void http_fair_update(hone_http_conn *c);      /* after any change of what c is doing */
void http_fair_forget(hone_http_conn *c);      /* c is closing */
void http_fair_make_room(hone_http_server *s); /* out of descriptors: evict one connection */
void http_fair_close(hone_http_server *s);     /* server closing: the sweep timer goes */
void http_fair_free(hone_http_server *s);

/* server.c */
void http_server_read_start(hone_http_conn *c);
void http_server_conn_gone(hone_http_server *s, hone_http_conn *c);
void http_server_maybe_done(hone_http_server *s); /* a closing server: is everything gone? */
uint64_t http_now_us(void);

/* upload.c: the hooks conn.c and request.c call for upload routes. */
void http_upload_attach(hone_http_conn *c, hone_http_req *req);       /* headers in: queues req */
int http_upload_body(hone_http_req *req, const char *at, size_t len); /* on_body */
void http_upload_body_done(hone_http_req *req);                       /* on_message_complete */
/* The pump, at the head of the queue: runs begin when due; 1 once the handler may run (or the
 * request was answered). */
int http_upload_ready(hone_http_conn *c, hone_http_req *req);
int http_upload_holds_reading(const hone_http_conn *c); /* waiting for begin, a slot or the disk */
int http_upload_writing(const hone_http_req *req); /* body in, not yet on disk: owns the clock */
void http_upload_release(hone_http_req *req);      /* http_req_free: cancels, cleans up */
int http_uploads_live(const hone_http_server *s);  /* uploads still finishing file operations */
void http_uploads_free(hone_http_server *s);

/* file.c: the hooks conn.c and request.c call for file answers. */
void http_file_pump(hone_http_req *req); /* the pump, at the head: next chunk when there is room */
void http_file_release(hone_http_req *req); /* http_req_free: the answer is given up, fd closed */
/* The clock of a file answer with a write pending: http_file_mark when it starts (queued: the
 * socket's write queue then), http_file_stalled when it runs out: 1 when the client took no byte
 * since the mark (the connection is then closed), else 0 and the mark moves to queued. */
void http_file_mark(hone_http_req *req, size_t queued);
int http_file_stalled(hone_http_req *req, size_t queued);

/* For the fuzz target: parses and routes data as if it came over one connection, in chunks of
 * chunk bytes (0: all at once), then closes it. Returns the number of response bytes produced. */
size_t hone_http__feed_for_fuzz(hone_http_server *s, const char *data, size_t len, size_t chunk);

#endif
