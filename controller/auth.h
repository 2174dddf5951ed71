/* auth.c: who is calling. The admin key, login tokens of users ("ht_<hex>", made from API keys
 * "hk_<hex>"; SHA-256 stored), the enrolment token (registering only) and worker credentials
 * ("<worker_id>.<secret>", SHA-256 of the secret stored). */
#ifndef HONE_CTL_AUTH_H
#define HONE_CTL_AUTH_H

#include <stddef.h>

#include "controller.h"
#include "http.h"

#define CTL_ADMIN_USER "admin" /* the built-in user the admin key stands for (migration 007) */
#define CTL_KEY_PREFIX "hk_"   /* API keys */
#define CTL_TOKEN_PREFIX "ht_" /* login tokens */

enum {
    CTL_CALLER_ADMIN = 1, /* the admin key, an admin's token, or anyone without auth configured */
    CTL_CALLER_USER,      /* a user's token: sees only the user's own rows */
    CTL_CALLER_WORKER,    /* a worker credential (not yet checked against the store) */
    CTL_CALLER_ENROL,     /* the worker enrolment token */
};
enum {
    CTL_VIA_NONE = 0,  /* no auth configured, an enrolment token or a worker credential */
    CTL_VIA_ADMIN_KEY, /* the admin key itself */
    CTL_VIA_TOKEN,     /* a login token ("ht_") */
    CTL_VIA_KEY,       /* an API key ("hk_") presented itself: only to mint a key (auth.c) */
};
typedef struct ctl_caller {
    int kind;           /* CTL_CALLER_* */
    int via;            /* CTL_VIA_*: the credential presented */
    char user_id[64];   /* admins and users: who */
    char key_id[64];    /* the API key presented, or the one the token was made from; "" none */
    char admin_key[65]; /* the SHA-256 of the admin key at the root of the credential; "" none */
} ctl_caller;

/* Caps (issue 26): live (not revoked) API keys per user, beyond which minting is 409; live login
 * tokens per key (or per admin key), beyond which a login ends the oldest. */
#define CTL_MAX_KEYS_PER_USER 50
#define CTL_MAX_TOKENS_PER_KEY 100

/* Who sends the request: HONE_OK with *who filled, HONE_EPERM with *why (a message for the 401:
 * no, unknown, revoked or expired token), or a store error. */
int ctl_auth_caller(hone_controller *c, const hone_http_req *req, ctl_caller *who,
                    const char **why);
/* Whether an API key's row (store_key_by_hash) may be used: HONE_OK, or HONE_EPERM with *why
 * (revoked, its user disabled, minted with an admin key that has changed). */
int ctl_auth_key_check(hone_controller *c, const json_t *krow, const char **why);
/* Whether the request carries a login token: 1 with its SHA-256 (hex) in hash (what a long
 * request, a stream, keeps to check it again later), else 0. */
int ctl_auth_token_hash(const hone_http_req *req, char hash[65]);
/* Whether that token is still good: HONE_OK, HONE_EPERM with *why (revoked, expired), or a store
 * error. */
int ctl_auth_token_check(hone_controller *c, const char *hash, const char **why);
/* The owner rows must have for this caller: the user's id (in buf), or NULL for callers who see
 * every row (admins, workers, no auth configured). For requests the filter let through; fails
 * closed (an owner no row has) when the caller cannot be told. */
const char *ctl_auth_owner(hone_controller *c, const hone_http_req *req, char buf[64]);
/* Who new rows belong to: the caller's user id (the admin key and no auth: "admin"), in buf; NULL
 * (buf "") when the caller is no longer good (disabled, revoked or expired since the filter). */
const char *ctl_auth_user(hone_controller *c, const hone_http_req *req, char buf[64]);
/* The caller checked again, for a handler that runs long after the filter (an upload's, once its
 * body is on disk): 0, or answered 401 naming Authorization (500 for a store error). */
int ctl_auth_recheck(hone_controller *c, hone_http_req *req, hone_http_res *res);
/* A fresh secret prefix + 64 hex digits (API keys, tokens) in secret, and its SHA-256 (hex). */
int ctl_auth_secret_new(const char *prefix, char *secret, size_t len, char hash[65]);
int ctl_auth_hash(const char *secret, char hash[65]); /* SHA-256 (hex) of a presented secret */
/* A fresh worker credential: token "<worker_id>.<secret>" to hand out once, and the SHA-256 (hex)
 * of the secret to store. */
int ctl_worker_credential_new(const char *worker_id, char *token, size_t tokenlen, char hash[65]);
/* The HTTP filter: with auth configured, the admin key and tokens everywhere (users.c keeps admin
 * routes to admins, the store keeps rows to their owners), an API key itself only to mint a key,
 * enrolment token for registering, worker credentials on worker routes only (checked there);
 * 401/403 otherwise. Runs once the headers are in, before the body (api/http.h). */
int ctl_auth_filter(hone_controller *c, hone_http_req *req, hone_http_res *res);
/* Whether the request carries the admin key or an admin's token (never true without auth
 * configured). */
int ctl_auth_is_admin(hone_controller *c, const hone_http_req *req);
/* Routes whose answer covers every user (GET /api/v1/workers: hosts, paths, GPUs; /metrics: all
 * users' counts): with auth configured, admins only. 403 naming what, and non-zero, otherwise. */
int ctl_auth_admin_only(hone_controller *c, hone_http_req *req, hone_http_res *res,
                        const char *what);
/* The request must carry worker wid's credential: 404 (field) for an unknown worker, 401 without
 * or with a bad credential, 403 (field) for another worker's. Answers and returns non-zero. */
int ctl_auth_worker(hone_controller *c, hone_http_req *req, hone_http_res *res, const char *wid,
                    const char *field);
/* The request must carry some worker's valid credential; writes that worker's id. */
int ctl_auth_worker_any(hone_controller *c, hone_http_req *req, hone_http_res *res, char *wid,
                        size_t widlen);

#endif
