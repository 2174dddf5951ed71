/* Users, API keys and login (issues 10, 26): POST /api/v1/login trades a key for a token; admins
 * create, disable and enable users and mint any user's keys; anyone logged in reads /users/me,
 * lists and revokes their own keys, and mints one by presenting a live key of theirs (a token
 * may not: auth.c). Keys record who minted them and from which key; revoking a key revokes what
 * it minted. Secrets leave here once, in the reply that creates them; only their hashes are
 * stored (auth.c says why SHA-256 is enough). Never logs a secret. */
#include <math.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "ctl.h"
#include "routes.h"
#include "store.h"
#include "text.h"
#include "util.h"

enum { SECRET_LEN = 3 + 64 + 1, PREFIX_LEN = 3 + 8 };

static json_t *time_or_null(const json_t *row, const char *key)
{
    char ts[32];
    json_t *v = json_object_get(row, key);
    if (!json_is_number(v))
        return json_null();
    ctl_time_str(json_number_value(v), ts, sizeof ts);
    return json_string(ts);
}

static json_t *user_json(const json_t *row)
{
    char ts[32];
    ctl_time_str(jnum(row, "created"), ts, sizeof ts);
    return json_pack("{s:s,s:s,s:s,s:s,s:o}", "id", jstr(row, "id"), "name", jstr(row, "name"),
                     "role", jstr(row, "role"), "created", ts, "disabled",
                     time_or_null(row, "disabled"));
}

static json_t *key_json(const json_t *row)
{
    char ts[32];
    ctl_time_str(jnum(row, "created"), ts, sizeof ts);
    return json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:s?,s:s?}", "id", jstr(row, "id"), "user_id",
                     jstr(row, "user_id"), "prefix", jstr(row, "prefix"), "created", ts,
                     "last_used", time_or_null(row, "last_used"), "revoked",
                     time_or_null(row, "revoked"), "created_by", jstr(row, "created_by"),
                     "parent_key", jstr(row, "parent_key"));
}

/* Why a user name is refused, or NULL: invalid UTF-8, C0/C1 controls, bidi overrides, embeddings,
 * isolates and marks, line separators and zero-width characters (a name that prints as another,
 * or rewrites the terminal or the page it is shown on). */
static const char *name_refused(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    for (int len; *p; p += len) {
        long cp = hone_utf8_next(p, &len);
        if (cp < 0)
            return "is not valid UTF-8";
        switch (hone_text_classify(cp)) {
        case HONE_TEXT_CONTROL:
            return "holds a control character";
        case HONE_TEXT_BIDI:
            return "holds a bidirectional control (a right-to-left override or the like)";
        case HONE_TEXT_LINE_SEP:
            return "holds a line separator";
        case HONE_TEXT_ZERO_WIDTH:
            return "holds a zero-width character";
        default:
            break;
        }
    }
    return NULL;
}

/* The caller, or its answer (the filter let it in, so only a store error is left). */
static int caller(hone_controller *c, hone_http_req *req, hone_http_res *res, ctl_caller *who)
{
    const char *why;
    int rc = ctl_auth_caller(c, req, who, &why);
    if (rc == HONE_EPERM)
        hone_http_res_error(res, 401, "Authorization", "%s", why);
    else if (rc)
        ctl_res_store_error(c, res);
    else if (who->kind != CTL_CALLER_ADMIN && who->kind != CTL_CALLER_USER) {
        hone_http_res_error(res, 403, "Authorization", "log in as a user for this route");
        rc = HONE_EPERM;
    }
    return rc;
}

static int require_admin(hone_controller *c, hone_http_req *req, hone_http_res *res)
{
    ctl_caller who;
    int rc = caller(c, req, res, &who);
    if (!rc && who.kind != CTL_CALLER_ADMIN) {
        hone_http_res_error(res, 403, "Authorization", "only an admin may manage users");
        rc = HONE_EPERM;
    }
    return rc;
}

/* The user {id} names ("me": the caller), into *row; others' only for admins (403), unknown: 404.
 */
static int target_user(hone_controller *c, hone_http_req *req, hone_http_res *res, json_t **row)
{
    ctl_caller who;
    const char *id = hone_http_req_param(req, "id");
    int rc = caller(c, req, res, &who);
    if (rc)
        return rc;
    if (!strcmp(id, "me"))
        id = who.user_id;
    else if (who.kind != CTL_CALLER_ADMIN && strcmp(id, who.user_id)) {
        hone_http_res_error(res, 404, "id", "no user %s", id); /* others' ids are not shown */
        return HONE_ENOENT;
    }
    rc = store_user_get(c->db, id, row);
    if (rc == HONE_ENOENT)
        hone_http_res_error(res, 404, "id", "no user %s", id);
    else if (rc)
        ctl_res_store_error(c, res);
    return rc;
}

static void login(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    static const hone_json_field fields[] = {
        {.name = "key", .type = HONE_JSON_STRING, .required = 1, .min_len = 1, .max_len = 256}};
    json_t *body = hone_http_req_json(req, res), *user = NULL, *krow = NULL;
    char token[SECRET_LEN], thash[65], khash[65], ts[32];
    const char *key_id = NULL, *why = NULL;
    if (!body || hone_json_check(body, fields, HONE_ARRAY_LEN(fields), res))
        goto done;
    const char *key = jstr(body, "key");
    size_t n = strlen(key);
    int rc;
    if (c->cfg.auth_token && n == strlen(c->cfg.auth_token) &&
        CRYPTO_memcmp(key, c->cfg.auth_token, n) == 0) {
        rc = store_user_get(c->db, CTL_ADMIN_USER, &user);
    } else {
        rc = ctl_auth_hash(key, khash);
        if (!rc && (rc = store_key_by_hash(c->db, khash, &krow)) == HONE_OK &&
            ctl_auth_key_check(c, krow, &why))
            rc = HONE_EPERM;
        if ((rc == HONE_ENOENT || rc == HONE_EPERM) && !c->cfg.auth_token)
            rc = store_user_get(c->db, CTL_ADMIN_USER, &user); /* no auth: everyone is admin */
        else if (!rc) {
            key_id = jstr(krow, "id");
            rc = store_user_get(c->db, jstr(krow, "user_id"), &user);
        }
    }
    if (rc == HONE_EPERM && !json_is_null(json_object_get(krow, "disabled"))) {
        hone_http_res_error(res, 403, "key", "user %s is disabled: an admin may enable it again",
                            jstr(krow, "name"));
        goto done;
    }
    if (rc == HONE_ENOENT || rc == HONE_EPERM) {
        hone_http_res_header(res, "WWW-Authenticate", "Bearer");
        hone_http_res_error(res, 401, "key", "%s",
                            rc == HONE_EPERM ? why : "unknown or revoked API key");
        goto done;
    }
    double now = ctl_now(),
           expires = now + (c->cfg.token_ttl_seconds > 0 ? c->cfg.token_ttl_seconds : 7 * 86400);
    if (rc || (rc = ctl_auth_secret_new(CTL_TOKEN_PREFIX, token, sizeof token, thash)) ||
        (rc = store_tokens_expire(c->db, now)) ||
        (c->cfg.auth_token &&
         (rc = store_tokens_trim(c->db, key_id, key_id ? NULL : c->admin_key_hash,
                                 CTL_MAX_TOKENS_PER_KEY - 1))) ||
        (rc = store_token_insert(c->db, thash, jstr(user, "id"), key_id,
                                 key_id || !c->cfg.auth_token ? NULL : c->admin_key_hash, now,
                                 expires)) ||
        (key_id && (rc = store_key_touch(c->db, key_id, now)))) {
        ctl_res_store_error(c, res);
        goto done;
    }
    ctl_time_str(expires, ts, sizeof ts);
    ctl_log(c, "info", "login", json_pack("{s:s,s:s?}", "user", jstr(user, "id"), "key", key_id));
    hone_http_res_json(res, 200,
                       json_pack("{s:s,s:s,s:f,s:o}", "token", token, "expires_at", ts,
                                 "expires_at_unix", expires, "user", user_json(user)));
    OPENSSL_cleanse(token, sizeof token);
done:
    json_decref(krow);
    json_decref(user);
    json_decref(body);
}

static void users_create(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    static const char *const roles[] = {"admin", "user", NULL};
    static const hone_json_field fields[] = {
        {.name = "name", .type = HONE_JSON_STRING, .required = 1, .min_len = 1, .max_len = 64},
        {.name = "role", .type = HONE_JSON_STRING, .enum_values = roles}};
    json_t *body = NULL, *row = NULL, *dup = NULL;
    char id[64];
    if (require_admin(c, req, res))
        return;
    body = hone_http_req_json(req, res);
    if (!body || hone_json_check(body, fields, HONE_ARRAY_LEN(fields), res))
        goto done;
    const char *name = jstr(body, "name"), *role = jstr(body, "role"), *bad = name_refused(name);
    if (bad) {
        hone_http_res_error(res, 422, "name", "the name %s", bad);
        goto done;
    }
    int rc = store_user_by_name(c->db, name, &dup);
    if (rc == HONE_OK) {
        hone_http_res_error(res, 409, "name", "a user named %s exists (%s; names ignore case)",
                            jstr(dup, "name"), jstr(dup, "id"));
        goto done;
    }
    ctl_new_id(c, "usr", id, sizeof id);
    if (rc != HONE_ENOENT ||
        (rc = store_user_insert(c->db, id, name, role ? role : "user", ctl_now())) ||
        (rc = store_user_get(c->db, id, &row))) {
        ctl_res_store_error(c, res);
        goto done;
    }
    hone_http_res_json(res, 201, user_json(row));
done:
    json_decref(dup);
    json_decref(row);
    json_decref(body);
}

static void users_list(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    json_t *rows = NULL, *r;
    size_t i;
    ctl_page pg;
    if (require_admin(c, req, res) || ctl_page_parse(req, res, &pg))
        return;
    if (store_users_list(c->db, &rows, pg.limit + 1, pg.offset)) {
        ctl_res_store_error(c, res);
        return;
    }
    json_t *arr = json_array();
    json_array_foreach(rows, i, r) json_array_append_new(arr, user_json(r));
    json_decref(rows);
    hone_http_res_json(res, 200, ctl_page_body("users", arr, &pg));
}

static void users_get(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    json_t *user = NULL;
    if (target_user(c, req, res, &user))
        return;
    hone_http_res_json(res, 200, user_json(user));
    json_decref(user);
}

/* Who may mint a key, and where it comes from: the admin key, an admin's token, or a live API
 * key presented itself (its user's keys; an admin's, anyone's). A user's token may not: a token
 * lives a week in the CLI's config and the page's storage, and a key minted with it would outlive
 * it (and, before issue 26, the key it came from). 403 otherwise. */
static int mint_origin(hone_controller *c, hone_http_req *req, hone_http_res *res, ctl_caller *who,
                       store_key_origin *from)
{
    int rc = caller(c, req, res, who);
    if (rc)
        return rc;
    if (c->cfg.auth_token && who->via == CTL_VIA_TOKEN && who->kind != CTL_CALLER_ADMIN) {
        hone_http_res_error(res, 403, "Authorization",
                            "minting an API key needs one of your live API keys, not a login "
                            "token: send the key itself as 'Authorization: Bearer hk_...' "
                            "(hone key create --key-file FILE), or ask an admin");
        return HONE_EPERM;
    }
    from->created_by = who->user_id;
    from->parent_key = who->key_id[0] ? who->key_id : NULL;
    from->admin_key = who->admin_key[0] ? who->admin_key : NULL;
    return HONE_OK;
}

static void keys_create(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    json_t *user = NULL;
    ctl_caller who;
    store_key_origin from;
    char key[SECRET_LEN], hash[65], prefix[PREFIX_LEN + 1], id[64], ts[32];
    int live = 0;
    if (target_user(c, req, res, &user)) /* first: another user's id is 404, whatever the rest */
        return;
    if (mint_origin(c, req, res, &who, &from))
        goto done;
    const char *uid = jstr(user, "id");
    if (!json_is_null(json_object_get(user, "disabled"))) {
        hone_http_res_error(res, 409, "id", "user %s is disabled: enable it first", uid);
        goto done;
    }
    if (store_keys_live(c->db, uid, &live)) {
        ctl_res_store_error(c, res);
        goto done;
    }
    if (live >= CTL_MAX_KEYS_PER_USER) {
        hone_http_res_error(res, 409, "keys",
                            "user %s has %d live API keys, the most allowed: revoke one first", uid,
                            live);
        goto done;
    }
    double now = ctl_now();
    ctl_new_id(c, "key", id, sizeof id);
    if (ctl_auth_secret_new(CTL_KEY_PREFIX, key, sizeof key, hash)) {
        ctl_res_store_error(c, res);
        goto done;
    }
    snprintf(prefix, sizeof prefix, "%.*s", PREFIX_LEN, key);
    if (store_key_insert(c->db, id, uid, prefix, hash, now, &from) ||
        (who.via == CTL_VIA_KEY && store_key_touch(c->db, who.key_id, now))) {
        ctl_res_store_error(c, res);
        goto done;
    }
    ctl_time_str(now, ts, sizeof ts);
    ctl_log(c, "info", "key_minted",
            json_pack("{s:s,s:s,s:s,s:s?}", "user", uid, "key", id, "by", from.created_by,
                      "parent_key", from.parent_key));
    hone_http_res_json(res, 201,
                       json_pack("{s:s,s:s,s:s,s:s,s:s,s:n,s:n,s:s,s:s?}", "id", id, "key", key,
                                 "user_id", uid, "prefix", prefix, "created", ts, "last_used",
                                 "revoked", "created_by", from.created_by, "parent_key",
                                 from.parent_key));
done:
    OPENSSL_cleanse(key, sizeof key);
    json_decref(user);
}

static void keys_list(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    json_t *user = NULL, *rows = NULL, *r;
    size_t i;
    ctl_page pg;
    if (ctl_page_parse(req, res, &pg) || target_user(c, req, res, &user))
        return;
    if (store_keys_list(c->db, jstr(user, "id"), &rows, pg.limit + 1, pg.offset)) {
        ctl_res_store_error(c, res);
        goto done;
    }
    json_t *arr = json_array();
    json_array_foreach(rows, i, r) json_array_append_new(arr, key_json(r));
    hone_http_res_json(res, 200, ctl_page_body("keys", arr, &pg));
done:
    json_decref(rows);
    json_decref(user);
}

static void keys_revoke(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    json_t *user = NULL;
    const char *kid = hone_http_req_param(req, "key_id");
    if (target_user(c, req, res, &user))
        return;
    int n = db_begin(c->db) ? HONE_ESQL : store_key_revoke(c->db, jstr(user, "id"), kid, ctl_now());
    if (n > 0 && db_commit(c->db))
        n = HONE_ESQL;
    else if (n <= 0)
        db_rollback(c->db);
    if (n < 0)
        ctl_res_store_error(c, res);
    else if (n == 0)
        hone_http_res_error(res, 404, "key_id", "user %s has no key %s", jstr(user, "id"), kid);
    else {
        ctl_log(c, "info", "key_revoked",
                json_pack("{s:s,s:s,s:i}", "user", jstr(user, "id"), "key", kid, "keys", n));
        hone_http_res_empty(res, 204);
    }
    json_decref(user);
}

/* PATCH /api/v1/users/{id} {"disabled": true|false}, admins only. Disabling refuses the user's
 * tokens and keys at once, saying why (open streams end at their next check); its rows, keys and
 * tokens stay. Enabling gives the keys back (revoke any that leaked), not the tokens, which are
 * deleted then: the user logs in again. The built-in admin (the admin key) is never disabled:
 * rotate the admin key instead. */
static void users_patch(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    static const hone_json_field fields[] = {
        {.name = "disabled", .type = HONE_JSON_BOOL, .required = 1}};
    json_t *body = NULL, *row = NULL;
    const char *id = hone_http_req_param(req, "id");
    if (require_admin(c, req, res))
        return;
    body = hone_http_req_json(req, res);
    if (!body || hone_json_check(body, fields, HONE_ARRAY_LEN(fields), res))
        goto done;
    int off = json_is_true(json_object_get(body, "disabled"));
    if (!strcmp(id, CTL_ADMIN_USER) || !strcmp(id, "me")) {
        hone_http_res_error(res, 422, "id",
                            "the built-in admin (and yourself, as 'me') cannot be disabled: "
                            "rotate the admin key instead");
        goto done;
    }
    int rc = store_user_get(c->db, id, &row);
    if (rc == HONE_ENOENT) {
        hone_http_res_error(res, 404, "id", "no user %s", id);
        goto done;
    }
    int was_off = !json_is_null(json_object_get(row, "disabled"));
    json_decref(row);
    row = NULL;
    if (rc ||
        (off != was_off &&
         (db_begin(c->db) || store_user_disable(c->db, id, off ? ctl_now() : NAN) < 0 ||
          db_commit(c->db))) ||
        store_user_get(c->db, id, &row)) {
        db_rollback(c->db);
        ctl_res_store_error(c, res);
        goto done;
    }
    if (off != was_off)
        ctl_log(c, "info", off ? "user_disabled" : "user_enabled", json_pack("{s:s}", "user", id));
    hone_http_res_json(res, 200, user_json(row));
done:
    json_decref(row);
    json_decref(body);
}

int ctl_routes_users(hone_controller *c)
{
    int rc = 0;
    rc |= hone_http_route(c->http, "POST", "/api/v1/login", login, c);
    rc |= hone_http_route(c->http, "POST", "/api/v1/users", users_create, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/users", users_list, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/users/{id}", users_get, c);
    rc |= hone_http_route(c->http, "PATCH", "/api/v1/users/{id}", users_patch, c);
    rc |= hone_http_route(c->http, "POST", "/api/v1/users/{id}/keys", keys_create, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/users/{id}/keys", keys_list, c);
    rc |= hone_http_route(c->http, "DELETE", "/api/v1/users/{id}/keys/{key_id}", keys_revoke, c);
    return rc;
}
