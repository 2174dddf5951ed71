/* The store's statements on table metrics: one row per (job, epoch), written once (a repeated
 * report of a stored epoch changes nothing), read back in epoch order. Appending is on the report
 * hot path: one cached statement. */
#include "store.h"

int store_metrics_append(ctl_db *db, const char *job_id, int epoch, const char *data, double now)
{
    return db_run(db,
                  "INSERT OR IGNORE INTO metrics(job_id,epoch,data,created) "
                  "VALUES(?,?,?,?)",
                  "sisd", job_id, epoch, data, now);
}

int store_metrics_list(ctl_db *db, const char *job_id, json_t **rows)
{
    return db_rows(db, rows, "SELECT epoch, data FROM metrics WHERE job_id=? ORDER BY epoch", "s",
                   job_id);
}

int store_metrics_page(ctl_db *db, const char *job_id, int limit, int offset, json_t **rows)
{
    return db_rows(db, rows,
                   "SELECT epoch, data FROM metrics WHERE job_id=? ORDER BY epoch LIMIT ? OFFSET ?",
                   "sii", job_id, limit, offset);
}

int store_metrics_data_list(ctl_db *db, const char *job_id, json_t **rows)
{
    return db_rows(db, rows, "SELECT data FROM metrics WHERE job_id=? ORDER BY epoch", "s", job_id);
}

int store_metrics_trials_summary(ctl_db *db, const char *automl_id, double since, json_t **row)
{
    return db_row(db, row,
                  "SELECT COUNT(*) AS n, AVG(json_extract(m.data,'$.seconds')) AS spe, "
                  "COALESCE(SUM(m.created>?2),0) AS recent, MIN(m.created) AS first FROM metrics "
                  "m JOIN jobs j ON m.job_id=j.id WHERE j.parent_id=?1",
                  "sd", automl_id, since);
}

int store_metrics_experiment_spe(ctl_db *db, const char *experiment_id, json_t **row)
{
    return db_row(db, row,
                  "SELECT COUNT(*) AS n, AVG(json_extract(m.data,'$.seconds')) AS spe FROM jobs j "
                  "JOIN metrics m ON m.job_id=j.id WHERE j.experiment_id=? AND "
                  "json_extract(m.data,'$.seconds') > 0",
                  "s", experiment_id);
}

/* The metrics rows of a job and of its trials (an AutoML job's children) stored after rowid
 * `after`, in rowid order: the event log of a metrics stream (stream.c). Rows are never updated
 * and SQLite gives a new row the largest rowid plus one, so a row committed later always has a
 * larger rowid than every row committed before it: "rowid > after" resumes without gaps or
 * repeats. CROSS JOIN keeps metrics the outer loop, walked by rowid from `after`, so a live
 * stream reads only the rows it has not seen. */
int store_metrics_since(ctl_db *db, const char *job_id, long long after, int limit, json_t **rows)
{
    return db_rows(db, rows,
                   "SELECT m.rowid AS seq, m.job_id, j.trial, m.epoch, m.data FROM metrics m "
                   "CROSS JOIN jobs j ON j.id=m.job_id WHERE m.rowid>?2 AND "
                   "(m.job_id=?1 OR j.parent_id=?1) ORDER BY m.rowid LIMIT ?3",
                   "sIi", job_id, after, limit);
}
