/* train/cache.c: the resident trainer's context pool and dataset cache (cache.h), under one
 * mutex. */
#include "cache.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int hone_train_cache_new(int max_datasets, hone_train_cache **out)
{
    *out = NULL;
    if (max_datasets < 0 || max_datasets > 64)
        return HONE_EINVAL;
    hone_train_cache *c = hone_xcalloc(1, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
    c->max = max_datasets;
    c->entries = hone_xcalloc((size_t)max_datasets + 1, sizeof(cache_entry *));
    *out = c;
    return HONE_OK;
}

/* Frees e's host and device copies (through its owner: no job reads it any more). */
static void entry_destroy(cache_entry *e)
{
    hone_kctx *k = e->owner->k;
    for (int p = 0; p < 3; p++) {
        hone_k_free(k, e->x[p]);
        hone_k_free(k, e->y[p]);
    }
    e->owner->refs--;
    dataset_free(&e->ds);
    free(e->key);
    free(e);
}

/* Takes slot i's entry out of the cache: freed now, or by its last user. */
static void entry_drop(hone_train_cache *c, int i)
{
    cache_entry *e = c->entries[i];
    c->entries[i] = NULL;
    if (!e)
        return;
    if (e->users > 0)
        e->dropped = 1;
    else
        entry_destroy(e);
}

/* Frees the contexts marked for it (doomed) that no job holds and no dataset needs. */
static void ctx_gc(hone_train_cache *c)
{
    for (int i = 0; i < c->nctx;) {
        cache_ctx *x = c->ctxs[i];
        if (x->doomed && !x->busy && x->refs == 0) {
            hone_k_sync(x->k);
            hone_kctx_free(x->k);
            free(x);
            c->ctxs[i] = c->ctxs[--c->nctx];
        } else {
            i++;
        }
    }
}

/* Marks context x for freeing and drops the datasets uploaded through it. */
static void ctx_doom(hone_train_cache *c, cache_ctx *x)
{
    x->doomed = 1;
    for (int i = 0; i < c->max; i++)
        if (c->entries[i] && c->entries[i]->owner == x)
            entry_drop(c, i);
}

void hone_train_cache_free(hone_train_cache *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->nctx; i++)
        hone_k_sync(c->ctxs[i]->k);
    for (int i = 0; i < c->max; i++) /* no job runs any more: every entry goes now */
        if (c->entries[i])
            entry_destroy(c->entries[i]);
    for (int i = 0; i < c->nctx; i++) {
        hone_kctx_free(c->ctxs[i]->k);
        free(c->ctxs[i]);
    }
    free(c->ctxs);
    free(c->entries);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void hone_train_cache_clear(hone_train_cache *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->max; i++)
        entry_drop(c, i);
    for (int i = 0; i < c->nctx; i++)
        c->ctxs[i]->doomed = 1;
    ctx_gc(c);
    pthread_mutex_unlock(&c->mu);
}

int hone_train_cache_cuda(hone_train_cache *c)
{
    int cuda = 0;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->nctx; i++)
        cuda |= c->ctxs[i]->dev == HONE_DEV_CUDA;
    pthread_mutex_unlock(&c->mu);
    return cuda;
}

void hone_train_cache_stats(hone_train_cache *c, long *hits, long *misses)
{
    pthread_mutex_lock(&c->mu);
    *hits = c->hits;
    *misses = c->misses;
    pthread_mutex_unlock(&c->mu);
}

int train_cache_ctx(hone_train_cache *c, hone_device dev, int threads, hone_kctx **k, char *err,
                    size_t errlen)
{
    *k = NULL;
    pthread_mutex_lock(&c->mu);
    cache_ctx *got = NULL;
    for (int i = 0; i < c->nctx; i++) {
        cache_ctx *x = c->ctxs[i];
        if (x->busy || x->doomed)
            continue;
        if (x->dev != dev || x->threads != threads)
            ctx_doom(c, x); /* replaced, as one resident context would be */
        else if (!got)
            got = x;
    }
    ctx_gc(c);
    if (!got) {
        hone_kctx *nk;
        int rc = hone_kctx_new(dev, threads, &nk);
        if (rc < 0) {
            pthread_mutex_unlock(&c->mu);
            snprintf(err, errlen, "device %s: %s", dev == HONE_DEV_CUDA ? "cuda" : "cpu",
                     hone_strerror(rc));
            return rc;
        }
        got = hone_xcalloc(1, sizeof(*got));
        got->k = nk;
        got->dev = dev;
        got->threads = threads;
        c->ctxs = hone_xrealloc(c->ctxs, sizeof(cache_ctx *) * (size_t)(c->nctx + 1));
        c->ctxs[c->nctx++] = got;
    }
    got->busy = 1;
    *k = got->k;
    pthread_mutex_unlock(&c->mu);
    return HONE_OK;
}

static cache_ctx *ctx_of(hone_train_cache *c, hone_kctx *k)
{
    for (int i = 0; i < c->nctx; i++)
        if (c->ctxs[i]->k == k)
            return c->ctxs[i];
    return NULL;
}

void train_cache_ctx_release(hone_train_cache *c, hone_kctx *k)
{
    pthread_mutex_lock(&c->mu);
    cache_ctx *x = ctx_of(c, k);
    if (x)
        x->busy = 0;
    ctx_gc(c);
    pthread_mutex_unlock(&c->mu);
}
/* Appends "|dev:ino:size:mtime" of path (or "|-" when it cannot be read) to the key. */
static void key_file(char *key, size_t len, const char *path)
{
    struct stat st;
    size_t n = strlen(key);
    if (stat(path, &st) != 0)
        snprintf(key + n, len - n, "|-");
    else
        snprintf(key + n, len - n, "|%llu:%llu:%lld:%lld.%09ld", (unsigned long long)st.st_dev,
                 (unsigned long long)st.st_ino, (long long)st.st_size, (long long)st.st_mtim.tv_sec,
                 st.st_mtim.tv_nsec);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The cache key of s's data into key (HONE_ENOTSUP: not cacheable; HONE_ELIMIT: too long). */
static int data_key(hone_device dev, const hone_train_spec *s, char *key, size_t len)
{
    int is_folder = strcmp(s->data.format, "image_folder") == 0;
    if (is_folder && !s->data.packed[0])
        return HONE_ENOTSUP;
    snprintf(key, len, "%s|%s|%s|%s|%d|%d|%d|%d|%d", dev == HONE_DEV_CUDA ? "cuda" : "cpu",
             s->data.format, s->data.path, s->data.packed, s->model.input_size, s->data.channels,
             s->data.train_limit, s->data.test_limit, s->data.val_size);
    if (is_folder) {
        key_file(key, len, s->data.packed);
    } else { /* every entry of the idx folder, in name order: the files are some of them */
        DIR *d = opendir(s->data.path);
        char **names = NULL, path[2100];
        size_t n = 0, cap = 0;
        struct dirent *de;
        while (d && (de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.')
                continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 16;
                names = hone_xrealloc(names, cap * sizeof(char *));
            }
            names[n++] = hone_xstrdup(de->d_name);
        }
        if (d)
            closedir(d);
        if (n > 1)
            qsort(names, n, sizeof(char *), by_name);
        for (size_t i = 0; i < n; i++) {
            size_t kl = strlen(key);
            snprintf(key + kl, len - kl, "|%s", names[i]);
            snprintf(path, sizeof(path), "%s/%s", s->data.path, names[i]);
            key_file(key, len, path);
            free(names[i]);
        }
        free(names);
    }
    return strlen(key) + 1 >= len ? HONE_ELIMIT : HONE_OK;
}

static void *upload(hone_kctx *k, const void *host, size_t bytes)
{
    void *d = hone_k_alloc(k, bytes ? bytes : 4);
    if (bytes)
        hone_k_upload(k, d, host, bytes);
    return d;
}

int train_cache_data(hone_train_cache *c, hone_kctx *k, const hone_train_spec *s, FILE *log,
                     const cache_entry **out, char *err, size_t errlen)
{
    char key[8192];
    *out = NULL;
    if (c->max == 0 || data_key(hone_kctx_device(k), s, key, sizeof(key)) < 0)
        return HONE_ENOTSUP;
    const char *what = s->data.packed[0] ? s->data.packed : s->data.path;
    pthread_mutex_lock(&c->mu);
    cache_ctx *owner = ctx_of(c, k);
    int rc = HONE_ENOTSUP, slot = 0;
    if (!owner)
        goto done;
    c->tick++;
    for (int i = 0; i < c->max; i++) {
        cache_entry *e = c->entries[i];
        if (e && strcmp(e->key, key) == 0) {
            e->used = c->tick;
            e->users++;
            c->hits++;
            fprintf(log, "hone-train: dataset cache hit (%s %s)\n", s->data.format, what);
            *out = e;
            rc = HONE_OK;
            goto done;
        }
        /* the free slot, else the least recently used */
        cache_entry *cur = c->entries[slot];
        if (cur && (!e || e->used < cur->used))
            slot = i;
    }
    c->misses++;
    fprintf(log, "hone-train: dataset cache miss (%s %s)\n", s->data.format, what);
    entry_drop(c, slot);
    /* loaded under the lock: jobs on the same data wait for this one copy, then hit it */
    cache_entry *e = hone_xcalloc(1, sizeof(*e));
    if ((rc = dataset_load_log(s, 0, log, &e->ds, err, errlen)) < 0) {
        free(e);
        goto done;
    }
    const dataset *d = &e->ds;
    size_t row = (size_t)d->c * d->h * d->w;
    const data_part *parts[3] = {&d->train, &d->val, &d->test};
    for (int p = 0; p < 3; p++) {
        e->x[p] = upload(k, parts[p]->x, (size_t)parts[p]->n * row);
        e->y[p] = upload(k, parts[p]->y, (size_t)parts[p]->n * 4);
    }
    e->key = hone_xstrdup(key);
    e->owner = owner;
    owner->refs++;
    if ((rc = hone_k_sync(k)) < 0) {
        snprintf(err, errlen, "data: upload: %s", hone_strerror(rc));
        entry_destroy(e);
        goto done;
    }
    e->used = c->tick;
    e->users = 1;
    c->entries[slot] = e;
    *out = e;
done:
    pthread_mutex_unlock(&c->mu);
    return rc;
}

void train_cache_data_release(hone_train_cache *c, const cache_entry *ce)
{
    pthread_mutex_lock(&c->mu);
    cache_entry *e = (cache_entry *)ce;
    if (--e->users == 0 && e->dropped)
        entry_destroy(e);
    ctx_gc(c);
    pthread_mutex_unlock(&c->mu);
}
