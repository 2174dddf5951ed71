/* A small thread pool of the controller's own for users' dataset checks (checkq.h): a queue under
 * one mutex, threads that take the fairest queued check, and a uv_async_t that brings finished
 * checks back to the loop. Never touches the store or HTTP: the callers' done callbacks do. */
#include <stdlib.h>
#include <string.h>

#include "checkq.h"
#include "hone.h"

#define CHECKQ_MAX_THREADS 64
#define CHECKQ_OWNERS_KEPT 256 /* idle owners remembered (when each last started a check) */

typedef struct owner_turn {
    char name[64];
    int running, queued;
    uint64_t last_start; /* the queue's start count when its last check started; 0: never */
} owner_turn;

struct ctl_checkq {
    uv_loop_t *loop;
    uv_async_t async;
    uv_mutex_t mu;
    uv_cond_t cv;
    uv_thread_t *threads;
    int nthreads, alive;
    ctl_check_work *queue, *done; /* FIFO; done: any order */
    owner_turn *owners;
    int nowners, cap_owners;
    int stop, closed, async_open;
    uint64_t starts;
    void (*closed_cb)(void *);
    void *closed_arg;
};

static owner_turn *owner_get(ctl_checkq *q, const char *name)
{
    for (int i = 0; i < q->nowners; i++)
        if (!strcmp(q->owners[i].name, name))
            return &q->owners[i];
    if (q->nowners >= CHECKQ_OWNERS_KEPT) { /* forget idle owners */
        int n = 0;
        for (int i = 0; i < q->nowners; i++)
            if (q->owners[i].running || q->owners[i].queued)
                q->owners[n++] = q->owners[i];
        q->nowners = n;
    }
    if (q->nowners == q->cap_owners) {
        q->cap_owners = q->cap_owners ? q->cap_owners * 2 : 8;
        q->owners = hone_xrealloc(q->owners, (size_t)q->cap_owners * sizeof *q->owners);
    }
    owner_turn *o = &q->owners[q->nowners++];
    memset(o, 0, sizeof *o);
    snprintf(o->name, sizeof o->name, "%s", name);
    return o;
}

/* Under the mutex: unlinks and returns the fairest queued check (checkq.h). */
static ctl_check_work *pick(ctl_checkq *q)
{
    ctl_check_work **best = NULL;
    owner_turn *bo = NULL;
    for (ctl_check_work **p = &q->queue; *p; p = &(*p)->next) {
        owner_turn *o = owner_get(q, (*p)->owner);
        if (!bo || o->running < bo->running ||
            (o->running == bo->running && o->last_start < bo->last_start)) {
            best = p;
            bo = o;
        }
    }
    if (!best)
        return NULL;
    ctl_check_work *w = *best;
    *best = w->next;
    w->next = NULL;
    bo->queued--;
    bo->running++;
    bo->last_start = ++q->starts;
    return w;
}

static void thread_main(void *arg)
{
    ctl_checkq *q = arg;
    uv_mutex_lock(&q->mu);
    for (;;) {
        while (!q->stop && !q->queue)
            uv_cond_wait(&q->cv, &q->mu);
        ctl_check_work *w = pick(q);
        if (!w)
            break; /* stopping, nothing queued */
        uv_mutex_unlock(&q->mu);
        w->run(w);
        uv_mutex_lock(&q->mu);
        owner_get(q, w->owner)->running--;
        w->next = q->done;
        q->done = w;
        uv_async_send(&q->async);
    }
    q->alive--;
    uv_async_send(&q->async);
    uv_mutex_unlock(&q->mu);
}

static void joined_close(uv_handle_t *h)
{
    ctl_checkq *q = h->data;
    q->async_open = 0;
    if (q->closed_cb)
        q->closed_cb(q->closed_arg);
}

/* On the loop: finished checks go back to their callers; once stopping and every thread has
 * left, the threads are joined and the handle closed. */
static void on_async(uv_async_t *a)
{
    ctl_checkq *q = a->data;
    uv_mutex_lock(&q->mu);
    ctl_check_work *done = q->done;
    q->done = NULL;
    int finished = q->stop && q->alive == 0;
    uv_mutex_unlock(&q->mu);
    while (done) {
        ctl_check_work *next = done->next;
        done->next = NULL;
        done->done(done, 0);
        done = next;
    }
    if (finished && !q->closed) {
        q->closed = 1;
        for (int i = 0; i < q->nthreads; i++)
            uv_thread_join(&q->threads[i]);
        uv_close((uv_handle_t *)&q->async, joined_close);
    }
}

int ctl_checkq_new(uv_loop_t *loop, int threads, ctl_checkq **out)
{
    *out = NULL;
    if (threads < 1 || threads > CHECKQ_MAX_THREADS)
        return HONE_EINVAL;
    ctl_checkq *q = hone_xcalloc(1, sizeof *q);
    q->loop = loop;
    q->threads = hone_xcalloc((size_t)threads, sizeof *q->threads);
    if (uv_mutex_init(&q->mu)) {
        free(q->threads);
        free(q);
        return HONE_EIO;
    }
    uv_cond_init(&q->cv);
    uv_async_init(loop, &q->async, on_async);
    q->async.data = q;
    q->async_open = 1;
    for (; q->nthreads < threads; q->nthreads++) {
        uv_mutex_lock(&q->mu);
        q->alive++;
        uv_mutex_unlock(&q->mu);
        if (uv_thread_create(&q->threads[q->nthreads], thread_main, q)) {
            uv_mutex_lock(&q->mu);
            q->alive--;
            uv_mutex_unlock(&q->mu);
            ctl_checkq_free(q);
            return HONE_EIO;
        }
    }
    *out = q;
    return HONE_OK;
}

int ctl_checkq_submit(ctl_checkq *q, ctl_check_work *w, const char *owner, ctl_check_run_cb run,
                      ctl_check_done_cb done)
{
    if (q->stop)
        return HONE_ESTATE;
    w->run = run;
    w->done = done;
    w->next = NULL;
    snprintf(w->owner, sizeof w->owner, "%s", owner ? owner : "");
    uv_mutex_lock(&q->mu);
    ctl_check_work **p = &q->queue;
    while (*p)
        p = &(*p)->next;
    *p = w;
    owner_get(q, w->owner)->queued++;
    uv_cond_signal(&q->cv);
    uv_mutex_unlock(&q->mu);
    return HONE_OK;
}

/* Stops the threads and hands back what was still queued (the caller cancels it). */
static ctl_check_work *stop_all(ctl_checkq *q)
{
    uv_mutex_lock(&q->mu);
    q->stop = 1;
    ctl_check_work *queued = q->queue;
    q->queue = NULL;
    for (ctl_check_work *w = queued; w; w = w->next)
        owner_get(q, w->owner)->queued--;
    uv_cond_broadcast(&q->cv);
    uv_mutex_unlock(&q->mu);
    return queued;
}

static void cancel_all(ctl_check_work *w)
{
    while (w) {
        ctl_check_work *next = w->next;
        w->next = NULL;
        w->done(w, UV_ECANCELED);
        w = next;
    }
}

void ctl_checkq_close(ctl_checkq *q, void (*closed)(void *arg), void *arg)
{
    q->closed_cb = closed;
    q->closed_arg = arg;
    cancel_all(stop_all(q));
    uv_async_send(&q->async); /* idle threads may all have left already */
}

void ctl_checkq_free(ctl_checkq *q)
{
    if (!q)
        return;
    if (q->async_open) { /* never closed: finish here, blocking on running checks */
        q->closed_cb = NULL;
        if (!q->stop)
            cancel_all(stop_all(q));
        if (!q->closed) {
            q->closed = 1;
            for (int i = 0; i < q->nthreads; i++)
                uv_thread_join(&q->threads[i]);
            ctl_check_work *done = q->done;
            q->done = NULL;
            while (done) {
                ctl_check_work *next = done->next;
                done->done(done, 0);
                done = next;
            }
            uv_close((uv_handle_t *)&q->async, joined_close);
        }
        while (q->async_open)
            uv_run(q->loop, UV_RUN_NOWAIT);
    }
    uv_cond_destroy(&q->cv);
    uv_mutex_destroy(&q->mu);
    free(q->owners);
    free(q->threads);
    free(q);
}
