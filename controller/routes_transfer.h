/* routes_transfer.c: dataset files to workers and users (file lists, ranged reads). Its state is
 * its own handle (c->transfer): the users' file-list walks in flight, and the counters GET
 * /metrics reports. server.c makes it before the routes and frees it after the HTTP server. */
#ifndef HONE_CTL_ROUTES_TRANSFER_H
#define HONE_CTL_ROUTES_TRANSFER_H

#include <stdint.h>

typedef struct ctl_transfer ctl_transfer;

ctl_transfer *ctl_transfer_new(void);
void ctl_transfer_free(ctl_transfer *t);
/* Dataset file answers given, and the bytes they carried (GET /metrics). */
void ctl_transfer_stats(const ctl_transfer *t, uint64_t *reads, uint64_t *bytes);

#endif
