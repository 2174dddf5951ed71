/* Stored folders opened again beneath their trusted root at every read (data_paths.h). The roots
 * (data_roots, the data dir) are the admin's and resolved as configured; below them nothing is
 * followed: a path was resolved (realpath) when it was stored, so a link found on it now was put
 * there since, by someone who could write in a data root. Never answers with a path that leads
 * somewhere else than where it was checked. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wire.h"
#include "ctl.h"
#include "data_paths.h"
#include "jobs.h"
#include "path_beneath.h"
#include "store.h"
#include "util.h"

/* The length of root (resolved into real) when path lies in it or is it; 0 otherwise. */
static size_t root_len(const char *root, const char *path, char *real)
{
    if (!root || !realpath(root, real))
        return 0;
    size_t n = strlen(real);
    if (n == 1 && real[0] == '/')
        return path[0] == '/' ? 1 : 0;
    return strncmp(real, path, n) == 0 && (path[n] == '/' || path[n] == '\0') ? n : 0;
}

/* Opens rel beneath the folder root (resolved, trusted), no link followed. */
static int open_below(const char *root, const char *rel, const char *shown, int *fd, char *msg,
                      size_t msglen)
{
    int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;
    *fd = -1;
    if (rootfd < 0) {
        snprintf(msg, msglen, "%s: %s", shown, strerror(errno));
        return errno == ENOENT ? HONE_ENOENT : HONE_EIO;
    }
    while (*rel == '/')
        rel++;
    rc = hone_beneath_open(rootfd, rel, O_RDONLY | O_DIRECTORY, HONE_BENEATH_NO_LINKS, fd);
    int e = errno;
    close(rootfd);
    if (rc == HONE_EPERM || rc == HONE_EINVAL) {
        snprintf(msg, msglen,
                 "%s passes through a symbolic link below %s (put there after it was checked): "
                 "not followed",
                 shown, root);
        return HONE_EPERM;
    }
    if (rc == HONE_ENOENT || (rc && e == ENOTDIR)) {
        snprintf(msg, msglen, "%s: no such folder", shown);
        return HONE_ENOENT;
    }
    if (rc)
        snprintf(msg, msglen, "%s: %s", shown, strerror(e));
    return rc;
}

int ctl_data_open(const hone_controller_config *cfg, const char *path, int *fd, char *msg,
                  size_t msglen)
{
    char best[PATH_MAX] = "", real[PATH_MAX];
    size_t bn = 0;
    *fd = -1;
    for (int i = 0; path && i <= cfg->n_data_roots; i++) {
        size_t n = root_len(i < cfg->n_data_roots ? cfg->data_roots[i] : cfg->data_dir, path, real);
        if (n > bn) {
            bn = n;
            snprintf(best, sizeof best, "%s", real);
        }
    }
    if (!bn) {
        snprintf(msg, msglen, "%s is not inside the controller's data roots any more",
                 path ? path : "(no path)");
        return HONE_EPERM;
    }
    return open_below(best, path + bn, path, fd, msg, msglen);
}

int ctl_packed_open(const hone_controller_config *cfg, const char *id, int *fd, char *msg,
                    size_t msglen)
{
    char real[PATH_MAX], rel[128], shown[PATH_MAX + 128];
    *fd = -1;
    if (!realpath(cfg->data_dir, real)) {
        snprintf(msg, msglen, "%s: %s", cfg->data_dir, strerror(errno));
        return HONE_ENOENT;
    }
    snprintf(rel, sizeof rel, "packed/%.100s", id);
    snprintf(shown, sizeof shown, "%s/%s", real, rel);
    return open_below(real, rel, shown, fd, msg, msglen);
}

/* HONE_EPERM with msg when path no longer opens beneath its root; anything else is not this
 * check's to refuse. */
static int still_confined(hone_controller *c, const char *path, char *msg, size_t msglen)
{
    int fd = -1;
    if (!path || !*path)
        return HONE_OK;
    int rc = ctl_data_open(&c->cfg, path, &fd, msg, msglen);
    if (fd >= 0)
        close(fd);
    return rc == HONE_EPERM ? rc : HONE_OK;
}

static int dataset_confined(hone_controller *c, const char *id, char *msg, size_t msglen)
{
    json_t *ds = NULL;
    int rc = HONE_OK;
    if (id && store_dataset_get(c->db, id, NULL, &ds) == HONE_OK)
        rc = still_confined(c, jstr(ds, "path"), msg, msglen);
    json_decref(ds);
    return rc;
}

int ctl_job_paths_check(hone_controller *c, const json_t *job, const json_t *flat, char *msg,
                        size_t msglen)
{
    hone_kind kind = HONE_KIND_COUNT;
    hone_kind_parse(jstr(job, "action"), &kind);
    json_t *cfg = NULL, *exp_ds = NULL, *v;
    size_t i;
    int rc;
    if (kind == HONE_KIND_EXPORT)
        return HONE_OK; /* reads the model only */
    rc = still_confined(c, jstr(flat, "data.path"), msg, msglen);
    if (!rc)
        rc = dataset_confined(c, jstr(job, "dataset_id"), msg, msglen);
    if (!rc && (exp_ds = ctl_job_dataset_id(c, job)))
        rc = dataset_confined(c, json_string_value(exp_ds), msg, msglen);
    if (!rc && hone_kind_is_model_action(kind) && (cfg = jparse(jstr(job, "config")))) {
        rc = still_confined(c, jstr(cfg, "folder"), msg, msglen);
        json_array_foreach(json_object_get(cfg, "sets"), i, v)
        {
            const char *kv = json_string_value(v);
            if (!rc && kv && !strncmp(kv, "data.path=", 10))
                rc = still_confined(c, kv + 10, msg, msglen);
        }
    }
    json_decref(cfg);
    json_decref(exp_ds);
    return rc;
}
