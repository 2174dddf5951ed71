/* The store's statements on tables users, api_keys and tokens (migrations 007, 011, 012). Keys
 * and tokens
 * arrive here already hashed (auth.c): no secret is ever bound to a statement. Statements only:
 * transactions are the caller's (store.h). */
#include <math.h>

#include "store.h"
#include "util.h"

int store_user_insert(ctl_db *db, const char *id, const char *name, const char *role, double now)
{
    return db_exec(db, "INSERT INTO users(id,name,role,created) VALUES(?,?,?,?)", "sssd", id, name,
                   role, now);
}

int store_user_get(ctl_db *db, const char *id, json_t **row)
{
    return db_row(db, row, "SELECT id,name,role,created,disabled FROM users WHERE id=?", "s", id);
}

int store_user_by_name(ctl_db *db, const char *name, json_t **row)
{
    return db_row(db, row,
                  "SELECT id,name,role,created,disabled FROM users WHERE name=? COLLATE NOCASE",
                  "s", name);
}

int store_users_list(ctl_db *db, json_t **rows, int limit, int offset)
{
    return db_rows(db, rows,
                   "SELECT id,name,role,created,disabled FROM users ORDER BY created, id "
                   "LIMIT ? OFFSET ?",
                   "ii", limit, offset);
}

int store_user_disable(ctl_db *db, const char *id, double when)
{
    int n = db_run(db, "UPDATE users SET disabled=? WHERE id=?", "ds", when, id);
    if (n > 0 && !isfinite(when) && db_exec(db, "DELETE FROM tokens WHERE user_id=?", "s", id))
        return HONE_ESQL;
    return n;
}

int store_key_insert(ctl_db *db, const char *id, const char *user_id, const char *prefix,
                     const char *key_hash, double now, const store_key_origin *from)
{
    return db_exec(db,
                   "INSERT INTO api_keys(id,user_id,prefix,key_hash,created,created_by,parent_key,"
                   "admin_key) VALUES(?,?,?,?,?,?,?,?)",
                   "ssssdsss", id, user_id, prefix, key_hash, now, from->created_by,
                   from->parent_key, from->admin_key);
}

int store_keys_list(ctl_db *db, const char *user_id, json_t **rows, int limit, int offset)
{
    return db_rows(db, rows,
                   "SELECT id,user_id,prefix,created,last_used,revoked,created_by,parent_key "
                   "FROM api_keys WHERE user_id=? ORDER BY created, id LIMIT ? OFFSET ?",
                   "sii", user_id, limit, offset);
}

int store_keys_live(ctl_db *db, const char *user_id, int *n)
{
    json_t *row = NULL;
    int rc =
        db_row(db, &row, "SELECT count(*) AS n FROM api_keys WHERE user_id=? AND revoked IS NULL",
               "s", user_id);
    *n = rc ? 0 : (int)jint(row, "n");
    json_decref(row);
    return rc;
}

int store_key_by_hash(ctl_db *db, const char *key_hash, json_t **row)
{
    return db_row(db, row,
                  "SELECT k.id,k.user_id,k.revoked,k.admin_key,u.name,u.role,u.disabled "
                  "FROM api_keys k JOIN users u ON u.id=k.user_id WHERE k.key_hash=?",
                  "s", key_hash);
}

int store_key_touch(ctl_db *db, const char *id, double now)
{
    return db_exec(db, "UPDATE api_keys SET last_used=? WHERE id=?", "ds", now, id);
}

/* The key and every key below it (minted with it, or with one below it: parent_key), whoever
 * they belong to; a revoked key's children are revoked with it, so the walk stops at none. */
#define KEYS_BELOW                                                                                 \
    "WITH RECURSIVE below(id) AS (SELECT id FROM api_keys WHERE id=? AND user_id=? "               \
    "UNION SELECT k.id FROM api_keys k JOIN below b ON k.parent_key=b.id) "

int store_key_revoke(ctl_db *db, const char *user_id, const char *id, double now)
{
    int n =
        db_run(db, KEYS_BELOW "UPDATE api_keys SET revoked=COALESCE(revoked,?) WHERE id IN below",
               "ssd", id, user_id, now);
    if (n > 0 &&
        db_exec(db, KEYS_BELOW "DELETE FROM tokens WHERE key_id IN below", "ss", id, user_id))
        return HONE_ESQL;
    return n;
}

int store_token_insert(ctl_db *db, const char *token_hash, const char *user_id, const char *key_id,
                       const char *admin_key, double now, double expires)
{
    return db_exec(db,
                   "INSERT INTO tokens(token_hash,user_id,key_id,admin_key,created,expires) "
                   "VALUES(?,?,?,?,?,?)",
                   "ssssdd", token_hash, user_id, key_id, admin_key, now, expires);
}

int store_token_get(ctl_db *db, const char *token_hash, json_t **row)
{
    return db_row(db, row,
                  "SELECT t.user_id,t.key_id,t.admin_key,t.expires,u.name,u.role,u.disabled,"
                  "k.revoked AS key_revoked,k.admin_key AS key_admin_key FROM tokens t "
                  "JOIN users u ON u.id=t.user_id LEFT JOIN api_keys k ON k.id=t.key_id "
                  "WHERE t.token_hash=?",
                  "s", token_hash);
}

int store_tokens_trim(ctl_db *db, const char *key_id, const char *admin_key, int keep)
{
    return db_exec(db,
                   "DELETE FROM tokens WHERE token_hash IN (SELECT token_hash FROM tokens "
                   "WHERE key_id IS ? AND (key_id IS NOT NULL OR admin_key IS ?) "
                   "ORDER BY created DESC, token_hash LIMIT -1 OFFSET ?)",
                   "ssi", key_id, admin_key, keep);
}

int store_tokens_expire(ctl_db *db, double now)
{
    return db_exec(db, "DELETE FROM tokens WHERE expires<?", "d", now);
}
