/* train/checkpoint.c: reads and writes checkpoint files. Layout (host byte order, little-endian in
 * practice): "HONECKP1", u32 version, i32 epoch, i32 t, u32 ncounters, u64 nparams, nstate, nopt,
 * fingerprint, f64 best_val, f32 params, state, opt, u64 counters, u32 crc32 of all bytes before.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "checkpoint.h"

#define CKPT_MAGIC "HONECKP1"
#define CKPT_VERSION 1u
#define CKPT_MAX_FLOATS ((uint64_t)1 << 32)

typedef struct {
    uint8_t *p;
    size_t len, cap;
} buf;

static void put(buf *b, const void *src, size_t n)
{
    if (b->len + n > b->cap) {
        while (b->len + n > b->cap)
            b->cap = b->cap ? 2 * b->cap : 4096;
        b->p = hone_xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int ckpt_write(const char *path, const ckpt *c, char *err, size_t errlen)
{
    buf b = {0};
    uint32_t version = CKPT_VERSION;
    put(&b, CKPT_MAGIC, 8);
    put(&b, &version, 4);
    put(&b, &c->epoch, 4);
    put(&b, &c->t, 4);
    put(&b, &c->ncounters, 4);
    put(&b, &c->nparams, 8);
    put(&b, &c->nstate, 8);
    put(&b, &c->nopt, 8);
    put(&b, &c->fingerprint, 8);
    put(&b, &c->best_val, 8);
    put(&b, c->params, c->nparams * sizeof(float));
    put(&b, c->state, c->nstate * sizeof(float));
    put(&b, c->opt, c->nopt * sizeof(float));
    put(&b, c->counters, c->ncounters * sizeof(uint64_t));
    uint32_t crc = (uint32_t)crc32(0L, b.p, (uInt)b.len);
    put(&b, &crc, 4);

    char tmp[1100];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int rc = HONE_EIO;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write_all(fd, b.p, b.len) < 0 || fsync(fd) < 0) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        unlink(tmp);
        goto fail;
    }
    close(fd);
    if (rename(tmp, path) < 0) {
        snprintf(err, errlen, "%s: rename: %s", path, strerror(errno));
        unlink(tmp);
        goto fail;
    }
    char dirbuf[1100];
    snprintf(dirbuf, sizeof(dirbuf), "%s", path);
    int dfd = open(dirname(dirbuf), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    rc = HONE_OK;
fail:
    free(b.p);
    return rc;
}

static int take(const uint8_t **p, const uint8_t *end, void *dst, size_t n)
{
    if ((size_t)(end - *p) < n)
        return -1;
    memcpy(dst, *p, n);
    *p += n;
    return 0;
}

int ckpt_read(const char *path, ckpt *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof(*c));
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return errno == ENOENT ? HONE_ENOENT : HONE_EIO;
    }
    uint8_t *data = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? 2 * cap : 1 << 20;
            data = hone_xrealloc(data, cap);
        }
        size_t n = fread(data + len, 1, cap - len, f);
        len += n;
        if (n == 0)
            break;
    }
    int ioerr = ferror(f);
    fclose(f);
    int rc = HONE_EPARSE;
    if (ioerr) {
        snprintf(err, errlen, "%s: read error", path);
        rc = HONE_EIO;
        goto fail;
    }
    if (len < 8 + 4 || memcmp(data, CKPT_MAGIC, 8) != 0) {
        snprintf(err, errlen, "%s: not a hone checkpoint", path);
        goto fail;
    }
    uint32_t crc;
    memcpy(&crc, data + len - 4, 4);
    if (crc != (uint32_t)crc32(0L, data, (uInt)(len - 4))) {
        snprintf(err, errlen, "%s: checksum mismatch (truncated or corrupt)", path);
        goto fail;
    }
    const uint8_t *p = data + 8, *end = data + len - 4;
    uint32_t version;
    if (take(&p, end, &version, 4) || version != CKPT_VERSION || take(&p, end, &c->epoch, 4) ||
        take(&p, end, &c->t, 4) || take(&p, end, &c->ncounters, 4) ||
        take(&p, end, &c->nparams, 8) || take(&p, end, &c->nstate, 8) ||
        take(&p, end, &c->nopt, 8) || take(&p, end, &c->fingerprint, 8) ||
        take(&p, end, &c->best_val, 8) || c->nparams > CKPT_MAX_FLOATS ||
        c->nstate > CKPT_MAX_FLOATS || c->nopt > CKPT_MAX_FLOATS || c->ncounters > 1024) {
        snprintf(err, errlen, "%s: bad checkpoint header", path);
        goto fail;
    }
    c->params = hone_xmalloc(sizeof(float) * (c->nparams + 1));
    c->state = hone_xmalloc(sizeof(float) * (c->nstate + 1));
    c->opt = hone_xmalloc(sizeof(float) * (c->nopt + 1));
    c->counters = hone_xmalloc(sizeof(uint64_t) * (c->ncounters + 1));
    if (take(&p, end, c->params, c->nparams * sizeof(float)) ||
        take(&p, end, c->state, c->nstate * sizeof(float)) ||
        take(&p, end, c->opt, c->nopt * sizeof(float)) ||
        take(&p, end, c->counters, c->ncounters * sizeof(uint64_t)) || p != end) {
        snprintf(err, errlen, "%s: checkpoint sizes do not match its header", path);
        goto fail;
    }
    free(data);
    return HONE_OK;
fail:
    free(data);
    ckpt_free(c);
    return rc;
}

void ckpt_free(ckpt *c)
{
    free(c->params);
    free(c->state);
    free(c->opt);
    free(c->counters);
    c->params = c->state = c->opt = NULL;
    c->counters = NULL;
}
