/* bench_load: drives a real hone-controller with many simulated workers over loopback HTTP/1.1
 * keep-alive connections (one thread each: register, lease a train job, report epochs as fast as
 * answered, complete, lease again) plus readers polling job status and job lists, and a prober
 * asking GET /healthz on a new connection every 20 ms; prints reports/s and latency percentiles.
 * --idle N first opens N connections that never send a byte (from --idle-addrs K loopback
 * addresses, 127.0.0.1 .. 127.0.0.K), held through the run; --idle-reconnect 1 reopens every one
 * the server closes, as an attacker renewing the flood would. Workers send the bearer token of
 * their registration reply when it has one. Starts the controller itself (--controller BIN) or
 * uses --url.
 * Usage: bench_load (--controller BIN | --url http://127.0.0.1:PORT) [--workers 64] [--readers 4]
 *                   [--seconds 20] [--epochs 10000] [--data-dir DIR] [--idle N]
 *                   [--idle-addrs 1] [--idle-reconnect 0|1] */
#define _GNU_SOURCE /* strcasestr */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct conn {
    int fd;
    char buf[1 << 16];
    size_t len;
} conn;

typedef struct lat {
    double *v;
    size_t n, cap;
} lat;

static int port;
static volatile int stop_flag, measuring; /* latencies are kept only in the measured window */
static int epochs_target = 10000;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void lat_add(lat *l, double v)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4096;
        l->v = realloc(l->v, l->cap * sizeof(double));
        if (!l->v)
            abort();
    }
    l->v[l->n++] = v;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(lat *l, double p)
{
    if (!l->n)
        return 0;
    size_t i = (size_t)(p * (double)(l->n - 1) + 0.5);
    return l->v[i];
}

static int conn_open(conn *c)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    c->len = 0;
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return connect(c->fd, (struct sockaddr *)&a, sizeof a);
}

/* One request on a keep-alive connection (reconnects once if the server closed it), with
 * "Authorization: Bearer <auth>" when auth is non-empty. Returns the status (body in c->buf,
 * NUL-terminated) or -1. */
static int http_auth(conn *c, const char *method, const char *path, const char *body,
                     const char *auth)
{
    char head[1024], authz[256] = "";
    if (auth && auth[0])
        snprintf(authz, sizeof authz, "Authorization: Bearer %s\r\n", auth);
    size_t bl = body ? strlen(body) : 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (c->fd < 0 && conn_open(c) != 0) {
            close(c->fd);
            c->fd = -1;
            return -1;
        }
        int hl = snprintf(
            head, sizeof head, "%s %s HTTP/1.1\r\nHost: bench\r\n%s%sContent-Length: %zu\r\n\r\n",
            method, path, authz, body ? "Content-Type: application/json\r\n" : "", bl);
        if (send(c->fd, head, (size_t)hl, MSG_NOSIGNAL) != hl ||
            (bl && send(c->fd, body, bl, MSG_NOSIGNAL) != (ssize_t)bl))
            goto retry;
        c->len = 0;
        char *end = NULL;
        while (!end) {
            ssize_t n = recv(c->fd, c->buf + c->len, sizeof c->buf - 1 - c->len, 0);
            if (n <= 0)
                goto retry;
            c->len += (size_t)n;
            c->buf[c->len] = '\0';
            end = strstr(c->buf, "\r\n\r\n");
        }
        int status = atoi(c->buf + 9);
        const char *cl = strcasestr(c->buf, "content-length:");
        size_t need = cl ? strtoul(cl + 15, NULL, 10) : 0, hdr = (size_t)(end + 4 - c->buf);
        while (c->len < hdr + need && c->len < sizeof c->buf - 1) {
            ssize_t n = recv(c->fd, c->buf + c->len, sizeof c->buf - 1 - c->len, 0);
            if (n <= 0)
                goto retry;
            c->len += (size_t)n;
        }
        c->buf[c->len] = '\0';
        memmove(c->buf, c->buf + hdr, c->len - hdr + 1);
        return status;
    retry:
        close(c->fd);
        c->fd = -1;
    }
    return -1;
}

static int http(conn *c, const char *method, const char *path, const char *body)
{
    return http_auth(c, method, path, body, NULL);
}

static int json_str(const char *body, const char *key, char *out, size_t n)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *p = strstr(body, pat);
    if (!p)
        return -1;
    p += strlen(pat);
    size_t i = 0;
    while (p[i] && p[i] != '"' && i + 1 < n) {
        out[i] = p[i];
        i++;
    }
    out[i] = '\0';
    return 0;
}

static char exp_id[64];

typedef struct wstate {
    pthread_t th;
    int idx;
    lat rep;
    long reports, errors, leases;
    char job[64];
} wstate;

static void *worker_main(void *arg)
{
    wstate *w = arg;
    conn c = {.fd = -1};
    char wid[64], body[512], path[256], tok[256] = "";
    snprintf(body, sizeof body, "{\"name\":\"bench-%d\",\"resources\":{\"cpus\":1}}", w->idx);
    while (http(&c, "POST", "/api/v1/workers", body) != 201 ||
           json_str(c.buf, "id", wid, sizeof wid)) {
        w->errors++; /* retried, as hone-worker does */
        if (stop_flag)
            return NULL;
        usleep(10000);
    }
    /* the worker credential, when the controller hands one out */
    json_str(c.buf, "token", tok, sizeof tok);
    while (!stop_flag) {
        snprintf(path, sizeof path, "/api/v1/workers/%s/lease?wait=1", wid);
        int st = http_auth(&c, "POST", path, NULL, tok);
        if (st == 204)
            continue;
        char job[64];
        if (st != 200 || json_str(c.buf, "id", job, sizeof job)) {
            w->errors++;
            usleep(10000);
            continue;
        }
        w->leases++;
        snprintf(w->job, sizeof w->job, "%s", job);
        snprintf(path, sizeof path, "/api/v1/jobs/%s/report", job);
        int epoch = 1;
        for (; epoch <= epochs_target && !stop_flag; epoch++) {
            snprintf(body, sizeof body,
                     "{\"worker_id\":\"%s\",\"epoch\":%d,\"metrics\":{\"train_loss\":%.6f,"
                     "\"val_loss\":%.6f,\"val_accuracy\":%.6f,\"seconds\":0.01}}",
                     wid, epoch, 1.0 / epoch, 1.1 / epoch, 1.0 - 1.0 / (epoch + 1));
            double t0 = now_s();
            st = http_auth(&c, "POST", path, body, tok);
            double dt = now_s() - t0;
            if (st != 200) {
                w->errors++;
                break;
            }
            if (measuring)
                lat_add(&w->rep, dt);
            w->reports++;
            if (strstr(c.buf, "\"stop\"") || strstr(c.buf, "\"pause\""))
                break;
        }
        if (stop_flag)
            break;
        snprintf(path, sizeof path, "/api/v1/jobs/%s/complete", job);
        snprintf(body, sizeof body, "{\"worker_id\":\"%s\",\"status\":\"done\"}", wid);
        http_auth(&c, "POST", path, body, tok);
    }
    close(c.fd);
    return NULL;
}

typedef struct rstate {
    pthread_t th;
    wstate *ws;
    int nw;
    lat status, list;
    long errors;
} rstate;

static void *reader_main(void *arg)
{
    rstate *r = arg;
    conn c = {.fd = -1};
    char path[256];
    unsigned i = 0;
    while (!stop_flag) {
        const char *job = r->ws[i % (unsigned)r->nw].job;
        int list = (i++ % 4) == 3;
        if (list)
            snprintf(path, sizeof path, "/api/v1/jobs?experiment=%s&limit=50", exp_id);
        else if (job[0])
            snprintf(path, sizeof path, "/api/v1/jobs/%s", job);
        else
            continue;
        double t0 = now_s();
        int st = http(&c, "GET", path, NULL);
        double dt = now_s() - t0;
        if (st != 200)
            r->errors++;
        if (measuring)
            lat_add(list ? &r->list : &r->status, dt);
    }
    close(c.fd);
    return NULL;
}

/* ---- the idle flood and the /healthz prober ------------------------------------------------- */

typedef struct idle_state {
    pthread_t th;
    int n, naddrs, reconnect;
    int *fds;
    long closed, reopened, failed; /* closed by the server; reopened; reopening failed */
} idle_state;

/* A connection that will never send a byte, from 127.0.0.(1 + k % naddrs); non-blocking, so a
 * full accept queue does not stall the flood. */
static int idle_open(int k, int naddrs)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
    if (fd < 0)
        return -1;
    if (naddrs > 1) {
        struct sockaddr_in src = {.sin_family = AF_INET};
        src.sin_addr.s_addr = htonl(INADDR_LOOPBACK + (uint32_t)(k % naddrs));
        setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
        if (bind(fd, (struct sockaddr *)&src, sizeof src) < 0) {
            close(fd);
            return -1;
        }
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Holds the flood: notices connections the server closed (after its 503, or evicted), and with
 * reconnect opens them again at once. */
static void *idle_main(void *arg)
{
    idle_state *st = arg;
    struct pollfd *p = calloc((size_t)st->n, sizeof *p);
    while (p && !stop_flag) {
        for (int i = 0; i < st->n; i++) {
            if (st->fds[i] < 0 && st->reconnect) {
                st->fds[i] = idle_open(i, st->naddrs);
                if (st->fds[i] < 0)
                    st->failed++;
                else
                    st->reopened++;
            }
            p[i].fd = st->fds[i];
            p[i].events = POLLIN;
            p[i].revents = 0;
        }
        if (poll(p, (nfds_t)st->n, 100) <= 0)
            continue;
        for (int i = 0; i < st->n; i++) {
            char b[512];
            if (p[i].fd < 0 || !p[i].revents)
                continue;
            ssize_t k = recv(p[i].fd, b, sizeof b, 0);
            if (k > 0 || (k < 0 && (errno == EAGAIN || errno == EINTR)))
                continue; /* a 503 answer: its close follows */
            close(p[i].fd);
            st->fds[i] = -1;
            st->closed++;
        }
    }
    free(p);
    return NULL;
}

typedef struct probe_state {
    pthread_t th;
    lat lat;
    long errors;
} probe_state;

/* GET /healthz every 20 ms, each on a new connection, as a load balancer's health check would. */
static void *probe_main(void *arg)
{
    probe_state *p = arg;
    while (!stop_flag) {
        conn c = {.fd = -1};
        double t0 = now_s();
        int st = http(&c, "GET", "/healthz", NULL);
        if (measuring) {
            lat_add(&p->lat, now_s() - t0);
            p->errors += st != 200;
        }
        if (c.fd >= 0)
            close(c.fd);
        usleep(20000);
    }
    return NULL;
}

static void put_idx(const char *dir, const char *name, const unsigned char *h, size_t hl, size_t n,
                    int mod)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f)
        abort();
    fwrite(h, 1, hl, f);
    for (size_t i = 0; i < n; i++)
        fputc((int)(i % (size_t)mod), f);
    fclose(f);
}

static pid_t start_controller(const char *bin, const char *dir)
{
    char pf[1024], ds[1024], log[1024];
    snprintf(pf, sizeof pf, "%s/port", dir);
    snprintf(log, sizeof log, "%s/controller.log", dir);
    unlink(pf);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(log, "w", stderr) || !freopen("/dev/null", "w", stdout))
            _exit(126);
        snprintf(ds, sizeof ds, "%s/data", dir);
        execl(bin, bin, "--listen", "127.0.0.1:0", "--data-dir", ds, "--port-file", pf,
              (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 600; i++) {
        FILE *f = fopen(pf, "r");
        if (f) {
            int ok = fscanf(f, "%d", &port) == 1;
            fclose(f);
            if (ok)
                return pid;
        }
        usleep(50000);
    }
    fprintf(stderr, "bench_load: controller did not start (see %s)\n", log);
    exit(1);
}

int main(int argc, char **argv)
{
    const char *bin = NULL, *url = NULL, *dir = NULL;
    int nw = 64, nr = 4, nidle = 0, idle_addrs = 1, idle_reconnect = 0;
    double seconds = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--controller"))
            bin = argv[i + 1];
        else if (!strcmp(argv[i], "--url"))
            url = argv[i + 1];
        else if (!strcmp(argv[i], "--workers"))
            nw = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--readers"))
            nr = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seconds"))
            seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--epochs"))
            epochs_target = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--data-dir"))
            dir = argv[i + 1];
        else if (!strcmp(argv[i], "--idle"))
            nidle = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--idle-addrs"))
            idle_addrs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--idle-reconnect"))
            idle_reconnect = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "bench_load: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if ((!bin && !url) || nw < 1 || nr < 0 || nidle < 0 || idle_addrs < 1 || idle_addrs > 250) {
        fprintf(stderr, "usage: bench_load (--controller BIN | --url http://127.0.0.1:PORT) "
                        "[--workers 64] [--readers 4] [--seconds 20] [--epochs 10000] "
                        "[--data-dir DIR] [--idle N] [--idle-addrs 1] [--idle-reconnect 0|1]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl; /* the idle flood needs descriptors */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    char tmpl[] = "/tmp/hone-bench-load-XXXXXX", dsdir[1200];
    if (!dir)
        dir = mkdtemp(tmpl);
    pid_t ctl = 0;
    snprintf(dsdir, sizeof dsdir, "%s/data/ds", dir);
    char dd[1100];
    snprintf(dd, sizeof dd, "%s/data", dir);
    mkdir(dir, 0755);
    mkdir(dd, 0755);
    mkdir(dsdir, 0755);
    static const unsigned char ti[] = {0, 0, 8, 3, 0, 0, 0, 40, 0, 0, 0, 4, 0, 0, 0, 4};
    static const unsigned char tl[] = {0, 0, 8, 1, 0, 0, 0, 40};
    static const unsigned char si[] = {0, 0, 8, 3, 0, 0, 0, 10, 0, 0, 0, 4, 0, 0, 0, 4};
    static const unsigned char sl[] = {0, 0, 8, 1, 0, 0, 0, 10};
    put_idx(dsdir, "train-images-idx3-ubyte", ti, sizeof ti, 640, 256);
    put_idx(dsdir, "train-labels-idx1-ubyte", tl, sizeof tl, 40, 10);
    put_idx(dsdir, "t10k-images-idx3-ubyte", si, sizeof si, 160, 256);
    put_idx(dsdir, "t10k-labels-idx1-ubyte", sl, sizeof sl, 10, 10);
    if (bin)
        ctl = start_controller(bin, dir);
    else if (sscanf(url, "http://%*[^:]:%d", &port) != 1) {
        fprintf(stderr, "bench_load: --url must be http://127.0.0.1:PORT\n");
        return 2;
    }
    conn c = {.fd = -1};
    char body[2048], ds_id[64], path[256];
    snprintf(body, sizeof body,
             "{\"name\":\"bench\",\"type\":\"image_classification\",\"format\":\"idx\","
             "\"path\":\"%s\"}",
             dsdir);
    if (http(&c, "POST", "/api/v1/datasets", body) != 201 ||
        json_str(c.buf, "id", ds_id, sizeof ds_id)) {
        fprintf(stderr, "bench_load: dataset: %s\n", c.buf);
        goto fail;
    }
    snprintf(body, sizeof body,
             "{\"name\":\"load\",\"network_arch\":\"mlp\",\"train_datasets\":[\"%s\"],"
             "\"metric\":\"val_accuracy\",\"specs\":{\"train\":{\"epochs\":%d}}}",
             ds_id, epochs_target);
    if (http(&c, "POST", "/api/v1/experiments", body) != 201 ||
        json_str(c.buf, "id", exp_id, sizeof exp_id)) {
        fprintf(stderr, "bench_load: experiment: %s\n", c.buf);
        goto fail;
    }
    snprintf(path, sizeof path, "/api/v1/experiments/%s/jobs", exp_id);
    for (int i = 0; i < nw * 2; i++)
        if (http(&c, "POST", path, "{\"action\":\"train\"}") != 201) {
            fprintf(stderr, "bench_load: job: %s\n", c.buf);
            goto fail;
        }
    idle_state idle = {.n = nidle, .naddrs = idle_addrs, .reconnect = idle_reconnect};
    if (nidle) {
        idle.fds = calloc((size_t)nidle, sizeof(int));
        for (int i = 0; i < nidle; i++)
            if ((idle.fds[i] = idle_open(i, idle_addrs)) < 0)
                idle.failed++;
        pthread_create(&idle.th, NULL, idle_main, &idle);
    }
    probe_state probe = {0};
    pthread_create(&probe.th, NULL, probe_main, &probe);
    wstate *ws = calloc((size_t)nw, sizeof *ws);
    rstate *rs = calloc((size_t)(nr ? nr : 1), sizeof *rs);
    for (int i = 0; i < nw; i++) {
        ws[i].idx = i;
        pthread_create(&ws[i].th, NULL, worker_main, &ws[i]);
    }
    for (int i = 0; i < nr; i++) {
        rs[i].ws = ws;
        rs[i].nw = nw;
        pthread_create(&rs[i].th, NULL, reader_main, &rs[i]);
    }
    usleep(1000000); /* warm-up: registrations and leases */
    long r0 = 0;
    for (int i = 0; i < nw; i++)
        r0 += ws[i].reports;
    double t0 = now_s();
    measuring = 1;
    usleep((useconds_t)(seconds * 1e6));
    long r1 = 0;
    for (int i = 0; i < nw; i++)
        r1 += ws[i].reports;
    double t1 = now_s();
    measuring = 0;
    stop_flag = 1;
    lat rep = {0}, st = {0}, li = {0};
    long errs = 0, leases = 0, rerrs = 0;
    for (int i = 0; i < nw; i++) {
        pthread_join(ws[i].th, NULL);
        for (size_t k = 0; k < ws[i].rep.n; k++)
            lat_add(&rep, ws[i].rep.v[k]);
        errs += ws[i].errors;
        leases += ws[i].leases;
    }
    for (int i = 0; i < nr; i++) {
        pthread_join(rs[i].th, NULL);
        for (size_t k = 0; k < rs[i].status.n; k++)
            lat_add(&st, rs[i].status.v[k]);
        for (size_t k = 0; k < rs[i].list.n; k++)
            lat_add(&li, rs[i].list.v[k]);
        rerrs += rs[i].errors;
    }
    pthread_join(probe.th, NULL);
    qsort(probe.lat.v, probe.lat.n, sizeof(double), cmp_d);
    int idle_open_end = 0;
    if (nidle) {
        pthread_join(idle.th, NULL);
        for (int i = 0; i < nidle; i++)
            if (idle.fds[i] >= 0) {
                idle_open_end++;
                close(idle.fds[i]);
            }
    }
    qsort(rep.v, rep.n, sizeof(double), cmp_d);
    qsort(st.v, st.n, sizeof(double), cmp_d);
    qsort(li.v, li.n, sizeof(double), cmp_d);
    printf("bench_load: %d workers, %d readers, %.1f s measured\n", nw, nr, t1 - t0);
    printf("reports:  %.0f /s sustained (%ld in window, %zu timed), leases %ld, errors %ld\n",
           (double)(r1 - r0) / (t1 - t0), r1 - r0, rep.n, leases, errs);
    printf("report latency ms:  p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n", pct(&rep, .5) * 1e3,
           pct(&rep, .9) * 1e3, pct(&rep, .99) * 1e3, pct(&rep, 1) * 1e3);
    printf("GET /jobs/{id} ms:  p50 %.2f  p99 %.2f  (%zu requests, %.0f /s)\n", pct(&st, .5) * 1e3,
           pct(&st, .99) * 1e3, st.n, (double)st.n / (t1 - t0 + 1));
    printf("GET /jobs?list ms:  p50 %.2f  p99 %.2f  (%zu requests), reader errors %ld\n",
           pct(&li, .5) * 1e3, pct(&li, .99) * 1e3, li.n, rerrs);
    printf("GET /healthz ms:    p50 %.2f  p99 %.2f  max %.2f  (%zu probes, a new connection each, "
           "non-200 %ld)\n",
           pct(&probe.lat, .5) * 1e3, pct(&probe.lat, .99) * 1e3, pct(&probe.lat, 1) * 1e3,
           probe.lat.n, probe.errors);
    if (nidle)
        printf("idle flood: %d connections from %d address(es), reconnect %s: %ld closed by the "
               "server, %ld reopened, %ld failed to open, %d open at the end\n",
               nidle, idle_addrs, idle_reconnect ? "on" : "off", idle.closed, idle.reopened,
               idle.failed, idle_open_end);
    if (ctl) {
        kill(ctl, SIGTERM);
        waitpid(ctl, NULL, 0);
    }
    return 0;
fail:
    if (ctl) {
        kill(ctl, SIGTERM);
        waitpid(ctl, NULL, 0);
    }
    return 1;
}
