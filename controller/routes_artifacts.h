/* routes_artifacts.c: a job's artifacts (lists, downloads, the worker's uploads). Its state is its
 * own handle (c->downloads): users' downloads under way, by owner. server.c makes it before the
 * routes and frees it after the HTTP server (whose answers hold counts of it). */
#ifndef HONE_CTL_ROUTES_ARTIFACTS_H
#define HONE_CTL_ROUTES_ARTIFACTS_H

typedef struct ctl_downloads ctl_downloads;

ctl_downloads *ctl_downloads_new(void);
void ctl_downloads_free(ctl_downloads *d);

/* model_files.c: answers res with the files of the model in job_dir (or its subdir, best_model of
 * an AutoML job), each with bytes and sha256, hashed on the thread pool; end(ud), when given, once
 * the work is over (answered, or its client gone). */
struct hone_controller;
struct hone_http_res;
void ctl_model_files_list(struct hone_controller *c, struct hone_http_res *res, const char *job_dir,
                          const char *subdir, void (*end)(void *ud), void *ud);

#endif
