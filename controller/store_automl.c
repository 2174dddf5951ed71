/* The store's statements on AutoML jobs: the job row (its fixed space and options in jobs.automl,
 * start, resume, end) and its event log, table automl_events, from which a search is rebuilt by
 * replay: events are appended in the order the search saw them (seq per job). Statements only:
 * transactions are the caller's (store.h). */
#include "store.h"

int store_automl_start(ctl_db *db, const char *id, const char *automl, double now)
{
    return db_exec(
        db, "UPDATE jobs SET automl=?, status='running', started=?, queued_at=NULL WHERE id=?",
        "sds", automl, now, id);
}

int store_automl_resume(ctl_db *db, const char *id)
{
    return db_exec(db, "UPDATE jobs SET status='running', control=NULL WHERE id=?", "s", id);
}

int store_automl_finish(ctl_db *db, const char *id, const char *status, double now,
                        const char *result, double best_metric, int best_epoch, const char *error)
{
    return db_exec(db,
                   "UPDATE jobs SET status=?, finished=?, result=?, best_metric=?, best_epoch=?, "
                   "error=? WHERE id=?",
                   "sdsdiss", status, now, result, best_metric, best_epoch, error, id);
}

int store_automl_list_live(ctl_db *db, json_t **rows)
{
    return db_rows(db, rows,
                   "SELECT id FROM jobs WHERE action='automl' AND status IN ('running','paused') "
                   "ORDER BY created",
                   NULL);
}

int store_automl_list_running(ctl_db *db, json_t **rows)
{
    return db_rows(db, rows, "SELECT id FROM jobs WHERE action='automl' AND status='running'",
                   NULL);
}

int store_automl_event_append(ctl_db *db, const char *job_id, const char *kind, int trial,
                              int epoch, double metric, const char *data, double now)
{
    return db_exec(db,
                   "INSERT INTO automl_events(job_id,seq,kind,trial,epoch,metric,data,created) "
                   "VALUES(?1,(SELECT COALESCE(MAX(seq),0)+1 FROM automl_events WHERE job_id=?1),"
                   "?2,?3,?4,?5,?6,?7)",
                   "ssiidsd", job_id, kind, trial, epoch, metric, data, now);
}

int store_automl_events(ctl_db *db, const char *job_id, json_t **rows)
{
    return db_rows(db, rows, "SELECT * FROM automl_events WHERE job_id=? ORDER BY seq", "s",
                   job_id);
}
