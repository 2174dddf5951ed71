/* tar_write: `hone dataset upload FOLDER` packs the folder's contents (as `tar -C FOLDER .` would)
 * into a temporary ustar file for the upload, so a user need not know how to make the archive.
 * Links to files are stored as the file they point to (tar -h); links to folders, devices, fifos
 * and names too long for ustar are refused with the path named, never skipped silently. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TW_MAX_DEPTH 32

typedef struct tw {
    int fd;
    char *err;
    size_t errlen;
    uint64_t files;
} tw;

static int tw_write(tw *t, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(t->fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            snprintf(t->err, t->errlen, "cannot write the archive: %s", strerror(errno));
            return HONE_EIO;
        }
        c += w;
        n -= (size_t)w;
    }
    return HONE_OK;
}

/* One ustar header for rel (a folder when dir), size bytes. */
static int tw_header(tw *t, const char *rel, int dir, uint64_t size)
{
    unsigned char h[512];
    char name[256];
    size_t n = (size_t)snprintf(name, sizeof(name), "%s%s", rel, dir ? "/" : "");
    const char *cut = NULL;
    memset(h, 0, sizeof(h));
    if (n <= 100) {
        memcpy(h, name, n);
    } else { /* split at a '/' into prefix (<= 155) and name (<= 100) */
        for (const char *s = strchr(name, '/'); s; s = strchr(s + 1, '/'))
            if ((size_t)(s - name) <= 155 && n - (size_t)(s - name) - 1 <= 100 &&
                n - (size_t)(s - name) - 1 > 0) {
                cut = s;
                break;
            }
        if (n >= sizeof(name) - 1 || !cut) {
            snprintf(t->err, t->errlen,
                     "%s: the path is too long for a tar archive (100 bytes a name, 255 in all): "
                     "rename it, or send an archive you made (zip -r)",
                     rel);
            return HONE_EINVAL;
        }
        memcpy(h, cut + 1, n - (size_t)(cut - name) - 1);
        memcpy(h + 345, name, (size_t)(cut - name));
    }
    snprintf((char *)h + 100, 8, "%07o", dir ? 0755 : 0644);
    snprintf((char *)h + 108, 8, "%07o", 0);
    snprintf((char *)h + 116, 8, "%07o", 0);
    snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
    snprintf((char *)h + 136, 12, "%011llo", (unsigned long long)0);
    h[156] = dir ? '5' : '0';
    memcpy(h + 257,
           "ustar\0"
           "00",
           8);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    h[155] = ' ';
    return tw_write(t, h, sizeof(h));
}

static int tw_file(tw *t, const char *path, const char *rel, const struct stat *st)
{
    char buf[1 << 16];
    uint64_t left = (uint64_t)st->st_size;
    if (left > 077777777777ull) {
        snprintf(t->err, t->errlen, "%s: too large for a tar archive", rel);
        return HONE_EINVAL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(t->err, t->errlen, "%s: %s", path, strerror(errno));
        return HONE_EIO;
    }
    int rc = tw_header(t, rel, 0, left);
    while (!rc && left) {
        ssize_t k = read(fd, buf, left < sizeof(buf) ? (size_t)left : sizeof(buf));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            snprintf(t->err, t->errlen, "%s: %s", path, k ? strerror(errno) : "shrank while read");
            rc = HONE_EIO;
            break;
        }
        rc = tw_write(t, buf, (size_t)k);
        left -= (uint64_t)k;
    }
    close(fd);
    size_t pad = (size_t)((512 - st->st_size % 512) % 512);
    if (!rc && pad) {
        memset(buf, 0, pad);
        rc = tw_write(t, buf, pad);
    }
    t->files++;
    return rc;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The folder path (rel: its name in the archive, "" for the top), in name order. */
static int tw_dir(tw *t, const char *path, const char *rel, int depth)
{
    DIR *d = opendir(path);
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    int rc = HONE_OK;
    if (!d) {
        snprintf(t->err, t->errlen, "%s: %s", path, strerror(errno));
        return HONE_EIO;
    }
    if (depth > TW_MAX_DEPTH) {
        closedir(d);
        snprintf(t->err, t->errlen, "%s: folders nested more than %d deep", path, TW_MAX_DEPTH);
        return HONE_EINVAL;
    }
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            names = hone_xrealloc(names, cap * sizeof(char *));
        }
        names[n++] = hone_xstrdup(e->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof(char *), cmp_name);
    for (size_t i = 0; i < n && !rc; i++) {
        char p[PATH_MAX], r[PATH_MAX];
        struct stat lst, st;
        snprintf(p, sizeof(p), "%s/%s", path, names[i]);
        snprintf(r, sizeof(r), "%s%s%s", rel, rel[0] ? "/" : "", names[i]);
        if (lstat(p, &lst) != 0 || stat(p, &st) != 0) {
            snprintf(t->err, t->errlen, "%s: %s", p, strerror(errno));
            rc = HONE_EIO;
        } else if (S_ISLNK(lst.st_mode) && S_ISDIR(st.st_mode)) {
            snprintf(t->err, t->errlen,
                     "%s: a link to a folder (not followed: copy the folder in, or make the "
                     "archive yourself)",
                     p);
            rc = HONE_EINVAL;
        } else if (S_ISDIR(st.st_mode)) {
            rc = tw_header(t, r, 1, 0);
            if (!rc)
                rc = tw_dir(t, p, r, depth + 1);
        } else if (S_ISREG(st.st_mode)) {
            rc = tw_file(t, p, r, &st);
        } else {
            snprintf(t->err, t->errlen, "%s: not a file or folder (a device, fifo or socket)", p);
            rc = HONE_EINVAL;
        }
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

int cli_tar_folder(const char *dir, int fd, char *err, size_t errlen)
{
    tw t = {.fd = fd, .err = err, .errlen = errlen};
    int rc = tw_dir(&t, dir, "", 0);
    if (!rc) {
        char end[1024] = {0};
        rc = tw_write(&t, end, sizeof(end));
    }
    return rc;
}
