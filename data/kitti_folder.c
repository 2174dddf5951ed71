/* data/kitti_folder.c: KITTI detection datasets on disk (data.h's layout): pairs images/ with
 * labels/ by file stem, reads every image's header and parses every label file, maps class names
 * and collects every problem (bounded) instead of stopping at the first. A dataset with any
 * problem is refused whole: hone_data_kitti_open returns nothing half-checked. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data_internal.h"

typedef struct kimage {
    char *path;
    int split, width, height;
    size_t box0, nbox; /* into boxes[] */
} kimage;

struct hone_data_kitti {
    char *root; /* as given: the walk's paths start with it */
    char real[PATH_MAX];
    char **classes; /* the map given (copied) or the names found, lowercased and sorted */
    int nclasses, mapped;
    int64_t *class_ids; /* a COCO set's category ids (class i's); NULL for KITTI */
    size_t *class_boxes;
    kimage *img;
    size_t nimg, capimg;
    hone_data_box *boxes;
    size_t nbox, capbox;
    hone_data_kitti_stats st;
};

/* a file of images/ or labels/: its stem (the name less its extension) and full name */
typedef struct entry {
    char *stem, *name;
} entry;

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const entry *)a)->stem, ((const entry *)b)->stem);
}

static void free_entries(entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(e[i].stem);
        free(e[i].name);
    }
    free(e);
}

/* 1: PNG/JPEG by extension; -1: an image format Hone does not read; 0: not an image */
static int image_ext(const char *ext)
{
    static const char *const yes[] = {"png", "jpg", "jpeg"};
    static const char *const no[] = {"bmp", "gif", "tif", "tiff", "webp", "pgm",
                                     "ppm", "pbm", "pnm", "heic", "heif", "avif"};
    for (size_t i = 0; i < HONE_ARRAY_LEN(yes); i++)
        if (!strcasecmp(ext, yes[i]))
            return 1;
    for (size_t i = 0; i < HONE_ARRAY_LEN(no); i++)
        if (!strcasecmp(ext, no[i]))
            return -1;
    return 0;
}

static char *join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = hone_xmalloc(n);
    snprintf(p, n, "%s/%s", a, b);
    return p;
}

/* A regular file, following a symlink only when it resolves inside the dataset's folder. */
static const char *file_problem(const hone_data_kitti *k, const char *path)
{
    struct stat st;
    char real[PATH_MAX];
    if (lstat(path, &st) != 0)
        return "cannot be read";
    if (S_ISLNK(st.st_mode)) {
        size_t n = strlen(k->real);
        if (!realpath(path, real))
            return "symlink to nothing";
        if (!(strncmp(real, k->real, n) == 0 && real[n] == '/') && strcmp(k->real, "/") != 0)
            return "symlink resolves outside the dataset's folder";
        if (stat(real, &st) != 0)
            return "cannot be read";
    }
    return S_ISREG(st.st_mode) ? NULL : "not a regular file";
}

/* The files of dir with an extension accepted by want (image_ext or ".txt"), sorted by stem. */
static int list_files(hone_data_kitti *k, const char *dir, const char *shown, int labels,
                      entry **out, size_t *nout, hone_data_kitti_problems *pr, char *err,
                      size_t errlen)
{
    DIR *d = opendir(dir);
    *out = NULL;
    *nout = 0;
    if (!d)
        return data__fail(err, errlen, errno == ENOENT ? HONE_EPARSE : HONE_EIO,
                          "%s: %s (a KITTI dataset holds images/ and labels/)", dir,
                          strerror(errno));
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char *p = join(dir, e->d_name);
        const char *dot = strrchr(e->d_name, '.');
        int ok = dot && (labels ? !strcmp(dot + 1, "txt") : image_ext(dot + 1) == 1);
        const char *why = NULL;
        if (!labels && dot && image_ext(dot + 1) < 0)
            why = "image format unsupported (Hone reads PNG and JPEG)";
        else if (ok)
            why = file_problem(k, p);
        free(p);
        if (why) {
            data__kitti_problem(pr, "%s/%s: %s", shown, e->d_name, why);
            continue;
        }
        if (!ok) {
            k->st.skipped++;
            continue;
        }
        if (*nout == cap) {
            cap = cap ? cap * 2 : 256;
            *out = hone_xrealloc(*out, cap * sizeof(entry));
        }
        entry *en = &(*out)[(*nout)++];
        en->name = hone_xstrdup(e->d_name);
        en->stem = hone_xstrdup(e->d_name);
        en->stem[dot - e->d_name] = 0;
    }
    closedir(d);
    if (*nout)
        qsort(*out, *nout, sizeof(entry), cmp_entry);
    for (size_t i = 1; i < *nout; i++)
        if (!strcmp((*out)[i].stem, (*out)[i - 1].stem))
            data__kitti_problem(pr, "%s/%s: same stem as %s (one file per stem)", shown,
                                (*out)[i].name, (*out)[i - 1].name);
    return HONE_OK;
}

static char *read_small(const hone_data_kitti *k, const char *path, size_t *len, const char **why)
{
    char e[64];
    int fd = -1, rc = data__open_in(k->root, path, &fd, e, sizeof e);
    if (rc < 0) {
        *why = rc == HONE_EPARSE   ? "a symbolic link out of the dataset's folder (not followed)"
               : rc == HONE_ENOENT ? "no such file"
                                   : "cannot open it";
        return NULL;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        *why = strerror(errno);
        close(fd);
        return NULL;
    }
    char *buf = hone_xmalloc(HONE_DATA_KITTI_MAX_LABEL_BYTES + 1);
    *len = fread(buf, 1, HONE_DATA_KITTI_MAX_LABEL_BYTES + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || *len > HONE_DATA_KITTI_MAX_LABEL_BYTES) {
        *why = bad ? "read error" : "label file larger than 1 MiB";
        free(buf);
        return NULL;
    }
    return buf;
}

/* The class index of a name: the map's (case-insensitive), or the found names' (lowercased,
 * provisional until they are sorted). -2: unknown to the map. */
static int class_of(hone_data_kitti *k, const char *name, size_t len)
{
    if (len == 8 && !strncasecmp(name, "dontcare", 8))
        return HONE_DATA_DONTCARE;
    for (int i = 0; i < k->nclasses; i++)
        if (strlen(k->classes[i]) == len && !strncasecmp(k->classes[i], name, len))
            return i;
    if (k->mapped)
        return -2;
    if (k->nclasses == HONE_DATA_MAX_CLASSES)
        return -3;
    char *s = hone_xmalloc(len + 1);
    for (size_t i = 0; i < len; i++)
        s[i] = (char)tolower((unsigned char)name[i]);
    s[len] = 0;
    k->classes = hone_xrealloc(k->classes, (size_t)(k->nclasses + 1) * sizeof(char *));
    k->classes[k->nclasses] = s;
    return k->nclasses++;
}

void data__kitti_add_image(hone_data_kitti *k, const char *path, int split,
                           const hone_data_image_info *in, const hone_data_box *b, size_t n)
{
    if (k->nimg == k->capimg) {
        k->capimg = k->capimg ? k->capimg * 2 : 1024;
        k->img = hone_xrealloc(k->img, k->capimg * sizeof(kimage));
    }
    k->img[k->nimg++] = (kimage){hone_xstrdup(path), split, in->width, in->height, k->nbox, n};
    for (size_t i = 0; i < n; i++) {
        if (k->nbox == k->capbox) {
            k->capbox = k->capbox ? k->capbox * 2 : 4096;
            k->boxes = hone_xrealloc(k->boxes, k->capbox * sizeof(hone_data_box));
        }
        k->boxes[k->nbox++] = b[i];
    }
    hone_data_kitti_stats *st = &k->st;
    st->split_images[split]++;
    st->png += in->format == HONE_DATA_FORMAT_PNG;
    st->jpeg += in->format == HONE_DATA_FORMAT_JPEG;
    st->grey += in->channels == 1;
    st->colour += in->channels == 3;
    st->min_width = in->width < st->min_width ? in->width : st->min_width;
    st->min_height = in->height < st->min_height ? in->height : st->min_height;
    st->max_width = in->width > st->max_width ? in->width : st->max_width;
    st->max_height = in->height > st->max_height ? in->height : st->max_height;
}

/* One image and its label file. */
static void check_pair(hone_data_kitti *k, const hone_data_kitti_opts *o, int split,
                       const char *ipath, const char *ishown, const char *lpath, const char *lshown,
                       hone_data_kitti_problems *pr)
{
    hone_data_image_info in;
    char why[600];
    if (data__image_probe_in(k->root, ipath, o ? o->limits : NULL, &in, why, sizeof why) < 0) {
        const char *w = strncmp(why, ipath, strlen(ipath)) == 0 ? why + strlen(ipath) : why;
        data__kitti_problem(pr, "%s%s", ishown, w);
        return;
    }
    size_t len;
    const char *rwhy = NULL;
    char *buf = read_small(k, lpath, &len, &rwhy);
    if (!buf) {
        data__kitti_problem(pr, "%s: %s", lshown, rwhy);
        return;
    }
    hone_data_kitti_obj *obj;
    size_t n;
    int rc =
        hone_data_kitti_parse((const uint8_t *)buf, len, lshown, in.width, in.height, &obj, &n, pr);
    size_t before = pr->count;
    int *cls = hone_xcalloc(n ? n : 1, sizeof(int));
    for (size_t i = 0; rc == HONE_OK && i < n; i++) {
        cls[i] = class_of(k, obj[i].name, obj[i].name_len);
        if (cls[i] == -2)
            data__kitti_problem(pr, "%s:%d: unknown class %.*s (not in the dataset's classes)",
                                lshown, obj[i].line, (int)obj[i].name_len, obj[i].name);
        else if (cls[i] == -3)
            data__kitti_problem(pr, "%s:%d: more than %d classes", lshown, obj[i].line,
                                HONE_DATA_MAX_CLASSES);
    }
    if (rc == HONE_OK && pr->count == before) {
        hone_data_box *b = hone_xmalloc(sizeof *b * (n ? n : 1));
        for (size_t i = 0; i < n; i++)
            b[i] = (hone_data_box){cls[i], obj[i].x1, obj[i].y1, obj[i].x2, obj[i].y2};
        data__kitti_add_image(k, ipath, split, &in, b, n);
        free(b);
    }
    free(cls);
    free(obj);
    free(buf);
}

/* images/ and labels/ of one split: pairs by stem, each unpaired file a problem. */
static int walk_split(hone_data_kitti *k, const hone_data_kitti_opts *o, const char *dir,
                      const char *prefix, int split, hone_data_kitti_problems *pr, char *err,
                      size_t errlen)
{
    char *idir = join(dir, "images"), *ldir = join(dir, "labels");
    char ishown[300], lshown[300];
    snprintf(ishown, sizeof ishown, "%simages", prefix);
    snprintf(lshown, sizeof lshown, "%slabels", prefix);
    entry *im = NULL, *lb = NULL;
    size_t ni = 0, nl = 0;
    int rc = list_files(k, idir, ishown, 0, &im, &ni, pr, err, errlen);
    if (rc == HONE_OK)
        rc = list_files(k, ldir, lshown, 1, &lb, &nl, pr, err, errlen);
    for (size_t a = 0, b = 0; rc == HONE_OK && (a < ni || b < nl);) {
        int c = a == ni ? 1 : b == nl ? -1 : strcmp(im[a].stem, lb[b].stem);
        if (c < 0) {
            data__kitti_problem(pr, "%s/%s: no label file (want %s/%s.txt)", ishown, im[a].name,
                                lshown, im[a].stem);
        } else if (c > 0) {
            data__kitti_problem(pr, "%s/%s: no image for this label file", lshown, lb[b].name);
        } else {
            char *ip = join(idir, im[a].name), *lp = join(ldir, lb[b].name);
            char is[600], ls[600];
            snprintf(is, sizeof is, "%s/%s", ishown, im[a].name);
            snprintf(ls, sizeof ls, "%s/%s", lshown, lb[b].name);
            check_pair(k, o, split, ip, is, lp, ls, pr);
            free(ip);
            free(lp);
        }
        a += c <= 0;
        b += c >= 0;
    }
    free_entries(im, ni);
    free_entries(lb, nl);
    free(idir);
    free(ldir);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Without a class map: the found names sorted, and every box renumbered to match. */
static void sort_classes(hone_data_kitti *k)
{
    int n = k->nclasses;
    if (n == 0)
        return;
    char **sorted = hone_xmalloc((size_t)n * sizeof(char *));
    memcpy(sorted, k->classes, (size_t)n * sizeof(char *));
    qsort(sorted, (size_t)n, sizeof(char *), cmp_str);
    int *remap = hone_xmalloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (sorted[j] == k->classes[i])
                remap[i] = j;
    for (size_t i = 0; i < k->nbox; i++)
        if (k->boxes[i].cls >= 0)
            k->boxes[i].cls = remap[k->boxes[i].cls];
    free(k->classes);
    k->classes = sorted;
    free(remap);
}

/* The class map given: printable names, unique regardless of case, none of them DontCare. */
static int take_map(hone_data_kitti *k, const hone_data_kitti_opts *o, char *err, size_t errlen)
{
    if (o->nclasses < 1 || o->nclasses > HONE_DATA_MAX_CLASSES)
        return data__fail(err, errlen, HONE_EINVAL, "classes: %d names (1..%d)", o->nclasses,
                          HONE_DATA_MAX_CLASSES);
    k->mapped = 1;
    k->classes = hone_xcalloc((size_t)o->nclasses, sizeof(char *));
    for (int i = 0; i < o->nclasses; i++) {
        const char *s = o->classes[i];
        size_t len = strlen(s);
        if (len == 0 || len > 255 || class_of(k, s, len) != -2)
            return data__fail(err, errlen, HONE_EINVAL,
                              "classes: name %d (%.40s) is empty, too long, DontCare or a "
                              "duplicate (names are matched case-insensitively)",
                              i, s);
        for (const unsigned char *p = (const unsigned char *)s; *p; p++)
            if (*p < 0x20 || *p == 0x7f)
                return data__fail(err, errlen, HONE_EINVAL, "classes: name %d is not printable", i);
        k->classes[k->nclasses++] = hone_xstrdup(s);
    }
    return HONE_OK;
}

int data__kitti_new(const char *root, hone_data_kitti **out, char *err, size_t errlen)
{
    hone_data_kitti *k = hone_xcalloc(1, sizeof *k);
    k->root = hone_xstrdup(root);
    k->st.min_width = k->st.min_height = INT_MAX;
    *out = k;
    if (!realpath(root, k->real))
        return data__fail(err, errlen, HONE_EIO, "%s: %s", root, strerror(errno));
    return HONE_OK;
}

void data__kitti_set_classes(hone_data_kitti *k, char **names, int64_t *ids, int n)
{
    for (int i = 0; i < k->nclasses; i++)
        free(k->classes[i]);
    free(k->classes);
    free(k->class_ids);
    k->classes = names;
    k->class_ids = ids;
    k->nclasses = n;
    k->mapped = 1;
}

void data__kitti_set_layout(hone_data_kitti *k, int split_layout)
{
    k->st.split_layout = split_layout;
}

int data__kitti_finish(hone_data_kitti *k, char *err, size_t errlen)
{
    if (k->nimg == 0)
        return data__fail(err, errlen, HONE_EPARSE, "%s: no images", k->root);
    if (k->nclasses == 0)
        return data__fail(err, errlen, HONE_EPARSE, "%s: no labelled objects, so no classes",
                          k->root);
    k->class_boxes = hone_xcalloc((size_t)k->nclasses, sizeof(size_t));
    for (size_t i = 0; i < k->nbox; i++) {
        if (k->boxes[i].cls >= 0)
            k->class_boxes[k->boxes[i].cls]++;
        else
            k->st.dontcare++;
    }
    k->st.classes = k->nclasses;
    k->st.images = k->nimg;
    k->st.boxes = k->nbox;
    return HONE_OK;
}

int hone_data_kitti_open(const char *root, const hone_data_kitti_opts *opts, hone_data_kitti **out,
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
    hone_data_kitti *k = NULL;
    int rc = data__kitti_new(root, &k, err, errlen);
    if (rc < 0)
        goto fail;
    if (opts && opts->classes && (rc = take_map(k, opts, err, errlen)) < 0)
        goto fail;
    char *train = join(root, "train");
    k->st.split_layout = stat(train, &st) == 0 && S_ISDIR(st.st_mode);
    free(train);
    if (!k->st.split_layout) {
        rc = walk_split(k, opts, root, "", HONE_DATA_TRAIN, pr, err, errlen);
    } else {
        for (int s = 0; rc == HONE_OK && s < HONE_DATA_NSPLITS; s++) {
            char *p = join(root, hone_data_split_name(s)), prefix[16];
            snprintf(prefix, sizeof prefix, "%s/", hone_data_split_name(s));
            if (s == HONE_DATA_TRAIN || (stat(p, &st) == 0 && S_ISDIR(st.st_mode)))
                rc = walk_split(k, opts, p, prefix, s, pr, err, errlen);
            free(p);
        }
    }
    if (rc < 0)
        goto fail;
    if (pr->count) {
        char b[2048];
        hone_data_kitti_problems_join(pr, b, sizeof b);
        rc = data__fail(err, errlen, HONE_EPARSE, "%s: %s", root, b);
        goto fail;
    }
    if (k->nimg && !k->mapped)
        sort_classes(k);
    if ((rc = data__kitti_finish(k, err, errlen)) < 0)
        goto fail;
    hone_data_kitti_problems_clear(&own);
    *out = k;
    return HONE_OK;
fail:
    hone_data_kitti_problems_clear(&own);
    hone_data_kitti_free(k);
    return rc;
}

const char *data__kitti_root(const hone_data_kitti *k)
{
    return k->root;
}

void hone_data_kitti_free(hone_data_kitti *k)
{
    if (!k)
        return;
    free(k->root);
    for (size_t i = 0; i < k->nimg; i++)
        free(k->img[i].path);
    free(k->img);
    free(k->boxes);
    for (int i = 0; i < k->nclasses; i++)
        free(k->classes[i]);
    free(k->classes);
    free(k->class_ids);
    free(k->class_boxes);
    free(k);
}

void hone_data_kitti_get_stats(const hone_data_kitti *k, hone_data_kitti_stats *st)
{
    *st = k->st;
}

const char *hone_data_kitti_class_name(const hone_data_kitti *k, int i)
{
    return i >= 0 && i < k->nclasses ? k->classes[i] : NULL;
}

int64_t hone_data_kitti_category_id(const hone_data_kitti *k, int i)
{
    return k->class_ids && i >= 0 && i < k->nclasses ? k->class_ids[i] : -1;
}

size_t hone_data_kitti_class_boxes(const hone_data_kitti *k, int i)
{
    return i >= 0 && i < k->nclasses ? k->class_boxes[i] : 0;
}

const char *hone_data_kitti_image(const hone_data_kitti *k, size_t i, int *split, int *width,
                                  int *height, const hone_data_box **boxes, size_t *nboxes)
{
    if (i >= k->nimg)
        return NULL;
    const kimage *m = &k->img[i];
    if (split)
        *split = m->split;
    if (width)
        *width = m->width;
    if (height)
        *height = m->height;
    if (boxes)
        *boxes = m->nbox ? k->boxes + m->box0 : NULL;
    if (nboxes)
        *nboxes = m->nbox;
    return m->path;
}
