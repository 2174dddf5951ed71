/* Private tar reader of the controller: walks an uncompressed POSIX ustar / GNU tar archive held in
 * memory and refuses hostile ones (path traversal, links, devices, bad checksums, truncation, size
 * and count limits, duplicate names) before handing any entry to the caller. Pure: no I/O. */
#ifndef HONE_CTL_TAR_H
#define HONE_CTL_TAR_H

#include <stddef.h>
#include <stdint.h>

typedef struct ctl_tar_limits {
    size_t max_entries; /* files + folders */
    uint64_t max_file;  /* one file's bytes */
    uint64_t max_total; /* all files' bytes */
} ctl_tar_limits;

typedef struct ctl_tar_entry {
    const char *name; /* normalized: relative, '/'-separated, no '.', '..' or empty parts */
    int is_dir;
    const uint8_t *data; /* into the archive buffer; size bytes */
    uint64_t size;
} ctl_tar_entry;

/* Called once per entry, in archive order, only after the whole archive was found valid; a
 * non-zero return stops the walk and is returned. */
typedef int (*ctl_tar_cb)(const ctl_tar_entry *e, void *ud);

/* Checks the whole archive buf[0..len) against lim, then calls cb (may be NULL) for each entry.
 * Returns HONE_OK, HONE_EPARSE (malformed, truncated, checksum), HONE_EINVAL (refused content,
 * limits) with a message in msg, or cb's status. *n_entries / *total (may be NULL) get the counts.
 */
int ctl_tar_walk(const uint8_t *buf, size_t len, const ctl_tar_limits *lim, ctl_tar_cb cb, void *ud,
                 size_t *n_entries, uint64_t *total, char *msg, size_t msglen);

/* Shared with the zip reader (zip.c): an entry's name normalized (relative, '/'-separated, no '.',
 * '..' or empty parts; no backslash or control bytes; HONE_EINVAL naming it otherwise), and the
 * whole archive's names checked for duplicates and file/folder clashes. */
int ctl_tar_name_norm(const char *raw, char *out, size_t outn, char *msg, size_t msglen);
int ctl_tar_names_check(char *const *names, const int *is_dir, size_t n, char *msg, size_t msglen);

#endif
