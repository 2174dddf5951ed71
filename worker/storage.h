/* storage: --storage http's downloads (storage.c): datasets, models, input folders and
 * checkpoints come from the controller into the content-addressed cache, linked where the trainer
 * reads them. Nothing here uploads (uploads.h) or runs a trainer. */
#ifndef HONE_WORKER_STORAGE_H
#define HONE_WORKER_STORAGE_H

#include "lease.h"

/* Downloads url (bytes, sha256 from a manifest) into <cache>/<sha256> (written to out), resuming
 * its .part file and verifying the hash; *hit = 1 when the cache had it (nothing downloaded). */
int worker_cache_fetch(hone_worker *w, const char *url, long long bytes, const char *sha, char *out,
                       size_t cap, int *hit);
/* Downloads the lease's dataset (its packed file alone when the lease's spec names one) into the
 * cache and sets in spec (the trainer's flat spec, or any object) what the trainer reads instead
 * of the controller's paths: data.path (a folder of links <work-dir>/data/<job id>/ with the
 * original names) and data.packed. A message for the job's log in msg on failure. */
int worker_fetch_dataset(hone_worker *w, const json_t *job, json_t *spec, char *msg, size_t msglen);
/* Downloads the model files (not the checkpoint) of job parent's artifacts (subdir "best_model"
 * of an AutoML job, or "") into the cache, sha-256 checked, and links them into dir. A message in
 * msg on failure. */
int worker_fetch_model(hone_worker *w, const char *job_id, const char *parent, const char *subdir,
                       const char *dir, char *msg, size_t msglen);
/* Removes the parent's model a fine-tuning job downloaded (<work-dir>/parents/<job id>/: links
 * into the cache, which keeps the files). */
void worker_drop_parent(hone_worker *w, const char *job_id);
/* Downloads an inference job's image folder (GET /jobs/{id}/input) into the cache, linked under
 * <work-dir>/data/<job id>/ (written to folder). */
int worker_fetch_input(hone_worker *w, const char *job_id, char *folder, size_t fcap, char *msg,
                       size_t msglen);
/* Removes the job's folder of links (<work-dir>/data/<job id>/); the cache stays. */
void worker_drop_dataset(hone_worker *w, const char *job_id);
/* Fetches an uploaded checkpoint.bin (and metrics.jsonl) of the job into out_dir; HONE_ENOENT
 * when the controller has none. */
int worker_fetch_checkpoint(hone_worker *w, const char *job_id, const char *out_dir);
#endif
