/* The store's statements on table experiments. Only the read the jobs and the AutoML driver need
 * so far; the experiment routes' own statements move here next. */
#include "store.h"

int store_experiment_get(ctl_db *db, const char *id, json_t **row)
{
    return db_row(db, row, "SELECT * FROM experiments WHERE id=?", "s", id);
}
