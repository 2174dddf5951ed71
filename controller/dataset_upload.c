/* POST /api/v1/datasets:upload: a dataset sent as an archive: tar (of the dataset folder itself or
 * of its contents), tar.gz, or zip, told apart by their first bytes, not their name. The request
 * is checked before its body is read; the body is spooled to a hidden temp file under
 * <data_dir>/datasets/ (api/ upload routes), then, on the dataset check threads (checkq.h), a
 * gzip body is inflated to a second temp file (bounded: a bomb stops at the bound), the archive is
 * mapped and checked whole (tar.c, zip.c) before anything is extracted, extracted into a hidden
 * temp folder (a single top-level folder wrapping everything stripped), its format guessed when
 * none was given (data/guess.h), checked like a server-side dataset, and renamed to
 * <data_dir>/datasets/<id>. The archive is never held in the heap. */
#define _GNU_SOURCE /* madvise */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "batch.h"
#include "checkq.h"
#include "ctl.h"
#include "dataset_check.h"
#include "routes.h"
#include "spec.h"
#include "store.h"
#include "sweep.h"
#include "data.h"
#include "guess.h"
#include "tar.h"
#include "util.h"
#include "zip.h"
#include <zlib.h>

int ctl_routes_dataset_upload(hone_controller *c);

typedef struct up_work {
    ctl_check_work w; /* on the dataset check threads (checkq.h) */
    hone_controller *c;
    hone_http_res *res; /* NULL once the client has gone */
    char *file;         /* the spooled archive: ours to unlink */
    size_t len;
    char *name, *type, *format, *desc; /* format NULL: guessed; type NULL: from the format */
    char id[64], tmp[PATH_MAX], dir[PATH_MAX], msg[1024];
    char gz[PATH_MAX];     /* the inflated tar of a gzip body: ours to unlink */
    char strip[256];       /* "X/": the single top-level folder wrapping everything, stripped */
    char top[256];         /* the scan: the first entry's first name part */
    int top_one, top_dir;  /* the scan: every entry below top; top is a folder */
    int top_sub, top_img;  /* the scan: top holds a folder; an image file directly */
    char owner[64];        /* who uploaded it (auth.c) */
    int status;            /* HTTP status of a refusal; 0: stored */
    const char *field;     /* the field a 422 names */
    int guessed;           /* format guessed from the folder's shape */
    const char *fmt, *typ; /* the format and type stored */
    json_t *stats;
} up_work;

/* The bounds of an upload's files (its archive is bounded by limits.uploads' body size): entries,
 * and bytes in all (one file's too). A compressed archive inflates to at most these. */
#define CTL_UPLOAD_MAX_ENTRIES 10000
#define CTL_UPLOAD_MAX_TOTAL (1ull << 30)

/* Creates the parent folders of rel under root (names already normalized by tar.c). */
static int mk_parents(const char *root, const char *rel)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s/%s", root, rel) >= (int)sizeof p)
        return HONE_EINVAL;
    for (char *s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
        *s = '\0';
        if (mkdir(p, 0755) && errno != EEXIST)
            return HONE_EIO;
        *s = '/';
    }
    return HONE_OK;
}

/* Pages of the mapped archive already copied out are dropped (they stay in the page cache), so the
 * process's resident memory does not grow with the archive. */
static void drop_pages(const uint8_t *p, size_t n)
{
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)p & ~(pg - 1), b = ((uintptr_t)p + n) & ~(pg - 1);
    if (b > a)
        madvise((void *)a, b - a, MADV_DONTNEED);
}

/* The name an entry is extracted under: the wrapping folder stripped (it is then "" itself). */
static const char *out_name(const up_work *u, const char *name)
{
    size_t n = strlen(u->strip);
    if (!n)
        return name;
    if (!strncmp(name, u->strip, n))
        return name + n;
    return ""; /* the folder itself ("X", without its slash) */
}

/* Creates the file or folder name (an archive's) under tmp: *fd the new file, or -1. */
static int extract_open(up_work *u, const char *name, int is_dir, int *fd)
{
    char p[PATH_MAX];
    *fd = -1;
    name = out_name(u, name);
    if (!name[0])
        return HONE_OK;
    if (mk_parents(u->tmp, name) || snprintf(p, sizeof p, "%s/%s", u->tmp, name) >= (int)sizeof p) {
        snprintf(u->msg, sizeof u->msg, "cannot create folders for %.200s", name);
        return HONE_EIO;
    }
    if (is_dir) {
        if (mkdir(p, 0755) && errno != EEXIST) {
            snprintf(u->msg, sizeof u->msg, "cannot create %.200s: %s", name, strerror(errno));
            return HONE_EIO;
        }
        return HONE_OK;
    }
    *fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (*fd < 0) {
        snprintf(u->msg, sizeof u->msg, "cannot write %.200s: %s", name, strerror(errno));
        return HONE_EIO;
    }
    return HONE_OK;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return HONE_EIO;
        p += w;
        n -= (size_t)w;
    }
    return HONE_OK;
}

static int extract_tar(const ctl_tar_entry *e, void *ud)
{
    up_work *u = ud;
    int fd, rc = extract_open(u, e->name, e->is_dir, &fd);
    if (rc || fd < 0)
        return rc;
    for (uint64_t off = 0; !rc && off < e->size;) {
        size_t k = e->size - off < (8u << 20) ? (size_t)(e->size - off) : (8u << 20);
        rc = write_all(fd, e->data + off, k);
        drop_pages(e->data + off, k);
        off += k;
    }
    if (close(fd) || rc) {
        snprintf(u->msg, sizeof u->msg, "cannot write %.200s: %s", e->name, strerror(errno));
        return HONE_EIO;
    }
    return HONE_OK;
}

typedef struct zsink {
    int fd, failed;
} zsink;

static int zip_sink(const uint8_t *p, size_t n, void *ud)
{
    zsink *z = ud;
    if (write_all(z->fd, p, n)) {
        z->failed = errno ? errno : EIO;
        return HONE_EIO;
    }
    return HONE_OK;
}

static int extract_zip(const ctl_zip_entry *e, void *ud)
{
    up_work *u = ud;
    int fd, rc = extract_open(u, e->name, e->is_dir, &fd);
    if (rc || fd < 0)
        return rc;
    zsink z = {fd, 0};
    char m[400];
    rc = ctl_zip_read(e, zip_sink, &z, m, sizeof m);
    drop_pages(e->cdata, (size_t)e->csize);
    if (close(fd) && !rc)
        rc = HONE_EIO;
    if (rc == HONE_EPARSE)
        snprintf(u->msg, sizeof u->msg, "archive: %s", m);
    else if (rc)
        snprintf(u->msg, sizeof u->msg, "cannot write %.200s: %s", e->name,
                 strerror(z.failed ? z.failed : EIO));
    return rc;
}

static int image_name(const char *n)
{
    const char *dot = strrchr(n, '.');
    return dot &&
           (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg"));
}

/* The scan after the check: whether one top-level folder wraps every entry (`tar cf pets.tar
 * pets`), to strip. Not when that folder is a layout's own (train/, images/ ...: `tar -C set .`
 * of a set with that one folder), which the dataset needs, nor when it holds images and no folder
 * (a class folder: a one-class set, which the check then names). */
static void scan_name(up_work *u, const char *name, int is_dir)
{
    const char *sl = strchr(name, '/');
    size_t n = sl ? (size_t)(sl - name) : strlen(name);
    if (!u->top[0] && u->top_one) {
        snprintf(u->top, sizeof u->top, "%.*s", (int)(n < 250 ? n : 250), name);
    } else if (strlen(u->top) != n || strncmp(u->top, name, n)) {
        u->top_one = 0;
        return;
    }
    if (!sl && !is_dir)
        u->top_one = 0; /* a file at the top */
    u->top_dir |= is_dir || sl;
    if (sl && (is_dir || strchr(sl + 1, '/')))
        u->top_sub = 1; /* a folder inside it */
    else if (sl && !is_dir && image_name(sl + 1))
        u->top_img = 1; /* an image directly inside it */
}

static int scan_tar(const ctl_tar_entry *e, void *ud)
{
    scan_name(ud, e->name, e->is_dir);
    return HONE_OK;
}

static int scan_zip(const ctl_zip_entry *e, void *ud)
{
    scan_name(ud, e->name, e->is_dir);
    return HONE_OK;
}

static void scan_decide(up_work *u)
{
    static const char *const keep[] = {"train/",  "val/",    "test/",
                                       "images/", "labels/", "annotations/"};
    u->strip[0] = '\0';
    /* images directly in it and no folder: a class folder (a one-class `tar -C set .`) */
    if (!u->top_one || !u->top_dir || !u->top[0] || (u->top_img && !u->top_sub))
        return;
    snprintf(u->strip, sizeof u->strip, "%.250s/", u->top);
    for (size_t i = 0; i < HONE_ARRAY_LEN(keep); i++)
        if (!strcmp(u->strip, keep[i]))
            u->strip[0] = '\0';
}

static void up_abort(hone_http_res *res, void *ud)
{
    (void)res;
    ((up_work *)ud)->res = NULL;
}

enum { ARC_TAR, ARC_GZIP, ARC_ZIP };

/* The archive's kind from its first bytes; formats Hone does not read are refused with the fix. */
static int arc_kind(const uint8_t *b, size_t len, int *kind, char *msg, size_t msglen)
{
    static const struct {
        const char *magic;
        size_t n;
        const char *what;
    } no[] = {{"BZh", 3, "bzip2"},
              {"\xfd"
               "7zXZ\0",
               6, "xz"},
              {"\x28\xb5\x2f\xfd", 4, "zstd"},
              {"7z\xbc\xaf\x27\x1c", 6, "7-Zip"},
              {"Rar!", 4, "RAR"}};
    *kind = ARC_TAR;
    if (len >= 2 && b[0] == 0x1f && b[1] == 0x8b)
        *kind = ARC_GZIP;
    else if (len >= 4 && b[0] == 'P' && b[1] == 'K' &&
             ((b[2] == 3 && b[3] == 4) || (b[2] == 5 && b[3] == 6)))
        *kind = ARC_ZIP;
    for (size_t i = 0; i < HONE_ARRAY_LEN(no); i++)
        if (len >= no[i].n && !memcmp(b, no[i].magic, no[i].n)) {
            snprintf(msg, msglen,
                     "a %s archive: refused (send a tar, a tar.gz or a zip: tar czf set.tgz "
                     "set, or zip -r set.zip set)",
                     no[i].what);
            return HONE_EINVAL;
        }
    return HONE_OK;
}

/* Inflates a gzip body (one member or several) into fd, at most max bytes: past that it is
 * refused (a gzip bomb stops there, never filling the disk). */
static int gunzip_to(const uint8_t *in, size_t len, int fd, uint64_t max, uint64_t *out_len,
                     char *msg, size_t msglen)
{
    z_stream z;
    uint8_t out[1 << 16];
    uint64_t got = 0;
    int rc = HONE_OK, zr = Z_OK;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 16) != Z_OK) {
        fprintf(stderr, "upload: inflateInit2: out of memory\n");
        abort();
    }
    size_t off = 0;
    while (!rc) {
        if (!z.avail_in && off < len) {
            size_t k = len - off < (1u << 20) ? len - off : (1u << 20);
            z.next_in = (Bytef *)(uintptr_t)(in + off);
            z.avail_in = (uInt)k;
            drop_pages(in, off); /* what was inflated */
            off += k;
        }
        z.next_out = out;
        z.avail_out = sizeof out;
        zr = inflate(&z, Z_NO_FLUSH);
        size_t k = sizeof out - z.avail_out;
        if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) {
            snprintf(msg, msglen, "corrupt gzip data (%s)", z.msg ? z.msg : "inflate failed");
            rc = HONE_EPARSE;
            break;
        }
        if (k > max - got) {
            snprintf(msg, msglen,
                     "the gzip data inflates past %llu bytes (the bound of an upload): refused",
                     (unsigned long long)max);
            rc = HONE_EINVAL;
            break;
        }
        /* as data/'s IDX reader: no real archive inflates 1000 times (a tar of PNGs about once, of
         * IDX files 5 times), all-zero data about 1030: a bomb of zeros stops after 36 MiB */
        uint64_t used = (uint64_t)(off - z.avail_in);
        if (got + k > (uint64_t)HONE_DATA_IDX_MAX_RATIO * used + (1u << 20)) {
            snprintf(msg, msglen,
                     "the gzip data inflates more than %d times its size (a decompression bomb): "
                     "refused",
                     HONE_DATA_IDX_MAX_RATIO);
            rc = HONE_EINVAL;
            break;
        }
        if (k && write_all(fd, out, k)) {
            snprintf(msg, msglen, "cannot write the inflated archive: %s", strerror(errno));
            rc = HONE_EIO;
            break;
        }
        got += k;
        if (zr == Z_STREAM_END) {
            /* another member may follow; trailing zero bytes are padding */
            size_t rest = z.avail_in + (len - off);
            const uint8_t *r = z.next_in;
            int zeros = 1;
            for (size_t i = 0; i < z.avail_in && zeros; i++)
                zeros = !r[i];
            for (size_t i = off; i < len && zeros; i++)
                zeros = !in[i];
            if (!rest || zeros)
                break;
            inflateReset(&z);
        } else if (!k && !z.avail_in && off == len) {
            snprintf(msg, msglen, "truncated gzip data");
            rc = HONE_EPARSE;
        }
    }
    inflateEnd(&z);
    *out_len = got;
    return rc;
}

/* Maps path (len bytes) read-only; MAP_FAILED on failure (errno set). */
static void *map_file(const char *path, size_t len)
{
    struct stat st;
    void *map = MAP_FAILED;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && !fstat(fd, &st) && (uint64_t)st.st_size == len && len)
        map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    else if (fd >= 0 && !len)
        errno = EINVAL;
    if (fd >= 0)
        close(fd);
    if (map != MAP_FAILED)
        madvise(map, len, MADV_SEQUENTIAL);
    return map;
}

static void up_extract(up_work *u, int kind, const uint8_t *body, size_t len);

/* On a dataset check thread: map the spooled archive, inflate a gzip one to a second file, check,
 * extract into tmp, inspect, rename. The spooled files go whatever happens; a failure leaves
 * nothing else either. */
static void up_run(ctl_check_work *w)
{
    up_work *u = w->data;
    int kind;
    void *map = map_file(u->file, u->len);
    if (map == MAP_FAILED) {
        snprintf(u->msg, sizeof u->msg, "cannot read the spooled archive: %s", strerror(errno));
        u->status = 500;
        goto done;
    }
    char m[400];
    if (arc_kind(map, u->len, &kind, m, sizeof m)) {
        snprintf(u->msg, sizeof u->msg, "archive: %s", m);
        u->status = 422;
        munmap(map, u->len);
        goto done;
    }
    if (kind != ARC_GZIP) {
        up_extract(u, kind, map, u->len);
        munmap(map, u->len);
        goto done;
    }
    /* a tar inside: at most the bound of its files plus a header and padding for each entry */
    uint64_t max = CTL_UPLOAD_MAX_TOTAL + (uint64_t)CTL_UPLOAD_MAX_ENTRIES * 1024 + 20480, tlen = 0;
    snprintf(u->gz, sizeof u->gz, "%s.tar", u->file);
    int fd = open(u->gz, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int rc = fd < 0 ? HONE_EIO : gunzip_to(map, u->len, fd, max, &tlen, m, sizeof m);
    if (fd >= 0 && close(fd) && !rc)
        rc = HONE_EIO;
    munmap(map, u->len);
    unlink(u->file); /* the disk holds one of the two at a time, at most */
    if (rc || !tlen) {
        if (!rc)
            snprintf(m, sizeof m, "the gzip data holds nothing");
        snprintf(u->msg, sizeof u->msg, "archive: %s", fd < 0 ? strerror(errno) : m);
        u->status = rc == HONE_EIO ? 500 : 422;
        goto done;
    }
    map = map_file(u->gz, (size_t)tlen);
    if (map == MAP_FAILED) {
        snprintf(u->msg, sizeof u->msg, "cannot read the inflated archive: %s", strerror(errno));
        u->status = 500;
        goto done;
    }
    const uint8_t *t = map;
    int blank = 1;
    for (size_t i = 0; i < 512 && i < tlen && blank; i++)
        blank = !t[i];
    if (arc_kind(map, (size_t)tlen, &kind, m, sizeof m) || kind != ARC_TAR || tlen < 512 ||
        (!blank && memcmp(t + 257, "ustar", 5))) {
        snprintf(u->msg, sizeof u->msg,
                 "archive: a gzip file that holds no tar archive (send tar czf set.tgz set, or a "
                 "zip)");
        u->status = 422;
    } else {
        up_extract(u, ARC_TAR, map, (size_t)tlen);
    }
    munmap(map, (size_t)tlen);
done:
    unlink(u->file);
    if (u->gz[0])
        unlink(u->gz);
}

/* An inspect refusal, told in the archive's names (the temp folder named as the wrapping folder, or
 * <archive>), with the fix for a layout problem. */
static void up_refusal(up_work *u, const char *m, const char *field)
{
    char rel[800];
    size_t o = 0, tl = strlen(u->tmp), sl = strlen(u->strip);
    for (const char *p = m; *p && o + 1 < sizeof rel;) {
        if (!strncmp(p, u->tmp, tl)) { /* every mention */
            int w = snprintf(rel + o, sizeof rel - o, "%.*s", sl ? (int)sl - 1 : 9,
                             sl ? u->strip : "<archive>");
            o = w < 0 || (size_t)w >= sizeof rel - o ? sizeof rel - 1 : o + (size_t)w;
            p += tl;
        } else {
            rel[o++] = *p++;
        }
    }
    rel[o] = '\0';
    int layout = strstr(rel, "folder") || strstr(rel, "not found") || strstr(rel, "no images");
    char fix[400] = "";
    if (layout)
        snprintf(fix, sizeof fix,
                 "; make the archive of the dataset folder itself (tar cf set.tar set) or of its "
                 "contents (tar -C set .): at its top, the class folders (or train/ and val/ of "
                 "them), images/ + labels/, or the IDX files");
    snprintf(u->msg, sizeof u->msg, "%s: %.700s%s", field, rel, fix);
    u->field = field;
    u->status = 422;
}

/* Check, extract into tmp, guess the format, inspect, rename. Leaves nothing on failure. */
static void up_extract(up_work *u, int kind, const uint8_t *body, size_t len)
{
    ctl_tar_limits lim = {.max_entries = CTL_UPLOAD_MAX_ENTRIES,
                          .max_file = CTL_UPLOAD_MAX_TOTAL,
                          .max_total = CTL_UPLOAD_MAX_TOTAL};
    /* every byte a tar extracts is backed by the archive (no sparse entries), so never above it */
    if (kind == ARC_TAR && lim.max_total > (uint64_t)len)
        lim.max_total = (uint64_t)len;
    char m[400];
    u->top_one = 1;
    int rc = kind == ARC_ZIP ? ctl_zip_walk(body, len, &lim, scan_zip, u, NULL, NULL, m, sizeof m)
                             : ctl_tar_walk(body, len, &lim, scan_tar, u, NULL, NULL, m, sizeof m);
    if (kind == ARC_TAR)
        drop_pages(body, len); /* the headers the check read */
    if (rc) {
        snprintf(u->msg, sizeof u->msg, "archive: %s%s", m,
                 kind == ARC_TAR && rc == HONE_EPARSE && strstr(m, "not a ustar")
                     ? " (send a tar, a tar.gz or a zip of the dataset folder)"
                     : "");
        u->status = 422;
        return;
    }
    scan_decide(u);
    if (mkdir(u->tmp, 0755)) {
        snprintf(u->msg, sizeof u->msg, "cannot create %.400s: %.80s", u->tmp, strerror(errno));
        u->status = 500;
        return;
    }
    u->msg[0] = '\0';
    rc = kind == ARC_ZIP ? ctl_zip_walk(body, len, &lim, extract_zip, u, NULL, NULL, m, sizeof m)
                         : ctl_tar_walk(body, len, &lim, extract_tar, u, NULL, NULL, m, sizeof m);
    if (rc) {
        u->status = rc == HONE_EPARSE ? 422 : 500;
        if (!u->msg[0])
            snprintf(u->msg, sizeof u->msg, "archive: %s", m);
        goto fail;
    }
    u->fmt = u->format;
    u->typ = u->type;
    if (!u->fmt) {
        rc = ctl_dataset_guess(u->tmp, u->type, &u->fmt, &u->typ, m, sizeof m);
        if (rc) {
            up_refusal(u, m, "format");
            goto fail;
        }
        u->guessed = 1;
    } else if (!u->typ) {
        u->typ = hone_data_format_type(u->fmt);
    }
    rc = ctl_dataset_inspect(u->fmt, u->tmp, &u->stats, m, sizeof m);
    if (rc) {
        up_refusal(u, m, "archive");
        goto fail;
    }
    if (rename(u->tmp, u->dir)) {
        snprintf(u->msg, sizeof u->msg, "cannot store the dataset: %s", strerror(errno));
        u->status = 500;
        goto fail;
    }
    return;
fail:
    ctl_rm_tree(u->tmp);
}

static void up_free(up_work *u)
{
    json_decref(u->stats);
    free(u->file);
    free(u->name);
    free(u->type);
    free(u->format);
    free(u->desc);
    free(u);
}

static void up_done(ctl_check_work *w, int status)
{
    up_work *u = w->data;
    hone_controller *c = u->c;
    hone_http_res *res = u->res;
    json_t *row = NULL;
    if (res)
        hone_http_res_on_abort(res, NULL, NULL);
    if (status) /* canceled before it ran: the archive is still there */
        unlink(u->file);
    if (status || u->status) {
        if (res)
            hone_http_res_error(res, status ? 503 : u->status,
                                u->status == 422 ? (u->field ? u->field : "archive") : NULL, "%s",
                                status ? "upload canceled" : u->msg);
        goto fail;
    }
    if (!res) {
        ctl_rm_tree(u->dir); /* nobody to tell: store nothing */
        goto fail;
    }
    ctl_batch_flush(c);
    char *st = jdump(u->stats);
    int rc = store_dataset_insert(c->db, u->id, u->name, u->typ, u->fmt, u->dir,
                                  u->desc ? u->desc : "", st, u->owner, ctl_now());
    free(st);
    if (rc || store_dataset_get(c->db, u->id, NULL, &row)) {
        ctl_rm_tree(u->dir);
        ctl_res_store_error(c, res);
        goto fail;
    }
    ctl_log(c, "info", "dataset_uploaded",
            json_pack("{s:s,s:s,s:I}", "id", u->id, "path", u->dir, "bytes", (json_int_t)u->len));
    json_t *out = ctl_dataset_json(row);
    json_object_set_new(out, "format_guessed", json_boolean(u->guessed));
    hone_http_res_json(res, 201, out);
    json_decref(row);
fail:
    up_free(u);
}

static int one_of(const char *v, const char *const *list)
{
    for (; *list; list++)
        if (!strcmp(v, *list))
            return 1;
    return 0;
}

/* Reads and checks the request's query (answers 422 and returns non-zero otherwise). No format:
 * guessed from the extracted folder's shape (and the type with it, unless given). */
static int up_params(hone_http_req *req, hone_http_res *res, const char **name, const char **type,
                     const char **format, const char **desc)
{
    static const char *const types[] = {"image_classification", "object_detection", NULL};
    static const char *const formats[] = {"idx", "image_folder", "kitti", "coco", NULL};
    *name = hone_http_req_query(req, "name");
    *type = hone_http_req_query(req, "type");
    *format = hone_http_req_query(req, "format");
    *desc = hone_http_req_query(req, "description");
    if (!*name || !(*name)[0] || strlen(*name) > 200)
        hone_http_res_error(res, 422, "name", "name (1 to 200 bytes) is required");
    else if (*type && !one_of(*type, types))
        hone_http_res_error(res, 422, "type",
                            "type must be image_classification or object_detection for uploads");
    else if (*format && !one_of(*format, formats))
        hone_http_res_error(res, 422, "format",
                            "format must be idx, image_folder, kitti or coco for uploads");
    else if (*format && *type && strcmp(hone_data_format_type(*format), *type) != 0)
        hone_http_res_error(res, 422, "format", "format %s does not fit type %s", *format, *type);
    else if (*desc && strlen(*desc) > 10000)
        hone_http_res_error(res, 422, "description", "description too long");
    else if (!ctl_text_check(res, "name", *name, 0) &&
             !ctl_text_check(res, "description", *desc, 1))
        return HONE_OK;
    return HONE_EINVAL;
}

/* The Content-Types an archive may come with: its kind is read from its first bytes. */
static int up_content_type(const char *ct)
{
    static const char *const ok[] = {"application/x-tar",
                                     "application/gzip",
                                     "application/x-gzip",
                                     "application/x-compressed-tar",
                                     "application/x-gtar",
                                     "application/zip",
                                     "application/x-zip-compressed",
                                     "application/octet-stream"};
    for (size_t i = 0; ct && i < HONE_ARRAY_LEN(ok); i++) {
        size_t n = strlen(ok[i]);
        if (!strncasecmp(ct, ok[i], n) && (ct[n] == '\0' || ct[n] == ';'))
            return 1;
    }
    return 0;
}

/* Before the body: the content type and the query, then the folder to spool the archive into. */
static int up_begin(hone_http_req *req, hone_http_res *res, void *ud, char *dir, size_t cap)
{
    hone_controller *c = ud;
    const char *ct = hone_http_req_header(req, "Content-Type"), *name, *type, *format, *desc;
    if (!up_content_type(ct)) {
        hone_http_res_error(res, 415, "Content-Type",
                            "Content-Type must be application/x-tar, application/gzip, "
                            "application/zip or application/octet-stream (the archive's kind is "
                            "read from its first bytes)");
        return HONE_EINVAL;
    }
    if (up_params(req, res, &name, &type, &format, &desc))
        return HONE_EINVAL;
    char root[PATH_MAX];
    snprintf(root, sizeof root, "%s/datasets", c->cfg.data_dir);
    if (mkdir(root, 0755) && errno != EEXIST) {
        hone_http_res_error(res, 500, NULL, "cannot create %s: %s", root, strerror(errno));
        return HONE_EIO;
    }
    snprintf(dir, cap, "%s", root);
    ctl_upload_class(c, req, 0);
    return HONE_OK;
}

/* The archive is spooled whole: check and extract it on a dataset check thread. */
static void up_create(hone_http_req *req, hone_http_res *res, void *ud)
{
    hone_controller *c = ud;
    const char *name, *type, *format, *desc;
    if (up_params(req, res, &name, &type, &format, &desc))
        return;
    /* the body took its time: its sender may have been disabled or revoked since the filter
     * (the server unlinks the spooled file after a refusal) */
    if (ctl_auth_recheck(c, req, res))
        return;
    size_t len = (size_t)hone_http_req_body_file_size(req);
    char *file = hone_http_req_body_file_take(req);
    if (!file || !len) {
        if (file) /* empty: gone before the answer, so a refusal leaves nothing behind */
            unlink(file);
        free(file);
        hone_http_res_error(res, 422, "archive", "archive: empty body");
        return;
    }
    up_work *u = hone_xcalloc(1, sizeof *u);
    u->c = c;
    u->res = res;
    u->file = file;
    u->len = len;
    u->name = hone_xstrdup(name);
    u->type = type ? hone_xstrdup(type) : NULL;
    u->format = format ? hone_xstrdup(format) : NULL;
    u->desc = desc ? hone_xstrdup(desc) : NULL;
    ctl_auth_user(c, req, u->owner);
    ctl_new_id(c, "ds", u->id, sizeof u->id);
    char root[PATH_MAX], real[PATH_MAX];
    snprintf(root, sizeof root, "%s/datasets", c->cfg.data_dir);
    if (!realpath(root, real))
        snprintf(real, sizeof real, "%s", root);
    snprintf(u->tmp, sizeof u->tmp, "%.3900s/.upload-%.63s", real, u->id);
    snprintf(u->dir, sizeof u->dir, "%.3900s/%.63s", real, u->id);
    u->w.data = u;
    hone_http_res_on_abort(res, up_abort, u);
    if (ctl_checkq_submit(c->checkq, &u->w, u->owner, up_run, up_done)) {
        hone_http_res_on_abort(res, NULL, NULL);
        hone_http_res_error(res, 503, NULL, "cannot take the upload now");
        unlink(u->file);
        up_free(u);
    }
}

int ctl_routes_dataset_upload(hone_controller *c)
{
    return hone_http_route_upload(c->http, "POST", "/api/v1/datasets:upload",
                                  c->cfg.max_upload_bytes, up_begin, up_create, c)
               ? HONE_EINVAL
               : HONE_OK;
}
