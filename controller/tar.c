/* Tar reader for dataset uploads (see tar.h): validates every header (ustar/GNU magic, checksum,
 * octal fields, entry type, name) and the limits over the whole archive, sorts the names to find
 * duplicates and file/folder clashes, and only then hands the entries to the caller. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hone.h"
#include "tar.h"

#define BLK 512

typedef struct ent {
    char *name;
    int is_dir;
    const uint8_t *data;
    uint64_t size;
} ent;

/* Octal field: optional leading spaces, digits, then only NULs/spaces. -1 when malformed (GNU
 * base-256 sizes are refused: nothing that large is accepted anyway). */
static int64_t octal(const uint8_t *f, size_t n)
{
    size_t i = 0;
    uint64_t v = 0;
    int digits = 0;
    while (i < n && f[i] == ' ')
        i++;
    for (; i < n && f[i] >= '0' && f[i] <= '7'; i++, digits++) {
        if (v > (UINT64_C(1) << 60))
            return -1;
        v = v * 8 + (uint64_t)(f[i] - '0');
    }
    for (; i < n; i++)
        if (f[i] != ' ' && f[i] != '\0')
            return -1;
    return digits ? (int64_t)v : -1;
}

static int zero_block(const uint8_t *b)
{
    for (int i = 0; i < BLK; i++)
        if (b[i])
            return 0;
    return 1;
}

/* Copies a fixed-size name field; refuses bytes after the terminating NUL. */
static int field_str(const uint8_t *f, size_t n, char *out, size_t *outlen)
{
    size_t l = 0;
    while (l < n && f[l])
        l++;
    for (size_t i = l; i < n; i++)
        if (f[i])
            return -1;
    memcpy(out, f, l);
    *outlen = l;
    return 0;
}

/* Normalizes raw (relative, no '..', no backslash or control bytes) into out. */
int ctl_tar_name_norm(const char *raw, char *out, size_t outn, char *msg, size_t msglen)
{
    size_t o = 0;
    if (raw[0] == '/') {
        snprintf(msg, msglen, "entry '%.200s' has an absolute path", raw);
        return HONE_EINVAL;
    }
    for (const unsigned char *p = (const unsigned char *)raw; *p; p++)
        if (*p == '\\' || *p < 0x20 || *p == 0x7f) {
            snprintf(msg, msglen, "entry '%.200s' has a backslash or control character in its name",
                     raw);
            return HONE_EINVAL;
        }
    const char *p = raw;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == 2 && p[0] == '.' && p[1] == '.') {
            snprintf(msg, msglen, "entry '%.200s' has a '..' component", raw);
            return HONE_EINVAL;
        }
        if (l > 255) {
            snprintf(msg, msglen, "entry '%.200s...' has a name part longer than 255 bytes", raw);
            return HONE_EINVAL;
        }
        if (l && !(l == 1 && p[0] == '.')) {
            if (o + l + 2 > outn) {
                snprintf(msg, msglen, "entry name too long");
                return HONE_EINVAL;
            }
            if (o)
                out[o++] = '/';
            memcpy(out + o, p, l);
            o += l;
        }
        p += l;
        if (*p == '/')
            p++;
    }
    out[o] = '\0';
    return HONE_OK;
}

/* '/' sorts before every other byte, so "a/..." follows "a" directly. */
static int name_cmp(const void *a, const void *b)
{
    const unsigned char *x = (const unsigned char *)((const ent *)a)->name;
    const unsigned char *y = (const unsigned char *)((const ent *)b)->name;
    for (;; x++, y++) {
        unsigned cx = *x == '/' ? 1 : *x, cy = *y == '/' ? 1 : *y;
        if (cx != cy || !cx)
            return (int)cx - (int)cy;
    }
}

int ctl_tar_names_check(char *const *names, const int *is_dir, size_t n, char *msg, size_t msglen)
{
    if (!n)
        return HONE_OK;
    ent *s = hone_xcalloc(n, sizeof *s);
    for (size_t i = 0; i < n; i++) {
        s[i].name = names[i];
        s[i].is_dir = is_dir[i];
    }
    qsort(s, n, sizeof *s, name_cmp);
    int rc = HONE_OK;
    for (size_t i = 0; i + 1 < n; i++) {
        size_t l = strlen(s[i].name);
        if (!strcmp(s[i].name, s[i + 1].name)) {
            snprintf(msg, msglen, "entry '%.200s' appears twice", s[i].name);
            rc = HONE_EINVAL;
            break;
        }
        if (!s[i].is_dir && !strncmp(s[i].name, s[i + 1].name, l) && s[i + 1].name[l] == '/') {
            snprintf(msg, msglen, "entry '%.200s' is a file and a folder", s[i].name);
            rc = HONE_EINVAL;
            break;
        }
    }
    free(s);
    return rc;
}

/* One header: its name (long_name instead, when an extended header before it gave one), type and
 * size. *ext: 0 for a file or folder; 'x', 'g' (pax) or 'L' (GNU long name), whose data the walker
 * reads, with no name. */
static int parse_header(const uint8_t *h, const char *long_name, char *name, size_t namen,
                        int *is_dir, uint64_t *size, int *ext, char *msg, size_t msglen)
{
    *ext = 0;
    int64_t want = octal(h + 148, 8);
    uint64_t sum_u = 0;
    int64_t sum_s = 0;
    for (int i = 0; i < BLK; i++) {
        uint8_t b = (i >= 148 && i < 156) ? ' ' : h[i];
        sum_u += b;
        sum_s += (int8_t)b;
    }
    if (want < 0 || ((uint64_t)want != sum_u && want != sum_s)) {
        snprintf(msg, msglen, "header checksum mismatch");
        return HONE_EPARSE;
    }
    int posix = !memcmp(h + 257,
                        "ustar\0"
                        "00",
                        8),
        gnu = !memcmp(h + 257, "ustar  \0", 8);
    if (!posix && !gnu) {
        snprintf(msg, msglen, "not a ustar or GNU tar header");
        return HONE_EPARSE;
    }
    char raw[1100], part[160];
    size_t pl = 0, nl = 0;
    if (field_str(h, 100, part, &nl)) {
        snprintf(msg, msglen, "entry name holds a NUL byte");
        return HONE_EINVAL;
    }
    part[nl] = '\0';
    if (posix) {
        char pre[160];
        if (field_str(h + 345, 155, pre, &pl)) {
            snprintf(msg, msglen, "entry name prefix holds a NUL byte");
            return HONE_EINVAL;
        }
        pre[pl] = '\0';
        snprintf(raw, sizeof raw, "%.155s%s%.100s", pre, pl ? "/" : "", part);
    } else {
        snprintf(raw, sizeof raw, "%s", part);
    }
    if (long_name)
        snprintf(raw, sizeof raw, "%s", long_name);
    if (!raw[0]) {
        snprintf(msg, msglen, "entry with an empty name");
        return HONE_EINVAL;
    }
    int64_t sz = octal(h + 124, 12);
    if (sz < 0) {
        snprintf(msg, msglen, "entry '%.200s': malformed size field", raw);
        return HONE_EPARSE;
    }
    *size = (uint64_t)sz;
    char t = (char)h[156];
    switch (t) {
    case '0':
    case '\0':
        *is_dir = 0;
        break;
    case '5':
        *is_dir = 1;
        break;
    case '1':
    case '2':
        snprintf(msg, msglen,
                 "entry '%.200s' is a %s link: links are refused (tar -h stores the file a link "
                 "points to)",
                 raw, t == '1' ? "hard" : "symbolic");
        return HONE_EINVAL;
    case '3':
    case '4':
    case '6':
        snprintf(msg, msglen,
                 "entry '%.200s' is a device or fifo: refused (leave it out of the "
                 "archive)",
                 raw);
        return HONE_EINVAL;
    case 'x': /* pax (Python's tarfile, bsdtar): the next entry's path; the rest ignored */
    case 'g': /* pax global: ignored */
    case 'L': /* GNU tar's long name */
        *ext = t;
        return HONE_OK;
    case 'K':
        snprintf(msg, msglen,
                 "entry '%.200s': a long link name: links are refused (tar -h "
                 "stores the file a link points to)",
                 raw);
        return HONE_EINVAL;
    case 'S':
        snprintf(msg, msglen, "entry '%.200s' is a GNU sparse file: refused", raw);
        return HONE_EINVAL;
    default:
        snprintf(msg, msglen,
                 "entry '%.200s' has unsupported type '%c' (make it with tar, zip or "
                 "Python's tarfile)",
                 raw, (t >= 0x20 && t < 0x7f) ? t : '?');
        return HONE_EINVAL;
    }
    if (*is_dir && *size) {
        snprintf(msg, msglen, "folder entry '%.200s' has a size", raw);
        return HONE_EPARSE;
    }
    return ctl_tar_name_norm(raw, name, namen, msg, msglen);
}

#define EXT_MAX 65536 /* an extended header's data */

/* GNU 'L': the next entry's name, NUL-terminated (nothing but NULs after it). */
static int ext_gnu_name(const uint8_t *d, size_t n, char *out, size_t outn, char *msg,
                        size_t msglen)
{
    size_t l = 0;
    while (l < n && d[l])
        l++;
    for (size_t i = l; i < n; i++)
        if (d[i]) {
            snprintf(msg, msglen, "a GNU long name holding a NUL byte");
            return HONE_EINVAL;
        }
    if (!l || l >= outn) {
        snprintf(msg, msglen, "a GNU long name that is empty or longer than %zu bytes", outn - 1);
        return HONE_EINVAL;
    }
    memcpy(out, d, l);
    out[l] = '\0';
    return HONE_OK;
}

/* pax 'x': records "LEN key=value\n"; path is the next entry's name (*got), sparse and size keys
 * are refused (sizes past the header's 8 GiB are far past the limits anyway), the rest (times,
 * owners, xattrs) ignored. */
static int ext_pax(const uint8_t *d, size_t n, char *out, size_t outn, int *got, char *msg,
                   size_t msglen)
{
    size_t off = 0;
    *got = 0;
    while (off < n && d[off]) {
        size_t rl = 0, i = off;
        while (i < n && d[i] >= '0' && d[i] <= '9' && i - off < 7)
            rl = rl * 10 + (size_t)(d[i++] - '0');
        if (i == off || i >= n || d[i] != ' ' || rl <= i - off + 1 || rl > n - off ||
            d[off + rl - 1] != '\n') {
            snprintf(msg, msglen, "a malformed pax header record");
            return HONE_EPARSE;
        }
        const uint8_t *k = d + i + 1, *end = d + off + rl - 1;
        const uint8_t *eq = memchr(k, '=', (size_t)(end - k));
        if (!eq || memchr(k, 0, (size_t)(end - k))) {
            snprintf(msg, msglen, "a malformed pax header record");
            return HONE_EPARSE;
        }
        size_t kl = (size_t)(eq - k), vl = (size_t)(end - eq - 1);
        if (kl == 4 && !memcmp(k, "path", 4)) {
            if (!vl || vl >= outn) {
                snprintf(msg, msglen, "a pax path that is empty or longer than %zu bytes",
                         outn - 1);
                return HONE_EINVAL;
            }
            memcpy(out, eq + 1, vl);
            out[vl] = '\0';
            *got = 1;
        } else if ((kl == 4 && !memcmp(k, "size", 4)) ||
                   (kl > 11 && !memcmp(k, "GNU.sparse.", 11))) {
            snprintf(msg, msglen, "a pax %.*s record: refused (sparse or over-8-GiB files)",
                     (int)(kl < 40 ? kl : 40), (const char *)k);
            return HONE_EINVAL;
        }
        off += rl;
    }
    for (; off < n; off++)
        if (d[off]) {
            snprintf(msg, msglen, "a malformed pax header record");
            return HONE_EPARSE;
        }
    return HONE_OK;
}

int ctl_tar_walk(const uint8_t *buf, size_t len, const ctl_tar_limits *lim, ctl_tar_cb cb, void *ud,
                 size_t *n_entries, uint64_t *total, char *msg, size_t msglen)
{
    ent *es = NULL;
    size_t n = 0, cap = 0, off = 0;
    uint64_t sum = 0;
    int rc = HONE_OK, ended = 0, have_long = 0; /* 1: long_name holds the next entry's name */
    char long_name[1024];
    size_t n_ext = 0;
    msg[0] = '\0';
    while (!ended) {
        if (len - off < BLK) {
            snprintf(msg, msglen, "truncated archive (no end-of-archive block)");
            rc = HONE_EPARSE;
            goto fail;
        }
        const uint8_t *h = buf + off;
        if (zero_block(h)) {
            ended = 1;
            break;
        }
        char name[1100];
        int is_dir = 0, ext = 0;
        uint64_t size = 0;
        rc = parse_header(h, have_long ? long_name : NULL, name, sizeof name, &is_dir, &size, &ext,
                          msg, msglen);
        if (rc)
            goto fail;
        if (ext) { /* an extended header: its data read here, for the next entry */
            uint64_t padded = (size + BLK - 1) / BLK * BLK;
            if (++n_ext > lim->max_entries || size > EXT_MAX) {
                snprintf(msg, msglen, "too many or too large extended headers");
                rc = HONE_EINVAL;
                goto fail;
            }
            off += BLK;
            if (padded > len - off) {
                snprintf(msg, msglen, "truncated archive (an extended header)");
                rc = HONE_EPARSE;
                goto fail;
            }
            if (ext == 'L') {
                rc =
                    ext_gnu_name(buf + off, (size_t)size, long_name, sizeof long_name, msg, msglen);
                have_long = !rc;
            } else if (ext == 'x') {
                int got = 0;
                rc = ext_pax(buf + off, (size_t)size, long_name, sizeof long_name, &got, msg,
                             msglen);
                have_long |= got;
            }
            if (rc)
                goto fail;
            off += (size_t)padded;
            if (ext == 'g')
                continue;
            /* the entry it describes must follow */
            if (len - off < BLK || zero_block(buf + off)) {
                snprintf(msg, msglen, "an extended header with no entry after it");
                rc = HONE_EPARSE;
                goto fail;
            }
            continue;
        }
        have_long = 0;
        if (n + 1 > lim->max_entries) {
            snprintf(msg, msglen, "more than %zu entries", lim->max_entries);
            rc = HONE_EINVAL;
            goto fail;
        }
        if (size > lim->max_file) {
            snprintf(msg, msglen, "entry '%.200s' is %llu bytes, above the %llu-byte limit", name,
                     (unsigned long long)size, (unsigned long long)lim->max_file);
            rc = HONE_EINVAL;
            goto fail;
        }
        sum += size;
        if (sum > lim->max_total) {
            snprintf(msg, msglen, "files total more than %llu bytes",
                     (unsigned long long)lim->max_total);
            rc = HONE_EINVAL;
            goto fail;
        }
        off += BLK;
        uint64_t padded = (size + BLK - 1) / BLK * BLK;
        if (padded > len - off) {
            snprintf(msg, msglen, "truncated archive (entry '%.200s')", name);
            rc = HONE_EPARSE;
            goto fail;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            es = hone_xrealloc(es, cap * sizeof *es);
        }
        es[n].name = hone_xstrdup(name);
        es[n].is_dir = is_dir;
        es[n].data = buf + off;
        es[n].size = size;
        if (!name[0] && !is_dir) {
            snprintf(msg, msglen, "file entry with an empty name");
            rc = HONE_EINVAL;
            n++;
            goto fail;
        }
        n++;
        off += (size_t)padded;
    }
    for (size_t i = off; i < len; i++)
        if (buf[i]) {
            snprintf(msg, msglen, "data after the end-of-archive block");
            rc = HONE_EPARSE;
            goto fail;
        }
    if (n) {
        char **nm = hone_xmalloc(n * sizeof *nm);
        int *dirs = hone_xmalloc(n * sizeof *dirs);
        for (size_t i = 0; i < n; i++) {
            nm[i] = es[i].name;
            dirs[i] = es[i].is_dir;
        }
        rc = ctl_tar_names_check(nm, dirs, n, msg, msglen);
        free(nm);
        free(dirs);
    }
    if (rc)
        goto fail;
    if (n_entries)
        *n_entries = n;
    if (total)
        *total = sum;
    for (size_t i = 0; cb && i < n; i++) {
        if (!es[i].name[0])
            continue; /* "./" itself */
        ctl_tar_entry e = {es[i].name, es[i].is_dir, es[i].data, es[i].size};
        rc = cb(&e, ud);
        if (rc)
            break;
    }
fail:
    for (size_t i = 0; i < n; i++)
        free(es[i].name);
    free(es);
    return rc;
}
