/* Zip reader for dataset uploads (see zip.h): the end-of-central-directory record, then every
 * central header checked (no encryption, no zip64, stored or deflate, Unix mode: files and folders
 * only) with its local header (same name, inside the archive, before the central directory, no
 * two entries sharing bytes: the overlapping-entries bomb), the names normalized and checked as a
 * tar's, the limits summed over the declared sizes; only then is any entry handed out. Reading an
 * entry inflates it bounded by its declared size and checks its CRC-32. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "hone.h"
#include "zip.h"

#define EOCD_SIG 0x06054b50u
#define CEN_SIG 0x02014b50u
#define LOC_SIG 0x04034b50u
#define EOCD_LEN 22
#define CEN_LEN 46
#define LOC_LEN 30

static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

typedef struct zent {
    ctl_zip_entry e;
    char *name;
    uint64_t lstart, lend; /* the local header through the end of its data */
} zent;

static int by_start(const void *a, const void *b)
{
    uint64_t x = ((const zent *)a)->lstart, y = ((const zent *)b)->lstart;
    return x < y ? -1 : x > y;
}

/* The end-of-central-directory record: the last signature whose comment reaches the end exactly. */
static int find_eocd(const uint8_t *buf, size_t len, size_t *at)
{
    if (len < EOCD_LEN)
        return HONE_EPARSE;
    size_t lo = len - EOCD_LEN > 65535 ? len - EOCD_LEN - 65535 : 0;
    for (size_t i = len - EOCD_LEN + 1; i-- > lo;)
        if (rd32(buf + i) == EOCD_SIG && i + EOCD_LEN + rd16(buf + i + 20) == len) {
            *at = i;
            return HONE_OK;
        }
    return HONE_EPARSE;
}

/* Reads central header number i at *off into z (its name normalized). */
static int parse_central(const uint8_t *buf, size_t cd_end, size_t *off, size_t cd_start, zent *z,
                         char *msg, size_t msglen)
{
    const uint8_t *h = buf + *off;
    if (cd_end - *off < CEN_LEN || rd32(h) != CEN_SIG) {
        snprintf(msg, msglen, "malformed zip central directory");
        return HONE_EPARSE;
    }
    uint16_t made = rd16(h + 4), flags = rd16(h + 8), method = rd16(h + 10);
    uint32_t csize = rd32(h + 20), usize = rd32(h + 24), ext = rd32(h + 38), loff = rd32(h + 42);
    size_t nl = rd16(h + 28), el = rd16(h + 30), cl = rd16(h + 32);
    if (cd_end - *off - CEN_LEN < nl + el + cl) {
        snprintf(msg, msglen, "malformed zip central directory (an entry runs past it)");
        return HONE_EPARSE;
    }
    char raw[1024];
    if (!nl || nl >= sizeof raw || memchr(h + CEN_LEN, 0, nl)) {
        snprintf(msg, msglen, "zip entry with an empty, overlong or NUL-holding name");
        return HONE_EINVAL;
    }
    memcpy(raw, h + CEN_LEN, nl);
    raw[nl] = '\0';
    *off += CEN_LEN + nl + el + cl;
    if (flags & 0x41) {
        snprintf(msg, msglen, "%.200s: encrypted: refused (zip it without a password)", raw);
        return HONE_EINVAL;
    }
    if (csize == 0xffffffffu || usize == 0xffffffffu || loff == 0xffffffffu) {
        snprintf(msg, msglen,
                 "%.200s: a zip64 entry: refused (an upload is below 4 GiB; zip it "
                 "without zip64, or send a tar)",
                 raw);
        return HONE_EINVAL;
    }
    if (method != 0 && method != 8) {
        snprintf(msg, msglen,
                 "%.200s: compression method %u: refused (stored or deflate only; "
                 "zip -r, or send a .tar.gz)",
                 raw, method);
        return HONE_EINVAL;
    }
    int is_dir = raw[nl - 1] == '/' || (ext & 0x10);
    if ((made >> 8) == 3) { /* Unix: the mode in the high half */
        unsigned mode = ext >> 16, type = mode & 0170000;
        if (type == 0120000) {
            snprintf(msg, msglen,
                     "%.200s is a symbolic link: links are refused (zip -r without "
                     "-y stores the file it points to)",
                     raw);
            return HONE_EINVAL;
        }
        if (type && type != 0100000 && type != 0040000) {
            snprintf(msg, msglen, "%.200s is a device, fifo or socket: refused", raw);
            return HONE_EINVAL;
        }
        is_dir |= type == 0040000;
    }
    if (is_dir && usize) {
        snprintf(msg, msglen, "%.200s: a folder entry with data", raw);
        return HONE_EPARSE;
    }
    /* as data/'s IDX reader (HONE_DATA_IDX_MAX_RATIO): no real entry inflates 1000 times; the
     * read is held to the declared size, so a bomb is refused here, before a byte is written */
    if (method == 8 && usize > 1000ull * csize + (1u << 20)) {
        snprintf(msg, msglen,
                 "%.200s inflates more than 1000 times its size (a decompression "
                 "bomb): refused",
                 raw);
        return HONE_EINVAL;
    }
    if (method == 0 && csize != usize) {
        snprintf(msg, msglen, "%.200s: stored entry whose sizes differ", raw);
        return HONE_EPARSE;
    }
    char name[1024];
    int rc = ctl_tar_name_norm(raw, name, sizeof name, msg, msglen);
    if (rc)
        return rc;
    /* the local header: inside the archive, before the central directory, the same name */
    if (loff > cd_start || cd_start - loff < LOC_LEN || rd32(buf + loff) != LOC_SIG) {
        snprintf(msg, msglen, "%.200s: its local header is missing or outside the archive", raw);
        return HONE_EPARSE;
    }
    const uint8_t *l = buf + loff;
    size_t lnl = rd16(l + 26), lel = rd16(l + 28);
    uint64_t data = (uint64_t)loff + LOC_LEN + lnl + lel;
    if (data > cd_start || cd_start - data < csize || lnl != nl || memcmp(l + LOC_LEN, raw, nl) ||
        (rd16(l + 6) & 0x41) != (flags & 0x41) || rd16(l + 8) != method) {
        snprintf(msg, msglen,
                 "%.200s: its local header disagrees with the central directory, or its data "
                 "runs past it",
                 raw);
        return HONE_EPARSE;
    }
    z->name = hone_xstrdup(name);
    z->e.name = z->name;
    z->e.is_dir = is_dir;
    z->e.size = usize;
    z->e.cdata = buf + data;
    z->e.csize = csize;
    z->e.method = method;
    z->e.crc = rd32(h + 16);
    z->lstart = loff;
    z->lend = data + csize;
    return HONE_OK;
}

int ctl_zip_walk(const uint8_t *buf, size_t len, const ctl_tar_limits *lim, ctl_zip_cb cb, void *ud,
                 size_t *n_entries, uint64_t *total, char *msg, size_t msglen)
{
    zent *zs = NULL;
    size_t n = 0, eocd;
    uint64_t sum = 0;
    int rc = HONE_OK;
    msg[0] = '\0';
    if (find_eocd(buf, len, &eocd)) {
        snprintf(msg, msglen, "not a zip archive (no end-of-central-directory record)");
        return HONE_EPARSE;
    }
    const uint8_t *e = buf + eocd;
    size_t count = rd16(e + 10), cd_size = rd32(e + 12), cd_off = rd32(e + 16);
    if (rd16(e + 4) || rd16(e + 6) || rd16(e + 8) != count) {
        snprintf(msg, msglen, "a multi-part zip archive: refused (send it as one file)");
        return HONE_EINVAL;
    }
    if (count == 0xffff || cd_size == 0xffffffffu || cd_off == 0xffffffffu) {
        snprintf(msg, msglen,
                 "a zip64 archive: refused (an upload is below 4 GiB and 65535 "
                 "entries; zip it without zip64, or send a tar)");
        return HONE_EINVAL;
    }
    if (cd_off > eocd || eocd - cd_off != cd_size) {
        snprintf(msg, msglen, "malformed zip archive (the central directory is not where it says)");
        return HONE_EPARSE;
    }
    if (count > lim->max_entries) {
        snprintf(msg, msglen, "more than %zu entries", lim->max_entries);
        return HONE_EINVAL;
    }
    zs = hone_xcalloc(count ? count : 1, sizeof *zs);
    size_t off = cd_off;
    for (; n < count; n++) {
        rc = parse_central(buf, eocd, &off, cd_off, &zs[n], msg, msglen);
        if (rc)
            goto fail;
        if (zs[n].e.size > lim->max_file) {
            snprintf(msg, msglen, "%.200s is %llu bytes, above the %llu-byte limit", zs[n].name,
                     (unsigned long long)zs[n].e.size, (unsigned long long)lim->max_file);
            rc = HONE_EINVAL;
            n++;
            goto fail;
        }
        sum += zs[n].e.size;
        if (sum > lim->max_total) {
            snprintf(msg, msglen, "files total more than %llu bytes",
                     (unsigned long long)lim->max_total);
            rc = HONE_EINVAL;
            n++;
            goto fail;
        }
    }
    if (off != eocd) {
        snprintf(msg, msglen, "malformed zip archive (bytes after its last central header)");
        rc = HONE_EPARSE;
        goto fail;
    }
    /* no two entries share bytes (the overlapping-entries bomb) */
    zent *s = hone_xmalloc((n ? n : 1) * sizeof *s);
    memcpy(s, zs, n * sizeof *s);
    qsort(s, n, sizeof *s, by_start);
    for (size_t i = 0; i + 1 < n && !rc; i++)
        if (s[i].lend > s[i + 1].lstart) {
            snprintf(msg, msglen, "%.200s overlaps %.200s in the archive: refused", s[i].name,
                     s[i + 1].name);
            rc = HONE_EINVAL;
        }
    free(s);
    if (rc)
        goto fail;
    if (n) {
        char **nm = hone_xmalloc(n * sizeof *nm);
        int *dirs = hone_xmalloc(n * sizeof *dirs);
        for (size_t i = 0; i < n; i++) {
            nm[i] = zs[i].name;
            dirs[i] = zs[i].e.is_dir;
        }
        rc = ctl_tar_names_check(nm, dirs, n, msg, msglen);
        free(nm);
        free(dirs);
        if (rc)
            goto fail;
    }
    if (n_entries)
        *n_entries = n;
    if (total)
        *total = sum;
    for (size_t i = 0; cb && i < n; i++) {
        if (!zs[i].name[0])
            continue; /* "./" itself */
        rc = cb(&zs[i].e, ud);
        if (rc)
            break;
    }
fail:
    for (size_t i = 0; i < n; i++)
        free(zs[i].name);
    free(zs);
    return rc;
}

int ctl_zip_read(const ctl_zip_entry *e, ctl_zip_sink sink, void *ud, char *msg, size_t msglen)
{
    uint8_t out[65536];
    uint32_t crc = (uint32_t)crc32(0L, Z_NULL, 0);
    uint64_t got = 0;
    int rc = HONE_OK;
    if (e->method == 0) {
        for (uint64_t off = 0; off < e->size && !rc;) {
            size_t k = e->size - off < (1u << 20) ? (size_t)(e->size - off) : (1u << 20);
            crc = (uint32_t)crc32(crc, e->cdata + off, (uInt)k);
            rc = sink(e->cdata + off, k, ud);
            off += k;
        }
        got = e->size;
    } else {
        z_stream z;
        memset(&z, 0, sizeof z);
        if (inflateInit2(&z, -MAX_WBITS) != Z_OK) {
            fprintf(stderr, "zip: inflateInit2: out of memory\n");
            abort();
        }
        uint64_t in_off = 0;
        int zr = Z_OK;
        while (!rc && zr != Z_STREAM_END) {
            if (!z.avail_in && in_off < e->csize) {
                size_t k =
                    e->csize - in_off < (1u << 20) ? (size_t)(e->csize - in_off) : (1u << 20);
                z.next_in = (Bytef *)(uintptr_t)(e->cdata + in_off);
                z.avail_in = (uInt)k;
                in_off += k;
            }
            z.next_out = out;
            z.avail_out = sizeof out;
            zr = inflate(&z, Z_NO_FLUSH);
            size_t k = sizeof out - z.avail_out;
            if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) {
                snprintf(msg, msglen, "%.200s: corrupt deflate data", e->name);
                rc = HONE_EPARSE;
                break;
            }
            if (k > e->size - got) {
                snprintf(msg, msglen, "%.200s inflates past its declared %llu bytes: refused",
                         e->name, (unsigned long long)e->size);
                rc = HONE_EPARSE;
                break;
            }
            crc = (uint32_t)crc32(crc, out, (uInt)k);
            got += k;
            if (k)
                rc = sink(out, k, ud);
            if (!k && zr != Z_STREAM_END && !z.avail_in && in_off == e->csize) {
                snprintf(msg, msglen, "%.200s: truncated deflate data", e->name);
                rc = HONE_EPARSE;
            }
        }
        inflateEnd(&z);
    }
    if (!rc && got != e->size) {
        snprintf(msg, msglen, "%.200s: %llu bytes, not the declared %llu", e->name,
                 (unsigned long long)got, (unsigned long long)e->size);
        rc = HONE_EPARSE;
    }
    if (!rc && crc != e->crc) {
        snprintf(msg, msglen, "%.200s: CRC-32 mismatch (a corrupt archive)", e->name);
        rc = HONE_EPARSE;
    }
    return rc;
}
