/* The start-up sweep of upload temp files. An upload's body is spooled to `.upload-XXXXXX` in the
 * folder it will land in (datasets/, artifacts/<job>/, packed/<dataset>/) and a dataset archive is
 * extracted into datasets/.upload-<id>/ before its rename; a controller killed mid-upload leaves
 * them behind, and no later request ever names them. Before the controller listens no upload is
 * in flight, so every `.upload-*` in those folders is such a leftover and goes. So do the files
 * of a deleted dataset: its upload folder (datasets/<id>) and packed folder (packed/<id>) go on
 * the thread pool after its row (ctl_dataset_files_remove); a controller killed in between leaves
 * them without a row, and the sweep removes them at the next start. Never a folder that a dataset
 * row still names (an admin's registered folder inside datasets/ stays). */
#define _GNU_SOURCE /* nftw */
#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "store.h"
#include "sweep.h"
#include "util.h"

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st, (void)flag, (void)f;
    return remove(p);
}

int ctl_rm_tree(const char *path)
{
    return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) ? HONE_EIO : HONE_OK;
}

/* Removes dir's `.upload-*` entries (folders whole), or with below, those of each folder in dir
 * (artifacts/<job>, packed/<dataset>); returns how many went, naming the others in failed. */
static int sweep(const char *dir, int below, json_t *failed)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (!d)
        return 0;
    while ((e = readdir(d))) {
        char path[4096 + 256];
        if (below ? e->d_name[0] == '.' : strncmp(e->d_name, ".upload-", 8) != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (below)
            n += sweep(path, 0, failed);
        else if (ctl_rm_tree(path) == HONE_OK)
            n++;
        else
            json_array_append_new(failed, json_string(path));
    }
    closedir(d);
    return n;
}

/* Leftovers of deleted datasets: datasets/ds-... and packed/... with no dataset row of that id
 * (and, in datasets/, none naming the folder). Returns how many went, naming the others in failed.
 */
static int sweep_orphans(hone_controller *c, const char *dir, int packed, json_t *failed)
{
    char real[PATH_MAX];
    DIR *d = realpath(dir, real) ? opendir(real) : NULL;
    struct dirent *e;
    int n = 0;
    if (!d)
        return 0;
    while ((e = readdir(d))) {
        char path[PATH_MAX + 256];
        if (e->d_name[0] == '.' || (!packed && strncmp(e->d_name, "ds-", 3) != 0))
            continue;
        snprintf(path, sizeof path, "%s/%s", real, e->d_name);
        if (store_dataset_exists(c->db, e->d_name, NULL) != HONE_ENOENT ||
            (!packed && store_dataset_path_used(c->db, path) != HONE_ENOENT))
            continue;
        if (ctl_rm_tree(path) == HONE_OK)
            n++;
        else
            json_array_append_new(failed, json_string(path));
    }
    closedir(d);
    return n;
}

typedef struct rm_work {
    uv_work_t w;
    char upload[PATH_MAX]; /* its path, when no other dataset names it: removed if an upload's */
    char datasets[PATH_MAX];
    char id[64];
    char packed[PATH_MAX];
    void (*done)(void *ud);
    void *ud;
} rm_work;

static void rm_run(uv_work_t *w)
{
    rm_work *r = w->data;
    char real[PATH_MAX], mine[PATH_MAX + 80];
    /* an upload's path is <realpath of datasets/>/<id> (dataset_upload.c): only that is ours */
    if (r->upload[0] && realpath(r->datasets, real)) {
        snprintf(mine, sizeof mine, "%s/%s", real, r->id);
        if (!strcmp(mine, r->upload))
            ctl_rm_tree(r->upload);
    }
    ctl_rm_tree(r->packed);
}

static void rm_done(uv_work_t *w, int status)
{
    rm_work *r = w->data;
    (void)status; /* canceled: the next start's sweep removes them */
    if (r->done)
        r->done(r->ud);
    free(r);
}

void ctl_dataset_files_remove(hone_controller *c, const char *id, const char *path,
                              void (*done)(void *ud), void *ud)
{
    rm_work *r = hone_xcalloc(1, sizeof *r);
    if (path && !strchr(id, '/') && store_dataset_path_used(c->db, path) == HONE_ENOENT)
        snprintf(r->upload, sizeof r->upload, "%s", path);
    snprintf(r->datasets, sizeof r->datasets, "%s/datasets", c->cfg.data_dir);
    snprintf(r->id, sizeof r->id, "%s", id);
    snprintf(r->packed, sizeof r->packed, "%s/packed/%s", c->cfg.data_dir, id);
    r->done = done;
    r->ud = ud;
    r->w.data = r;
    if (uv_queue_work(c->loop, &r->w, rm_run, rm_done))
        rm_done(&r->w, UV_ECANCELED);
}

int ctl_sweep_uploads(hone_controller *c)
{
    char path[4096];
    json_t *failed = json_array();
    int n;

    snprintf(path, sizeof path, "%s/datasets", c->cfg.data_dir);
    n = sweep(path, 0, failed);
    n += sweep(c->artifacts_dir, 1, failed);
    snprintf(path, sizeof path, "%s/packed", c->cfg.data_dir);
    n += sweep(path, 1, failed);
    n += sweep_orphans(c, path, 1, failed);
    snprintf(path, sizeof path, "%s/datasets", c->cfg.data_dir);
    n += sweep_orphans(c, path, 0, failed);
    if (n || json_array_size(failed))
        ctl_log(c, json_array_size(failed) ? "warn" : "info", "uploads_swept",
                json_pack("{s:i,s:O}", "removed", n, "failed", failed));
    json_decref(failed);
    return n;
}
