/* batch.c: group commit of per-epoch reports. Reports handled in one loop iteration share one
 * transaction, each inside the savepoint "report"; their 200 replies wait for the commit. */
#ifndef HONE_CTL_BATCH_H
#define HONE_CTL_BATCH_H

#include <jansson.h>

#include "controller.h"
#include "http.h"

int ctl_batch_begin(hone_controller *c);   /* opens the batch if needed, then a savepoint */
int ctl_batch_release(hone_controller *c); /* the request's changes join the batch */
void ctl_batch_undo(hone_controller *c);   /* the request's changes are dropped */
/* Holds a 200 reply (body stolen) until the batch commits. */
void ctl_batch_reply(hone_controller *c, hone_http_res *res, json_t *body);
/* Commits the batch and sends its replies (500s if the commit failed). Every writer that is not
 * a report calls it first. */
int ctl_batch_flush(hone_controller *c);

#endif
