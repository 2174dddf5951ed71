/* The start-up sweep of upload temp files. An upload's body is spooled to `.upload-XXXXXX` in the
 * folder it will land in (datasets/, artifacts/<job>/, packed/<dataset>/) and a dataset archive is
 * extracted into datasets/.upload-<id>/ before its rename; a controller killed mid-upload leaves
 * them behind, and no later request ever names them. Before the controller listens no upload is
 * in flight, so every `.upload-*` in those folders is such a leftover and goes. So do the files
 * of a deleted dataset: once its row is gone, its upload folder (datasets/<id>) and packed folder
 * (packed/<id>) are renamed on the loop to `.upload-rm-<id>` beside them, then removed on the
 * thread pool (ctl_dataset_files_remove); a controller killed during the removal leaves those
 * names to this sweep. The sweep never guesses from a missing row: a folder without one (a store
 * restored from a backup, another store on the same data dir) is data, and stays. */
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

typedef struct rm_work {
    uv_work_t w;
    char upload[PATH_MAX + 80]; /* the upload folder's tombstone, or "" */
    char packed[PATH_MAX + 80]; /* the packed folder's tombstone, or "" */
    void (*done)(void *ud);
    void *ud;
} rm_work;

static void rm_run(uv_work_t *w)
{
    rm_work *r = w->data;
    if (r->upload[0])
        ctl_rm_tree(r->upload);
    if (r->packed[0])
        ctl_rm_tree(r->packed);
}

static void rm_done(uv_work_t *w, int status)
{
    rm_work *r = w->data;
    (void)status; /* canceled: the next start's sweep removes the tombstones */
    if (r->done)
        r->done(r->ud);
    free(r);
}

/* Renames dir/name to dir/.upload-rm-name (what the start-up sweep removes) into tomb; "" when
 * there is nothing to rename. */
static void tombstone(const char *dir, const char *name, char *tomb, size_t cap)
{
    char from[PATH_MAX + 80];
    snprintf(from, sizeof from, "%s/%s", dir, name);
    snprintf(tomb, cap, "%s/.upload-rm-%s", dir, name);
    if (rename(from, tomb) != 0)
        tomb[0] = '\0';
}

void ctl_dataset_files_remove(hone_controller *c, const char *id, const char *path,
                              void (*done)(void *ud), void *ud)
{
    rm_work *r = hone_xcalloc(1, sizeof *r);
    char dir[PATH_MAX], real[PATH_MAX], mine[PATH_MAX + 80];
    if (!strchr(id, '/') && id[0] != '.') {
        /* an upload's path is <realpath of datasets/>/<id> (dataset_upload.c): only that is ours */
        snprintf(dir, sizeof dir, "%s/datasets", c->cfg.data_dir);
        if (path && realpath(dir, real) && store_dataset_path_used(c->db, path) == HONE_ENOENT) {
            snprintf(mine, sizeof mine, "%s/%s", real, id);
            if (!strcmp(mine, path))
                tombstone(real, id, r->upload, sizeof r->upload);
        }
        snprintf(dir, sizeof dir, "%s/packed", c->cfg.data_dir);
        tombstone(dir, id, r->packed, sizeof r->packed);
    }
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
    n += sweep(path, 0, failed); /* packed/.upload-rm-<id>: a deleted dataset's */
    if (n || json_array_size(failed))
        ctl_log(c, json_array_size(failed) ? "warn" : "info", "uploads_swept",
                json_pack("{s:i,s:O}", "removed", n, "failed", failed));
    json_decref(failed);
    return n;
}
