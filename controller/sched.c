/* Scheduler: hands queued train and convert jobs to workers under a lease (long-poll requests are
 * parked until a job is queued or their wait runs out), and a once-a-second tick that expires
 * leases whose heartbeats stopped: their jobs go back to the queue and resume from the last
 * checkpoint. A queued train job that several parked workers could take goes to the one whose
 * GPU (by the gpu_uuid it registered; a worker without one is its own group) runs the fewest
 * leases, the first parked among equals: trials spread over GPUs, and pack onto one only through
 * the workers (slots) that share it. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "automl.h"
#include "batch.h"
#include "ctl.h"
#include "ctl_sched.h"
#include "ctl_spec.h"
#include "data_paths.h"
#include "jobs.h"
#include "kind.h"
#include "shares.h"
#include "store.h"
#include "util.h"

/* A worker's lease request parked until work appears or its wait runs out. */
struct ctl_waiter {
    hone_controller *c;
    hone_http_res *res;
    char worker_id[64];
    char group[128]; /* its GPU's UUID, or "#" and its id without one (store_running_by_gpu) */
    int gpu;         /* it registered a gpu_uuid */
    uv_timer_t timer;
    struct ctl_waiter *prev, *next;
};

/* A job whose dataset or input folder no longer opens beneath its root (replaced by a link since
 * it was checked) fails at once, never retried (the next attempt would meet the same link): the
 * lease is granted and ended in one transaction, so that ctl_job_finish's bookkeeping (a trial's
 * search, a convert's waiting jobs) runs as for any failure. HONE_EPERM: failed, take the next. */
static int lease_refuse(hone_controller *c, const char *worker_id, const json_t *job,
                        const char *why)
{
    json_t *last = json_deep_copy(job); /* its last attempt: not retried */
    json_object_set_new(last, "attempts", json_integer(c->cfg.max_attempts));
    double now = ctl_now();
    int rc = db_begin(c->db) ? HONE_ESQL : HONE_OK;
    if (!rc && (store_lease_grant(c->db, jstr(job, "id"), worker_id, now, now, NULL) ||
                ctl_job_finish(c, last, "failed", why, NULL) || db_commit(c->db))) {
        db_rollback(c->db);
        rc = HONE_ESQL;
    }
    json_decref(last);
    if (rc)
        return rc;
    ctl_log(c, "warn", "lease_refused", json_pack("{s:s,s:s}", "job", jstr(job, "id"), "why", why));
    if (jstr(job, "parent_id"))
        ctl_automl_step(c, jstr(job, "parent_id"));
    return HONE_EPERM;
}

/* Leases job (the queued row, taken) to the worker: 0 with *reply set; HONE_EPERM when it failed
 * instead (lease_refuse). */
static int lease_job(hone_controller *c, const char *worker_id, json_t *job, json_t **reply)
{
    const ctl_kind *k = ctl_kind_of(job);
    json_t *flat = NULL;
    char *spec = NULL;
    int rc = HONE_ESTATE;
    *reply = NULL;
    if (!k->lease_job)
        goto fail; /* a kind that is never leased */
    if (k->lease_spec && (rc = k->lease_spec(c, job, &flat)))
        goto fail;
    char why[1024];
    if (ctl_job_paths_check(c, job, flat, why, sizeof why) == HONE_EPERM) {
        /* A trial's end goes to its search, which cannot take it while an ask is off the loop:
         * nothing to lease now; the next tick tries again (the search is idle by then). */
        if (jstr(job, "parent_id") && ctl_automl_busy(c, jstr(job, "parent_id"))) {
            c->kick_on_tick = 1;
            rc = HONE_ENOENT;
        } else {
            rc = lease_refuse(c, worker_id, job, why);
        }
        goto fail;
    }
    /* The jobs row keeps what the lease carried (its column is still named spec_yaml). */
    spec = flat ? jdump(flat) : NULL;
    double now = ctl_now();
    rc = HONE_ESQL;
    if (db_begin(c->db))
        goto fail;
    if (store_lease_grant(c->db, jstr(job, "id"), worker_id, now, now + c->cfg.lease_seconds,
                          spec) ||
        db_commit(c->db)) {
        db_rollback(c->db);
        goto fail;
    }
    rc = HONE_OK;
    c->n_leases++;
    ctl_fair_charge(c, job);
    *reply = json_pack("{s:o}", "job", k->lease_job(c, job, flat));
    ctl_log(c, "info", "lease",
            json_pack("{s:s,s:s,s:I,s:b}", "job", jstr(job, "id"), "worker", worker_id,
                      "epochs_until", (json_int_t)jint(job, "epochs_target"), "resume",
                      (int)jint(job, "resume")));
fail:
    free(spec);
    json_decref(flat);
    json_decref(job);
    return rc;
}

int ctl_sched_try_lease(hone_controller *c, const char *worker_id, json_t **reply)
{
    int rc;
    *reply = NULL;
    do {
        json_t *job = NULL;
        rc = ctl_fair_next(c, &job);
        if (!rc)
            rc = lease_job(c, worker_id, job, reply);
    } while (rc == HONE_EPERM); /* that one failed (lease_refuse): the next */
    return rc;
}

/* ---- parked lease requests ---- */

static void waiter_closed(uv_handle_t *h)
{
    free(h->data);
}

static void waiter_remove(ctl_waiter *w)
{
    hone_controller *c = w->c;
    if (w->prev)
        w->prev->next = w->next;
    else
        c->waiters = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        c->waiters_tail = w->prev;
    uv_timer_stop(&w->timer);
    uv_close((uv_handle_t *)&w->timer, waiter_closed);
    c->n_waiters--;
}

static void waiter_timeout(uv_timer_t *t)
{
    ctl_waiter *w = t->data;
    hone_http_res *res = w->res;
    hone_http_res_on_abort(res, NULL, NULL);
    waiter_remove(w);
    hone_http_res_empty(res, 204);
}

static void waiter_abort(hone_http_res *res, void *ud)
{
    (void)res;
    waiter_remove(ud);
}

void ctl_sched_park(hone_controller *c, const char *worker_id, hone_http_res *res, int wait_s)
{
    ctl_waiter *w = hone_xcalloc(1, sizeof *w);
    w->c = c;
    w->res = res;
    snprintf(w->worker_id, sizeof w->worker_id, "%s", worker_id);
    json_t *row = NULL;
    const char *uuid =
        store_worker_gpu(c->db, worker_id, &row) == HONE_OK ? jstr(row, "gpu_uuid") : NULL;
    if (uuid)
        snprintf(w->group, sizeof w->group, "%s", uuid);
    else
        snprintf(w->group, sizeof w->group, "#%s", worker_id);
    w->gpu = uuid != NULL;
    json_decref(row);
    c->n_waiters++;
    uv_timer_init(c->loop, &w->timer);
    w->timer.data = w;
    uv_timer_start(&w->timer, waiter_timeout, (uint64_t)wait_s * 1000u, 0);
    w->prev = c->waiters_tail;
    if (c->waiters_tail)
        c->waiters_tail->next = w;
    else
        c->waiters = w;
    c->waiters_tail = w;
    hone_http_res_on_abort(res, waiter_abort, w);
}

/* The parked request a train job (a kind that spreads over GPUs) goes to: the one whose GPU runs
 * the fewest leases, the first parked among equals. Only the first parked when none of them named a
 * GPU (CPU workers: FIFO, no query) or when the counts cannot be read. One query, then O(waiters):
 * the counts by group are a hash (a JSON object). */
static ctl_waiter *waiter_for_gpu(hone_controller *c)
{
    ctl_waiter *best = c->waiters, *w;
    int gpus = 0;
    for (w = c->waiters; w && !gpus; w = w->next)
        gpus = w->gpu;
    if (!gpus || !c->waiters->next)
        return best;
    json_t *rows = NULL, *r, *load = json_object();
    size_t i;
    if (store_running_by_gpu(c->db, &rows) == HONE_OK)
        json_array_foreach(rows, i, r)
            json_object_set(load, jstr(r, "grp"), json_object_get(r, "n"));
    long long least = -1;
    for (w = c->waiters; w; w = w->next) {
        long long n = jint(load, w->group);
        if (least < 0 || n < least) {
            least = n;
            best = w;
        }
    }
    json_decref(load);
    json_decref(rows);
    return best;
}

void ctl_sched_kick(hone_controller *c)
{
    ctl_batch_flush(c);
    while (c->waiters) {
        ctl_waiter *w = c->waiters;
        json_t *reply = NULL, *job = NULL;
        int rc = ctl_fair_next(c, &job);
        if (rc == HONE_ENOENT)
            return;
        if (rc == HONE_OK) {
            if (ctl_kind_of(job)->spread_gpus)
                w = waiter_for_gpu(c);
            rc = lease_job(c, w->worker_id, job, &reply);
            if (rc == HONE_ENOENT)
                return;
            if (rc == HONE_EPERM) /* failed instead (lease_refuse): the next job */
                continue;
        }
        hone_http_res *res = w->res;
        hone_http_res_on_abort(res, NULL, NULL);
        waiter_remove(w);
        if (rc)
            hone_http_res_error(res, 500, NULL, "lease failed: %s", hone_strerror(rc));
        else
            hone_http_res_json(res, 200, reply);
    }
}

/* ---- lease expiry ---- */

static void expire_one(hone_controller *c, const json_t *job)
{
    const char *dec = jstr(job, "last_decision"), *ctl = jstr(job, "control");
    const char *id = jstr(job, "id");
    double now = ctl_now();
    if (ctl_automl_busy(c, jstr(job, "parent_id")))
        return; /* its search is asking: the next tick expires it */
    if (db_begin(c->db))
        return;
    int rc;
    if ((dec && strcmp(dec, "continue") != 0) || (ctl && !strcmp(ctl, "cancel"))) {
        /* It had been told to stop or pause: the trainer is gone, the job is over. */
        rc = ctl_job_finish(c, job, "stopped", "lease expired", NULL);
    } else {
        rc = store_lease_expire(c->db, id, now);
    }
    if (rc || db_commit(c->db)) {
        db_rollback(c->db);
        if (jstr(job, "parent_id"))
            ctl_automl_rebuild(c, jstr(job, "parent_id"));
        return;
    }
    c->n_expired++;
    ctl_log(c, "warn", "lease_expired",
            json_pack("{s:s,s:s,s:I}", "job", id, "worker",
                      jstr(job, "worker_id") ? jstr(job, "worker_id") : "", "epoch",
                      (json_int_t)jint(job, "epoch")));
    if (jstr(job, "parent_id"))
        ctl_automl_step(c, jstr(job, "parent_id"));
}

int ctl_sched_release(hone_controller *c, const json_t *job)
{
    const char *dec = jstr(job, "last_decision"), *ctl = jstr(job, "control");
    if ((dec && strcmp(dec, "continue") != 0) || (ctl && !strcmp(ctl, "cancel")))
        return ctl_job_finish(c, job, "stopped", "lease handed back", NULL);
    c->n_released++;
    return store_lease_expire(c->db, jstr(job, "id"), ctl_now());
}

static void tick(uv_timer_t *t)
{
    hone_controller *c = t->data;
    json_t *rows = NULL, *r;
    size_t i;
    ctl_batch_flush(c);
    if (store_leases_lapsed(c->db, ctl_now(), &rows) == HONE_OK) {
        json_array_foreach(rows, i, r) expire_one(c, r);
        if (json_array_size(rows))
            ctl_sched_kick(c);
    }
    json_decref(rows);
    if (c->kick_on_tick) { /* a refusal waited for a busy search (lease_job) */
        c->kick_on_tick = 0;
        ctl_sched_kick(c);
    }
    if (c->on_tick)
        c->on_tick(c); /* the streams' keep-alives, ends and auth checks (server.c sets it) */
}

int ctl_sched_start(hone_controller *c)
{
    /* Workers get one lease period after a restart to re-attach before their jobs are requeued. */
    if (store_leases_extend_all(c->db, ctl_now() + c->cfg.lease_seconds))
        return HONE_ESQL;
    uv_timer_init(c->loop, &c->tick);
    c->tick.data = c;
    c->tick_open = 1;
    uv_timer_start(&c->tick, tick, 1000, 1000);
    return HONE_OK;
}

void ctl_sched_stop(hone_controller *c)
{
    while (c->waiters) {
        ctl_waiter *w = c->waiters;
        hone_http_res *res = w->res;
        hone_http_res_on_abort(res, NULL, NULL);
        waiter_remove(w);
        hone_http_res_error(res, 503, NULL, "controller shutting down");
    }
    if (c->tick_open) {
        uv_timer_stop(&c->tick);
    }
}
