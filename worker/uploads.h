/* uploads: --storage http's uploads (uploads.c): a job's outputs, a convert job's packed file, and
 * each epoch's checkpoint from a thread of its own. */
#ifndef HONE_WORKER_UPLOADS_H
#define HONE_WORKER_UPLOADS_H

#include "lease.h"

/* PUTs a convert job's packed file to /datasets/{id}/packed/{its name}. */
int worker_upload_packed(hone_worker *w, const char *job_id, const char *dataset_id,
                         const char *file);
/* PUTs every file of out_dir (temp and dot files left out) as the job's artifacts; HONE_EPERM
 * when the controller refused one (the lease is gone). */
int worker_upload_outputs(hone_worker *w, const char *job_id, const char *out_dir);
/* A thread that uploads checkpoint.bin and metrics.jsonl after each kick, newest wins: the epoch
 * report never waits for it. stop: joins it (after the upload in flight), frees. */
typedef struct worker_ckpt_up worker_ckpt_up;
worker_ckpt_up *worker_ckpt_up_start(hone_worker *w, const char *job_id, const char *out_dir);
void worker_ckpt_up_kick(worker_ckpt_up *u);
void worker_ckpt_up_stop(worker_ckpt_up *u);

#endif
