/* checkq.c: the dataset checks users start (a registered folder, an uploaded archive) run on a
 * small pool of threads of the controller's own, queued fairly between owners, so that libuv's
 * thread pool stays free for what must answer quickly (file reads, hashes, AutoML asks). */
#ifndef HONE_CTL_CHECKQ_H
#define HONE_CTL_CHECKQ_H

#include <uv.h>

typedef struct ctl_checkq ctl_checkq;
typedef struct ctl_check_work ctl_check_work;

/* run: on one of the queue's threads (no store, no HTTP). done: back on the loop, status 0, or
 * UV_ECANCELED when the queue closed before it ran. Both get the work the caller submitted. */
typedef void (*ctl_check_run_cb)(ctl_check_work *w);
typedef void (*ctl_check_done_cb)(ctl_check_work *w, int status);

/* Embedded by the caller, who owns it until done has run. */
struct ctl_check_work {
    void *data; /* the caller's */
    ctl_check_run_cb run;
    ctl_check_done_cb done;
    char owner[64];              /* checkq.c: whose turn this is */
    struct ctl_check_work *next; /* checkq.c */
};

/* threads: how many checks run at once (1..64). HONE_EINVAL, or HONE_EIO when a thread cannot
 * start. */
int ctl_checkq_new(uv_loop_t *loop, int threads, ctl_checkq **out);
/* Queues w for owner ("" for none). The next free thread takes the queued check whose owner has
 * the fewest running, then whose owner started one least recently, then the oldest: a user's
 * second check waits behind other users' first. HONE_ESTATE once closing (nothing queued). */
int ctl_checkq_submit(ctl_checkq *q, ctl_check_work *w, const char *owner, ctl_check_run_cb run,
                      ctl_check_done_cb done);
/* Cancels what is queued (done with UV_ECANCELED), lets running checks finish (done with 0), then
 * stops the threads and calls closed(arg) on the loop. */
void ctl_checkq_close(ctl_checkq *q, void (*closed)(void *arg), void *arg);
/* Frees a closed queue; an open one is closed first, blocking until its running checks end. */
void ctl_checkq_free(ctl_checkq *q);

#endif
