/* gpus: which GPUs this host can train on, asked of hone-train (`--list-devices`) so that the
 * worker itself links no CUDA. Asked once per registration; a trainer that fails, hangs (over
 * 30 s) or answers garbage means no GPUs, never a stuck worker. */
#include "worker_internal.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { LIST_TIMEOUT_MS = 30000, LIST_MAX_BYTES = 65536 };

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs `trainer --list-devices` and returns its stdout (malloc'd), or NULL. */
static char *gpus_run_trainer(const char *trainer)
{
    int fds[2];
    if (pipe(fds) != 0)
        return NULL;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return NULL;
    }
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execlp(trainer, trainer, "--list-devices", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char *out = hone_xmalloc(LIST_MAX_BYTES + 1);
    size_t n = 0;
    long long deadline = now_ms() + LIST_TIMEOUT_MS;
    int ok = 1;
    for (;;) {
        long long left = deadline - now_ms();
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        int r = left > 0 ? poll(&p, 1, (int)left) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) { /* timed out: the trainer is stuck (a wedged driver) */
            ok = 0;
            kill(pid, SIGKILL);
            break;
        }
        ssize_t got = read(fds[0], out + n, LIST_MAX_BYTES - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        n += (size_t)got;
        if (n == LIST_MAX_BYTES) {
            ok = 0;
            kill(pid, SIGKILL);
            break;
        }
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        free(out);
        return NULL;
    }
    out[n] = '\0';
    return out;
}

json_t *worker_gpus(hone_worker *w)
{
    json_t *gpus = json_array();
    if (strcmp(w->o->device, "cpu") == 0)
        return gpus;
    char *text = gpus_run_trainer(w->trainer);
    json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
    json_t *list = json_object_get(doc, "gpus"), *g;
    size_t i;
    json_array_foreach(list, i, g)
    {
        const char *name = json_string_value(json_object_get(g, "name"));
        json_t *mem = json_object_get(g, "memory_bytes");
        if (!name || !json_is_integer(mem))
            continue;
        json_array_append_new(gpus, json_pack("{s:s,s:O}", "name", name, "memory_bytes", mem));
    }
    if (!text)
        worker_log(w, "could not list GPUs with %s --list-devices; registering none", w->trainer);
    json_decref(doc);
    free(text);
    return gpus;
}
