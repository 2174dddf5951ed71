/* The store's statements on convert jobs: job rows with action 'convert', a dataset_id and the
 * size they pack at in config ({input_size, channels, out}). Creating one, finding the one to
 * reuse, its progress, the jobs that wait for it, and a dataset's converts as a group. Leases,
 * cancel and the end of a convert job are the job statements of store_jobs.c / store_leases.c.
 * Statements only: transactions are the caller's. */
#include "store.h"

int store_convert_insert(ctl_db *db, const char *id, const char *dataset_id, const char *config,
                         double now)
{
    return db_exec(db,
                   "INSERT INTO jobs(id,action,status,dataset_id,config,created,queued_at) "
                   "VALUES(?,'convert','queued',?,?,?,?)",
                   "sssdd", id, dataset_id, config, now, now);
}

int store_convert_find(ctl_db *db, const char *dataset_id, int size, int channels, json_t **row)
{
    return db_row(db, row,
                  "SELECT * FROM jobs WHERE dataset_id=? AND action='convert' AND status IN "
                  "('queued','running','done') AND json_extract(config,'$.input_size')=? AND "
                  "json_extract(config,'$.channels')=? ORDER BY created DESC, rowid DESC LIMIT 1",
                  "sii", dataset_id, size, channels);
}

int store_convert_progress(ctl_db *db, const char *id, const char *progress, double lease_expires,
                           const char *decision)
{
    return db_exec(db,
                   "UPDATE jobs SET result=json_set(result,'$.progress',json(?)), lease_expires=?, "
                   "last_decision=? WHERE id=?",
                   "sdss", progress, lease_expires, decision, id);
}

int store_convert_waiting(ctl_db *db, const char *convert_id, json_t **rows)
{
    return db_rows(
        db, rows,
        "SELECT * FROM jobs WHERE convert_id=? AND parent_id IS NULL AND "
        "((action='train' AND status IN ('queued','paused')) OR (action='automl' AND status IN "
        "('running','paused'))) ORDER BY created, rowid",
        "s", convert_id);
}

int store_converts_active(ctl_db *db, const char *dataset_id, json_t **row)
{
    return db_row(db, row,
                  "SELECT id FROM jobs WHERE dataset_id=? AND action='convert' AND status IN "
                  "('queued','running') LIMIT 1",
                  "s", dataset_id);
}

int store_converts_delete(ctl_db *db, const char *dataset_id)
{
    return db_run(db, "DELETE FROM jobs WHERE dataset_id=? AND action='convert'", "s", dataset_id);
}
