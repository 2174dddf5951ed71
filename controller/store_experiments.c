/* The store's statements on table experiments (JSON members stored as JSON text) and on the
 * datasets an experiment uses (table experiment_datasets, which a dataset delete respects).
 * Statements only: transactions are the caller's (store.h). */
#include "store.h"

int store_experiment_insert(ctl_db *db, const char *id, const char *name, const char *network,
                            const char *train_datasets, const char *eval_dataset,
                            const char *metric, const char *specs, const char *automl_settings,
                            const char *description, const char *owner, double now)
{
    return db_exec(db,
                   "INSERT INTO experiments(id,name,network,train_datasets,eval_dataset,metric,"
                   "specs,automl_settings,description,owner,created) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                   "ssssssssssd", id, name, network, train_datasets, eval_dataset, metric, specs,
                   automl_settings, description, owner, now);
}

int store_experiment_update(ctl_db *db, const char *id, const char *name,
                            const char *train_datasets, const char *eval_dataset,
                            const char *metric, const char *specs, const char *automl_settings,
                            const char *description)
{
    return db_exec(db,
                   "UPDATE experiments SET name=?,train_datasets=?,eval_dataset=?,metric=?,"
                   "specs=?,automl_settings=?,description=? WHERE id=?",
                   "ssssssss", name, train_datasets, eval_dataset, metric, specs, automl_settings,
                   description, id);
}

int store_experiment_get(ctl_db *db, const char *id, const char *owner, json_t **row)
{
    return db_row(db, row, "SELECT * FROM experiments WHERE id=?1 AND (?2 IS NULL OR owner=?2)",
                  "ss", id, owner);
}

int store_experiment_network(ctl_db *db, const char *id, json_t **row)
{
    return db_row(db, row, "SELECT network FROM experiments WHERE id=?", "s", id);
}

int store_experiments_list(ctl_db *db, const char *owner, json_t **rows, int limit, int offset)
{
    return db_rows(db, rows,
                   "SELECT * FROM experiments WHERE (?1 IS NULL OR owner=?1) "
                   "ORDER BY created, id LIMIT ?2 OFFSET ?3",
                   "sii", owner, limit, offset);
}

int store_experiment_used_by(ctl_db *db, const char *id, json_t **row)
{
    return db_row(db, row, "SELECT id FROM jobs WHERE experiment_id=? LIMIT 1", "s", id);
}

int store_experiment_delete(ctl_db *db, const char *id)
{
    return db_run(db, "DELETE FROM experiments WHERE id=?", "s", id);
}

/* The role is in the statement's text, not bound: one cached statement per role. */
int store_experiment_dataset_add(ctl_db *db, const char *id, const char *dataset_id, int eval)
{
    return db_exec(db,
                   eval ? "INSERT OR IGNORE INTO experiment_datasets VALUES(?,?,'eval')"
                        : "INSERT OR IGNORE INTO experiment_datasets VALUES(?,?,'train')",
                   "ss", id, dataset_id);
}

int store_experiment_datasets_clear(ctl_db *db, const char *id)
{
    return db_exec(db, "DELETE FROM experiment_datasets WHERE experiment_id=?", "s", id);
}
