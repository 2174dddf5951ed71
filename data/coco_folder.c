/* data/coco_folder.c: COCO detection datasets on disk (data.h's layouts): finds the layout, reads
 * each split's JSON beneath the set's folder (bounded: its size, and the memory its parse may take
 * reserved from the process's budget first, coco_memory.c), parses it (coco.c), reads every listed
 * image's header and checks its size against the JSON, and builds the same detection set a KITTI
 * folder makes (kitti_folder.c), so packing and training do not know the difference. Every problem
 * is collected; a set with any is refused whole. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data_internal.h"

#define P(...) data__kitti_problem(pr, __VA_ARGS__)

/* one split's files, relative to the root: its JSON and its image folder ("" for the root) */
typedef struct split_files {
    char json[512], images[512];
} split_files;

static int is_dir(const char *root, const char *rel)
{
    char p[4096];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", root, rel);
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *root, const char *rel)
{
    char p[4096];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", root, rel);
    return lstat(p, &st) == 0 && !S_ISDIR(st.st_mode);
}

/* annotations/instances_<split><tag>.json: the one file of a split and its image folder,
 * <tag> being what COCO puts there ("2017"); 0 when none, -1 (a problem) when several */
static int find_instances(const char *root, const char *split, split_files *sf,
                          hone_data_kitti_problems *pr)
{
    char dir[4096], pre[64];
    snprintf(dir, sizeof dir, "%s/annotations", root);
    snprintf(pre, sizeof pre, "instances_%s", split);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    int found = 0;
    size_t pl = strlen(pre);
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < pl + 5 || strncmp(e->d_name, pre, pl) || strcmp(e->d_name + n - 5, ".json") ||
            n - 5 - pl > 64)
            continue;
        if (found++) {
            P("annotations/%s: a second file for the %s split (beside %s)", e->d_name, split,
              sf->json + strlen("annotations/"));
            continue;
        }
        char tag[80];
        snprintf(tag, sizeof tag, "%.*s", (int)(n - 5 - pl), e->d_name + pl);
        snprintf(sf->json, sizeof sf->json, "annotations/%s", e->d_name);
        snprintf(sf->images, sizeof sf->images, "%s%s", split, tag);
        if (!is_dir(root, sf->images)) {
            char alt[512];
            snprintf(alt, sizeof alt, "images/%s%s", split, tag);
            if (is_dir(root, alt))
                snprintf(sf->images, sizeof sf->images, "%s", alt);
        }
    }
    closedir(d);
    return found > 1 ? -1 : found;
}

/* The splits present (sf[s].json empty: absent). HONE_EPARSE with err when no layout fits. */
static int find_layout(const char *root, split_files sf[HONE_DATA_NSPLITS], int *split_layout,
                       hone_data_kitti_problems *pr, char *err, size_t errlen)
{
    memset(sf, 0, sizeof(split_files) * HONE_DATA_NSPLITS);
    *split_layout = 0;
    if (is_file(root, "annotations.json")) {
        snprintf(sf[0].json, sizeof sf[0].json, "annotations.json");
        snprintf(sf[0].images, sizeof sf[0].images, "%s", is_dir(root, "images") ? "images" : "");
        return HONE_OK;
    }
    *split_layout = 1;
    if (is_file(root, "train/annotations.json")) {
        for (int s = 0; s < HONE_DATA_NSPLITS; s++) {
            const char *n = hone_data_split_name(s);
            char j[64], im[64];
            snprintf(j, sizeof j, "%s/annotations.json", n);
            snprintf(im, sizeof im, "%s/images", n);
            if (!is_file(root, j))
                continue;
            snprintf(sf[s].json, sizeof sf[s].json, "%s", j);
            snprintf(sf[s].images, sizeof sf[s].images, "%s", is_dir(root, im) ? im : n);
        }
        return HONE_OK;
    }
    int got = 0;
    for (int s = 0; s < HONE_DATA_NSPLITS; s++)
        got |= find_instances(root, hone_data_split_name(s), &sf[s], pr) != 0;
    if (got && !sf[0].json[0])
        return data__fail(err, errlen, HONE_EPARSE,
                          "%s: annotations/ holds no instances_train*.json (the training split)",
                          root);
    if (!got)
        return data__fail(err, errlen, HONE_EPARSE,
                          "%s: not a COCO dataset: want annotations.json with images/, "
                          "train/annotations.json with train/images/, or "
                          "annotations/instances_train<tag>.json with train<tag>/",
                          root);
    return HONE_OK;
}

/* Reads n bytes of fd at off into buf; 0, or -1 with a problem. */
static int read_at(int fd, const char *rel, uint8_t *buf, size_t n, size_t off,
                   hone_data_kitti_problems *pr)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            P("%s: %s", rel, r < 0 ? strerror(errno) : "shorter than its size (changed?)");
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

/* The bound on parsing fd's n bytes (hone_data_coco_memory), scanned in pieces before the file is
 * read whole, so that the memory is reserved before it is taken; 0 (with a problem) on error. */
static size_t scan_file(int fd, const char *rel, size_t n, hone_data_kitti_problems *pr)
{
    const size_t piece_bytes = 1 << 20;
    data__json_scan *sc = data__json_scan_new();
    uint8_t *piece = hone_xmalloc(piece_bytes);
    size_t m = 0;
    for (size_t at = 0; at < n;) {
        size_t want = n - at < piece_bytes ? n - at : piece_bytes;
        if (read_at(fd, rel, piece, want, at, pr) < 0)
            goto done;
        data__json_scan_feed(sc, piece, want);
        at += want;
    }
    m = data__json_scan_end(sc, NULL);
done:
    free(piece);
    free(sc);
    return m;
}

/* The JSON file whole, beneath the root, at most HONE_DATA_COCO_MAX_JSON_BYTES, with the memory
 * its parse may take reserved from the process's budget (*reserved: release it once parsed). */
static uint8_t *read_json(const char *root, const char *rel, size_t *len, size_t *reserved,
                          hone_data_kitti_problems *pr)
{
    char path[4096], e[256];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    *reserved = 0;
    int fd = -1, rc = data__open_in(root, path, &fd, e, sizeof e);
    if (rc < 0) {
        P("%s: %s", rel,
          rc == HONE_EPARSE   ? "a symbolic link out of the dataset's folder (not followed)"
          : rc == HONE_ENOENT ? "no such file"
                              : "cannot open it");
        return NULL;
    }
    struct stat st;
    uint8_t *buf = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        P("%s: not a regular file", rel);
        goto fail;
    }
    if ((uint64_t)st.st_size > HONE_DATA_COCO_MAX_JSON_BYTES) {
        P("%s: %lld bytes, more than the %zu a COCO file may hold", rel, (long long)st.st_size,
          (size_t)HONE_DATA_COCO_MAX_JSON_BYTES);
        goto fail;
    }
    size_t n = (size_t)st.st_size, mem = scan_file(fd, rel, n, pr);
    char why[400];
    if (!mem)
        goto fail;
    if (data__coco_memory_reserve(mem, why, sizeof why) < 0) {
        P("%s: %s", rel, why);
        goto fail;
    }
    *reserved = mem;
    buf = hone_xmalloc(n ? n : 1);
    if (read_at(fd, rel, buf, n, 0, pr) < 0) {
        free(buf);
        buf = NULL;
        data__coco_memory_release(mem);
        *reserved = 0;
        goto fail;
    }
    *len = n;
fail:
    close(fd);
    return buf;
}
/* Whether f lists the same categories as the first file (class indices must agree). */
static int same_categories(const hone_data_coco_file *a, const hone_data_coco_file *b)
{
    if (a->ncats != b->ncats)
        return 0;
    for (int i = 0; i < a->ncats; i++)
        if (a->cat_ids[i] != b->cat_ids[i] || strcmp(a->cat_names[i], b->cat_names[i]))
            return 0;
    return 1;
}

/* One split's images: each file's header read, its size matched to the JSON's, then added. */
static void add_split(hone_data_kitti *k, const hone_data_coco_opts *o, const char *root,
                      const split_files *sf, int split, const hone_data_coco_file *f,
                      hone_data_kitti_problems *pr)
{
    for (size_t i = 0; i < f->nimages; i++) {
        const hone_data_coco_image *m = &f->images[i];
        char path[4096], why[600];
        snprintf(path, sizeof path, "%s/%s%s%s", root, sf->images, sf->images[0] ? "/" : "",
                 m->file_name);
        hone_data_image_info in;
        if (data__image_probe_in(root, path, o ? o->limits : NULL, &in, why, sizeof why) < 0) {
            size_t rl = strlen(root) + 1;
            const char *w = strncmp(why, path, strlen(path)) == 0 ? why + rl : why;
            P("%s: image %" PRId64 ": %s", sf->json, m->id, w);
            continue;
        }
        if (in.width != m->width || in.height != m->height) {
            P("%s: image %" PRId64 " (%s): the JSON says %dx%d, the file is %dx%d", sf->json, m->id,
              m->file_name, m->width, m->height, in.width, in.height);
            continue;
        }
        data__kitti_add_image(k, path, split, &in, f->boxes + m->box0, m->nbox);
    }
}

int hone_data_coco_open(const char *root, const hone_data_coco_opts *opts, hone_data_kitti **out,
                        char *err, size_t errlen)
{
    *out = NULL;
    struct stat st;
    if (stat(root, &st) != 0)
        return data__fail(err, errlen, errno == ENOENT ? HONE_ENOENT : HONE_EIO, "%s: %s", root,
                          strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return data__fail(err, errlen, HONE_EPARSE, "%s: not a folder", root);
    hone_data_kitti_problems own = {0}, *pr = opts && opts->problems ? opts->problems : &own;
    hone_data_coco_file *files[HONE_DATA_NSPLITS] = {0}, *first = NULL;
    const char *first_name = NULL;
    split_files sf[HONE_DATA_NSPLITS];
    int layout = 0;
    hone_data_kitti *k = NULL;
    int rc = data__kitti_new(root, &k, err, errlen);
    if (rc == HONE_OK)
        rc = find_layout(root, sf, &layout, pr, err, errlen);
    if (rc < 0)
        goto fail;
    for (int s = 0; s < HONE_DATA_NSPLITS; s++) {
        if (!sf[s].json[0])
            continue;
        if (!is_dir(root, sf[s].images[0] ? sf[s].images : ".")) {
            P("%s: no image folder %s/ beside it", sf[s].json, sf[s].images);
            continue;
        }
        size_t len = 0, mem = 0;
        uint8_t *buf = read_json(root, sf[s].json, &len, &mem, pr);
        if (!buf)
            continue;
        size_t before = pr->count;
        /* within what was reserved (a file that changed since its scan is refused); on to the
         * images even with problems */
        data__coco_parse(buf, len, sf[s].json, 1, mem, &files[s], pr);
        free(buf);
        data__coco_memory_release(mem);
        if (!files[s])
            continue;
        if (!first && pr->count == before) {
            first = files[s];
            first_name = sf[s].json;
        } else if (first && !same_categories(first, files[s])) {
            P("%s: its categories differ from %s's (every split must list the same ids and "
              "names)",
              sf[s].json, first_name);
            continue;
        }
        add_split(k, opts, root, &sf[s], s, files[s], pr);
    }
    if (pr->count) {
        char b[2048];
        hone_data_kitti_problems_join(pr, b, sizeof b);
        rc = data__fail(err, errlen, HONE_EPARSE, "%s: %s", root, b);
        goto fail;
    }
    int n = first ? first->ncats : 0;
    char **names = hone_xcalloc((size_t)(n ? n : 1), sizeof(char *));
    int64_t *ids = hone_xcalloc((size_t)(n ? n : 1), sizeof(int64_t));
    for (int i = 0; i < n; i++) {
        names[i] = hone_xstrdup(first->cat_names[i]);
        ids[i] = first->cat_ids[i];
    }
    data__kitti_set_classes(k, names, ids, n);
    data__kitti_set_layout(k, layout);
    if ((rc = data__kitti_finish(k, err, errlen)) < 0)
        goto fail;
    *out = k;
    k = NULL;
fail:
    for (int s = 0; s < HONE_DATA_NSPLITS; s++)
        hone_data_coco_file_free(files[s]);
    hone_data_kitti_problems_clear(&own);
    hone_data_kitti_free(k);
    return rc;
}
