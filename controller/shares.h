/* shares.c: fair shares between users of what they hold in common: the job queue (whose job is
 * leased next, caps on a user's queued and running jobs) and upload slots (whose upload it is:
 * ctl_upload_class, declared in routes.h beside the other upload helpers). */
#ifndef HONE_CTL_SHARES_H
#define HONE_CTL_SHARES_H

#include <jansson.h>

#include "controller.h"
#include "http.h"

/* The job queue's fair-share state (c->fair): made and freed by server.c. */
typedef struct ctl_fair ctl_fair;
ctl_fair *ctl_fair_new(void);
void ctl_fair_free(ctl_fair *f);

/* The queued job to lease next, fair between owners (store_job_next_queued with fair_share's
 * weights and running cap and the queue's virtual clock): HONE_OK with *job, HONE_ENOENT when no
 * job may go now. */
int ctl_fair_next(hone_controller *c, json_t **job);
/* job, a row of ctl_fair_next, was leased: its owner's virtual time moves on by 1 / its weight. */
void ctl_fair_charge(hone_controller *c, const json_t *job);
/* Before (adding 1) or after (adding 0, inside the transaction that made it) a user's job is
 * made: with owner's queued jobs over fair_share.max_queued_per_user, answers 429 naming it (500
 * on a store error) and returns non-zero. owner NULL (an admin): no cap. */
int ctl_fair_queued_check(hone_controller *c, hone_http_res *res, const char *owner, int adding);

#endif
