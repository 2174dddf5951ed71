/* The store's statements on the trials of an AutoML job: train job rows whose parent_id is the
 * AutoML job, numbered by `trial`. Creating and requeueing one, the best one, counts, and ending
 * them together (cancel, search done). Statements only: transactions are the caller's. */
#include "store.h"

int store_trial_insert(ctl_db *db, const char *id, const char *experiment_id, const char *automl_id,
                       const char *name, int trial, const char *config, int epochs, double now)
{
    /* A trial waits for the convert job its AutoML job waits for, and starts from the model its
     * AutoML job was fine-tuned from (from_job, migration 013). */
    return db_exec(db,
                   "INSERT INTO jobs(id,experiment_id,parent_id,action,name,status,trial,config,"
                   "epochs_target,created,queued_at,convert_id,from_job) VALUES(?1,?2,?3,'train',"
                   "?4,'queued',?5,?6,?7,?8,?9,(SELECT convert_id FROM jobs WHERE id=?3),"
                   "(SELECT from_job FROM jobs WHERE id=?3))",
                   "ssssisidd", id, experiment_id, automl_id, name, trial, config, epochs, now,
                   now);
}

int store_trial_requeue(ctl_db *db, const char *automl_id, int trial, int epochs, double now)
{
    return db_run(db,
                  "UPDATE jobs SET status='queued', epochs_target=?, resume=1, queued_at=?, "
                  "last_decision=NULL, finished=NULL, stopped_early=0 WHERE parent_id=? AND "
                  "trial=?",
                  "idsi", epochs, now, automl_id, trial);
}

int store_trial_best(ctl_db *db, const char *automl_id, int maximize, int done_only, json_t **row)
{
    return db_row(db, row,
                  maximize ? "SELECT * FROM jobs WHERE parent_id=?1 AND best_metric IS NOT NULL "
                             "AND (?2=0 OR status='done') ORDER BY best_metric DESC, trial LIMIT 1"
                           : "SELECT * FROM jobs WHERE parent_id=?1 AND best_metric IS NOT NULL "
                             "AND (?2=0 OR status='done') ORDER BY best_metric ASC, trial LIMIT 1",
                  "si", automl_id, done_only);
}

int store_trials_list(ctl_db *db, const char *automl_id, json_t **rows)
{
    return db_rows(db, rows, "SELECT id, trial FROM jobs WHERE parent_id=? ORDER BY trial", "s",
                   automl_id);
}

int store_trials_ids(ctl_db *db, const char *automl_id, json_t **rows)
{
    return db_rows(db, rows, "SELECT id FROM jobs WHERE parent_id=?", "s", automl_id);
}

int store_trials_count_active(ctl_db *db, const char *automl_id, int *n)
{
    json_t *r = NULL;
    *n = 0;
    int rc = db_row(
        db, &r,
        "SELECT COUNT(*) AS n FROM jobs WHERE parent_id=? AND status IN ('queued','running')", "s",
        automl_id);
    if (rc)
        return rc;
    *n = (int)json_integer_value(json_object_get(r, "n")); /* COUNT(*): an integer */
    json_decref(r);
    return HONE_OK;
}

int store_trials_count_by_status(ctl_db *db, const char *automl_id, json_t **rows)
{
    return db_rows(
        db, rows,
        "SELECT status, COUNT(*) AS n, SUM(stopped_early) AS se, MAX(trial) AS last FROM "
        "jobs WHERE "
        "parent_id=? GROUP BY status",
        "s", automl_id);
}

int store_trials_cancel(ctl_db *db, const char *automl_id, double now)
{
    return db_exec(db,
                   "UPDATE jobs SET status='canceled', finished=?, control='cancel', "
                   "worker_id=NULL, lease_expires=NULL WHERE parent_id=? AND status IN "
                   "('queued','paused','running')",
                   "ds", now, automl_id);
}

int store_trials_stop_waiting(ctl_db *db, const char *automl_id, double now)
{
    return db_exec(db,
                   "UPDATE jobs SET status='stopped', stopped_early=1, finished=? WHERE "
                   "parent_id=? AND status IN ('paused','queued')",
                   "ds", now, automl_id);
}

int store_trials_failed_errors(ctl_db *db, const char *automl_id, json_t **rows)
{
    return db_rows(db, rows,
                   "SELECT error, log_tail FROM jobs WHERE parent_id=? AND status='failed' "
                   "ORDER BY finished, trial",
                   "s", automl_id);
}
