/* The SQLite store: opening with the durability settings, numbered migrations (the
 * schemas/NNN_name.sql files embedded at build time) applied one transaction each, and small
 * statement helpers (prepared statements cached per connection, keyed by their SQL) that bind by
 * a type string and return rows as JSON. Every write the API acknowledges is committed here
 * (synchronous=FULL) before the reply goes out. The layer under store_*.c: it knows no table but
 * schema_version, and nothing but store*.c reaches SQLite. */
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "controller.h"
#include "store.h"

extern const char *const hone_migrations[];
extern const size_t hone_migrations_count;

/* ---- prepared statements, cached per connection and keyed by their SQL text ---- */

#define STMT_CACHE_MAX 1024 /* distinct statements kept; past that, prepared per call */

struct ctl_db {
    sqlite3 *h;
    struct db_slot *slots;
    size_t cap, n;
};

struct db_slot {
    uint64_t hash;
    char *sql; /* NULL: empty slot */
    sqlite3_stmt *st;
};

static uint64_t sql_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static struct db_slot *slot_find(ctl_db *db, const char *sql, uint64_t h)
{
    size_t mask = db->cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        struct db_slot *e = &db->slots[i];
        if (!e->sql || (e->hash == h && !strcmp(e->sql, sql)))
            return e;
    }
}

static void cache_grow(ctl_db *db)
{
    struct db_slot *old = db->slots;
    size_t oldcap = db->cap;
    db->cap = oldcap ? oldcap * 2 : 64;
    db->slots = hone_xcalloc(db->cap, sizeof *db->slots);
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].sql)
            *slot_find(db, old[i].sql, old[i].hash) = old[i];
    free(old);
}

static int bind_args(sqlite3_stmt *st, const char *types, va_list ap)
{
    for (int i = 0; types && types[i]; i++) {
        int rc;
        switch (types[i]) {
        case 's': {
            const char *s = va_arg(ap, const char *);
            rc = s ? sqlite3_bind_text(st, i + 1, s, -1, SQLITE_TRANSIENT)
                   : sqlite3_bind_null(st, i + 1);
            break;
        }
        case 'i':
            rc = sqlite3_bind_int64(st, i + 1, va_arg(ap, int));
            break;
        case 'I':
            rc = sqlite3_bind_int64(st, i + 1, va_arg(ap, long long));
            break;
        case 'd': {
            double d = va_arg(ap, double);
            rc = isfinite(d) ? sqlite3_bind_double(st, i + 1, d) : sqlite3_bind_null(st, i + 1);
            break;
        }
        default:
            return HONE_EINVAL;
        }
        if (rc != SQLITE_OK)
            return HONE_ESQL;
    }
    return HONE_OK;
}

/* Gets the statement for sql (cached, or prepared now: *cached says which) with its arguments
 * bound. Give it back with done(). */
static int prep(ctl_db *db, sqlite3_stmt **st, int *cached, const char *sql, const char *types,
                va_list ap)
{
    uint64_t h = sql_hash(sql);
    struct db_slot *e = NULL;
    *st = NULL;
    if (db->n < STMT_CACHE_MAX) {
        if ((db->n + 1) * 2 > db->cap)
            cache_grow(db);
        e = slot_find(db, sql, h);
    }
    *cached = e != NULL;
    if (e && e->sql) {
        *st = e->st;
    } else {
        if (sqlite3_prepare_v3(db->h, sql, -1, e ? SQLITE_PREPARE_PERSISTENT : 0, st, NULL) !=
            SQLITE_OK) {
            fprintf(stderr, "sql prepare failed: %s: %s\n", sqlite3_errmsg(db->h), sql);
            sqlite3_finalize(*st);
            *st = NULL;
            return HONE_ESQL;
        }
        if (e) {
            e->hash = h;
            e->sql = hone_xstrdup(sql);
            e->st = *st;
            db->n++;
        }
    }
    if (bind_args(*st, types, ap) != HONE_OK) {
        if (*cached)
            sqlite3_clear_bindings(*st);
        else
            sqlite3_finalize(*st);
        *st = NULL;
        return HONE_ESQL;
    }
    return HONE_OK;
}

/* Resets a cached statement (ending its read of the database) or finalizes an uncached one. */
static void done(sqlite3_stmt *st, int cached)
{
    if (cached) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    } else {
        sqlite3_finalize(st);
    }
}

static int run_v(ctl_db *db, const char *sql, const char *types, va_list ap)
{
    sqlite3_stmt *st = NULL;
    int cached = 0;
    int rc = prep(db, &st, &cached, sql, types, ap);
    if (rc)
        return rc;
    rc = sqlite3_step(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fprintf(stderr, "sql step failed: %s: %s\n", sqlite3_errmsg(db->h), sql);
        done(st, cached);
        return HONE_ESQL;
    }
    done(st, cached);
    return sqlite3_changes(db->h);
}

int db_run(ctl_db *db, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    int rc = run_v(db, sql, types, ap);
    va_end(ap);
    return rc;
}

int db_exec(ctl_db *db, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    int rc = run_v(db, sql, types, ap);
    va_end(ap);
    return rc < 0 ? HONE_ESQL : HONE_OK;
}

static json_t *row_json(sqlite3_stmt *st)
{
    json_t *o = json_object();
    int n = sqlite3_column_count(st);
    for (int i = 0; i < n; i++) {
        const char *name = sqlite3_column_name(st, i);
        json_t *v;
        switch (sqlite3_column_type(st, i)) {
        case SQLITE_INTEGER:
            v = json_integer(sqlite3_column_int64(st, i));
            break;
        case SQLITE_FLOAT:
            v = json_real(sqlite3_column_double(st, i));
            break;
        case SQLITE_NULL:
            v = json_null();
            break;
        default:
            v = json_stringn((const char *)sqlite3_column_text(st, i),
                             (size_t)sqlite3_column_bytes(st, i));
            if (!v)
                v = json_null(); /* not UTF-8: never happens for what we store */
            break;
        }
        json_object_set_new_nocheck(o, name, v);
    }
    return o;
}

static int query(ctl_db *db, json_t **out, int all, const char *sql, const char *types, va_list ap)
{
    sqlite3_stmt *st = NULL;
    int cached = 0;
    int rc = prep(db, &st, &cached, sql, types, ap);
    if (rc)
        return rc;
    json_t *arr = all ? json_array() : NULL;
    *out = NULL;
    for (;;) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
            break;
        if (rc != SQLITE_ROW) {
            fprintf(stderr, "sql step failed: %s: %s\n", sqlite3_errmsg(db->h), sql);
            done(st, cached);
            json_decref(arr);
            return HONE_ESQL;
        }
        if (!all) {
            *out = row_json(st);
            break;
        }
        json_array_append_new(arr, row_json(st));
    }
    done(st, cached);
    if (all) {
        *out = arr;
        return HONE_OK;
    }
    return *out ? HONE_OK : HONE_ENOENT;
}

int db_row(ctl_db *db, json_t **out, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    int rc = query(db, out, 0, sql, types, ap);
    va_end(ap);
    return rc;
}

int db_rows(ctl_db *db, json_t **out, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    int rc = query(db, out, 1, sql, types, ap);
    va_end(ap);
    return rc;
}

int db_begin(ctl_db *db)
{
    if (!sqlite3_get_autocommit(db->h)) {
        /* A writer that forgot to flush the report batch: refuse rather than nest. */
        fprintf(stderr, "db_begin inside an open transaction\n");
        return HONE_ESQL;
    }
    return db_run(db, "BEGIN IMMEDIATE", NULL) < 0 ? HONE_ESQL : HONE_OK;
}

int db_commit(ctl_db *db)
{
    if (db_run(db, "COMMIT", NULL) >= 0)
        return HONE_OK;
    fprintf(stderr, "sql commit failed: %s\n", sqlite3_errmsg(db->h));
    db_rollback(db);
    return HONE_ESQL;
}

void db_rollback(ctl_db *db)
{
    if (!sqlite3_get_autocommit(db->h))
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
}

int db_savepoint(ctl_db *db)
{
    return db_run(db, "SAVEPOINT report", NULL) < 0 ? HONE_ESQL : HONE_OK;
}

int db_savepoint_release(ctl_db *db)
{
    return db_run(db, "RELEASE report", NULL) < 0 ? HONE_ESQL : HONE_OK;
}

void db_savepoint_undo(ctl_db *db)
{
    db_run(db, "ROLLBACK TO report", NULL);
    db_run(db, "RELEASE report", NULL);
}

const char *db_errmsg(ctl_db *db)
{
    return sqlite3_errmsg(db->h);
}

/* Applies migrations past the stored version, each with its version bump in one transaction,
 * so a crash mid-way leaves the store at a whole version. */
static int migrate(ctl_db *db, int *version)
{
    char *err = NULL;
    if (sqlite3_exec(db->h,
                     "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);"
                     "INSERT INTO schema_version SELECT 0 WHERE NOT EXISTS "
                     "(SELECT 1 FROM schema_version);",
                     NULL, NULL, &err) != SQLITE_OK)
        goto fail;
    json_t *row = NULL;
    if (db_row(db, &row, "SELECT version FROM schema_version", NULL) != HONE_OK)
        return HONE_ESQL;
    int v = (int)json_integer_value(json_object_get(row, "version"));
    json_decref(row);
    for (size_t i = (size_t)v; i < hone_migrations_count; i++) {
        if (db_begin(db) != HONE_OK)
            return HONE_ESQL;
        if (sqlite3_exec(db->h, hone_migrations[i], NULL, NULL, &err) != SQLITE_OK) {
            db_rollback(db);
            goto fail;
        }
        if (db_run(db, "UPDATE schema_version SET version = ?", "i", (int)i + 1) < 0 ||
            db_commit(db) != HONE_OK) {
            db_rollback(db);
            return HONE_ESQL;
        }
        v = (int)i + 1;
    }
    if (version)
        *version = v;
    return HONE_OK;
fail:
    fprintf(stderr, "migration failed: %s\n", err ? err : "?");
    sqlite3_free(err);
    return HONE_ESQL;
}

int db_open(const char *path, ctl_db **out, int *version)
{
    ctl_db *db = hone_xcalloc(1, sizeof *db);
    *out = NULL;
    if (sqlite3_open_v2(path, &db->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        fprintf(stderr, "cannot open %s: %s\n", path, db->h ? sqlite3_errmsg(db->h) : "no memory");
        goto fail;
    }
    sqlite3_busy_timeout(db->h, 5000);
    /* Foreign keys are enforced only once the migrations are in: a migration that rebuilds a
     * table (003) drops the old one, which with them on would cascade into the tables that
     * reference it. PRAGMA foreign_keys is a no-op inside a transaction, hence here. */
    if (sqlite3_exec(db->h,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=OFF;",
                     NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    if (migrate(db, version) != HONE_OK)
        goto fail;
    if (sqlite3_exec(db->h, "PRAGMA foreign_keys=ON;", NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    *out = db;
    return HONE_OK;
fail:
    db_close(db);
    return HONE_ESQL;
}

int db_cached(const ctl_db *db)
{
    return db ? (int)db->n : 0;
}

void db_close(ctl_db *db)
{
    if (!db)
        return;
    for (size_t i = 0; i < db->cap; i++)
        if (db->slots[i].sql) {
            sqlite3_finalize(db->slots[i].st);
            free(db->slots[i].sql);
        }
    free(db->slots);
    if (sqlite3_close(db->h) != SQLITE_OK)
        fprintf(stderr, "sqlite3_close: %s\n", sqlite3_errmsg(db->h));
    free(db);
}

int hone_controller_store_migrate(const char *db_path, int *version)
{
    ctl_db *db = NULL;
    int rc = db_open(db_path, &db, version);
    db_close(db);
    return rc;
}
