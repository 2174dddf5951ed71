/* model_files: GET /jobs/{id}/artifacts?model=1, the files of a job's model as hone-train opens
 * them (the plain files of its folder, or of best_model/ for an AutoML job; no checkpoint), each
 * with its bytes and sha256, so that a worker without shared disk checks a parent's model (or an
 * action's) as it checks a dataset's files. Hashing runs on the thread pool, never on the loop; the
 * folder is opened with no link followed and each file beneath it with none either. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "path_beneath.h"
#include "routes_artifacts.h"
#include "util.h"

#define MODEL_FILES_MAX 64 /* a model folder holds a handful; more is not a model */

typedef struct model_list {
    uv_work_t w;
    hone_http_res *res; /* NULL once the client left */
    char dir[4200];     /* the job's folder */
    char sub[32];       /* "best_model" or "" */
    json_t *files;
    int status;
    char msg[256];
    void (*end)(void *ud); /* the caller's count of the user's work under way */
    void *ud;
} model_list;

/* One plain file of the model folder (fd: the folder), hashed into l->files. */
static int list_one(model_list *l, int fd, const char *name)
{
    int f = -1;
    struct stat st;
    char sha[65], full[300];
    if (hone_beneath_open(fd, name, O_RDONLY | O_NONBLOCK, HONE_BENEATH_NO_LINKS, &f) != HONE_OK)
        return HONE_OK; /* a link, or gone since the listing: not part of the model */
    int rc = HONE_OK;
    if (fstat(f, &st) == 0 && S_ISREG(st.st_mode)) {
        if (hone_sha256_fd(f, sha) != 0) {
            rc = HONE_EIO;
        } else {
            snprintf(full, sizeof full, "%s%s%s", l->sub, l->sub[0] ? "/" : "", name);
            json_array_append_new(l->files, json_pack("{s:s,s:I,s:s}", "name", full, "bytes",
                                                      (json_int_t)st.st_size, "sha256", sha));
        }
    }
    close(f);
    return rc;
}

static void list_run(uv_work_t *w)
{
    model_list *l = w->data;
    int root = open(l->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW), fd = -1;
    DIR *d = NULL;
    struct dirent *e;
    if (root < 0 || hone_beneath_open(root, l->sub[0] ? l->sub : ".", O_RDONLY | O_DIRECTORY,
                                      HONE_BENEATH_NO_LINKS, &fd) != HONE_OK) {
        l->status = 404;
        snprintf(l->msg, sizeof l->msg, "the job has no model folder");
        goto done;
    }
    int dfd = dup(fd);
    if (dfd < 0 || !(d = fdopendir(dfd))) {
        if (dfd >= 0)
            close(dfd);
        l->status = 500;
        snprintf(l->msg, sizeof l->msg, "cannot read the model folder");
        goto done;
    }
    while ((e = readdir(d)) && !l->status) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "checkpoint.bin") || strlen(e->d_name) > 200)
            continue;
        if (json_array_size(l->files) >= MODEL_FILES_MAX) {
            l->status = 409;
            snprintf(l->msg, sizeof l->msg, "the model folder holds over %d files",
                     MODEL_FILES_MAX);
        } else if (list_one(l, fd, e->d_name) != HONE_OK) {
            l->status = 500;
            snprintf(l->msg, sizeof l->msg, "cannot read %s", e->d_name);
        }
    }
done:
    if (d)
        closedir(d);
    if (fd >= 0)
        close(fd);
    if (root >= 0)
        close(root);
}

static void list_abort(hone_http_res *res, void *ud)
{
    (void)res;
    ((model_list *)ud)->res = NULL;
}

static void list_done(uv_work_t *w, int status)
{
    model_list *l = w->data;
    if (l->res) {
        hone_http_res_on_abort(l->res, NULL, NULL);
        if (status)
            hone_http_res_error(l->res, 503, NULL, "model listing canceled");
        else if (l->status)
            hone_http_res_error(l->res, l->status, "model", "%s", l->msg);
        else if (!json_array_size(l->files))
            hone_http_res_error(l->res, 404, "model", "the job has no model files");
        else
            hone_http_res_json(l->res, 200, json_pack("{s:O}", "files", l->files));
    }
    if (l->end)
        l->end(l->ud);
    json_decref(l->files);
    free(l);
}

void ctl_model_files_list(hone_controller *c, hone_http_res *res, const char *job_dir,
                          const char *subdir, void (*end)(void *ud), void *ud)
{
    model_list *l = hone_xcalloc(1, sizeof *l);
    l->end = end;
    l->ud = ud;
    l->res = res;
    snprintf(l->dir, sizeof l->dir, "%s", job_dir);
    snprintf(l->sub, sizeof l->sub, "%s", subdir ? subdir : "");
    l->files = json_array();
    l->w.data = l;
    hone_http_res_on_abort(res, list_abort, l);
    if (uv_queue_work(c->loop, &l->w, list_run, list_done)) {
        l->res = NULL;
        hone_http_res_on_abort(res, NULL, NULL);
        hone_http_res_error(res, 503, NULL, "cannot list the model now");
        if (end)
            end(ud);
        json_decref(l->files);
        free(l);
    }
}
