/* worker_internal: the daemon's state shared by worker.c (register, heartbeat, lease loop) and
 * job.c (one job: spec, trainer, reports, completion). Not part of the public API. */
#ifndef HONE_WORKER_INTERNAL_H
#define HONE_WORKER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "rest.h"
#include "worker.h"

typedef struct worker_nvml worker_nvml;

typedef struct hone_worker {
    const hone_worker_opts *o;
    char name[256];
    char work_dir[4096];
    char trainer[4096 + 256];
    char packer[4096 + 512];   /* hone-pack, for convert jobs */
    int http_storage;          /* --storage http: datasets downloaded, outputs uploaded */
    char cache_dir[4096 + 16]; /* http storage's download cache (absolute) */
    volatile sig_atomic_t *stop;

    pthread_mutex_t mu; /* guards id, token, job_id, registered */
    char id[128];       /* worker id from the controller ("" until registered) */
    char token[256];    /* this worker's credential, issued with the id */
    char job_id[128];   /* the job being run ("" when idle) */
    unsigned job_gen;   /* counts worker_set_job calls: which lease a heartbeat spoke of */
    int heartbeat_s;
    atomic_int cancel;  /* the controller asked to stop job_id */
    atomic_int quit_hb; /* tells the heartbeat thread to end */
    unsigned int seed;  /* jitter for backoff (per worker, not global) */

    hone_rest *rest;          /* main thread's handle */
    hone_rest *hb_rest;       /* heartbeat thread's handle */
    worker_nvml *nvml;        /* GPU telemetry for heartbeats (NULL: none; nvml.c) */
    int resident;             /* train jobs go to server (opts.resident resolved) */
    hone_trun_server *server; /* the resident trainer, NULL until a job starts it */
    hone_trun_sock *sock;     /* --trainer-socket: the shared trainer server (NULL: none) */
} hone_worker;

/* Logs one line to stderr: "hone-worker[name] <text>". */
void worker_log(hone_worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sleeps about ms milliseconds, waking early when *w->stop is set. Returns nonzero when stopping.
 */
/* mkdir -p of path (parent_only: of the folder holding it). HONE_EIO, HONE_EINVAL for a path of
 * 4096 bytes or more. */
int worker_mkdirs(const char *path, int parent_only);
int worker_sleep(hone_worker *w, int ms);
/* Next backoff delay in ms: doubles from 250 ms up to 15 s, with +-25% jitter. */
int worker_backoff(hone_worker *w, int *delay_ms);

/* (Re-)registers with the controller using rest; thread-safe. 0, or HONE_EIO when unreachable. */
int worker_register(hone_worker *w, hone_rest *rest);
/* Copies the current worker id into buf under the lock, and makes rest (the calling thread's
 * handle) send this worker's credential. */
void worker_id_auth(hone_worker *w, hone_rest *rest, char *buf, size_t len);

/* The GPUs hone-train can use here ([] for --device cpu or when it cannot tell), for registering
 * (gpus.c): {index, name, memory_bytes} and uuid ("GPU-..."), when the trainer gave a well-formed
 * one. */
json_t *worker_gpus(hone_worker *w);
/* The GPU this worker's trainers train on (its first listed, CUDA's device 0) by UUID, for the
 * controller to group the workers sharing one GPU; NULL when gpus has none. Borrowed from gpus. */
const char *worker_gpu_uuid(const json_t *gpus);
/* gpus.c: before anything runs, pins the worker to --gpu INDEX (CUDA_VISIBLE_DEVICES, indexing
 * into a CUDA_VISIBLE_DEVICES the worker was given) and sets CUDA_DEVICE_ORDER=PCI_BUS_ID unless
 * set, so that CUDA's numbering is NVML's; then opens NVML for the GPUs this worker uses (w->nvml,
 * NULL when absent). HONE_EINVAL (logged) when --gpu names a GPU CUDA_VISIBLE_DEVICES lacks. */
int worker_gpu_setup(hone_worker *w);

/* ---- nvml.c: GPU telemetry through libnvidia-ml.so.1, loaded at run time ---- */
/* Opens NVML from lib (NULL: "libnvidia-ml.so.1") for n GPUs, each named by sel[i] (an NVML index
 * as digits, else a UUID "GPU-...") and reported as index[i]. HONE_ENOENT when the library, a
 * symbol, nvmlInit or every GPU is missing: no telemetry, not an error. Free with
 * worker_nvml_free. */
int worker_nvml_open(const char *lib, const char *const *sel, const int *index, int n,
                     worker_nvml **out);
/* [{index, util (0..100), mem_used, mem_total (bytes)}] now; a GPU NVML cannot read is left out.
 * New reference; [] for NULL. */
json_t *worker_nvml_sample(worker_nvml *nv);
void worker_nvml_free(worker_nvml *nv);

/* Runs one leased job to the end and completes it with the controller (job.c); a convert job
 * goes to worker_convert_run. */
void worker_job_run(hone_worker *w, const json_t *job);
/* job.c: POSTs body to path until an HTTP answer comes, backing off while the controller is away;
 * gives up (HONE_EIO) only when the worker is stopping and `patient` is 0. */
int worker_post(hone_worker *w, const char *path, json_t *body, int patient, hone_rest_resp *resp);
/* job.c: completes the job with status, res's log tail and its "done" line as final. */
void worker_job_complete(hone_worker *w, const char *job_id, const char *status,
                         const hone_trun_result *res);
/* job.c: the job the heartbeat keeps leased (NULL: none); clears the cancel flag. */
void worker_set_job(hone_worker *w, const char *id);
/* convert.c: runs a convert job (hone-pack --json), relays its progress, completes it. */
void worker_convert_run(hone_worker *w, const json_t *job);
/* action.c: runs an evaluate, inference or export job (hone-train --evaluate / --infer /
 * --export), completes it. */
void worker_action_run(hone_worker *w, const json_t *job);

/* ---- storage.c, uploads.c: --storage http (datasets downloaded into the cache, outputs
 * uploaded) ---- */
/* Downloads url (bytes, sha256 from a manifest) into <cache>/<sha256> (written to out), resuming
 * its .part file and verifying the hash; *hit = 1 when the cache had it (nothing downloaded). */
int worker_cache_fetch(hone_worker *w, const char *url, long long bytes, const char *sha, char *out,
                       size_t cap, int *hit);
/* Downloads the lease's dataset (its packed file alone when the spec names one) into the cache
 * and sets in sets what the trainer reads instead of the controller's paths: data.path (a folder
 * of links <work-dir>/data/<job id>/ with the original names) and data.packed. A message for the
 * job's log in msg on failure. */
int worker_fetch_dataset(hone_worker *w, const json_t *job, json_t *sets, char *msg, size_t msglen);
/* Downloads the model files (not the checkpoint) of job parent's artifacts (subdir "best_model"
 * of an AutoML job, or "") into dir. A message in msg on failure. */
int worker_fetch_model(hone_worker *w, const char *job_id, const char *parent, const char *subdir,
                       const char *dir, char *msg, size_t msglen);
/* Downloads an inference job's image folder (GET /jobs/{id}/input) into the cache, linked under
 * <work-dir>/data/<job id>/ (written to folder). */
int worker_fetch_input(hone_worker *w, const char *job_id, char *folder, size_t fcap, char *msg,
                       size_t msglen);
/* Removes the job's folder of links (<work-dir>/data/<job id>/); the cache stays. */
void worker_drop_dataset(hone_worker *w, const char *job_id);
/* PUTs a convert job's packed file to /datasets/{id}/packed/{its name}. */
int worker_upload_packed(hone_worker *w, const char *job_id, const char *dataset_id,
                         const char *file);
/* Fetches an uploaded checkpoint.bin (and metrics.jsonl) of the job into out_dir; HONE_ENOENT
 * when the controller has none. */
int worker_fetch_checkpoint(hone_worker *w, const char *job_id, const char *out_dir);
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
