/* Request bodies streamed to disk, for routes made with hone_http_route_upload: the filter and the
 * route's begin run once the headers are in, before any byte is stored; an accepted upload takes
 * one of max_uploads slots (or waits, unread, in a bounded list) and its body goes to a fresh temp
 * file through uv_fs requests on the thread pool, reading from its client paused while too much
 * waits in memory; fsync and close come before the handler; a failed, refused or abandoned upload
 * leaves no file. Workers' uploads have slots of their own, and an owner holds at most a share of
 * its class's slots. Never touches the disk from the loop; never holds more than the limits in
 * memory.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "http_internal.h"

/* Received bytes live in blocks of UP_BLOCK; a write takes whatever is queued (as one pwritev),
 * but waits for UP_MIN_WRITE bytes unless the body is whole or reading is paused. */
enum { UP_BLOCK = 256 << 10, UP_MIN_WRITE = 64 << 10, UP_MAX_IOV = 16 };

typedef enum up_state {
    UP_BEGIN,   /* headers in, begin not run yet (earlier pipelined requests are answered first) */
    UP_WAITING, /* accepted, waiting for a slot; its client is not read */
    UP_OPEN,    /* holding a slot: the file is created, written, synced and closed */
    UP_DONE,    /* the whole body is in the closed file: the handler may run */
    UP_OVER,    /* refused, failed or gone: nothing more is written */
} up_state;

typedef enum up_op {
    OP_NONE,
    OP_MKSTEMP,
    OP_FCHMOD,
    OP_WRITE,
    OP_FSYNC,
    OP_CLOSE,
    OP_UNLINK
} up_op;

typedef struct up_block {
    struct up_block *next;
    size_t len;
    char data[];
} up_block;

struct http_upload {
    hone_http_server *s;
    hone_http_req *req;       /* NULL once the request is gone: cleaning up, then freed */
    http_upload *prev, *next; /* the server's live uploads, in arrival order */
    up_state state;
    uv_fs_t fs;
    up_op op; /* the file operation in flight; one at a time, so writes stay in order */
    uv_file fd;
    char *dir;   /* begin's folder */
    char *owner; /* whose upload (hone_http_req_set_upload_class); NULL: no share applies */
    int prio;    /* 1: a priority upload (a worker's), on the priority slots */
    char *path;  /* the temp file once created; NULL once taken by the handler or unlinked */
    int chmodded, synced, body_done, slot, wake;
    int late_rc; /* an operation that could not even be queued: failed at the next pump */
    up_op late_op;
    up_block *head, *tail;
    size_t head_off;  /* bytes of head already written */
    size_t buffered;  /* received, not yet written (the write in flight included) */
    size_t unclocked; /* received since the client's progress last restarted the clock */
    uint64_t written;
};

struct http_uploads {
    hone_http_upload_limits lim;
    http_upload *first, *last;
    int live;       /* every upload not yet freed, those cleaning up after their request included */
    int active[2];  /* slots held, by class (0: users' slots, 1: priority slots) */
    int waiting[2]; /* uploads waiting for a slot, by class */
    hone_http_upload_stats st;
};

static void up_step(http_upload *u);

void hone_http_upload_limits_default(hone_http_upload_limits *l)
{
    l->max_uploads = 4;
    l->max_priority_uploads = 0; /* as many as max_uploads */
    l->max_per_owner = 0;        /* half of its class's slots, at least one */
    l->max_waiting = 64;
    l->buffer_bytes = 1 << 20;
    l->inflight_bytes = 4 << 20;
}

static http_uploads *pool_of(hone_http_server *s)
{
    if (!s->uploads) {
        s->uploads = hone_xcalloc(1, sizeof(*s->uploads));
        hone_http_upload_limits_default(&s->uploads->lim);
        s->uploads->lim.max_priority_uploads = s->uploads->lim.max_uploads;
    }
    return s->uploads;
}

void hone_http_set_upload_limits(hone_http_server *s, const hone_http_upload_limits *l)
{
    hone_http_upload_limits d;
    hone_http_upload_limits_default(&d);
    http_uploads *p = pool_of(s);
    p->lim.max_uploads = l->max_uploads > 0 ? l->max_uploads : d.max_uploads;
    p->lim.max_priority_uploads =
        l->max_priority_uploads > 0 ? l->max_priority_uploads : p->lim.max_uploads;
    p->lim.max_per_owner = l->max_per_owner > 0 ? l->max_per_owner : 0;
    p->lim.max_waiting = l->max_waiting > 0 ? l->max_waiting : d.max_waiting;
    p->lim.buffer_bytes = l->buffer_bytes ? l->buffer_bytes : d.buffer_bytes;
    p->lim.inflight_bytes = l->inflight_bytes ? l->inflight_bytes : d.inflight_bytes;
}

void hone_http_upload_stats_get(const hone_http_server *s, hone_http_upload_stats *out)
{
    if (s->uploads)
        *out = s->uploads->st;
    else
        memset(out, 0, sizeof(*out));
}

int hone_http_route_upload(hone_http_server *s, const char *method, const char *pattern,
                           size_t max_body_bytes, hone_http_upload_begin begin,
                           hone_http_handler handler, void *ud)
{
    if (!s || !begin)
        return HONE_EINVAL;
    int rc = hone_http_route_ex(s, method, pattern, max_body_bytes, handler, ud);
    if (rc)
        return rc;
    s->routes[s->nroutes - 1].begin = begin; /* route_ex appends: this is the route just made */
    pool_of(s);
    return HONE_OK;
}

int http_uploads_live(const hone_http_server *s)
{
    return s->uploads ? s->uploads->live : 0;
}

void http_uploads_free(hone_http_server *s)
{
    free(s->uploads); /* a closed server has none live: close waits for them */
    s->uploads = NULL;
}

/* ---- memory: received bytes waiting for the disk ------------------------------------------- */

static void up_append(http_upload *u, const char *p, size_t n)
{
    http_uploads *pool = u->s->uploads;
    u->buffered += n;
    pool->st.buffered_bytes += n;
    if (pool->st.buffered_bytes > pool->st.buffered_peak)
        pool->st.buffered_peak = pool->st.buffered_bytes;
    while (n) {
        up_block *b = u->tail;
        if (!b || b->len == UP_BLOCK) {
            b = hone_xmalloc(sizeof(*b) + UP_BLOCK);
            b->next = NULL;
            b->len = 0;
            if (u->tail)
                u->tail->next = b;
            else
                u->head = b;
            u->tail = b;
        }
        size_t k = n < UP_BLOCK - b->len ? n : UP_BLOCK - b->len;
        memcpy(b->data + b->len, p, k);
        b->len += k;
        p += k;
        n -= k;
    }
}

/* n bytes from the front were written. Only ever with no write in flight, so the tail block, once
 * written whole, can be refilled from its start. */
static void up_consume(http_upload *u, size_t n)
{
    u->buffered -= n;
    u->s->uploads->st.buffered_bytes -= n;
    while (n) {
        up_block *b = u->head;
        size_t k = n < b->len - u->head_off ? n : b->len - u->head_off;
        u->head_off += k;
        n -= k;
        if (u->head_off < b->len)
            break;
        u->head_off = 0;
        if (b == u->tail && b->len < UP_BLOCK) {
            b->len = 0;
        } else {
            u->head = b->next;
            if (!u->head)
                u->tail = NULL;
            free(b);
        }
    }
}

/* Drops what is still in memory; never while a write reads from it. */
static void up_drop_blocks(http_upload *u)
{
    if (u->op == OP_WRITE)
        return;
    u->s->uploads->st.buffered_bytes -= u->buffered;
    u->buffered = 0;
    u->head_off = 0;
    while (u->head) {
        up_block *b = u->head;
        u->head = b->next;
        free(b);
    }
    u->tail = NULL;
}

/* Too much of this upload, or of all of them, waits for the disk: reading pauses. */
static int up_held(const http_upload *u)
{
    const http_uploads *p = u->s->uploads;
    return u->buffered >= p->lim.buffer_bytes || p->st.buffered_bytes >= p->lim.inflight_bytes;
}

/* ---- slots and wakeups --------------------------------------------------------------------- */

/* The request clock of an upload measures progress, not the whole body: a large body may take
 * longer than request_timeout_ms, a stalled one may not. The client's progress is
 * UP_PROGRESS_BYTES received (a byte now and then would hold a slot for ever: slowloris); ours is
 * a byte out to the disk while we hold its reading, or a wait for a slot or for memory. */
#define UP_PROGRESS_BYTES (64u << 10)
static void up_touch(http_upload *u)
{
    hone_http_conn *c = u->req ? u->req->conn : NULL;
    if (c && c->cur == u->req)
        c->msg_start_ms = c->fake ? 1 : uv_now(c->server->loop);
}

/* ---- shares: which upload may take a slot ---------------------------------------------------
 * Two classes, each with slots of its own: users' uploads (max_uploads) and priority ones (a
 * worker's checkpoint: max_priority_uploads), so that the second never waits behind the first.
 * Inside a class an owner (hone_http_req_set_upload_class) holds at most a share of the slots and
 * of the places to wait, so one user's slow uploads leave the others a slot. */

static int class_slots(const http_uploads *p, int prio)
{
    return prio ? p->lim.max_priority_uploads : p->lim.max_uploads;
}

/* max_per_owner, else half of the class's slots; at least one, at most all. */
static int owner_share(const http_uploads *p, int slots)
{
    int share = p->lim.max_per_owner > 0 ? p->lim.max_per_owner : slots / 2;
    return share < 1 ? 1 : share > slots ? slots : share;
}

/* The other uploads of u's owner and class holding a slot (waiting: 0) or waiting for one (1). */
static int owner_count(const http_uploads *p, const http_upload *u, int waiting)
{
    int n = 0;
    for (const http_upload *o = p->first; o; o = o->next)
        if (o != u && o->owner && o->prio == u->prio && !strcmp(o->owner, u->owner))
            n += waiting ? o->state == UP_WAITING : o->slot;
    return n;
}

static int up_may_grant(const http_uploads *p, const http_upload *u)
{
    int slots = class_slots(p, u->prio);
    if (p->active[u->prio] >= slots || u->s->closing)
        return 0;
    return !u->owner || owner_count(p, u, 0) < owner_share(p, slots);
}

/* Room in the wait list: max_waiting for each class, half of it (at least one) for one owner. */
static int up_may_wait(const http_uploads *p, const http_upload *u)
{
    if (p->waiting[u->prio] >= p->lim.max_waiting)
        return 0;
    return !u->owner || owner_count(p, u, 1) < owner_share(p, p->lim.max_waiting);
}

static void up_unwait(http_uploads *p, http_upload *u)
{
    if (u->state != UP_WAITING)
        return;
    p->st.waiting--;
    p->waiting[u->prio]--;
}

static void up_grant(http_upload *u)
{
    http_uploads *p = u->s->uploads;
    hone_http_conn *c = u->req->conn;
    up_unwait(p, u);
    p->st.active++;
    p->active[u->prio]++;
    u->slot = 1;
    u->state = UP_OPEN;
    /* the client was told nothing yet: now it may send the body */
    const char *expect = hone_http_req_header(u->req, "expect");
    if (c && !c->fake && !u->body_done && expect && !strcasecmp(expect, "100-continue"))
        http_conn_write(c, hone_xstrdup("HTTP/1.1 100 Continue\r\n\r\n"), 25);
    up_touch(u);
    up_step(u);
}

/* Gives the freed slot to the first uploads waiting for one (whose connection is still there)
 * that their class and share let take one: not always the first in line, whose owner may hold
 * its share already. */
static void up_slot_release(http_upload *u)
{
    http_uploads *p = u->s->uploads;
    if (!u->slot)
        return;
    u->slot = 0;
    p->st.active--;
    p->active[u->prio]--;
    if (u->s->closing)
        return;
    for (http_upload *w = p->first; w; w = w->next)
        if (w->state == UP_WAITING && w->req && w->req->conn && !w->req->conn->closing &&
            up_may_grant(p, w))
            up_grant(w);
}

/* After bytes left memory or a slot was given: uploads no longer paused (on the shared bound, or
 * just granted a slot) read again; those still paused or waiting for a slot restart their clock,
 * since that wait is ours, not their client's. Pumping a connection may free its uploads, so the
 * walk marks first and then restarts from the top for each mark. */
static void uploads_wake(http_uploads *p)
{
    for (http_upload *u = p->first; u; u = u->next) {
        hone_http_conn *c = u->req ? u->req->conn : NULL;
        u->wake = 0;
        if (!c || c->closing || c->cur != u->req)
            continue;
        if (u->state == UP_WAITING || (u->state == UP_OPEN && up_held(u))) {
            up_touch(u);
            http_conn_arm_timer(c);
        } else if (u->state == UP_OPEN && !c->reading) {
            u->wake = 1;
        }
    }
    for (;;) {
        http_upload *u = p->first;
        while (u && !u->wake)
            u = u->next;
        if (!u)
            return;
        u->wake = 0;
        if (u->req && u->req->conn)
            http_conn_pump(u->req->conn);
    }
}

static void up_destroy(http_upload *u)
{
    hone_http_server *s = u->s;
    http_uploads *p = s->uploads;
    if (u->prev)
        u->prev->next = u->next;
    else
        p->first = u->next;
    if (u->next)
        u->next->prev = u->prev;
    else
        p->last = u->prev;
    p->live--;
    free(u->dir);
    free(u->owner);
    free(u->path);
    free(u);
    http_server_maybe_done(s);
}

/* Nothing more will be written for this request: refused at begin, or failed. A body still
 * arriving is not read any further (the connection closes after the answer). */
static void up_over(http_upload *u)
{
    hone_http_req *req = u->req;
    hone_http_conn *c = req->conn;
    up_unwait(u->s->uploads, u);
    u->state = UP_OVER;
    up_drop_blocks(u);
    if (c && c->cur == req) {
        c->cur = NULL;
        c->stop_parsing = 1;
        c->msg_start_ms = 0;
        req->keep_alive = 0;
    }
    up_slot_release(u);
}

/* ---- the file: one uv_fs request at a time ------------------------------------------------- */

static void up_after(http_upload *u, up_op op, ssize_t res);

static void up_fs_done(uv_fs_t *r)
{
    http_upload *u = r->data;
    up_op op = u->op;
    ssize_t res = r->result;
    if (op == OP_MKSTEMP && res >= 0) {
        u->fd = (uv_file)res;
        u->path = hone_xstrdup(r->path);
    }
    uv_fs_req_cleanup(r);
    u->op = OP_NONE;
    up_after(u, op, res);
}

/* Issues the next file operation, if one is due and none is in flight. */
static void up_step(http_upload *u)
{
    uv_loop_t *loop = u->s->loop;
    int rc = 0;
    up_op op = OP_NONE;
    if (u->op != OP_NONE)
        return;
    u->fs.data = u;
    if (!u->req) { /* gone: close, unlink, free */
        up_drop_blocks(u);
        if (u->fd >= 0) {
            op = OP_CLOSE;
            rc = uv_fs_close(loop, &u->fs, u->fd, up_fs_done);
        } else if (u->path) {
            op = OP_UNLINK;
            rc = uv_fs_unlink(loop, &u->fs, u->path, up_fs_done);
        } else {
            up_destroy(u);
            return;
        }
    } else if (u->state != UP_OPEN) {
        return;
    } else if (u->fd < 0) {
        char tpl[PATH_MAX];
        op = OP_MKSTEMP;
        rc = snprintf(tpl, sizeof(tpl), "%s/.upload-XXXXXX", u->dir) >= (int)sizeof(tpl)
                 ? UV_ENAMETOOLONG
                 : uv_fs_mkstemp(loop, &u->fs, tpl, up_fs_done);
    } else if (!u->chmodded) { /* mkstemp makes 0600; uploads are read by others (downloads) */
        op = OP_FCHMOD;
        rc = uv_fs_fchmod(loop, &u->fs, u->fd, 0644, up_fs_done);
    } else if (u->buffered && (u->body_done || u->buffered >= UP_MIN_WRITE || up_held(u))) {
        uv_buf_t bufs[UP_MAX_IOV];
        unsigned n = 0;
        size_t off = u->head_off;
        for (up_block *b = u->head; b && n < UP_MAX_IOV; b = b->next, off = 0)
            if (b->len > off)
                bufs[n++] = uv_buf_init(b->data + off, (unsigned)(b->len - off));
        op = OP_WRITE;
        rc = uv_fs_write(loop, &u->fs, u->fd, bufs, n, (int64_t)u->written, up_fs_done);
    } else if (u->body_done && !u->buffered) {
        op = u->synced ? OP_CLOSE : OP_FSYNC;
        rc = u->synced ? uv_fs_close(loop, &u->fs, u->fd, up_fs_done)
                       : uv_fs_fsync(loop, &u->fs, u->fd, up_fs_done);
    }
    if (op == OP_NONE)
        return;
    if (rc == 0) {
        u->op = op;
        return;
    }
    if (u->req) { /* may be inside a parser callback: the failure waits for the pump */
        u->late_rc = rc;
        u->late_op = op;
        return;
    }
    if (op == OP_CLOSE) /* could not even queue the cleanup: do it here, once */
        close(u->fd);
    else
        unlink(u->path);
    up_after(u, op, rc);
}

/* The request cannot be stored: it is answered 500 in its turn, and its file goes. */
static void up_fail(http_upload *u, up_op op, ssize_t res)
{
    static const char *const what[] = {"", "create", "chmod", "write", "sync", "close", "unlink"};
    hone_http_req *req = u->req;
    req->err_status = 500;
    snprintf(req->err_msg, sizeof(req->err_msg), "cannot %s the upload's file: %s", what[op],
             uv_strerror((int)res));
    up_over(u);
}

static void up_after(http_upload *u, up_op op, ssize_t res)
{
    http_uploads *p = u->s->uploads;
    if (op == OP_CLOSE) {
        u->fd = -1;
    } else if (op == OP_UNLINK) {
        free(u->path);
        u->path = NULL;
    } else if (op == OP_WRITE && res >= 0) {
        if (res == 0)
            res = UV_EIO;
        else {
            up_consume(u, (size_t)res);
            u->written += (uint64_t)res;
        }
    } else if (op == OP_FCHMOD && res >= 0) {
        u->chmodded = 1;
    } else if (op == OP_FSYNC && res >= 0) {
        u->synced = 1;
    }
    if (!u->req) { /* gone: the cleanup goes on whatever the result */
        up_drop_blocks(u);
        uploads_wake(p);
        up_step(u); /* last: may free u, and a closing server may then be done */
        return;
    }
    hone_http_conn *c = u->req->conn;
    if (u->state != UP_OPEN) {
        /* over already (413, 408 mid-body...): the answer comes from the request's turn */
    } else if (res < 0) {
        up_fail(u, op, res);
    } else if (op == OP_CLOSE) {
        u->state = UP_DONE;
        p->st.uploads_total++;
        p->st.bytes_total += u->written;
        up_slot_release(u);
    } else {
        if (op == OP_WRITE && c && !c->reading) /* our disk, not the client, was the wait */
            up_touch(u);
        up_step(u);
    }
    uploads_wake(p);
    if (c)
        http_conn_pump(c); /* last: it may free the request, and this upload with it */
}

/* ---- the hooks conn.c and request.c call ---------------------------------------------------- */

void http_upload_attach(hone_http_conn *c, hone_http_req *req)
{
    http_uploads *p = pool_of(c->server);
    http_upload *u = hone_xcalloc(1, sizeof(*u));
    u->s = c->server;
    u->req = req;
    u->fd = -1;
    u->state = UP_BEGIN;
    u->prev = p->last;
    if (p->last)
        p->last->next = u;
    else
        p->first = u;
    p->last = u;
    p->live++;
    req->up = u;
    http_conn_enqueue(c, req); /* in order now: its begin runs when it reaches the head */
}

int http_upload_body(hone_http_req *req, const char *at, size_t len)
{
    http_upload *u = req->up;
    if (u->state == UP_OVER)
        return 0;
    /* before begin (at most the rest of one read: reading pauses) the bytes wait in memory too */
    up_append(u, at, len);
    u->unclocked += len;
    if (u->state == UP_OPEN) {
        if (u->unclocked >= UP_PROGRESS_BYTES) {
            u->unclocked = 0;
            up_touch(u);
        }
        up_step(u);
    }
    return 0;
}

void http_upload_body_done(hone_http_req *req)
{
    req->up->body_done = 1;
    up_step(req->up);
}

/* Runs the filter and begin (in the request's turn, so any answer leaves in order); then a slot,
 * a place in the wait list, or 503. A refusal of a body still arriving closes the connection after
 * the answer: keep_alive is cleared before anything answers so the answer says so. */
static void up_begin(hone_http_conn *c, hone_http_req *req)
{
    hone_http_server *s = c->server;
    http_uploads *p = s->uploads;
    http_upload *u = req->up;
    hone_http_res *res = &req->res;
    char dir[PATH_MAX] = "";
    int keep = req->keep_alive, rc;
    if (!u->body_done)
        req->keep_alive = 0;
    req->in_handler = 1;
    rc = s->filter ? s->filter(req, res, s->filter_ud) : 0;
    if (!rc && !res->answered)
        rc = req->route->begin(req, res, req->route->ud, dir, sizeof(dir));
    req->in_handler = 0;
    if (!rc && !res->answered && dir[0]) {
        req->keep_alive = keep;
        u->dir = hone_xstrdup(dir);
        if (up_may_grant(p, u)) {
            up_grant(u);
            return;
        }
        if (up_may_wait(p, u)) {
            u->state = UP_WAITING;
            p->st.waiting++;
            p->waiting[u->prio]++;
            return;
        }
        p->st.refused_busy++;
        if (!u->body_done)
            req->keep_alive = 0;
        hone_http_res_header(res, "Retry-After", "1");
        if (p->waiting[u->prio] >= p->lim.max_waiting)
            hone_http_res_error(res, 503, NULL, "%d uploads under way and %d waiting: retry later",
                                class_slots(p, u->prio), p->lim.max_waiting);
        else
            hone_http_res_error(res, 503, NULL,
                                "you have %d uploads waiting, your share of the %d places to "
                                "wait: retry later",
                                owner_count(p, u, 1), p->lim.max_waiting);
    } else if (!res->answered) {
        hone_http_res_error(res, 500, NULL, "the upload was neither refused nor given a folder");
    }
    s->stats.requests_total++; /* conn_dispatch, which counts the others, will not run */
    up_over(u);
}

int http_upload_ready(hone_http_conn *c, hone_http_req *req)
{
    http_upload *u = req->up;
    if (!req->err_status && u->state == UP_BEGIN)
        up_begin(c, req);
    if (req->res.answered) {
        req->dispatched = 1;
        return 1;
    }
    if (u->late_rc && u->state == UP_OPEN)
        up_fail(u, u->late_op, u->late_rc);
    /* 413, 408, 400 mid-body, or a disk error: the error is answered in dispatch */
    return req->err_status || u->state == UP_DONE;
}

int http_upload_holds_reading(const hone_http_conn *c)
{
    const hone_http_req *req = c->cur;
    if (!req || !req->up)
        return 0;
    switch (req->up->state) {
    case UP_BEGIN:
    case UP_WAITING:
        return 1;
    case UP_OPEN:
        return up_held(req->up);
    default:
        return 0;
    }
}

int http_upload_writing(const hone_http_req *req)
{
    const http_upload *u = req->up;
    return u && u->body_done && (u->state == UP_WAITING || u->state == UP_OPEN);
}

void http_upload_release(hone_http_req *req)
{
    http_upload *u = req->up;
    if (!u)
        return;
    http_uploads *p = u->s->uploads;
    req->up = NULL;
    up_unwait(p, u);
    u->state = UP_OVER;
    u->req = NULL;
    up_drop_blocks(u); /* unless a write still reads them: then when it is back */
    up_slot_release(u);
    uploads_wake(p);
    up_step(u); /* last: closes and unlinks what the handler did not take; may free u */
}

int hone_http_req_set_upload_class(hone_http_req *req, const char *owner, int priority)
{
    http_upload *u = req->up;
    if (!u || u->state != UP_BEGIN)
        return HONE_ESTATE;
    free(u->owner);
    u->owner = owner ? hone_xstrdup(owner) : NULL;
    u->prio = priority != 0;
    return HONE_OK;
}

/* ---- handler accessors ----------------------------------------------------------------------- */

const char *hone_http_req_body_file(const hone_http_req *req)
{
    return req->up && req->up->state == UP_DONE ? req->up->path : NULL;
}

uint64_t hone_http_req_body_file_size(const hone_http_req *req)
{
    return req->up && req->up->state == UP_DONE ? req->up->written : 0;
}

char *hone_http_req_body_file_take(hone_http_req *req)
{
    if (!req->up || req->up->state != UP_DONE)
        return NULL;
    char *path = req->up->path;
    req->up->path = NULL;
    return path;
}
