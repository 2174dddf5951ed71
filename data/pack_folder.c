/* data/pack_folder.c: packing an image folder (hone_data_folder_pack): worker threads take the
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
    const hone_data_folder *f;
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
        int cls;
        const char *path = hone_data_folder_image(j->f, i, NULL, &cls);
        hone_data_image *img;
        int rc = hone_data_image_read_file(path, c, j->o->limits, &img, err, sizeof err);
        if (rc == HONE_OK) {
            hone_data_resize(img->pixels, img->width, img->height, c, buf, w, h);
            hone_data_image_free(img);
            rc = hone_data_pack_writer_put(j->w, i, buf, cls, err, sizeof err);
        }
        if (rc < 0) {
            job_fail(j, rc, err);
            break;
        }
        atomic_fetch_add(&j->done, 1);
    }
    free(buf);
    return NULL;
}

int hone_data_folder_pack(const hone_data_folder *f, const char *path, const hone_data_pack_opts *o,
                          char *err, size_t errlen)
{
    hone_data_folder_stats st;
    hone_data_folder_get_stats(f, &st);
    if (o->width < 1 || o->height < 1 || o->width > 65535 || o->height > 65535 ||
        (o->channels != 0 && o->channels != 1 && o->channels != 3))
        return data__fail(err, errlen, HONE_EINVAL, "%s: size %dx%d, %d channels: out of range",
                          path, o->width, o->height, o->channels);
    hone_data_pack_info info = {.n = st.images,
                                .height = o->height,
                                .width = o->width,
                                .channels = o->channels ? o->channels
                                            : st.colour ? 3
                                                        : 1,
                                .classes = st.classes};
    for (int s = 0; s < HONE_DATA_NSPLITS; s++)
        info.split[s] = st.split_images[s];
    const char **names = hone_xcalloc((size_t)st.classes, sizeof(char *));
    for (int i = 0; i < st.classes; i++)
        names[i] = hone_data_folder_class_name(f, i);
    job j = {.f = f, .o = o, .channels = info.channels, .n = st.images};
    int rc = hone_data_pack_writer_new(path, &info, names, &j.w, err, errlen);
    free(names);
    if (rc < 0)
        return rc;
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
