/* Private zip reader of the controller: walks a zip archive held in memory (the spooled upload,
 * mapped) from its central directory and refuses hostile ones (path traversal, links, devices,
 * encryption, zip64, entries that overlap or lie outside the archive, names that differ between
 * the central and local headers, size and count limits, duplicate names) before handing any entry
 * to the caller; an entry's bytes are inflated (stored or deflate, zlib) bounded by its declared
 * size and checked against its CRC-32. Pure: no I/O. */
#ifndef HONE_CTL_ZIP_H
#define HONE_CTL_ZIP_H

#include <stddef.h>
#include <stdint.h>

#include "tar.h" /* ctl_tar_limits */

typedef struct ctl_zip_entry {
    const char *name; /* normalized as tar.c's: relative, '/'-separated, no '.', '..' or empty */
    int is_dir;
    uint64_t size; /* declared, checked against the limits; the bytes read are held to it */
    /* private to zip.c: the compressed bytes inside the archive */
    const uint8_t *cdata;
    uint64_t csize;
    int method; /* 0 stored, 8 deflate */
    uint32_t crc;
} ctl_zip_entry;

typedef int (*ctl_zip_cb)(const ctl_zip_entry *e, void *ud);
/* Receives an entry's bytes in order; a non-zero return stops the read and is returned. */
typedef int (*ctl_zip_sink)(const uint8_t *p, size_t n, void *ud);

/* Checks the whole archive buf[0..len) against lim (from its central directory: every header,
 * name and range), then calls cb (may be NULL) for each entry in central-directory order. Returns
 * HONE_OK, HONE_EPARSE (malformed, truncated), HONE_EINVAL (refused content, limits) with a
 * message naming the entry in msg, or cb's status. *n_entries / *total may be NULL. */
int ctl_zip_walk(const uint8_t *buf, size_t len, const ctl_tar_limits *lim, ctl_zip_cb cb, void *ud,
                 size_t *n_entries, uint64_t *total, char *msg, size_t msglen);

/* Hands e's bytes to sink in chunks: HONE_OK once exactly e->size bytes with e->crc came out;
 * HONE_EPARSE with a message naming the entry when the data is corrupt, longer or shorter than
 * declared, or its CRC differs (what sink took so far is then the caller's to throw away). */
int ctl_zip_read(const ctl_zip_entry *e, ctl_zip_sink sink, void *ud, char *msg, size_t msglen);

#endif
