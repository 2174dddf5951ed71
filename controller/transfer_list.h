/* transfer_list.c: the file list (manifest) of a dataset's folder and packed files, or of an
 * inference job's image folder, walked and hashed off the loop. routes_transfer.c answers the
 * routes with it; the walks in flight are its handle (ctl_walks), kept in routes_transfer.c's. */
#ifndef HONE_CTL_TRANSFER_LIST_H
#define HONE_CTL_TRANSFER_LIST_H

#include "controller.h"
#include "http.h"

typedef struct ctl_walks ctl_walks;

ctl_walks *ctl_walks_new(void);
void ctl_walks_free(ctl_walks *w); /* after the loop has given every walk back */

/* Walks root (and, for a dataset, its packed folder: <data_dir>/packed/<id>) on the thread pool
 * and answers res: 200 {dataset_id, files, packed} (job_input: {job_id, files}), 409 naming the
 * path (folder) when it no longer opens beneath its data root, 500, or 503 when canceled. owner:
 * the user asking (NULL for admins and workers), who lists one folder at a time (503 with
 * Retry-After while her last walk runs). */
void ctl_transfer_list(hone_controller *c, ctl_walks *walks, hone_http_res *res, const char *id,
                       const char *root, int job_input, const char *owner);

#endif
