/* Dataset files over HTTP, for workers that share no disk with the controller (issue 10): a
 * manifest of a dataset's files (name, bytes, sha256) and of its packed files, and each file's
 * bytes from an offset (Range: bytes=N-), so a download resumes where it broke off.
 * Hashing, walking and reading run on the libuv thread pool, never on the loop; hashes are kept in
 * table dataset_files with the size and mtime they were computed at. One answer carries at most
 * XFER_CHUNK bytes (206 with Content-Range when that is not the whole file): a client asks again
 * from where the last answer ended. Names are confined to the dataset's folder (no '..', no dot
 * files, no absolute paths, no link out of it), and the folder itself is opened again beneath its
 * data root at every request (data_paths.h): a folder replaced by a symbolic link since it was
 * checked is refused (409 naming the path), never followed. A convert job's packed
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
#include "path_beneath.h"
#include "routes.h"
#include "routes_transfer.h"
#include "store.h"
#include "util.h"

#define XFER_CHUNK (8u << 20) /* bytes in one answer at most */
#define XFER_MAX_FILES 200000 /* files one manifest lists at most */

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

/* Opens the folder a read is confined to: the dataset's (or inference job's) root beneath its
 * data root, or (packed) <data_dir>/packed/<id>; no link followed below the trusted root. */
static int xfer_root_open(hone_controller *c, int packed, const char *id, const char *root, int *fd,
                          char *msg, size_t msglen)
{
    return packed ? ctl_packed_open(&c->cfg, id, fd, msg, msglen)
                  : ctl_data_open(&c->cfg, root, fd, msg, msglen);
}

/* ---- the manifest ---- */

typedef struct xfer_list {
    uv_work_t w;
    hone_controller *c;
    hone_http_res *res;
    char id[64];
    char root[PATH_MAX];          /* the dataset's folder */
    int job_input;                /* an inference job's folder: no hash cache, no packed files */
    json_t *cached;               /* rows of dataset_files before (loop-owned until queued) */
    json_t *files, *packed_files; /* [{name, bytes, sha256}] built off the loop */
    json_t *fresh;                /* [{kind, name, bytes, mtime, sha256}] to store */
    int status;
    char msg[512];
    char owner[64]; /* a user's (not an admin's or a worker's) walk: counted in the walks */
} xfer_list;

/* A user's file-list walks in flight (walks: owner -> count). Each hashes a folder on the
 * thread pool that uploads, dataset checks and file reads share; one at a time per user, so that
 * one user's repeated lists cannot hold every thread. */
#define XFER_WALKS_PER_USER 1

struct ctl_transfer {
    json_t *walks;
    uint64_t n_file_reads, n_file_bytes; /* dataset file answers, bytes (GET /metrics) */
};

ctl_transfer *ctl_transfer_new(void)
{
    ctl_transfer *t = hone_xcalloc(1, sizeof *t);
    t->walks = json_object();
    return t;
}

void ctl_transfer_free(ctl_transfer *t)
{
    if (!t)
        return;
    json_decref(t->walks);
    free(t);
}

void ctl_transfer_stats(const ctl_transfer *t, uint64_t *reads, uint64_t *bytes)
{
    *reads = t->n_file_reads;
    *bytes = t->n_file_bytes;
}

static int walks_of(hone_controller *c, const char *owner)
{
    return (int)json_integer_value(json_object_get(c->transfer->walks, owner));
}

static void walks_add(hone_controller *c, const char *owner, int d)
{
    int n = walks_of(c, owner) + d;
    if (n > 0)
        json_object_set_new(c->transfer->walks, owner, json_integer(n));
    else
        json_object_del(c->transfer->walks, owner);
}

static const json_t *cached_row(const json_t *cached, const char *kind, const char *name)
{
    size_t i;
    json_t *r;
    json_array_foreach(cached, i, r) if (!strcmp(jstr(r, "kind"), kind) &&
                                         !strcmp(jstr(r, "name"), name)) return r;
    return NULL;
}

/* Adds one regular file (fd, open) to out, hashing it unless the cached hash has its size and
 * mtime. */
static int list_one(xfer_list *l, const char *kind, int fd, const char *name, const struct stat *st,
                    json_t *out)
{
    double mtime = (double)st->st_mtim.tv_sec + st->st_mtim.tv_nsec * 1e-9;
    const json_t *r = cached_row(l->cached, kind, name);
    char sha[65];
    if (r && jint(r, "bytes") == (long long)st->st_size && jnum(r, "mtime") == mtime &&
        strlen(jstr(r, "sha256")) == 64) {
        snprintf(sha, sizeof sha, "%s", jstr(r, "sha256"));
    } else {
        if (hone_sha256_fd(fd, sha)) {
            l->status = 500;
            snprintf(l->msg, sizeof l->msg, "cannot read %.300s: %s", name, strerror(errno));
            return HONE_EIO;
        }
        json_array_append_new(l->fresh, json_pack("{s:s,s:s,s:I,s:f,s:s}", "kind", kind, "name",
                                                  name, "bytes", (json_int_t)st->st_size, "mtime",
                                                  mtime, "sha256", sha));
    }
    json_array_append_new(out, json_pack("{s:s,s:I,s:s}", "name", name, "bytes",
                                         (json_int_t)st->st_size, "sha256", sha));
    return HONE_OK;
}

/* One walk of list_run: a folder opened beneath its root, its files added to out. */
typedef struct list_walk {
    xfer_list *l;
    int rootfd;
    const char *kind;
    json_t *out;
} list_walk;

/* A regular file is listed; a link only when it stays inside the folder (where openat2 can tell:
 * hone_beneath_open), and only to a file; a link to a folder is not walked. An inference folder's
 * links are never listed: hone-train --infer does not follow them either. */
static int list_visit(void *ud, int dirfd, const char *name, const char *rel, const struct stat *st)
{
    list_walk *k = ud;
    struct stat fst;
    int fd = -1, rc;
    if (S_ISDIR(st->st_mode))
        return 0;
    if (json_array_size(k->out) >= XFER_MAX_FILES)
        return 1;
    if (S_ISLNK(st->st_mode) && !k->l->job_input)
        hone_beneath_open(k->rootfd, rel, O_RDONLY | O_NONBLOCK, 0, &fd);
    else if (S_ISREG(st->st_mode))
        fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    rc = fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode)
             ? list_one(k->l, k->kind, fd, rel, &fst, k->out)
             : HONE_OK;
    close(fd);
    return rc;
}

/* Walks one folder (packed: the dataset's packed folder, its top level only). A folder that is
 * not there lists nothing; one that no longer opens beneath its root is 409. */
static void list_folder(xfer_list *l, int packed, json_t *out)
{
    list_walk k = {.l = l, .kind = packed ? "packed" : "file", .out = out};
    int rc = xfer_root_open(l->c, packed, l->id, l->root, &k.rootfd, l->msg, sizeof l->msg);
    if (rc == HONE_ENOENT)
        return;
    if (rc == HONE_EPERM) {
        l->status = 409;
        return;
    }
    if (!rc)
        rc = hone_beneath_walk(k.rootfd, packed ? 0 : 8, list_visit, &k) == HONE_OK ? HONE_OK
                                                                                    : HONE_EIO;
    if (k.rootfd >= 0)
        close(k.rootfd);
    if (rc && !l->status) {
        l->status = 500;
        snprintf(l->msg, sizeof l->msg, "cannot read %s: %s",
                 packed ? "the packed files" : "the dataset's folder", strerror(errno));
    }
}

static void list_run(uv_work_t *w)
{
    xfer_list *l = w->data;
    list_folder(l, 0, l->files);
    if (!l->job_input && !l->status)
        list_folder(l, 1, l->packed_files);
}

static void list_abort(hone_http_res *res, void *ud)
{
    (void)res;
    ((xfer_list *)ud)->res = NULL;
}

static void list_done(uv_work_t *w, int status)
{
    xfer_list *l = w->data;
    hone_controller *c = l->c;
    size_t i;
    json_t *r;
    if (l->res)
        hone_http_res_on_abort(l->res, NULL, NULL);
    /* New hashes are kept even when the client left: the next manifest needs no hashing. */
    if (!status && !l->job_input && json_array_size(l->fresh) && db_begin(c->db) == HONE_OK) {
        int rc = HONE_OK;
        json_array_foreach(l->fresh, i, r) rc |=
            store_dataset_file_put(c->db, l->id, jstr(r, "kind"), jstr(r, "name"), jint(r, "bytes"),
                                   jnum(r, "mtime"), jstr(r, "sha256"));
        if (rc || db_commit(c->db))
            db_rollback(c->db);
    }
    if (!l->res)
        goto done;
    if (status)
        hone_http_res_error(l->res, 503, NULL, "manifest canceled");
    else if (l->status == 409) /* the folder is no longer where it was checked */
        hone_http_res_error(l->res, 409, l->job_input ? "folder" : "path", "%s", l->msg);
    else if (l->status)
        hone_http_res_error(l->res, l->status, NULL, "%s", l->msg);
    else if (l->job_input)
        hone_http_res_json(l->res, 200, json_pack("{s:s,s:O}", "job_id", l->id, "files", l->files));
    else
        hone_http_res_json(l->res, 200,
                           json_pack("{s:s,s:O,s:O}", "dataset_id", l->id, "files", l->files,
                                     "packed", l->packed_files));
done:
    if (l->owner[0])
        walks_add(c, l->owner, -1);
    json_decref(l->cached);
    json_decref(l->files);
    json_decref(l->packed_files);
    json_decref(l->fresh);
    free(l);
}

/* Walks root (and, for a dataset, its packed folder) on the thread pool and answers. owner: the
 * user asking (NULL for admins and workers). */
static void list_start(hone_controller *c, hone_http_res *res, const char *id, const char *root,
                       int job_input, const char *owner)
{
    if (owner && walks_of(c, owner) >= XFER_WALKS_PER_USER) {
        hone_http_res_header(res, "Retry-After", "2");
        hone_http_res_error(res, 503, NULL,
                            "a file list of yours is still being made (one at a time per user); "
                            "retry when it is done");
        return;
    }
    xfer_list *l = hone_xcalloc(1, sizeof *l);
    l->c = c;
    if (owner) {
        snprintf(l->owner, sizeof l->owner, "%s", owner);
        walks_add(c, owner, 1);
    }
    l->res = res;
    l->job_input = job_input;
    snprintf(l->id, sizeof l->id, "%s", id);
    snprintf(l->root, sizeof l->root, "%s", root);
    if (job_input || store_dataset_files_list(c->db, id, &l->cached))
        l->cached = json_array();
    l->files = json_array();
    l->packed_files = json_array();
    l->fresh = json_array();
    l->w.data = l;
    hone_http_res_on_abort(res, list_abort, l);
    if (uv_queue_work(c->loop, &l->w, list_run, list_done)) {
        l->res = NULL;
        hone_http_res_on_abort(res, NULL, NULL);
        hone_http_res_error(res, 503, NULL, "cannot list the files now");
        list_done(&l->w, 0);
    }
}

static void x_manifest(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    const char *id = hone_http_req_param(req, "id");
    json_t *row = NULL;
    char ob[64];
    if (xfer_allowed(c, req, res, id, &row))
        return;
    list_start(c, res, id, jstr(row, "path"), 0, ctl_auth_owner(c, req, ob));
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
    if (strcmp(jstr(job, "action"), "inference") != 0 || !jstr(cfg, "folder")) {
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
    list_start(c, res, id, folder, 1, ctl_auth_owner(c, req, ob));
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
