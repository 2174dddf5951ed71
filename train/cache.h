/* train/cache.h (private): what a resident trainer (hone-train --serve) keeps between jobs: one
 * kernel context (its CUDA stream and cuBLAS handle, or its CPU worker pool) and the last few
 * datasets it loaded, in host memory and uploaded to that context's device. A job borrows them
 * through hone_train_opts.cache; everything else of a job (network, optimiser state, RNG counters,
 * batch-norm statistics, graphs) is built fresh for it and freed with it.
 *
 * A dataset is found again by a key of everything that determines its bytes: data.format,
 * data.path, data.packed, model.input_size, data.channels, data.train_limit, data.test_limit,
 * data.val_size, and the identity (device, inode, size, modification time) of the files it is read
 * from: the packed file, or each entry of an idx folder. A changed file is a miss. An image folder
 * without data.packed (hone-train packs it itself) is never cached: its bytes depend on every file
 * of a tree. At most `max` datasets are kept; the least recently used one goes first. */
#ifndef HONE_TRAIN_CACHE_H
#define HONE_TRAIN_CACHE_H

#include "dataset.h"

typedef struct cache_entry {
    char *key; /* NULL: free slot */
    dataset ds;
    uint8_t *x[3]; /* device copies of train, val, test pixels */
    int32_t *y[3]; /* and labels */
    uint64_t used; /* tick of the last job that used it */
} cache_entry;

struct hone_train_cache {
    int max;
    hone_kctx *k; /* NULL until the first job */
    hone_device dev;
    int threads;
    cache_entry *entries; /* [max] */
    uint64_t tick;
    long hits, misses;
};

/* The cached context for (dev, threads), created on first use; a job on another device or thread
 * count replaces it (and drops the datasets, which live on the old one). Borrowed. */
int train_cache_ctx(hone_train_cache *c, hone_device dev, int threads, hone_kctx **k, char *err,
                    size_t errlen);
/* The spec's data (dataset_load with test_only 0) on the cached context: a hit returns the kept
 * entry, a miss loads, uploads and keeps it (evicting the least recently used). Logs "dataset cache
 * hit" or "dataset cache miss" on stderr. *e is borrowed until the next call. HONE_ENOTSUP: the
 * data is not cacheable (an image folder without data.packed); the caller loads it itself. */
int train_cache_data(hone_train_cache *c, const hone_train_spec *s, const cache_entry **e,
                     char *err, size_t errlen);

#endif
