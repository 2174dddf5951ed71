/* The store's statements on table workers: registration, last-seen, the latest GPU telemetry, the
 * credential's hash, the list and the running jobs per GPU (the scheduler's spreading). Statements
 * only: transactions are the caller's (store.h). */
#include "store.h"

int store_worker_insert(ctl_db *db, const char *id, const char *name, const char *resources,
                        const char *artifact_dir, const char *gpu_uuid, const char *host,
                        double now, const char *secret_hash)
{
    return db_exec(db,
                   "INSERT INTO workers(id,name,resources,artifact_dir,gpu_uuid,host,registered,"
                   "last_seen,secret_hash) VALUES(?,?,?,?,?,?,?,?,?)",
                   "ssssssdds", id, name, resources, artifact_dir, gpu_uuid, host, now, now,
                   secret_hash);
}

int store_worker_gpu(ctl_db *db, const char *id, json_t **row)
{
    return db_row(db, row, "SELECT gpu_uuid FROM workers WHERE id=?", "s", id);
}

int store_running_by_gpu(ctl_db *db, json_t **rows)
{
    return db_rows(db, rows,
                   "SELECT COALESCE(w.gpu_uuid, '#' || w.id) AS grp, COUNT(*) AS n "
                   "FROM jobs j JOIN workers w ON w.id = j.worker_id "
                   "WHERE j.status = 'running' GROUP BY grp",
                   NULL);
}

int store_worker_touch(ctl_db *db, const char *id, double now)
{
    return db_run(db, "UPDATE workers SET last_seen=? WHERE id=?", "ds", now, id);
}

int store_worker_gpus_set(ctl_db *db, const char *id, const char *gpus, double now)
{
    return db_run(db, "UPDATE workers SET gpus=?, gpus_at=? WHERE id=?", "sds", gpus, now, id);
}

int store_worker_secret(ctl_db *db, const char *id, json_t **row)
{
    return db_row(db, row, "SELECT secret_hash FROM workers WHERE id=?", "s", id);
}

int store_workers_list(ctl_db *db, json_t **rows)
{
    return db_rows(
        db, rows,
        "SELECT id, name, resources, artifact_dir, registered, last_seen, gpus, gpus_at, "
        "gpu_uuid, host "
        "FROM workers "
        "ORDER BY registered",
        NULL);
}

int store_workers_count_live(ctl_db *db, double since, int *n)
{
    json_t *r = NULL;
    *n = 0;
    int rc = db_row(db, &r, "SELECT COUNT(*) AS n FROM workers WHERE last_seen > ?", "d", since);
    if (rc)
        return rc;
    *n = (int)json_integer_value(json_object_get(r, "n")); /* COUNT(*): an integer */
    json_decref(r);
    return HONE_OK;
}
