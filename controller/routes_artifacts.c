/* Job artifacts: list the files of a job's folder (and best_model/ for AutoML jobs), download one,
 * and upload one (workers that share no disk with the controller; only the worker holding the
 * job's lease). Downloads stream from the file in bounded chunks off the loop (api/ file answers,
 * with Range), a few at a time per user; uploads stream to a temp file in the job's folder (api/
 * upload routes): who may write is settled before any byte of the body is stored. Names are
 * confined to the job's folder: one or two plain segments, no dot files, no '..'. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "ctl.h"
#include "jobs.h"
#include "kind.h"
#include "path_beneath.h"
#include "routes.h"
#include "routes_artifacts.h"
#include "store.h"
#include "util.h"

static int name_ok(const char *s)
{
    if (!s || !*s || s[0] == '.' || strlen(s) > 200)
        return 0;
    for (const char *p = s; *p; p++)
        if (*p == '/' || *p == '\\' || (unsigned char)*p < 0x20)
            return 0;
    return 1;
}

static int job_exists(hone_controller *c, hone_http_req *req, hone_http_res *res, const char *id)
{
    json_t *row = NULL;
    char ob[64];
    int rc = ctl_job_row_res(c, res, id, ctl_auth_owner(c, req, ob), &row);
    json_decref(row);
    return rc;
}

/* Whether worker wid runs an evaluate, inference or export job on job id's model. */
static int action_parent_of(hone_controller *c, const char *wid, const char *id)
{
    json_t *rows = NULL, *r;
    size_t i;
    int yes = 0;
    if (store_worker_actions_running(c->db, wid, &rows) == HONE_OK)
        json_array_foreach(rows, i, r)
        {
            json_t *cfg = jparse(jstr(r, "config"));
            yes |= jstr(cfg, "parent_job_id") && !strcmp(jstr(cfg, "parent_job_id"), id);
            json_decref(cfg);
        }
    json_decref(rows);
    return yes;
}

/* Whether worker wid runs a train job (or trial) that starts from job id's model. */
static int finetune_parent_of(hone_controller *c, const char *wid, const char *id)
{
    json_t *row = NULL;
    int yes = store_worker_finetune_running(c->db, wid, id, &row) == HONE_OK;
    json_decref(row);
    return yes;
}

/* A worker credential reads artifacts of a job it holds only (a resumed trial's checkpoint); the
 * admin (or anyone without auth) reads them all. Answers and returns non-zero otherwise. */
static int worker_read_allowed(hone_controller *c, hone_http_req *req, hone_http_res *res,
                               const char *id)
{
    json_t *job = NULL;
    char wid[64], ob[64];
    if (!c->cfg.auth_token || ctl_auth_is_admin(c, req))
        return HONE_OK;
    if (ctl_auth_owner(c, req, ob))
        return HONE_OK; /* a user, whose job it is: job_exists looked it up by owner */
    if (ctl_auth_worker_any(c, req, res, wid, sizeof wid))
        return HONE_EPERM;
    int rc = ctl_job_row_res(c, res, id, NULL, &job);
    if (rc == HONE_OK &&
        (!jstr(job, "worker_id") || strcmp(jstr(job, "worker_id"), wid) != 0 ||
         strcmp(jstr(job, "status"), "running") != 0) &&
        !action_parent_of(c, wid, id) && !finetune_parent_of(c, wid, id)) {
        hone_http_res_error(res, 403, "Authorization", "job %s is not leased to worker %s", id,
                            wid);
        rc = HONE_EPERM;
    }
    json_decref(job);
    return rc;
}

static void list_dir(json_t *arr, const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char p[4096], name[512];
        struct stat st;
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        snprintf(name, sizeof name, "%s%s", prefix, e->d_name);
        if (lstat(p, &st))
            continue;
        if (S_ISREG(st.st_mode))
            json_array_append_new(
                arr, json_pack("{s:s,s:I}", "name", name, "bytes", (json_int_t)st.st_size));
        else if (S_ISDIR(st.st_mode) && !*prefix) {
            char pre[300];
            snprintf(pre, sizeof pre, "%s/", e->d_name);
            list_dir(arr, p, pre);
        }
    }
    if (d)
        closedir(d);
}

static void model_list_start(hone_controller *c, hone_http_req *req, hone_http_res *res,
                             const char *id, const char *dir);

static void a_list(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    const char *id = hone_http_req_param(req, "id");
    if (job_exists(c, req, res, id) || worker_read_allowed(c, req, res, id))
        return;
    char *dir = ctl_job_dir(c, id);
    const char *model = hone_http_req_query(req, "model");
    if (model && strcmp(model, "0")) { /* the model's files with their sha256 (model_files.c) */
        model_list_start(c, req, res, id, dir);
        free(dir);
        return;
    }
    json_t *arr = json_array();
    list_dir(arr, dir, "");
    free(dir);
    hone_http_res_json(res, 200, json_pack("{s:o}", "files", arr));
}

/* A user's downloads under way (by_owner: owner -> count). Each holds a connection, a file
 * and up to two chunks of memory while its client reads; limits.downloads_per_user at once per
 * user, so that one user's parallel downloads cannot hold them all. Admins and workers (a resumed
 * trial's checkpoint) are not counted. */
typedef struct dl_count {
    hone_controller *c;
    char owner[64];
    char token[65]; /* the SHA-256 of the login token it began with, or "" */
} dl_count;

struct ctl_downloads {
    json_t *by_owner;
};

ctl_downloads *ctl_downloads_new(void)
{
    ctl_downloads *d = hone_xcalloc(1, sizeof *d);
    d->by_owner = json_object();
    return d;
}

void ctl_downloads_free(ctl_downloads *d)
{
    if (!d)
        return;
    json_decref(d->by_owner);
    free(d);
}

static int downloads_of(hone_controller *c, const char *owner)
{
    return (int)json_integer_value(json_object_get(c->downloads->by_owner, owner));
}

static void downloads_add(hone_controller *c, const char *owner, int d)
{
    int n = downloads_of(c, owner) + d;
    if (n > 0)
        json_object_set_new(c->downloads->by_owner, owner, json_integer(n));
    else
        json_object_del(c->downloads->by_owner, owner);
}

/* Whether a user's download may go on: the login token it began with is still good (not revoked,
 * expired, nor its user disabled); asked every few MiB (hone_http_res_file_guard). */
static int download_ok(void *ud)
{
    dl_count *d = ud;
    const char *why = NULL;
    return !d->token[0] || ctl_auth_token_check(d->c, d->token, &why) != HONE_EPERM;
}

/* 1, with the 503 answered, when owner's downloads under way fill limits.downloads_per_user. */
static int downloads_full(hone_controller *c, hone_http_res *res, const char *owner)
{
    if (!owner || downloads_of(c, owner) < c->cfg.downloads_per_user)
        return 0;
    hone_http_res_header(res, "Retry-After", "2");
    hone_http_res_error(res, 503, "limits.downloads_per_user",
                        "%d downloads of yours are under way (limits.downloads_per_user): "
                        "retry when one is done",
                        downloads_of(c, owner));
    return 1;
}

/* One more download of owner's under way (NULL for none: an admin's, a worker's, a HEAD); its
 * end (download_end) counts it off. */
static dl_count *download_begin(hone_controller *c, const char *owner)
{
    if (!owner)
        return NULL;
    dl_count *d = hone_xcalloc(1, sizeof *d);
    d->c = c;
    snprintf(d->owner, sizeof d->owner, "%s", owner);
    downloads_add(c, owner, 1);
    return d;
}

/* The file answer is over (whole, or its client left): the user's count drops. */
static void download_end(void *ud, int complete)
{
    dl_count *d = ud;
    (void)complete;
    downloads_add(d->c, d->owner, -1);
    free(d);
}

/* GET /jobs/{id}/artifacts?model=1: hashing a model is read off the loop, and counts as one of a
 * user's downloads while it runs (limits.downloads_per_user), so that no user fills the thread
 * pool with it. */
static void model_list_end(void *ud)
{
    download_end(ud, 1);
}

static void model_list_start(hone_controller *c, hone_http_req *req, hone_http_res *res,
                             const char *id, const char *dir)
{
    json_t *row = NULL;
    char ob[64];
    const char *owner = ctl_auth_owner(c, req, ob);
    if (downloads_full(c, res, owner))
        return;
    dl_count *d = download_begin(c, owner);
    int search = ctl_job_row(c, id, &row) == HONE_OK && ctl_kind_of(row)->has_trials;
    json_decref(row);
    ctl_model_files_list(c, res, dir, search ? "best_model" : "", d ? model_list_end : NULL, d);
}

static void a_get(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    const char *id = hone_http_req_param(req, "id");
    const char *sub = hone_http_req_param(req, "dir"), *name = hone_http_req_param(req, "name");
    char ob[64];
    if ((sub && !name_ok(sub)) || !name_ok(name)) {
        hone_http_res_error(res, 422, "name", "bad artifact name");
        return;
    }
    if (job_exists(c, req, res, id) || worker_read_allowed(c, req, res, id))
        return;
    /* a HEAD reads nothing: not counted */
    const char *owner =
        strcmp(hone_http_req_method(req), "HEAD") ? ctl_auth_owner(c, req, ob) : NULL;
    if (downloads_full(c, res, owner))
        return;
    char *dir = ctl_job_dir(c, id), rel[512];
    snprintf(rel, sizeof rel, "%s%s%s", sub ? sub : "", sub ? "/" : "", name);
    /* opened beneath the job's folder, no link followed (a folder of it replaced by a link on a
     * shared disk leads nowhere) */
    int fd = -1, root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    free(dir);
    if (root >= 0 &&
        hone_beneath_open(root, rel, O_RDONLY | O_NONBLOCK, HONE_BENEATH_NO_LINKS, &fd) != HONE_OK)
        fd = -1;
    if (root >= 0)
        close(root);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        hone_http_res_error(res, 404, "name", "no artifact %s%s%s", sub ? sub : "", sub ? "/" : "",
                            name);
        return;
    }
    dl_count *d = download_begin(c, owner);
    if (d && ctl_auth_token_hash(req, d->token))
        hone_http_res_file_guard(res, download_ok);
    /* the fd is the answer's now: read in chunks on the thread pool, closed when it is over */
    hone_http_res_download(res, "application/octet-stream", fd, (uint64_t)st.st_size,
                           d ? download_end : NULL, d);
}

/* Only the worker holding the job's current lease may upload, and only while the job runs (or an
 * admin, with auth configured): a finished job's model cannot be swapped afterwards. Answers and
 * returns non-zero otherwise. */
static int upload_allowed(hone_controller *c, hone_http_req *req, hone_http_res *res,
                          const char *id)
{
    json_t *job = NULL;
    char wid[64];
    int admin = ctl_auth_is_admin(c, req);
    if (!admin && ctl_auth_worker_any(c, req, res, wid, sizeof wid))
        return HONE_EPERM;
    int rc = ctl_job_row_res(c, res, id, NULL, &job); /* a worker's or an admin's */
    if (rc || admin)
        goto fail;
    const char *st = jstr(job, "status"), *holder = jstr(job, "worker_id");
    rc = HONE_EPERM;
    if (strcmp(st, "running") != 0)
        hone_http_res_error(res, 409, "id", "job %s is %s: artifacts are uploaded while it runs",
                            id, st);
    else if (!holder || strcmp(holder, wid) != 0)
        hone_http_res_error(res, 403, "Authorization", "job %s is leased to %s, not to worker %s",
                            id, holder ? holder : "nobody", wid);
    else
        rc = HONE_OK;
fail:
    json_decref(job);
    return rc;
}

/* The PUT's first half, once its headers are in and before any byte of its body is kept: the
 * name, then who may write; the body then goes to a temp file in the job's folder. */
static int a_put_begin(hone_http_req *req, hone_http_res *res, void *ud, char *dir, size_t cap)
{
    hone_controller *c = ud;
    const char *id = hone_http_req_param(req, "id"), *name = hone_http_req_param(req, "name");
    if (!name_ok(name)) {
        hone_http_res_error(res, 422, "name", "bad artifact name");
        return HONE_EINVAL;
    }
    if (ctl_upload_sha_header_ok(req, res))
        return HONE_EINVAL;
    if (upload_allowed(c, req, res, id))
        return HONE_EPERM;
    char *jd = ctl_job_dir(c, id);
    mkdir(c->artifacts_dir, 0755);
    mkdir(jd, 0755);
    snprintf(dir, cap, "%s", jd);
    free(jd);
    ctl_upload_class(c, req, 1);
    return HONE_OK;
}

/* Rename the spooled body into place (atomic; two uploads of one name never share a temp file)
 * and answer 201. */
static int put_rename(hone_http_req *req, hone_http_res *res, const char *tmp, const char *dst)
{
    const char *name = hone_http_req_param(req, "name");
    uint64_t len = hone_http_req_body_file_size(req);
    if (!tmp || rename(tmp, dst)) {
        hone_http_res_error(res, 500, NULL, "could not store %s: %s", name,
                            tmp ? strerror(errno) : "no file");
        return HONE_EIO;
    }
    hone_http_res_json(res, 201, json_pack("{s:s,s:I}", "name", name, "bytes", (json_int_t)len));
    return HONE_OK;
}

/* An upload that names its SHA-256: the file is hashed on the thread pool, then stored only when
 * the hash matches (422 naming X-Hone-Sha256 otherwise: the client sends it again). */
typedef struct put_check {
    uv_work_t w;
    hone_controller *c;
    hone_http_req *req;
    hone_http_res *res;
    ctl_upload_recheck recheck;
    char *file; /* taken from the server: unlinked here unless renamed */
    char dst[4096];
    char want[65], got[65];
    int rc;
} put_check;

static void put_check_run(uv_work_t *w)
{
    put_check *p = w->data;
    p->rc = hone_sha256_file(p->file, p->got);
}

static void put_check_abort(hone_http_res *res, void *ud)
{
    (void)res;
    ((put_check *)ud)->res = NULL;
}

static void put_check_done(uv_work_t *w, int status)
{
    put_check *p = w->data;
    hone_http_res *res = p->res;
    if (!res)
        goto done;
    hone_http_res_on_abort(res, NULL, NULL);
    if (status || p->rc)
        hone_http_res_error(res, 500, NULL, "could not hash the upload");
    else if (strcmp(p->got, p->want) != 0)
        hone_http_res_error(res, 422, "X-Hone-Sha256",
                            "the body's SHA-256 is %s, not %s: nothing stored", p->got, p->want);
    else if (!p->recheck(p->c, p->req, res) && put_rename(p->req, res, p->file, p->dst) == 0) {
        free(p->file); /* renamed into place */
        p->file = NULL;
    }
done:
    if (p->file)
        unlink(p->file);
    free(p->file);
    free(p);
}

/* The body is whole, fsynced, in its own temp file. The writer may have lost its right while the
 * body came in, so recheck runs first (and again after hashing); a refused or failed file is
 * unlinked. */
void ctl_upload_store(hone_controller *c, hone_http_req *req, hone_http_res *res, const char *dst,
                      ctl_upload_recheck recheck)
{
    const char *sha = hone_http_req_header(req, "X-Hone-Sha256");
    if (recheck(c, req, res))
        return;
    if (!sha) {
        if (put_rename(req, res, hone_http_req_body_file(req), dst) == HONE_OK)
            free(hone_http_req_body_file_take(req)); /* renamed: nothing left to unlink */
        return;
    }
    put_check *p = hone_xcalloc(1, sizeof *p);
    p->c = c;
    p->req = req;
    p->res = res;
    p->recheck = recheck;
    p->file = hone_http_req_body_file_take(req);
    snprintf(p->dst, sizeof p->dst, "%s", dst);
    snprintf(p->want, sizeof p->want, "%s", sha);
    p->w.data = p;
    if (!p->file) {
        free(p);
        hone_http_res_error(res, 500, NULL, "no file");
        return;
    }
    hone_http_res_on_abort(res, put_check_abort, p);
    if (uv_queue_work(c->loop, &p->w, put_check_run, put_check_done)) {
        hone_http_res_on_abort(res, NULL, NULL);
        hone_http_res_error(res, 503, NULL, "cannot check the upload now");
        unlink(p->file);
        free(p->file);
        free(p);
    }
}

int ctl_upload_sha_header_ok(hone_http_req *req, hone_http_res *res)
{
    const char *h = hone_http_req_header(req, "X-Hone-Sha256");
    int ok = !h || strlen(h) == 64;
    for (const char *q = h; ok && q && *q; q++)
        ok = (*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f');
    if (!ok)
        hone_http_res_error(res, 422, "X-Hone-Sha256", "X-Hone-Sha256 must be 64 hex digits");
    return ok ? HONE_OK : HONE_EINVAL;
}

static int a_put_recheck(hone_controller *c, hone_http_req *req, hone_http_res *res)
{
    return upload_allowed(c, req, res, hone_http_req_param(req, "id"));
}

static void a_put(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    char *dir = ctl_job_dir(c, hone_http_req_param(req, "id")), dst[4096];
    snprintf(dst, sizeof dst, "%s/%s", dir, hone_http_req_param(req, "name"));
    free(dir);
    ctl_upload_store(c, req, res, dst, a_put_recheck);
}

int ctl_routes_artifacts(hone_controller *c)
{
    int rc = 0;
    rc |= hone_http_route(c->http, "GET", "/api/v1/jobs/{id}/artifacts", a_list, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/jobs/{id}/artifacts/{name}", a_get, c);
    rc |= hone_http_route(c->http, "GET", "/api/v1/jobs/{id}/artifacts/{dir}/{name}", a_get, c);
    rc |= hone_http_route_upload(c->http, "PUT", "/api/v1/jobs/{id}/artifacts/{name}",
                                 c->cfg.max_upload_bytes, a_put_begin, a_put, c);
    return rc ? HONE_EINVAL : HONE_OK;
}
