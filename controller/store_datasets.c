/* The store's statements on table datasets (rows written once the files were checked) and on who
 * uses a dataset (table experiment_datasets), which a delete must respect. */
#include "store.h"

int store_dataset_insert(ctl_db *db, const char *id, const char *name, const char *type,
                         const char *format, const char *path, const char *description,
                         const char *stats, const char *owner, double now)
{
    return db_exec(db,
                   "INSERT INTO datasets(id,name,type,format,path,description,stats,owner,created) "
                   "VALUES(?,?,?,?,?,?,?,?,?)",
                   "ssssssssd", id, name, type, format, path, description, stats, owner, now);
}

int store_dataset_get(ctl_db *db, const char *id, const char *owner, json_t **row)
{
    return db_row(db, row, "SELECT * FROM datasets WHERE id=?1 AND (?2 IS NULL OR owner=?2)", "ss",
                  id, owner);
}

int store_datasets_list(ctl_db *db, const char *owner, json_t **rows, int limit, int offset)
{
    return db_rows(db, rows,
                   "SELECT * FROM datasets WHERE (?1 IS NULL OR owner=?1) "
                   "ORDER BY created, id LIMIT ?2 OFFSET ?3",
                   "sii", owner, limit, offset);
}

int store_dataset_used_by(ctl_db *db, const char *id, json_t **row)
{
    return db_row(db, row, "SELECT experiment_id FROM experiment_datasets WHERE dataset_id=?", "s",
                  id);
}

int store_dataset_delete(ctl_db *db, const char *id)
{
    return db_run(db, "DELETE FROM datasets WHERE id=?", "s", id);
}

int store_dataset_exists(ctl_db *db, const char *id, const char *owner)
{
    json_t *row = NULL;
    int rc = db_row(db, &row, "SELECT id FROM datasets WHERE id=?1 AND (?2 IS NULL OR owner=?2)",
                    "ss", id, owner);
    json_decref(row);
    return rc;
}

int store_dataset_path_used(ctl_db *db, const char *path)
{
    json_t *row = NULL;
    int rc = db_row(db, &row,
                    "SELECT id FROM datasets WHERE path=?1 OR substr(path,1,length(?1)+1)=?1||'/' "
                    "LIMIT 1",
                    "s", path);
    json_decref(row);
    return rc;
}
