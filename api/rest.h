/* rest: a small blocking JSON-over-HTTP client on libcurl, shared by hone-worker and the hone CLI
 * (api/ holds both ends of HTTP: this client and the libuv server of http.h).
 * One handle per thread (a handle is not thread-safe); the caller runs curl_global_init once.
 * It never retries on its own: transport failures come back as HONE_EIO for the caller to decide.
 */
#ifndef HONE_REST_H
#define HONE_REST_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "hone.h"

typedef struct hone_rest hone_rest;

/* base_url like "http://127.0.0.1:8080" (a trailing '/' is dropped); token may be NULL. */
int hone_rest_new(const char *base_url, const char *token, hone_rest **out);
void hone_rest_free(hone_rest *r);
const char *hone_rest_base(const hone_rest *r);
/* Replaces the bearer token sent with every later call (NULL or "" sends none). */
void hone_rest_set_token(hone_rest *r, const char *token);
/* Transfers end early (HONE_EIO) once *flag becomes nonzero (e.g. set by a signal handler);
 * the flag is borrowed and must outlive the handle. NULL turns it off. */
void hone_rest_set_abort(hone_rest *r, volatile sig_atomic_t *flag);

typedef struct hone_rest_resp {
    long status;  /* HTTP status; 0 when no answer came */
    json_t *json; /* parsed body when it was JSON, else NULL (owned: hone_rest_resp_clear) */
    char *body;   /* raw body, NUL-terminated (owned) */
    size_t len;
} hone_rest_resp;

void hone_rest_resp_clear(hone_rest_resp *resp);

/* Sends METHOD base+path with a JSON body (may be NULL) and waits up to timeout_s seconds (0 = 30).
 * Returns 0 when an HTTP answer came (any status), HONE_EIO when the server could not be reached
 * or the transfer failed, HONE_ETIMEDOUT on timeout. A message goes to err when not NULL. */
int hone_rest_call(hone_rest *r, const char *method, const char *path, const json_t *body,
                   long timeout_s, hone_rest_resp *resp, char *err, size_t errlen);

/* Like hone_rest_call with no body, streaming a 2xx answer into out (other statuses land in resp).
 */
int hone_rest_download(hone_rest *r, const char *path, FILE *out, long timeout_s,
                       hone_rest_resp *resp, char *err, size_t errlen);
/* The same with "Range: bytes=<from>-": a 206 (or 200) answer's bytes are appended to out; a
 * server may send fewer than the rest of the file (Content-Range says which), so a caller loops
 * until it has them all. */
int hone_rest_download_from(hone_rest *r, const char *path, uint64_t from, FILE *out,
                            long timeout_s, hone_rest_resp *resp, char *err, size_t errlen);

/* Called by curl about every second and whenever bytes move, during each call of r: bytes sent and
 * to send (0 when unknown), bytes received and to receive. fn NULL: none. */
typedef void (*hone_rest_progress_fn)(void *user, int64_t sent, int64_t send_total, int64_t got,
                                      int64_t got_total);
void hone_rest_set_progress(hone_rest *r, hone_rest_progress_fn fn, void *user);

/* Sends a file's bytes as the body of a `method` request (PUT for artifacts, POST for dataset
 * archives) with the given Content-Type. */
int hone_rest_upload(hone_rest *r, const char *method, const char *path, const char *file,
                     const char *content_type, long timeout_s, hone_rest_resp *resp, char *err,
                     size_t errlen);

/* The same with "X-Hone-Sha256: <sha256>" (64 hex digits): a server that knows the header stores
 * the body only when it hashes to that (hone-controller answers 422 naming X-Hone-Sha256). */
int hone_rest_upload_checked(hone_rest *r, const char *method, const char *path, const char *file,
                             const char *content_type, const char *sha256, long timeout_s,
                             hone_rest_resp *resp, char *err, size_t errlen);

/* Writes "message (field: x)" from an error body, or "HTTP <status>" when the body has none. */
void hone_rest_error_text(const hone_rest_resp *resp, char *buf, size_t len);

/* Percent-encodes s for a URL path segment or query value; caller frees. */
char *hone_rest_escape(const char *s);

#endif
