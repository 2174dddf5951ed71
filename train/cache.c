/* train/cache.c: the resident trainer's kernel context and dataset cache (cache.h). */
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
    c->max = max_datasets;
    c->entries = hone_xcalloc((size_t)max_datasets + 1, sizeof(cache_entry));
    *out = c;
    return HONE_OK;
}

static void entry_free(hone_train_cache *c, cache_entry *e)
{
    if (!e->key)
        return;
    for (int p = 0; p < 3; p++) {
        hone_k_free(c->k, e->x[p]);
        hone_k_free(c->k, e->y[p]);
    }
    dataset_free(&e->ds);
    free(e->key);
    memset(e, 0, sizeof(*e));
}

static void drop_data(hone_train_cache *c)
{
    for (int i = 0; i < c->max; i++)
        entry_free(c, &c->entries[i]);
}

void hone_train_cache_free(hone_train_cache *c)
{
    if (!c)
        return;
    if (c->k) {
        hone_k_sync(c->k);
        drop_data(c);
        hone_kctx_free(c->k);
    }
    free(c->entries);
    free(c);
}

void hone_train_cache_clear(hone_train_cache *c)
{
    if (!c || !c->k)
        return;
    hone_k_sync(c->k);
    drop_data(c);
    hone_kctx_free(c->k);
    c->k = NULL;
}

int hone_train_cache_cuda(const hone_train_cache *c)
{
    return c->k && c->dev == HONE_DEV_CUDA;
}

void hone_train_cache_stats(const hone_train_cache *c, long *hits, long *misses)
{
    *hits = c->hits;
    *misses = c->misses;
}

int train_cache_ctx(hone_train_cache *c, hone_device dev, int threads, hone_kctx **k, char *err,
                    size_t errlen)
{
    if (c->k && (c->dev != dev || c->threads != threads))
        hone_train_cache_clear(c);
    if (!c->k) {
        int rc = hone_kctx_new(dev, threads, &c->k);
        if (rc < 0) {
            c->k = NULL;
            snprintf(err, errlen, "device %s: %s", dev == HONE_DEV_CUDA ? "cuda" : "cpu",
                     hone_strerror(rc));
            return rc;
        }
        c->dev = dev;
        c->threads = threads;
    }
    *k = c->k;
    return HONE_OK;
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
static int data_key(const hone_train_spec *s, char *key, size_t len)
{
    int is_folder = strcmp(s->data.format, "image_folder") == 0;
    if (is_folder && !s->data.packed[0])
        return HONE_ENOTSUP;
    snprintf(key, len, "%s|%s|%s|%d|%d|%d|%d|%d", s->data.format, s->data.path, s->data.packed,
             s->model.input_size, s->data.channels, s->data.train_limit, s->data.test_limit,
             s->data.val_size);
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

int train_cache_data(hone_train_cache *c, const hone_train_spec *s, const cache_entry **out,
                     char *err, size_t errlen)
{
    char key[8192];
    *out = NULL;
    if (!c->k || c->max == 0)
        return HONE_ENOTSUP;
    int rc = data_key(s, key, sizeof(key));
    if (rc < 0)
        return HONE_ENOTSUP;
    c->tick++;
    cache_entry *slot = &c->entries[0];
    for (int i = 0; i < c->max; i++) {
        cache_entry *e = &c->entries[i];
        if (e->key && strcmp(e->key, key) == 0) {
            e->used = c->tick;
            c->hits++;
            fprintf(stderr, "hone-train: dataset cache hit (%s %s)\n", s->data.format,
                    s->data.packed[0] ? s->data.packed : s->data.path);
            *out = e;
            return HONE_OK;
        }
        /* the free slot, else the least recently used */
        if (slot->key && (!e->key || e->used < slot->used))
            slot = e;
    }
    c->misses++;
    fprintf(stderr, "hone-train: dataset cache miss (%s %s)\n", s->data.format,
            s->data.packed[0] ? s->data.packed : s->data.path);
    hone_k_sync(c->k);
    entry_free(c, slot);
    if ((rc = dataset_load(s, 0, &slot->ds, err, errlen)) < 0)
        return rc;
    const dataset *d = &slot->ds;
    size_t row = (size_t)d->c * d->h * d->w;
    const data_part *parts[3] = {&d->train, &d->val, &d->test};
    for (int p = 0; p < 3; p++) {
        slot->x[p] = upload(c->k, parts[p]->x, (size_t)parts[p]->n * row);
        slot->y[p] = upload(c->k, parts[p]->y, (size_t)parts[p]->n * 4);
    }
    slot->key = hone_xstrdup(key);
    if ((rc = hone_k_sync(c->k)) < 0) {
        snprintf(err, errlen, "data: upload: %s", hone_strerror(rc));
        entry_free(c, slot);
        return rc;
    }
    slot->used = c->tick;
    *out = slot;
    return HONE_OK;
}
