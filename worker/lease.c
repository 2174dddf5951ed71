/* lease: the worker's side of one lease, below every runner and the daemon loop: its log, the
 * calls that tell the controller about the job (each retried while the controller is away),
 * which job the heartbeat keeps leased, and whether to stop. Calls no runner and not worker.c. */
#include "lease.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void worker_log(hone_worker *w, const char *fmt, ...)
{
    char buf[2048];
    char ts[32];
    time_t now = time(NULL);
    struct tm tm;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    gmtime_r(&now, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(stderr, "%s hone-worker[%s] %s\n", ts, w->name, buf);
}

int worker_sleep(hone_worker *w, int ms)
{
    while (ms > 0 && !*w->stop) {
        int step = ms < 100 ? ms : 100;
        usleep((useconds_t)step * 1000);
        ms -= step;
    }
    return *w->stop ? 1 : 0;
}

int worker_backoff(hone_worker *w, int *delay_ms)
{
    int d = *delay_ms <= 0 ? 250 : *delay_ms * 2;
    double jitter;

    if (d > 15000)
        d = 15000;
    *delay_ms = d;
    jitter = 0.75 + 0.5 * ((double)rand_r(&w->seed) / (double)RAND_MAX);
    return (int)(d * jitter);
}

void worker_id_auth(hone_worker *w, hone_rest *rest, char *buf, size_t len)
{
    pthread_mutex_lock(&w->mu);
    snprintf(buf, len, "%s", w->id);
    hone_rest_set_token(rest, w->token);
    pthread_mutex_unlock(&w->mu);
}

int worker_mkdirs(const char *path, int parent_only)
{
    char tmp[4096];
    size_t n = strlen(path);

    if (n == 0 || n >= sizeof(tmp))
        return HONE_EINVAL;
    memcpy(tmp, path, n + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return HONE_EIO;
            *p = '/';
        }
    }
    if (!parent_only && mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return HONE_EIO;
    return HONE_OK;
}

/* POSTs body to path until an HTTP answer comes, backing off while the controller is away.
 * Gives up (HONE_EIO) only when the worker is stopping and `patient` is 0, and then only after
 * one try made while stopping: a call in flight when SIGTERM came is cut short by the stop flag,
 * not by the controller, so it is sent once more (without the abort) rather than counted lost. */
int worker_post(hone_worker *w, const char *path, json_t *body, int patient, hone_rest_resp *resp)
{
    int delay = 0, warned = 0, tries = 0;
    char err[512];

    for (;;) {
        /* While stopping, the stop flag would cut every call short: calls run without it, with
         * a short timeout instead. */
        int stopping = *w->stop != 0, rc;
        if (stopping)
            hone_rest_set_abort(w->rest, NULL);
        rc = hone_rest_call(w->rest, "POST", path, body, stopping ? 5 : 30, resp, err, sizeof(err));
        if (stopping)
            hone_rest_set_abort(w->rest, w->stop);
        if (rc == 0) {
            if (resp->status < 500 || resp->status == 501)
                return HONE_OK;
            hone_rest_resp_clear(resp);
        }
        if (*w->stop && !stopping)
            continue; /* cut short by our own stop: once more, with the stopping timeout */
        if (!warned++)
            worker_log(w, "%s: controller unreachable (%s); retrying", path, err);
        if (*w->stop && !patient)
            return HONE_EIO;
        /* While stopping, try a few more times, then give up: the lease will expire and the
         * controller requeues the job from its checkpoint. */
        if (*w->stop) {
            if (++tries > 5)
                return HONE_EIO;
            usleep(500000);
            continue;
        }
        worker_sleep(w, worker_backoff(w, &delay));
    }
}

void worker_job_complete(hone_worker *w, const char *job_id, const char *status,
                         const hone_trun_result *res)
{
    json_t *body = json_object();
    hone_rest_resp resp;
    char id[128], path[256];

    worker_id_auth(w, w->rest, id, sizeof(id));
    json_object_set_new(body, "worker_id", json_string(id));
    json_object_set_new(body, "status", json_string(status));
    json_object_set_new(body, "log_tail", json_string(res->log_tail ? res->log_tail : ""));
    if (res->done)
        json_object_set(body, "final", res->done);
    snprintf(path, sizeof(path), "/api/v1/jobs/%s/complete", job_id);
    if (worker_post(w, path, body, 1, &resp) == 0) {
        if (resp.status != 200 && resp.status != 204) {
            char msg[512];
            hone_rest_error_text(&resp, msg, sizeof(msg));
            worker_log(w, "job %s: complete refused: %s", job_id, msg);
        }
        hone_rest_resp_clear(&resp);
    }
    json_decref(body);
}

void worker_set_job(hone_worker *w, const char *id)
{
    pthread_mutex_lock(&w->mu); /* with the heartbeat's cancel, which checks the job under it */
    snprintf(w->job_id, sizeof(w->job_id), "%s", id ? id : "");
    w->job_gen++;
    atomic_store(&w->cancel, 0);
    pthread_mutex_unlock(&w->mu);
}

int worker_stopping(const hone_worker *w)
{
    return *w->stop != 0;
}

int worker_canceled(hone_worker *w)
{
    return atomic_load(&w->cancel) != 0;
}
