/* train/actions.c: what hone-train does with a trained model besides training it: --evaluate
 * (loss, accuracy, per-class accuracy and the confusion matrix on the spec's test part; for
 * detectnet_v2 the mAP and per-class AP at IoU 0.5, and COCO's AP@[.5:.95], AP50, AP75 and AP
 * by size) and
 * --infer (a folder of images, decoded and resized through data/, labelled one JSON line each;
 * walked and read beneath the folder's descriptor, no symbolic link in it followed; a detector's
 * boxes also as COCO results JSON).
 * Both open the model through hone_trainer_open_model, so they run on the CPU or the GPU as
 * training does. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "path_beneath.h"
#include "train.h"

#define INFER_BATCH 256

/* 2 when spec's data is not the one model_dir's model was trained on (its spec.yaml), else 1;
 * for another image folder, *s gets the model's input size and channels where it has 0. */
static int data_mode(const char *model_dir, hone_train_spec *s)
{
    char path[1100], e[256];
    hone_train_spec own;
    hone_train_spec_defaults(&own);
    snprintf(path, sizeof(path), "%s/spec.yaml", model_dir);
    if (hone_train_spec_load_file(&own, path, e, sizeof(e)) < 0)
        return 1; /* then the model does not open either, and says why */
    if (!strcmp(own.data.format, s->data.format) && !strcmp(own.data.path, s->data.path))
        return 1;
    snprintf(path, sizeof(path), "%s/model.json", model_dir);
    json_t *m = json_load_file(path, 0, NULL);
    int c = (int)json_integer_value(json_object_get(m, "channels"));
    int h = (int)json_integer_value(json_object_get(m, "height"));
    json_decref(m);
    if (!strcmp(s->data.format, "image_folder") || hone_spec_format_detect(s->data.format)) {
        char kv[64];
        if (s->model.input_size == 0 && h > 0) {
            snprintf(kv, sizeof(kv), "model.input_size=%d", h);
            hone_train_spec_set(s, kv, e, sizeof(e)); /* refused: the size check names it */
        }
        if (s->data.channels == 0 && (c == 1 || c == 3)) {
            snprintf(kv, sizeof(kv), "data.channels=%d", c);
            hone_train_spec_set(s, kv, e, sizeof(e));
        }
    }
    return 2;
}

/* --evaluate of a detectnet_v2 model: mAP and per-class AP on the test part (train.h). */
static int evaluate_detect(hone_trainer *t, FILE *out, char *err, size_t errlen)
{
    int c, h, w, k, n = 0;
    hone_trainer_shape(t, &c, &h, &w, &k);
    double loss, map, *ap = hone_xcalloc((size_t)k, sizeof(double));
    int *ngt = hone_xcalloc((size_t)k, sizeof(int));
    hone_det_coco_stats coco;
    int rc = hone_trainer_test_map(t, &n, &loss, &map, ap, ngt, &coco);
    if (rc < 0) {
        snprintf(err, errlen, "evaluation: %s", hone_strerror(rc));
        goto fail;
    }
    if (n == 0) {
        snprintf(err, errlen, "data: no test images to evaluate on");
        rc = HONE_EINVAL;
        goto fail;
    }
    json_t *names = json_array(), *aps = json_array(), *gts = json_array();
    for (int i = 0; i < k; i++) {
        const char *name = hone_trainer_class_name(t, i);
        char num[16];
        snprintf(num, sizeof(num), "%d", i);
        json_array_append_new(names, json_string(name ? name : num));
        json_array_append_new(aps, ap[i] >= 0 ? json_real(ap[i]) : json_null());
        json_array_append_new(gts, json_integer(ngt[i]));
    }
    json_t *j = json_pack("{s:s, s:i, s:o, s:o, s:o, s:o, s:o}", "event", "evaluate", "images", n,
                          "loss", isfinite(loss) ? json_real(loss) : json_null(), "map",
                          isfinite(map) ? json_real(map) : json_null(), "classes", names, "ap", aps,
                          "gt_boxes", gts);
    /* COCO's figures beside the mAP at IoU 0.5 (detect.h); null where undefined */
    const struct {
        const char *key;
        double v;
    } cf[] = {{"coco_ap", coco.ap},
              {"coco_ap50", coco.ap50},
              {"coco_ap75", coco.ap75},
              {"coco_ap_small", coco.ap_small},
              {"coco_ap_medium", coco.ap_medium},
              {"coco_ap_large", coco.ap_large}};
    for (size_t i = 0; j && i < sizeof(cf) / sizeof(cf[0]); i++)
        json_object_set_new(j, cf[i].key, cf[i].v >= 0 ? json_real(cf[i].v) : json_null());
    char *line = j ? json_dumps(j, JSON_COMPACT) : NULL;
    if (!line || fprintf(out, "%s\n", line) < 0 || fflush(out) != 0) {
        snprintf(err, errlen, "writing the result failed");
        rc = HONE_EIO;
    }
    free(line);
    json_decref(j);
fail:
    free(ap);
    free(ngt);
    return rc;
}

int hone_train_evaluate(const hone_train_opts *o, const char *model_dir, FILE *out, char *err,
                        size_t errlen)
{
    hone_trainer *t = NULL;
    int32_t *pred = NULL, *label = NULL;
    long *cm = NULL;
    json_t *j = NULL;
    int n = 0, c, h, w, k;
    double loss, acc;
    hone_train_spec spec = *o->spec;
    hone_train_opts eo = *o;
    eo.spec = &spec;
    int mode = data_mode(model_dir, &spec);
    int rc = hone_trainer_open_model(&eo, model_dir, mode, &t, err, errlen);
    if (rc < 0)
        goto fail;
    hone_trainer_shape(t, &c, &h, &w, &k);
    if (!strcmp(spec.network, "detectnet_v2")) {
        rc = evaluate_detect(t, out, err, errlen);
        goto fail;
    }
    if ((rc = hone_trainer_test(t, &loss, &acc)) < 0 ||
        (rc = hone_trainer_test_predictions(t, &pred, &label, &n)) < 0) {
        snprintf(err, errlen, "evaluation: %s", hone_strerror(rc));
        goto fail;
    }
    if (n == 0) {
        snprintf(err, errlen, "data: no test images to evaluate on");
        rc = HONE_EINVAL;
        goto fail;
    }
    cm = hone_xcalloc((size_t)k * k, sizeof(long));
    for (int i = 0; i < n; i++)
        if (label[i] >= 0 && label[i] < k)
            cm[(size_t)label[i] * k + pred[i]]++;
    json_t *names = json_array(), *per = json_array(), *mat = json_array();
    for (int i = 0; i < k; i++) {
        const char *name = hone_trainer_class_name(t, i);
        char num[16];
        snprintf(num, sizeof(num), "%d", i);
        json_array_append_new(names, json_string(name ? name : num));
        json_t *row = json_array();
        long total = 0;
        for (int p = 0; p < k; p++) {
            total += cm[(size_t)i * k + p];
            json_array_append_new(row, json_integer(cm[(size_t)i * k + p]));
        }
        json_array_append_new(mat, row);
        json_array_append_new(per, total ? json_real((double)cm[(size_t)i * k + i] / total)
                                         : json_null());
    }
    j = json_pack("{s:s, s:i, s:o, s:o, s:o, s:o, s:o}", "event", "evaluate", "images", n, "loss",
                  isfinite(loss) ? json_real(loss) : json_null(), "accuracy",
                  isfinite(acc) ? json_real(acc) : json_null(), "classes", names,
                  "per_class_accuracy", per, "confusion_matrix", mat);
    char *line = j ? json_dumps(j, JSON_COMPACT) : NULL;
    if (!line || fprintf(out, "%s\n", line) < 0 || fflush(out) != 0) {
        snprintf(err, errlen, "writing the result failed");
        rc = HONE_EIO;
    }
    free(line);
fail:
    json_decref(j);
    free(cm);
    free(pred);
    free(label);
    hone_trainer_free(t);
    return rc;
}

typedef struct {
    char **v;
    size_t n, cap;
} list;

static void list_add(list *l, const char *s)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = hone_xrealloc(l->v, l->cap * sizeof(char *));
    }
    l->v[l->n++] = hone_xstrdup(s);
}

static void list_free(list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

/* The walk of an inference folder: its regular files, in name order, depth first, dot files left
 * out. A symbolic link is skipped with a log line and never followed, wherever it points: the
 * folder's own images are what a user asked to label (the worker's downloaded folders are hard
 * links, which are files), and a link out of it would label (and log the first bytes of) files
 * that are not the user's to read. */
typedef struct infer_walk {
    list *files;
    FILE *log;
    const char *folder;
} infer_walk;

static int infer_visit(void *ud, int dirfd, const char *name, const char *rel,
                       const struct stat *st)
{
    infer_walk *k = ud;
    (void)dirfd, (void)name;
    if (S_ISLNK(st->st_mode))
        fprintf(k->log, "hone-train: skipped %s/%s: a symbolic link (not followed)\n", k->folder,
                rel);
    else if (S_ISREG(st->st_mode))
        list_add(k->files, rel);
    return 0;
}

/* Where a detector's boxes go as COCO results (hone_train_infer_coco): the stream, the category
 * id of each class, the next image's id and whether an object is written yet. */
typedef struct infer_coco {
    FILE *f;
    int *cat; /* [classes] */
    int next_image, any;
} infer_coco;

/* model.json's "coco_category_ids" when it holds one positive integer per class, else the class
 * indices. */
static int *coco_category_ids(const char *model_dir, int classes)
{
    char path[1100];
    int *cat = hone_xcalloc((size_t)classes, sizeof(int));
    for (int i = 0; i < classes; i++)
        cat[i] = i;
    snprintf(path, sizeof(path), "%s/model.json", model_dir);
    json_t *m = json_load_file(path, 0, NULL);
    json_t *ids = json_object_get(m, "coco_category_ids");
    int ok = json_is_array(ids) && json_array_size(ids) == (size_t)classes;
    for (int i = 0; ok && i < classes; i++) {
        json_t *v = json_array_get(ids, (size_t)i);
        ok = json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) <= INT32_MAX;
    }
    for (int i = 0; ok && i < classes; i++)
        cat[i] = (int)json_integer_value(json_array_get(ids, (size_t)i));
    json_decref(m);
    return cat;
}

/* One box as a COCO result object ([x, y, w, h] of the clipped box in the image's pixels). */
static int coco_put(infer_coco *cc, int image, int cls, double score, double x1, double y1,
                    double x2, double y2)
{
    if (!cc || !cc->f)
        return 0;
    int rc = fprintf(cc->f,
                     "%s\n{\"image_id\":%d,\"category_id\":%d,\"bbox\":[%.4f,%.4f,%.4f,%.4f],"
                     "\"score\":%.6g}",
                     cc->any ? "," : "", image, cc->cat[cls], x1, y1, x2 - x1, y2 - y1, score);
    cc->any = 1;
    return rc < 0 ? HONE_EIO : 0;
}

/* detectnet_v2: the boxes of files[0, n) whose pixels are in x, scaled back to each image's own
 * size (iw[i] x ih[i]; the model saw it stretched to its input) and clipped to it, one JSON
 * line an image: {"file",
 * "boxes": [{"class", "class_index", "score", "x1", "y1", "x2", "y2"}], "kitti": the same boxes as
 * KITTI label lines (type, truncation 0, occlusion 0, alpha 0, the box, 3-D fields 0, score)}. */
static int detect_batch(hone_trainer *t, const list *files, int n, const uint8_t *x, const int *iw,
                        const int *ih, FILE *out, infer_coco *cc, char *err, size_t errlen)
{
    int c, h, w, k;
    hone_trainer_shape(t, &c, &h, &w, &k);
    hone_det_cand **boxes = hone_xcalloc((size_t)n, sizeof(*boxes));
    int *counts = hone_xcalloc((size_t)n, sizeof(int));
    int rc = hone_trainer_detect(t, x, n, boxes, counts);
    if (rc < 0)
        snprintf(err, errlen, "inference: %s", hone_strerror(rc));
    for (int i = 0; i < n && rc == 0; i++) {
        json_t *arr = json_array();
        char *kitti = NULL;
        size_t klen = 0;
        FILE *kf = open_memstream(&kitti, &klen);
        double sx = (double)iw[i] / w, sy = (double)ih[i] / h;
        for (int b = 0; b < counts[i]; b++) {
            const hone_det_cand *d = &boxes[i][b];
            const char *name = hone_trainer_class_name(t, d->cls);
            char num[16];
            snprintf(num, sizeof(num), "%d", d->cls);
            double x1 = fmin(fmax(d->box.x1 * sx, 0), iw[i]),
                   y1 = fmin(fmax(d->box.y1 * sy, 0), ih[i]);
            double x2 = fmin(fmax(d->box.x2 * sx, 0), iw[i]),
                   y2 = fmin(fmax(d->box.y2 * sy, 0), ih[i]);
            if (!(x2 > x1 && y2 > y1)) /* wholly outside the image */
                continue;
            json_array_append_new(arr, json_pack("{s:s, s:i, s:f, s:f, s:f, s:f, s:f}", "class",
                                                 name ? name : num, "class_index", d->cls, "score",
                                                 (double)d->score, "x1", x1, "y1", y1, "x2", x2,
                                                 "y2", y2));
            if (coco_put(cc, cc ? cc->next_image : 0, d->cls, d->score, x1, y1, x2, y2) < 0)
                rc = HONE_EIO;
            if (kf)
                fprintf(kf,
                        "%s 0.00 0 0.00 %.2f %.2f %.2f %.2f 0.00 0.00 0.00 0.00 0.00 0.00 0.00 "
                        "%.4f\n",
                        name ? name : num, x1, y1, x2, y2, (double)d->score);
        }
        if (kf)
            fclose(kf);
        if (cc)
            cc->next_image++;
        json_t *j = json_pack("{s:s, s:o, s:s}", "file", files->v[i], "boxes", arr, "kitti",
                              kitti ? kitti : "");
        free(kitti);
        char *line = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        if (!line || fprintf(out, "%s\n", line) < 0) {
            snprintf(err, errlen, "writing the labels failed");
            rc = HONE_EIO;
        }
        free(line);
    }
    for (int i = 0; i < n; i++)
        free(boxes[i]);
    free(boxes);
    free(counts);
    if (rc == 0 && fflush(out) != 0)
        rc = HONE_EIO;
    if (rc == HONE_EIO)
        snprintf(err, errlen, "writing the labels failed");
    return rc;
}

/* Labels files[first, first + n) whose pixels are in x (ok[i]: decoded). */
static int label_batch(hone_trainer *t, const list *files, size_t first, int n, const uint8_t *x,
                       float *probs, FILE *out, char *err, size_t errlen)
{
    int c, h, w, k;
    hone_trainer_shape(t, &c, &h, &w, &k);
    int rc = hone_trainer_predict(t, x, n, probs);
    if (rc < 0) {
        snprintf(err, errlen, "inference: %s", hone_strerror(rc));
        return rc;
    }
    for (int i = 0; i < n; i++) {
        const float *p = probs + (size_t)i * k;
        int best = 0;
        for (int j = 1; j < k; j++)
            if (p[j] > p[best])
                best = j;
        const char *name = hone_trainer_class_name(t, best);
        char num[16];
        snprintf(num, sizeof(num), "%d", best);
        json_t *j = json_pack("{s:s, s:s, s:i, s:f}", "file", files->v[first + i], "class",
                              name ? name : num, "class_index", best, "score", (double)p[best]);
        char *line = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        if (!line || fprintf(out, "%s\n", line) < 0) {
            free(line);
            snprintf(err, errlen, "writing the labels failed");
            return HONE_EIO;
        }
        free(line);
    }
    return fflush(out) == 0 ? HONE_OK : HONE_EIO;
}

int hone_train_infer(const hone_train_opts *o, const char *model_dir, const char *folder, FILE *out,
                     int *images, char *err, size_t errlen)
{
    return hone_train_infer_coco(o, model_dir, folder, out, NULL, images, err, errlen);
}

int hone_train_infer_coco(const hone_train_opts *o, const char *model_dir, const char *folder,
                          FILE *out, FILE *coco, int *images, char *err, size_t errlen)
{
    infer_coco cc = {.f = coco}, *ccp = NULL;
    hone_trainer *t = NULL;
    list files = {0}, batch = {0};
    FILE *log = o->log ? o->log : stderr;
    int rootfd = -1;
    uint8_t *x = NULL;
    float *probs = NULL;
    int c, h, w, k, labelled = 0;
    int rc = hone_trainer_open_model(o, model_dir, 0, &t, err, errlen);
    if (rc < 0)
        goto fail;
    rootfd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    infer_walk walk = {.files = &files, .log = log, .folder = folder};
    if (rootfd < 0 || hone_beneath_walk(rootfd, 16, infer_visit, &walk) < 0) {
        snprintf(err, errlen, "%s: cannot read the folder", folder);
        rc = HONE_EIO;
        goto fail;
    }
    hone_trainer_shape(t, &c, &h, &w, &k);
    size_t row = (size_t)c * h * w;
    int detect = !strcmp(o->spec->network, "detectnet_v2"), iw[INFER_BATCH], ih[INFER_BATCH];
    if (detect && coco) {
        cc.cat = coco_category_ids(model_dir, k);
        ccp = &cc;
        if (fputc('[', coco) == EOF) {
            snprintf(err, errlen, "writing the COCO results failed");
            rc = HONE_EIO;
            goto fail;
        }
    }
    x = hone_xmalloc(row * INFER_BATCH);
    probs = hone_xmalloc(sizeof(float) * (size_t)k * INFER_BATCH);
    for (size_t i = 0; i < files.n; i++) {
        char path[8200], e[512];
        hone_data_image *img = NULL;
        int fd = -1;
        snprintf(path, sizeof(path), "%s/%s", folder, files.v[i]);
        /* opened beneath the folder, no link followed (one may have replaced the file since the
         * walk): nothing of a refused file is read */
        if (hone_beneath_open(rootfd, files.v[i], O_RDONLY | O_NONBLOCK, HONE_BENEATH_NO_LINKS,
                              &fd) != HONE_OK) {
            fprintf(log, "hone-train: skipped %s: %s\n", path,
                    errno == ELOOP || errno == EXDEV ? "a symbolic link (not followed)"
                                                     : strerror(errno));
            continue;
        }
        /* decoded at the model's channels and resized as hone_data_folder_pack does */
        int rd = hone_data_image_read_fd(fd, path, c, NULL, &img, e, sizeof(e));
        close(fd);
        if (rd < 0) {
            fprintf(log, "hone-train: skipped %s\n", e);
            continue;
        }
        hone_data_resize(img->pixels, img->width, img->height, c, x + row * batch.n, w, h);
        iw[batch.n] = img->width;
        ih[batch.n] = img->height;
        hone_data_image_free(img);
        list_add(&batch, files.v[i]);
        if (batch.n == INFER_BATCH) {
            rc = detect ? detect_batch(t, &batch, (int)batch.n, x, iw, ih, out, ccp, err, errlen)
                        : label_batch(t, &batch, 0, (int)batch.n, x, probs, out, err, errlen);
            if (rc < 0)
                goto fail;
            labelled += (int)batch.n;
            list_free(&batch);
            memset(&batch, 0, sizeof(batch));
        }
    }
    if (batch.n > 0) {
        rc = detect ? detect_batch(t, &batch, (int)batch.n, x, iw, ih, out, ccp, err, errlen)
                    : label_batch(t, &batch, 0, (int)batch.n, x, probs, out, err, errlen);
        if (rc < 0)
            goto fail;
        labelled += (int)batch.n;
    }
    if (labelled == 0) {
        snprintf(err, errlen, "%s: no image to label", folder);
        rc = HONE_EINVAL;
        goto fail;
    }
    if (ccp && (fputs("\n]\n", coco) == EOF || fflush(coco) != 0)) {
        snprintf(err, errlen, "writing the COCO results failed");
        rc = HONE_EIO;
        goto fail;
    }
    fprintf(log, "hone-train: labelled %d image%s of %s\n", labelled, labelled == 1 ? "" : "s",
            folder);
    if (images)
        *images = labelled;
    rc = HONE_OK;
fail:
    if (rootfd >= 0)
        close(rootfd);
    list_free(&files);
    list_free(&batch);
    free(x);
    free(probs);
    free(cc.cat);
    hone_trainer_free(t);
    return rc;
}
