/* The start-up sweep of upload temp files. An upload's body is spooled to `.upload-XXXXXX` in the
 * folder it will land in (datasets/, artifacts/<job>/, packed/<dataset>/) and a dataset archive is
 * extracted into datasets/.upload-<id>/ before its rename; a controller killed mid-upload leaves
 * them behind, and no later request ever names them. Before the controller listens no upload is
 * in flight, so every `.upload-*` in those folders is such a leftover and goes. */
#define _GNU_SOURCE /* nftw */
#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
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
    if (n || json_array_size(failed))
        ctl_log(c, json_array_size(failed) ? "warn" : "info", "uploads_swept",
                json_pack("{s:i,s:O}", "removed", n, "failed", failed));
    json_decref(failed);
    return n;
}
