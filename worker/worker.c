/* worker: the hone-worker daemon loop. Registers (with its CPUs and GPUs), heartbeats on its own
 * thread, long-polls for leases and hands each job to the kind table (kinds.c). Every call to the
 * controller backs off (capped, jittered) while it is unreachable and re-registers when it forgot
 * this worker. */
#include "worker.h"

#include "gpus.h"
#include "kinds.h"
#include "lease.h"
#include "nvml.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static json_t *worker_resources(hone_worker *w)
{
    json_t *res = json_object();
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);

    json_object_set_new(res, "cpus", json_integer(cpus > 0 ? cpus : 1));
    json_object_set_new(res, "gpus", worker_gpus(w));
    json_object_set_new(res, "device", json_string(w->o->device));
    return res;
}

/* Registers unless another thread already replaced the id this caller saw fail (stale). */
static int worker_register_if(hone_worker *w, hone_rest *rest, const char *stale)
{
    json_t *body;
    hone_rest_resp resp;
    char err[512];
    int rc;

    pthread_mutex_lock(&w->mu);
    if (stale && strcmp(w->id, stale) != 0 && w->id[0]) {
        pthread_mutex_unlock(&w->mu);
        return HONE_OK;
    }
    pthread_mutex_unlock(&w->mu);

    body = json_object();
    json_object_set_new(body, "name", json_string(w->name));
    json_t *res = worker_resources(w);
    json_object_set_new(body, "resources", res);
    /* The GPU it trains on, by UUID, and the host: workers naming one GPU share it (hone local
     * --pack), and the controller spreads trials over GPUs by that. */
    const char *uuid = worker_gpu_uuid(json_object_get(res, "gpus"));
    if (uuid)
        json_object_set_new(body, "gpu_uuid", json_string(uuid));
    char host[256] = "";
    if (gethostname(host, sizeof(host) - 1) == 0 && host[0])
        json_object_set_new(body, "host", json_string(host));
    json_object_set_new(body, "artifact_dir", json_string(w->work_dir));
    hone_rest_set_token(rest, w->o->token); /* registering takes the admin or enrolment token */
    rc = hone_rest_call(rest, "POST", "/api/v1/workers", body, 10, &resp, err, sizeof(err));
    json_decref(body);
    if (rc != 0)
        return HONE_EIO;
    if (resp.status == 200 || resp.status == 201) {
        const char *id = json_string_value(json_object_get(resp.json, "id"));
        const char *tok = json_string_value(json_object_get(resp.json, "token"));
        json_t *hb = json_object_get(resp.json, "heartbeat_seconds");
        if (!id || !tok || strlen(tok) >= sizeof(w->token)) {
            hone_rest_resp_clear(&resp);
            return HONE_EPARSE;
        }
        pthread_mutex_lock(&w->mu);
        snprintf(w->id, sizeof(w->id), "%s", id);
        snprintf(w->token, sizeof(w->token), "%s", tok);
        if (json_is_number(hb) && json_number_value(hb) >= 1)
            w->heartbeat_s = (int)json_number_value(hb);
        pthread_mutex_unlock(&w->mu);
        worker_log(w, "registered as %s (heartbeat %ds)", id, w->heartbeat_s);
        rc = HONE_OK;
    } else {
        char msg[512];
        hone_rest_error_text(&resp, msg, sizeof(msg));
        worker_log(w, "register refused: %s", msg);
        rc = resp.status == 401 || resp.status == 403 ? HONE_EINVAL : HONE_EIO;
    }
    hone_rest_resp_clear(&resp);
    return rc;
}

static int worker_register(hone_worker *w, hone_rest *rest)
{
    return worker_register_if(w, rest, NULL);
}

static int worker_json_has(const json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
            return 1;
    }
    return 0;
}

static void *worker_heartbeat_main(void *arg)
{
    hone_worker *w = arg;
    int warned = 0;

    while (!atomic_load(&w->quit_hb)) {
        char id[128], job[128], path[256], err[256];
        hone_rest_resp resp;
        json_t *body, *jobs;
        int hb;
        unsigned gen;

        pthread_mutex_lock(&w->mu);
        hb = w->heartbeat_s;
        pthread_mutex_unlock(&w->mu);
        for (int ms = hb * 1000; ms > 0 && !atomic_load(&w->quit_hb); ms -= 100)
            usleep(100000);
        if (atomic_load(&w->quit_hb))
            break;
        pthread_mutex_lock(&w->mu);
        snprintf(id, sizeof(id), "%s", w->id);
        snprintf(job, sizeof(job), "%s", w->job_id);
        gen = w->job_gen;
        hone_rest_set_token(w->hb_rest, w->token);
        pthread_mutex_unlock(&w->mu);
        if (!id[0])
            continue;
        body = json_object();
        jobs = json_array();
        if (job[0])
            json_array_append_new(jobs, json_string(job));
        json_object_set_new(body, "jobs", jobs);
        if (w->nvml) /* without telemetry the field is left out: the controller shows null */
            json_object_set_new(body, "gpus", worker_nvml_sample(w->nvml));
        snprintf(path, sizeof(path), "/api/v1/workers/%s/heartbeat", id);
        if (hone_rest_call(w->hb_rest, "POST", path, body, 10, &resp, err, sizeof(err)) != 0) {
            if (!warned++)
                worker_log(w, "heartbeat: controller unreachable (%s); retrying", err);
            json_decref(body);
            continue;
        }
        json_decref(body);
        if (warned) {
            worker_log(w, "heartbeat: controller is back");
            warned = 0;
        }
        if (resp.status == 404 || resp.status == 401) {
            worker_log(w, "controller forgot worker %s; registering again", id);
            worker_register_if(w, w->hb_rest, id);
        } else if (resp.status == 200 && job[0] &&
                   worker_json_has(json_object_get(resp.json, "cancel"), job)) {
            /* Only while the lease it spoke of is still the one run: the answer may come after
             * that job ended (a done job is in `cancel` too) and the next began, which it must
             * not stop, even when that is the same job leased again (a retry). */
            pthread_mutex_lock(&w->mu);
            int current = w->job_gen == gen && !strcmp(w->job_id, job);
            if (current)
                atomic_store(&w->cancel, 1);
            pthread_mutex_unlock(&w->mu);
            if (current)
                worker_log(w, "job %s: canceled by the controller", job);
        }
        hone_rest_resp_clear(&resp);
    }
    return NULL;
}

/* The trainer: --trainer, then $HONE_BIN_DIR, then beside or near this executable, then PATH. */
static void worker_find_trainer(hone_worker *w)
{
    static const char *rel[] = {"hone-train", "../train/hone-train", "../../train/hone-train"};
    const char *env = getenv("HONE_BIN_DIR");
    char self[4096], cand[4096 + 64];
    ssize_t n;

    if (w->o->trainer) {
        snprintf(w->trainer, sizeof(w->trainer), "%s", w->o->trainer);
        return;
    }
    if (env && env[0]) {
        snprintf(cand, sizeof(cand), "%s/hone-train", env);
        if (access(cand, X_OK) == 0) {
            snprintf(w->trainer, sizeof(w->trainer), "%s", cand);
            return;
        }
    }
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        char *slash;
        self[n] = '\0';
        slash = strrchr(self, '/');
        if (slash)
            *slash = '\0';
        for (size_t i = 0; i < HONE_ARRAY_LEN(rel); i++) {
            snprintf(cand, sizeof(cand), "%s/%s", self, rel[i]);
            if (access(cand, X_OK) == 0) {
                snprintf(w->trainer, sizeof(w->trainer), "%s", cand);
                return;
            }
        }
    }
    snprintf(w->trainer, sizeof(w->trainer), "hone-train");
}

/* hone-pack (convert jobs): --packer, then $HONE_BIN_DIR, then beside or near this executable, then
 * beside or near the trainer, then PATH. */
static void worker_find_packer(hone_worker *w)
{
    static const char *rel[] = {"hone-pack", "../data/hone-pack", "../../data/hone-pack"};
    const char *env = getenv("HONE_BIN_DIR");
    char dirs[2][4096 + 256], cand[4096 + 256 + 64];
    int nd = 0;
    ssize_t n;

    if (w->o->packer) {
        snprintf(w->packer, sizeof(w->packer), "%s", w->o->packer);
        return;
    }
    if (env && env[0])
        snprintf(dirs[nd++], sizeof(dirs[0]), "%s", env);
    n = readlink("/proc/self/exe", dirs[nd], sizeof(dirs[0]) - 1);
    if (n > 0) {
        dirs[nd][n] = '\0';
        if (strrchr(dirs[nd], '/'))
            *strrchr(dirs[nd++], '/') = '\0';
    }
    for (int d = 0; d < nd; d++)
        for (size_t i = 0; i < (d == 0 && env && env[0] ? 1 : HONE_ARRAY_LEN(rel)); i++) {
            int len = snprintf(cand, sizeof(cand), "%s/%s", dirs[d], rel[i]);
            if (len > 0 && (size_t)len < sizeof(w->packer) && access(cand, X_OK) == 0) {
                memcpy(w->packer, cand, (size_t)len + 1);
                return;
            }
        }
    if (strchr(w->trainer, '/')) {
        snprintf(dirs[0], sizeof(dirs[0]), "%s", w->trainer);
        *strrchr(dirs[0], '/') = '\0';
        for (size_t i = 0; i < HONE_ARRAY_LEN(rel); i++) {
            snprintf(cand, sizeof(cand), "%s/%s", dirs[0], rel[i]);
            if (access(cand, X_OK) == 0) {
                snprintf(w->packer, sizeof(w->packer), "%s", cand);
                return;
            }
        }
    }
    snprintf(w->packer, sizeof(w->packer), "hone-pack");
}

static int worker_setup(hone_worker *w, const hone_worker_opts *o, volatile sig_atomic_t *stop)
{
    char host[128] = "host";

    memset(w, 0, sizeof(*w));
    w->o = o;
    w->stop = stop;
    w->heartbeat_s = 5;
    w->seed = (unsigned int)time(NULL) ^ (unsigned int)getpid();
    pthread_mutex_init(&w->mu, NULL);
    gethostname(host, sizeof(host) - 1);
    if (o->name)
        snprintf(w->name, sizeof(w->name), "%s", o->name);
    else
        snprintf(w->name, sizeof(w->name), "%s-%d", host, (int)getpid());
    if (o->work_dir)
        snprintf(w->work_dir, sizeof(w->work_dir), "%s", o->work_dir);
    else
        snprintf(w->work_dir, sizeof(w->work_dir), "hone-work/%s", w->name);
    if (worker_mkdirs(w->work_dir, 0) != 0) {
        worker_log(w, "cannot create work dir %s: %s", w->work_dir, strerror(errno));
        return HONE_EIO;
    }
    if (w->work_dir[0] != '/') {
        char abs[PATH_MAX];
        if (realpath(w->work_dir, abs))
            snprintf(w->work_dir, sizeof(w->work_dir), "%s", abs);
    }
    w->http_storage = o->storage && !strcmp(o->storage, "http");
    if (o->cache_dir)
        snprintf(w->cache_dir, sizeof(w->cache_dir), "%s", o->cache_dir);
    else
        snprintf(w->cache_dir, sizeof(w->cache_dir), "%s/cache", w->work_dir);
    if (w->http_storage && worker_mkdirs(w->cache_dir, 0) != 0) {
        worker_log(w, "cannot create cache dir %s: %s", w->cache_dir, strerror(errno));
        return HONE_EIO;
    }
    if (worker_gpu_setup(w) != 0)
        return HONE_EINVAL;
    worker_find_trainer(w);
    worker_find_packer(w);
    if (hone_rest_new(o->controller, o->token, &w->rest) != 0 ||
        hone_rest_new(o->controller, o->token, &w->hb_rest) != 0) {
        worker_log(w, "bad controller URL %s", o->controller);
        return HONE_EINVAL;
    }
    hone_rest_set_abort(w->rest, stop);
    return HONE_OK;
}

/* Long-polls once. Returns 1 when a job ran, 0 when none came, <0 on trouble (backoff). */
static int worker_lease_once(hone_worker *w)
{
    char id[128], path[256], err[512];
    hone_rest_resp resp;
    int rc;

    worker_id_auth(w, w->rest, id, sizeof(id));
    if (!id[0])
        return worker_register(w, w->rest) == 0 ? 0 : HONE_EIO;
    snprintf(path, sizeof(path), "/api/v1/workers/%s/lease?wait=%d", id, w->o->lease_wait_s);
    rc = hone_rest_call(w->rest, "POST", path, NULL, w->o->lease_wait_s + 15, &resp, err,
                        sizeof(err));
    if (rc != 0)
        return rc;
    if (resp.status == 200 && json_is_object(json_object_get(resp.json, "job"))) {
        worker_kind_run(w, json_object_get(resp.json, "job"));
        rc = 1;
    } else if (resp.status == 204 || resp.status == 200) {
        rc = 0;
    } else if (resp.status == 404 || resp.status == 401) {
        worker_log(w, "controller forgot worker %s; registering again", id);
        rc = worker_register_if(w, w->rest, id) == 0 ? 0 : HONE_EIO;
    } else {
        char msg[512];
        hone_rest_error_text(&resp, msg, sizeof(msg));
        worker_log(w, "lease: %s", msg);
        rc = HONE_EIO;
    }
    hone_rest_resp_clear(&resp);
    return rc;
}

int hone_worker_run(const hone_worker_opts *o, volatile sig_atomic_t *stop)
{
    hone_worker w;
    pthread_t hb;
    int hb_started = 0, delay = 0, jobs = 0, warned = 0, rc;

    rc = worker_setup(&w, o, stop);
    if (rc != 0)
        goto fail;
    w.resident = o->resident >= 0 ? o->resident : o->device && strcmp(o->device, "cuda") == 0;
    if (o->trainer_socket) {
        char log[4096 + 32];
        snprintf(log, sizeof(log), "%s/trainer-server.log", w.work_dir);
        w.sock = hone_trun_sock_new(o->trainer_socket, log);
        w.resident = 0;
        worker_log(&w, "train jobs run on the shared trainer server at %s", o->trainer_socket);
    }
    if (w.resident)
        worker_log(&w, "train jobs run on a resident %s --serve", w.trainer);
    worker_log(&w, "controller %s, trainer %s, packer %s, work dir %s, storage %s%s%s",
               o->controller, w.trainer, w.packer, w.work_dir, w.http_storage ? "http" : "shared",
               w.http_storage ? ", cache " : "", w.http_storage ? w.cache_dir : "");
    if (o->pin_gpu)
        worker_log(&w, "GPU %d (CUDA_VISIBLE_DEVICES=%s)", o->gpu, getenv("CUDA_VISIBLE_DEVICES"));
    while (!*stop) {
        rc = worker_register(&w, w.rest);
        if (rc == 0)
            break;
        if (rc == HONE_EINVAL)
            goto fail;
        if (!warned++)
            worker_log(&w, "controller %s unreachable; retrying", o->controller);
        worker_sleep(&w, worker_backoff(&w, &delay));
    }
    rc = HONE_OK;
    if (*stop)
        goto fail;
    delay = 0;
    warned = 0;
    if (pthread_create(&hb, NULL, worker_heartbeat_main, &w) == 0)
        hb_started = 1;
    while (!*stop && (o->max_jobs == 0 || jobs < o->max_jobs)) {
        int r = worker_lease_once(&w);
        if (r >= 0) {
            if (warned)
                worker_log(&w, "controller is back");
            warned = 0;
            delay = 0;
            jobs += r;
            continue;
        }
        if (*stop)
            break;
        if (!warned++)
            worker_log(&w, "controller unreachable; retrying with backoff");
        worker_sleep(&w, worker_backoff(&w, &delay));
    }
    worker_log(&w, "shutting down after %d job(s)", jobs);
fail:
    if (hb_started) {
        atomic_store(&w.quit_hb, 1);
        pthread_join(hb, NULL);
    }
    hone_trun_server_free(w.server);
    hone_trun_sock_free(w.sock);
    hone_rest_free(w.rest);
    hone_rest_free(w.hb_rest);
    worker_nvml_free(w.nvml);
    pthread_mutex_destroy(&w.mu);
    return rc;
}
