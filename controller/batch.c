/* Group commit for per-epoch reports, the hot path: reports handled in one loop iteration share one
 * SQLite transaction (each inside its own savepoint) and their replies are held until a uv_check
 * callback commits it after the poll phase, so one fsync acknowledges many reports. Any other
 * writer flushes the batch first, so no reply ever goes out before its change is durable. */
#include <stdio.h>

#include "automl.h"
#include "batch.h"
#include "ctl.h"
#include "store.h"
#include "stream.h"
#include "util.h"

typedef struct ctl_pending {
    hone_http_res *res; /* NULL once the client has gone */
    json_t *body;
    struct ctl_pending *next;
} ctl_pending;

static void check_cb(uv_check_t *h)
{
    ctl_batch_flush(h->data);
}

int ctl_batch_begin(hone_controller *c)
{
    if (!c->batch_open) {
        if (db_begin(c->db))
            return HONE_ESQL;
        c->batch_open = 1;
        uv_check_start(&c->batch_check, check_cb);
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
    ctl_pending *p = hone_xcalloc(1, sizeof *p);
    p->res = res;
    p->body = body;
    *(c->pending_tail ? &((ctl_pending *)c->pending_tail)->next : (ctl_pending **)&c->pending) = p;
    c->pending_tail = p;
    hone_http_res_on_abort(res, pending_abort, p);
}

int ctl_batch_flush(hone_controller *c)
{
    if (!c->batch_open)
        return HONE_OK;
    c->batch_open = 0;
    uv_check_stop(&c->batch_check);
    int rc = db_commit(c->db);
    ctl_pending *p = c->pending;
    c->pending = c->pending_tail = NULL;
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
    if (rc == HONE_OK)
        ctl_streams_pump(c); /* the epochs just made durable */
    if (rc) {
        /* The searches saw reports that were not stored: rebuild them from what was. */
        ctl_log(c, "error", "batch_commit_failed", NULL);
        ctl_automl_rebuild_all(c);
    }
    return rc;
}
