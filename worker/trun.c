/* trun: runs one hone-train child, relays its stdout JSON lines to hooks and keeps the tail of
 * its stderr. The child gets its own process group so stop/kill reaches everything it started.
 * It must never leave a child behind: every path out of hone_trun_run waits for it.
 * hone_trun_run_resident sends the job instead to a resident `hone-train --serve` (started on
 * first use, kept between jobs) and relays its lines the same way, up to the job's
 * {"event":"exit"} line; a stop is the same SIGTERM (it ends the job, not the server), and a
 * server that dies or outlives the grace is reaped and replaced by the next job. */
#define _GNU_SOURCE /* pipe2 */
#include "trun_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The stderr lines an epoch report carries: those since the previous report, at most this many
 * (the newest), within this many bytes. The controller refuses more (report_check.h). */
#define TRUN_REPORT_LINES 50
#define TRUN_REPORT_BYTES 8192

struct hone_trun_server {
    pid_t pid;
    int in_fd, out_fd, err_fd;
    trun_line out, err; /* partial lines carried from one job to the next */
};

hone_wdecision hone_wdecision_parse(const char *s)
{
    if (s && strcmp(s, "stop") == 0)
        return HONE_WDECISION_STOP;
    if (s && strcmp(s, "pause") == 0)
        return HONE_WDECISION_PAUSE;
    return HONE_WDECISION_CONTINUE;
}

const char *hone_trun_outcome_name(hone_trun_outcome o)
{
    switch (o) {
    case HONE_TRUN_DONE:
        return "done";
    case HONE_TRUN_FAILED:
        return "failed";
    case HONE_TRUN_STOPPED:
        return "stopped";
    case HONE_TRUN_PAUSED:
        return "paused";
    case HONE_TRUN_ABORTED:
        return "aborted";
    }
    return "failed";
}

void trun_ring_push(trun_state *s, const char *line, size_t len)
{
    char *copy;

    if (len > TRUN_LOG_LINE_MAX)
        len = TRUN_LOG_LINE_MAX;
    copy = hone_xmalloc(len + 1);
    memcpy(copy, line, len);
    copy[len] = '\0';
    s->ring_fresh++;
    if (s->ring_n < s->ring_cap) {
        s->ring[s->ring_n++] = copy;
        return;
    }
    free(s->ring[s->ring_head]);
    s->ring[s->ring_head] = copy;
    s->ring_head = (s->ring_head + 1) % s->ring_cap;
}

char *trun_ring_join(trun_state *s)
{
    size_t total = 1;
    char *o, *p;

    for (int i = 0; i < s->ring_n; i++)
        total += strlen(s->ring[i]) + 1;
    o = p = hone_xmalloc(total);
    for (int i = 0; i < s->ring_n; i++) {
        const char *l = s->ring[(s->ring_head + i) % s->ring_n];
        size_t n = strlen(l);
        memcpy(p, l, n);
        p += n;
        *p++ = '\n';
    }
    *p = '\0';
    return o;
}

/* The newest unreported lines as a JSON array (at most TRUN_REPORT_LINES and TRUN_REPORT_BYTES;
 * older ones are dropped), marked reported. */
static json_t *trun_ring_fresh(trun_state *s)
{
    int n = s->ring_fresh < s->ring_n ? s->ring_fresh : s->ring_n;
    size_t bytes = 0;
    int k = 0;
    json_t *a = json_array();

    if (n > TRUN_REPORT_LINES)
        n = TRUN_REPORT_LINES;
    /* Count back from the newest while they fit. */
    while (k < n) {
        const char *l = s->ring[(s->ring_head + s->ring_n - 1 - k) % s->ring_n];
        if (bytes + strlen(l) > TRUN_REPORT_BYTES)
            break;
        bytes += strlen(l);
        k++;
    }
    for (int i = k - 1; i >= 0; i--) {
        const char *l = s->ring[(s->ring_head + s->ring_n - 1 - i) % s->ring_n];
        json_t *str = json_string(l);
        if (!str) { /* not UTF-8: its non-ASCII bytes read as '?' */
            char *t = hone_xmalloc(strlen(l) + 1);
            size_t m = 0;
            for (; l[m]; m++)
                t[m] = (unsigned char)l[m] < 0x80 ? l[m] : '?';
            t[m] = '\0';
            str = json_string(t);
            free(t);
        }
        json_array_append_new(a, str);
    }
    s->ring_fresh = 0;
    return a;
}

/* A signal to the child's group; on a shared server's socket a stop is the cancel line instead
 * (SIGKILL there only marks the job given up: the server is not ours to kill for one job). */
static void trun_signal(trun_state *s, int sig)
{
    if (s->on_socket) {
        static const char cancel[] = "{\"cancel\":true}\n";
        if (sig == SIGTERM && s->sock_fd >= 0)
            trun_write_all(s->sock_fd, cancel, sizeof(cancel) - 1);
        return;
    }
    if (s->pid > 0 && kill(-s->pid, sig) != 0)
        kill(s->pid, sig);
}

static void trun_begin_stop(trun_state *s, double grace)
{
    if (s->killing)
        return;
    s->killing = 1;
    s->kill_at = hone_now() + grace;
    trun_signal(s, SIGTERM);
}

/* One complete stdout line: JSON lines go to the hooks, anything else into the log ring. */
void trun_stdout_line(trun_state *s, const hone_trun_opts *o, const hone_trun_hooks *h,
                      hone_trun_result *res, char *line, size_t len, double grace)
{
    json_t *j, *ep, *ev;

    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' '))
        line[--len] = '\0';
    if (len == 0)
        return;
    j = line[0] == '{' ? json_loadb(line, len, 0, NULL) : NULL;
    if (!json_is_object(j)) {
        trun_ring_push(s, line, len);
        json_decref(j);
        return;
    }
    ev = json_object_get(j, "event");
    ep = json_object_get(j, "epoch");
    if (s->resident && json_is_string(ev) && strcmp(json_string_value(ev), "exit") == 0) {
        json_t *code = json_object_get(j, "code");
        s->exit_seen = 1;
        s->exit_code = json_is_integer(code) ? (int)json_integer_value(code) : 1;
        s->restart = json_is_true(json_object_get(j, "restart"));
    } else if (s->resident && json_is_string(ev) && strcmp(json_string_value(ev), "log") == 0) {
        /* a shared server's stderr line of this job (what a child would have written) */
        const char *l = json_string_value(json_object_get(j, "line"));
        if (l)
            trun_ring_push(s, l, strlen(l));
    } else if (s->resident && json_is_string(ev) &&
               (strcmp(json_string_value(ev), "accepted") == 0 ||
                strcmp(json_string_value(ev), "alive") == 0 ||
                strcmp(json_string_value(ev), "hello") == 0)) {
        /* the server's own: it took the request, it still runs (last_io has it) */
    } else if (json_is_string(ev)) {
        if (strcmp(json_string_value(ev), "done") == 0) {
            json_decref(res->done);
            res->done = json_incref(j);
        }
        if (h->on_event)
            h->on_event(h->arg, j);
    } else if (json_is_integer(ep) && !s->killing && s->decided == HONE_WDECISION_CONTINUE) {
        int epoch = (int)json_integer_value(ep);
        hone_wdecision d;

        res->last_epoch = epoch;
        res->epochs_seen++;
        json_object_set_new(j, "log", trun_ring_fresh(s));
        d = h->on_epoch ? h->on_epoch(h->arg, epoch, j) : HONE_WDECISION_CONTINUE;
        if (d != HONE_WDECISION_CONTINUE) {
            s->decided = d;
            /* The checkpoint of this epoch is on disk once its line is printed. On the last
             * epoch the trainer is about to exit by itself: let it, so its final line lands. */
            if (o->last_epoch > 0 && epoch >= o->last_epoch)
                s->natural_end = 1;
            else
                trun_begin_stop(s, grace);
        }
    }
    json_decref(j);
}

/* Reads what is there from fd into the line buffer and dispatches complete lines. Returns 0 at
 * EOF, 1 otherwise. */
int trun_drain(trun_state *s, int fd, int is_err, const hone_trun_opts *o, const hone_trun_hooks *h,
               hone_trun_result *res, double grace)
{
    trun_line *L = is_err ? &s->err : &s->out;
    char chunk[8192];
    ssize_t n = read(fd, chunk, sizeof(chunk));

    if (n < 0)
        return (errno == EAGAIN || errno == EINTR) ? 1 : 0;
    s->last_io = hone_now();
    if (n == 0) {
        if (L->len > 0) { /* a last line without '\n' */
            L->buf[L->len] = '\0';
            if (is_err)
                trun_ring_push(s, L->buf, L->len);
            else
                trun_stdout_line(s, o, h, res, L->buf, L->len, grace);
            L->len = 0;
        }
        return 0;
    }
    for (ssize_t i = 0; i < n; i++) {
        if (chunk[i] == '\n' || L->len + 1 >= TRUN_LINE_MAX) {
            if (L->len + 1 > L->cap) {
                L->cap = L->len + 64;
                L->buf = hone_xrealloc(L->buf, L->cap);
            }
            L->buf[L->len] = '\0';
            if (is_err)
                trun_ring_push(s, L->buf, L->len);
            else
                trun_stdout_line(s, o, h, res, L->buf, L->len, grace);
            L->len = 0;
            if (chunk[i] == '\n')
                continue;
        }
        if (L->len + 2 > L->cap) {
            L->cap = L->cap ? L->cap * 2 : 256;
            L->buf = hone_xrealloc(L->buf, L->cap);
        }
        L->buf[L->len++] = chunk[i];
    }
    return 1;
}

static pid_t trun_spawn(char *const argv[], int in_fd, int out_fd, int err_fd, int *exec_fail_fd)
{
    int probe[2];
    pid_t pid;

    /* A close-on-exec pipe tells the parent whether exec worked (errno comes back on it). */
    if (pipe2(probe, O_CLOEXEC) != 0)
        return -1;
    pid = fork();
    if (pid < 0) {
        close(probe[0]);
        close(probe[1]);
        return -1;
    }
    if (pid == 0) {
        int e;
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* a worker killed hard takes its trainer along */
        signal(SIGPIPE, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        int devnull = in_fd >= 0 ? in_fd : open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, 0);
        dup2(out_fd, 1);
        dup2(err_fd, 2);
        close(probe[0]);
        execvp(argv[0], argv);
        e = errno;
        if (write(probe[1], &e, sizeof(e)) < 0)
            _exit(127);
        _exit(127);
    }
    setpgid(pid, pid);
    close(probe[1]);
    *exec_fail_fd = probe[0];
    return pid;
}

/* What a pass of the wait loops owes the child: the hooks' stop asked for (a graceful stop, once)
 * and the SIGKILL once the grace is up. */
void trun_tick(trun_state *s, const hone_trun_hooks *h, double grace)
{
    if (!s->aborted && h->should_stop && h->should_stop(h->arg)) {
        s->aborted = 1;
        trun_begin_stop(s, grace);
    }
    if (s->killing && !s->killed_hard && hone_now() >= s->kill_at) {
        s->killed_hard = 1;
        trun_signal(s, SIGKILL);
    }
}

/* Polls the child's pipes and dispatches their lines until both close (or, resident, until the
 * job's exit line or the end of stdout), sending SIGTERM and then SIGKILL as decided. */
static void trun_pump(trun_state *s, int out_fd, int err_fd, int *out_open, int *err_open,
                      const hone_trun_opts *o, const hone_trun_hooks *h, hone_trun_result *res,
                      double grace)
{
    while (s->resident ? *out_open && !s->exit_seen : *out_open || *err_open) {
        struct pollfd p[2];
        int np = 0;

        if (*out_open)
            p[np++] = (struct pollfd){.fd = out_fd, .events = POLLIN};
        if (*err_open)
            p[np++] = (struct pollfd){.fd = err_fd, .events = POLLIN};
        if (poll(p, (nfds_t)np, 200) > 0) {
            for (int i = 0; i < np; i++) {
                if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                    continue;
                if (p[i].fd == out_fd)
                    *out_open = trun_drain(s, out_fd, 0, o, h, res, grace);
                else
                    *err_open = trun_drain(s, err_fd, 1, o, h, res, grace);
            }
        }
        trun_tick(s, h, grace);
        if (s->resident && o->silence_s > 0 && !s->killed_hard &&
            hone_now() - s->last_io > o->silence_s) {
            char msg[160];
            int n = snprintf(msg, sizeof(msg),
                             "hone-worker: the resident trainer wrote nothing for %.0f s; killed",
                             o->silence_s);
            trun_ring_push(s, msg, (size_t)n);
            s->killed_hard = 1;
            trun_signal(s, SIGKILL);
        }
    }
}

/* The pipes closed: the child (and its group) is exiting; waits for it, keeping the kill
 * deadline. */
static void trun_reap(trun_state *s, const hone_trun_hooks *h, double grace, int *status)
{
    while (waitpid(s->pid, status, WNOHANG) == 0) {
        trun_tick(s, h, grace);
        usleep(20000);
    }
    s->pid = -1;
}

void trun_outcome(trun_state *s, hone_trun_result *res, int exit_code)
{
    res->exit_code = exit_code;
    if (s->decided == HONE_WDECISION_STOP)
        res->outcome = HONE_TRUN_STOPPED;
    else if (s->decided == HONE_WDECISION_PAUSE)
        res->outcome = HONE_TRUN_PAUSED;
    else if (s->aborted)
        res->outcome = HONE_TRUN_ABORTED;
    else if (exit_code == 0)
        res->outcome = HONE_TRUN_DONE;
    else
        res->outcome = HONE_TRUN_FAILED;
    if (res->outcome == HONE_TRUN_FAILED) {
        char msg[128];
        int n = snprintf(msg, sizeof(msg), "hone-worker: trainer exited with status %d",
                         res->exit_code);
        trun_ring_push(s, msg, (size_t)n);
    }
}

int hone_trun_run(char *const argv[], const hone_trun_opts *opts, const hone_trun_hooks *h,
                  hone_trun_result *res)
{
    hone_trun_opts o = opts ? *opts : (hone_trun_opts){0};
    trun_state s = {0};
    int outp[2] = {-1, -1}, errp[2] = {-1, -1}, probe = -1, status = 0, e = 0;
    int out_open = 1, err_open = 1, rc = HONE_OK;
    double grace = o.grace_s > 0 ? o.grace_s : 10.0;

    trun_run_begin(&s, &o, res);
    if (pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) {
        rc = HONE_EIO;
        trun_ring_push(&s, "hone-worker: pipe failed", 24);
        goto fail;
    }
    s.pid = trun_spawn(argv, -1, outp[1], errp[1], &probe);
    close(outp[1]);
    close(errp[1]);
    outp[1] = errp[1] = -1;
    if (s.pid < 0) {
        rc = HONE_EIO;
        trun_ring_push(&s, "hone-worker: fork failed", 24);
        goto fail;
    }
    if (read(probe, &e, sizeof(e)) == (ssize_t)sizeof(e)) {
        char msg[512];
        int n = snprintf(msg, sizeof(msg), "hone-worker: cannot run %s: %s", argv[0], strerror(e));
        trun_ring_push(&s, msg, (size_t)n);
        waitpid(s.pid, &status, 0);
        s.pid = -1;
        rc = HONE_EIO;
        goto fail;
    }
    fcntl(outp[0], F_SETFL, O_NONBLOCK);
    fcntl(errp[0], F_SETFL, O_NONBLOCK);
    trun_pump(&s, outp[0], errp[0], &out_open, &err_open, &o, h, res, grace);
    trun_reap(&s, h, grace, &status);
    trun_outcome(&s, res, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
fail:
    for (int fd_i = 0; fd_i < 2; fd_i++) {
        if (outp[fd_i] >= 0)
            close(outp[fd_i]);
        if (errp[fd_i] >= 0)
            close(errp[fd_i]);
    }
    if (probe >= 0)
        close(probe);
    trun_run_end(&s, rc, res);
    return rc;
}

void hone_trun_result_clear(hone_trun_result *res)
{
    if (!res)
        return;
    json_decref(res->done);
    free(res->log_tail);
    memset(res, 0, sizeof(*res));
}

/* Ends a resident trainer: closes its stdin (it exits after its job), and kills it when it is
 * still there after a moment. */
void hone_trun_server_free(hone_trun_server *v)
{
    int status;

    if (!v)
        return;
    if (v->in_fd >= 0)
        close(v->in_fd);
    for (int i = 0; v->pid > 0 && i < 100; i++) {
        if (waitpid(v->pid, &status, WNOHANG) != 0) {
            v->pid = -1;
            break;
        }
        usleep(20000);
    }
    if (v->pid > 0) {
        kill(-v->pid, SIGKILL);
        kill(v->pid, SIGKILL);
        waitpid(v->pid, &status, 0);
    }
    if (v->out_fd >= 0)
        close(v->out_fd);
    if (v->err_fd >= 0)
        close(v->err_fd);
    free(v->out.buf);
    free(v->err.buf);
    free(v);
}

/* Starts `trainer --serve`; NULL with a line in s's ring when it could not. */
static hone_trun_server *trun_server_start(trun_state *s, const char *trainer)
{
    int inp[2] = {-1, -1}, outp[2] = {-1, -1}, errp[2] = {-1, -1}, probe = -1, e = 0, status;
    char *argv[] = {(char *)trainer, "--serve", NULL};
    hone_trun_server *v = NULL;

    if (pipe2(inp, O_CLOEXEC) != 0 || pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) {
        trun_ring_push(s, "hone-worker: pipe failed", 24);
        goto fail;
    }
    pid_t pid = trun_spawn(argv, inp[0], outp[1], errp[1], &probe);
    if (pid < 0) {
        trun_ring_push(s, "hone-worker: fork failed", 24);
        goto fail;
    }
    if (read(probe, &e, sizeof(e)) == (ssize_t)sizeof(e)) {
        char msg[512];
        int n = snprintf(msg, sizeof(msg), "hone-worker: cannot run %s: %s", trainer, strerror(e));
        trun_ring_push(s, msg, (size_t)n);
        waitpid(pid, &status, 0);
        goto fail;
    }
    v = hone_xcalloc(1, sizeof(*v));
    v->pid = pid;
    v->in_fd = inp[1];
    v->out_fd = outp[0];
    v->err_fd = errp[0];
    inp[1] = outp[0] = errp[0] = -1;
    fcntl(v->out_fd, F_SETFL, O_NONBLOCK);
    fcntl(v->err_fd, F_SETFL, O_NONBLOCK);
fail:
    for (int i = 0; i < 2; i++) {
        int *fds[] = {inp, outp, errp};
        for (int k = 0; k < 3; k++)
            if (fds[k][i] >= 0)
                close(fds[k][i]);
    }
    if (probe >= 0)
        close(probe);
    return v;
}

char *trun_request_line(trun_state *s, char *const argv[])
{
    json_t *req = json_array();
    char *dump, *line;

    for (int i = 1; argv[i]; i++)
        json_array_append_new(req, json_string(argv[i]));
    json_t *obj = json_pack("{s:o}", "run", req);
    dump = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    if (!dump) {
        trun_ring_push(s, "hone-worker: arguments are not UTF-8", 36);
        return NULL;
    }
    line = hone_xmalloc(strlen(dump) + 2);
    sprintf(line, "%s\n", dump);
    free(dump);
    return line;
}

void trun_state_clear(trun_state *s)
{
    for (int i = 0; i < s->ring_n; i++)
        free(s->ring[i]);
    free(s->ring);
    free(s->out.buf);
    free(s->err.buf);
    s->ring = NULL;
    s->ring_n = 0;
    s->out = s->err = (trun_line){0};
}

void trun_run_begin(trun_state *s, const hone_trun_opts *o, hone_trun_result *res)
{
    memset(res, 0, sizeof(*res));
    s->ring_cap = o->log_lines > 0 ? o->log_lines : 50;
    s->ring = hone_xcalloc((size_t)s->ring_cap, sizeof(char *));
}

void trun_run_end(trun_state *s, int rc, hone_trun_result *res)
{
    if (rc != HONE_OK)
        res->outcome = HONE_TRUN_FAILED;
    res->log_tail = trun_ring_join(s);
    trun_state_clear(s);
}

/* Writes the whole request line; 0 or -1 (the server is gone). */
int trun_write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == ENOTSOCK)
            n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

int hone_trun_run_resident(hone_trun_server **srv, char *const argv[], const hone_trun_opts *opts,
                           const hone_trun_hooks *h, hone_trun_result *res)
{
    hone_trun_opts o = opts ? *opts : (hone_trun_opts){0};
    trun_state s = {0};
    int status = 0, out_open = 1, err_open = 1, rc = HONE_OK;
    double grace = o.grace_s > 0 ? o.grace_s : 10.0;
    hone_trun_server *v = *srv;
    char *line = NULL;

    trun_run_begin(&s, &o, res);
    s.resident = 1;
    if (!(line = trun_request_line(&s, argv))) {
        rc = HONE_EINVAL;
        goto fail;
    }
    /* a server that died between jobs is replaced; one that cannot take the request too, once */
    for (int attempt = 0;; attempt++) {
        if (v && waitpid(v->pid, &status, WNOHANG) != 0) {
            v->pid = -1;
            hone_trun_server_free(v);
            v = NULL;
        }
        if (!v && !(v = trun_server_start(&s, argv[0]))) {
            rc = HONE_EIO;
            goto fail;
        }
        if (trun_write_all(v->in_fd, line, strlen(line)) == 0)
            break;
        hone_trun_server_free(v);
        v = NULL;
        if (attempt == 1) {
            trun_ring_push(&s, "hone-worker: the resident trainer does not take requests", 56);
            rc = HONE_EIO;
            goto fail;
        }
    }
    s.pid = v->pid;
    s.last_io = hone_now();
    s.out = v->out;
    s.err = v->err;
    trun_pump(&s, v->out_fd, v->err_fd, &out_open, &err_open, &o, h, res, grace);
    for (int i = 0; i < 20 && err_open; i++) { /* the job's last stderr lines, if any yet */
        struct pollfd p = {.fd = v->err_fd, .events = POLLIN};
        if (poll(&p, 1, i == 0 ? 20 : 0) <= 0)
            break;
        err_open = trun_drain(&s, v->err_fd, 1, &o, h, res, grace);
    }
    v->out = s.out;
    v->err = s.err;
    s.out = s.err = (trun_line){0};
    if (s.exit_seen) {
        trun_outcome(&s, res, s.exit_code);
        if (s.restart) { /* it is ending (a failure on a GPU): the next job starts a new one */
            hone_trun_server_free(v);
            v = NULL;
        }
    } else { /* the server died (or was killed past the grace): reap it, the next job replaces it */
        trun_reap(&s, h, grace, &status);
        v->pid = -1;
        hone_trun_server_free(v);
        v = NULL;
        trun_outcome(&s, res, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
fail:
    *srv = v;
    trun_run_end(&s, rc, res);
    free(line);
    return rc;
}

int hone_trun_server_pid(const hone_trun_server *v)
{
    return v ? (int)v->pid : -1;
}
