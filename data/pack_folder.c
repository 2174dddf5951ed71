/* data/pack_folder.c: packing an image folder (hone_data_folder_pack) or a KITTI dataset with its
 * boxes (hone_data_kitti_pack): worker threads take the
 * next image index, decode, convert and resize it and put it into the pack writer at its place,
 * so the file's order is the folder's whatever the threads do. The calling thread reports
 * progress. The first failure stops every thread; the writer then removes its temp file. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "data_internal.h"

typedef struct job {
    const hone_data_folder *f; /* one of f and k */
    const hone_data_kitti *k;
    hone_data_pack_writer *w;
    const hone_data_pack_opts *o;
    int channels;
    uint64_t n;
    atomic_uint_fast64_t next, done;
    atomic_int failed;
    pthread_mutex_t mu; /* guards rc and err */
    int rc;
    char err[512];
} job;

static void job_fail(job *j, int rc, const char *msg)
{
    pthread_mutex_lock(&j->mu);
    if (!j->rc) {
        j->rc = rc;
        snprintf(j->err, sizeof j->err, "%s", msg);
    }
    pthread_mutex_unlock(&j->mu);
    atomic_store(&j->failed, 1);
}

/* A KITTI image's boxes mapped onto the packed size (plain resize: edges at 0 and the side map to
 * 0 and the new side), and its label: the class of its largest box (crowd and DontCare regions
 * aside), 0 when it has none. */
static int32_t kitti_boxes(const hone_data_box *b, size_t n, int iw, int ih, int w, int h,
                           hone_data_box *out)
{
    double sx = (double)w / iw, sy = (double)h / ih, best = -1;
    int32_t label = 0;
    for (size_t k = 0; k < n; k++) {
        double x1 = b[k].x1 * sx, y1 = b[k].y1 * sy, x2 = b[k].x2 * sx, y2 = b[k].y2 * sy;
        out[k] = (hone_data_box){b[k].cls, (float)x1, (float)y1, (float)(x2 > w ? w : x2),
                                 (float)(y2 > h ? h : y2)};
        double area = (x2 - x1) * (y2 - y1);
        if (b[k].cls >= 0 && area > best) {
            best = area;
            label = b[k].cls;
        }
    }
    return label;
}

static void *pack_worker(void *arg)
{
    job *j = arg;
    int w = j->o->width, h = j->o->height, c = j->channels;
    uint8_t *buf = hone_xmalloc((size_t)w * h * c);
    char err[512];
    for (;;) {
        uint64_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->n || atomic_load(&j->failed))
            break;
        int cls = 0, iw = 0, ih = 0;
        const hone_data_box *b = NULL;
        size_t nb = 0;
        const char *path = j->k ? hone_data_kitti_image(j->k, i, NULL, &iw, &ih, &b, &nb)
                                : hone_data_folder_image(j->f, i, NULL, &cls);
        hone_data_image *img = NULL;
        const char *root = j->k ? data__kitti_root(j->k) : data__folder_root(j->f);
        /* beneath the folder: a file replaced by a link out of it since the walk is refused */
        int rc = data__image_read_in(root, path, c, j->o->limits, &img, err, sizeof err);
        if (rc == HONE_OK && j->k && (img->width != iw || img->height != ih))
            rc = data__fail(err, sizeof err, HONE_EPARSE, "%s: changed since it was checked", path);
        if (rc == HONE_OK) {
            hone_data_resize(img->pixels, img->width, img->height, c, buf, w, h);
            if (j->k) {
                hone_data_box *mapped = hone_xmalloc((nb ? nb : 1) * sizeof(hone_data_box));
                cls = kitti_boxes(b, nb, iw, ih, w, h, mapped);
                rc = hone_data_pack_writer_put_boxes(j->w, i, mapped, nb, err, sizeof err);
                free(mapped);
                if (rc == HONE_OK) /* for areas in the image's own pixels (COCO's sizes) */
                    rc = hone_data_pack_writer_put_source_size(j->w, i, iw, ih, err, sizeof err);
            }
        }
        if (img)
            hone_data_image_free(img);
        if (rc == HONE_OK)
            rc = hone_data_pack_writer_put(j->w, i, buf, cls, err, sizeof err);
        if (rc < 0) {
            job_fail(j, rc, err);
            break;
        }
        atomic_fetch_add(&j->done, 1);
    }
    free(buf);
    return NULL;
}

static int pack_run(const hone_data_folder *f, const hone_data_kitti *k,
                    const hone_data_pack_opts *o, const char *path, hone_data_pack_info *info,
                    const char **names, char *err, size_t errlen);

/* The packed file a walked folder or KITTI set makes at o's size: its counts, and its channels
 * (o's, or RGB when any image is colour). HONE_EINVAL naming path for a size or channel count out
 * of range. */
static int walked_info(const hone_data_pack_opts *o, const char *path, size_t images, int classes,
                       size_t colour, const size_t *split_images, hone_data_pack_info *info,
                       char *err, size_t errlen)
{
    if (o->width < 1 || o->height < 1 || o->width > 65535 || o->height > 65535 ||
        (o->channels != 0 && o->channels != 1 && o->channels != 3))
        return data__fail(err, errlen, HONE_EINVAL, "%s: size %dx%d, %d channels: out of range",
                          path, o->width, o->height, o->channels);
    *info = (hone_data_pack_info){.n = images,
                                  .height = o->height,
                                  .width = o->width,
                                  .channels = o->channels ? o->channels
                                              : colour    ? 3
                                                          : 1,
                                  .classes = classes};
    for (int s = 0; s < HONE_DATA_NSPLITS; s++)
        info->split[s] = split_images[s];
    return HONE_OK;
}

int hone_data_folder_pack(const hone_data_folder *f, const char *path, const hone_data_pack_opts *o,
                          char *err, size_t errlen)
{
    hone_data_folder_stats st;
    hone_data_pack_info info;
    hone_data_folder_get_stats(f, &st);
    int rc =
        walked_info(o, path, st.images, st.classes, st.colour, st.split_images, &info, err, errlen);
    if (rc)
        return rc;
    const char **names = hone_xcalloc((size_t)st.classes, sizeof(char *));
    for (int i = 0; i < st.classes; i++)
        names[i] = hone_data_folder_class_name(f, i);
    return pack_run(f, NULL, o, path, &info, names, err, errlen);
}

int hone_data_kitti_pack(const hone_data_kitti *k, const char *path, const hone_data_pack_opts *o,
                         char *err, size_t errlen)
{
    hone_data_kitti_stats st;
    hone_data_pack_info info;
    hone_data_kitti_get_stats(k, &st);
    int rc =
        walked_info(o, path, st.images, st.classes, st.colour, st.split_images, &info, err, errlen);
    if (rc)
        return rc;
    info.has_boxes = 1;
    const char **names = hone_xcalloc((size_t)st.classes, sizeof(char *));
    for (int i = 0; i < st.classes; i++)
        names[i] = hone_data_kitti_class_name(k, i);
    return pack_run(NULL, k, o, path, &info, names, err, errlen);
}

/* One of f and k, packed into path: the writer, the threads, the progress, the finish. Takes
 * names (freed here). */
static int pack_run(const hone_data_folder *f, const hone_data_kitti *k,
                    const hone_data_pack_opts *o, const char *path, hone_data_pack_info *info,
                    const char **names, char *err, size_t errlen)
{
    job j = {.f = f, .k = k, .o = o, .channels = info->channels, .n = info->n};
    int rc = hone_data_pack_writer_new(path, info, names, &j.w, err, errlen);
    free(names);
    if (rc < 0)
        return rc;
    if (k && info->classes > 0 && hone_data_kitti_category_id(k, 0) != -1) { /* a COCO set */
        int64_t *ids = hone_xmalloc(sizeof(int64_t) * (size_t)info->classes);
        for (int i = 0; i < info->classes; i++)
            ids[i] = hone_data_kitti_category_id(k, i);
        hone_data_pack_writer_set_category_ids(j.w, ids);
        free(ids);
    }
    pthread_mutex_init(&j.mu, NULL);
    int nt = o->threads > 0 ? o->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    nt = nt < 1 ? 1 : nt > 256 ? 256 : nt;
    if ((uint64_t)nt > j.n)
        nt = (int)j.n;
    pthread_t *th = hone_xcalloc((size_t)nt, sizeof(pthread_t));
    int started = 0;
    for (; started < nt; started++)
        if (pthread_create(&th[started], NULL, pack_worker, &j) != 0)
            break;
    if (started == 0)
        pack_worker(&j); /* no thread to be had: do it here */
    for (uint64_t last = UINT64_MAX; started > 0;) {
        uint64_t d = atomic_load(&j.done);
        if (o->progress && d != last)
            o->progress(d, j.n, o->user);
        last = d;
        if (d >= j.n || atomic_load(&j.failed))
            break;
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    free(th);
    if (j.rc)
        rc = data__fail(err, errlen, j.rc, "%s", j.err);
    else
        rc = hone_data_pack_writer_finish(j.w, err, errlen);
    if (rc == HONE_OK && o->progress && started == 0)
        o->progress(j.n, j.n, o->user);
    hone_data_pack_writer_free(j.w);
    pthread_mutex_destroy(&j.mu);
    return rc;
}
