/* POST /api/v1/datasets:upload: a dataset sent as an uncompressed tar body. The request is checked
 * before its body is read; the body is spooled to a hidden temp file under <data_dir>/datasets/
 * (api/ upload routes), then, on the dataset check threads (checkq.h), mapped and checked whole
 * (tar.c) before anything is extracted, extracted into a hidden temp folder, checked like a
 * server-side dataset, and renamed to <data_dir>/datasets/<id>. The archive is never held in the
 * heap. */
#define _GNU_SOURCE /* madvise */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "batch.h"
#include "checkq.h"
#include "ctl.h"
#include "dataset_check.h"
#include "routes.h"
#include "spec.h"
#include "store.h"
#include "sweep.h"
#include "tar.h"
#include "util.h"

int ctl_routes_dataset_upload(hone_controller *c);

typedef struct up_work {
    ctl_check_work w; /* on the dataset check threads (checkq.h) */
    hone_controller *c;
    hone_http_res *res; /* NULL once the client has gone */
    char *file;         /* the spooled archive: ours to unlink */
    size_t len;
    char *name, *type, *format, *desc;
    char id[64], tmp[PATH_MAX], dir[PATH_MAX], msg[512];
    char owner[64]; /* who uploaded it (auth.c) */
    int status;     /* HTTP status of a refusal; 0: stored */
    json_t *stats;
} up_work;

/* Creates the parent folders of rel under root (names already normalized by tar.c). */
static int mk_parents(const char *root, const char *rel)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s/%s", root, rel) >= (int)sizeof p)
        return HONE_EINVAL;
    for (char *s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
        *s = '\0';
        if (mkdir(p, 0755) && errno != EEXIST)
            return HONE_EIO;
        *s = '/';
    }
    return HONE_OK;
}

/* Pages of the mapped archive already copied out are dropped (they stay in the page cache), so the
 * process's resident memory does not grow with the archive. */
static void drop_pages(const uint8_t *p, size_t n)
{
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)p & ~(pg - 1), b = ((uintptr_t)p + n) & ~(pg - 1);
    if (b > a)
        madvise((void *)a, b - a, MADV_DONTNEED);
}

static int extract_one(const ctl_tar_entry *e, void *ud)
{
    up_work *u = ud;
    char p[PATH_MAX];
    if (mk_parents(u->tmp, e->name) ||
        snprintf(p, sizeof p, "%s/%s", u->tmp, e->name) >= (int)sizeof p) {
        snprintf(u->msg, sizeof u->msg, "cannot create folders for %.200s", e->name);
        return HONE_EIO;
    }
    if (e->is_dir) {
        if (mkdir(p, 0755) && errno != EEXIST) {
            snprintf(u->msg, sizeof u->msg, "cannot create %.200s: %s", e->name, strerror(errno));
            return HONE_EIO;
        }
        return HONE_OK;
    }
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    uint64_t off = 0;
    while (fd >= 0 && off < e->size) {
        size_t k = e->size - off < (8u << 20) ? (size_t)(e->size - off) : (8u << 20);
        ssize_t w = write(fd, e->data + off, k);
        if (w <= 0)
            break;
        drop_pages(e->data + off, (size_t)w);
        off += (uint64_t)w;
    }
    if (fd < 0 || off < e->size || close(fd)) {
        snprintf(u->msg, sizeof u->msg, "cannot write %.200s: %s", e->name, strerror(errno));
        return HONE_EIO;
    }
    return HONE_OK;
}

static void up_abort(hone_http_res *res, void *ud)
{
    (void)res;
    ((up_work *)ud)->res = NULL;
}

static void up_extract(up_work *u, const uint8_t *body);

/* On a dataset check thread: map the spooled archive, check, extract into tmp, inspect, rename. The
 * spooled file goes whatever happens; a failure leaves nothing else either. */
static void up_run(ctl_check_work *w)
{
    up_work *u = w->data;
    struct stat st;
    void *map = MAP_FAILED;
    int fd = open(u->file, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) || (uint64_t)st.st_size != u->len ||
        (map = mmap(NULL, u->len, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
        snprintf(u->msg, sizeof u->msg, "cannot read the spooled archive: %s", strerror(errno));
        u->status = 500;
    } else {
        madvise(map, u->len, MADV_SEQUENTIAL);
        up_extract(u, map);
        munmap(map, u->len);
    }
    if (fd >= 0)
        close(fd);
    unlink(u->file);
}

/* Check, extract into tmp, inspect, rename. Leaves nothing on failure. */
static void up_extract(up_work *u, const uint8_t *body)
{
    uint64_t cap_total = 1ull << 30;
    ctl_tar_limits lim = {.max_entries = 10000, .max_file = 1ull << 30, .max_total = cap_total};
    /* every byte extracted is backed by the archive (no sparse entries), so never above it */
    if (lim.max_total > (uint64_t)u->len)
        lim.max_total = (uint64_t)u->len;
    char m[400];
    int rc = ctl_tar_walk(body, u->len, &lim, NULL, NULL, NULL, NULL, m, sizeof m);
    drop_pages(body, u->len); /* the headers the check read */
    if (rc) {
        snprintf(u->msg, sizeof u->msg, "archive: %s", m);
        u->status = 422;
        return;
    }
    if (mkdir(u->tmp, 0755)) {
        snprintf(u->msg, sizeof u->msg, "cannot create %.400s: %.80s", u->tmp, strerror(errno));
        u->status = 500;
        return;
    }
    rc = ctl_tar_walk(body, u->len, &lim, extract_one, u, NULL, NULL, m, sizeof m);
    if (rc) {
        u->status = 500;
        goto fail;
    }
    rc = ctl_dataset_inspect(u->format, u->tmp, &u->stats, m, sizeof m);
    if (rc) {
        /* the checker names the temp folder: report paths relative to the archive */
        const char *s = strstr(m, u->tmp);
        char rel[400];
        if (s) {
            snprintf(rel, sizeof rel, "%.*s<archive>%s", (int)(s - m), m, s + strlen(u->tmp));
            snprintf(m, sizeof m, "%s", rel);
        }
        snprintf(u->msg, sizeof u->msg, "archive: %s", m);
        u->status = 422;
        goto fail;
    }
    if (rename(u->tmp, u->dir)) {
        snprintf(u->msg, sizeof u->msg, "cannot store the dataset: %s", strerror(errno));
        u->status = 500;
        goto fail;
    }
    return;
fail:
    ctl_rm_tree(u->tmp);
}

static void up_free(up_work *u)
{
    json_decref(u->stats);
    free(u->file);
    free(u->name);
    free(u->type);
    free(u->format);
    free(u->desc);
    free(u);
}

static void up_done(ctl_check_work *w, int status)
{
    up_work *u = w->data;
    hone_controller *c = u->c;
    hone_http_res *res = u->res;
    json_t *row = NULL;
    if (res)
        hone_http_res_on_abort(res, NULL, NULL);
    if (status) /* canceled before it ran: the archive is still there */
        unlink(u->file);
    if (status || u->status) {
        if (res)
            hone_http_res_error(res, status ? 503 : u->status, u->status == 422 ? "archive" : NULL,
                                "%s", status ? "upload canceled" : u->msg);
        goto fail;
    }
    if (!res) {
        ctl_rm_tree(u->dir); /* nobody to tell: store nothing */
        goto fail;
    }
    ctl_batch_flush(c);
    char *st = jdump(u->stats);
    int rc = store_dataset_insert(c->db, u->id, u->name, u->type, u->format, u->dir,
                                  u->desc ? u->desc : "", st, u->owner, ctl_now());
    free(st);
    if (rc || store_dataset_get(c->db, u->id, NULL, &row)) {
        ctl_rm_tree(u->dir);
        ctl_res_store_error(c, res);
        goto fail;
    }
    ctl_log(c, "info", "dataset_uploaded",
            json_pack("{s:s,s:s,s:I}", "id", u->id, "path", u->dir, "bytes", (json_int_t)u->len));
    hone_http_res_json(res, 201, ctl_dataset_json(row));
    json_decref(row);
fail:
    up_free(u);
}

static int one_of(const char *v, const char *const *list)
{
    for (; *list; list++)
        if (!strcmp(v, *list))
            return 1;
    return 0;
}

/* Reads and checks the request's query (answers 422 and returns non-zero otherwise). */
static int up_params(hone_http_req *req, hone_http_res *res, const char **name, const char **type,
                     const char **format, const char **desc)
{
    static const char *const types[] = {"image_classification", "object_detection", NULL};
    static const char *const formats[] = {"idx", "image_folder", "kitti", "coco", NULL};
    *name = hone_http_req_query(req, "name");
    *type = hone_http_req_query(req, "type");
    *format = hone_http_req_query(req, "format");
    *desc = hone_http_req_query(req, "description");
    *type = *type ? *type : "image_classification";
    *format = *format ? *format : "idx";
    if (!*name || !(*name)[0] || strlen(*name) > 200)
        hone_http_res_error(res, 422, "name", "name (1 to 200 bytes) is required");
    else if (!one_of(*type, types))
        hone_http_res_error(res, 422, "type",
                            "type must be image_classification or object_detection for uploads");
    else if (!one_of(*format, formats))
        hone_http_res_error(res, 422, "format",
                            "format must be idx, image_folder, kitti or coco for uploads");
    else if ((!strcmp(*type, "object_detection")) != hone_spec_format_detect(*format))
        hone_http_res_error(res, 422, "format", "format %s does not fit type %s", *format, *type);
    else if (*desc && strlen(*desc) > 10000)
        hone_http_res_error(res, 422, "description", "description too long");
    else if (!ctl_text_check(res, "name", *name, 0) &&
             !ctl_text_check(res, "description", *desc, 1))
        return HONE_OK;
    return HONE_EINVAL;
}

/* Before the body: the content type and the query, then the folder to spool the archive into. */
static int up_begin(hone_http_req *req, hone_http_res *res, void *ud, char *dir, size_t cap)
{
    hone_controller *c = ud;
    const char *ct = hone_http_req_header(req, "Content-Type"), *name, *type, *format, *desc;
    if (!ct || strncmp(ct, "application/x-tar", 17) || (ct[17] && ct[17] != ';')) {
        hone_http_res_error(res, 415, "Content-Type", "Content-Type must be application/x-tar");
        return HONE_EINVAL;
    }
    if (up_params(req, res, &name, &type, &format, &desc))
        return HONE_EINVAL;
    char root[PATH_MAX];
    snprintf(root, sizeof root, "%s/datasets", c->cfg.data_dir);
    if (mkdir(root, 0755) && errno != EEXIST) {
        hone_http_res_error(res, 500, NULL, "cannot create %s: %s", root, strerror(errno));
        return HONE_EIO;
    }
    snprintf(dir, cap, "%s", root);
    ctl_upload_class(c, req, 0);
    return HONE_OK;
}

/* The archive is spooled whole: check and extract it on a dataset check thread. */
static void up_create(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    const char *name, *type, *format, *desc;
    if (up_params(req, res, &name, &type, &format, &desc))
        return;
    /* the body took its time: its sender may have been disabled or revoked since the filter
     * (the server unlinks the spooled file after a refusal) */
    if (ctl_auth_recheck(c, req, res))
        return;
    size_t len = (size_t)hone_http_req_body_file_size(req);
    char *file = hone_http_req_body_file_take(req);
    if (!file || !len) {
        if (file) /* empty: gone before the answer, so a refusal leaves nothing behind */
            unlink(file);
        free(file);
        hone_http_res_error(res, 422, "archive", "archive: empty body");
        return;
    }
    up_work *u = hone_xcalloc(1, sizeof *u);
    u->c = c;
    u->res = res;
    u->file = file;
    u->len = len;
    u->name = hone_xstrdup(name);
    u->type = hone_xstrdup(type);
    u->format = hone_xstrdup(format);
    u->desc = desc ? hone_xstrdup(desc) : NULL;
    ctl_auth_user(c, req, u->owner);
    ctl_new_id(c, "ds", u->id, sizeof u->id);
    char root[PATH_MAX], real[PATH_MAX];
    snprintf(root, sizeof root, "%s/datasets", c->cfg.data_dir);
    if (!realpath(root, real))
        snprintf(real, sizeof real, "%s", root);
    snprintf(u->tmp, sizeof u->tmp, "%.3900s/.upload-%.63s", real, u->id);
    snprintf(u->dir, sizeof u->dir, "%.3900s/%.63s", real, u->id);
    u->w.data = u;
    hone_http_res_on_abort(res, up_abort, u);
    if (ctl_checkq_submit(c->checkq, &u->w, u->owner, up_run, up_done)) {
        hone_http_res_on_abort(res, NULL, NULL);
        hone_http_res_error(res, 503, NULL, "cannot take the upload now");
        unlink(u->file);
        up_free(u);
    }
}

int ctl_routes_dataset_upload(hone_controller *c)
{
    return hone_http_route_upload(c->http, "POST", "/api/v1/datasets:upload",
                                  c->cfg.max_upload_bytes, up_begin, up_create, c)
               ? HONE_EINVAL
               : HONE_OK;
}
