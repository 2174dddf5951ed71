/* The store's statements on table job_logs: the trainer's stderr lines that came with each epoch
 * report (schemas/006_job_logs.sql), written once per (job, epoch, line), read back in seq order
 * for GET /jobs/{id}/logs and its stream. */
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
                   "SELECT l.seq, l.job_id, j.trial, l.epoch, l.line FROM job_logs l "
                   "CROSS JOIN jobs j ON j.id=l.job_id WHERE l.seq>?2 AND "
                   "(l.job_id=?1 OR j.parent_id=?1) ORDER BY l.seq LIMIT ?3",
                   "sIi", job_id, after, limit);
}
