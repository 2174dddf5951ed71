/* data/pack.c: the packed dataset file (format in data.h): the writer (a temp file filled with
 * positioned writes, then checksummed, synced and renamed into place) and the reader (mmap,
 * every size checked against the file before use, both checksums verified). The reader never
 * trusts a field before checking it; the writer never leaves a partial file under the name. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "data_internal.h"

#define PACK_MAGIC "HONEPAK"
#define PACK_VERSION 1u       /* no boxes */
#define PACK_VERSION_BOXES 2u /* with a boxes section */
#define PACK_VERSION_SIZES 3u /* with boxes (crowd classes allowed) and source sizes */
#define PACK_FIXED 128        /* the fixed part of the header; the class map follows */

_Static_assert(sizeof(hone_data_box) == 20, "a box record is 20 bytes: int32 and 4 float32");

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the packed format is little-endian and mapped as is: a big-endian host needs byte swaps"
#endif

static uint64_t align64(uint64_t v)
{
    return (v + 63) & ~(uint64_t)63;
}

static void put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
}
static void put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}
static uint32_t get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static uint64_t get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* zlib's crc32 takes 32-bit lengths: feed it in slices */
static uint32_t crc_more(uint32_t crc, const uint8_t *p, uint64_t n)
{
    while (n > 0) {
        uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
        crc = (uint32_t)crc32(crc, p, k);
        p += k;
        n -= k;
    }
    return crc;
}

/* The sizes a header implies; HONE_EPARSE (with why) when they overflow or disagree. */
typedef struct layout {
    uint64_t header_bytes, image_bytes, pixel_offset, label_offset, box_offset, size_offset,
        cat_offset, file_bytes;
} layout;

static int layout_of(const hone_data_pack_info *in, uint64_t classmap_bytes, layout *l, char *why,
                     size_t n)
{
    if (in->height < 1 || in->width < 1 || in->height > 65535 || in->width > 65535 ||
        (in->channels != 1 && in->channels != 3))
        return data__fail(why, n, HONE_EPARSE, "image shape %dx%dx%d out of range", in->height,
                          in->width, in->channels);
    if (in->classes < 1 || in->classes > HONE_DATA_MAX_CLASSES)
        return data__fail(why, n, HONE_EPARSE, "%d classes (1..%d)", in->classes,
                          HONE_DATA_MAX_CLASSES);
    uint64_t sum = 0;
    for (int s = 0; s < HONE_DATA_NSPLITS; s++) {
        if (in->split[s] > in->n - sum)
            return data__fail(why, n, HONE_EPARSE, "split counts exceed the %llu images",
                              (unsigned long long)in->n);
        sum += in->split[s];
    }
    if (sum != in->n || in->n == 0 || in->n > (1ull << 40))
        return data__fail(why, n, HONE_EPARSE, "split counts sum to %llu, not the %llu images",
                          (unsigned long long)sum, (unsigned long long)in->n);
    l->image_bytes = (uint64_t)in->height * (uint64_t)in->width * (uint64_t)in->channels;
    if (in->n > (1ull << 52) / l->image_bytes)
        return data__fail(why, n, HONE_EPARSE, "too large");
    l->header_bytes = align64(PACK_FIXED + classmap_bytes);
    l->pixel_offset = l->header_bytes;
    l->label_offset = align64(l->pixel_offset + in->n * l->image_bytes);
    l->file_bytes = l->label_offset + 4 * in->n;
    l->box_offset = 0;
    if (in->has_boxes) {
        if (in->boxes > (1ull << 40))
            return data__fail(why, n, HONE_EPARSE, "%llu boxes: too many",
                              (unsigned long long)in->boxes);
        l->box_offset = align64(l->file_bytes);
        l->file_bytes = l->box_offset + 8 * (in->n + 1) + sizeof(hone_data_box) * in->boxes;
    }
    l->size_offset = 0;
    if (in->has_boxes && in->has_sizes) {
        l->size_offset = align64(l->file_bytes);
        l->file_bytes = l->size_offset + 8 * in->n;
    }
    l->cat_offset = 0;
    if (in->has_boxes && in->has_sizes && in->has_category_ids) {
        l->cat_offset = align64(l->file_bytes);
        l->file_bytes = l->cat_offset + 8 * (uint64_t)in->classes;
    }
    return HONE_OK;
}

/* ---------------------------------------------------------------- writer */

struct hone_data_pack_writer {
    char *path, *tmp;
    int fd, finished;
    hone_data_pack_info info;
    layout l;
    uint8_t *header; /* l.header_bytes, class map filled in */
    int32_t *labels;
    uint8_t *have;         /* [n]: image i put */
    hone_data_box **boxes; /* [n] (has_boxes): image i's boxes, malloc'd */
    size_t *nboxes;        /* [n] */
    uint32_t *sizes;       /* [2n] (has_boxes): image i's source width and height */
    int64_t *cat_ids;      /* [classes] (has_category_ids) */
};

int hone_data_pack_writer_new(const char *path, const hone_data_pack_info *info,
                              const char *const *class_names, hone_data_pack_writer **out,
                              char *err, size_t errlen)
{
    char why[200];
    *out = NULL;
    uint64_t cm = 0;
    for (int i = 0;
         info->classes > 0 && info->classes <= HONE_DATA_MAX_CLASSES && i < info->classes; i++) {
        size_t len = strlen(class_names[i]);
        if (len == 0 || len > 255)
            return data__fail(err, errlen, HONE_EINVAL, "%s: class %d's name is %zu bytes", path, i,
                              len);
        cm += 2 + len;
    }
    layout l;
    int rc = layout_of(info, cm, &l, why, sizeof why);
    if (rc < 0)
        return data__fail(err, errlen, HONE_EINVAL, "%s: %s", path, why);
    hone_data_pack_writer *w = hone_xcalloc(1, sizeof(*w));
    w->path = hone_xstrdup(path);
    w->info = *info;
    w->info.has_sizes = info->has_boxes; /* a file with boxes is written as version 3 */
    w->info.has_category_ids = 0;        /* until they are set */
    rc = layout_of(&w->info, cm, &l, why, sizeof why);
    w->l = l;
    size_t tl = strlen(path) + 16;
    w->tmp = hone_xmalloc(tl);
    snprintf(w->tmp, tl, "%s.tmp-XXXXXX", path);
    w->fd = mkstemp(w->tmp);
    if (w->fd < 0) {
        rc = data__fail(err, errlen, HONE_EIO, "%s: %s", w->tmp, strerror(errno));
        free(w->tmp);
        w->tmp = NULL;
        goto fail;
    }
    mode_t mask = umask(0); /* mkstemp made it 0600: give it the mode a plain create would */
    umask(mask);
    if (fchmod(w->fd, 0666 & ~mask) != 0 || ftruncate(w->fd, (off_t)l.file_bytes) != 0) {
        rc = data__fail(err, errlen, HONE_EIO, "%s: %s", w->tmp, strerror(errno));
        goto fail;
    }
    w->header = hone_xcalloc(1, l.header_bytes);
    uint8_t *p = w->header + PACK_FIXED;
    for (int i = 0; i < info->classes; i++) {
        uint16_t len = (uint16_t)strlen(class_names[i]);
        memcpy(p, &len, 2);
        memcpy(p + 2, class_names[i], len);
        p += 2 + len;
    }
    w->labels = hone_xcalloc(info->n, sizeof(int32_t));
    w->have = hone_xcalloc(info->n, 1);
    if (info->has_boxes) {
        w->boxes = hone_xcalloc(info->n, sizeof(hone_data_box *));
        w->nboxes = hone_xcalloc(info->n, sizeof(size_t));
        w->sizes = hone_xmalloc(2 * info->n * sizeof(uint32_t));
        for (uint64_t i = 0; i < info->n; i++) {
            w->sizes[2 * i] = (uint32_t)info->width;
            w->sizes[2 * i + 1] = (uint32_t)info->height;
        }
    }
    *out = w;
    return HONE_OK;
fail:
    hone_data_pack_writer_free(w);
    return rc;
}

static int pwrite_all(int fd, const uint8_t *p, uint64_t n, uint64_t off)
{
    while (n > 0) {
        ssize_t r = pwrite(fd, p, n > (1u << 30) ? (1u << 30) : (size_t)n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (uint64_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

int hone_data_pack_writer_put(hone_data_pack_writer *w, uint64_t i, const uint8_t *pixels,
                              int32_t label, char *err, size_t errlen)
{
    if (i >= w->info.n || label < 0 || label >= w->info.classes)
        return data__fail(err, errlen, HONE_EINVAL, "%s: image %llu label %d out of range", w->path,
                          (unsigned long long)i, label);
    if (pwrite_all(w->fd, pixels, w->l.image_bytes, w->l.pixel_offset + i * w->l.image_bytes))
        return data__fail(err, errlen, HONE_EIO, "%s: %s", w->tmp, strerror(errno));
    w->labels[i] = label;
    w->have[i] = 1;
    return HONE_OK;
}

/* A box the reader accepts: a known class or DontCare (crowd: or a crowd region of a known class),
 * finite, inside a w x h image. */
static int box_ok(const hone_data_box *b, int classes, int crowd, int w, int h)
{
    int lo = crowd ? HONE_DATA_CROWD(classes - 1) : HONE_DATA_DONTCARE;
    return b->cls >= lo && b->cls < classes && b->x1 >= 0 && b->y1 >= 0 && b->x1 < b->x2 &&
           b->y1 < b->y2 && b->x2 <= (float)w && b->y2 <= (float)h;
}

int hone_data_pack_writer_put_boxes(hone_data_pack_writer *w, uint64_t i, const hone_data_box *b,
                                    size_t n, char *err, size_t errlen)
{
    if (!w->boxes || i >= w->info.n || n > (1u << 24))
        return data__fail(err, errlen, HONE_EINVAL, "%s: boxes of image %llu: not expected",
                          w->path, (unsigned long long)i);
    for (size_t k = 0; k < n; k++)
        if (!box_ok(&b[k], w->info.classes, 1, w->info.width, w->info.height))
            return data__fail(err, errlen, HONE_EINVAL,
                              "%s: image %llu box %zu (class %d, %g %g %g %g) breaks the rules",
                              w->path, (unsigned long long)i, k, b[k].cls, b[k].x1, b[k].y1,
                              b[k].x2, b[k].y2);
    free(w->boxes[i]);
    w->boxes[i] = NULL;
    if (n) {
        w->boxes[i] = hone_xmalloc(n * sizeof(hone_data_box));
        memcpy(w->boxes[i], b, n * sizeof(hone_data_box));
    }
    w->nboxes[i] = n;
    return HONE_OK;
}

int hone_data_pack_writer_put_source_size(hone_data_pack_writer *w, uint64_t i, int width,
                                          int height, char *err, size_t errlen)
{
    if (!w->sizes || i >= w->info.n || width < 1 || height < 1 || width > 65535 || height > 65535)
        return data__fail(err, errlen, HONE_EINVAL, "%s: image %llu: source size %dx%d refused",
                          w->path, (unsigned long long)i, width, height);
    w->sizes[2 * i] = (uint32_t)width;
    w->sizes[2 * i + 1] = (uint32_t)height;
    return HONE_OK;
}

void hone_data_pack_writer_set_category_ids(hone_data_pack_writer *w, const int64_t *ids)
{
    if (!w->info.has_sizes)
        return;
    free(w->cat_ids);
    w->cat_ids = hone_xmalloc(sizeof(int64_t) * (size_t)w->info.classes);
    memcpy(w->cat_ids, ids, sizeof(int64_t) * (size_t)w->info.classes);
    w->info.has_category_ids = 1;
}

/* The boxes section: its start index, then the records (the layout grows to hold them); then the
 * source sizes. */
static int write_boxes(hone_data_pack_writer *w)
{
    uint64_t total = 0, n = w->info.n;
    for (uint64_t i = 0; i < n; i++)
        total += w->nboxes[i];
    w->info.boxes = total;
    char why[200];
    if (layout_of(&w->info, w->l.header_bytes - PACK_FIXED, &w->l, why, sizeof why) < 0)
        return -1;
    uint64_t *start = hone_xmalloc((n + 1) * sizeof(uint64_t));
    start[0] = 0;
    for (uint64_t i = 0; i < n; i++)
        start[i + 1] = start[i] + w->nboxes[i];
    int rc = pwrite_all(w->fd, (const uint8_t *)start, 8 * (n + 1), w->l.box_offset);
    uint64_t off = w->l.box_offset + 8 * (n + 1);
    for (uint64_t i = 0; rc == 0 && i < n; i++) {
        rc = pwrite_all(w->fd, (const uint8_t *)w->boxes[i], w->nboxes[i] * sizeof(hone_data_box),
                        off);
        off += w->nboxes[i] * sizeof(hone_data_box);
    }
    free(start);
    if (rc == 0 && w->info.has_sizes)
        rc = pwrite_all(w->fd, (const uint8_t *)w->sizes, 8 * n, w->l.size_offset);
    if (rc == 0 && w->info.has_category_ids)
        rc = pwrite_all(w->fd, (const uint8_t *)w->cat_ids, 8 * (uint64_t)w->info.classes,
                        w->l.cat_offset);
    /* the zero padding between the labels and the boxes must exist even with no boxes */
    if (rc == 0 && ftruncate(w->fd, (off_t)w->l.file_bytes) != 0)
        rc = -1;
    return rc;
}

int hone_data_pack_writer_finish(hone_data_pack_writer *w, char *err, size_t errlen)
{
    for (uint64_t i = 0; i < w->info.n; i++)
        if (!w->have[i])
            return data__fail(err, errlen, HONE_ESTATE, "%s: image %llu was never written", w->path,
                              (unsigned long long)i);
    if (pwrite_all(w->fd, (const uint8_t *)w->labels, 4 * w->info.n, w->l.label_offset))
        return data__fail(err, errlen, HONE_EIO, "%s: %s", w->tmp, strerror(errno));
    if (w->info.has_boxes && write_boxes(w) != 0)
        return data__fail(err, errlen, HONE_EIO, "%s: boxes: %s", w->tmp, strerror(errno));
    /* the payload's CRC, read back from the file (pixels were written by many threads) */
    uint64_t payload = w->l.file_bytes - w->l.header_bytes;
    uint8_t *map = mmap(NULL, w->l.file_bytes, PROT_READ, MAP_SHARED, w->fd, 0);
    if (map == MAP_FAILED)
        return data__fail(err, errlen, HONE_EIO, "%s: mmap: %s", w->tmp, strerror(errno));
    uint32_t pcrc = crc_more((uint32_t)crc32(0, NULL, 0), map + w->l.header_bytes, payload);
    munmap(map, w->l.file_bytes);
    uint8_t *h = w->header;
    memcpy(h, PACK_MAGIC, 8);
    put32(h + 8, w->info.has_sizes   ? PACK_VERSION_SIZES
                 : w->info.has_boxes ? PACK_VERSION_BOXES
                                     : PACK_VERSION);
    put32(h + 12, (uint32_t)w->l.header_bytes);
    put64(h + 16, w->info.n);
    put32(h + 24, (uint32_t)w->info.height);
    put32(h + 28, (uint32_t)w->info.width);
    put32(h + 32, (uint32_t)w->info.channels);
    put32(h + 36, (uint32_t)w->info.classes);
    for (int s = 0; s < HONE_DATA_NSPLITS; s++)
        put64(h + 40 + 8 * s, w->info.split[s]);
    put64(h + 64, w->l.pixel_offset);
    put64(h + 72, w->l.label_offset);
    put64(h + 80, payload);
    put32(h + 88, pcrc);
    put64(h + 96, w->l.box_offset);
    put64(h + 104, w->info.has_boxes ? w->info.boxes : 0);
    put64(h + 112, w->l.size_offset);
    put64(h + 120, w->l.cat_offset);
    put32(h + 92, 0);
    put32(h + 92, (uint32_t)crc32(crc32(0, NULL, 0), h, (uInt)w->l.header_bytes));
    if (pwrite_all(w->fd, h, w->l.header_bytes, 0) || fsync(w->fd) != 0)
        return data__fail(err, errlen, HONE_EIO, "%s: %s", w->tmp, strerror(errno));
    if (rename(w->tmp, w->path) != 0)
        return data__fail(err, errlen, HONE_EIO, "%s: rename: %s", w->path, strerror(errno));
    w->finished = 1;
    char *dcopy = hone_xstrdup(w->path); /* the rename itself durable */
    int dfd = open(dirname(dcopy), O_RDONLY | O_DIRECTORY);
    free(dcopy);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return HONE_OK;
}

void hone_data_pack_writer_free(hone_data_pack_writer *w)
{
    if (!w)
        return;
    if (w->fd >= 0)
        close(w->fd);
    if (w->tmp && !w->finished)
        unlink(w->tmp);
    free(w->tmp);
    free(w->path);
    free(w->header);
    free(w->labels);
    free(w->have);
    for (uint64_t i = 0; w->boxes && i < w->info.n; i++)
        free(w->boxes[i]);
    free(w->boxes);
    free(w->nboxes);
    free(w->sizes);
    free(w->cat_ids);
    free(w);
}

/* ---------------------------------------------------------------- reader */

struct hone_data_pack {
    uint8_t *map;
    size_t size;
    hone_data_pack_info info;
    layout l;
    char **names;
};

static int open_check(hone_data_pack *p, int flags, char *why, size_t n)
{
    const uint8_t *h = p->map;
    if (p->size < PACK_FIXED || memcmp(h, PACK_MAGIC, 8) != 0)
        return data__fail(why, n, HONE_EPARSE, "not a Hone packed dataset (wrong magic)");
    uint32_t version = get32(h + 8);
    if (version != PACK_VERSION && version != PACK_VERSION_BOXES && version != PACK_VERSION_SIZES)
        return data__fail(why, n, HONE_ENOTSUP,
                          "packed format version %u, this build reads %u to %u", version,
                          PACK_VERSION, PACK_VERSION_SIZES);
    uint64_t hb = get32(h + 12);
    if (hb < PACK_FIXED || hb % 64 || hb > p->size)
        return data__fail(why, n, HONE_EPARSE, "header of %llu bytes in a %zu-byte file",
                          (unsigned long long)hb, p->size);
    uint8_t *copy = hone_xmalloc(hb); /* the header CRC is over the header with its field zero */
    memcpy(copy, h, hb);
    put32(copy + 92, 0);
    uint32_t hcrc = (uint32_t)crc32(crc32(0, NULL, 0), copy, (uInt)hb);
    free(copy);
    if (hcrc != get32(h + 92))
        return data__fail(why, n, HONE_EPARSE, "header checksum mismatch (corrupt header)");
    hone_data_pack_info *in = &p->info;
    in->n = get64(h + 16);
    in->height = (int)get32(h + 24);
    in->width = (int)get32(h + 28);
    in->channels = (int)get32(h + 32);
    in->classes = (int)get32(h + 36);
    for (int s = 0; s < HONE_DATA_NSPLITS; s++)
        in->split[s] = get64(h + 40 + 8 * s);
    in->has_boxes = version == PACK_VERSION_BOXES || version == PACK_VERSION_SIZES;
    in->has_sizes = version == PACK_VERSION_SIZES;
    in->has_category_ids = in->has_sizes && get64(h + 120) != 0;
    in->boxes = in->has_boxes ? get64(h + 104) : 0;
    if (get32(h + 24) > 65535 || get32(h + 28) > 65535 || get32(h + 36) > HONE_DATA_MAX_CLASSES)
        return data__fail(why, n, HONE_EPARSE, "header out of range");
    /* the class map, inside the header */
    p->names = hone_xcalloc((size_t)(in->classes > 0 ? in->classes : 1), sizeof(char *));
    uint64_t off = PACK_FIXED;
    for (int i = 0; i < in->classes; i++) {
        if (off + 2 > hb)
            return data__fail(why, n, HONE_EPARSE, "class map runs past the header");
        uint16_t len;
        memcpy(&len, h + off, 2);
        if (len == 0 || off + 2 + len > hb)
            return data__fail(why, n, HONE_EPARSE, "class %d's name runs past the header", i);
        p->names[i] = hone_xmalloc((size_t)len + 1);
        memcpy(p->names[i], h + off + 2, len);
        p->names[i][len] = 0;
        if (strlen(p->names[i]) != len)
            return data__fail(why, n, HONE_EPARSE, "class %d's name holds a NUL byte", i);
        off += 2 + (uint64_t)len;
    }
    int rc = layout_of(in, off - PACK_FIXED, &p->l, why, n);
    if (rc < 0)
        return rc;
    if (p->l.header_bytes != hb || get64(h + 64) != p->l.pixel_offset ||
        get64(h + 72) != p->l.label_offset || get64(h + 80) != p->l.file_bytes - hb ||
        (in->has_boxes && get64(h + 96) != p->l.box_offset) ||
        (in->has_sizes && get64(h + 112) != p->l.size_offset) ||
        (in->has_sizes && get64(h + 120) != p->l.cat_offset))
        return data__fail(why, n, HONE_EPARSE, "header offsets disagree with its sizes");
    if (p->size != p->l.file_bytes)
        return data__fail(why, n, HONE_EPARSE, "%s: %zu bytes, the header says %llu",
                          p->size < p->l.file_bytes ? "truncated" : "trailing bytes", p->size,
                          (unsigned long long)p->l.file_bytes);
    if (!(flags & HONE_DATA_PACK_NO_VERIFY)) {
        uint32_t c = crc_more((uint32_t)crc32(0, NULL, 0), p->map + hb, p->size - hb);
        if (c != get32(h + 88))
            return data__fail(why, n, HONE_EPARSE,
                              "payload checksum mismatch (corrupt pixels or labels)");
    }
    const int32_t *lab = hone_data_pack_labels(p);
    for (uint64_t i = 0; i < in->n; i++)
        if (lab[i] < 0 || lab[i] >= in->classes)
            return data__fail(why, n, HONE_EPARSE, "image %llu has label %d of %d classes",
                              (unsigned long long)i, lab[i], in->classes);
    if (in->has_boxes) {
        const uint64_t *start = (const uint64_t *)(const void *)(p->map + p->l.box_offset);
        if (start[0] != 0 || start[in->n] != in->boxes)
            return data__fail(why, n, HONE_EPARSE, "box index does not span the %llu boxes",
                              (unsigned long long)in->boxes);
        for (uint64_t i = 0; i < in->n; i++)
            if (start[i + 1] < start[i])
                return data__fail(why, n, HONE_EPARSE, "box index of image %llu goes backwards",
                                  (unsigned long long)i);
        const hone_data_box *b = (const hone_data_box *)(const void *)(start + in->n + 1);
        for (uint64_t i = 0; i < in->boxes; i++)
            if (!box_ok(&b[i], in->classes, in->has_sizes, in->width, in->height))
                return data__fail(why, n, HONE_EPARSE, "box %llu breaks the rules (class %d)",
                                  (unsigned long long)i, b[i].cls);
    }
    if (in->has_sizes) {
        const uint32_t *sz = (const uint32_t *)(const void *)(p->map + p->l.size_offset);
        for (uint64_t i = 0; i < 2 * in->n; i++)
            if (sz[i] < 1 || sz[i] > 65535)
                return data__fail(why, n, HONE_EPARSE, "image %llu's source size %u out of range",
                                  (unsigned long long)(i / 2), sz[i]);
    }
    return HONE_OK;
}

int hone_data_pack_open(const char *path, int flags, hone_data_pack **out, char *err, size_t errlen)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return data__fail(err, errlen, errno == ENOENT ? HONE_ENOENT : HONE_EIO, "%s: %s", path,
                          strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return data__fail(err, errlen, HONE_EIO, "%s: not a regular file", path);
    }
    if (st.st_size < PACK_FIXED) {
        close(fd);
        return data__fail(err, errlen, HONE_EPARSE,
                          "%s: %lld bytes: not a Hone packed dataset (truncated or wrong file)",
                          path, (long long)st.st_size);
    }
    hone_data_pack *p = hone_xcalloc(1, sizeof(*p));
    p->size = (size_t)st.st_size;
    p->map = mmap(NULL, p->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p->map == MAP_FAILED) {
        p->map = NULL;
        hone_data_pack_free(p);
        return data__fail(err, errlen, HONE_EIO, "%s: mmap: %s", path, strerror(errno));
    }
    char why[200];
    int rc = open_check(p, flags, why, sizeof why);
    if (rc < 0) {
        hone_data_pack_free(p);
        return data__fail(err, errlen, rc, "%s: %s", path, why);
    }
    *out = p;
    return HONE_OK;
}

void hone_data_pack_free(hone_data_pack *p)
{
    if (!p)
        return;
    if (p->map)
        munmap(p->map, p->size);
    for (int i = 0; p->names && i < p->info.classes; i++)
        free(p->names[i]);
    free(p->names);
    free(p);
}

void hone_data_pack_get_info(const hone_data_pack *p, hone_data_pack_info *info)
{
    *info = p->info;
}

const uint8_t *hone_data_pack_pixels(const hone_data_pack *p)
{
    return p->map + p->l.pixel_offset;
}

const int32_t *hone_data_pack_labels(const hone_data_pack *p)
{
    return (const int32_t *)(const void *)(p->map + p->l.label_offset);
}

const char *hone_data_pack_class_name(const hone_data_pack *p, int i)
{
    return i >= 0 && i < p->info.classes ? p->names[i] : NULL;
}

const hone_data_box *hone_data_pack_boxes(const hone_data_pack *p, uint64_t i, size_t *n)
{
    *n = 0;
    if (!p->info.has_boxes || i >= p->info.n)
        return NULL;
    const uint64_t *start = (const uint64_t *)(const void *)(p->map + p->l.box_offset);
    *n = (size_t)(start[i + 1] - start[i]);
    return *n ? (const hone_data_box *)(const void *)(start + p->info.n + 1) + start[i] : NULL;
}

void hone_data_pack_source_size(const hone_data_pack *p, uint64_t i, int *width, int *height)
{
    *width = p->info.width;
    *height = p->info.height;
    if (!p->info.has_sizes || i >= p->info.n)
        return;
    const uint32_t *sz = (const uint32_t *)(const void *)(p->map + p->l.size_offset);
    *width = (int)sz[2 * i];
    *height = (int)sz[2 * i + 1];
}

const int64_t *hone_data_pack_category_ids(const hone_data_pack *p)
{
    return p->info.has_category_ids ? (const int64_t *)(const void *)(p->map + p->l.cat_offset)
                                    : NULL;
}
