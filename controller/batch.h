/* batch.c: group commit of per-epoch reports. Reports handled in one loop iteration share one
 * transaction, each inside the savepoint "report"; their 200 replies wait for the commit. The
 * batch is its own handle (a uv_check_t, the held replies): server.c makes it after the store
 * and closes it before the store goes; everyone else calls the functions below. */
#ifndef HONE_CTL_BATCH_H
#define HONE_CTL_BATCH_H

#include <jansson.h>
#include <uv.h>

#include "controller.h"
#include "http.h"

typedef struct ctl_batch ctl_batch;

/* After each commit of a batch (rc 0, or the commit's error): what else must follow it, such as
 * sending the new epochs to the streams, or rebuilding what saw reports that were not stored. */
typedef void (*ctl_batch_committed_cb)(hone_controller *c, int rc);

/* The batch of c (whose store it commits to), on c's loop. */
ctl_batch *ctl_batch_new(hone_controller *c, ctl_batch_committed_cb committed);
/* Closes its uv handle; closed(arg) runs on the loop once it is gone. Flush it first. */
void ctl_batch_close(ctl_batch *b, void (*closed)(void *arg), void *arg);
/* Frees a closed batch; an open one is closed first (running the loop once, without waiting). */
void ctl_batch_free(ctl_batch *b);

int ctl_batch_begin(hone_controller *c);   /* opens the batch if needed, then a savepoint */
int ctl_batch_release(hone_controller *c); /* the request's changes join the batch */
void ctl_batch_undo(hone_controller *c);   /* the request's changes are dropped */
/* Holds a 200 reply (body stolen) until the batch commits. */
void ctl_batch_reply(hone_controller *c, hone_http_res *res, json_t *body);
/* Commits the batch and sends its replies (500s if the commit failed). Every writer that is not
 * a report calls it first. */
int ctl_batch_flush(hone_controller *c);
/* ctl_res_store_error (util.h) is here too: a store failure drops the request's savepoint while
 * the batch is open, and its transaction otherwise. */

#endif
