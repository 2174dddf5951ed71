/* data/coco.c: the COCO instances JSON parser (data.h's rules) over memory: images, annotations
 * and categories checked whole, every problem named with its file and id, categories numbered
 * densely by id. The JSON is hostile: its size and the memory it would take once parsed are
 * bounded before jansson sees it (coco_memory.c). Reads no files (fuzzed alone). */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "data_internal.h"

#define P(...) data__kitti_problem(pr, __VA_ARGS__)

/* an integer member (ids); 0 when absent or not an integer */
static int int_of(const json_t *o, const char *key, int64_t *v)
{
    json_t *j = json_object_get(o, key);
    if (!json_is_integer(j))
        return 0;
    *v = (int64_t)json_integer_value(j);
    return 1;
}

/* How a JSON value is named in a problem: by id, or by position when its id is bad. */
static void who(char *b, size_t n, const char *kind, const char *array, const json_t *o, size_t i)
{
    int64_t id;
    if (json_is_object(o) && int_of(o, "id", &id))
        snprintf(b, n, "%s %" PRId64, kind, id);
    else
        snprintf(b, n, "%s[%zu]", array, i);
}

typedef struct cat {
    int64_t id;
    const char *name;
} cat;

typedef struct img {
    int64_t id;
    const char *file;
    int width, height;
    size_t nbox, at; /* boxes counted, then where its next box goes */
} img;

typedef struct ann {
    int64_t id;
    size_t image; /* index into the images by id */
    hone_data_box box;
} ann;

static int cmp_cat_id(const void *a, const void *b)
{
    int64_t x = ((const cat *)a)->id, y = ((const cat *)b)->id;
    return x < y ? -1 : x > y;
}

static int cmp_cat_name(const void *a, const void *b)
{
    return strcasecmp(((const cat *)a)->name, ((const cat *)b)->name);
}

static int cmp_img_id(const void *a, const void *b)
{
    int64_t x = ((const img *)a)->id, y = ((const img *)b)->id;
    return x < y ? -1 : x > y;
}

static int cmp_img_file(const void *a, const void *b)
{
    return strcmp((*(img *const *)a)->file, (*(img *const *)b)->file);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* a relative path: printable UTF-8, no leading '/', no ".." part */
static const char *file_name_problem(const char *s)
{
    size_t n = strlen(s);
    if (!data__printable_utf8((const unsigned char *)s, n, HONE_DATA_COCO_MAX_FILE_NAME))
        return "file_name is not printable UTF-8 of 1..1024 bytes";
    if (s[0] == '/')
        return "file_name is an absolute path (want one relative to the image folder)";
    for (const char *p = s; p; p = strchr(p, '/')) {
        if (*p == '/')
            p++;
        if (!strncmp(p, "..", 2) && (p[2] == '/' || !p[2]))
            return "file_name holds a '..' part";
    }
    return NULL;
}

/* The categories: checked, sorted by id into *out (names borrowed from the JSON). */
static cat *parse_cats(const json_t *arr, const char *name, int *ncat, hone_data_kitti_problems *pr)
{
    size_t n = json_array_size(arr), k = 0;
    cat *c = hone_xmalloc(sizeof *c * (n ? n : 1));
    char w[64];
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(arr, i);
        who(w, sizeof w, "category", "categories", o, i);
        int64_t id;
        const char *nm = json_string_value(json_object_get(o, "name"));
        if (!json_is_object(o))
            P("%s: %s: not an object", name, w);
        else if (!int_of(o, "id", &id))
            P("%s: %s: id is missing or not an integer", name, w);
        else if (!nm || !data__printable_utf8((const unsigned char *)nm, strlen(nm), 255) ||
                 json_string_length(json_object_get(o, "name")) != strlen(nm))
            P("%s: %s: name is missing or not printable UTF-8 of 1..255 bytes", name, w);
        else
            c[k++] = (cat){id, nm};
    }
    if (n > HONE_DATA_MAX_CLASSES)
        P("%s: %zu categories, more than %d", name, n, HONE_DATA_MAX_CLASSES);
    if (n == 0)
        P("%s: no categories (want at least one {\"id\", \"name\"})", name);
    qsort(c, k, sizeof *c, cmp_cat_name);
    for (size_t i = 1; i < k; i++)
        if (!strcasecmp(c[i].name, c[i - 1].name))
            P("%s: category %" PRId64 ": name %s is also category %" PRId64
              "'s (names are unique regardless of case)",
              name, c[i].id, c[i].name, c[i - 1].id);
    qsort(c, k, sizeof *c, cmp_cat_id);
    for (size_t i = 1; i < k; i++)
        if (c[i].id == c[i - 1].id)
            P("%s: category %" PRId64 ": id listed twice", name, c[i].id);
    *ncat = (int)k;
    return c;
}

static img *parse_images(const json_t *arr, const char *name, size_t *nimg,
                         hone_data_kitti_problems *pr)
{
    size_t n = json_array_size(arr), k = 0;
    if (n > HONE_DATA_COCO_MAX_IMAGES) {
        P("%s: %zu images, more than %d", name, n, HONE_DATA_COCO_MAX_IMAGES);
        *nimg = 0;
        return hone_xmalloc(sizeof(img));
    }
    img *v = hone_xmalloc(sizeof *v * (n ? n : 1));
    char w[64];
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(arr, i);
        who(w, sizeof w, "image", "images", o, i);
        int64_t id, iw, ih;
        const json_t *fj = json_object_get(o, "file_name");
        const char *f = json_string_value(fj), *why = NULL;
        if (!json_is_object(o)) {
            P("%s: %s: not an object", name, w);
        } else if (!int_of(o, "id", &id)) {
            P("%s: %s: id is missing or not an integer", name, w);
        } else if (!f) {
            P("%s: %s: file_name is missing or not a string", name, w);
        } else if (json_string_length(fj) != strlen(f) || (why = file_name_problem(f))) {
            P("%s: %s: %s", name, w,
              json_string_length(fj) != strlen(f) ? "file_name holds a NUL" : why);
        } else if (!int_of(o, "width", &iw) || !int_of(o, "height", &ih) || iw < 1 || ih < 1 ||
                   iw > 65535 || ih > 65535) {
            P("%s: %s (%s): width and height must be integers 1..65535", name, w, f);
        } else {
            v[k++] = (img){id, f, (int)iw, (int)ih, 0, 0};
        }
    }
    qsort(v, k, sizeof *v, cmp_img_id);
    for (size_t i = 1; i < k; i++)
        if (v[i].id == v[i - 1].id)
            P("%s: image %" PRId64 ": id listed twice (%s and %s)", name, v[i].id, v[i - 1].file,
              v[i].file);
    img **byf = hone_xmalloc(sizeof *byf * (k ? k : 1));
    for (size_t i = 0; i < k; i++)
        byf[i] = &v[i];
    qsort(byf, k, sizeof *byf, cmp_img_file);
    for (size_t i = 1; i < k; i++)
        if (!strcmp(byf[i]->file, byf[i - 1]->file))
            P("%s: image %" PRId64 ": file_name %s is also image %" PRId64 "'s", name, byf[i]->id,
              byf[i]->file, byf[i - 1]->id);
    free(byf);
    *nimg = k;
    return v;
}

/* One annotation into *a, or a problem named by w. */
static int parse_ann(const json_t *o, const char *name, const char *w, const img *im, size_t nim,
                     const cat *c, int nc, ann *a, hone_data_kitti_problems *pr)
{
    int64_t id, iid, cid, crowd = 0;
    const json_t *bb = json_object_get(o, "bbox"), *cj = json_object_get(o, "iscrowd");
    if (!json_is_object(o)) {
        P("%s: %s: not an object", name, w);
        return -1;
    }
    if (!int_of(o, "id", &id)) {
        P("%s: %s: id is missing or not an integer", name, w);
        return -1;
    }
    if (!int_of(o, "image_id", &iid)) {
        P("%s: %s: image_id is missing or not an integer", name, w);
        return -1;
    }
    img key = {.id = iid};
    const img *m = nim ? bsearch(&key, im, nim, sizeof *im, cmp_img_id) : NULL;
    if (!m) {
        P("%s: %s: image_id %" PRId64 " is not an image of this file", name, w, iid);
        return -1;
    }
    if (!int_of(o, "category_id", &cid)) {
        P("%s: %s: category_id is missing or not an integer", name, w);
        return -1;
    }
    cat ck = {.id = cid};
    const cat *k = nc ? bsearch(&ck, c, (size_t)nc, sizeof *c, cmp_cat_id) : NULL;
    if (!k) {
        P("%s: %s: category_id %" PRId64 " is not a category of this file", name, w, cid);
        return -1;
    }
    if (cj && !(json_is_integer(cj) && (crowd = json_integer_value(cj)) >= 0 && crowd <= 1)) {
        P("%s: %s: iscrowd must be 0 or 1", name, w);
        return -1;
    }
    double v[4];
    int good = json_is_array(bb) && json_array_size(bb) == 4;
    for (int i = 0; good && i < 4; i++) {
        const json_t *x = json_array_get(bb, (size_t)i);
        good = json_is_number(x) && isfinite(v[i] = json_number_value(x));
    }
    if (!good) {
        P("%s: %s: bbox must be [x, y, width, height], 4 finite numbers", name, w);
        return -1;
    }
    if (!(v[2] > 0) || !(v[3] > 0)) {
        P("%s: %s: bbox [%g, %g, %g, %g] is empty (want width > 0 and height > 0)", name, w, v[0],
          v[1], v[2], v[3]);
        return -1;
    }
    const double s = HONE_DATA_COCO_EDGE_SLACK;
    double x2 = v[0] + v[2], y2 = v[1] + v[3];
    if (v[0] < -s || v[1] < -s || x2 > m->width + s || y2 > m->height + s || v[0] >= m->width ||
        v[1] >= m->height || x2 <= 0 || y2 <= 0) {
        P("%s: %s: bbox [%g, %g, %g, %g] lies outside image %" PRId64 " (%dx%d)", name, w, v[0],
          v[1], v[2], v[3], iid, m->width, m->height);
        return -1;
    }
    a->id = id;
    a->image = (size_t)(m - im);
    a->box = (hone_data_box){crowd ? HONE_DATA_CROWD((int32_t)(k - c)) : (int32_t)(k - c),
                             (float)fmax(v[0], 0.0), (float)fmax(v[1], 0.0),
                             (float)fmin(x2, m->width), (float)fmin(y2, m->height)};
    if (!(a->box.x2 > a->box.x1) || !(a->box.y2 > a->box.y1)) { /* a float-rounded sliver */
        P("%s: %s: bbox [%g, %g, %g, %g] is empty once in float", name, w, v[0], v[1], v[2], v[3]);
        return -1;
    }
    return 0;
}

void hone_data_coco_file_free(hone_data_coco_file *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->nimages; i++)
        free(f->images[i].file_name);
    free(f->images);
    free(f->boxes);
    free(f->ann_ids);
    for (int i = 0; i < f->ncats; i++)
        free(f->cat_names[i]);
    free(f->cat_names);
    free(f->cat_ids);
    free(f);
}

/* Every checked image (by file_name) with its annotations (file order) into a plain result. */
static hone_data_coco_file *result(img *im, size_t nim, const ann *an, size_t nan, const cat *c,
                                   int nc)
{
    hone_data_coco_file *f = hone_xcalloc(1, sizeof *f);
    img **byf = hone_xmalloc(sizeof *byf * (nim ? nim : 1));
    for (size_t i = 0; i < nim; i++)
        byf[i] = &im[i];
    qsort(byf, nim, sizeof *byf, cmp_img_file);
    f->images = hone_xcalloc(nim ? nim : 1, sizeof *f->images);
    f->nimages = nim;
    size_t at = 0;
    for (size_t i = 0; i < nim; i++) {
        img *m = byf[i];
        f->images[i] =
            (hone_data_coco_image){m->id, hone_xstrdup(m->file), m->width, m->height, at, m->nbox};
        m->at = at;
        at += m->nbox;
    }
    f->boxes = hone_xmalloc(sizeof *f->boxes * (nan ? nan : 1));
    f->ann_ids = hone_xmalloc(sizeof *f->ann_ids * (nan ? nan : 1));
    f->nboxes = nan;
    for (size_t j = 0; j < nan; j++) {
        size_t to = im[an[j].image].at++;
        f->boxes[to] = an[j].box;
        f->ann_ids[to] = an[j].id;
        f->crowd += HONE_DATA_IS_CROWD(an[j].box.cls);
    }
    f->ncats = nc;
    f->cat_ids = hone_xmalloc(sizeof *f->cat_ids * (size_t)(nc ? nc : 1));
    f->cat_names = hone_xmalloc(sizeof *f->cat_names * (size_t)(nc ? nc : 1));
    for (int i = 0; i < nc; i++) {
        f->cat_ids[i] = c[i].id;
        f->cat_names[i] = hone_xstrdup(c[i].name);
    }
    free(byf);
    return f;
}

int data__coco_parse(const uint8_t *buf, size_t len, const char *name, int partial,
                     size_t max_memory, hone_data_coco_file **out, hone_data_kitti_problems *probs)
{
    hone_data_kitti_problems own = {0}, *pr = probs ? probs : &own;
    size_t before = pr->count;
    *out = NULL;
    json_t *root = NULL;
    cat *c = NULL;
    img *im = NULL;
    ann *an = NULL;
    int64_t *ids = NULL;
    size_t nim = 0, nan = 0;
    int nc = 0;
    if (len > HONE_DATA_COCO_MAX_JSON_BYTES) {
        P("%s: %zu bytes, more than the %zu a COCO file may hold", name, len,
          (size_t)HONE_DATA_COCO_MAX_JSON_BYTES);
        goto done;
    }
    size_t mem = hone_data_coco_memory(buf, len, NULL);
    if (mem > max_memory) {
        P("%s: parsing it takes up to %zu MiB (bounded from its text), more than the %zu MiB "
          "allowed",
          name, (mem + (1 << 20) - 1) >> 20, max_memory >> 20);
        goto done;
    }
    json_error_t je;
    root = json_loadb((const char *)buf, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        P("%s: not valid JSON: %s (line %d, column %d)", name, je.text, je.line, je.column);
        goto done;
    }
    if (!json_is_object(root)) {
        P("%s: not a JSON object (want {\"images\": [...], \"annotations\": [...], "
          "\"categories\": [...]})",
          name);
        goto done;
    }
    const char *keys[] = {"images", "annotations", "categories"};
    int miss = 0;
    for (int i = 0; i < 3; i++)
        if (!json_is_array(json_object_get(root, keys[i]))) {
            P("%s: \"%s\" is missing or not an array", name, keys[i]);
            miss = 1;
        }
    if (miss)
        goto done;
    c = parse_cats(json_object_get(root, "categories"), name, &nc, pr);
    im = parse_images(json_object_get(root, "images"), name, &nim, pr);
    const json_t *aj = json_object_get(root, "annotations");
    size_t n = json_array_size(aj);
    if (n > HONE_DATA_COCO_MAX_ANNOTATIONS) {
        P("%s: %zu annotations, more than %d", name, n, HONE_DATA_COCO_MAX_ANNOTATIONS);
        goto done;
    }
    an = hone_xmalloc(sizeof *an * (n ? n : 1));
    ids = hone_xmalloc(sizeof *ids * (n ? n : 1));
    size_t nids = 0;
    char w[64];
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(aj, i);
        who(w, sizeof w, "annotation", "annotations", o, i);
        if (json_is_object(o) && int_of(o, "id", &ids[nids]))
            nids++;
        if (parse_ann(o, name, w, im, nim, c, nc, &an[nan], pr) == 0) {
            img *m = &im[an[nan].image];
            if (++m->nbox == HONE_DATA_KITTI_MAX_BOXES + 1)
                P("%s: image %" PRId64 " (%s): more than %d annotations", name, m->id, m->file,
                  HONE_DATA_KITTI_MAX_BOXES);
            nan++;
        }
    }
    qsort(ids, nids, sizeof *ids, cmp_i64);
    for (size_t i = 1; i < nids; i++)
        if (ids[i] == ids[i - 1] && (i == 1 || ids[i - 1] != ids[i - 2]))
            P("%s: annotation %" PRId64 ": id listed more than once", name, ids[i]);
    if (pr->count == before || partial)
        *out = result(im, nim, an, nan, c, nc);
done:
    free(ids);
    free(an);
    free(im);
    free(c);
    json_decref(root);
    hone_data_kitti_problems_clear(&own);
    return pr->count == before ? HONE_OK : HONE_EPARSE;
}

int hone_data_coco_parse(const uint8_t *buf, size_t len, const char *name,
                         hone_data_coco_file **out, hone_data_kitti_problems *probs)
{
    return data__coco_parse(buf, len, name, 0, HONE_DATA_COCO_MEMORY_DEFAULT, out, probs);
}
