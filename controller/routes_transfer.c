/* Dataset files over HTTP, for workers that share no disk with the controller (issue 10): a
 * manifest of a dataset's files (name, bytes, sha256) and of its packed files, and each file's
 * bytes from an offset (Range: bytes=N-), so a download resumes where it broke off.
 * Hashing, walking (transfer_list.c) and reading run on the libuv thread pool, never on the loop;
 * hashes are kept in table dataset_files with the size and mtime they were computed at. One answer
 * carries at most XFER_CHUNK bytes (206 with Content-Range when that is not the whole file): a
 * client asks again from where the last answer ended. Names are confined to the dataset's folder
 * (no '..', no dot files, no absolute paths, no link out of it), and the folder itself is opened
 * again beneath its data root at every request (data_paths.h): a folder replaced by a symbolic link
 * since it was checked is refused (409 naming the path), never followed. A convert job's packed
 * file comes back the other way (PUT /datasets/{id}/packed/{name}, its lease holder only). An
 * inference job's image folder is served the same way (GET /jobs/{id}/input[/{name}]), to the
 * worker holding its lease, without the hash cache. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "ctl.h"
#include "data_paths.h"
#include "jobs.h"
#include "kind.h"
#include "path_beneath.h"
#include "routes.h"
#include "routes_transfer.h"
#include "transfer_list.h"
#include "store.h"
#include "util.h"

#define XFER_CHUNK (8u << 20) /* bytes in one answer at most */

/* Who may read a dataset's files: the admin (or anyone without auth), or a worker holding a
 * lease on a job that reads it. Answers and returns non-zero otherwise. */
static int xfer_allowed(hone_controller *c, hone_http_req *req, hone_http_res *res,
                        const char *dataset_id, json_t **row)
{
    char wid[64], ob[64];
    const char *owner = ctl_auth_owner(c, req, ob); /* a user: only her own datasets */
    int rc = store_dataset_get(c->db, dataset_id, owner, row);
    if (rc == HONE_ENOENT) {
        hone_http_res_error(res, 404, "id", "no dataset %s", dataset_id);
        return rc;
    }
    if (rc) {
        ctl_res_store_error(c, res);
        return rc;
    }
    if (!c->cfg.auth_token || ctl_auth_is_admin(c, req) || owner)
        return HONE_OK;
    if (ctl_auth_worker_any(c, req, res, wid, sizeof wid))
        goto fail;
    if (store_dataset_leased_to(c->db, dataset_id, wid) == HONE_OK)
        return HONE_OK;
    hone_http_res_error(res, 403, "Authorization",
                        "worker %s holds no lease on a job that reads dataset %s", wid, dataset_id);
fail:
    json_decref(*row);
    *row = NULL;
    return HONE_EPERM;
}

/* A file name as the routes take it: relative, '/'-separated segments, none empty, none starting
 * with '.', no control characters. */
static int xfer_name_ok(const char *s)
{
    if (!s || !*s || strlen(s) > 1024)
        return 0;
    for (const char *seg = s; seg;) {
        const char *end = strchr(seg, '/');
        size_t n = end ? (size_t)(end - seg) : strlen(seg);
        if (n == 0 || seg[0] == '.')
            return 0;
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)seg[i] < 0x20 || seg[i] == '\\')
                return 0;
        seg = end ? end + 1 : NULL;
    }
    return 1;
}

static void xfer_packed_dir(hone_controller *c, const char *dataset_id, char *out, size_t cap)
{
    snprintf(out, cap, "%s/packed/%s", c->cfg.data_dir, dataset_id);
}

/* The routes' state (c->transfer): the users' manifest walks in flight (transfer_list.c, which
 * makes and answers the manifests) and the file read counters. */
struct ctl_transfer {
    ctl_walks *walks;
    uint64_t n_file_reads, n_file_bytes; /* dataset file answers, bytes (GET /metrics) */
};

ctl_transfer *ctl_transfer_new(void)
{
    ctl_transfer *t = hone_xcalloc(1, sizeof *t);
    t->walks = ctl_walks_new();
    return t;
}

void ctl_transfer_free(ctl_transfer *t)
{
    if (!t)
        return;
    ctl_walks_free(t->walks);
    free(t);
}

void ctl_transfer_stats(const ctl_transfer *t, uint64_t *reads, uint64_t *bytes)
{
    *reads = t->n_file_reads;
    *bytes = t->n_file_bytes;
}

/* Opens the folder a read is confined to: the dataset's (or inference job's) root beneath its
 * data root, or (packed) <data_dir>/packed/<id>; no link followed below the trusted root. */
static int xfer_root_open(hone_controller *c, int packed, const char *id, const char *root, int *fd,
                          char *msg, size_t msglen)
{
    return packed ? ctl_packed_open(&c->cfg, id, fd, msg, msglen)
                  : ctl_data_open(&c->cfg, root, fd, msg, msglen);
}

static void x_manifest(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    const char *id = hone_http_req_param(req, "id");
    json_t *row = NULL;
    char ob[64];
    if (xfer_allowed(c, req, res, id, &row))
        return;
    ctl_transfer_list(c, c->transfer->walks, res, id, jstr(row, "path"), 0,
                      ctl_auth_owner(c, req, ob));
    json_decref(row);
}

/* An inference job's image folder: the admin, or the worker holding its running lease. Writes
 * the folder; answers and returns non-zero otherwise. */
static int input_allowed(hone_controller *c, hone_http_req *req, hone_http_res *res, const char *id,
                         char *folder, size_t cap)
{
    json_t *job = NULL, *cfg = NULL;
    char wid[64], ob[64];
    const char *owner = ctl_auth_owner(c, req, ob); /* a user: only her own jobs */
    int rc = ctl_job_row_res(c, res, id, owner, &job);
    if (rc)
        return rc;
    cfg = jparse(jstr(job, "config"));
    rc = HONE_EPERM;
    if (c->cfg.auth_token && !ctl_auth_is_admin(c, req) && !owner) {
        if (ctl_auth_worker_any(c, req, res, wid, sizeof wid))
            goto fail;
        if (!jstr(job, "worker_id") || strcmp(jstr(job, "worker_id"), wid) != 0 ||
            strcmp(jstr(job, "status"), "running") != 0) {
            hone_http_res_error(res, 403, "Authorization", "job %s is not leased to worker %s", id,
                                wid);
            goto fail;
        }
    }
    if (ctl_kind_of(job)->id != HONE_KIND_INFERENCE || !jstr(cfg, "folder")) {
        hone_http_res_error(res, 404, "id", "job %s is not an inference job: it has no input", id);
        goto fail;
    }
    snprintf(folder, cap, "%s", jstr(cfg, "folder"));
    rc = HONE_OK;
fail:
    json_decref(cfg);
    json_decref(job);
    return rc;
}

static void x_input_manifest(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    const char *id = hone_http_req_param(req, "id");
    char folder[PATH_MAX], ob[64];
    if (input_allowed(c, req, res, id, folder, sizeof folder))
        return;
    ctl_transfer_list(c, c->transfer->walks, res, id, folder, 1, ctl_auth_owner(c, req, ob));
}

/* ---- one file's bytes ---- */

typedef struct xfer_read {
    uv_work_t w;
    hone_controller *c;
    hone_http_res *res;
    int packed;   /* a dataset's packed file: beneath <data_dir>/packed/<id> */
    int no_links; /* packed files and inference inputs: no link followed, even inside */
    char id[64];  /* the dataset's (packed) */
    char root[PATH_MAX];
    const char *field; /* what a 409 names: the dataset's path, or an inference job's folder */
    char name[1100];
    uint64_t from;  /* first byte asked for */
    uint64_t until; /* one past the last byte asked for (UINT64_MAX: to the end) */
    int ranged;     /* a Range header came */
    uint64_t size;  /* the file's size */
    char *buf;
    size_t len;
    int status;
    char msg[1400];
} xfer_read;

/* Parses "bytes=N-" or "bytes=N-M" (one range). 0, or non-zero when it is not that. */
static int parse_range(const char *h, uint64_t *from, uint64_t *until)
{
    char *end;
    if (strncmp(h, "bytes=", 6) != 0 || h[6] < '0' || h[6] > '9')
        return HONE_EINVAL;
    errno = 0;
    unsigned long long a = strtoull(h + 6, &end, 10);
    if (errno || *end != '-')
        return HONE_EINVAL;
    *from = a;
    *until = UINT64_MAX;
    if (end[1] == '\0')
        return HONE_OK;
    const char *b = end + 1;
    if (*b < '0' || *b > '9')
        return HONE_EINVAL;
    unsigned long long z = strtoull(b, &end, 10);
    if (errno || *end || z < a)
        return HONE_EINVAL;
    *until = z == ULLONG_MAX ? UINT64_MAX : z + 1;
    return HONE_OK;
}

static void read_run(uv_work_t *w)
{
    xfer_read *x = w->data;
    struct stat st;
    int rootfd = -1, fd = -1;
    int rc = xfer_root_open(x->c, x->packed, x->id, x->root, &rootfd, x->msg, sizeof x->msg);
    if (rc == HONE_EPERM) {
        x->status = 409;
        return;
    }
    /* a link out of the dataset's folder is not one of its files; one inside it is, where the
     * kernel can tell (list_visit lists the same); packed files and inference inputs: no link */
    if (!rc)
        rc = hone_beneath_open(rootfd, x->name, O_RDONLY | O_NONBLOCK,
                               x->no_links ? HONE_BENEATH_NO_LINKS : 0, &fd);
    if (rootfd >= 0)
        close(rootfd);
    if (rc || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        x->status = 404;
        snprintf(x->msg, sizeof x->msg, "no file %s", x->name);
        goto fail;
    }
    x->size = (uint64_t)st.st_size;
    if (x->ranged && x->size > 0 && x->from >= x->size) {
        x->status = 416;
        snprintf(x->msg, sizeof x->msg, "%s has %llu bytes: nothing from byte %llu", x->name,
                 (unsigned long long)x->size, (unsigned long long)x->from);
        goto fail;
    }
    uint64_t until = x->until < x->size ? x->until : x->size;
    uint64_t want = until > x->from ? until - x->from : 0;
    if (want > XFER_CHUNK)
        want = XFER_CHUNK;
    x->buf = hone_xmalloc(want ? want : 1);
    while (x->len < want) {
        ssize_t r = pread(fd, x->buf + x->len, want - x->len, (off_t)(x->from + x->len));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            x->status = 500;
            snprintf(x->msg, sizeof x->msg, "cannot read %s: %s", x->name,
                     r < 0 ? strerror(errno) : "file shrank");
            goto fail;
        }
        x->len += (size_t)r;
    }
fail:
    if (fd >= 0)
        close(fd);
}

static void read_abort(hone_http_res *res, void *ud)
{
    (void)res;
    ((xfer_read *)ud)->res = NULL;
}

static void read_done(uv_work_t *w, int status)
{
    xfer_read *x = w->data;
    hone_http_res *res = x->res;
    char h[128];
    if (!res)
        goto done;
    hone_http_res_on_abort(res, NULL, NULL);
    if (status) {
        hone_http_res_error(res, 503, NULL, "read canceled");
        goto done;
    }
    if (x->status == 416) {
        snprintf(h, sizeof h, "bytes */%llu", (unsigned long long)x->size);
        hone_http_res_header(res, "Content-Range", h);
    }
    if (x->status) {
        hone_http_res_error(res, x->status,
                            x->status == 416   ? "Range"
                            : x->status == 409 ? x->field
                                               : "name",
                            "%s", x->msg);
        goto done;
    }
    hone_http_res_header(res, "Accept-Ranges", "bytes");
    x->c->transfer->n_file_reads++;
    x->c->transfer->n_file_bytes += x->len;
    if ((!x->ranged && x->len == x->size) || x->size == 0) {
        hone_http_res_take(res, 200, "application/octet-stream", x->buf, x->len);
    } else {
        snprintf(h, sizeof h, "bytes %llu-%llu/%llu", (unsigned long long)x->from,
                 (unsigned long long)(x->from + x->len - (x->len ? 1 : 0)),
                 (unsigned long long)x->size);
        hone_http_res_header(res, "Content-Range", h);
        hone_http_res_take(res, 206, "application/octet-stream", x->buf, x->len);
    }
    x->buf = NULL;
done:
    free(x->buf);
    free(x);
}

/* kind: 0 a dataset's file, 1 its packed file, 2 an inference job's input. */
static void x_file(hone_http_req *req, hone_http_res *res, void *ud, int kind)
{
    hone_controller *c = ud;
    const char *id = hone_http_req_param(req, "id"), *name = hone_http_req_param(req, "name");
    const char *range = hone_http_req_header(req, "Range");
    json_t *row = NULL;
    uint64_t from = 0, until = UINT64_MAX;
    char folder[PATH_MAX];
    if (!xfer_name_ok(name) || (kind == 1 && strchr(name, '/'))) {
        hone_http_res_error(res, 422, "name", "bad file name");
        return;
    }
    if (range && parse_range(range, &from, &until)) {
        hone_http_res_error(res, 416, "Range", "Range must be bytes=N- or bytes=N-M");
        return;
    }
    if (kind == 2 ? input_allowed(c, req, res, id, folder, sizeof folder)
                  : xfer_allowed(c, req, res, id, &row))
        return;
    xfer_read *x = hone_xcalloc(1, sizeof *x);
    x->c = c;
    x->res = res;
    x->from = from;
    x->until = until;
    x->ranged = range != NULL;
    snprintf(x->name, sizeof x->name, "%s", name);
    x->packed = kind == 1;
    x->no_links = kind != 0;
    x->field = kind == 2 ? "folder" : "path";
    snprintf(x->id, sizeof x->id, "%s", id);
    if (kind != 1)
        snprintf(x->root, sizeof x->root, "%s", kind == 2 ? folder : jstr(row, "path"));
    json_decref(row);
    x->w.data = x;
    hone_http_res_on_abort(res, read_abort, x);
    if (uv_queue_work(c->loop, &x->w, read_run, read_done)) {
        hone_http_res_on_abort(res, NULL, NULL);
        hone_http_res_error(res, 503, NULL, "cannot read the file now");
        free(x);
    }
}

static void x_dataset_file(hone_http_req *req, hone_http_res *res, void *ud)
{
    x_file(req, res, ud, 0);
}

static void x_packed_file(hone_http_req *req, hone_http_res *res, void *ud)
{
    x_file(req, res, ud, 1);
}

static void x_input_file(hone_http_req *req, hone_http_res *res, void *ud)
{
    x_file(req, res, ud, 2);
}

/* ---- a convert job's packed file, uploaded by the worker that packed it ---- */

/* Only the worker holding the lease of a running convert job of the dataset whose output is
 * this name (or the admin) may write it. Answers and returns non-zero otherwise. */
static int packed_put_allowed(hone_controller *c, hone_http_req *req, hone_http_res *res)
{
    const char *id = hone_http_req_param(req, "id"), *name = hone_http_req_param(req, "name");
    json_t *rows = NULL, *r;
    char wid[64];
    size_t i;
    int ok = 0, rc = store_dataset_exists(c->db, id, NULL);
    if (rc) { /* the id becomes a folder's name: only a dataset's, even for the admin */
        if (rc == HONE_ENOENT)
            hone_http_res_error(res, 404, "id", "no dataset %s", id);
        else
            ctl_res_store_error(c, res);
        return HONE_EPERM;
    }
    if (ctl_auth_is_admin(c, req))
        return HONE_OK;
    if (ctl_auth_worker_any(c, req, res, wid, sizeof wid))
        return HONE_EPERM;
    if (store_dataset_convert_leased(c->db, id, wid, &rows) == HONE_OK) {
        json_array_foreach(rows, i, r)
        {
            json_t *cfg = jparse(jstr(r, "config"));
            const char *out = jstr(cfg, "out"), *base = out ? strrchr(out, '/') : NULL;
            ok |= base && !strcmp(base + 1, name);
            json_decref(cfg);
        }
    }
    json_decref(rows);
    if (ok)
        return HONE_OK;
    hone_http_res_error(res, 403, "Authorization",
                        "worker %s holds no lease on a convert job of dataset %s that writes %s",
                        wid, id, name);
    return HONE_EPERM;
}

static int packed_put_begin(hone_http_req *req, hone_http_res *res, void *ud, char *dir, size_t cap)
{
    hone_controller *c = ud;
    const char *id = hone_http_req_param(req, "id"), *name = hone_http_req_param(req, "name");
    char pd[PATH_MAX];
    if (!xfer_name_ok(name) || strchr(name, '/')) {
        hone_http_res_error(res, 422, "name", "bad file name");
        return HONE_EINVAL;
    }
    if (ctl_upload_sha_header_ok(req, res) || packed_put_allowed(c, req, res))
        return HONE_EPERM;
    snprintf(pd, sizeof pd, "%s/packed", c->cfg.data_dir);
    mkdir(pd, 0755);
    xfer_packed_dir(c, id, pd, sizeof pd);
    mkdir(pd, 0755);
    snprintf(dir, cap, "%s", pd);
    ctl_upload_class(c, req, 1);
    return HONE_OK;
}

static void packed_put(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    char dst[PATH_MAX + 256];
    xfer_packed_dir(c, hone_http_req_param(req, "id"), dst, PATH_MAX);
    size_t n = strlen(dst);
    snprintf(dst + n, sizeof dst - n, "/%s", hone_http_req_param(req, "name"));
    ctl_upload_store(c, req, res, dst, packed_put_allowed);
}

int ctl_routes_transfer(hone_controller *c)
{
    int rc = 0;
    rc |= hone_http_route(c->http, "GET", "/api/v1/datasets/{id}/files", x_manifest, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/datasets/{id}/files/{name}", x_dataset_file, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/datasets/{id}/packed/{name}", x_packed_file, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/jobs/{id}/input", x_input_manifest, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/jobs/{id}/input/{name}", x_input_file, c);
    rc |= hone_http_route_upload(c->http, "PUT", "/api/v1/datasets/{id}/packed/{name}",
                                 c->cfg.max_upload_bytes, packed_put_begin, packed_put, c);
    return rc ? HONE_EINVAL : HONE_OK;
}
