/* Group commit for per-epoch reports, the hot path: reports handled in one loop iteration share one
 * SQLite transaction (each inside its own savepoint) and their replies are held until a uv_check
 * callback commits it after the poll phase, so one fsync acknowledges many reports. Any other
 * writer flushes the batch first, so no reply ever goes out before its change is durable. What
 * follows a commit (streams, searches) is the committed callback's: the batch calls nothing above
 * the store. */
#include <stdio.h>
#include <stdlib.h>

#include "batch.h"
#include "ctl.h"
#include "store.h"
#include "util.h"

typedef struct ctl_pending {
    hone_http_res *res; /* NULL once the client has gone */
    json_t *body;
    struct ctl_pending *next;
} ctl_pending;

struct ctl_batch {
    hone_controller *c;
    uv_check_t check;                    /* commits the open batch after each poll */
    int check_open;                      /* the uv handle is not closed yet */
    int open;                            /* a transaction is open */
    ctl_pending *pending, *pending_tail; /* replies held until the batch commits */
    ctl_batch_committed_cb committed;
    void (*closed)(void *arg);
    void *closed_arg;
};

static void check_cb(uv_check_t *h)
{
    ctl_batch *b = h->data;
    ctl_batch_flush(b->c);
}

ctl_batch *ctl_batch_new(hone_controller *c, ctl_batch_committed_cb committed)
{
    ctl_batch *b = hone_xcalloc(1, sizeof *b);
    b->c = c;
    b->committed = committed;
    uv_check_init(c->loop, &b->check);
    b->check.data = b;
    b->check_open = 1;
    return b;
}

static void check_closed(uv_handle_t *h)
{
    ctl_batch *b = h->data;
    if (b->closed)
        b->closed(b->closed_arg);
}

void ctl_batch_close(ctl_batch *b, void (*closed)(void *arg), void *arg)
{
    if (!b || !b->check_open)
        return;
    b->check_open = 0;
    b->closed = closed;
    b->closed_arg = arg;
    uv_close((uv_handle_t *)&b->check, check_closed);
}

void ctl_batch_free(ctl_batch *b)
{
    if (!b)
        return;
    if (b->check_open) { /* not closed first: close the handle before the memory goes */
        b->check_open = 0;
        uv_close((uv_handle_t *)&b->check, NULL);
        uv_run(b->c->loop, UV_RUN_NOWAIT);
    }
    for (ctl_pending *p = b->pending, *next; p; p = next) { /* none after a flush */
        next = p->next;
        if (p->res)
            hone_http_res_on_abort(p->res, NULL, NULL);
        json_decref(p->body);
        free(p);
    }
    free(b);
}

int ctl_batch_begin(hone_controller *c)
{
    ctl_batch *b = c->batch;
    if (!b->open) {
        if (db_begin(c->db))
            return HONE_ESQL;
        b->open = 1;
        uv_check_start(&b->check, check_cb);
    }
    return db_savepoint(c->db);
}

int ctl_batch_release(hone_controller *c)
{
    return db_savepoint_release(c->db);
}

void ctl_batch_undo(hone_controller *c)
{
    db_savepoint_undo(c->db);
}

static void pending_abort(hone_http_res *res, void *ud)
{
    (void)res;
    ((ctl_pending *)ud)->res = NULL;
}

void ctl_batch_reply(hone_controller *c, hone_http_res *res, json_t *body)
{
    ctl_batch *b = c->batch;
    ctl_pending *p = hone_xcalloc(1, sizeof *p);
    p->res = res;
    p->body = body;
    *(b->pending_tail ? &b->pending_tail->next : &b->pending) = p;
    b->pending_tail = p;
    hone_http_res_on_abort(res, pending_abort, p);
}

int ctl_batch_flush(hone_controller *c)
{
    ctl_batch *b = c->batch;
    if (!b || !b->open)
        return HONE_OK;
    b->open = 0;
    uv_check_stop(&b->check);
    int rc = db_commit(c->db);
    ctl_pending *p = b->pending;
    b->pending = b->pending_tail = NULL;
    while (p) {
        ctl_pending *next = p->next;
        if (p->res) {
            hone_http_res_on_abort(p->res, NULL, NULL);
            if (rc == HONE_OK)
                hone_http_res_json(p->res, 200, p->body);
            else
                hone_http_res_error(p->res, 500, NULL, "store error: commit failed");
            p->body = NULL;
        }
        json_decref(p->body);
        free(p);
        p = next;
    }
    if (b->committed)
        b->committed(c, rc);
    return rc;
}

void ctl_res_store_error(hone_controller *c, hone_http_res *res)
{
    ctl_log(c, "error", "store_error", json_pack("{s:s}", "message", db_errmsg(c->db)));
    if (c->batch && c->batch->open)
        ctl_batch_undo(c); /* only this request's savepoint; the batch stays */
    else
        db_rollback(c->db);
    hone_http_res_error(res, 500, NULL, "store error: %s", db_errmsg(c->db));
}
