/* The store's statements on tables users, api_keys and tokens (migration 007). Keys and tokens
 * arrive here already hashed (auth.c): no secret is ever bound to a statement. Statements only:
 * transactions are the caller's (store.h). */
#include "store.h"

int store_user_insert(ctl_db *db, const char *id, const char *name, const char *role, double now)
{
    return db_exec(db, "INSERT INTO users(id,name,role,created) VALUES(?,?,?,?)", "sssd", id, name,
                   role, now);
}

int store_user_get(ctl_db *db, const char *id, json_t **row)
{
    return db_row(db, row, "SELECT id,name,role,created FROM users WHERE id=?", "s", id);
}

int store_user_by_name(ctl_db *db, const char *name, json_t **row)
{
    return db_row(db, row, "SELECT id,name,role,created FROM users WHERE name=?", "s", name);
}

int store_users_list(ctl_db *db, json_t **rows, int limit, int offset)
{
    return db_rows(db, rows,
                   "SELECT id,name,role,created FROM users ORDER BY created, id LIMIT ? OFFSET ?",
                   "ii", limit, offset);
}

int store_key_insert(ctl_db *db, const char *id, const char *user_id, const char *prefix,
                     const char *key_hash, double now)
{
    return db_exec(db, "INSERT INTO api_keys(id,user_id,prefix,key_hash,created) VALUES(?,?,?,?,?)",
                   "ssssd", id, user_id, prefix, key_hash, now);
}

int store_keys_list(ctl_db *db, const char *user_id, json_t **rows, int limit, int offset)
{
    return db_rows(db, rows,
                   "SELECT id,user_id,prefix,created,last_used,revoked FROM api_keys "
                   "WHERE user_id=? ORDER BY created, id LIMIT ? OFFSET ?",
                   "sii", user_id, limit, offset);
}

int store_key_by_hash(ctl_db *db, const char *key_hash, json_t **row)
{
    return db_row(db, row,
                  "SELECT k.id,k.user_id,k.revoked,u.name,u.role FROM api_keys k "
                  "JOIN users u ON u.id=k.user_id WHERE k.key_hash=?",
                  "s", key_hash);
}

int store_key_touch(ctl_db *db, const char *id, double now)
{
    return db_exec(db, "UPDATE api_keys SET last_used=? WHERE id=?", "ds", now, id);
}

int store_key_revoke(ctl_db *db, const char *user_id, const char *id, double now)
{
    int n = db_run(db, "UPDATE api_keys SET revoked=COALESCE(revoked,?) WHERE id=? AND user_id=?",
                   "dss", now, id, user_id);
    if (n > 0 && db_exec(db, "DELETE FROM tokens WHERE key_id=?", "s", id))
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
                  "SELECT t.user_id,t.key_id,t.admin_key,t.expires,u.name,u.role FROM tokens t "
                  "JOIN users u ON u.id=t.user_id WHERE t.token_hash=?",
                  "s", token_hash);
}

int store_tokens_expire(ctl_db *db, double now)
{
    return db_exec(db, "DELETE FROM tokens WHERE expires<?", "d", now);
}
