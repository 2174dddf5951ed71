/* The controller's store: one SQLite connection opened with the durability settings, the
 * migrations, a cache of prepared statements keyed by their SQL, and the generic db_* helpers
 * that bind by a type string and return rows as JSON (store.c). The connection is opaque: only
 * store.c sees SQLite. Loop thread only. */
#ifndef HONE_STORE_H
#define HONE_STORE_H

#include <jansson.h>

#include "hone.h"

/* One connection and its prepared statements, cached by SQL text (SQLITE_PREPARE_PERSISTENT):
 * each distinct statement is parsed once. Opaque: only store.c sees SQLite. */
typedef struct ctl_db ctl_db;

/* ---- store.c: the generic layer ---- */
/* Bind types: 's' const char * (NULL binds null), 'i' int, 'I' long long, 'd' double (a
 * non-finite one binds null). */
int db_open(const char *path, ctl_db **out, int *version);
void db_close(ctl_db *db);       /* finalizes the cached statements, closes, frees; NULL is fine */
int db_cached(const ctl_db *db); /* statements in the cache (tests) */
const char *db_errmsg(ctl_db *db); /* the last SQLite error message */
int db_begin(ctl_db *db);          /* BEGIN IMMEDIATE; refused inside an open transaction */
int db_commit(ctl_db *db);         /* rolls back when the commit fails */
void db_rollback(ctl_db *db);      /* no-op outside a transaction */
/* The savepoint "report": one request's changes inside the report batch (batch.c). */
int db_savepoint(ctl_db *db);
int db_savepoint_release(ctl_db *db); /* its changes join the open transaction */
void db_savepoint_undo(ctl_db *db);   /* its changes are dropped (rolled back to, then released) */
/* Runs one statement; returns the number of changed rows (>= 0) or HONE_ESQL. */
int db_run(ctl_db *db, const char *sql, const char *types, ...);
/* First row as a JSON object {column: value} (TEXT -> string, INTEGER -> integer, REAL -> real,
 * NULL -> null); HONE_ENOENT when no row. */
int db_row(ctl_db *db, json_t **out, const char *sql, const char *types, ...);
/* All rows as a JSON array of such objects. */
int db_rows(ctl_db *db, json_t **out, const char *sql, const char *types, ...);

#endif
