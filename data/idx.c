/* data/idx.c: IDX file reader (the MNIST family's format): a strict parser over memory that must
 * never crash on hostile bytes (it is fuzzed), and a file loader that inflates gzip when present.
 * Format: 0x00 0x00 type ndims, then ndims big-endian uint32 dims, then the elements. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "data.h"

#define IDX_MAX_BYTES ((size_t)HONE_DATA_IDX_MAX_BYTES)
#define IDX_MAX_HEADER 20                   /* magic and four dims */
#define IDX_RATIO_SLACK ((uint64_t)1 << 20) /* gzip's first bytes may inflate far more */

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* HONE_EPARSE naming the file when out bytes inflated so far are more than HONE_DATA_IDX_MAX_RATIO
 * times the compressed bytes read (gzoffset: what zlib took from the file, its buffer included, so
 * the check errs on the generous side). A plain file reads 1:1 and always passes. */
static int ratio_check(gzFile g, uint64_t out, const char *path, char *err, size_t errlen)
{
    z_off_t in = gzoffset(g);
    if (in < 0 || out <= (uint64_t)in * HONE_DATA_IDX_MAX_RATIO + IDX_RATIO_SLACK)
        return HONE_OK;
    return fail(err, errlen, HONE_EPARSE,
                "%s: inflates more than %d times its compressed size (%llu bytes from %lld): "
                "refused as a decompression bomb",
                path, HONE_DATA_IDX_MAX_RATIO, (unsigned long long)out, (long long)in);
}

/* Opens a regular file for gzread (gzip or plain). A FIFO or a device would block or never end
 * (a thread held for good): refused with HONE_EPARSE naming the file. */
static int idx_open(const char *path, gzFile *out, char *err, size_t errlen)
{
    struct stat st;
    *out = NULL;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return fail(err, errlen, errno == ENOENT ? HONE_ENOENT : HONE_EIO, "%s: %s", path,
                    strerror(errno));
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return fail(err, errlen, HONE_EPARSE, "%s: not a regular file", path);
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    if (!(*out = gzdopen(fd, "rb"))) {
        close(fd);
        return fail(err, errlen, HONE_EIO, "%s: out of memory", path);
    }
    return HONE_OK;
}

int hone_data_idx_read_mem(const uint8_t *buf, size_t len, hone_data_idx **out, char *err,
                           size_t errlen)
{
    *out = NULL;
    if (!buf || len < 4)
        return fail(err, errlen, HONE_EPARSE, "idx: file too short for a header (%zu bytes)", len);
    if (buf[0] != 0 || buf[1] != 0)
        return fail(err, errlen, HONE_EPARSE, "idx: bad magic %02x %02x", buf[0], buf[1]);
    if (buf[2] != 0x08)
        return fail(err, errlen, HONE_EPARSE, "idx: element type 0x%02x unsupported (want 0x08)",
                    buf[2]);
    int nd = buf[3];
    if (nd < 1 || nd > 4)
        return fail(err, errlen, HONE_EPARSE, "idx: %d dimensions unsupported (1..4)", nd);
    if (len < 4 + 4 * (size_t)nd)
        return fail(err, errlen, HONE_EPARSE, "idx: truncated header");
    hone_data_idx *x = hone_xcalloc(1, sizeof(*x));
    x->type = buf[2];
    x->ndims = nd;
    size_t count = 1;
    for (int i = 0; i < nd; i++) {
        const uint8_t *p = buf + 4 + 4 * i;
        uint32_t d = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        if (d == 0 || d > (1u << 30)) {
            free(x);
            return fail(err, errlen, HONE_EPARSE, "idx: dimension %d is %u", i, d);
        }
        x->dims[i] = (int)d;
        if (count > IDX_MAX_BYTES / d) {
            free(x);
            return fail(err, errlen, HONE_EPARSE, "idx: too large");
        }
        count *= d;
    }
    size_t hdr = 4 + 4 * (size_t)nd;
    if (len - hdr != count) {
        free(x);
        return fail(err, errlen, HONE_EPARSE, "idx: %zu data bytes, dims say %zu", len - hdr,
                    count);
    }
    x->count = count;
    x->data = hone_xmalloc(count);
    memcpy(x->data, buf + hdr, count);
    *out = x;
    return HONE_OK;
}

int hone_data_idx_read_file(const char *path, hone_data_idx **out, char *err, size_t errlen)
{
    *out = NULL;
    gzFile f;
    int orc = idx_open(path, &f, err, errlen);
    if (orc)
        return orc;
    /* the header and at most IDX_MAX_BYTES of data: one byte more is refused */
    const size_t most = IDX_MAX_HEADER + IDX_MAX_BYTES;
    size_t cap = 1 << 20, len = 0;
    uint8_t *buf = hone_xmalloc(cap);
    int rc = HONE_OK;
    for (;;) {
        if (len == cap) {
            if (cap > most) {
                rc = fail(err, errlen, HONE_EPARSE, "%s: larger than %zu bytes", path, most);
                goto fail;
            }
            cap = cap * 2 > most + 1 ? most + 1 : cap * 2;
            buf = hone_xrealloc(buf, cap);
        }
        /* 16 MiB at a time, so the inflate ratio is checked while inflating */
        size_t want = cap - len > (16u << 20) ? (16u << 20) : cap - len;
        int n = gzread(f, buf + len, (unsigned)want);
        if (n < 0) {
            int zerr;
            const char *msg = gzerror(f, &zerr);
            rc = fail(err, errlen, HONE_EIO, "%s: %s", path, msg);
            goto fail;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if ((rc = ratio_check(f, len, path, err, errlen)))
            goto fail;
    }
    rc = hone_data_idx_read_mem(buf, len, out, err, errlen);
    if (rc < 0 && err && errlen) {
        char tmp[256];
        snprintf(tmp, sizeof(tmp), "%s", err);
        snprintf(err, errlen, "%s: %s", path, tmp);
    }
fail:
    gzclose(f);
    free(buf);
    return rc;
}

void hone_data_idx_free(hone_data_idx *idx)
{
    if (!idx)
        return;
    free(idx->data);
    free(idx);
}

int hone_data_idx_stat_file(const char *path, int want_ndims, uint32_t dims[3], int *max_value,
                            char *err, size_t errlen)
{
    if (want_ndims < 1 || want_ndims > 3)
        return fail(err, errlen, HONE_EINVAL, "%s: %d dimensions asked", path, want_ndims);
    gzFile g;
    int orc = idx_open(path, &g, err, errlen);
    if (orc)
        return orc;
    unsigned char hdr[16], *buf = NULL;
    int rc = HONE_EPARSE, hl = 4 + 4 * want_ndims, maxv = -1;
    if (gzread(g, hdr, (unsigned)hl) != hl) {
        fail(err, errlen, rc, "%s: truncated IDX header", path);
        goto fail;
    }
    if (hdr[0] != 0 || hdr[1] != 0 || hdr[2] != 0x08 || hdr[3] != want_ndims) {
        fail(err, errlen, rc, "%s: bad IDX magic (want unsigned bytes, %d dims)", path, want_ndims);
        goto fail;
    }
    uint64_t total = 1;
    for (int i = 0; i < want_ndims; i++) {
        const unsigned char *b = hdr + 4 + 4 * i;
        dims[i] = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
        if (dims[i] == 0 || dims[i] > 100000000u) {
            fail(err, errlen, rc, "%s: implausible dimension %u", path, dims[i]);
            goto fail;
        }
        total *= dims[i];
    }
    if (total > HONE_DATA_IDX_MAX_BYTES) {
        fail(err, errlen, rc, "%s: %llu data bytes, more than the %llu a file may hold", path,
             (unsigned long long)total, (unsigned long long)HONE_DATA_IDX_MAX_BYTES);
        goto fail;
    }
    buf = hone_xmalloc(1 << 16);
    uint64_t got = 0;
    int r;
    while ((r = gzread(g, buf, 1 << 16)) > 0) {
        got += (uint64_t)r;
        for (int i = 0; max_value && i < r; i++)
            if (buf[i] > maxv)
                maxv = buf[i];
        /* stop at the first byte past the header's count or the inflate-ratio cap */
        if (got > total || ratio_check(g, got + (uint64_t)hl, path, err, errlen))
            break;
    }
    if (r > 0 && got <= total)
        goto fail; /* the ratio cap: err says so */
    if (got > total) {
        fail(err, errlen, rc, "%s: holds more data bytes than the %llu its header says", path,
             (unsigned long long)total);
        goto fail;
    }
    if (r < 0 || got != total) {
        fail(err, errlen, rc, "%s: holds %llu data bytes, header says %llu", path,
             (unsigned long long)got, (unsigned long long)total);
        goto fail;
    }
    if (max_value)
        *max_value = maxv;
    rc = HONE_OK;
fail:
    free(buf);
    gzclose(g);
    return rc;
}
