/* auth.c: who is calling. The admin token, the enrolment token (registering only) and worker
 * credentials ("<worker_id>.<secret>", SHA-256 of the secret stored). */
#ifndef HONE_CTL_AUTH_H
#define HONE_CTL_AUTH_H

#include <stddef.h>

#include "controller.h"
#include "http.h"

/* A fresh worker credential: token "<worker_id>.<secret>" to hand out once, and the SHA-256 (hex)
 * of the secret to store. */
int ctl_worker_credential_new(const char *worker_id, char *token, size_t tokenlen, char hash[65]);
/* The HTTP filter: with auth configured, admin token everywhere, enrolment token for registering,
 * worker credentials on worker routes only (checked there); 401/403 otherwise. */
int ctl_auth_filter(hone_controller *c, hone_http_req *req, hone_http_res *res);
/* Whether the request carries the admin token (never true without auth configured). */
int ctl_auth_is_admin(hone_controller *c, const hone_http_req *req);
/* The request must carry worker wid's credential: 404 (field) for an unknown worker, 401 without
 * or with a bad credential, 403 (field) for another worker's. Answers and returns non-zero. */
int ctl_auth_worker(hone_controller *c, hone_http_req *req, hone_http_res *res, const char *wid,
                    const char *field);
/* The request must carry some worker's valid credential; writes that worker's id. */
int ctl_auth_worker_any(hone_controller *c, hone_http_req *req, hone_http_res *res, char *wid,
                        size_t widlen);

#endif
