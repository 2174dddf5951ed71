/* gpus: which GPUs this host can train on, asked of hone-train (`--list-devices`) so that the
 * worker itself links no CUDA. Asked once per registration; a trainer that fails, hangs (over
 * 30 s) or answers garbage means no GPUs, never a stuck worker. Also pins a worker to its one GPU
 * (--gpu) and picks the GPUs whose NVML telemetry its heartbeats carry. Each GPU's UUID goes
 * with it, so the controller can tell which workers share a board. */
#include "gpus.h"

#include "nvml.h"

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

/* "GPU-" or "MIG-" then hex digits and dashes, as NVIDIA names boards (the controller's check). */
static int uuid_ok(const char *u)
{
    size_t n = u ? strlen(u) : 0;
    if (n < 5 || n > 96 || (strncmp(u, "GPU-", 4) != 0 && strncmp(u, "MIG-", 4) != 0))
        return 0;
    return strspn(u + 4, "0123456789abcdefABCDEF-") == n - 4;
}

const char *worker_gpu_uuid(const json_t *gpus)
{
    return json_string_value(json_object_get(json_array_get(gpus, 0), "uuid"));
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
        /* A pinned worker's trainer sees its GPU alone, as CUDA device 0: register the host's
         * index, the one heartbeats and `hone local` name it by. */
        int index = w->o->pin_gpu ? w->o->gpu : (int)i;
        json_t *one = json_pack("{s:i,s:s,s:O}", "index", index, "name", name, "memory_bytes", mem);
        const char *uuid = json_string_value(json_object_get(g, "uuid"));
        if (uuid_ok(uuid))
            json_object_set_new(one, "uuid", json_string(uuid));
        json_array_append_new(gpus, one);
        if (w->o->pin_gpu)
            break;
    }
    if (!text)
        worker_log(w, "could not list GPUs with %s --list-devices; registering none", w->trainer);
    json_decref(doc);
    free(text);
    return gpus;
}

/* Splits CUDA_VISIBLE_DEVICES ("0,2", "GPU-uuid,...") into at most cap entries of buf. */
static int gpus_visible(const char *env, char buf[][96], int cap)
{
    int n = 0;
    while (env && *env && n < cap) {
        size_t len = strcspn(env, ",");
        snprintf(buf[n++], sizeof(buf[0]), "%.*s", (int)(len < 95 ? len : 95), env);
        env += len + (env[len] == ',');
    }
    return n;
}

int worker_gpu_setup(hone_worker *w)
{
    enum { MAXG = 16 };
    char vis[MAXG][96];
    const char *sel[MAXG];
    int index[MAXG], n = 0;
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    const char *order = getenv("CUDA_DEVICE_ORDER");
    int nvis = env ? gpus_visible(env, vis, MAXG) : -1;

    if (strcmp(w->o->device, "cpu") == 0)
        return HONE_OK;
    /* NVML numbers GPUs by PCI bus id; CUDA's default order is fastest first. With CUDA told to
     * use PCI order too (children inherit it), CUDA index K and NVML index K are one GPU. */
    if (!order || !order[0])
        setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
    int numbered_ok = !order || !order[0] || strcmp(order, "PCI_BUS_ID") == 0;
    if (w->o->pin_gpu) {
        char one[96];
        if (nvis >= 0 && w->o->gpu >= nvis) {
            worker_log(w, "--gpu %d: CUDA_VISIBLE_DEVICES=%s lists %d GPU(s)", w->o->gpu, env,
                       nvis);
            return HONE_EINVAL;
        }
        /* Inside a CUDA_VISIBLE_DEVICES the worker was given, --gpu K is its K-th entry. */
        if (nvis >= 0)
            snprintf(one, sizeof(one), "%s", vis[w->o->gpu]);
        else
            snprintf(one, sizeof(one), "%d", w->o->gpu);
        setenv("CUDA_VISIBLE_DEVICES", one, 1);
        snprintf(vis[0], sizeof(vis[0]), "%s", one);
        sel[0] = vis[0];
        index[0] = w->o->gpu;
        n = 1;
    } else if (nvis >= 0) {
        for (int i = 0; i < nvis; i++) {
            sel[n] = vis[i];
            index[n++] = i;
        }
    } else {
        for (int i = 0; i < MAXG; i++) { /* NVML skips the indices it does not have */
            snprintf(vis[i], sizeof(vis[i]), "%d", i);
            sel[n] = vis[i];
            index[n++] = i;
        }
    }
    /* A numbered GPU under another CUDA_DEVICE_ORDER may be a different board in NVML: no
     * numbers beat wrong numbers. UUIDs ("GPU-...") name one board in both. */
    int k = 0;
    for (int i = 0; i < n; i++)
        if (numbered_ok || strspn(sel[i], "0123456789") != strlen(sel[i])) {
            sel[k] = sel[i];
            index[k++] = index[i];
        }
    if (worker_nvml_open(NULL, sel, index, k, &w->nvml) != 0)
        worker_log(w, "no GPU telemetry (NVML, libnvidia-ml.so.1, not available)");
    return HONE_OK;
}
