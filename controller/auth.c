/* Who is calling, and what they may write. Five kinds of bearer token:
 *   - the admin key (config auth.admin_key, alias auth.token, or HONE_ADMIN_KEY): every route, as
 *     the built-in user 'admin';
 *   - a login token "ht_<hex>" (POST /api/v1/login, from the admin key or a user's API key
 *     "hk_<hex>"): every route but the worker protocol, as that user (users.c filters by owner);
 *   - an API key "hk_<hex>" itself: only to mint a key (POST /api/v1/users/{id}/keys), which a
 *     user's token may not do, so that a token (kept by the CLI and the page, living a week) never
 *     outlives itself as a key; everywhere else a key is traded for a token at /api/v1/login;
 *   - the enrolment token (config auth.worker_token): registering a worker, nothing else;
 *   - a worker credential "<worker id>.<secret>", issued once by POST /api/v1/workers: the worker
 *     routes of that one worker (heartbeat, lease, report, complete, artifact upload of a job it
 *     holds). The store keeps only SHA-256 of the secret; it cannot be read back from the API.
 * Worker credentials are required with or without auth configured: without auth, anybody may
 * manage datasets and experiments (as the admin), but only a worker may speak for itself.
 * Keys and tokens are 256-bit random secrets, so the store keeps their SHA-256 only: a fast hash
 * is enough (nothing to brute-force), and a token is found by its hash with one indexed lookup,
 * whose timing says nothing about the secret. Never logs a secret. */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "ctl.h"
#include "store.h"
#include "util.h"
#include "web.h"

enum { SECRET_BYTES = 32 };

/* Routes that only a worker (for itself) may call; the handlers check which worker. */
static const char *const worker_routes[] = {
    "/api/v1/workers/{id}/heartbeat",
    "/api/v1/workers/{id}/lease",
    "/api/v1/jobs/{id}/report",
    "/api/v1/jobs/{id}/complete",
    "/api/v1/jobs/{id}/artifacts/{name}",
    "/api/v1/datasets/{id}/files",
    "/api/v1/datasets/{id}/files/{name}",
    "/api/v1/datasets/{id}/packed/{name}",
    "/api/v1/jobs/{id}/artifacts",
    "/api/v1/jobs/{id}/artifacts/{dir}/{name}",
    "/api/v1/jobs/{id}/input",
    "/api/v1/jobs/{id}/input/{name}",
};

static void hex(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

static int sha256_hex(const char *s, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (!EVP_Digest(s, strlen(s), md, &n, EVP_sha256(), NULL) || n != 32)
        return HONE_EIO;
    hex(md, 32, out);
    return HONE_OK;
}

static int bytes_equal(const char *a, const char *b, size_t n)
{
    return CRYPTO_memcmp(a, b, n) == 0;
}

int ctl_auth_secret_new(const char *prefix, char *secret, size_t len, char hash[65])
{
    unsigned char raw[SECRET_BYTES];
    char hx[2 * SECRET_BYTES + 1];
    if (RAND_bytes(raw, sizeof raw) != 1)
        return HONE_EIO;
    hex(raw, sizeof raw, hx);
    OPENSSL_cleanse(raw, sizeof raw);
    int rc = snprintf(secret, len, "%s%s", prefix, hx) >= (int)len ? HONE_ERANGE : HONE_OK;
    OPENSSL_cleanse(hx, sizeof hx);
    return rc ? rc : sha256_hex(secret, hash);
}

int ctl_auth_hash(const char *secret, char hash[65])
{
    return sha256_hex(secret, hash);
}

int ctl_worker_credential_new(const char *worker_id, char *token, size_t tokenlen, char hash[65])
{
    unsigned char raw[SECRET_BYTES];
    char secret[2 * SECRET_BYTES + 1];
    if (RAND_bytes(raw, sizeof raw) != 1)
        return HONE_EIO;
    hex(raw, sizeof raw, secret);
    OPENSSL_cleanse(raw, sizeof raw);
    int rc = sha256_hex(secret, hash);
    if (!rc && snprintf(token, tokenlen, "%s.%s", worker_id, secret) >= (int)tokenlen)
        rc = HONE_ERANGE;
    OPENSSL_cleanse(secret, sizeof secret);
    return rc;
}

/* The token of "Authorization: Bearer <token>", or NULL. */
static const char *bearer(const hone_http_req *req)
{
    const char *h = hone_http_req_header(req, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7))
        return NULL;
    h += 7;
    while (*h == ' ')
        h++;
    return *h ? h : NULL;
}

/* A worker credential: "<id>.<64 hex>"; writes the id. */
static int split_credential(const char *tok, char *id, size_t idlen, const char **secret)
{
    const char *dot = strrchr(tok, '.');
    if (!dot || dot == tok || (size_t)(dot - tok) >= idlen || strlen(dot + 1) != 2 * SECRET_BYTES)
        return 0;
    for (const char *p = dot + 1; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    memcpy(id, tok, (size_t)(dot - tok));
    id[dot - tok] = '\0';
    *secret = dot + 1;
    return 1;
}

static int token_is(const char *tok, const char *want)
{
    size_t n = strlen(want);
    return want && tok && strlen(tok) == n && bytes_equal(tok, want, n);
}

/* 401 with the challenge RFC 9110 asks for; msg says which credential to send. */
static void unauthorized(hone_http_res *res, const char *msg)
{
    hone_http_res_header(res, "WWW-Authenticate", "Bearer");
    hone_http_res_error(res, 401, "Authorization", "%s", msg);
}

/* A login token ("ht_" + 64 hex): 1 with its SHA-256 (hex) in hash; 0 for anything else. */
static int login_token_hash(const char *tok, char hash[65])
{
    return tok && !strncmp(tok, CTL_TOKEN_PREFIX, strlen(CTL_TOKEN_PREFIX)) &&
           strlen(tok) == strlen(CTL_TOKEN_PREFIX) + 2 * SECRET_BYTES && !sha256_hex(tok, hash);
}

/* Whether the admin-key hash a key or token was made under (NULL: none) is the current one. */
static int admin_key_current(hone_controller *c, const char *ak)
{
    return ak && c->admin_key_hash[0] && strlen(ak) == 64 && bytes_equal(ak, c->admin_key_hash, 64);
}

/* An admin's key minted under an admin key (directly, or below a key or token that was) is
 * admin power derived from that key: it ends when the admin key changes. A plain user's keys do
 * not (their power is the user's, not the admin key's): a rotation does not end every user's
 * access; an admin revokes or disables what the old key made (created_by, parent_key). */
static int stale_admin_power(hone_controller *c, const char *role, const char *ak)
{
    return ak && role && !strcmp(role, "admin") && !admin_key_current(c, ak);
}

int ctl_auth_key_check(hone_controller *c, const json_t *krow, const char **why)
{
    if (!json_is_null(json_object_get(krow, "revoked")))
        *why = "unknown or revoked API key";
    else if (!json_is_null(json_object_get(krow, "disabled")))
        *why = "the user of this API key is disabled: an admin may enable it again";
    else if (stale_admin_power(c, jstr(krow, "role"), jstr(krow, "admin_key")))
        *why = "API key minted with an admin key that has changed: ask an admin for a new key";
    else
        return HONE_OK;
    return HONE_EPERM;
}

/* The token's row while it is good; HONE_EPERM with *why when it is unknown, revoked (its key's
 * tokens are deleted with it), expired, made from an admin key that is not the current one (or
 * from a key minted under one), or its user is disabled. */
static int token_row(hone_controller *c, const char *hash, json_t **row, const char **why)
{
    int rc = store_token_get(c->db, hash, row);
    if (rc == HONE_ENOENT) {
        *why = "unknown or revoked token: run hone login --url URL --key-file FILE";
        return HONE_EPERM;
    }
    if (rc)
        return rc;
    if (jnum(*row, "expires") <= ctl_now()) {
        *why = "token expired: run hone login --url URL --key-file FILE";
    } else if (!json_is_null(json_object_get(*row, "disabled"))) {
        *why = "this user is disabled: an admin may enable it again";
    } else if (!jstr(*row, "key_id") && !admin_key_current(c, jstr(*row, "admin_key"))) {
        /* made from an admin key that is no longer the one (or with no auth configured) */
        *why = "token made from an admin key that has changed: run hone login --url URL "
               "--key-file FILE";
    } else if (jstr(*row, "key_id") &&
               (!json_is_null(json_object_get(*row, "key_revoked")) ||
                stale_admin_power(c, jstr(*row, "role"), jstr(*row, "key_admin_key")))) {
        *why = "token of a revoked API key, or of one minted with an admin key that has "
               "changed: log in with a live key";
    } else {
        return HONE_OK;
    }
    json_decref(*row);
    *row = NULL;
    return HONE_EPERM;
}

/* An API key presented itself ("hk_" + 64 hex): its user, when the key may be used. */
static int key_caller(hone_controller *c, const char *tok, ctl_caller *who, const char **why)
{
    char hash[65];
    json_t *row = NULL;
    if (strlen(tok) != strlen(CTL_KEY_PREFIX) + 2 * SECRET_BYTES || sha256_hex(tok, hash))
        return HONE_EPERM;
    int rc = store_key_by_hash(c->db, hash, &row);
    if (rc == HONE_ENOENT) {
        *why = "unknown or revoked API key";
        return HONE_EPERM;
    }
    if (!rc)
        rc = ctl_auth_key_check(c, row, why);
    if (!rc) {
        who->kind = !strcmp(jstr(row, "role"), "admin") ? CTL_CALLER_ADMIN : CTL_CALLER_USER;
        who->via = CTL_VIA_KEY;
        snprintf(who->user_id, sizeof who->user_id, "%s", jstr(row, "user_id"));
        snprintf(who->key_id, sizeof who->key_id, "%s", jstr(row, "id"));
        snprintf(who->admin_key, sizeof who->admin_key, "%s",
                 jstr(row, "admin_key") ? jstr(row, "admin_key") : "");
    }
    json_decref(row);
    return rc;
}

int ctl_auth_token_hash(const hone_http_req *req, char hash[65])
{
    return login_token_hash(bearer(req), hash);
}

int ctl_auth_token_check(hone_controller *c, const char *hash, const char **why)
{
    json_t *row = NULL;
    int rc = token_row(c, hash, &row, why);
    json_decref(row);
    return rc;
}

int ctl_auth_caller(hone_controller *c, const hone_http_req *req, ctl_caller *who, const char **why)
{
    const char *tok = bearer(req), *secret;
    char id[64], hash[65];
    json_t *row = NULL;
    memset(who, 0, sizeof *who);
    *why = "missing or bad bearer token: run hone login --url URL --key-file FILE";
    if (!c->cfg.auth_token || token_is(tok, c->cfg.auth_token)) {
        who->kind = CTL_CALLER_ADMIN;
        snprintf(who->user_id, sizeof who->user_id, "%s", CTL_ADMIN_USER);
        if (c->cfg.auth_token) {
            who->via = CTL_VIA_ADMIN_KEY;
            snprintf(who->admin_key, sizeof who->admin_key, "%s", c->admin_key_hash);
        }
        return HONE_OK;
    }
    if (tok && !strncmp(tok, CTL_KEY_PREFIX, strlen(CTL_KEY_PREFIX)))
        return key_caller(c, tok, who, why);
    if (c->cfg.worker_token && token_is(tok, c->cfg.worker_token)) {
        who->kind = CTL_CALLER_ENROL;
        return HONE_OK;
    }
    if (tok && split_credential(tok, id, sizeof id, &secret)) {
        who->kind = CTL_CALLER_WORKER; /* checked against the store by the worker routes */
        return HONE_OK;
    }
    if (!login_token_hash(tok, hash))
        return HONE_EPERM;
    int rc = token_row(c, hash, &row, why);
    if (rc)
        return rc;
    who->kind = !strcmp(jstr(row, "role"), "admin") ? CTL_CALLER_ADMIN : CTL_CALLER_USER;
    who->via = CTL_VIA_TOKEN;
    snprintf(who->user_id, sizeof who->user_id, "%s", jstr(row, "user_id"));
    const char *kid = jstr(row, "key_id"),
               *ak = kid ? jstr(row, "key_admin_key") : jstr(row, "admin_key");
    snprintf(who->key_id, sizeof who->key_id, "%s", kid ? kid : "");
    snprintf(who->admin_key, sizeof who->admin_key, "%s", ak ? ak : "");
    json_decref(row);
    return HONE_OK;
}

const char *ctl_auth_owner(hone_controller *c, const hone_http_req *req, char buf[64])
{
    ctl_caller who;
    const char *why;
    buf[0] = '\0'; /* on failure (a store error, a token that expired since the filter): an owner
                    * no row has, so the route finds nothing rather than everything */
    if (ctl_auth_caller(c, req, &who, &why))
        return buf;
    if (who.kind != CTL_CALLER_USER)
        return NULL; /* an admin or a worker, who see every row */
    snprintf(buf, 64, "%s", who.user_id);
    return buf;
}

const char *ctl_auth_user(hone_controller *c, const hone_http_req *req, char buf[64])
{
    ctl_caller who;
    const char *why;
    buf[0] = '\0';
    if (ctl_auth_caller(c, req, &who, &why))
        return NULL; /* no longer good (disabled, revoked, expired): never "admin" by default */
    snprintf(buf, 64, "%s", who.user_id[0] ? who.user_id : CTL_ADMIN_USER);
    return buf;
}

int ctl_auth_recheck(hone_controller *c, hone_http_req *req, hone_http_res *res)
{
    ctl_caller who;
    const char *why = NULL;
    int rc = ctl_auth_caller(c, req, &who, &why);
    if (rc == HONE_EPERM)
        hone_http_res_error(res, 401, "Authorization", "%s", why ? why : "not authenticated");
    else if (rc)
        ctl_res_store_error(c, res);
    return rc;
}

int ctl_auth_is_admin(hone_controller *c, const hone_http_req *req)
{
    ctl_caller who;
    const char *why;
    return c->cfg.auth_token && !ctl_auth_caller(c, req, &who, &why) &&
           who.kind == CTL_CALLER_ADMIN;
}

int ctl_auth_admin_only(hone_controller *c, hone_http_req *req, hone_http_res *res,
                        const char *what)
{
    if (!c->cfg.auth_token || ctl_auth_is_admin(c, req))
        return 0;
    hone_http_res_error(res, 403, "Authorization", "%s covers every user's work: admins only",
                        what);
    return 1;
}

static int is_worker_route(const hone_http_req *req)
{
    const char *route = hone_http_req_route(req);
    for (size_t i = 0; route && i < HONE_ARRAY_LEN(worker_routes); i++)
        if (!strcmp(route, worker_routes[i]))
            return 1;
    return 0;
}

int ctl_auth_filter(hone_controller *c, hone_http_req *req, hone_http_res *res)
{
    if (!c->cfg.auth_token)
        return 0;
    const char *path = hone_http_req_path(req), *route = hone_http_req_route(req), *why;
    const char *method = hone_http_req_method(req);
    ctl_caller who;
    if (!strcmp(path, "/healthz") || !strcmp(path, "/readyz") ||
        !strcmp(path, "/api/v1/openapi.yaml") || ctl_web_route(route))
        return 0; /* the page holds no data: it asks for the token and sends it with each call */
    if (route && !strcmp(route, "/api/v1/login"))
        return 0; /* the key in the body is the credential */
    int rc = ctl_auth_caller(c, req, &who, &why);
    if (rc == HONE_EPERM) {
        unauthorized(res, why);
        return 1;
    }
    if (rc) {
        ctl_res_store_error(c, res);
        return 1;
    }
    int registering = route && !strcmp(route, "/api/v1/workers") && !strcmp(method, "POST");
    if (who.via == CTL_VIA_KEY &&
        !(route && !strcmp(route, "/api/v1/users/{id}/keys") && !strcmp(method, "POST"))) {
        unauthorized(res, "an API key is sent only to POST /api/v1/login (for a token) or to mint "
                          "a key: run hone login --url URL --key-file FILE");
        return 1;
    }
    switch (who.kind) {
    case CTL_CALLER_ADMIN:
        return 0;
    case CTL_CALLER_ENROL:
        if (registering)
            return 0;
        hone_http_res_error(res, 403, "Authorization",
                            "the worker enrolment token may only register workers");
        return 1;
    case CTL_CALLER_WORKER:
        if (is_worker_route(req))
            return 0; /* the handler checks the credential against the store */
        hone_http_res_error(res, 403, "Authorization",
                            "a worker credential may only call that worker's routes");
        return 1;
    default: /* a user: everything but registering workers; users.c checks admin routes */
        if (!registering)
            return 0;
        hone_http_res_error(res, 403, "Authorization",
                            "only the admin or the enrolment token may register workers");
        return 1;
    }
}

int ctl_auth_worker(hone_controller *c, hone_http_req *req, hone_http_res *res, const char *wid,
                    const char *field)
{
    json_t *row = NULL;
    const char *tok = bearer(req), *secret = NULL;
    char id[64], hash[65];
    int rc = store_worker_secret(c->db, wid, &row);
    if (rc == HONE_ENOENT) {
        hone_http_res_error(res, 404, field, "unknown worker %s: register again", wid);
        goto fail;
    }
    if (rc) {
        ctl_res_store_error(c, res);
        goto fail;
    }
    rc = HONE_EPERM;
    if (!tok || !split_credential(tok, id, sizeof id, &secret)) {
        unauthorized(res, "worker credential required: send the token that registration "
                          "returned as 'Authorization: Bearer <token>'");
        goto fail;
    }
    if (strcmp(id, wid) != 0) {
        hone_http_res_error(res, 403, field, "the credential is worker %s's, not %s's", id, wid);
        goto fail;
    }
    const char *stored = jstr(row, "secret_hash");
    if (!stored || strlen(stored) != 64 || sha256_hex(secret, hash) ||
        !bytes_equal(hash, stored, 64)) {
        unauthorized(res, "bad worker credential: register again");
        goto fail;
    }
    rc = HONE_OK;
fail:
    json_decref(row);
    return rc;
}

int ctl_auth_worker_any(hone_controller *c, hone_http_req *req, hone_http_res *res, char *wid,
                        size_t widlen)
{
    const char *tok = bearer(req), *secret;
    char id[64];
    if (!tok || !split_credential(tok, id, sizeof id, &secret)) {
        unauthorized(res, "only the worker holding this job's lease (or an admin) may write "
                          "here: send its credential as 'Authorization: Bearer <token>'");
        return HONE_EPERM;
    }
    int rc = ctl_auth_worker(c, req, res, id, "Authorization");
    if (!rc)
        snprintf(wid, widlen, "%s", id);
    return rc;
}
