/* Fair shares between users. The job queue: each lease goes to the owner with the fewest running
 * jobs for its weight, ties to the one served longest ago (start-time fair queueing: a virtual
 * clock, and per owner the virtual time its last grant reached, kept in memory; a restart starts
 * them afresh, which only forgets who was served last), and a user's queued and running jobs are
 * capped (fair_share in the config). Upload slots: whose upload it is, for api/upload.c's shares.
 * Decides only; the store does the counting (one statement a lease) and the routes the answering.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "auth.h"
#include "ctl.h"
#include "routes.h"
#include "shares.h"
#include "store.h"
#include "util.h"

/* The job queue's virtual clock, and the virtual time each owner served ahead of it has reached
 * (JSON {owner: time}): in memory only. */
struct ctl_fair {
    double vclock;
    json_t *finish;
};

ctl_fair *ctl_fair_new(void)
{
    return hone_xcalloc(1, sizeof(ctl_fair));
}

void ctl_fair_free(ctl_fair *f)
{
    if (!f)
        return;
    json_decref(f->finish);
    free(f);
}

int ctl_fair_next(hone_controller *c, json_t **job)
{
    ctl_fair *f = c->fair;
    char *finish = f->finish ? json_dumps(f->finish, JSON_COMPACT) : NULL;
    int rc = store_job_next_queued(c->db, c->cfg.fair_weights, c->cfg.fair_max_running, f->vclock,
                                   finish, job);
    free(finish);
    return rc;
}

void ctl_fair_charge(hone_controller *c, const json_t *job)
{
    ctl_fair *f = c->fair;
    const char *owner = jstr(job, "owner"), *k;
    double start = jnum(job, "fair_start"), fin = jnum(job, "fair_finish");
    json_t *v, *tmp;
    if (!owner || !(fin > start))
        return;
    if (!f->finish)
        f->finish = json_object();
    if (start > f->vclock)
        f->vclock = start;
    json_object_set_new(f->finish, owner, json_real(fin));
    /* an owner the clock has passed starts at the clock anyway: forget it (the map holds only
     * owners served ahead of the clock, a handful) */
    json_object_foreach_safe(f->finish, tmp, k, v)
    {
        if (json_real_value(v) <= f->vclock)
            json_object_del(f->finish, k);
    }
}

int ctl_fair_queued_check(hone_controller *c, hone_http_res *res, const char *owner, int adding)
{
    int n = 0, cap = c->cfg.fair_max_queued;
    if (!owner || cap <= 0)
        return HONE_OK;
    if (store_jobs_queued_count(c->db, owner, &n)) {
        ctl_res_store_error(c, res);
        return HONE_ESQL;
    }
    if (n + adding <= cap)
        return HONE_OK;
    hone_http_res_error(res, 429, "fair_share.max_queued_per_user",
                        "you have %d jobs queued, the most a user may (fair_share."
                        "max_queued_per_user = %d): wait for some to run, or cancel some",
                        n - (adding ? 0 : 1), cap);
    return HONE_ELIMIT;
}

void ctl_upload_class(hone_controller *c, hone_http_req *req, int worker_route)
{
    char user[64], wkey[96];
    if (worker_route && !ctl_auth_is_admin(c, req)) {
        /* the begin checked its credential, "<worker id>.<secret>": the id names the owner */
        const char *a = hone_http_req_header(req, "Authorization");
        const char *tok = a && !strncasecmp(a, "Bearer ", 7) ? a + 7 : "";
        const char *dot = strrchr(tok, '.');
        int n = dot && dot - tok < 64 ? (int)(dot - tok) : 0;
        snprintf(wkey, sizeof wkey, "worker:%.*s", n, tok);
        hone_http_req_set_upload_class(req, wkey, 1);
        return;
    }
    /* with no auth every caller is the admin: one principal, no share between them */
    if (c->cfg.auth_token)
        ctl_auth_user(c, req, user); /* "" when gone since the filter: one share for all such */
    hone_http_req_set_upload_class(req, c->cfg.auth_token ? user : NULL, 0);
}
