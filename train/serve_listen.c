/* train/serve_listen.c: hone-train --serve --listen PATH, packed trials. A unix socket (mode
 * 0600) whose every connection speaks the stdin protocol of --serve: the server says
 * {"event":"hello","pid":P} first, then for each {"run": [ARGS]} line it answers
 * {"event":"accepted"}, the job's stdout lines, its stderr messages as {"event":"log","line":...},
 * {"event":"alive"} every --serve-alive-ms while the job runs, and {"event":"exit","code":N}.
 * Each connection has its own thread, and its job its own thread, kernel context (CUDA stream,
 * cuBLAS and cuDNN handles) and output; the jobs share the process's dataset cache (one copy of
 * each dataset on the device) and so train at the same time. {"cancel":true} while a job runs
 * cancels that job (code 143, its last checkpoint stands), as does the client closing the
 * connection. SIGTERM/SIGINT cancel every job, then the server closes, unlinks the socket and
 * exits 0; so does --idle-exit S seconds without a connection. A job that fails (code 1) on a GPU
 * ends the server: every running job is cancelled, and each exit line says "restart": true.
 * --pack-window-ms MS (0: off): training requests whose specs share a hone_train_pack_key and
 * arrive within MS of the first train together in one fused step (serve_pack.c, up to
 * --pack-max); each connection still gets exactly its own lines, cancel and exit code.
 * It never writes the process's stdout; its own messages go to stderr. */
#define _GNU_SOURCE /* fopencookie, accept4, pipe2, ppoll */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"

typedef struct server server;

/* One line sink of a job: its out or log FILE (fopencookie) writes whole lines to the connection;
 * log lines are wrapped as {"event":"log","line":...}. */
typedef struct sink {
    struct conn *c;
    int is_log;
    char *buf; /* the line so far */
    size_t len, cap;
} sink;

typedef struct conn {
    server *srv;
    int fd;
    pthread_t th;
    _Atomic int finished; /* the thread is done: the accept loop joins it */
    pthread_mutex_t wmu;  /* one line at a time on fd */
    int broken;           /* a write failed: the client is gone (under wmu) */
    char *in;             /* bytes read and not yet used */
    size_t in_len, in_cap;
    int eof;
    /* the job */
    volatile sig_atomic_t cancel;
    int done_pipe[2];
    char **argv;
    int argc, code;
    FILE *out, *log;
    sink out_sink, log_sink;
    struct conn *next;
} conn;

struct server {
    const char *path;
    int lfd;
    hone_train_cache *cache;
    int alive_ms;
    serve_packs *packs; /* --pack-window-ms: packed jobs (serve_pack.c); NULL: off */
    pthread_mutex_t mu; /* conns */
    conn *conns;
    int stop_pipe[2]; /* written once when the server stops: wakes every connection */
    int wake_pipe[2]; /* a connection ended, or asks the server to stop (restart) */
    _Atomic int stop; /* stopping: every job is being cancelled */
    _Atomic int restart;
};

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
    (void)sig;
    got_signal = 1;
}

/* Writes n bytes (one or more whole lines) to the connection; a failure marks it broken (the
 * client is gone: its job is cancelled). */
static void conn_write(conn *c, const char *s, size_t n)
{
    pthread_mutex_lock(&c->wmu);
    while (n > 0 && !c->broken) {
        ssize_t w = send(c->fd, s, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            c->broken = 1;
            c->cancel = 1;
            break;
        }
        s += w;
        n -= (size_t)w;
    }
    pthread_mutex_unlock(&c->wmu);
}

static void conn_say(conn *c, const char *line)
{
    conn_write(c, line, strlen(line));
}

/* One whole line of a sink (without its newline) to the connection. */
static void sink_line(sink *k, const char *s, size_t n)
{
    if (!k->is_log) {
        char *l = hone_xmalloc(n + 1);
        memcpy(l, s, n);
        l[n] = '\n';
        conn_write(k->c, l, n + 1);
        free(l);
        return;
    }
    char *text = hone_xmalloc(n + 1);
    for (size_t i = 0; i < n; i++) /* messages are ASCII; keep the JSON valid whatever */
        text[i] = (unsigned char)s[i] >= 0x80 ? '?' : s[i];
    text[n] = 0;
    json_t *j = json_pack("{s:s, s:s}", "event", "log", "line", text);
    char *d = j ? json_dumps(j, JSON_COMPACT) : NULL;
    if (d) {
        size_t dl = strlen(d);
        d = hone_xrealloc(d, dl + 2);
        d[dl] = '\n';
        conn_write(k->c, d, dl + 1);
    }
    free(d);
    json_decref(j);
    free(text);
}

static ssize_t sink_write(void *cookie, const char *s, size_t n)
{
    sink *k = cookie;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\n') {
            sink_line(k, k->buf, k->len);
            k->len = 0;
            continue;
        }
        if (k->len == k->cap) {
            k->cap = k->cap ? 2 * k->cap : 256;
            k->buf = hone_xrealloc(k->buf, k->cap);
        }
        k->buf[k->len++] = s[i];
    }
    return (ssize_t)n;
}

static int sink_close(void *cookie)
{
    sink *k = cookie;
    if (k->len) /* a last line without its newline */
        sink_line(k, k->buf, k->len);
    free(k->buf);
    k->buf = NULL;
    k->len = k->cap = 0;
    return 0;
}

static FILE *sink_open(conn *c, sink *k, int is_log)
{
    memset(k, 0, sizeof(*k));
    k->c = c;
    k->is_log = is_log;
    cookie_io_functions_t io = {.write = sink_write, .close = sink_close};
    FILE *f = fopencookie(k, "w", io);
    if (!f) {
        fprintf(stderr, "hone-train: listen: fopencookie: %s\n", strerror(errno));
        abort();
    }
    setvbuf(f, NULL, _IOLBF, 0);
    return f;
}

/* The next complete line in c->in (NUL-terminated, newline dropped) moved to *line (malloc'd);
 * 0 when there is none yet. */
static int take_line(conn *c, char **line)
{
    char *nl = c->in_len ? memchr(c->in, '\n', c->in_len) : NULL;
    if (!nl)
        return 0;
    size_t n = (size_t)(nl - c->in);
    *line = hone_xmalloc(n + 1);
    memcpy(*line, c->in, n);
    (*line)[n] = 0;
    memmove(c->in, nl + 1, c->in_len - n - 1);
    c->in_len -= n + 1;
    return 1;
}

/* Reads what the socket has into c->in; sets c->eof at the end or on an error. */
static void read_some(conn *c)
{
    if (c->in_cap - c->in_len < 4096) {
        c->in_cap = c->in_cap ? 2 * c->in_cap : 8192;
        if (c->in_cap > ((size_t)64 << 20)) { /* a line this long is no request: drop the client */
            c->eof = 1;
            return;
        }
        c->in = hone_xrealloc(c->in, c->in_cap);
    }
    ssize_t r = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
    if (r < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (r <= 0)
        c->eof = 1;
    else
        c->in_len += (size_t)r;
}

static int is_cancel(const char *line)
{
    json_t *j = json_loads(line, 0, NULL);
    int yes =
        json_is_object(j) && json_object_size(j) == 1 && json_is_true(json_object_get(j, "cancel"));
    json_decref(j);
    return yes;
}

static int blank(const char *line)
{
    return strspn(line, " \t\r") == strlen(line);
}

/* While a job runs: cancel lines (and a blank line) are used up at once, any other line waits in
 * c->in for the job's end. */
static void scan_cancels(conn *c)
{
    size_t at = 0;
    while (at < c->in_len) {
        char *nl = memchr(c->in + at, '\n', c->in_len - at);
        if (!nl)
            break;
        size_t n = (size_t)(nl - (c->in + at));
        char *line = hone_xmalloc(n + 1);
        memcpy(line, c->in + at, n);
        line[n] = 0;
        int drop = blank(line) || is_cancel(line);
        if (drop && !blank(line))
            c->cancel = 1;
        free(line);
        if (drop) {
            memmove(c->in + at, nl + 1, c->in_len - at - n - 1);
            c->in_len -= n + 1;
        } else {
            at += n + 1;
        }
    }
}

/* One job: a training request that can share a pack joins a pack when --pack-window-ms is set;
 * anything else runs as hone-train ARGS would. */
static int job_exec(conn *c)
{
    server *s = c->srv;
    run_args *a;
    int code = train_args_parse(c->argc, c->argv, s->cache, &c->cancel, c->out, c->log, &a);
    if (code < 0 && s->packs)
        code = serve_packs_job(s->packs, a);
    if (code < 0)
        code = train_args_exec(a);
    train_args_free(a);
    return code;
}

static void *job_main(void *arg)
{
    conn *c = arg;
    c->code = job_exec(c);
    fflush(c->out);
    fflush(c->log);
    char b = 1;
    while (write(c->done_pipe[1], &b, 1) < 0 && errno == EINTR)
        ;
    return NULL;
}

/* Runs one parsed request on its own thread, answering alive lines and watching the socket for
 * cancel lines and the client's end; the job's exit status. */
static int run_job(conn *c)
{
    server *s = c->srv;
    pthread_t th;
    c->cancel = 0;
    if (pthread_create(&th, NULL, job_main, c) != 0) {
        fprintf(c->log, "hone-train: listen: cannot start the job's thread\n");
        return 1;
    }
    double next_alive = hone_now() + s->alive_ms / 1000.0;
    int stopping = 0;
    for (;;) {
        struct pollfd p[3] = {{.fd = c->done_pipe[0], .events = POLLIN},
                              {.fd = c->eof ? -1 : c->fd, .events = POLLIN},
                              {.fd = stopping ? -1 : s->stop_pipe[0], .events = POLLIN}};
        int wait_ms = (int)((next_alive - hone_now()) * 1000);
        int n = poll(p, 3, wait_ms > 0 ? wait_ms : 0);
        if (n < 0 && errno != EINTR)
            break;
        if (n > 0 && (p[0].revents & POLLIN))
            break;
        if (n > 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            read_some(c);
            scan_cancels(c);
            if (c->eof) /* the client is gone: so is its job */
                c->cancel = 1;
        }
        if (n > 0 && (p[2].revents & POLLIN)) {
            stopping = 1;
            c->cancel = 1;
        }
        if (hone_now() >= next_alive) {
            conn_say(c, "{\"event\":\"alive\"}\n");
            next_alive = hone_now() + s->alive_ms / 1000.0;
        }
    }
    pthread_join(th, NULL);
    char b;
    while (read(c->done_pipe[0], &b, 1) < 0 && errno == EINTR)
        ;
    return c->code;
}

/* Asks the accept loop to stop the server (after a job failed on a GPU). */
static void server_wake(server *s)
{
    char b = 1;
    while (write(s->wake_pipe[1], &b, 1) < 0 && errno == EINTR)
        ;
}

static void *conn_main(void *arg)
{
    conn *c = arg;
    server *s = c->srv;
    char hello[64];
    snprintf(hello, sizeof(hello), "{\"event\":\"hello\",\"pid\":%ld}\n", (long)getpid());
    conn_say(c, hello);
    for (;;) {
        char *line = NULL;
        while (!take_line(c, &line) && !c->eof && !atomic_load(&s->stop)) {
            struct pollfd p[2] = {{.fd = c->fd, .events = POLLIN},
                                  {.fd = s->stop_pipe[0], .events = POLLIN}};
            if (poll(p, 2, -1) < 0 && errno != EINTR)
                c->eof = 1;
            else if (p[0].revents & (POLLIN | POLLHUP | POLLERR))
                read_some(c);
        }
        if (!line)
            break;
        if (blank(line) || is_cancel(line)) { /* no job to cancel: nothing to do */
            free(line);
            continue;
        }
        conn_say(c, "{\"event\":\"accepted\"}\n");
        json_t *req = NULL;
        c->out = sink_open(c, &c->out_sink, 0);
        c->log = sink_open(c, &c->log_sink, 1);
        int code = 2, restart = 0;
        if (train_serve_parse(line, c->log, &req, &c->argv, &c->argc) == 0) {
            code = run_job(c);
            if (code != 0 && c->cancel) {
                fprintf(c->log, "hone-train: serve: job cancelled\n");
                code = 128 + SIGTERM;
            } else if (code == 1) {
                restart = hone_train_cache_cuda(s->cache);
                if (restart) { /* the device may be broken for the process's life */
                    atomic_store(&s->restart, 1);
                    server_wake(s);
                } else {
                    hone_train_cache_clear(s->cache);
                }
            }
        }
        long hits, misses;
        hone_train_cache_stats(s->cache, &hits, &misses);
        fprintf(stderr, "hone-train: listen: job exit %d (dataset cache: %ld hits, %ld misses)\n",
                code, hits, misses);
        fclose(c->out);
        fclose(c->log);
        c->out = c->log = NULL;
        free(c->argv);
        c->argv = NULL;
        json_decref(req);
        free(line);
        char ex[96];
        snprintf(ex, sizeof(ex), "{\"event\":\"exit\",\"code\":%d%s}\n", code,
                 restart || atomic_load(&s->restart) ? ",\"restart\":true" : "");
        conn_say(c, ex);
        if (atomic_load(&s->restart) || atomic_load(&s->stop))
            break;
    }
    shutdown(c->fd, SHUT_RDWR);
    atomic_store(&c->finished, 1);
    server_wake(s);
    return NULL;
}

static void conn_free(conn *c)
{
    close(c->fd);
    close(c->done_pipe[0]);
    close(c->done_pipe[1]);
    pthread_mutex_destroy(&c->wmu);
    free(c->in);
    free(c);
}

/* Joins and frees the connections that ended (all of them when `all`, waiting for each). */
static int reap(server *s, int all)
{
    pthread_mutex_lock(&s->mu);
    conn **pp = &s->conns;
    while (*pp) {
        conn *c = *pp;
        if (all || atomic_load(&c->finished)) {
            *pp = c->next;
            pthread_mutex_unlock(&s->mu);
            pthread_join(c->th, NULL);
            conn_free(c);
            pthread_mutex_lock(&s->mu);
        } else {
            pp = &c->next;
        }
    }
    int left = s->conns != NULL;
    pthread_mutex_unlock(&s->mu);
    return left;
}

static int pipe_cloexec(int p[2])
{
    return pipe2(p, O_CLOEXEC);
}

/* The socket at path, refusing a live server there and replacing a stale socket file. */
static int listen_at(const char *path)
{
    struct sockaddr_un a;
    memset(&a, 0, sizeof(a));
    a.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(a.sun_path)) {
        fprintf(stderr, "hone-train: --listen %s: a socket path has at most %zu bytes\n", path,
                sizeof(a.sun_path) - 1);
        return -1;
    }
    memcpy(a.sun_path, path, strlen(path) + 1);
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            fprintf(stderr, "hone-train: --listen %s: exists and is not a socket\n", path);
            return -1;
        }
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int live = probe >= 0 && connect(probe, (struct sockaddr *)&a, sizeof(a)) == 0;
        int refused = !live && errno == ECONNREFUSED;
        if (probe >= 0)
            close(probe);
        if (live) {
            fprintf(stderr, "hone-train: --listen %s: another server is listening there\n", path);
            return -1;
        }
        if (!refused) {
            fprintf(stderr, "hone-train: --listen %s: %s\n", path, strerror(errno));
            return -1;
        }
        unlink(path); /* stale: its server is gone */
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fprintf(stderr, "hone-train: --listen: socket: %s\n", strerror(errno));
        return -1;
    }
    /* Bound under PATH.PID and linked to PATH once listening, so that PATH exists only while
     * something listens there: a client that connects as soon as it sees the file (a test, a
     * second server probing for a stale socket) is never refused in between. link, not rename:
     * it does not replace a PATH that another server made meanwhile. A PATH too long for the
     * temporary name is bound directly, as before. */
    char tmp[sizeof(a.sun_path)];
    int direct = snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid()) >= (int)sizeof(tmp);
    if (!direct) {
        unlink(tmp); /* a leftover of a killed server of this pid */
        memcpy(a.sun_path, tmp, strlen(tmp) + 1);
    }
    const char *bound = direct ? path : tmp;
    mode_t old = umask(077); /* mode 0600 from the start: still one thread here */
    int rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
    umask(old);
    if (rc < 0 || chmod(bound, 0600) < 0 || listen(fd, 64) < 0 ||
        (!direct && link(tmp, path) < 0)) {
        fprintf(stderr, "hone-train: --listen %s: %s\n", path, strerror(errno));
        if (rc == 0)
            unlink(bound);
        close(fd);
        return -1;
    }
    if (!direct)
        unlink(tmp);
    return fd;
}

int train_serve_listen(const char *path, int ncache, int alive_ms, int idle_exit_s,
                       int pack_window_ms, int pack_max)
{
    server s = {.path = path, .alive_ms = alive_ms};
    int rc = 1;
    pthread_mutex_init(&s.mu, NULL);
    if (pack_window_ms > 0)
        s.packs = serve_packs_new(pack_window_ms, pack_max);
    s.lfd = -1;
    s.stop_pipe[0] = s.stop_pipe[1] = s.wake_pipe[0] = s.wake_pipe[1] = -1;
    /* the signals only interrupt the accept loop's ppoll: every other thread blocks them */
    sigset_t block, open_mask;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, &open_mask);
    sigdelset(&open_mask, SIGTERM);
    sigdelset(&open_mask, SIGINT);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if ((s.lfd = listen_at(path)) < 0)
        goto fail;
    if (pipe_cloexec(s.stop_pipe) < 0 || pipe_cloexec(s.wake_pipe) < 0 ||
        hone_train_cache_new(ncache, &s.cache) < 0) {
        fprintf(stderr, "hone-train: listen: %s\n", strerror(errno));
        goto out;
    }
    fcntl(s.wake_pipe[0], F_SETFL, O_NONBLOCK);
    fprintf(stderr, "hone-train: serving on %s (cache: %d datasets)\n", path, ncache);
    double idle_since = hone_now();
    int was_live = 0;
    while (!got_signal && !atomic_load(&s.restart)) {
        struct pollfd p[2] = {{.fd = s.lfd, .events = POLLIN},
                              {.fd = s.wake_pipe[0], .events = POLLIN}};
        int live = reap(&s, 0);
        if (was_live && !live) /* idle from the end of the last connection */
            idle_since = hone_now();
        was_live = live;
        struct timespec ts, *tsp = NULL;
        if (idle_exit_s > 0 && !live) {
            double left = idle_since + idle_exit_s - hone_now();
            if (left <= 0) {
                fprintf(stderr, "hone-train: listen: idle for %d s, exiting\n", idle_exit_s);
                break;
            }
            ts.tv_sec = (time_t)left;
            ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
            tsp = &ts;
        }
        int n = ppoll(p, 2, tsp, &open_mask);
        if (n < 0)
            continue; /* EINTR: a signal, seen at the top */
        if (p[1].revents & POLLIN) {
            char buf[64];
            while (read(s.wake_pipe[0], buf, sizeof(buf)) > 0)
                ;
        }
        if (!(p[0].revents & POLLIN))
            continue;
        int fd = accept4(s.lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        conn *c = hone_xcalloc(1, sizeof(*c));
        c->srv = &s;
        c->fd = fd;
        pthread_mutex_init(&c->wmu, NULL);
        if (pipe_cloexec(c->done_pipe) < 0) {
            close(fd);
            pthread_mutex_destroy(&c->wmu);
            free(c);
            continue;
        }
        pthread_mutex_lock(&s.mu);
        if (pthread_create(&c->th, NULL, conn_main, c) != 0) {
            pthread_mutex_unlock(&s.mu);
            conn_free(c);
            continue;
        }
        c->next = s.conns;
        s.conns = c;
        pthread_mutex_unlock(&s.mu);
    }
    if (got_signal)
        fprintf(stderr, "hone-train: listen: signal: cancelling every job\n");
    rc = 0;
out:
    /* every connection's job is cancelled and answered; then the connections close */
    atomic_store(&s.stop, 1);
    if (s.stop_pipe[1] >= 0) {
        char b = 1;
        while (write(s.stop_pipe[1], &b, 1) < 0 && errno == EINTR)
            ;
    }
    reap(&s, 1);
    serve_packs_free(s.packs); /* after its packs gave their contexts and data back */
    s.packs = NULL;
    close(s.lfd);
    unlink(path);
    hone_train_cache_free(s.cache);
fail:
    for (int i = 0; i < 2; i++) {
        if (s.stop_pipe[i] >= 0)
            close(s.stop_pipe[i]);
        if (s.wake_pipe[i] >= 0)
            close(s.wake_pipe[i]);
    }
    pthread_mutex_destroy(&s.mu);
    serve_packs_free(s.packs); /* not started (a refused path) */
    return rc;
}
