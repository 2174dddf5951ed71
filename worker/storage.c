/* storage: the downloads of --storage http, for a worker that shares no disk with the
 * controller. Datasets (and inference's image folder) come over HTTP (a manifest, then each file
 * by Range) into the cache folder, named by their SHA-256, so a file is downloaded once per
 * worker however many jobs read it; a download that broke off resumes from its .part file; a
 * file whose hash is not the manifest's is never used. The trainer then reads a folder of hard
 * links to the cached files (the original names), or the cached packed file. A resumed job's
 * uploaded checkpoint comes the same way; an action's or a fine-tuning job's parent model comes
 * through the cache too (its files listed with their sha256 by GET /jobs/{id}/artifacts?model=1).
 * What goes back is uploads.c's. Never touches a path of the controller's data dir. */
#include "storage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

static int sha_ok(const char *s)
{
    if (!s || strlen(s) != 64)
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}

static long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) ? (long long)st.st_size : -1;
}

/* worker_cache_fetch's work, with the .part's lock held. */
static int cache_fetch_locked(hone_worker *w, const char *url, long long bytes, const char *sha,
                              const char *out, const char *part, int *hit)
{
    char got[65], err[512] = "";
    int delay = 0, tries = 0, rc = HONE_EIO;
    FILE *f = NULL;

    if (file_size(out) == bytes) { /* another worker sharing the cache fetched it meanwhile */
        *hit = 1;
        return HONE_OK;
    }
    for (;;) {
        long long have = file_size(part);
        hone_rest_resp resp;
        if (have > bytes) {
            truncate(part, 0); /* longer than the file: not a prefix of it */
            have = -1;
        }
        if (have == bytes)
            break;
        f = fopen(part, "ab");
        if (!f)
            return HONE_EIO;
        rc = hone_rest_download_from(w->rest, url, (uint64_t)(have < 0 ? 0 : have), f, 300, &resp,
                                     err, sizeof err);
        if (fclose(f) != 0 && rc == 0)
            rc = HONE_EIO;
        f = NULL;
        if (rc == 0 && (resp.status == 206 || resp.status == 200)) {
            if (resp.status == 200 && have > 0) {
                /* the whole file again, appended to what we had: start over */
                truncate(part, 0);
            }
            hone_rest_resp_clear(&resp);
            delay = 0;
            continue;
        }
        if (rc == 0) {
            hone_rest_error_text(&resp, err, sizeof err);
            long st = resp.status;
            hone_rest_resp_clear(&resp);
            if (st == 416) {
                truncate(part, 0); /* the server's file is shorter than our part: again */
                continue;
            }
            if (st < 500) {
                worker_log(w, "download %s refused: %s", url, err);
                return HONE_EIO;
            }
        }
        if (worker_stopping(w))
            return HONE_EIO;
        if (!tries++)
            worker_log(w, "download %s broke off (%s); resuming", url, err);
        worker_sleep(w, worker_backoff(w, &delay));
    }
    if (hone_sha256_file(part, got) != 0 || strcmp(got, sha) != 0) {
        worker_log(w, "download %s: sha256 %s, not the manifest's %s; discarded", url, got, sha);
        truncate(part, 0);
        return HONE_EIO;
    }
    if (rename(part, out) != 0)
        return HONE_EIO;
    return HONE_OK;
}

/* Downloads url (a file of the manifest: bytes, sha256) into <cache>/<sha256>, resuming
 * <sha256>.part; nothing when the cache has it already (*hit = 1). Retries a broken transfer
 * with backoff until the worker stops; a hash mismatch empties the part and fails. Workers that
 * share one --cache-dir take turns on a file (a lock on its .part): the others then find it
 * cached. */
int worker_cache_fetch(hone_worker *w, const char *url, long long bytes, const char *sha, char *out,
                       size_t cap, int *hit)
{
    char part[4096 + 128];
    int rc, lock;

    *hit = 0;
    if (!sha_ok(sha) || bytes < 0)
        return HONE_EINVAL;
    snprintf(out, cap, "%s/%s", w->cache_dir, sha);
    snprintf(part, sizeof part, "%s/%s.part", w->cache_dir, sha);
    if (file_size(out) == bytes) {
        *hit = 1;
        return HONE_OK;
    }
    lock = open(part, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock < 0 || flock(lock, LOCK_EX) != 0) {
        if (lock >= 0)
            close(lock);
        return HONE_EIO;
    }
    rc = cache_fetch_locked(w, url, bytes, sha, out, part, hit);
    close(lock); /* releases the lock */
    return rc;
}

/* Copies src to dst (a cache on another file system than the work dir). */
static int copy_file(const char *src, const char *dst)
{
    char buf[1 << 16];
    int in = open(src, O_RDONLY | O_CLOEXEC), rc = HONE_EIO;
    int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    while (in >= 0 && out >= 0) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = r == 0 ? HONE_OK : HONE_EIO;
            break;
        }
        if (write(out, buf, (size_t)r) != r)
            break;
    }
    if (in >= 0)
        close(in);
    if (out >= 0 && close(out) != 0)
        rc = HONE_EIO;
    return rc;
}

/* mkdir -p of the folder holding path, then path as a hard link to the cached file (a copy
 * across file systems). Not a symlink: an image folder's walk refuses links out of it. */
static int link_into(const char *path, const char *target)
{
    if (worker_mkdirs(path, 1) != 0)
        return HONE_EIO;
    unlink(path);
    if (link(target, path) == 0)
        return HONE_OK;
    return errno == EXDEV || errno == EPERM ? copy_file(target, path) : HONE_EIO;
}

static void rm_tree(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char p[4096 + 512];
        struct stat st;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            rm_tree(p);
        else
            unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(path);
}

void worker_drop_parent(hone_worker *w, const char *job_id)
{
    char p[4096 + 256];
    snprintf(p, sizeof p, "%s/parents/%s", w->work_dir, job_id);
    rm_tree(p);
}

void worker_drop_dataset(hone_worker *w, const char *job_id)
{
    char p[4096 + 256];
    snprintf(p, sizeof p, "%s/data/%s", w->work_dir, job_id);
    rm_tree(p);
}

/* Whether a manifest name is safe to recreate under a folder of ours. */
static int name_ok(const char *s)
{
    if (!s || !*s || s[0] == '/' || strlen(s) > 1024)
        return 0;
    for (const char *seg = s; seg;) {
        const char *end = strchr(seg, '/');
        if (seg[0] == '.' || seg[0] == '/' || seg[0] == '\0')
            return 0;
        seg = end ? end + 1 : NULL;
    }
    return 1;
}

/* Downloads every file of a manifest (prefix + the escaped name: its URL) into the cache and
 * links it under its name in <work-dir>/data/<id>/ (written to folder); counts what came from
 * the cache and what was downloaded. */
/* What a job's downloads came to: files from the cache, files downloaded and their bytes. */
typedef struct fetch_tally {
    int hit, got;
    long long bytes;
} fetch_tally;

/* One manifest entry ({bytes, sha256}) at url into the cache (its path in cached), counted in t. */
static int fetch_listed(hone_worker *w, const char *url, const json_t *entry, char *cached,
                        size_t cap, fetch_tally *t, char *msg, size_t msglen)
{
    json_int_t bytes = json_integer_value(json_object_get(entry, "bytes"));
    int hit,
        rc = worker_cache_fetch(w, url, bytes, json_string_value(json_object_get(entry, "sha256")),
                                cached, cap, &hit);
    if (rc) {
        snprintf(msg, msglen, "hone-worker: could not download %s", url);
        return rc;
    }
    t->hit += hit;
    t->got += !hit;
    t->bytes += hit ? 0 : bytes;
    return HONE_OK;
}

static int fetch_folder(hone_worker *w, const char *id, const json_t *files, const char *prefix,
                        char *folder, size_t fcap, fetch_tally *t, char *msg, size_t msglen)
{
    const json_t *f;
    size_t i;
    int rc;

    snprintf(folder, fcap, "%s/data/%s", w->work_dir, id);
    if (worker_mkdirs(folder, 0) != 0) {
        snprintf(msg, msglen, "hone-worker: cannot make %s: %s", folder, strerror(errno));
        return HONE_EIO;
    }
    json_array_foreach(files, i, f)
    {
        const char *name = json_string_value(json_object_get(f, "name"));
        char url[2048], link[4096 + 1400], cached[4096 + 128];
        if (!name_ok(name)) {
            snprintf(msg, msglen, "hone-worker: the manifest names a file %s", name ? name : "?");
            return HONE_EINVAL;
        }
        char *en = hone_rest_escape(name);
        snprintf(url, sizeof url, "%s%s", prefix, en);
        free(en);
        rc = fetch_listed(w, url, f, cached, sizeof cached, t, msg, msglen);
        if (rc)
            return rc;
        snprintf(link, sizeof link, "%s/%s", folder, name);
        if (link_into(link, cached) != 0) {
            snprintf(msg, msglen, "hone-worker: cannot link %s: %s", link, strerror(errno));
            return HONE_EIO;
        }
    }
    return HONE_OK;
}

int worker_fetch_input(hone_worker *w, const char *job_id, char *folder, size_t fcap, char *msg,
                       size_t msglen)
{
    char path[512], prefix[512], err[512];
    hone_rest_resp resp;
    fetch_tally t = {0};
    int rc;
    char *ej = hone_rest_escape(job_id);

    snprintf(path, sizeof path, "/api/v1/jobs/%s/input", ej);
    snprintf(prefix, sizeof prefix, "/api/v1/jobs/%s/input/", ej);
    free(ej);
    if (hone_rest_call(w->rest, "GET", path, NULL, 600, &resp, err, sizeof err) != 0) {
        snprintf(msg, msglen, "hone-worker: the input folder's manifest: %s", err);
        return HONE_EIO;
    }
    if (resp.status != 200 || !json_is_array(json_object_get(resp.json, "files"))) {
        hone_rest_error_text(&resp, err, sizeof err);
        snprintf(msg, msglen, "hone-worker: the input folder's manifest: %s", err);
        hone_rest_resp_clear(&resp);
        return HONE_EIO;
    }
    rc = fetch_folder(w, job_id, json_object_get(resp.json, "files"), prefix, folder, fcap, &t, msg,
                      msglen);
    if (!rc)
        worker_log(w, "job %s: input folder: %d file(s) downloaded (%lld bytes), %d from the cache",
                   job_id, t.got, t.bytes, t.hit);
    hone_rest_resp_clear(&resp);
    return rc;
}

int worker_fetch_dataset(hone_worker *w, const json_t *job, json_t *out_spec, char *msg,
                         size_t msglen)
{
    const char *ds = json_string_value(json_object_get(job, "dataset_id"));
    const json_t *spec = json_object_get(job, "spec");
    const char *packed = json_string_value(json_object_get(spec, "data.packed"));
    const char *id = json_string_value(json_object_get(job, "id"));
    char path[512], err[512], folder[4096 + 256], cached[4096 + 128];
    hone_rest_resp resp;
    json_t *f;
    size_t i;
    int rc = HONE_EIO, delay = 0;
    fetch_tally t = {0};

    if (!ds || !id) {
        snprintf(msg, msglen, "hone-worker: the lease names no dataset_id to download");
        return HONE_EINVAL;
    }
    char *e = hone_rest_escape(ds);
    snprintf(path, sizeof path, "/api/v1/datasets/%s/files", e);
    free(e);
    for (;;) {
        if (hone_rest_call(w->rest, "GET", path, NULL, 600, &resp, err, sizeof err) == 0 &&
            resp.status < 500)
            break;
        if (worker_stopping(w)) {
            snprintf(msg, msglen, "hone-worker: stopping before the dataset's manifest came");
            return HONE_EIO;
        }
        if (resp.status)
            hone_rest_resp_clear(&resp);
        worker_sleep(w, worker_backoff(w, &delay));
    }
    if (resp.status != 200 || !json_is_array(json_object_get(resp.json, "files"))) {
        hone_rest_error_text(&resp, err, sizeof err);
        snprintf(msg, msglen, "hone-worker: dataset %s's manifest: %s", ds, err);
        goto fail;
    }
    if (packed && packed[0]) {
        /* The trainer reads only the packed file: that one file is fetched. */
        const char *base = strrchr(packed, '/') ? strrchr(packed, '/') + 1 : packed;
        const json_t *hitf = NULL;
        json_array_foreach(json_object_get(resp.json, "packed"), i, f)
        {
            const char *pn = json_string_value(json_object_get(f, "name"));
            if (pn && !strcmp(pn, base))
                hitf = f;
        }
        if (!hitf) {
            snprintf(msg, msglen, "hone-worker: dataset %s has no packed file %s", ds, base);
            goto fail;
        }
        char *eb = hone_rest_escape(base);
        char url[1024];
        e = hone_rest_escape(ds);
        snprintf(url, sizeof url, "/api/v1/datasets/%s/packed/%s", e, eb);
        free(e);
        free(eb);
        rc = fetch_listed(w, url, hitf, cached, sizeof cached, &t, msg, msglen);
        if (rc)
            goto fail;
        json_object_set_new(out_spec, "data.packed", json_string(cached));
    }
    /* The folder: every file, linked under its own name (the trainer's data.path). A packed
     * image folder is read from the packed file alone; its folder still names the dataset. */
    if (!(packed && packed[0])) {
        char prefix[512];
        e = hone_rest_escape(ds);
        snprintf(prefix, sizeof prefix, "/api/v1/datasets/%s/files/", e);
        free(e);
        rc = fetch_folder(w, id, json_object_get(resp.json, "files"), prefix, folder, sizeof folder,
                          &t, msg, msglen);
        if (rc)
            goto fail;
    } else {
        snprintf(folder, sizeof folder, "%s/data/%s", w->work_dir, id);
        worker_mkdirs(folder, 0);
    }
    json_object_set_new(out_spec, "data.path", json_string(folder));
    worker_log(w, "job %s: dataset %s: %d file(s) downloaded (%lld bytes), %d from the cache", id,
               ds, t.got, t.bytes, t.hit);
    rc = HONE_OK;
fail:
    hone_rest_resp_clear(&resp);
    return rc;
}

/* Fetches the job's uploaded checkpoint.bin and metrics.jsonl into out_dir (a trial resumed on a
 * worker that did not run it before). HONE_ENOENT when the controller has no checkpoint. */
int worker_fetch_checkpoint(hone_worker *w, const char *job_id, const char *out_dir)
{
    static const char *const names[] = {"checkpoint.bin", "metrics.jsonl"};
    char *ej = hone_rest_escape(job_id);
    int rc = HONE_OK;
    for (size_t i = 0; i < HONE_ARRAY_LEN(names) && rc == HONE_OK; i++) {
        char path[512], file[4096 + 300], tmp[4096 + 310], err[512];
        hone_rest_resp resp;
        snprintf(path, sizeof path, "/api/v1/jobs/%s/artifacts/%s", ej, names[i]);
        snprintf(file, sizeof file, "%s/%s", out_dir, names[i]);
        snprintf(tmp, sizeof tmp, "%s.dl", file);
        FILE *f = fopen(tmp, "wb");
        if (!f) {
            rc = HONE_EIO;
            break;
        }
        rc = hone_rest_download(w->rest, path, f, 600, &resp, err, sizeof err);
        if (fclose(f) != 0 && rc == 0)
            rc = HONE_EIO;
        if (rc == 0 && resp.status == 200)
            rc = rename(tmp, file) == 0 ? HONE_OK : HONE_EIO;
        else if (rc == 0 && resp.status == 404)
            rc = i == 0 ? HONE_ENOENT : HONE_OK; /* a checkpoint without metrics: fine */
        else if (rc == 0)
            rc = HONE_EIO;
        if (rc == 0 && resp.status == 200)
            worker_log(w, "job %s: %s fetched from the controller", job_id, names[i]);
        unlink(tmp);
        hone_rest_resp_clear(&resp);
    }
    free(ej);
    return rc;
}

int worker_fetch_model(hone_worker *w, const char *job_id, const char *parent, const char *subdir,
                       const char *dir, char *msg, size_t msglen)
{
    char path[512], err[512];
    hone_rest_resp resp;
    json_t *f;
    size_t i, sl = subdir ? strlen(subdir) : 0;
    int rc = HONE_EIO;
    fetch_tally t = {0};
    char *ep = hone_rest_escape(parent);

    /* the model's files with their sha256: each comes through the hash-named cache, checked */
    snprintf(path, sizeof path, "/api/v1/jobs/%s/artifacts?model=1", ep);
    if (worker_mkdirs(dir, 0) != 0 ||
        hone_rest_call(w->rest, "GET", path, NULL, 120, &resp, err, sizeof err) != 0) {
        snprintf(msg, msglen, "hone-worker: cannot list the model of job %s", parent);
        free(ep);
        return HONE_EIO;
    }
    if (resp.status != 200) {
        hone_rest_error_text(&resp, err, sizeof err);
        snprintf(msg, msglen, "hone-worker: the model of job %s: %s", parent, err);
        goto fail;
    }
    json_array_foreach(json_object_get(resp.json, "files"), i, f)
    {
        const char *name = json_string_value(json_object_get(f, "name")), *base;
        char url[1024], file[4096 + 600], cached[4096 + 128];
        if (!name)
            continue;
        if (sl) { /* best_model/x of an AutoML job */
            if (strncmp(name, subdir, sl) != 0 || name[sl] != '/')
                continue;
            base = name + sl + 1;
        } else {
            base = name;
        }
        /* what hone-train opens: the model, its description and spec; not the checkpoint */
        if (!name_ok(base) || strchr(base, '/') || !strcmp(base, "checkpoint.bin"))
            continue;
        char *eb = hone_rest_escape(base);
        snprintf(url, sizeof url, "/api/v1/jobs/%s/artifacts/%s%s%s", ep, sl ? subdir : "",
                 sl ? "/" : "", eb);
        free(eb);
        if ((rc = fetch_listed(w, url, f, cached, sizeof cached, &t, msg, msglen)))
            goto fail;
        snprintf(file, sizeof file, "%s/%s", dir, base);
        if (link_into(file, cached) != 0) {
            snprintf(msg, msglen, "hone-worker: cannot link %s: %s", file, strerror(errno));
            rc = HONE_EIO;
            goto fail;
        }
    }
    static const char *const need[] = {"model.bin", "model.json", "spec.yaml"};
    for (size_t k = 0; k < sizeof need / sizeof need[0]; k++) {
        char file[4096 + 64];
        struct stat st;
        snprintf(file, sizeof file, "%s/%s", dir, need[k]);
        if (stat(file, &st) != 0) {
            snprintf(msg, msglen, "hone-worker: the model of job %s%s%s has no %s", parent,
                     sl ? "/" : "", sl ? subdir : "", need[k]);
            rc = HONE_ENOENT;
            goto fail;
        }
    }
    worker_log(w,
               "job %s: model of job %s%s%s fetched (%d file(s) downloaded, %lld bytes, %d from "
               "the cache; sha-256 checked)",
               job_id, parent, sl ? "/" : "", sl ? subdir : "", t.got, t.bytes, t.hit);
    rc = HONE_OK;
fail:
    free(ep);
    hone_rest_resp_clear(&resp);
    return rc;
}
