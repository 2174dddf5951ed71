/* Users, API keys and login (issue 10): POST /api/v1/login trades a key for a token; admins
 * create users and any user's keys; anyone logged in reads /users/me and manages their own keys
 * through /users/me/keys. Secrets leave here once, in the reply that creates them; only their
 * hashes are stored (auth.c says why SHA-256 is enough). Never logs a secret. */
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "ctl.h"
#include "routes.h"
#include "store.h"
#include "util.h"

enum { SECRET_LEN = 3 + 64 + 1, PREFIX_LEN = 3 + 8 };

static json_t *user_json(const json_t *row)
{
    char ts[32];
    ctl_time_str(jnum(row, "created"), ts, sizeof ts);
    return json_pack("{s:s,s:s,s:s,s:s}", "id", jstr(row, "id"), "name", jstr(row, "name"), "role",
                     jstr(row, "role"), "created", ts);
}

static json_t *time_or_null(const json_t *row, const char *key)
{
    char ts[32];
    json_t *v = json_object_get(row, key);
    if (!json_is_number(v))
        return json_null();
    ctl_time_str(json_number_value(v), ts, sizeof ts);
    return json_string(ts);
}

static json_t *key_json(const json_t *row)
{
    char ts[32];
    ctl_time_str(jnum(row, "created"), ts, sizeof ts);
    return json_pack("{s:s,s:s,s:s,s:s,s:o,s:o}", "id", jstr(row, "id"), "user_id",
                     jstr(row, "user_id"), "prefix", jstr(row, "prefix"), "created", ts,
                     "last_used", time_or_null(row, "last_used"), "revoked",
                     time_or_null(row, "revoked"));
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
    const char *key_id = NULL;
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
            !json_is_null(json_object_get(krow, "revoked")))
            rc = HONE_ENOENT;
        if (rc == HONE_ENOENT && !c->cfg.auth_token)
            rc = store_user_get(c->db, CTL_ADMIN_USER, &user); /* no auth: everyone is admin */
        else if (!rc) {
            key_id = jstr(krow, "id");
            rc = store_user_get(c->db, jstr(krow, "user_id"), &user);
        }
    }
    if (rc == HONE_ENOENT) {
        hone_http_res_header(res, "WWW-Authenticate", "Bearer");
        hone_http_res_error(res, 401, "key", "unknown or revoked API key");
        goto done;
    }
    double now = ctl_now(),
           expires = now + (c->cfg.token_ttl_seconds > 0 ? c->cfg.token_ttl_seconds : 7 * 86400);
    if (rc || (rc = ctl_auth_secret_new(CTL_TOKEN_PREFIX, token, sizeof token, thash)) ||
        (rc = store_tokens_expire(c->db, now)) ||
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
    const char *name = jstr(body, "name"), *role = jstr(body, "role");
    int rc = store_user_by_name(c->db, name, &dup);
    if (rc == HONE_OK) {
        hone_http_res_error(res, 409, "name", "a user named %s exists (%s)", name, jstr(dup, "id"));
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

static void keys_create(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    json_t *user = NULL;
    char key[SECRET_LEN], hash[65], prefix[PREFIX_LEN + 1], id[64], ts[32];
    if (target_user(c, req, res, &user))
        return;
    double now = ctl_now();
    ctl_new_id(c, "key", id, sizeof id);
    if (ctl_auth_secret_new(CTL_KEY_PREFIX, key, sizeof key, hash)) {
        ctl_res_store_error(c, res);
        goto done;
    }
    snprintf(prefix, sizeof prefix, "%.*s", PREFIX_LEN, key);
    if (store_key_insert(c->db, id, jstr(user, "id"), prefix, hash, now)) {
        ctl_res_store_error(c, res);
        goto done;
    }
    ctl_time_str(now, ts, sizeof ts);
    hone_http_res_json(res, 201,
                       json_pack("{s:s,s:s,s:s,s:s,s:s,s:n,s:n}", "id", id, "key", key, "user_id",
                                 jstr(user, "id"), "prefix", prefix, "created", ts, "last_used",
                                 "revoked"));
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
    int n = store_key_revoke(c->db, jstr(user, "id"), kid, ctl_now());
    if (n < 0)
        ctl_res_store_error(c, res);
    else if (n == 0)
        hone_http_res_error(res, 404, "key_id", "user %s has no key %s", jstr(user, "id"), kid);
    else {
        ctl_log(c, "info", "key_revoked",
                json_pack("{s:s,s:s}", "user", jstr(user, "id"), "key", kid));
        hone_http_res_empty(res, 204);
    }
    json_decref(user);
}

int ctl_routes_users(hone_controller *c)
{
    int rc = 0;
    rc |= hone_http_route(c->http, "POST", "/api/v1/login", login, c);
    rc |= hone_http_route(c->http, "POST", "/api/v1/users", users_create, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/users", users_list, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/users/{id}", users_get, c);
    rc |= hone_http_route(c->http, "POST", "/api/v1/users/{id}/keys", keys_create, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/users/{id}/keys", keys_list, c);
    rc |= hone_http_route(c->http, "DELETE", "/api/v1/users/{id}/keys/{key_id}", keys_revoke, c);
    return rc;
}
