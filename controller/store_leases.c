/* The store's statements on leases: the live lease is on the job row (worker_id, lease_expires),
 * its history in table leases. Granting, extending, taking back, expiring. Statements only:
 * transactions are the caller's (store.h); a function that runs two runs both in that one. */
#include "store.h"

int store_lease_grant(ctl_db *db, const char *job_id, const char *worker_id, double now,
                      double lease_expires, const char *spec_yaml)
{
    int n = db_run(db,
                   "UPDATE jobs SET status='running', worker_id=?, last_worker_id=?, "
                   "lease_expires=?, started=COALESCE(started,?), spec_yaml=? WHERE id=? AND "
                   "status='queued'",
                   "ssddss", worker_id, worker_id, lease_expires, now, spec_yaml, job_id);
    if (n < 0)
        return HONE_ESQL;
    if (n != 1)
        return HONE_ESTATE;
    return db_exec(db, "INSERT INTO leases(job_id,worker_id,granted) VALUES(?,?,?)", "ssd", job_id,
                   worker_id, now);
}

int store_lease_extend(ctl_db *db, const char *job_id, double lease_expires)
{
    return db_exec(db, "UPDATE jobs SET lease_expires=? WHERE id=?", "ds", lease_expires, job_id);
}

/* Only a lease that lapsed: a job its worker handed back, finished, paused or failed (and that
 * was queued again) is not that worker's anymore, whatever a late heartbeat or report says. The
 * job gets a new lease row, so that the next end of it is recorded. Returns the rows updated
 * (1 or 0) or HONE_ESQL. */
int store_lease_reattach(ctl_db *db, const char *job_id, const char *worker_id,
                         double lease_expires, double now)
{
    int n = db_run(db,
                   "UPDATE jobs SET status='running', worker_id=?, lease_expires=? WHERE id=? AND "
                   "status='queued' AND last_worker_id=? AND (SELECT end_reason FROM leases WHERE "
                   "leases.job_id=jobs.id ORDER BY rowid DESC LIMIT 1) = 'expired'",
                   "sdss", worker_id, lease_expires, job_id, worker_id);
    if (n != 1)
        return n;
    return db_exec(db, "INSERT INTO leases(job_id,worker_id,granted) VALUES(?,?,?)", "ssd", job_id,
                   worker_id, now)
               ? HONE_ESQL
               : 1;
}

int store_lease_expire(ctl_db *db, const char *job_id, double now)
{
    return db_exec(db,
                   "UPDATE jobs SET status='queued', resume=(epoch>0), worker_id=NULL, "
                   "lease_expires=NULL, queued_at=? WHERE id=? AND status='running'",
                   "ds", now, job_id) ||
                   db_exec(db,
                           "UPDATE leases SET ended=?, end_reason='expired' WHERE job_id=? AND "
                           "ended IS NULL",
                           "ds", now, job_id)
               ? HONE_ESQL
               : HONE_OK;
}

int store_lease_end(ctl_db *db, const char *job_id, double now, const char *reason)
{
    return db_exec(db, "UPDATE leases SET ended=?, end_reason=? WHERE job_id=? AND ended IS NULL",
                   "dss", now, reason, job_id);
}

int store_leases_lapsed(ctl_db *db, double now, json_t **rows)
{
    return db_rows(
        db, rows,
        "SELECT * FROM jobs WHERE status='running' AND action IN ('train','convert','evaluate',"
        "'inference','export') "
        "AND lease_expires < ?",
        "d", now);
}

int store_leases_extend_all(ctl_db *db, double lease_expires)
{
    return db_exec(db,
                   "UPDATE jobs SET lease_expires=? WHERE status='running' AND action IN "
                   "('train','convert','evaluate','inference','export')",
                   "d", lease_expires);
}

int store_leases_cancel_trials(ctl_db *db, const char *automl_id, double now)
{
    return db_exec(db,
                   "UPDATE leases SET ended=?, end_reason='canceled' WHERE ended IS NULL AND "
                   "job_id IN (SELECT id FROM jobs WHERE parent_id=? AND status='running')",
                   "ds", now, automl_id);
}
