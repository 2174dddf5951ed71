/* routes_artifacts.c: a job's artifacts (lists, downloads, the worker's uploads). Its state is its
 * own handle (c->downloads): users' downloads under way, by owner. server.c makes it before the
 * routes and frees it after the HTTP server (whose answers hold counts of it). */
#ifndef HONE_CTL_ROUTES_ARTIFACTS_H
#define HONE_CTL_ROUTES_ARTIFACTS_H

typedef struct ctl_downloads ctl_downloads;

ctl_downloads *ctl_downloads_new(void);
void ctl_downloads_free(ctl_downloads *d);

#endif
