/* Live metrics and job logs as Server-Sent Events. A stream is a deferred, chunked answer kept in
 * the controller's list of them (its ctl_streams handle); new rows are pushed after the report
 * batch commits and on the scheduler tick, never before the commit (a reader on the store's one
 * connection would see uncommitted rows, so a stream starts by flushing the batch). Both kinds
 * share this machinery and differ only in their stream_kind: the table read (event ids are metrics
 * rowids, or job_logs seqs: store_metrics_since and store_logs_since say why they resume without
 * gaps) and the event built from a row. The number of open streams (of both kinds) is bounded by
 * limits.streams. A stream opened with a login token ends (an "auth" event) on the tick after that
 * token stops being good: its key revoked, or its time up. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "batch.h"
#include "ctl.h"
#include "http.h"
#include "jobs.h"
#include "routes.h"
#include "store.h"
#include "stream.h"
#include "util.h"

#define STREAM_PAGE 256           /* rows read per query while catching up */
#define STREAM_KEEPALIVE_MS 15000 /* a comment line on a quiet stream, so proxies keep it */

/* What a stream sends: rows of the job and its trials after an event id, each made one event. */
typedef struct stream_kind {
    const char *event; /* the SSE event name of a row */
    int (*since)(ctl_db *db, const char *job_id, long long after, int limit, json_t **rows);
    json_t *(*data)(const json_t *row); /* the event's data (new reference) */
} stream_kind;

typedef struct ctl_stream {
    hone_controller *c;
    const stream_kind *kind;
    hone_http_res *res;
    char job_id[128];
    char token[65]; /* the SHA-256 of the login token it was opened with; "" for none */
    char owner[64]; /* the user (not admin) who opened it; "" for admins and no auth */
    long long seq;  /* the last event id sent */
    uint64_t last_write_ms;
    struct ctl_stream *prev, *next;
} ctl_stream;

/* The open streams of the controller (c->streams), newest first. */
struct ctl_streams {
    ctl_stream *head;
    int n; /* bounded by limits.streams */
};

ctl_streams *ctl_streams_new(void)
{
    return hone_xcalloc(1, sizeof(ctl_streams));
}

static void stream_unlink(ctl_stream *s)
{
    ctl_streams *set = s->c->streams;
    if (s->prev)
        s->prev->next = s->next;
    else
        set->head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    set->n--;
    free(s);
}

static void stream_abort(hone_http_res *res, void *ud)
{
    (void)res;
    stream_unlink(ud); /* the client left: res is gone with it */
}

static void stream_finish(ctl_stream *s)
{
    hone_http_res_on_abort(s->res, NULL, NULL);
    hone_http_res_stream_end(s->res);
    stream_unlink(s);
}

static int stream_send(ctl_stream *s, const char *text)
{
    s->last_write_ms = uv_now(s->c->loop);
    return hone_http_res_stream_write(s->res, text, strlen(text));
}

/* One SSE event; data is one line of compact JSON (json_dumps escapes newlines). */
static int stream_event(ctl_stream *s, long long id, const char *event, json_t *data)
{
    char *js = json_dumps(data, JSON_COMPACT);
    size_t n = strlen(js) + 96;
    char *buf = hone_xmalloc(n);
    if (id > 0)
        snprintf(buf, n, "id: %lld\nevent: %s\ndata: %s\n\n", id, event, js);
    else
        snprintf(buf, n, "event: %s\ndata: %s\n\n", event, js);
    int rc = stream_send(s, buf);
    free(buf);
    free(js);
    return rc;
}

static int is_over(const char *st)
{
    return !strcmp(st, "done") || !strcmp(st, "failed") || !strcmp(st, "canceled") ||
           !strcmp(st, "stopped");
}

/* An "epoch" event: {job_id, epoch, metrics, trial (of an AutoML job's trial)}. */
static json_t *epoch_data(const json_t *r)
{
    json_t *m = jparse(jstr(r, "data"));
    if (!json_is_object(m)) {
        json_decref(m);
        m = json_object();
    }
    json_t *ev = json_pack("{s:s,s:I,s:o}", "job_id", jstr(r, "job_id"), "epoch",
                           (json_int_t)jint(r, "epoch"), "metrics", m);
    json_t *trial = json_object_get(r, "trial");
    if (json_is_integer(trial))
        json_object_set(ev, "trial", trial);
    return ev;
}

/* A "log" event: {job_id, trial (null for a job's own lines), line}. */
static json_t *log_data(const json_t *r)
{
    json_t *trial = json_object_get(r, "trial");
    return json_pack("{s:s,s:O,s:s}", "job_id", jstr(r, "job_id"), "trial",
                     json_is_integer(trial) ? trial : json_null(), "line",
                     jstr(r, "line") ? jstr(r, "line") : "");
}

static const stream_kind metrics_kind = {"epoch", store_metrics_since, epoch_data};
static const stream_kind logs_kind = {"log", store_logs_since, log_data};

/* Sends the rows stored after s->seq. Returns HONE_ESTATE when the client is gone. */
static int stream_rows(ctl_stream *s)
{
    for (;;) {
        json_t *rows = NULL, *r;
        size_t i;
        if (s->kind->since(s->c->db, s->job_id, s->seq, STREAM_PAGE, &rows))
            return HONE_OK; /* a store error now: the next tick tries again */
        size_t n = json_array_size(rows);
        json_array_foreach(rows, i, r)
        {
            json_t *ev = s->kind->data(r);
            long long seq = jint(r, "seq");
            int rc = stream_event(s, seq, s->kind->event, ev);
            json_decref(ev);
            if (rc) {
                json_decref(rows);
                return rc;
            }
            s->seq = seq;
        }
        json_decref(rows);
        if (n < STREAM_PAGE)
            return HONE_OK;
    }
}

/* New rows, then, with check_end, the "end" event once the job is over. The job's status is
 * read before its rows: nothing commits in between (one thread), so an over job has every row
 * it will ever have sent before its "end". Returns non-zero when the stream is finished. */
static int stream_pump(ctl_stream *s, int check_end)
{
    json_t *job = NULL;
    int over = 0;
    if (check_end) {
        int rc = ctl_job_row(s->c, s->job_id, &job);
        if (rc == HONE_ENOENT) /* a convert job goes with its dataset */
            return 1;
        over = rc == HONE_OK && is_over(jstr(job, "status"));
    }
    int rc = stream_rows(s);
    if (rc == HONE_OK && over) {
        json_t *view = ctl_job_json(s->c, job);
        stream_event(s, 0, "end", view);
        json_decref(view);
    }
    json_decref(job);
    return rc != HONE_OK || over;
}

void ctl_streams_pump(hone_controller *c)
{
    ctl_stream *s = c->streams ? c->streams->head : NULL, *next;
    for (; s; s = next) {
        next = s->next;
        if (stream_pump(s, 0))
            stream_finish(s);
    }
}

/* A stream opened with a login token ends when the token does (its key revoked, or expired):
 * an "auth" event saying why, then the end of the answer. The client's reconnect then gets the
 * 401 any request with that token gets. Returns non-zero when the stream is to finish. */
static int stream_auth_over(ctl_stream *s)
{
    const char *why = NULL;
    if (!s->token[0] || ctl_auth_token_check(s->c, s->token, &why) != HONE_EPERM)
        return 0; /* good, or a store error now: the next tick asks again */
    json_t *ev = json_pack("{s:{s:s,s:s}}", "error", "field", "Authorization", "message", why);
    stream_event(s, 0, "auth", ev);
    json_decref(ev);
    return 1;
}

void ctl_streams_tick(hone_controller *c)
{
    uint64_t now = uv_now(c->loop);
    ctl_stream *s = c->streams ? c->streams->head : NULL, *next;
    for (; s; s = next) {
        next = s->next;
        if (stream_auth_over(s) || stream_pump(s, 1) ||
            (now - s->last_write_ms >= STREAM_KEEPALIVE_MS && stream_send(s, ": keepalive\n\n")))
            stream_finish(s);
    }
}

void ctl_streams_close(hone_controller *c)
{
    while (c->streams && c->streams->head)
        stream_finish(c->streams->head);
}

void ctl_streams_free(ctl_streams *set)
{
    free(set); /* ctl_streams_close ended every stream */
}

/* Last-Event-ID (or ?last_event_id= for clients that cannot set headers): a non-negative integer.
 */
static int parse_seq(const char *v, long long *out)
{
    char *end;
    if (!v || !*v)
        return v ? HONE_EINVAL : HONE_OK;
    if (*v < '0' || *v > '9')
        return HONE_EINVAL;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (*end || n < 0 || errno)
        return HONE_EINVAL;
    *out = n;
    return HONE_OK;
}

/* Opens a stream of one kind on the job {id}: both routes below. */
static void stream_open(hone_controller *c, const stream_kind *kind, hone_http_req *req,
                        hone_http_res *res)
{
    const char *id = hone_http_req_param(req, "id");
    const char *hdr = hone_http_req_header(req, "Last-Event-ID");
    const char *field = hdr ? "Last-Event-ID" : "last_event_id";
    long long seq = 0;
    json_t *job = NULL;
    if (parse_seq(hdr ? hdr : hone_http_req_query(req, "last_event_id"), &seq)) {
        hone_http_res_error(res, 400, field, "%s must be an event id (a non-negative integer)",
                            field);
        return;
    }
    ctl_batch_flush(c); /* read only what is committed */
    char ob[64];
    const char *owner = ctl_auth_owner(c, req, ob);
    int rc = ctl_job_row_res(c, res, id, owner, &job);
    if (rc) {
        return;
    }
    json_decref(job);
    /* a user gets a quarter of them (at least one), so that one cannot take every stream, and
     * users together all but a reserve for admins (an eighth, at least two; at most half) */
    int mine = 0, users = 0, share = c->cfg.max_streams / 4 > 1 ? c->cfg.max_streams / 4 : 1;
    int reserve = c->cfg.max_streams / 8 > 2 ? c->cfg.max_streams / 8 : 2;
    if (reserve > c->cfg.max_streams / 2)
        reserve = c->cfg.max_streams / 2;
    ctl_streams *set = c->streams;
    for (ctl_stream *o = set->head; owner && o; o = o->next) {
        mine += !strcmp(o->owner, owner);
        users += o->owner[0] != '\0';
    }
    int full = set->n >= c->cfg.max_streams;
    if (full || (owner && (mine >= share || users >= c->cfg.max_streams - reserve))) {
        hone_http_res_header(res, "Retry-After", "5");
        if (full)
            hone_http_res_error(res, 503, "limits.streams",
                                "too many streams open (limits.streams = %d); retry later",
                                c->cfg.max_streams);
        else if (mine >= share)
            hone_http_res_error(res, 503, "limits.streams",
                                "you have %d streams open, a user's share of limits.streams (%d); "
                                "close one or retry later",
                                mine, c->cfg.max_streams);
        else
            hone_http_res_error(res, 503, "limits.streams",
                                "users hold %d streams, all of limits.streams (%d) but the %d kept "
                                "for admins; retry later",
                                users, c->cfg.max_streams, reserve);
        return;
    }
    hone_http_res_header(res, "Cache-Control", "no-cache");
    hone_http_res_header(res, "X-Accel-Buffering", "no");
    if (hone_http_res_stream_start(res, 200, "text/event-stream")) {
        hone_http_res_stream_end(res);
        return;
    }
    if (!strcmp(hone_http_req_method(req), "HEAD")) {
        hone_http_res_stream_end(res);
        return;
    }
    ctl_stream *s = hone_xcalloc(1, sizeof *s);
    s->c = c;
    s->kind = kind;
    s->res = res;
    s->seq = seq;
    snprintf(s->owner, sizeof s->owner, "%s", owner ? owner : "");
    if (!c->cfg.auth_token || !ctl_auth_token_hash(req, s->token))
        s->token[0] = '\0'; /* no token to outlive (with no auth, tokens are not asked for) */
    snprintf(s->job_id, sizeof s->job_id, "%s", id);
    s->next = set->head;
    if (set->head)
        set->head->prev = s;
    set->head = s;
    set->n++;
    hone_http_res_on_abort(res, stream_abort, s);
    /* retry: how long a client waits before it reconnects (and resumes) */
    if (stream_send(s, "retry: 2000\n\n") || stream_pump(s, 1))
        stream_finish(s);
}

static void metrics_stream(hone_http_req *req, hone_http_res *res, void *ud)
{
    stream_open(ud, &metrics_kind, req, res);
}

static void logs_stream(hone_http_req *req, hone_http_res *res, void *ud)
{
    stream_open(ud, &logs_kind, req, res);
}

int ctl_routes_stream(hone_controller *c)
{
    int rc = hone_http_route(c->http, "GET", "/api/v1/jobs/{id}/metrics/stream", metrics_stream, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/jobs/{id}/logs/stream", logs_stream, c);
    return rc ? HONE_EINVAL : HONE_OK;
}
