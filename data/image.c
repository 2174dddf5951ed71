/* data/image.c: the image entry points: sniffs the format from the first bytes, hands the bytes
 * to the PNG or JPEG decoder, names the file in every complaint, reads files whole (bounded by
 * the limits) and converts between grey and RGB. Never trusts a header before the limits. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data_internal.h"
#include "path_beneath.h"

static const hone_data_limits default_limits = HONE_DATA_LIMITS_DEFAULT;

int data__fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

const char *hone_data_format_name(hone_data_format f)
{
    switch (f) {
    case HONE_DATA_FORMAT_PNG:
        return "png";
    case HONE_DATA_FORMAT_JPEG:
        return "jpeg";
    default:
        return "unknown";
    }
}

int data__check_limits(const hone_data_limits *lim, uint64_t w, uint64_t h, char *why, size_t n)
{
    if (w == 0 || h == 0)
        return data__fail(why, n, HONE_EPARSE, "image is %llux%llu pixels", (unsigned long long)w,
                          (unsigned long long)h);
    if (w > lim->max_side || h > lim->max_side || w * h > lim->max_pixels)
        return data__fail(why, n, HONE_ELIMIT,
                          "image is %llux%llu pixels, past the limit (%u a side, %llu in all)",
                          (unsigned long long)w, (unsigned long long)h, lim->max_side,
                          (unsigned long long)lim->max_pixels);
    return HONE_OK;
}

hone_data_image *data__image_new(int w, int h, int c)
{
    hone_data_image *img = hone_xcalloc(1, sizeof(*img));
    img->width = w;
    img->height = h;
    img->channels = c;
    img->pixels = hone_xmalloc((size_t)w * (size_t)h * (size_t)c);
    return img;
}

void data__image_convert(hone_data_image *img, int want)
{
    size_t n = (size_t)img->width * (size_t)img->height;
    if (want == 0 || want == img->channels)
        return;
    if (want == 1) { /* in place: pixel i is written after pixel i has been read */
        uint8_t *p = img->pixels;
        for (size_t i = 0; i < n; i++) {
            uint32_t v = 19595u * p[3 * i] + 38470u * p[3 * i + 1] + 7471u * p[3 * i + 2];
            p[i] = (uint8_t)((v + 0x8000u) >> 16);
        }
        img->pixels = hone_xrealloc(img->pixels, n ? n : 1);
    } else {
        uint8_t *rgb = hone_xmalloc(n * 3);
        for (size_t i = 0; i < n; i++)
            rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = img->pixels[i];
        free(img->pixels);
        img->pixels = rgb;
    }
    img->channels = want;
}

static const char *unsupported_format(const uint8_t *b, size_t len)
{
    if (len >= 4 && !memcmp(b, "GIF8", 4))
        return "GIF";
    if (len >= 2 && b[0] == 'B' && b[1] == 'M')
        return "BMP";
    if (len >= 4 && (!memcmp(b, "II*\0", 4) || !memcmp(b, "MM\0*", 4)))
        return "TIFF";
    if (len >= 12 && !memcmp(b, "RIFF", 4) && !memcmp(b + 8, "WEBP", 4))
        return "WebP";
    if (len >= 2 && b[0] == 'P' && b[1] >= '1' && b[1] <= '7')
        return "PNM";
    if (len >= 12 && !memcmp(b + 4, "ftyp", 4))
        return "HEIF/AVIF";
    return NULL;
}

static hone_data_format sniff(const uint8_t *b, size_t len)
{
    static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (len >= 8 && !memcmp(b, png_sig, 8))
        return HONE_DATA_FORMAT_PNG;
    if (len >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff)
        return HONE_DATA_FORMAT_JPEG;
    return HONE_DATA_FORMAT_UNKNOWN;
}

/* probe (out NULL) or decode, with the name put in front of the reason */
static int image_run(const uint8_t *buf, size_t len, const char *name, int want,
                     const hone_data_limits *lim, hone_data_image_info *info, hone_data_image **out,
                     char *err, size_t errlen)
{
    char why[200] = "";
    int rc;
    name = name ? name : "image";
    lim = lim ? lim : &default_limits;
    if (out)
        *out = NULL;
    if (want != 0 && want != 1 && want != 3)
        return data__fail(err, errlen, HONE_EINVAL, "%s: %d channels asked (0, 1 or 3)", name,
                          want);
    hone_data_format f = buf ? sniff(buf, len) : HONE_DATA_FORMAT_UNKNOWN;
    if (f == HONE_DATA_FORMAT_PNG) {
        rc = data__png_decode(buf, len, lim, want, info, out, why, sizeof why);
    } else if (f == HONE_DATA_FORMAT_JPEG) {
        rc = data__jpeg_decode(buf, len, lim, want, info, out, why, sizeof why);
    } else {
        const char *other = buf ? unsupported_format(buf, len) : NULL;
        if (other)
            return data__fail(err, errlen, HONE_ENOTSUP,
                              "%s: %s image unsupported (Hone reads PNG and JPEG)", name, other);
        if (!buf || len == 0)
            return data__fail(err, errlen, HONE_EPARSE, "%s: empty file, not an image", name);
        return data__fail(err, errlen, HONE_EPARSE,
                          "%s: not a PNG or JPEG file (wrong magic: starts %02x %02x %02x %02x)",
                          name, buf[0], len > 1 ? buf[1] : 0, len > 2 ? buf[2] : 0,
                          len > 3 ? buf[3] : 0);
    }
    if (rc < 0)
        return data__fail(err, errlen, rc, "%s: %s: %s", name, hone_data_format_name(f), why);
    return HONE_OK;
}

int hone_data_image_probe(const uint8_t *buf, size_t len, const char *name,
                          const hone_data_limits *lim, hone_data_image_info *info, char *err,
                          size_t errlen)
{
    memset(info, 0, sizeof(*info));
    return image_run(buf, len, name, 0, lim, info, NULL, err, errlen);
}

int hone_data_image_decode(const uint8_t *buf, size_t len, const char *name, int channels,
                           const hone_data_limits *lim, hone_data_image **out, char *err,
                           size_t errlen)
{
    return image_run(buf, len, name, channels, lim, NULL, out, err, errlen);
}

static int read_whole_fd(int fd, const char *path, const hone_data_limits *lim, uint8_t **buf,
                         size_t *len, char *err, size_t errlen);

/* Reads a regular file whole; refuses one bigger than the limit before reading it. */
static int read_whole(const char *path, const hone_data_limits *lim, uint8_t **buf, size_t *len,
                      char *err, size_t errlen)
{
    *buf = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return data__fail(err, errlen, errno == ENOENT ? HONE_ENOENT : HONE_EIO, "%s: %s", path,
                          strerror(errno));
    int rc = read_whole_fd(fd, path, lim, buf, len, err, errlen);
    close(fd);
    return rc;
}

/* The same on an open file (fd borrowed; path names it in messages). */
static int read_whole_fd(int fd, const char *path, const hone_data_limits *lim, uint8_t **buf,
                         size_t *len, char *err, size_t errlen)
{
    *buf = NULL;
    *len = 0;
    struct stat st;
    int rc = HONE_OK;
    if (fstat(fd, &st) != 0) {
        rc = data__fail(err, errlen, HONE_EIO, "%s: %s", path, strerror(errno));
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = data__fail(err, errlen, HONE_EINVAL, "%s: not a regular file", path);
        goto fail;
    }
    if ((uint64_t)st.st_size > lim->max_file_bytes) {
        rc = data__fail(err, errlen, HONE_ELIMIT, "%s: %lld bytes, past the limit of %llu", path,
                        (long long)st.st_size, (unsigned long long)lim->max_file_bytes);
        goto fail;
    }
    size_t want = (size_t)st.st_size, got = 0;
    *buf = hone_xmalloc(want ? want : 1);
    while (got < want) {
        ssize_t r = read(fd, *buf + got, want - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = data__fail(err, errlen, HONE_EIO, "%s: %s", path, strerror(errno));
            goto fail;
        }
        if (r == 0)
            break; /* shrank while reading: decode what is there (it will say truncated) */
        got += (size_t)r;
    }
    *len = got;
fail:
    if (rc < 0) {
        free(*buf);
        *buf = NULL;
    }
    return rc;
}

int hone_data_image_probe_file(const char *path, const hone_data_limits *lim,
                               hone_data_image_info *info, char *err, size_t errlen)
{
    uint8_t *buf;
    size_t len;
    memset(info, 0, sizeof(*info));
    lim = lim ? lim : &default_limits;
    int rc = read_whole(path, lim, &buf, &len, err, errlen);
    if (rc == HONE_OK)
        rc = hone_data_image_probe(buf, len, path, lim, info, err, errlen);
    free(buf);
    return rc;
}

int hone_data_image_read_file(const char *path, int channels, const hone_data_limits *lim,
                              hone_data_image **out, char *err, size_t errlen)
{
    uint8_t *buf;
    size_t len;
    *out = NULL;
    lim = lim ? lim : &default_limits;
    int rc = read_whole(path, lim, &buf, &len, err, errlen);
    if (rc == HONE_OK)
        rc = hone_data_image_decode(buf, len, path, channels, lim, out, err, errlen);
    free(buf);
    return rc;
}

int data__open_in(const char *root, const char *path, int *fd, char *err, size_t errlen)
{
    size_t n = strlen(root);
    const char *rel = path + n;
    *fd = -1;
    if (strncmp(path, root, n) != 0)
        return data__fail(err, errlen, HONE_EINVAL, "%s: not inside %s", path, root);
    while (*rel == '/')
        rel++;
    int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        return data__fail(err, errlen, errno == ENOENT ? HONE_ENOENT : HONE_EIO, "%s: %s", root,
                          strerror(errno));
    int rc = hone_beneath_open(rootfd, rel, O_RDONLY | O_NONBLOCK, 0, fd), e = errno;
    close(rootfd);
    if (rc == HONE_EPERM || rc == HONE_EINVAL)
        return data__fail(err, errlen, HONE_EPARSE,
                          "%s: a symbolic link out of the dataset's folder (not followed)", path);
    if (rc)
        return data__fail(err, errlen, rc, "%s: %s", path, strerror(e));
    return HONE_OK;
}

int data__image_probe_in(const char *root, const char *path, const hone_data_limits *lim,
                         hone_data_image_info *info, char *err, size_t errlen)
{
    uint8_t *buf;
    size_t len;
    int fd;
    memset(info, 0, sizeof(*info));
    lim = lim ? lim : &default_limits;
    int rc = data__open_in(root, path, &fd, err, errlen);
    if (rc < 0)
        return rc;
    rc = read_whole_fd(fd, path, lim, &buf, &len, err, errlen);
    close(fd);
    if (rc == HONE_OK)
        rc = hone_data_image_probe(buf, len, path, lim, info, err, errlen);
    free(buf);
    return rc;
}

int data__image_read_in(const char *root, const char *path, int channels,
                        const hone_data_limits *lim, hone_data_image **out, char *err,
                        size_t errlen)
{
    int fd;
    *out = NULL;
    int rc = data__open_in(root, path, &fd, err, errlen);
    if (rc < 0)
        return rc;
    rc = hone_data_image_read_fd(fd, path, channels, lim, out, err, errlen);
    close(fd);
    return rc;
}

int hone_data_image_read_fd(int fd, const char *name, int channels, const hone_data_limits *lim,
                            hone_data_image **out, char *err, size_t errlen)
{
    uint8_t *buf;
    size_t len;
    *out = NULL;
    lim = lim ? lim : &default_limits;
    int rc = read_whole_fd(fd, name, lim, &buf, &len, err, errlen);
    if (rc == HONE_OK)
        rc = hone_data_image_decode(buf, len, name, channels, lim, out, err, errlen);
    free(buf);
    return rc;
}

void hone_data_image_free(hone_data_image *img)
{
    if (!img)
        return;
    free(img->pixels);
    free(img);
}
