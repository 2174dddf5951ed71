/* The store's statements on table job_logs: the trainer's stderr lines that came with each epoch
 * report (schemas/006_job_logs.sql), written once per (job, epoch, line), and the lines the
 * controller writes itself under epoch 0 (a failure's cause and tail, an AutoML search's
 * decisions), read back in seq order for GET /jobs/{id}/logs and its stream. */
#include "store.h"

int store_logs_append(ctl_db *db, const char *job_id, int epoch, int n, const char *line,
                      double now)
{
    return db_run(db,
                  "INSERT OR IGNORE INTO job_logs(job_id,epoch,n,line,created) VALUES(?,?,?,?,?)",
                  "siisd", job_id, epoch, n, line, now);
}

/* Lines of the job and of its trials after seq `after`, in seq order: the event log of a logs
 * stream (stream.c). seq is AUTOINCREMENT, so a line committed later has a larger seq than every
 * line committed before it, and "seq > after" resumes without gaps or repeats. */
int store_logs_since(ctl_db *db, const char *job_id, long long after, int limit, json_t **rows)
{
    return db_rows(db, rows,
                   "SELECT l.seq, l.job_id, j.trial, l.epoch, l.n, l.line FROM job_logs l "
                   "CROSS JOIN jobs j ON j.id=l.job_id WHERE l.seq>?2 AND "
                   "(l.job_id=?1 OR j.parent_id=?1) ORDER BY l.seq LIMIT ?3",
                   "sIi", job_id, after, limit);
}

/* Epoch 0 holds the lines not carried by a report, each at the next free n. */
int store_logs_add(ctl_db *db, const char *job_id, const char *line, double now)
{
    return db_exec(
        db,
        "INSERT INTO job_logs(job_id,epoch,n,line,created) VALUES(?1,0,"
        "(SELECT COALESCE(MAX(n),-1)+1 FROM job_logs WHERE job_id=?1 AND epoch=0),?2,?3)",
        "ssd", job_id, line, now);
}

int store_logs_last_reported(ctl_db *db, const char *job_id, json_t **row)
{
    return db_row(
        db, row,
        "SELECT line FROM job_logs WHERE job_id=? AND epoch>0 AND n<1000 ORDER BY seq DESC "
        "LIMIT 1",
        "s", job_id);
}
