/* The controller object: wires the store, the HTTP routes (health, auth filter, access log and
 * every resource), the scheduler tick and the rebuilt AutoML searches onto one libuv loop, and
 * takes them down in order. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "automl.h"
#include "batch.h"
#include "checkq.h"
#include "data.h"
#include "ctl.h"
#include "ctl_sched.h"
#include "routes.h"
#include "routes_artifacts.h"
#include "routes_transfer.h"
#include "shares.h"
#include "store.h"
#include "stream.h"
#include "sweep.h"
#include "util.h"
#include "web.h"

static void config_copy(hone_controller_config *dst, const hone_controller_config *src)
{
    *dst = *src;
    dst->listen_host = hone_xstrdup(src->listen_host ? src->listen_host : "127.0.0.1");
    dst->data_dir = hone_xstrdup(src->data_dir ? src->data_dir : "./hone-data");
    dst->db_path = src->db_path ? hone_xstrdup(src->db_path) : NULL;
    dst->auth_token = src->auth_token ? hone_xstrdup(src->auth_token) : NULL;
    dst->worker_token = src->worker_token ? hone_xstrdup(src->worker_token) : NULL;
    dst->port_file = src->port_file ? hone_xstrdup(src->port_file) : NULL;
    dst->fair_weights = src->fair_weights ? hone_xstrdup(src->fair_weights) : NULL;
    dst->data_roots = NULL;
    dst->n_data_roots = 0;
    for (int i = 0; i < src->n_data_roots; i++) {
        dst->data_roots = hone_xrealloc(dst->data_roots, sizeof(char *) * (size_t)(i + 1));
        dst->data_roots[i] = hone_xstrdup(src->data_roots[i]);
        dst->n_data_roots = i + 1;
    }
    if (dst->n_data_roots == 0) {
        dst->data_roots = hone_xmalloc(2 * sizeof(char *));
        dst->data_roots[0] = hone_xstrdup(dst->data_dir);
        dst->data_roots[1] = hone_xstrdup("/usr/share/datasets");
        dst->n_data_roots = 2;
    }
}

static int mkdir_p(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) && errno != EEXIST)
                return HONE_EIO;
            *p = '/';
        }
    return mkdir(tmp, 0755) && errno != EEXIST ? HONE_EIO : HONE_OK;
}

static void healthz(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)req;
    (void)ud;
    hone_http_res_json(res, 200, json_pack("{s:s}", "status", "ok"));
}

static void readyz(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    (void)req;
    if (c->ready)
        hone_http_res_json(res, 200, json_pack("{s:s}", "status", "ready"));
    else
        hone_http_res_error(res, 503, NULL, "not ready");
}

extern const char hone_openapi_yaml[]; /* api/openapi.yaml, embedded by embed_text.cmake */
extern const size_t hone_openapi_yaml_len;

/* The API's own description: readable without a token, like the health routes. */
static void openapi(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)req;
    (void)ud;
    hone_http_res_text(res, 200, "application/yaml", hone_openapi_yaml, hone_openapi_yaml_len);
}

static void metrics(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    hone_http_stats st;
    json_t *rows = NULL, *r;
    size_t i;
    if (ctl_auth_admin_only(c, req, res, "/metrics"))
        return;
    hone_http_server_stats(c->http, &st);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fprintf(f, "# TYPE hone_http_requests_total counter\nhone_http_requests_total %llu\n",
            (unsigned long long)st.requests_total);
    fprintf(f, "hone_http_responses_total{class=\"2xx\"} %llu\n",
            (unsigned long long)st.responses_2xx);
    fprintf(f, "hone_http_responses_total{class=\"4xx\"} %llu\n",
            (unsigned long long)st.responses_4xx);
    fprintf(f, "hone_http_responses_total{class=\"5xx\"} %llu\n",
            (unsigned long long)st.responses_5xx);
    fprintf(f, "hone_http_connections_open %llu\n", (unsigned long long)st.connections_open);
    hone_http_upload_stats us;
    hone_http_upload_stats_get(c->http, &us);
    fprintf(f, "hone_http_uploads_active %llu\nhone_http_uploads_waiting %llu\n",
            (unsigned long long)us.active, (unsigned long long)us.waiting);
    fprintf(f, "hone_http_upload_buffered_bytes %llu\nhone_http_upload_buffered_peak_bytes %llu\n",
            (unsigned long long)us.buffered_bytes, (unsigned long long)us.buffered_peak);
    fprintf(f, "hone_http_uploads_total %llu\nhone_http_upload_bytes_total %llu\n",
            (unsigned long long)us.uploads_total, (unsigned long long)us.bytes_total);
    fprintf(f, "hone_http_uploads_refused_busy_total %llu\n", (unsigned long long)us.refused_busy);
    fprintf(f, "# TYPE hone_reports_total counter\nhone_reports_total %llu\n",
            (unsigned long long)c->n_reports);
    fprintf(f, "hone_leases_total %llu\nhone_leases_expired_total %llu\n",
            (unsigned long long)c->n_leases, (unsigned long long)c->n_expired);
    fprintf(f, "hone_leases_released_total %llu\n", (unsigned long long)c->n_released);
    fprintf(f, "hone_lease_requests_waiting %d\n", c->n_waiters);
    uint64_t reads = 0, bytes = 0;
    ctl_transfer_stats(c->transfer, &reads, &bytes);
    fprintf(f, "hone_dataset_file_reads_total %llu\nhone_dataset_file_bytes_total %llu\n",
            (unsigned long long)reads, (unsigned long long)bytes);
    fprintf(f, "hone_workers_live %d\n", ctl_live_workers(c));
    uint64_t offloop = 0, deferred = 0;
    ctl_asks_stats(c->asks, &offloop, &deferred);
    fprintf(f, "hone_automl_asks_offloop_total %llu\nhone_requests_deferred_total %llu\n",
            (unsigned long long)offloop, (unsigned long long)deferred);
    if (store_jobs_count_by_status(c->db, &rows) == HONE_OK)
        json_array_foreach(rows, i, r) fprintf(f, "hone_jobs{action=\"%s\",status=\"%s\"} %lld\n",
                                               jstr(r, "action"), jstr(r, "status"), jint(r, "n"));
    json_decref(rows);
    fclose(f);
    hone_http_res_take(res, 200, "text/plain; version=0.0.4", buf, len);
}

/* Before any handler that may write (anything but GETs and reports), the open report batch is
 * committed, so that handler's own reply can never overtake an uncommitted report. */
static void flush_for(hone_controller *c, hone_http_req *req)
{
    const char *m = hone_http_req_method(req), *route = hone_http_req_route(req);
    if (!strcmp(m, "GET") || !strcmp(m, "HEAD") ||
        (route && !strcmp(route, "/api/v1/jobs/{id}/report")))
        return;
    ctl_batch_flush(c);
}

static int auth_filter(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    flush_for(c, req);
    return ctl_auth_filter(c, req, res);
}

static void access_log(const char *method, const char *path, int status, uint64_t micros, void *ud)
{
    hone_controller *c = ud;
    ctl_log(c, status >= 500 ? "error" : "info", "request",
            json_pack("{s:s,s:s,s:i,s:I}", "method", method, "path", path, "status", status,
                      "micros", (json_int_t)micros));
}

static int routes(hone_controller *c)
{
    int rc = 0;
    rc |= hone_http_route(c->http, "GET", "/healthz", healthz, c);
    rc |= hone_http_route(c->http, "GET", "/readyz", readyz, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/openapi.yaml", openapi, c);
    rc |= hone_http_route(c->http, "GET", "/metrics", metrics, c);
    rc |= ctl_routes_datasets(c);
    rc |= ctl_routes_dataset_upload(c); /* after the dataset routes, as they registered it */
    rc |= ctl_routes_experiments(c);
    rc |= ctl_routes_jobs(c);
    rc |= ctl_routes_stream(c);
    rc |= ctl_routes_web(c);
    rc |= ctl_routes_workers(c);
    rc |= ctl_routes_artifacts(c);
    rc |= ctl_routes_users(c);
    rc |= ctl_routes_transfer(c);
    /* answered on the HTTP server's reserve slots when a flood holds every other one */
    static const char *const priority[][2] = {{"GET", "/healthz"},
                                              {"GET", "/readyz"},
                                              {"POST", "/api/v1/workers"},
                                              {"POST", "/api/v1/workers/{id}/heartbeat"},
                                              {"POST", "/api/v1/workers/{id}/lease"},
                                              {"POST", "/api/v1/jobs/{id}/report"},
                                              {"POST", "/api/v1/jobs/{id}/complete"}};
    for (size_t i = 0; i < HONE_ARRAY_LEN(priority); i++)
        rc |= hone_http_route_priority(c->http, priority[i][0], priority[i][1]);
    return rc ? HONE_EINVAL : HONE_OK;
}

/* After each commit of the report batch: the epochs just made durable go out to the streams; a
 * failed commit means the searches saw reports that were not stored, so they are rebuilt from what
 * was. Here rather than in batch.c, so that the batch calls nothing above the store. */
static void batch_committed(hone_controller *c, int rc)
{
    if (rc == HONE_OK) {
        ctl_streams_pump(c);
        return;
    }
    ctl_log(c, "error", "batch_commit_failed", NULL);
    ctl_automl_rebuild_all(c);
}

int hone_controller_new(uv_loop_t *loop, const hone_controller_config *cfg, hone_controller **out,
                        char *err, size_t errlen)
{
    hone_controller *c = hone_xcalloc(1, sizeof *c);
    json_t *rows = NULL, *r;
    size_t i;
    int rc, version = 0;
    c->loop = loop;
    config_copy(&c->cfg, cfg);
    *out = NULL;
    if (c->cfg.auth_token && ctl_auth_hash(c->cfg.auth_token, c->admin_key_hash)) {
        snprintf(err, errlen, "cannot hash the admin key");
        rc = HONE_EIO;
        goto fail;
    }
    size_t n = strlen(c->cfg.data_dir) + 32;
    c->artifacts_dir = hone_xmalloc(n);
    snprintf(c->artifacts_dir, n, "%s/artifacts", c->cfg.data_dir);
    if (mkdir_p(c->cfg.data_dir) || mkdir_p(c->artifacts_dir)) {
        snprintf(err, errlen, "cannot create %s: %s", c->artifacts_dir, strerror(errno));
        rc = HONE_EIO;
        goto fail;
    }
    if (!c->cfg.db_path) {
        n = strlen(c->cfg.data_dir) + 16;
        c->cfg.db_path = hone_xmalloc(n);
        snprintf(c->cfg.db_path, n, "%s/hone.db", c->cfg.data_dir);
    }
    /* the subsystems' handles, before anything that may use them */
    c->batch = ctl_batch_new(c, batch_committed);
    c->streams = ctl_streams_new();
    c->transfer = ctl_transfer_new();
    c->downloads = ctl_downloads_new();
    c->fair = ctl_fair_new();
    c->asks = ctl_asks_new();
    if ((rc = db_open(c->cfg.db_path, &c->db, &version))) {
        snprintf(err, errlen, "cannot open the store %s", c->cfg.db_path);
        goto fail;
    }
    hone_http_limits lim;
    hone_http_limits_default(&lim);
    lim.max_body_bytes = c->cfg.max_body_bytes;
    lim.max_header_bytes = c->cfg.max_header_bytes;
    lim.max_connections = c->cfg.max_connections;
    lim.max_per_address = c->cfg.max_per_address;
    if ((rc = hone_http_server_new(loop, &lim, &c->http)) || (rc = routes(c))) {
        snprintf(err, errlen, "cannot set up the HTTP server: %s", hone_strerror(rc));
        goto fail;
    }
    hone_http_upload_limits ul = {.max_uploads = c->cfg.max_uploads,
                                  .inflight_bytes = c->cfg.upload_inflight};
    hone_http_set_upload_limits(c->http, &ul);
    hone_http_set_filter(c->http, auth_filter, c);
    hone_http_set_access_log(c->http, access_log, c);
    c->kind_up.kick = ctl_sched_kick; /* the kinds call up through these (ctl.h) */
    c->kind_up.flush = ctl_batch_flush;
    c->kind_up.close_step = ctl_close_step;
    c->on_tick = ctl_streams_tick; /* the scheduler's tick, without it naming the streams */
    ctl_log(c, "info", "store_open",
            json_pack("{s:s,s:i}", "db", c->cfg.db_path, "schema_version", version));
    if ((rc = ctl_automl_rebuild_all(c)) || (rc = ctl_sched_start(c))) {
        snprintf(err, errlen, "cannot restore state: %s", hone_strerror(rc));
        goto fail;
    }
    /* A search may have work that a crash kept it from handing out (or may be done). */
    if (store_automl_list_running(c->db, &rows) == HONE_OK)
        json_array_foreach(rows, i, r) ctl_automl_step(c, jstr(r, "id"));
    json_decref(rows);
    ctl_sweep_uploads(c); /* before it listens: no upload is in flight */
    /* the COCO parses of every check thread share one budget (data/coco_memory.c) */
    hone_data_coco_memory_budget(c->cfg.coco_json_memory ? c->cfg.coco_json_memory
                                                         : (size_t)2 << 30,
                                 "the controller's limits.coco_json_memory: raise it to check "
                                 "this file");
    if ((rc = ctl_checkq_new(loop, c->cfg.dataset_checks > 0 ? c->cfg.dataset_checks : 2,
                             &c->checkq))) {
        snprintf(err, errlen, "cannot start the dataset check threads: %s", hone_strerror(rc));
        goto fail;
    }
    c->ready = 1;
    *out = c;
    return HONE_OK;
fail:
    hone_controller_free(c);
    return rc;
}

int hone_controller_listen(hone_controller *c, int *port)
{
    int bound = 0;
    int rc = hone_http_listen(c->http, c->cfg.listen_host, c->cfg.listen_port, &bound);
    if (rc)
        return rc;
    if (port)
        *port = bound;
    const char *h = c->cfg.listen_host;
    int v6 = strchr(h, ':') != NULL;
    fprintf(stderr, "listening on http://%s%s%s:%d\n", v6 ? "[" : "", h, v6 ? "]" : "", bound);
    fflush(stderr);
    if (c->cfg.port_file) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", c->cfg.port_file);
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%d\n", bound) < 0 || fclose(f) || rename(tmp, c->cfg.port_file))
            return HONE_EIO;
    }
    return HONE_OK;
}

static void close_step(void *arg)
{
    ctl_close_step(arg);
}

static void tick_closed(uv_handle_t *h) /* the tick timer */
{
    close_step(h->data);
}

void hone_controller_close(hone_controller *c, void (*done)(void *arg), void *arg)
{
    c->closing = 1;
    c->ready = 0;
    c->close_done = done;
    c->close_arg = arg;
    c->close_pending = 1;
    ctl_batch_flush(c);
    ctl_streams_close(c);
    ctl_defer_close(c);
    ctl_sched_stop(c);
    c->close_pending += ctl_asks_inflight(c->asks); /* each ask's completion steps once */
    if (c->checkq) { /* queued checks answer 503; running ones finish */
        c->close_pending++;
        ctl_checkq_close(c->checkq, close_step, c);
    }
    if (c->batch) {
        c->close_pending++;
        ctl_batch_close(c->batch, close_step, c);
    }
    if (c->tick_open) {
        c->close_pending++;
        c->tick_open = 0;
        uv_close((uv_handle_t *)&c->tick, tick_closed);
    }
    if (c->http) {
        c->close_pending++;
        hone_http_server_close(c->http, close_step, c);
    }
    close_step(c);
}

void hone_controller_free(hone_controller *c)
{
    if (!c)
        return;
    if (ctl_asks_inflight(c->asks) > 0) { /* not closed: wait for the pool to give searches back */
        c->closing = 1;
        c->close_done = NULL;
        while (ctl_asks_inflight(c->asks) > 0)
            uv_run(c->loop, UV_RUN_ONCE);
    }
    ctl_checkq_free(c->checkq); /* before the store: a running check's answer may store it */
    ctl_defer_close(c);
    ctl_automl_free_all(c);
    ctl_streams_close(c);
    hone_http_server_free(c->http); /* its answers' ends count down downloads and walks */
    ctl_streams_free(c->streams);
    ctl_batch_free(c->batch); /* closes its handle first if _new failed */
    ctl_downloads_free(c->downloads);
    ctl_transfer_free(c->transfer);
    ctl_fair_free(c->fair);
    ctl_asks_free(c->asks); /* ctl_defer_close above answered what it held */
    db_close(c->db);
    free(c->artifacts_dir);
    hone_controller_config_free(&c->cfg);
    free(c);
}
