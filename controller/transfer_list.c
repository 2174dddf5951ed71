/* A file list (manifest) of a dataset's folder and its packed files, or of an inference job's
 * image folder: walked and hashed on the libuv thread pool, never on the loop, with the hashes
 * kept in table dataset_files at the size and mtime they were computed at, so a file that did not
 * change is not hashed again. The folder is opened beneath its data root (data_paths.h); a link
 * is listed only when it stays inside it. A user lists one folder at a time (ctl_walks). Answers
 * the HTTP request it is given; who may ask is the routes' (routes_transfer.c) to decide. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "data_paths.h"
#include "path_beneath.h"
#include "store.h"
#include "transfer_list.h"
#include "util.h"

#define XFER_MAX_FILES 200000 /* files one manifest lists at most */

typedef struct xfer_list {
    uv_work_t w;
    hone_controller *c;
    ctl_walks *walks; /* where a user's walk is counted */
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

/* A user's walks in flight, by owner (JSON {owner: count}). */
struct ctl_walks {
    json_t *by_owner;
};

ctl_walks *ctl_walks_new(void)
{
    ctl_walks *w = hone_xcalloc(1, sizeof *w);
    w->by_owner = json_object();
    return w;
}

void ctl_walks_free(ctl_walks *w)
{
    if (!w)
        return;
    json_decref(w->by_owner);
    free(w);
}

static int walks_of(ctl_walks *w, const char *owner)
{
    return (int)json_integer_value(json_object_get(w->by_owner, owner));
}

static void walks_add(ctl_walks *w, const char *owner, int d)
{
    int n = walks_of(w, owner) + d;
    if (n > 0)
        json_object_set_new(w->by_owner, owner, json_integer(n));
    else
        json_object_del(w->by_owner, owner);
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
    int rc = packed ? ctl_packed_open(&l->c->cfg, l->id, &k.rootfd, l->msg, sizeof l->msg)
                    : ctl_data_open(&l->c->cfg, l->root, &k.rootfd, l->msg, sizeof l->msg);
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
        walks_add(l->walks, l->owner, -1);
    json_decref(l->cached);
    json_decref(l->files);
    json_decref(l->packed_files);
    json_decref(l->fresh);
    free(l);
}

void ctl_transfer_list(hone_controller *c, ctl_walks *walks, hone_http_res *res, const char *id,
                       const char *root, int job_input, const char *owner)
{
    if (owner && walks_of(walks, owner) >= XFER_WALKS_PER_USER) {
        hone_http_res_header(res, "Retry-After", "2");
        hone_http_res_error(res, 503, NULL,
                            "a file list of yours is still being made (one at a time per user); "
                            "retry when it is done");
        return;
    }
    xfer_list *l = hone_xcalloc(1, sizeof *l);
    l->c = c;
    l->walks = walks;
    if (owner) {
        snprintf(l->owner, sizeof l->owner, "%s", owner);
        walks_add(walks, owner, 1);
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
