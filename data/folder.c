/* data/folder.c: image-folder datasets: walks <root>/[split/]<class>/<image>, applies the rules
 * of data.h (classes sorted by name, the same classes in every split, symlinks kept inside the
 * root, images by extension and checked by content) and keeps the image list in a fixed order
 * for packing. Reads files only; the first broken rule stops the walk with the path named. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "data_internal.h"

typedef struct image_ent {
    char *path;
    int split, cls;
} image_ent;

struct hone_data_folder {
    char *root; /* as given, for messages */
    char real[PATH_MAX];
    int split_layout, nclasses;
    char **classes;                    /* sorted */
    size_t *counts[HONE_DATA_NSPLITS]; /* [cls] images per class per split (NULL: absent) */
    image_ent *img;                    /* sorted: split, class, name */
    size_t nimg, capimg;
    char *skipped_example;
    hone_data_folder_stats st;
};

static const char *const split_names[HONE_DATA_NSPLITS] = {"train", "val", "test"};

const char *hone_data_split_name(int split)
{
    return split >= 0 && split < HONE_DATA_NSPLITS ? split_names[split] : "?";
}

void hone_data_split_used(const uint64_t split[HONE_DATA_NSPLITS], uint64_t used[HONE_DATA_NSPLITS])
{
    uint64_t carve = split[HONE_DATA_TEST] ? 0 : split[HONE_DATA_TRAIN] / 10;
    used[HONE_DATA_TRAIN] = split[HONE_DATA_TRAIN] - carve;
    used[HONE_DATA_VAL] = split[HONE_DATA_VAL];
    used[HONE_DATA_TEST] = split[HONE_DATA_TEST] ? split[HONE_DATA_TEST] : carve;
}

/* ---------------------------------------------------------------- names and entries */

/* Printable UTF-8 (no control characters, well-formed sequences), at most 255 bytes: a class
 * name goes into JSON, YAML and the packed file's class map. */
static int name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 255)
        return 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int len = *p < 0x80             ? 1
                  : (*p & 0xe0) == 0xc0 ? 2
                  : (*p & 0xf0) == 0xe0 ? 3
                  : (*p & 0xf8) == 0xf0 ? 4
                                        : 0;
        if (len == 0 || *p < 0x20 || *p == 0x7f || (len == 2 && *p < 0xc2) ||
            (len == 4 && *p > 0xf4))
            return 0;
        for (int k = 1; k < len; k++)
            if ((p[k] & 0xc0) != 0x80)
                return 0;
        p += len;
    }
    return 1;
}

/* A path for a message: bytes that are not printable ASCII shown as \xNN, so that the message
 * is valid UTF-8 whatever the file system holds. */
static const char *shown(const char *path, char *buf, size_t n)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)path; *p && o + 5 < n; p++) {
        if (*p >= 0x20 && *p < 0x7f)
            buf[o++] = (char)*p;
        else
            o += (size_t)snprintf(buf + o, n - o, "\\x%02x", *p);
    }
    buf[o] = 0;
    return buf;
}

static int path_fail(char *err, size_t errlen, int code, const char *path, const char *why)
{
    char b[1024];
    return data__fail(err, errlen, code, "%s: %s", shown(path, b, sizeof b), why);
}

enum { ENT_DIR, ENT_FILE };

/* What path is, following a symlink only when it resolves inside the root. */
static int entry_kind(const hone_data_folder *f, const char *path, int *kind, char *err,
                      size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return path_fail(err, errlen, HONE_EIO, path, strerror(errno));
    if (S_ISLNK(st.st_mode)) {
        char real[PATH_MAX];
        size_t n = strlen(f->real);
        if (!realpath(path, real))
            return path_fail(err, errlen, HONE_EPARSE, path,
                             errno == ELOOP ? "symlink loop" : "symlink to nothing");
        if (!(strncmp(real, f->real, n) == 0 && (real[n] == '/' || real[n] == 0)) &&
            strcmp(f->real, "/") != 0)
            return path_fail(err, errlen, HONE_EPARSE, path,
                             "symlink resolves outside the dataset's folder");
        if (stat(real, &st) != 0)
            return path_fail(err, errlen, HONE_EIO, path, strerror(errno));
    }
    if (S_ISDIR(st.st_mode))
        *kind = ENT_DIR;
    else if (S_ISREG(st.st_mode))
        *kind = ENT_FILE;
    else
        return path_fail(err, errlen, HONE_EPARSE, path, "neither a regular file nor a folder");
    return HONE_OK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in dir (not starting with '.'), sorted; *n of them, each malloc'd. */
static int list_dir(const char *dir, char ***names, size_t *n, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    *names = NULL;
    *n = 0;
    if (!d)
        return path_fail(err, errlen, errno == ENOENT ? HONE_ENOENT : HONE_EIO, dir,
                         strerror(errno));
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            *names = hone_xrealloc(*names, cap * sizeof(char *));
        }
        (*names)[(*n)++] = hone_xstrdup(e->d_name);
    }
    closedir(d);
    if (*n)
        qsort(*names, *n, sizeof(char *), cmp_str);
    return HONE_OK;
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static char *join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = hone_xmalloc(n);
    snprintf(p, n, "%s/%s", a, b);
    return p;
}

/* 1: an image by extension; -1: an image format Hone does not read; 0: not an image. */
static int image_ext(const char *name)
{
    static const char *const yes[] = {"png", "jpg", "jpeg"};
    static const char *const no[] = {"bmp", "gif", "tif", "tiff", "webp", "pgm",
                                     "ppm", "pbm", "pnm", "heic", "heif", "avif"};
    const char *dot = strrchr(name, '.');
    if (!dot)
        return 0;
    for (size_t i = 0; i < HONE_ARRAY_LEN(yes); i++)
        if (!strcasecmp(dot + 1, yes[i]))
            return 1;
    for (size_t i = 0; i < HONE_ARRAY_LEN(no); i++)
        if (!strcasecmp(dot + 1, no[i]))
            return -1;
    return 0;
}

static void skip_file(hone_data_folder *f, const char *path)
{
    f->st.skipped++;
    if (!f->skipped_example)
        f->skipped_example = hone_xstrdup(path);
}

/* ---------------------------------------------------------------- the walk */

/* One class folder of a split: its images, in name order. */
static int walk_class(hone_data_folder *f, const char *dir, int split, int cls, char *err,
                      size_t errlen)
{
    char **names;
    size_t n;
    int rc = list_dir(dir, &names, &n, err, errlen);
    size_t found = 0;
    for (size_t i = 0; rc == HONE_OK && i < n; i++) {
        char *p = join(dir, names[i]);
        int kind;
        if ((rc = entry_kind(f, p, &kind, err, errlen)) < 0) {
        } else if (kind == ENT_DIR) {
            rc = path_fail(err, errlen, HONE_EPARSE, p,
                           "a folder inside a class folder (images must sit directly in it)");
        } else if (image_ext(names[i]) < 0) {
            rc = path_fail(err, errlen, HONE_ENOTSUP, p,
                           "image format unsupported (Hone reads PNG and JPEG)");
        } else if (image_ext(names[i]) == 0) {
            skip_file(f, p);
        } else {
            if (f->nimg == f->capimg) {
                f->capimg = f->capimg ? f->capimg * 2 : 1024;
                f->img = hone_xrealloc(f->img, f->capimg * sizeof(image_ent));
            }
            f->img[f->nimg++] = (image_ent){p, split, cls};
            p = NULL;
            found++;
        }
        free(p);
    }
    free_names(names, n);
    if (rc == HONE_OK && found == 0)
        rc = path_fail(err, errlen, HONE_EPARSE, dir, "class folder holds no images");
    if (rc == HONE_OK)
        f->counts[split][cls] = found;
    return rc;
}

/* The class folders of one split folder. The train split (or the only one) defines the classes;
 * the others must name exactly the same. */
static int walk_split(hone_data_folder *f, const char *dir, int split, char *err, size_t errlen)
{
    char **names, **cls = NULL;
    size_t n, ncls = 0;
    int rc = list_dir(dir, &names, &n, err, errlen);
    if (rc < 0)
        return rc;
    cls = hone_xcalloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; rc == HONE_OK && i < n; i++) {
        char *p = join(dir, names[i]);
        int kind;
        if ((rc = entry_kind(f, p, &kind, err, errlen)) < 0) {
        } else if (kind == ENT_FILE) {
            skip_file(f, p);
        } else if (!name_ok(names[i])) {
            rc = path_fail(err, errlen, HONE_EPARSE, p,
                           "class name is not printable UTF-8 of at most 255 bytes");
        } else {
            cls[ncls++] = names[i];
        }
        free(p);
    }
    char shown_dir[1024];
    shown(dir, shown_dir, sizeof shown_dir);
    if (rc == HONE_OK && ncls == 0)
        rc = data__fail(err, errlen, HONE_EPARSE,
                        "%s: no class folders (want %s/<class>/<image>%s)", shown_dir, shown_dir,
                        f->split_layout ? "" : ", or train/ and val/ splits of that form");
    if (rc == HONE_OK && ncls > HONE_DATA_MAX_CLASSES)
        rc = data__fail(err, errlen, HONE_ELIMIT, "%s: %zu classes, more than %d", shown_dir, ncls,
                        HONE_DATA_MAX_CLASSES);
    if (rc == HONE_OK && split == HONE_DATA_TRAIN) {
        f->nclasses = (int)ncls;
        f->classes = hone_xcalloc(ncls, sizeof(char *));
        for (size_t i = 0; i < ncls; i++)
            f->classes[i] = hone_xstrdup(cls[i]);
    } else if (rc == HONE_OK) { /* both sorted: walk them together */
        size_t a = 0, b = 0;
        while (rc == HONE_OK && (a < (size_t)f->nclasses || b < ncls)) {
            int c = a == (size_t)f->nclasses ? 1 : b == ncls ? -1 : strcmp(f->classes[a], cls[b]);
            char nb[600];
            if (c < 0)
                rc = data__fail(err, errlen, HONE_EPARSE,
                                "%s: class %s of train/ is missing here (the splits must hold "
                                "the same classes)",
                                shown_dir, shown(f->classes[a], nb, sizeof nb));
            else if (c > 0)
                rc = data__fail(err, errlen, HONE_EPARSE,
                                "%s/%s: class not in train/ (the splits must hold the same "
                                "classes)",
                                shown_dir, shown(cls[b], nb, sizeof nb));
            a += c <= 0;
            b += c >= 0;
        }
    }
    if (rc == HONE_OK) {
        f->counts[split] = hone_xcalloc(ncls, sizeof(size_t));
        for (size_t i = 0; rc == HONE_OK && i < ncls; i++) {
            char *p = join(dir, cls[i]);
            rc = walk_class(f, p, split, (int)i, err, errlen);
            free(p);
        }
    }
    free(cls);
    free_names(names, n);
    return rc;
}

/* The root of the split layout: train/, val/, test/ and plain files (skipped), nothing else. */
static int check_split_root(hone_data_folder *f, char *err, size_t errlen)
{
    char **names;
    size_t n;
    int rc = list_dir(f->root, &names, &n, err, errlen);
    for (size_t i = 0; rc == HONE_OK && i < n; i++) {
        char *p = join(f->root, names[i]);
        int kind;
        if ((rc = entry_kind(f, p, &kind, err, errlen)) < 0) {
        } else if (kind == ENT_FILE) {
            skip_file(f, p);
        } else if (strcmp(names[i], "train") && strcmp(names[i], "val") &&
                   strcmp(names[i], "test")) {
            rc = path_fail(err, errlen, HONE_EPARSE, p,
                           "unexpected folder beside train/ (the split layout holds train/, "
                           "val/ and test/ only)");
        }
        free(p);
    }
    free_names(names, n);
    return rc;
}

/* Every image's header (or pixels), and the stats. */
static int check_images(hone_data_folder *f, const hone_data_folder_opts *o, char *err,
                        size_t errlen)
{
    hone_data_folder_stats *st = &f->st;
    st->min_width = st->min_height = INT_MAX;
    for (size_t i = 0; i < f->nimg; i++) {
        hone_data_image_info in;
        int rc;
        /* read beneath the root: a file replaced by a link out since the walk is refused */
        const char *p = f->img[i].path;
        if (o && o->decode) {
            hone_data_image *img;
            rc = data__image_probe_in(f->root, p, o->limits, &in, err, errlen);
            if (rc == HONE_OK)
                rc = data__image_read_in(f->root, p, 0, o->limits, &img, err, errlen);
            if (rc == HONE_OK)
                hone_data_image_free(img);
        } else {
            rc = data__image_probe_in(f->root, p, o ? o->limits : NULL, &in, err, errlen);
        }
        if (rc < 0)
            return rc;
        st->split_images[f->img[i].split]++;
        st->png += in.format == HONE_DATA_FORMAT_PNG;
        st->jpeg += in.format == HONE_DATA_FORMAT_JPEG;
        st->grey += in.channels == 1;
        st->colour += in.channels == 3;
        st->min_width = in.width < st->min_width ? in.width : st->min_width;
        st->min_height = in.height < st->min_height ? in.height : st->min_height;
        st->max_width = in.width > st->max_width ? in.width : st->max_width;
        st->max_height = in.height > st->max_height ? in.height : st->max_height;
    }
    st->images = f->nimg;
    return HONE_OK;
}

int hone_data_folder_open(const char *root, const hone_data_folder_opts *opts,
                          hone_data_folder **out, char *err, size_t errlen)
{
    *out = NULL;
    struct stat st;
    if (stat(root, &st) != 0)
        return path_fail(err, errlen, errno == ENOENT ? HONE_ENOENT : HONE_EIO, root,
                         strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return path_fail(err, errlen, HONE_EPARSE, root, "not a folder");
    hone_data_folder *f = hone_xcalloc(1, sizeof(*f));
    f->root = hone_xstrdup(root);
    int rc = HONE_OK;
    if (!realpath(root, f->real)) {
        rc = path_fail(err, errlen, HONE_EIO, root, strerror(errno));
        goto fail;
    }
    char *train = join(root, "train");
    int kind;
    f->split_layout = stat(train, &st) == 0 && S_ISDIR(st.st_mode);
    if (!f->split_layout) {
        rc = walk_split(f, f->root, HONE_DATA_TRAIN, err, errlen);
    } else if ((rc = entry_kind(f, train, &kind, err, errlen)) == HONE_OK &&
               (rc = check_split_root(f, err, errlen)) == HONE_OK) {
        rc = walk_split(f, train, HONE_DATA_TRAIN, err, errlen);
        for (int s = HONE_DATA_VAL; rc == HONE_OK && s < HONE_DATA_NSPLITS; s++) {
            char *p = join(root, split_names[s]);
            if (stat(p, &st) == 0 && (rc = entry_kind(f, p, &kind, err, errlen)) == HONE_OK) {
                if (kind != ENT_DIR)
                    rc = path_fail(err, errlen, HONE_EPARSE, p, "not a folder");
                else
                    rc = walk_split(f, p, s, err, errlen);
            }
            free(p);
        }
    }
    free(train);
    if (rc == HONE_OK)
        rc = check_images(f, opts, err, errlen);
    if (rc < 0)
        goto fail;
    f->st.split_layout = f->split_layout;
    f->st.classes = f->nclasses;
    *out = f;
    return HONE_OK;
fail:
    hone_data_folder_free(f);
    return rc;
}

const char *data__folder_root(const hone_data_folder *f)
{
    return f->root;
}

void hone_data_folder_free(hone_data_folder *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->nimg; i++)
        free(f->img[i].path);
    free(f->img);
    for (int i = 0; i < f->nclasses; i++)
        free(f->classes[i]);
    free(f->classes);
    for (int s = 0; s < HONE_DATA_NSPLITS; s++)
        free(f->counts[s]);
    free(f->skipped_example);
    free(f->root);
    free(f);
}

void hone_data_folder_get_stats(const hone_data_folder *f, hone_data_folder_stats *st)
{
    *st = f->st;
}

const char *hone_data_folder_class_name(const hone_data_folder *f, int i)
{
    return i >= 0 && i < f->nclasses ? f->classes[i] : NULL;
}

size_t hone_data_folder_class_images(const hone_data_folder *f, int split, int cls)
{
    if (split < 0 || split >= HONE_DATA_NSPLITS || !f->counts[split] || cls < 0 ||
        cls >= f->nclasses)
        return 0;
    return f->counts[split][cls];
}

const char *hone_data_folder_skipped_example(const hone_data_folder *f)
{
    return f->skipped_example;
}

const char *hone_data_folder_image(const hone_data_folder *f, size_t i, int *split, int *cls)
{
    if (i >= f->nimg)
        return NULL;
    if (split)
        *split = f->img[i].split;
    if (cls)
        *cls = f->img[i].cls;
    return f->img[i].path;
}
