/* routes_*.c (and dataset_upload.c): the REST handlers by resource, registered on the controller's
 * HTTP server, and the API views of rows that more than one resource shows. */
#ifndef HONE_CTL_ROUTES_H
#define HONE_CTL_ROUTES_H

#include <jansson.h>

#include "controller.h"
#include "http.h"

int ctl_routes_datasets(hone_controller *c);
int ctl_routes_dataset_upload(hone_controller *c); /* dataset_upload.c */
int ctl_routes_experiments(hone_controller *c);
int ctl_routes_jobs(hone_controller *c);
int ctl_routes_workers(hone_controller *c);
int ctl_routes_artifacts(hone_controller *c);
int ctl_routes_users(hone_controller *c);    /* routes_users.c: login, users, API keys */
int ctl_routes_transfer(hone_controller *c); /* routes_transfer.c: dataset files over HTTP */

/* routes_artifacts.c, for every upload route: in an upload's first half, X-Hone-Sha256 (when
 * sent) must be 64 lower-case hex digits (422 naming it: answers, returns non-zero). */
int ctl_upload_sha_header_ok(hone_http_req *req, hone_http_res *res);
/* Answers and returns non-zero when the writer may no longer store the upload. */
typedef int (*ctl_upload_recheck)(hone_controller *c, hone_http_req *req, hone_http_res *res);
/* An upload route's handler: recheck, then (with X-Hone-Sha256, after hashing the spooled body on
 * the thread pool: 422 on a mismatch) rename the body to dst and answer 201 {name, bytes}. */
void ctl_upload_store(hone_controller *c, hone_http_req *req, hone_http_res *res, const char *dst,
                      ctl_upload_recheck recheck);
/* shares.c, for every upload route: in its begin, once the caller is allowed, tells the HTTP
 * server whose upload it is (hone_http_req_set_upload_class). worker_route: the route lets only
 * the admin or a checked worker through, so whoever is not the admin is that worker, whose upload
 * takes the workers' slots; anyone else's takes the users' slots under their user's share (with
 * auth on; with none, every caller is the admin and no share applies). */
void ctl_upload_class(hone_controller *c, hone_http_req *req, int worker_route);
/* routes_jobs.c: the job row a route is about (*row, new reference), or its answer: 404 naming
 * the id when there is no such job or owner (a user id; NULL: anyone) does not own it, 500 on a
 * store error; returns the store's code. */
int ctl_job_row_res(hone_controller *c, hone_http_res *res, const char *id, const char *owner,
                    json_t **row);
json_t *ctl_dataset_json(const json_t *row);
json_t *ctl_experiment_json(const json_t *row);

/* listing.c: offset paging of the list routes. Every list is in creation order and ids never
 * change, so a page read later starts where the last one ended (rows created meanwhile come last).
 */
typedef struct {
    int limit;  /* ?limit=, 1..10000, default 1000 */
    int offset; /* ?offset=, rows skipped, default 0 */
} ctl_page;
/* Reads ?limit and ?offset; a bad one is answered 422 naming it, and -1 returned. */
int ctl_page_parse(hone_http_req *req, hone_http_res *res, ctl_page *pg);
/* {key: items, limit, offset, next_offset}: items holds up to limit + 1 rows (ask the store for
 * one more than the page); the extra one is dropped and sets next_offset (null: the last page).
 * Takes items. */
json_t *ctl_page_body(const char *key, json_t *items, const ctl_page *pg);
/* ?format=csv (or json), else an Accept naming text/csv: *csv = 1. A bad ?format is answered 422
 * and -1 returned. */
int ctl_wants_csv(hone_http_req *req, hone_http_res *res, int *csv);
/* Metric rows ({epoch, name: value...}, with trial for AutoML jobs) as CSV (RFC 4180, CRLF): a
 * header trial?,epoch,<names sorted>, one line per row, empty fields for null. Caller frees. */
char *ctl_metrics_csv(const json_t *rows, size_t *len);

#endif
