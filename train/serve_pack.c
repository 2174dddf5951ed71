/* train/serve_pack.c: packed jobs of hone-train --serve --listen --pack-window-ms MS. The first
 * training request of a pack key (hone_train_pack_key) opens a pack and leads it: it waits MS
 * milliseconds (or until --pack-max members joined), closes the pack, and, with members, trains
 * them all as one hone_train_run_pack on a thread of its own; each member's job thread (the
 * leader's too) answers with its code as soon as its trial leaves the pack
 * (hone_train_opts.on_end). A pack of one runs its job as hone-train ARGS would. Never touches a
 * connection: the jobs' options carry their own output streams and cancel flags. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve.h"

typedef struct pack pack;

/* A member's slot: which pack, which trial (the on_end callback's user). */
typedef struct {
    pack *g;
    int i;
} pack_slot;

struct pack {
    char key[8192];
    hone_train_opts *opts; /* copies of the members' options (their specs borrowed from their job
                              threads, which wait until their trial has left the pack) */
    const hone_train_opts **o;
    pack_slot *slot;
    int *code;  /* each member's exit status */
    int *ended; /* 1: the member's trial left the pack (its code is set) */
    int n, max, closed, refs;
    serve_packs *all;
    pthread_cond_t cv;
    pack *next;
};

struct serve_packs {
    int window_ms, max;
    pthread_mutex_t mu; /* everything below, and every pack's fields */
    pack *open;         /* packs still taking members */
    int running;        /* packs (pack_main threads) still training or cleaning up */
    pthread_cond_t cv;  /* running went down */
};

serve_packs *serve_packs_new(int window_ms, int max)
{
    serve_packs *s = hone_xcalloc(1, sizeof(*s));
    s->window_ms = window_ms;
    s->max = max;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    return s;
}

void serve_packs_free(serve_packs *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    while (s->running > 0)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

/* Drops one hold on g (with s->mu held); the last frees it. */
static void pack_release(pack *g)
{
    if (--g->refs > 0)
        return;
    pthread_cond_destroy(&g->cv);
    free(g->opts);
    free(g->o);
    free(g->slot);
    free(g->code);
    free(g->ended);
    free(g);
}

/* hone_train_opts.on_end of a packed trial (on the pack's thread): its code, as train_run_argv
 * would exit (its reason on its own log first), and its job thread woken to answer at once. */
static void pack_trial_end(int rc, const char *err, void *user)
{
    pack_slot *sl = user;
    pack *g = sl->g;
    if (rc < 0)
        fprintf(g->opts[sl->i].log, "hone-train: %s\n", err && err[0] ? err : hone_strerror(rc));
    pthread_mutex_lock(&g->all->mu);
    g->code[sl->i] = rc < 0 ? 1 : 0;
    g->ended[sl->i] = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->all->mu);
}

/* The pack's own thread: trains the pack's members (each one's code comes through on_end, as its
 * trial leaves), then drops its hold on the pack. serve_packs_free waits for every such thread,
 * so the server frees the dataset cache the pack borrows from only after it. */
static void *pack_main(void *arg)
{
    pack *g = arg;
    serve_packs *s = g->all;
    int n = g->n;
    hone_train_result *res = hone_xcalloc((size_t)n, sizeof(*res));
    int *rc = hone_xcalloc((size_t)n, sizeof(int));
    char(*err)[256] = hone_xcalloc((size_t)n, sizeof(*err));
    hone_train_run_pack(g->o, n, res, rc, err);
    free(res);
    free(rc);
    free(err);
    pthread_mutex_lock(&s->mu);
    s->running--;
    pthread_cond_broadcast(&s->cv);
    pack_release(g);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* The leader's half: waits out the window (or a full pack) and closes the pack; alone, it runs
 * its job as hone-train ARGS would; with members, the pack trains on its own thread and the
 * leader, like every member, answers as soon as its own trial has left. Called and returns with
 * s->mu held. */
static int pack_lead(serve_packs *s, pack *g, run_args *a)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    long ns = until.tv_nsec + (long)(s->window_ms % 1000) * 1000000L;
    until.tv_sec += s->window_ms / 1000 + ns / 1000000000L;
    until.tv_nsec = ns % 1000000000L;
    while (g->n < g->max && pthread_cond_timedwait(&g->cv, &s->mu, &until) != ETIMEDOUT)
        ;
    g->closed = 1;
    for (pack **pp = &s->open; *pp; pp = &(*pp)->next)
        if (*pp == g) {
            *pp = g->next;
            break;
        }
    int n = g->n;
    if (n == 1) {
        pthread_mutex_unlock(&s->mu);
        int code = train_args_exec(a);
        pthread_mutex_lock(&s->mu);
        return code;
    }
    fprintf(stderr, "hone-train: listen: %d jobs packed in one fused step\n", n);
    for (int i = 0; i < n; i++) {
        g->slot[i] = (pack_slot){g, i};
        g->opts[i].on_end = pack_trial_end;
        g->opts[i].user = &g->slot[i];
        g->o[i] = &g->opts[i];
    }
    pthread_t th;
    g->refs++;
    s->running++;
    if (pthread_create(&th, NULL, pack_main, g) == 0) {
        pthread_detach(th);
    } else { /* no thread: train here */
        pthread_mutex_unlock(&s->mu);
        pack_main(g);
        pthread_mutex_lock(&s->mu);
    }
    while (!g->ended[0])
        pthread_cond_wait(&g->cv, &s->mu);
    return g->code[0];
}

int serve_packs_job(serve_packs *s, run_args *a)
{
    const hone_train_opts *o = train_args_training(a);
    char key[8192];
    if (!o || hone_train_pack_key(o->spec, o->device, key, sizeof(key)) != HONE_OK)
        return -1;
    pthread_mutex_lock(&s->mu);
    pack *g = s->open;
    while (g && (g->closed || g->n >= g->max || strcmp(g->key, key) != 0))
        g = g->next;
    int code;
    if (g) { /* a member: the leader trains it; it answers as soon as its trial has left */
        int i = g->n++;
        g->opts[i] = *o;
        g->refs++;
        pthread_cond_broadcast(&g->cv);
        while (!g->ended[i])
            pthread_cond_wait(&g->cv, &s->mu);
        code = g->code[i];
    } else {
        g = hone_xcalloc(1, sizeof(*g));
        snprintf(g->key, sizeof(g->key), "%s", key);
        g->max = s->max;
        g->opts = hone_xcalloc((size_t)g->max, sizeof(*g->opts));
        g->o = hone_xcalloc((size_t)g->max, sizeof(*g->o));
        g->slot = hone_xcalloc((size_t)g->max, sizeof(*g->slot));
        g->code = hone_xcalloc((size_t)g->max, sizeof(int));
        g->ended = hone_xcalloc((size_t)g->max, sizeof(int));
        g->all = s;
        g->opts[0] = *o;
        g->n = g->refs = 1;
        pthread_cond_init(&g->cv, NULL);
        g->next = s->open;
        s->open = g;
        code = pack_lead(s, g, a);
    }
    pack_release(g);
    pthread_mutex_unlock(&s->mu);
    return code;
}
