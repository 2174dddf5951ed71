/* trun_socket: train jobs on a shared trainer server, one `hone-train --serve --listen PATH` that
 * several workers of one GPU reach over a unix socket, so that their trials overlap on that GPU.
 * The connection is kept between jobs; when nobody listens at PATH this worker starts the server
 * itself (detached: its own session, stdio to a log file), under flock(PATH.lock) so that two
 * workers starting at once start one. A job is relayed exactly as hone_trun_run_resident relays
 * one (trun.c's line handling): a stop is {"cancel":true}, the end of the grace gives the job up
 * (the connection closed, which cancels it too) without touching the server, which other workers
 * use; a connection that ends mid-job fails the job as a dead trainer would; a server silent past
 * silence_s is stuck for everyone: it is killed (SIGKILL to the pid of its hello). */
#define _GNU_SOURCE /* pipe2 */
#include "trun_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define SOCK_START_WAIT_S 20.0 /* a server this worker started must listen within this */
#define SOCK_HELLO_WAIT_S 10.0 /* its hello must come within this of the connect */

struct hone_trun_sock {
    char *path;     /* the server's socket */
    char *log_path; /* stdio of a server this worker starts */
    int fd;         /* the connection (-1: none) */
    int pid;        /* the server's, from its hello (-1: unknown) */
    int started;    /* servers this client started */
    trun_line out;  /* a partial line carried from one job to the next */
};

hone_trun_sock *hone_trun_sock_new(const char *path, const char *log_path)
{
    hone_trun_sock *c = hone_xcalloc(1, sizeof(*c));
    c->path = hone_xstrdup(path);
    c->log_path = hone_xstrdup(log_path ? log_path : "/dev/null");
    c->fd = -1;
    c->pid = -1;
    return c;
}

static void sock_close(hone_trun_sock *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->pid = -1;
    c->out.len = 0;
}

void hone_trun_sock_free(hone_trun_sock *c)
{
    if (!c)
        return;
    sock_close(c);
    free(c->out.buf);
    free(c->path);
    free(c->log_path);
    free(c);
}

int hone_trun_sock_pid(const hone_trun_sock *c)
{
    return c && c->fd >= 0 ? c->pid : -1;
}

int hone_trun_sock_started(const hone_trun_sock *c)
{
    return c ? c->started : 0;
}

/* A connected socket to path, or -1 with errno. */
static int sock_connect_once(const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    int fd;

    memcpy(a.sun_path, path, strlen(path) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Starts `trainer --serve --listen PATH --idle-exit 60` detached from this worker (a grandchild
 * in a session of its own: it outlives us and serves the other workers; it ends when idle).
 * 0, or -1 with a line in s's ring when it could not be run. */
static int sock_spawn_server(hone_trun_sock *c, trun_state *s, const char *trainer)
{
    char *argv[] = {(char *)trainer, "--serve", "--listen", c->path, "--idle-exit", "60", NULL};
    int probe[2], e = 0, status;
    pid_t mid;

    if (pipe2(probe, O_CLOEXEC) != 0) {
        trun_ring_push(s, "hone-worker: pipe failed", 24);
        return -1;
    }
    mid = fork();
    if (mid < 0) {
        close(probe[0]);
        close(probe[1]);
        trun_ring_push(s, "hone-worker: fork failed", 24);
        return -1;
    }
    if (mid == 0) {
        close(probe[0]);
        setsid();
        if (fork() != 0)
            _exit(0);
        int in = open("/dev/null", O_RDONLY);
        int log = open(c->log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (in >= 0)
            dup2(in, 0);
        if (log >= 0) {
            dup2(log, 1);
            dup2(log, 2);
        }
        signal(SIGPIPE, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        execvp(argv[0], argv);
        e = errno;
        if (write(probe[1], &e, sizeof(e)) < 0)
            _exit(127);
        _exit(127);
    }
    close(probe[1]);
    while (waitpid(mid, &status, 0) < 0 && errno == EINTR)
        ;
    if (read(probe[0], &e, sizeof(e)) == (ssize_t)sizeof(e)) {
        char msg[512];
        int n = snprintf(msg, sizeof(msg), "hone-worker: cannot run %s: %s", trainer, strerror(e));
        trun_ring_push(s, msg, (size_t)n);
        close(probe[0]);
        return -1;
    }
    close(probe[0]);
    return 0;
}

/* Reads the server's {"event":"hello","pid":P} line. 0; -2 when the connection ended first (a
 * server dying as we connected: try again); -1 (with a line in s's ring) for anything else. */
static int sock_read_hello(hone_trun_sock *c, trun_state *s)
{
    double deadline = hone_now() + SOCK_HELLO_WAIT_S;
    char buf[512];
    size_t len = 0;

    while (len < sizeof(buf) - 1) {
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        int left = (int)((deadline - hone_now()) * 1000);
        if (left <= 0 || poll(&p, 1, left) <= 0)
            break;
        ssize_t n = read(c->fd, buf + len, 1); /* byte by byte: nothing after it is ours */
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return -2;
        if (n < 0)
            break;
        if (buf[len] == '\n') {
            json_t *j = json_loadb(buf, len, 0, NULL);
            json_t *pid = json_object_get(j, "pid");
            int ok = json_is_string(json_object_get(j, "event")) &&
                     strcmp(json_string_value(json_object_get(j, "event")), "hello") == 0 &&
                     json_is_integer(pid) && json_integer_value(pid) > 0;
            c->pid = ok ? (int)json_integer_value(pid) : -1;
            json_decref(j);
            if (ok)
                return 0;
            break;
        }
        len++;
    }
    char msg[4400];
    int n =
        snprintf(msg, sizeof(msg), "hone-worker: the trainer server at %s said no hello", c->path);
    trun_ring_push(s, msg, (size_t)n);
    return -1;
}

/* One try of sock_connect: 0, -1, or -2 when the connection ended before the hello. */
static int sock_connect_try(hone_trun_sock *c, trun_state *s, const char *trainer)
{
    char lock_path[4200], msg[4600];
    int lock, n;

    sock_close(c);
    if (strlen(c->path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        n = snprintf(msg, sizeof(msg),
                     "hone-worker: the trainer socket path is too long for a unix socket: %s",
                     c->path);
        trun_ring_push(s, msg, (size_t)n);
        return -1;
    }
    if ((c->fd = sock_connect_once(c->path)) < 0) {
        /* Nobody listens: one worker starts the server, the others wait on the lock and then
         * find it listening. */
        snprintf(lock_path, sizeof(lock_path), "%s.lock", c->path);
        lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (lock >= 0)
            while (flock(lock, LOCK_EX) != 0 && errno == EINTR)
                ;
        c->fd = sock_connect_once(c->path);
        if (c->fd < 0 && sock_spawn_server(c, s, trainer) == 0) {
            c->started++;
            double deadline = hone_now() + SOCK_START_WAIT_S;
            while ((c->fd = sock_connect_once(c->path)) < 0 && hone_now() < deadline)
                usleep(50000);
            if (c->fd < 0) {
                n = snprintf(msg, sizeof(msg),
                             "hone-worker: the trainer server started at %s does not listen "
                             "(its log: %s)",
                             c->path, c->log_path);
                trun_ring_push(s, msg, (size_t)n);
            }
        }
        if (lock >= 0)
            close(lock); /* releases the flock */
        if (c->fd < 0)
            return -1;
    }
    int rc = sock_read_hello(c, s);
    if (rc != 0) {
        sock_close(c);
        return rc;
    }
    fcntl(c->fd, F_SETFL, O_NONBLOCK);
    return 0;
}

/* Connects to the server at c->path, starting it when nobody listens there. 0 (c->fd and c->pid
 * set), or -1 with a line in s's ring. A server that was dying as we connected (its socket still
 * took the connection, then reset it: just after a kill) is tried again a few times. */
static int sock_connect(hone_trun_sock *c, trun_state *s, const char *trainer)
{
    for (int i = 0; i < 20; i++) {
        int rc = sock_connect_try(c, s, trainer);
        if (rc != -2)
            return rc;
        usleep(100000);
    }
    char msg[4400];
    int n = snprintf(msg, sizeof(msg),
                     "hone-worker: the trainer server at %s closes every connection", c->path);
    trun_ring_push(s, msg, (size_t)n);
    return -1;
}

/* A kept connection the server closed (it ended, idle or killed) or wrote to out of turn is not
 * used again. */
static int sock_stale(hone_trun_sock *c)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    return poll(&p, 1, 0) != 0;
}

int hone_trun_run_socket(hone_trun_sock *c, char *const argv[], const hone_trun_opts *opts,
                         const hone_trun_hooks *h, hone_trun_result *res)
{
    hone_trun_opts o = opts ? *opts : (hone_trun_opts){0};
    trun_state s = {0};
    int open_ = 1, rc = HONE_OK, silent = 0;
    double grace = o.grace_s > 0 ? o.grace_s : 10.0;
    char *line = NULL;

    trun_run_begin(&s, &o, res);
    s.resident = 1;
    s.on_socket = 1;
    s.sock_fd = -1;
    if (!(line = trun_request_line(&s, argv))) {
        rc = HONE_EINVAL;
        goto fail;
    }
    /* a kept connection that the server has ended is replaced; one that cannot take the
     * request too, once */
    for (int attempt = 0;; attempt++) {
        if (c->fd >= 0 && sock_stale(c))
            sock_close(c);
        if (c->fd < 0 && sock_connect(c, &s, argv[0]) != 0) {
            rc = HONE_EIO;
            goto fail;
        }
        if (trun_write_all(c->fd, line, strlen(line)) == 0)
            break;
        sock_close(c);
        if (attempt == 1) {
            trun_ring_push(&s, "hone-worker: the trainer server does not take requests", 54);
            rc = HONE_EIO;
            goto fail;
        }
    }
    s.sock_fd = c->fd;
    s.last_io = hone_now();
    s.out = c->out;
    c->out = (trun_line){0};
    while (open_ && !s.exit_seen && !s.killed_hard) {
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, 200) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)))
            open_ = trun_drain(&s, c->fd, 0, &o, h, res, grace);
        trun_tick(&s, h, grace); /* the hooks' stop; past the grace it sets killed_hard */
        if (o.silence_s > 0 && !s.exit_seen && hone_now() - s.last_io > o.silence_s) {
            char msg[200];
            int n = snprintf(msg, sizeof(msg),
                             "hone-worker: the trainer server (pid %d) wrote nothing for %.0f s; "
                             "killed",
                             c->pid, o.silence_s);
            trun_ring_push(&s, msg, (size_t)n);
            if (c->pid > 0)
                kill(c->pid, SIGKILL);
            silent = 1;
            break;
        }
    }
    c->out = s.out;
    s.out = (trun_line){0};
    if (s.exit_seen) {
        trun_outcome(&s, res, s.exit_code);
        if (s.restart) /* it is ending (a failure on a GPU): the next job starts or finds another */
            sock_close(c);
    } else if (silent) {
        sock_close(c);
        trun_outcome(&s, res, 128 + SIGKILL);
    } else if (s.killed_hard) { /* the grace is over: closing the connection cancels the job */
        char msg[160];
        int n = snprintf(msg, sizeof(msg),
                         "hone-worker: the trainer server did not end the job within %.0f s of "
                         "the cancel; connection closed",
                         grace);
        trun_ring_push(&s, msg, (size_t)n);
        sock_close(c);
        trun_outcome(&s, res, 128 + SIGTERM);
    } else { /* the connection ended mid-job: the server died (or was killed) */
        char msg[200];
        int n = snprintf(msg, sizeof(msg),
                         "hone-worker: the trainer server (pid %d) closed the connection mid-job",
                         c->pid);
        trun_ring_push(&s, msg, (size_t)n);
        sock_close(c);
        trun_outcome(&s, res, 1);
    }
fail:
    trun_run_end(&s, rc, res);
    free(line);
    return rc;
}
