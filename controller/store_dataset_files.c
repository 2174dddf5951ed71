/* The store's statements on table dataset_files (migration 008): the SHA-256 of each file a
 * dataset serves over HTTP, kept with the size and mtime it was computed at; and whether a worker
 * holds a lease that needs a dataset (who may download it). */
#include "store.h"

int store_dataset_files_list(ctl_db *db, const char *dataset_id, json_t **rows)
{
    return db_rows(db, rows,
                   "SELECT kind,name,bytes,mtime,sha256 FROM dataset_files WHERE dataset_id=? "
                   "ORDER BY kind,name",
                   "s", dataset_id);
}

int store_dataset_file_put(ctl_db *db, const char *dataset_id, const char *kind, const char *name,
                           int64_t bytes, double mtime, const char *sha256)
{
    return db_exec(db,
                   "INSERT INTO dataset_files(dataset_id,kind,name,bytes,mtime,sha256) "
                   "VALUES(?,?,?,?,?,?) ON CONFLICT(dataset_id,kind,name) DO UPDATE SET "
                   "bytes=excluded.bytes,mtime=excluded.mtime,sha256=excluded.sha256",
                   "sssIds", dataset_id, kind, name, bytes, mtime, sha256);
}

int store_dataset_leased_to(ctl_db *db, const char *dataset_id, const char *worker_id)
{
    json_t *row = NULL;
    int rc = db_row(db, &row,
                    "SELECT id FROM jobs WHERE worker_id=? AND status='running' AND "
                    "(dataset_id=? OR experiment_id IN (SELECT experiment_id FROM "
                    "experiment_datasets WHERE dataset_id=?)) LIMIT 1",
                    "sss", worker_id, dataset_id, dataset_id);
    json_decref(row);
    return rc;
}

int store_dataset_convert_leased(ctl_db *db, const char *dataset_id, const char *worker_id,
                                 json_t **rows)
{
    return db_rows(db, rows,
                   "SELECT id,config FROM jobs WHERE action='convert' AND dataset_id=? AND "
                   "worker_id=? AND status='running'",
                   "ss", dataset_id, worker_id);
}

int store_worker_actions_running(ctl_db *db, const char *worker_id, json_t **rows)
{
    return db_rows(db, rows,
                   "SELECT id,config FROM jobs WHERE worker_id=? AND status='running' AND "
                   "action IN ('evaluate','inference','export')",
                   "s", worker_id);
}
