/* data: the dataset formats in one place. IDX files (MNIST family) today; JPEG and PNG decoding,
 * image folders and the packed dataset file join it. Used by hone-train to load data, by the
 * controller to check datasets at create time, by hone-pack (and the convert job) to pack them.
 * Pure library: files and memory only; no HTTP, no SQLite, no kernels. Every function that can
 * fail returns 0 or a negative HONE_E* code and writes a one-line reason naming the file to err. */
#ifndef HONE_DATA_H
#define HONE_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "hone.h"

/* ------------------------------------------------------------------ IDX files */

/* A parsed IDX file: a plain result (fields read-only), freed with hone_data_idx_free. */
typedef struct hone_data_idx {
    int type;      /* element type code: 0x08 = uint8 (the only one accepted) */
    int ndims;     /* 1..4 */
    int dims[4];   /* each > 0 */
    size_t count;  /* product of dims */
    uint8_t *data; /* count bytes, owned */
} hone_data_idx;

/* Parses an IDX image/label file held in memory (no gzip). HONE_EPARSE on a bad magic, dims or
 * size; err (may be NULL) receives a one-line reason. Safe on arbitrary bytes (fuzzed). */
int hone_data_idx_read_mem(const uint8_t *buf, size_t len, hone_data_idx **out, char *err,
                           size_t errlen);
/* Reads a file, gzip-compressed or not. HONE_ENOENT when missing, HONE_EIO, HONE_EPARSE. */
int hone_data_idx_read_file(const char *path, hone_data_idx **out, char *err, size_t errlen);
void hone_data_idx_free(hone_data_idx *idx);

#endif
