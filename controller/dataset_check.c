/* Dataset paths and files: a path is accepted only when it resolves (realpath, symlinks followed)
 * inside a configured data root and names no '..' component; IDX files (magic, dims, counts,
 * streamed), image folders (every image's header read) and KITTI folders (every label line
 * parsed) are checked through data/.
 * Reads files; writes nothing. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data.h"
#include "dataset_check.h"
#include "guess.h"
#include "hone.h"

static int inside(const char *root, const char *p)
{
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/')
        return 1;
    return strncmp(root, p, n) == 0 && (p[n] == '/' || p[n] == '\0');
}

int ctl_path_confine(char *const *roots, int nroots, const char *path, char *resolved, size_t n,
                     char *msg, size_t msglen)
{
    char real[PATH_MAX];
    if (!path || path[0] != '/') {
        snprintf(msg, msglen, "must be an absolute server-side path");
        return HONE_EINVAL;
    }
    for (const char *p = path; (p = strstr(p, "..")); p += 2)
        if ((p == path || p[-1] == '/') && (p[2] == '/' || p[2] == '\0')) {
            snprintf(msg, msglen, "must not contain '..'");
            return HONE_EINVAL;
        }
    if (!realpath(path, real)) {
        snprintf(msg, msglen, "%s: %s", path, strerror(errno));
        return HONE_ENOENT;
    }
    for (int i = 0; i < nroots; i++) {
        char rroot[PATH_MAX];
        if (!realpath(roots[i], rroot))
            continue;
        if (inside(rroot, real)) {
            if (strlen(real) >= n) {
                snprintf(msg, msglen, "path too long");
                return HONE_EINVAL;
            }
            strcpy(resolved, real);
            return HONE_OK;
        }
    }
    /* the roots are listed: a user must know them to name a path at all (they are the admin's
     * configuration, not a secret), and the fix is one of the two ways to add one */
    char list[300];
    size_t o = 0;
    list[0] = '\0';
    for (int i = 0; i < nroots && o + 4 < sizeof list; i++) {
        char rroot[PATH_MAX];
        const char *r = realpath(roots[i], rroot) ? rroot : roots[i];
        int w = snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", r);
        if (w < 0 || (size_t)w >= sizeof list - o) {
            snprintf(list + (sizeof list - 5), 5, "...");
            break;
        }
        o += (size_t)w;
    }
    snprintf(msg, msglen,
             "%.150s resolves to %.150s, outside the controller's data roots (%s): move the folder "
             "into one, or add a root (the controller's config key data_roots; with a local stack, "
             "restart it with hone local --data-root DIR), or upload the folder (hone dataset "
             "upload)",
             path, real, list);
    return HONE_EINVAL;
}

int ctl_path_private(const char *data_dir, const char *resolved, char *msg, size_t msglen)
{
    char rdir[PATH_MAX];
    if (!realpath(data_dir, rdir))
        return HONE_OK;
    /* an allow-list: nothing of the data dir is a user's to name (the store, every user's
     * uploads, packed files, artifacts, workers' and logs' folders, whatever comes later), nor a
     * folder above it (the data dir would be below it) */
    int above = inside(resolved, rdir);
    if (!above && !inside(rdir, resolved))
        return HONE_OK;
    snprintf(msg, msglen,
             "%s %s the controller's data dir %s (the controller's own folders: its store, every "
             "user's uploads, packed files and artifacts): users reach it only through uploads "
             "(POST /api/v1/datasets:upload)",
             resolved, above ? "holds" : "is inside", rdir);
    return HONE_EINVAL;
}

/* Finds base or base.gz inside dir, confined to dir itself (a symlinked file may not leave). */
static int idx_find(const char *dir, const char *base, char *out, size_t n)
{
    const char *sfx[] = {"", ".gz"};
    char rdir[PATH_MAX];
    if (!realpath(dir, rdir)) /* dir may be a pinned /proc/self/fd/N: compare resolved paths */
        return HONE_ENOENT;
    for (int i = 0; i < 2; i++) {
        char p[PATH_MAX], real[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s%s", dir, base, sfx[i]);
        if (realpath(p, real) && inside(rdir, real)) {
            snprintf(out, n, "%s", p); /* through dir: a pinned folder stays pinned */
            return HONE_OK;
        }
    }
    return HONE_ENOENT;
}

static int idx_split(const char *dir, const char *split, uint32_t *count, uint32_t shape[2],
                     int *classes, char *msg, size_t msglen)
{
    char img[PATH_MAX], lab[PATH_MAX], b[64];
    uint32_t di[3], dl[3];
    snprintf(b, sizeof b, "%s-images-idx3-ubyte", split);
    if (idx_find(dir, b, img, sizeof img)) {
        snprintf(msg, msglen, "%s/%s[.gz] not found", dir, b);
        return HONE_ENOENT;
    }
    snprintf(b, sizeof b, "%s-labels-idx1-ubyte", split);
    if (idx_find(dir, b, lab, sizeof lab)) {
        snprintf(msg, msglen, "%s/%s[.gz] not found", dir, b);
        return HONE_ENOENT;
    }
    int maxl = -1;
    int rc = hone_data_idx_stat_file(img, 3, di, NULL, msg, msglen);
    if (!rc)
        rc = hone_data_idx_stat_file(lab, 1, dl, &maxl, msg, msglen);
    if (rc)
        return rc == HONE_ENOENT ? rc : HONE_EPARSE;
    if (di[0] != dl[0]) {
        snprintf(msg, msglen, "%s split: %u images but %u labels", split, di[0], dl[0]);
        return HONE_EPARSE;
    }
    *count = di[0];
    shape[0] = di[1];
    shape[1] = di[2];
    if (maxl + 1 > *classes)
        *classes = maxl + 1;
    return HONE_OK;
}

/* The split counts a dataset reports: those training uses (hone_data_split_used: without a test
 * split a tenth of the training images are its test images), and that carve by itself. */
static void used_splits(const size_t split_images[HONE_DATA_NSPLITS], json_int_t out[4])
{
    uint64_t split[HONE_DATA_NSPLITS], used[HONE_DATA_NSPLITS];
    for (int s = 0; s < HONE_DATA_NSPLITS; s++)
        split[s] = split_images[s];
    hone_data_split_used(split, used);
    for (int s = 0; s < HONE_DATA_NSPLITS; s++)
        out[s] = (json_int_t)used[s];
    out[3] = (json_int_t)(split[HONE_DATA_TRAIN] - used[HONE_DATA_TRAIN]);
}

/* image_folder: data/'s checks (data/data.h: the layouts, the class map, every image's header
 * read, the refusals naming the file), and the stats the dataset row keeps. */
static int folder_inspect(const char *dir, json_t **stats, char *msg, size_t msglen)
{
    hone_data_folder *f;
    int rc = hone_data_folder_open(dir, NULL, &f, msg, msglen);
    if (rc < 0)
        return rc;
    hone_data_folder_stats st;
    hone_data_folder_get_stats(f, &st);
    json_int_t used[4];
    used_splits(st.split_images, used);
    json_t *o = json_pack("{s:I,s:I,s:I,s:I,s:i,s:s,s:{s:I,s:I},s:{s:I,s:I},s:[i,i],s:[i,i],s:I}",
                          "train_images", used[HONE_DATA_TRAIN], "val_images", used[HONE_DATA_VAL],
                          "test_images", used[HONE_DATA_TEST], "test_from_train", used[3],
                          "classes", st.classes, "layout", st.split_layout ? "splits" : "flat",
                          "formats", "png", (json_int_t)st.png, "jpeg", (json_int_t)st.jpeg,
                          "channels", "grey", (json_int_t)st.grey, "rgb", (json_int_t)st.colour,
                          "min_size", st.min_width, st.min_height, "max_size", st.max_width,
                          st.max_height, "skipped_files", (json_int_t)st.skipped);
    /* the class map and per-class counts, while they stay small enough for a dataset row */
    if (st.classes <= 1000) {
        json_t *names = json_array(), *counts = json_object();
        for (int s = 0; s < HONE_DATA_NSPLITS; s++) {
            if (!st.split_images[s])
                continue;
            json_t *per = json_array();
            for (int i = 0; i < st.classes; i++)
                json_array_append_new(
                    per, json_integer((json_int_t)hone_data_folder_class_images(f, s, i)));
            json_object_set_new(counts, hone_data_split_name(s), per);
        }
        for (int i = 0; i < st.classes; i++)
            json_array_append_new(names, json_string(hone_data_folder_class_name(f, i)));
        json_object_set_new(o, "class_names", names);
        json_object_set_new(o, "class_images", counts);
    }
    hone_data_folder_free(f);
    *stats = o;
    return HONE_OK;
}

/* The stats of a detection set (KITTI or COCO): images per split, boxes per class, sizes. */
static json_t *detect_stats(const hone_data_kitti *k)
{
    hone_data_kitti_stats st;
    hone_data_kitti_get_stats(k, &st);
    json_int_t used[4];
    used_splits(st.split_images, used);
    json_t *o2 = json_pack(
        "{s:I,s:I,s:I,s:I,s:I,s:i,s:I,s:I,s:s,s:{s:I,s:I},s:{s:I,s:I},s:[i,i],s:[i,i],s:I}",
        "images", (json_int_t)st.images, "train_images", used[HONE_DATA_TRAIN], "val_images",
        used[HONE_DATA_VAL], "test_images", used[HONE_DATA_TEST], "test_from_train", used[3],
        "classes", st.classes, "boxes", (json_int_t)st.boxes, "dontcare_boxes",
        (json_int_t)st.dontcare, "layout", st.split_layout ? "splits" : "flat", "formats", "png",
        (json_int_t)st.png, "jpeg", (json_int_t)st.jpeg, "channels", "grey", (json_int_t)st.grey,
        "rgb", (json_int_t)st.colour, "min_size", st.min_width, st.min_height, "max_size",
        st.max_width, st.max_height, "skipped_files", (json_int_t)st.skipped);
    json_t *names_j = json_array(), *boxes_j = json_array();
    for (int i = 0; i < st.classes; i++) {
        json_array_append_new(names_j, json_string(hone_data_kitti_class_name(k, i)));
        json_array_append_new(boxes_j, json_integer((json_int_t)hone_data_kitti_class_boxes(k, i)));
    }
    json_object_set_new(o2, "class_names", names_j);
    json_object_set_new(o2, "class_boxes", boxes_j);
    return o2;
}

/* kitti: data/'s checks (data/data.h: images/ and labels/ paired, every label line parsed, every
 * problem listed with file and line: the message names the first ones), and the stats: images
 * per split, boxes per class, image sizes. classes (a JSON array of names, or NULL: the classes
 * found) is the dataset's class map. */
int ctl_dataset_inspect_kitti(const char *dir, const json_t *classes, json_t **stats, char *msg,
                              size_t msglen)
{
    *stats = NULL;
    size_t n = json_array_size(classes);
    const char **names = hone_xcalloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        names[i] = json_string_value(json_array_get(classes, i));
    hone_data_kitti_opts o = {.classes = classes ? names : NULL, .nclasses = (int)n};
    hone_data_kitti *k;
    int rc = hone_data_kitti_open(dir, &o, &k, msg, msglen);
    free(names);
    if (rc < 0)
        return rc == HONE_EINVAL ? HONE_EINVAL : rc == HONE_ENOENT ? rc : HONE_EPARSE;
    *stats = detect_stats(k);
    hone_data_kitti_free(k);
    return HONE_OK;
}

/* coco: data/'s checks (data/data.h: every JSON file parsed whole, ids, images on disk, boxes,
 * categories: every problem named with its file and id) and the stats of a KITTI set, plus
 * category_ids (class i's COCO id: classes are the categories by id) and crowd_boxes. */
int ctl_dataset_inspect_coco(const char *dir, json_t **stats, char *msg, size_t msglen)
{
    *stats = NULL;
    hone_data_kitti *k;
    int rc = hone_data_coco_open(dir, NULL, &k, msg, msglen);
    if (rc < 0)
        return rc == HONE_ENOENT ? rc : HONE_EPARSE;
    json_t *o = detect_stats(k), *ids = json_array();
    hone_data_kitti_stats st;
    hone_data_kitti_get_stats(k, &st);
    for (int i = 0; i < st.classes; i++)
        json_array_append_new(ids, json_integer((json_int_t)hone_data_kitti_category_id(k, i)));
    json_object_set_new(o, "category_ids", ids);
    json_object_set(o, "crowd_boxes", json_object_get(o, "dontcare_boxes"));
    hone_data_kitti_free(k);
    *stats = o;
    return HONE_OK;
}

int ctl_dataset_inspect(const char *format, const char *dir, json_t **stats, char *msg,
                        size_t msglen)
{
    *stats = NULL;
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
        snprintf(msg, msglen, "%s is not a folder", dir);
        return HONE_ENOENT;
    }
    if (!strcmp(format, "idx")) {
        uint32_t ntrain, ntest, shape[2], tshape[2];
        int classes = 0;
        int rc = idx_split(dir, "train", &ntrain, shape, &classes, msg, msglen);
        if (!rc)
            rc = idx_split(dir, "t10k", &ntest, tshape, &classes, msg, msglen);
        if (rc)
            return rc;
        if (shape[0] != tshape[0] || shape[1] != tshape[1]) {
            snprintf(msg, msglen, "train images are %ux%u but test images %ux%u", shape[0],
                     shape[1], tshape[0], tshape[1]);
            return HONE_EPARSE;
        }
        *stats = json_pack("{s:i,s:i,s:i,s:[i,i,i]}", "train_images", (json_int_t)ntrain,
                           "test_images", (json_int_t)ntest, "classes", classes, "image_shape", 1,
                           (json_int_t)shape[0], (json_int_t)shape[1]);
        return HONE_OK;
    }
    if (!strcmp(format, "image_folder"))
        return folder_inspect(dir, stats, msg, msglen);
    if (!strcmp(format, "kitti"))
        return ctl_dataset_inspect_kitti(dir, NULL, stats, msg, msglen);
    if (!strcmp(format, "coco"))
        return ctl_dataset_inspect_coco(dir, stats, msg, msglen);
    snprintf(msg, msglen, "format %s cannot be checked yet", format);
    return HONE_ENOTSUP;
}

int ctl_dataset_guess(const char *dir, const char *type_given, const char **format,
                      const char **type, char *msg, size_t msglen)
{
    char seen[400];
    int rc = hone_data_guess_format(dir, format, seen, sizeof seen);
    if (rc) {
        snprintf(msg, msglen,
                 "no format given and none could be guessed from the folder's shape: %s; give "
                 "format (--format idx, image_folder, kitti or coco)",
                 seen);
        return HONE_EINVAL;
    }
    const char *t = hone_data_format_type(*format);
    if (type_given && strcmp(type_given, t) != 0) {
        snprintf(msg, msglen,
                 "no format given: the folder looks like %s (%s), which does not fit type %s; "
                 "give format, or leave type out",
                 *format, t, type_given);
        return HONE_EINVAL;
    }
    *type = t;
    return HONE_OK;
}
