/* uploads: what a worker with --storage http sends back to the controller: its job's outputs
 * (PUT /jobs/{id}/artifacts/{name}) and a convert job's packed file (PUT
 * /datasets/{id}/packed/{name}), each with its SHA-256 (X-Hone-Sha256: the controller stores a
 * body only when it matches) and retried; and the checkpoint uploader, a thread per job that
 * sends checkpoint.bin and metrics.jsonl after each acknowledged epoch, newest wins, so that the
 * epoch report never waits for it. */
#include "uploads.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether a 422 answer blames X-Hone-Sha256 (the body did not hash to what we sent). */
static int upload_hash_refused(const hone_rest_resp *resp)
{
    const char *f =
        json_string_value(json_object_get(json_object_get(resp->json, "error"), "field"));
    return f && !strcmp(f, "X-Hone-Sha256");
}

/* PUTs one file with its SHA-256 (the controller stores it only when the body hashes to that),
 * retried while the controller is away; HONE_EPERM when it is refused. */
static int upload_to(hone_worker *w, const char *path, const char *file, const char *job_id,
                     const char *name)
{
    char err[512];
    int delay = 0;
    for (int tries = 0;; tries++) {
        hone_rest_resp resp = {0};
        /* While shutting down the stop flag would cut the transfer short: it runs without it,
         * bounded by the grace period instead. */
        int stopping = worker_stopping(w);
        long limit = stopping ? (long)w->o->grace_s + 1 : 600;
        if (stopping)
            hone_rest_set_abort(w->rest, NULL);
        char sha[65];
        int rc = hone_sha256_file(file, sha);
        if (rc)
            snprintf(err, sizeof err, "cannot read %s", file);
        else
            rc = hone_rest_upload_checked(w->rest, "PUT", path, file, "application/octet-stream",
                                          sha, limit, &resp, err, sizeof err);
        if (stopping)
            hone_rest_set_abort(w->rest, w->stop);
        if (rc == 0 && resp.status == 201) {
            hone_rest_resp_clear(&resp);
            return HONE_OK;
        }
        if (rc == 0 && resp.status == 422 && upload_hash_refused(&resp) && tries < 3) {
            /* the file changed between hashing and sending (a newer checkpoint): again */
            hone_rest_resp_clear(&resp);
            continue;
        }
        if (rc == 0 && resp.status < 500) {
            hone_rest_error_text(&resp, err, sizeof err);
            hone_rest_resp_clear(&resp);
            worker_log(w, "job %s: upload of %s refused: %s", job_id, name, err);
            return HONE_EPERM;
        }
        if (rc == 0)
            hone_rest_resp_clear(&resp);
        if ((worker_stopping(w) && tries >= 2) || tries >= 40) {
            worker_log(w, "job %s: upload of %s failed: %s", job_id, name, err);
            return HONE_EIO;
        }
        if (worker_stopping(w)) {
            usleep(200000);
            continue;
        }
        worker_sleep(w, worker_backoff(w, &delay));
    }
}

static int upload_one(hone_worker *w, const char *job_id, const char *file, const char *name)
{
    char path[1024];
    char *ej = hone_rest_escape(job_id), *en = hone_rest_escape(name);
    snprintf(path, sizeof path, "/api/v1/jobs/%s/artifacts/%s", ej, en);
    free(ej);
    free(en);
    return upload_to(w, path, file, job_id, name);
}

int worker_upload_packed(hone_worker *w, const char *job_id, const char *dataset_id,
                         const char *file)
{
    char path[1024];
    const char *name = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    char *ed = hone_rest_escape(dataset_id), *en = hone_rest_escape(name);
    snprintf(path, sizeof path, "/api/v1/datasets/%s/packed/%s", ed, en);
    free(ed);
    free(en);
    int rc = upload_to(w, path, file, job_id, name);
    if (rc == 0)
        worker_log(w, "job %s: packed file %s uploaded", job_id, name);
    return rc;
}

int worker_upload_outputs(hone_worker *w, const char *job_id, const char *out_dir)
{
    DIR *d = opendir(out_dir);
    struct dirent *e;
    int rc = HONE_OK, n = 0;
    if (!d)
        return HONE_EIO;
    while ((e = readdir(d))) {
        char p[4096 + 512];
        struct stat st;
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || (len > 4 && !strcmp(e->d_name + len - 4, ".tmp")))
            continue;
        snprintf(p, sizeof p, "%s/%s", out_dir, e->d_name);
        if (stat(p, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        int r = upload_one(w, job_id, p, e->d_name);
        if (r == HONE_EPERM) {
            rc = r;
            break;
        }
        if (r)
            rc = r;
        else
            n++;
    }
    closedir(d);
    worker_log(w, "job %s: %d output file(s) uploaded%s", job_id, n, rc ? " (some failed)" : "");
    return rc;
}

/* ---- the checkpoint uploader: one thread per job, newest checkpoint wins ---- */

struct worker_ckpt_up {
    hone_worker *w;
    char job_id[128];
    char out_dir[4096 + 256];
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int pending, quit, started;
    hone_rest *rest; /* this thread's own handle */
};

static int ckpt_put(worker_ckpt_up *u, const char *name)
{
    char path[512], file[4096 + 300], err[512], id[128];
    hone_rest_resp resp = {0};
    snprintf(file, sizeof file, "%s/%s", u->out_dir, name);
    if (access(file, R_OK) != 0)
        return HONE_ENOENT;
    worker_id_auth(u->w, u->rest, id, sizeof id);
    char *ej = hone_rest_escape(u->job_id);
    snprintf(path, sizeof path, "/api/v1/jobs/%s/artifacts/%s", ej, name);
    free(ej);
    char sha[65];
    int rc = hone_sha256_file(file, sha);
    if (rc) {
        hone_rest_resp_clear(&resp);
        return rc;
    }
    rc = hone_rest_upload_checked(u->rest, "PUT", path, file, "application/octet-stream", sha, 120,
                                  &resp, err, sizeof err);
    if (rc == 0 && resp.status != 201) {
        hone_rest_error_text(&resp, err, sizeof err);
        rc = HONE_EIO;
    }
    if (rc)
        worker_log(u->w, "job %s: checkpoint upload (%s): %s", u->job_id, name, err);
    hone_rest_resp_clear(&resp);
    return rc;
}

static void *ckpt_thread(void *arg)
{
    worker_ckpt_up *u = arg;
    pthread_mutex_lock(&u->mu);
    for (;;) {
        while (!u->pending && !u->quit)
            pthread_cond_wait(&u->cv, &u->mu);
        if (!u->pending)
            break;
        u->pending = 0;
        pthread_mutex_unlock(&u->mu);
        /* The checkpoint first: metrics.jsonl then holds every epoch it has (or more), which a
         * resumed run replays. The trainer replaces checkpoint.bin by rename, so the file being
         * sent stays whole. */
        if (ckpt_put(u, "checkpoint.bin") == HONE_OK)
            ckpt_put(u, "metrics.jsonl");
        pthread_mutex_lock(&u->mu);
    }
    pthread_mutex_unlock(&u->mu);
    return NULL;
}

worker_ckpt_up *worker_ckpt_up_start(hone_worker *w, const char *job_id, const char *out_dir)
{
    worker_ckpt_up *u = hone_xcalloc(1, sizeof *u);
    u->w = w;
    snprintf(u->job_id, sizeof u->job_id, "%s", job_id);
    snprintf(u->out_dir, sizeof u->out_dir, "%s", out_dir);
    pthread_mutex_init(&u->mu, NULL);
    pthread_cond_init(&u->cv, NULL);
    if (hone_rest_new(w->o->controller, w->o->token, &u->rest) == 0 &&
        pthread_create(&u->thread, NULL, ckpt_thread, u) == 0)
        u->started = 1;
    return u;
}

void worker_ckpt_up_kick(worker_ckpt_up *u)
{
    if (!u)
        return;
    pthread_mutex_lock(&u->mu);
    u->pending = 1;
    pthread_cond_signal(&u->cv);
    pthread_mutex_unlock(&u->mu);
}

void worker_ckpt_up_stop(worker_ckpt_up *u)
{
    if (!u)
        return;
    pthread_mutex_lock(&u->mu);
    u->quit = 1;
    u->pending = 0; /* the caller uploads the final state itself */
    pthread_cond_signal(&u->cv);
    pthread_mutex_unlock(&u->mu);
    if (u->started)
        pthread_join(u->thread, NULL);
    hone_rest_free(u->rest);
    pthread_mutex_destroy(&u->mu);
    pthread_cond_destroy(&u->cv);
    free(u);
}
