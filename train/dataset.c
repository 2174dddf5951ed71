/* train/dataset.c: loads the spec's dataset as uint8 images into host memory (dataset.h says
 * where each part comes from): MNIST-family IDX files (plain or gzipped), or an image folder
 * through its packed file (data.packed, or packed here into a temp file that never outlives the
 * mapping), or a KITTI set the same way with its boxes and grid targets (detect_data.c). Checks
 * that the spec fits the data (spec/'s size limits, data.val_size, the packed
 * file's shape) before the parts are filled, and measures the training part's per-channel mean
 * and deviation. Never normalises: the trainer does that on the device, batch by batch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset.h"
static int open_idx(const char *dir, const char *stem, hone_data_idx **out, char *err,
                    size_t errlen)
{
    char path[1200];
    snprintf(path, sizeof(path), "%s/%s", dir, stem);
    int rc = hone_data_idx_read_file(path, out, err, errlen);
    if (rc != HONE_ENOENT)
        return rc;
    snprintf(path, sizeof(path), "%s/%s.gz", dir, stem);
    rc = hone_data_idx_read_file(path, out, err, errlen);
    if (rc == HONE_ENOENT && err)
        snprintf(err, errlen,
                 "data.path: %s/%s[.gz] not found (install dataset-fashion-mnist or set data.path)",
                 dir, stem);
    return rc;
}

/* Copies rows rows[0..n) (or from..from+n when rows is NULL) of pixels/labels into part. */
static void fill_part(const uint8_t *px, const int32_t *lab32, const uint8_t *lab8, size_t row,
                      const uint32_t *rows, size_t from, int n, data_part *p)
{
    p->n = n;
    p->x = hone_xmalloc(row * (size_t)(n ? n : 1));
    p->y = hone_xmalloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        size_t r = rows ? rows[i] : from + (size_t)i;
        memcpy(p->x + (size_t)i * row, px + r * row, row);
        p->y[i] = lab32 ? lab32[r] : lab8[r];
    }
}

static int check_pair(const hone_data_idx *im, const hone_data_idx *lb, const char *what, char *err,
                      size_t errlen)
{
    if (im->ndims != 3 || lb->ndims != 1 || im->dims[0] != lb->dims[0]) {
        snprintf(err, errlen, "data: %s images/labels shapes do not match (%d images, %d labels)",
                 what, im->dims[0], lb->dims[0]);
        return HONE_EPARSE;
    }
    return HONE_OK;
}

/* Per-channel mean and deviation of pixel/255 over the training part. */
static void measure(dataset *d)
{
    size_t c = (size_t)d->c, pixels = (size_t)d->train.n * d->h * d->w;
    for (size_t ch = 0; ch < c; ch++) {
        uint64_t hist[256] = {0};
        for (size_t i = 0; i < pixels; i++)
            hist[d->train.x[i * c + ch]]++;
        double s = 0, s2 = 0, n = pixels ? (double)pixels : 1.0;
        for (int v = 0; v < 256; v++)
            s += (double)hist[v] * (v / 255.0);
        double mean = s / n;
        for (int v = 0; v < 256; v++)
            s2 += (double)hist[v] * (v / 255.0 - mean) * (v / 255.0 - mean);
        double sd = sqrt(s2 / n);
        d->mean[ch] = (float)mean;
        d->std[ch] = (float)(sd > 1e-6 ? sd : 1.0);
    }
}

static int load_idx(const hone_train_spec *spec, dataset *out, char *err, size_t errlen)
{
    hone_data_idx *tri = NULL, *trl = NULL, *tei = NULL, *tel = NULL;
    const char *dir = spec->data.path;
    int rc;
    if ((rc = open_idx(dir, "train-images-idx3-ubyte", &tri, err, errlen)) < 0 ||
        (rc = open_idx(dir, "train-labels-idx1-ubyte", &trl, err, errlen)) < 0 ||
        (rc = open_idx(dir, "t10k-images-idx3-ubyte", &tei, err, errlen)) < 0 ||
        (rc = open_idx(dir, "t10k-labels-idx1-ubyte", &tel, err, errlen)) < 0)
        goto fail;
    if ((rc = check_pair(tri, trl, "training", err, errlen)) < 0 ||
        (rc = check_pair(tei, tel, "test", err, errlen)) < 0)
        goto fail;
    if (tri->dims[1] != tei->dims[1] || tri->dims[2] != tei->dims[2]) {
        snprintf(err, errlen, "data: training and test images differ in size");
        rc = HONE_EPARSE;
        goto fail;
    }
    int total = tri->dims[0], val = spec->data.val_size;
    int maxl = 0;
    for (size_t i = 0; i < trl->count; i++)
        maxl = trl->data[i] > maxl ? trl->data[i] : maxl;
    for (size_t i = 0; i < tel->count; i++)
        maxl = tel->data[i] > maxl ? tel->data[i] : maxl;
    /* the size limits and the validation split against this data, before anything is allocated:
     * the controller checked the same facts (its dataset stats) at create time */
    hone_spec_data facts = {total, tei->dims[0], 1, tri->dims[1], tri->dims[2], maxl + 1};
    char field[64];
    if (hone_spec_check(spec, &facts, field, sizeof field, err, errlen) != HONE_OK) {
        rc = HONE_ERANGE;
        goto fail;
    }
    int ntrain = total - val;
    if (spec->data.train_limit > 0 && spec->data.train_limit < ntrain)
        ntrain = spec->data.train_limit;
    int ntest = tei->dims[0];
    if (spec->data.test_limit > 0 && spec->data.test_limit < ntest)
        ntest = spec->data.test_limit;
    out->c = 1;
    out->h = tri->dims[1];
    out->w = tri->dims[2];
    out->classes = maxl + 1;
    size_t row = (size_t)out->h * out->w;
    fill_part(tri->data, NULL, trl->data, row, NULL, 0, ntrain, &out->train);
    fill_part(tri->data, NULL, trl->data, row, NULL, (size_t)(total - val), val, &out->val);
    fill_part(tei->data, NULL, tel->data, row, NULL, 0, ntest, &out->test);
    rc = HONE_OK;
fail:
    hone_data_idx_free(tri);
    hone_data_idx_free(trl);
    hone_data_idx_free(tei);
    hone_data_idx_free(tel);
    return rc;
}

/* ------------------------------------------------------------------ image folders */

typedef struct {
    uint64_t key;
    uint32_t i;
} pick_key;

static int pick_cmp(const void *a, const void *b)
{
    const pick_key *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* first, first+1, ..., first+n-1 in the random order of (DATASET_SPLIT_SEED, stream). */
static uint32_t *shuffled(uint32_t first, uint32_t n, uint64_t stream)
{
    pick_key *k = hone_xmalloc(sizeof(*k) * (n ? n : 1));
    for (uint32_t i = 0; i < n; i++) {
        k[i].key = mix64(DATASET_SPLIT_SEED ^ mix64(stream * 0x9E3779B97F4A7C15ULL + i));
        k[i].i = i;
    }
    qsort(k, n, sizeof(*k), pick_cmp);
    uint32_t *out = hone_xmalloc(sizeof(uint32_t) * (n ? n : 1));
    for (uint32_t i = 0; i < n; i++)
        out[i] = first + k[i].i;
    free(k);
    return out;
}

/* Packs the folder (or the KITTI set, kt) at data.path into a private temp folder, maps the
 * result and removes both: nothing is left behind, whatever happens. */
static int pack_folder(const hone_data_folder *f, const hone_data_kitti *kt,
                       const hone_data_pack_opts *po, hone_data_pack **out, char *err,
                       size_t errlen)
{
    const char *tmp = getenv("TMPDIR");
    char dir[1024], path[1100], e[512];
    snprintf(dir, sizeof dir, "%s/hone-train-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        snprintf(err, errlen, "data.path: cannot make a temp folder in %s to pack into",
                 tmp && *tmp ? tmp : "/tmp");
        return HONE_EIO;
    }
    snprintf(path, sizeof path, "%s/data.pack", dir);
    int rc = kt ? hone_data_kitti_pack(kt, path, po, e, sizeof e)
                : hone_data_folder_pack(f, path, po, e, sizeof e);
    if (rc == HONE_OK)
        rc = hone_data_pack_open(path, HONE_DATA_PACK_NO_VERIFY, out, e, sizeof e);
    if (rc < 0)
        snprintf(err, errlen, "data.path: %s", e);
    unlink(path);
    rmdir(dir);
    return rc;
}

/* What a walked folder (image folder or KITTI set) will pack into: its counts, and the spec's input
 * shape over its native channels (any colour image makes it RGB). */
static void walked_shape(const hone_train_spec *spec, hone_spec_data *facts, size_t colour,
                         size_t images, int classes, const size_t *split_images,
                         hone_data_pack_info *in)
{
    int c, h, w;
    facts->c = colour ? 3 : 1;
    hone_spec_input_shape(spec, facts, &c, &h, &w);
    in->n = images;
    in->classes = classes;
    in->channels = c;
    in->height = h;
    in->width = w;
    for (int s = 0; s < HONE_DATA_NSPLITS; s++)
        in->split[s] = split_images[s];
}

static int load_folder(const hone_train_spec *spec, int test_only, FILE *log, dataset *out,
                       char *err, size_t errlen)
{
    hone_data_folder *f = NULL;
    hone_data_kitti *kt = NULL;
    int kitti = hone_spec_format_detect(spec->data.format); /* kitti or coco: boxes */
    hone_data_pack *pk = NULL;
    uint32_t *pool = NULL, *test = NULL;
    char e[512];
    int rc, c, h, w;
    hone_spec_data facts = HONE_SPEC_DATA_UNKNOWN;
    hone_data_pack_info in;
    if (spec->data.packed[0]) {
        rc = hone_data_pack_open(spec->data.packed, 0, &pk, e, sizeof e);
        if (rc < 0) {
            snprintf(err, errlen, "data.packed: %s", e);
            goto fail;
        }
        hone_data_pack_get_info(pk, &in);
        if (kitti && !in.has_boxes) {
            snprintf(err, errlen, "data.packed: %s has no boxes (not a packed %s set)",
                     spec->data.packed, spec->data.format);
            rc = HONE_EINVAL;
            goto fail;
        }
        facts.c = in.channels;
        hone_spec_input_shape(spec, &facts, &c, &h, &w);
        if (in.channels != c || in.height != h || in.width != w) {
            snprintf(err, errlen,
                     "data.packed: %s holds %dx%d images with %d channel%s, the spec asks for "
                     "%dx%d with %d (model.input_size, data.channels)",
                     spec->data.packed, in.width, in.height, in.channels,
                     in.channels == 1 ? "" : "s", w, h, c);
            rc = HONE_EINVAL;
            goto fail;
        }
    } else if (kitti) {
        rc = !strcmp(spec->data.format, "coco")
                 ? hone_data_coco_open(spec->data.path, NULL, &kt, e, sizeof e)
                 : hone_data_kitti_open(spec->data.path, NULL, &kt, e, sizeof e);
        if (rc < 0) {
            snprintf(err, errlen, "data.path: %s", e);
            goto fail;
        }
        hone_data_kitti_stats st;
        hone_data_kitti_get_stats(kt, &st);
        walked_shape(spec, &facts, st.colour, st.images, st.classes, st.split_images, &in);
    } else {
        rc = hone_data_folder_open(spec->data.path, NULL, &f, e, sizeof e);
        if (rc < 0) {
            snprintf(err, errlen, "data.path: %s", e);
            goto fail;
        }
        hone_data_folder_stats st;
        hone_data_folder_get_stats(f, &st);
        walked_shape(spec, &facts, st.colour, st.images, st.classes, st.split_images, &in);
    }
    c = in.channels;
    h = in.height;
    w = in.width;
    if (in.n > (uint64_t)INT32_MAX) {
        snprintf(err, errlen, "data.path: %llu images, more than hone-train takes",
                 (unsigned long long)in.n);
        rc = HONE_ELIMIT;
        goto fail;
    }
    /* the parts' sizes (dataset.h), checked against the spec before any pixel is decoded */
    uint32_t ntr = (uint32_t)in.split[HONE_DATA_TRAIN], nv = (uint32_t)in.split[HONE_DATA_VAL];
    uint32_t nte = (uint32_t)in.split[HONE_DATA_TEST];
    uint64_t used[HONE_DATA_NSPLITS];
    hone_data_split_used(in.split, used);
    uint32_t after = (uint32_t)used[HONE_DATA_TRAIN], carve = ntr - after;
    hone_train_spec sv = *spec;
    if (nv)
        sv.data.val_size = (int)nv;
    facts.train_images = nv ? (long long)after + nv : (long long)after;
    facts.test_images = nte ? nte : carve;
    facts.c = c;
    facts.h = h;
    facts.w = w;
    facts.classes = in.classes;
    char field[64];
    if (test_only && in.n == 0) {
        snprintf(err, errlen, "data.path: no images");
        rc = HONE_EINVAL;
        goto fail;
    }
    if (!test_only && hone_spec_check(&sv, &facts, field, sizeof field, err, errlen) != HONE_OK) {
        rc = HONE_ERANGE;
        goto fail;
    }
    if (!pk) {
        fprintf(log, "hone-train: packing %llu images of %s at %dx%d, %d channel%s\n",
                (unsigned long long)in.n, spec->data.path, w, h, c, c == 1 ? "" : "s");
        hone_data_pack_opts po = {.width = w, .height = h, .channels = c, .threads = 0};
        if ((rc = pack_folder(f, kt, &po, &pk, err, errlen)) < 0)
            goto fail;
    }
    const uint8_t *px = hone_data_pack_pixels(pk);
    const int32_t *lab = hone_data_pack_labels(pk);
    size_t row = (size_t)c * h * w;
    out->detect = kitti;
    out->grid_h = kitti ? h / spec->detect.stride : 0;
    out->grid_w = kitti ? w / spec->detect.stride : 0;
    out->names = hone_xcalloc((size_t)in.classes, sizeof(char *));
    for (int i = 0; i < in.classes; i++) {
        const char *name = hone_data_pack_class_name(pk, i);
        out->names[i] = hone_xstrdup(name ? name : "");
    }
    const int64_t *cat = hone_data_pack_category_ids(pk);
    if (cat) { /* a COCO set: model.json names its categories for --infer's COCO results */
        out->category_ids = hone_xmalloc(sizeof(int64_t) * (size_t)in.classes);
        memcpy(out->category_ids, cat, sizeof(int64_t) * (size_t)in.classes);
    }
    if (test_only) { /* the test/ split, or else every image, in the pack's order */
        out->c = c;
        out->h = h;
        out->w = w;
        out->classes = in.classes;
        uint32_t first = nte ? ntr + nv : 0, n = nte ? nte : (uint32_t)in.n;
        if (spec->data.test_limit > 0 && (uint32_t)spec->data.test_limit < n)
            n = (uint32_t)spec->data.test_limit;
        fill_part(px, lab, NULL, row, NULL, first, (int)n, &out->test);
        if (kitti) {
            detect_part_boxes(pk, NULL, first, &out->test);
            rc = detect_part_targets(spec, in.classes, h, w, &out->test, err, errlen);
        } else {
            rc = HONE_OK;
        }
        goto fail; /* done: only the cleanup is left */
    }
    pool = shuffled(0, ntr, 0);
    test = nte ? shuffled(ntr + nv, nte, 1) : NULL;
    int nval = nv ? (int)nv : spec->data.val_size;
    int ntrain = (int)after - (nv ? 0 : nval);
    if (spec->data.train_limit > 0 && spec->data.train_limit < ntrain)
        ntrain = spec->data.train_limit;
    int ntest = nte ? (int)nte : (int)carve;
    if (spec->data.test_limit > 0 && spec->data.test_limit < ntest)
        ntest = spec->data.test_limit;
    out->c = c;
    out->h = h;
    out->w = w;
    out->classes = in.classes;
    fill_part(px, lab, NULL, row, test ? test : pool, 0, ntest, &out->test);
    if (nv)
        fill_part(px, lab, NULL, row, NULL, ntr, nval, &out->val);
    else
        fill_part(px, lab, NULL, row, pool + carve, 0, nval, &out->val);
    fill_part(px, lab, NULL, row, pool + carve + (nv ? 0 : nval), 0, ntrain, &out->train);
    rc = HONE_OK;
    if (kitti) { /* the same picks' boxes, then their targets */
        detect_part_boxes(pk, test ? test : pool, 0, &out->test);
        detect_part_boxes(pk, nv ? NULL : pool + carve, ntr, &out->val);
        detect_part_boxes(pk, pool + carve + (nv ? 0 : nval), 0, &out->train);
        data_part *parts[3] = {&out->train, &out->val, &out->test};
        for (int i = 0; i < 3 && rc == HONE_OK; i++)
            rc = detect_part_targets(spec, in.classes, h, w, parts[i], err, errlen);
    }
fail:
    free(pool);
    free(test);
    hone_data_pack_free(pk);
    hone_data_folder_free(f);
    hone_data_kitti_free(kt);
    return rc;
}

int dataset_load(const hone_train_spec *spec, int test_only, dataset *out, char *err, size_t errlen)
{
    return dataset_load_log(spec, test_only, stderr, out, err, errlen);
}

int dataset_load_log(const hone_train_spec *spec, int test_only, FILE *log, dataset *out, char *err,
                     size_t errlen)
{
    memset(out, 0, sizeof(*out));
    int rc =
        !strcmp(spec->data.format, "image_folder") || hone_spec_format_detect(spec->data.format)
            ? load_folder(spec, test_only, log, out, err, errlen)
            : load_idx(spec, out, err, errlen);
    if (rc < 0) {
        dataset_free(out);
        return rc;
    }
    measure(out);
    return HONE_OK;
}

void dataset_free(dataset *d)
{
    data_part *parts[3] = {&d->train, &d->val, &d->test};
    for (int p = 0; p < 3; p++) {
        free(parts[p]->x);
        free(parts[p]->y);
        parts[p]->x = NULL;
        parts[p]->y = NULL;
        detect_part_free(parts[p]);
    }
    for (int i = 0; d->names && i < d->classes; i++)
        free(d->names[i]);
    free(d->names);
    d->names = NULL;
    free(d->category_ids);
    d->category_ids = NULL;
}
