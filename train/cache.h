/* train/cache.h (private): what a resident trainer (hone-train --serve) keeps between jobs and
 * shares between the jobs it runs at the same time (--serve --listen): a pool of kernel contexts
 * (each its CUDA stream, cuBLAS and cuDNN handles and workspaces, or its CPU worker pool), one per
 * job running at a time, kept for the next jobs; and the last few datasets it loaded, in host
 * memory and uploaded to the device once, read by every job on that data. A job borrows them
 * through hone_train_opts.cache; everything else of a job (network, optimiser state, RNG counters,
 * batch-norm statistics, graphs) is built fresh for it and freed with it.
 *
 * A dataset is found again by a key of everything that determines its bytes: the device,
 * data.format, data.path, data.packed, model.input_size, data.channels, data.train_limit,
 * data.test_limit, data.val_size, and the identity (device, inode, size, modification time) of the
 * files it is read from: the packed file, or each entry of an idx folder. A changed file is a miss.
 * An image folder without data.packed (hone-train packs it itself) is never cached: its bytes
 * depend on every file of a tree. At most `max` datasets are kept; the least recently used one
 * goes first. Device memory belongs to the device, not to a context (kernels.h), so a dataset
 * uploaded through one job's context is read by jobs on other contexts of the same device.
 *
 * Thread safety: every function here takes the cache's mutex. A context is lent to one job at a
 * time. A dataset is counted by the jobs using it: one evicted or cleared while in use is freed by
 * its last user's release; a context is freed only when no job holds it and no kept dataset was
 * uploaded through it. */
#ifndef HONE_TRAIN_CACHE_H
#define HONE_TRAIN_CACHE_H

#include <pthread.h>

#include "dataset.h"

typedef struct cache_ctx {
    hone_kctx *k;
    hone_device dev;
    int threads;
    int busy;   /* lent to a job */
    int refs;   /* kept datasets uploaded through it (it frees them) */
    int doomed; /* to be freed once idle and unneeded (replaced, or the cache cleared) */
} cache_ctx;

typedef struct cache_entry {
    char *key;
    cache_ctx *owner; /* the context it was uploaded through */
    dataset ds;
    uint8_t *x[3]; /* device copies of train, val, test pixels */
    int32_t *y[3]; /* and labels */
    uint64_t used; /* tick of the last job that took it */
    int users;     /* jobs reading it now */
    int dropped;   /* no longer in the cache: the last user frees it */
} cache_entry;

struct hone_train_cache {
    pthread_mutex_t mu;
    int max;
    cache_ctx **ctxs; /* [nctx] */
    int nctx;
    cache_entry **entries; /* [max]; NULL: free slot */
    uint64_t tick;
    long hits, misses;
};

/* Lends a context for (dev, threads) to the caller (an idle one, else a new one; idle contexts of
 * another device or thread count are dropped first, with their datasets no job is reading). Give
 * it back with train_cache_ctx_release once nothing of the job runs on it any more. */
int train_cache_ctx(hone_train_cache *c, hone_device dev, int threads, hone_kctx **k, char *err,
                    size_t errlen);
void train_cache_ctx_release(hone_train_cache *c, hone_kctx *k);
/* The spec's data (dataset_load with test_only 0) for a job on the lent context k: a hit returns
 * the kept entry, a miss loads it, uploads it through k and keeps it (evicting the least recently
 * used). Logs "dataset cache hit" or "dataset cache miss" on log. *e is read only and held until
 * train_cache_data_release. HONE_ENOTSUP: the data is not cacheable (an image folder without
 * data.packed); the caller loads it itself. */
int train_cache_data(hone_train_cache *c, hone_kctx *k, const hone_train_spec *s, FILE *log,
                     const cache_entry **e, char *err, size_t errlen);
void train_cache_data_release(hone_train_cache *c, const cache_entry *e);

#endif
