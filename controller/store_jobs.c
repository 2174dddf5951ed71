/* The store's statements on table jobs, one job at a time: creating and reading one, the report's
 * row and its epoch (the hot path: one cached statement each), the queue, lists and counts, the
 * control of a job (cancel, pause, resume) and the end of a train job (retried, or ended). Trials
 * of an AutoML job as a group are in store_trials.c, the AutoML job row in store_automl.c, leases
 * in store_leases.c. Statements only: transactions are the caller's. */
#include "store.h"

int store_job_insert(ctl_db *db, const char *id, const char *experiment_id, const char *action,
                     const char *name, const char *specs, int epochs, double now,
                     const char *convert_id)
{
    return db_exec(
        db,
        "INSERT INTO jobs(id,experiment_id,action,name,status,specs,epochs_target,created,"
        "queued_at,convert_id) VALUES(?,?,?,?,'queued',?,?,?,?,?)",
        "sssssidds", id, experiment_id, action, name, specs, epochs, now, now, convert_id);
}

int store_action_insert(ctl_db *db, const char *id, const char *experiment_id, const char *action,
                        const char *name, const char *config, const char *dataset_id, double now)
{
    return db_exec(db,
                   "INSERT INTO jobs(id,experiment_id,action,name,status,config,dataset_id,created,"
                   "queued_at) VALUES(?,?,?,?,'queued',?,?,?,?)",
                   "ssssssdd", id, experiment_id, action, name, config, dataset_id, now, now);
}

/* Fine-tuning (migration 013): the job whose model job id starts from. */
int store_job_set_from(ctl_db *db, const char *id, const char *from_job)
{
    return db_exec(db, "UPDATE jobs SET from_job=? WHERE id=?", "ss", from_job, id);
}

/* A running job of worker_id that starts from job model_id's model (itself, or as a trial of a
 * search that does): one row, else HONE_ENOENT. */
int store_worker_finetune_running(ctl_db *db, const char *worker_id, const char *model_id,
                                  json_t **row)
{
    return db_row(db, row,
                  "SELECT j.id FROM jobs j LEFT JOIN jobs p ON p.id=j.parent_id WHERE "
                  "j.worker_id=?1 AND j.status='running' AND (j.from_job=?2 OR p.from_job=?2) "
                  "LIMIT 1",
                  "ss", worker_id, model_id);
}

int store_job_get(ctl_db *db, const char *id, json_t **row)
{
    return db_row(db, row, "SELECT * FROM jobs WHERE id=?", "s", id);
}

int store_job_get_owned(ctl_db *db, const char *id, const char *owner, json_t **row)
{
    return db_row(db, row, "SELECT * FROM jobs WHERE id=?1 AND (?2 IS NULL OR owner=?2)", "ss", id,
                  owner);
}

int store_job_report_row(ctl_db *db, const char *id, json_t **row)
{
    return db_row(db, row,
                  "SELECT j.id, j.experiment_id, j.parent_id, j.action, j.trial, j.status, "
                  "j.worker_id, j.last_worker_id, j.epochs_target, j.epoch, j.best_metric, "
                  "j.control, e.metric AS exp_metric FROM jobs j LEFT JOIN experiments e ON "
                  "e.id=j.experiment_id WHERE j.id=?",
                  "s", id);
}

/* Fair share in one statement. q: the leasable queued jobs (a convert job's waiters only once it
 * is done); o: their owners, each with its running jobs (trials included: every leased action),
 * its weight (?1, by user name), whether it is an admin (no cap) and its virtual start, the later
 * of the clock (?3) and where its last grant left it (?4, by owner id); p: the owner whose turn it
 * is among those under the running cap (?2; 0: none): the fewest running jobs for its weight,
 * then the earliest virtual start (served longest ago for its weight), then the one waiting
 * longest. Its oldest job comes back with the owner's virtual start and finish. */
int store_job_next_queued(ctl_db *db, const char *weights, int max_running, double vclock,
                          const char *finish, json_t **row)
{
    return db_row(
        db, row,
        "WITH q AS (SELECT j.rowid AS rid, j.owner, j.queued_at FROM jobs j WHERE "
        "j.status='queued' AND j.action IN ('train','convert','evaluate','inference','export') "
        "AND NOT EXISTS (SELECT 1 FROM jobs cv WHERE cv.id=j.convert_id AND cv.status!='done')), "
        "r AS (SELECT owner, COUNT(*) AS n FROM jobs WHERE status='running' AND action IN "
        "('train','convert','evaluate','inference','export') GROUP BY owner), "
        "o AS (SELECT q.owner, MIN(q.queued_at) AS since, MIN(q.rid) AS first, "
        "COALESCE(r.n,0) AS running, u.role IS 'admin' AS admin, "
        "COALESCE((SELECT CAST(w.value AS REAL) FROM json_each(?1) w WHERE w.key=u.name),1.0) "
        "AS weight, MAX(?3,COALESCE((SELECT CAST(f.value AS REAL) FROM json_each(?4) f WHERE "
        "f.key=q.owner),0.0)) AS start FROM q LEFT JOIN r ON r.owner=q.owner LEFT JOIN users u "
        "ON u.id=q.owner GROUP BY q.owner), "
        "p AS (SELECT owner, start, weight FROM o WHERE ?2<=0 OR admin OR running<?2 "
        "ORDER BY running/weight, start, since, first LIMIT 1) "
        "SELECT j.*, p.start AS fair_start, p.start+1.0/p.weight AS fair_finish FROM p JOIN q ON "
        "q.owner=p.owner JOIN jobs j ON j.rowid=q.rid ORDER BY q.queued_at, q.rid LIMIT 1",
        "sids", weights, max_running, vclock, finish);
}

int store_jobs_queued_count(ctl_db *db, const char *owner, int *n)
{
    json_t *r = NULL;
    *n = 0;
    int rc = db_row(db, &r, "SELECT COUNT(*) AS n FROM jobs WHERE owner=? AND status='queued'", "s",
                    owner);
    if (rc)
        return rc;
    *n = (int)json_integer_value(json_object_get(r, "n")); /* COUNT(*): an integer */
    json_decref(r);
    return HONE_OK;
}

int store_jobs_list(ctl_db *db, json_t **rows, const char *owner, const char *experiment_id,
                    const char *status, const char *parent_id, const char *action, int top,
                    int limit, int offset)
{
    return db_rows(db, rows,
                   "SELECT * FROM jobs WHERE (?1 IS NULL OR experiment_id=?1) AND "
                   "(?2 IS NULL OR status=?2) AND (?3 IS NULL OR parent_id=?3) AND "
                   "(?4 IS NULL OR action=?4) AND (?5 IS NULL OR parent_id IS NULL) AND "
                   "(?8 IS NULL OR owner=?8) "
                   "ORDER BY created, rowid LIMIT ?6 OFFSET ?7",
                   "sssssiis", experiment_id, status, parent_id, action, top ? "1" : NULL, limit,
                   offset, owner);
}

int store_jobs_count_by_status(ctl_db *db, json_t **rows)
{
    return db_rows(db, rows, "SELECT action, status, COUNT(*) AS n FROM jobs GROUP BY 1, 2", NULL);
}

int store_job_report_epoch(ctl_db *db, const char *id, int epoch, int better, double metric,
                           const char *last, double lease_expires, const char *decision)
{
    return db_exec(db,
                   "UPDATE jobs SET epoch=MAX(epoch,?), best_metric=CASE WHEN ? THEN ? ELSE "
                   "best_metric END, best_epoch=CASE WHEN ? THEN ? ELSE best_epoch END, "
                   "result=json_set(result,'$.last',json(?)), lease_expires=?, "
                   "last_decision=? WHERE id=?",
                   "iidiisdss", epoch, better, metric, better, epoch, last, lease_expires, decision,
                   id);
}

int store_job_set_decision(ctl_db *db, const char *id, const char *decision)
{
    return db_exec(db, "UPDATE jobs SET last_decision=? WHERE id=?", "ss", decision, id);
}

int store_job_cancel(ctl_db *db, const char *id, double now)
{
    return db_exec(db, "UPDATE jobs SET status='canceled', finished=? WHERE id=?", "ds", now, id);
}

int store_job_request_cancel(ctl_db *db, const char *id)
{
    return db_exec(db, "UPDATE jobs SET control='cancel' WHERE id=?", "s", id);
}

int store_job_request_pause(ctl_db *db, const char *id)
{
    return db_exec(db, "UPDATE jobs SET control='pause' WHERE id=?", "s", id);
}

int store_job_pause(ctl_db *db, const char *id)
{
    return db_exec(db, "UPDATE jobs SET status='paused', resume=(epoch>0) WHERE id=?", "s", id);
}

int store_job_resume(ctl_db *db, const char *id)
{
    return db_exec(db,
                   "UPDATE jobs SET status='queued', control=NULL, last_decision=NULL, "
                   "queued_at=CAST(strftime('%s','now') AS REAL) WHERE id=?",
                   "s", id);
}

int store_job_retry(ctl_db *db, const char *id, double now, const char *log_tail,
                    const char *result)
{
    return db_exec(db,
                   "UPDATE jobs SET status='queued', attempts=attempts+1, resume=(epoch>0), "
                   "worker_id=NULL, lease_expires=NULL, queued_at=?, error=?, log_tail=?, "
                   "result=? WHERE id=?",
                   "dssss", now, log_tail, log_tail, result, id);
}

int store_job_end(ctl_db *db, const char *id, const char *status, int stopped_early, double now,
                  int failed, const char *log_tail, const char *result)
{
    return db_exec(db,
                   "UPDATE jobs SET status=?, stopped_early=?, worker_id=NULL, lease_expires=NULL, "
                   "finished=CASE WHEN ?='paused' THEN finished ELSE ? END, resume=(?='paused'), "
                   "attempts=attempts+?, error=CASE WHEN ? THEN ? ELSE error END, "
                   "log_tail=COALESCE(?,log_tail), result=? WHERE id=?",
                   "sisdsiisss"
                   "s",
                   status, stopped_early, status, now, status, failed, failed, log_tail, log_tail,
                   result, id);
}

int store_job_set_error(ctl_db *db, const char *id, const char *error, const char *tail)
{
    return db_exec(db, "UPDATE jobs SET error=?, log_tail=COALESCE(?,log_tail) WHERE id=?", "sss",
                   error, tail, id);
}
