/* stack: the local deployment that `hone local` and `hone demo` run: one hone-controller and N
 * hone-workers as child processes (each pinned to one GPU with --gpu when there are GPUs), logs
 * under DATA_DIR/logs, stopped in order (workers first, so they can report, then the controller).
 * Children die with us (PR_SET_PDEATHSIG). */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STACK_MAX_WORKERS 64

struct cli_stack {
    pid_t ctl;
    pid_t workers[STACK_MAX_WORKERS];
    int nworkers;
    char url[128];
    char logdir[PATH_MAX + 16];
    char data[PATH_MAX];
    int servers;  /* GPUs with a shared trainer server (--pack > 1): trainer-gpu<i>.sock */
    char **roots; /* the kept --data-root folders (DATA_DIR/data_roots) */
    int nroots;
};

static void stack_free(cli_stack *s)
{
    for (int i = 0; i < s->nroots; i++)
        free(s->roots[i]);
    free(s->roots);
    free(s);
}

int cli_find_binary(const char *bin_dir, const char *name, const char *const *rel_dirs, char *out,
                    size_t outlen)
{
    const char *env = getenv("HONE_BIN_DIR");
    const char *path = getenv("PATH");
    char cand[PATH_MAX * 2];

    if (env && env[0]) {
        snprintf(cand, sizeof(cand), "%s/%s", env, name);
        if (access(cand, X_OK) == 0)
            goto found;
    }
    for (int i = 0; bin_dir && rel_dirs && rel_dirs[i]; i++) {
        snprintf(cand, sizeof(cand), "%s/%s/%s", bin_dir, rel_dirs[i], name);
        if (access(cand, X_OK) == 0)
            goto found;
    }
    while (path && *path) {
        const char *colon = strchr(path, ':');
        size_t n = colon ? (size_t)(colon - path) : strlen(path);
        snprintf(cand, sizeof(cand), "%.*s/%s", (int)n, path, name);
        if (n > 0 && access(cand, X_OK) == 0)
            goto found;
        path = colon ? colon + 1 : NULL;
    }
    return HONE_ENOENT;
found:
    if (!realpath(cand, out))
        snprintf(out, outlen, "%s", cand);
    return HONE_OK;
}

int cli_count_gpus(const char *trainer)
{
    enum { CAP = 65536 };
    int fds[2], st = 0, n = 0;
    size_t got = 0;
    double deadline = hone_now() + 30;
    char *buf;
    pid_t pid;

    if (pipe(fds) != 0)
        return 0;
    pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return 0;
    }
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(fds[1], 1);
        if (devnull >= 0)
            dup2(devnull, 2);
        close(fds[0]);
        close(fds[1]);
        execlp(trainer, trainer, "--list-devices", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    buf = hone_xmalloc(CAP + 1);
    for (;;) {
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        int left = (int)((deadline - hone_now()) * 1000);
        int r = left > 0 ? poll(&p, 1, left) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        ssize_t k = r > 0 ? read(fds[0], buf + got, CAP - got) : -1;
        if (k < 0 && r > 0 && errno == EINTR)
            continue;
        if (r <= 0 || (k > 0 && got + (size_t)k == CAP)) { /* hung, or far too much */
            kill(pid, SIGKILL);
            got = 0;
            break;
        }
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fds[0]);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    buf[got] = '\0';
    if (got && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        json_t *doc = json_loads(buf, 0, NULL);
        json_t *g = json_object_get(doc, "gpus");
        n = json_is_array(g) ? (int)json_array_size(g) : 0;
        json_decref(doc);
    }
    free(buf);
    return n;
}

static int stack_mkdirs(const char *path)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return HONE_EIO;
            *p = '/';
        }
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return HONE_EIO;
    return HONE_OK;
}

/* Starts argv with stdout/stderr appended to log, in its own process group (Ctrl-C reaches only
 * us; we stop the children in order), killed if we die. */
static pid_t stack_spawn(char *const argv[], const char *log)
{
    pid_t parent = getpid(), pid = fork();

    if (pid != 0)
        return pid;
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(1);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0)
        dup2(devnull, 0);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
    }
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    execv(argv[0], argv);
    fprintf(stderr, "hone: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Copies the last lines of a log file into err (for "it died, here is why"). */
static void stack_log_tail(const char *log, char *err, size_t errlen)
{
    FILE *f = fopen(log, "r");
    char buf[1024];
    long sz;
    size_t n, used = strlen(err);

    if (!f)
        return;
    fseek(f, 0, SEEK_END);
    sz = ftell(f);
    fseek(f, sz > (long)sizeof(buf) - 1 ? sz - (long)sizeof(buf) + 1 : 0, SEEK_SET);
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    if (used + 32 < errlen)
        snprintf(err + used, errlen - used, "\n--- last lines of %s ---\n%s", log, buf);
}

static int stack_alive_pid(pid_t pid)
{
    int st;
    return pid > 0 && waitpid(pid, &st, WNOHANG) == 0;
}

/* The first line of a controller.yaml that `hone local` owns. A file without it (the user took it
 * over by deleting the line) is never written: the stack runs with it as it is. */
#define STACK_CFG_MARK "# generated by `hone local`/`hone demo` on every start"
/* The first line that releases before the marker wrote: their files are ours too. */
#define STACK_CFG_MARK_OLD "# written by `hone local`/`hone demo`; edit freely"

/* A path as a YAML double-quoted scalar. */
static void stack_yaml_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* Reads the kept roots (one absolute folder a line; '#' lines and blank ones skipped). */
static int stack_roots_read(const char *path, char ***roots, int *n)
{
    FILE *f = fopen(path, "r");
    char line[PATH_MAX + 2];
    if (!f)
        return errno == ENOENT ? HONE_OK : HONE_EIO;
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] != '/')
            continue;
        *roots = hone_xrealloc(*roots, sizeof(char *) * (size_t)(*n + 1));
        (*roots)[(*n)++] = hone_xstrdup(line);
    }
    fclose(f);
    return HONE_OK;
}

/* The --data-root folders, resolved (relative to the current folder) and added to the kept list
 * DATA_DIR/data_roots, written back whole (a temp file renamed over it) when one was new. A
 * folder that does not exist, or is not a folder, is refused before anything is written. */
static int stack_roots_update(const cli_stack_opts *o, const char *data, char ***roots, int *n,
                              char *err, size_t errlen)
{
    char path[PATH_MAX + 32], tmp[PATH_MAX + 40];
    int added = 0;
    snprintf(path, sizeof(path), "%s/data_roots", data);
    if (stack_roots_read(path, roots, n) != 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return HONE_EIO;
    }
    for (int i = 0; i < o->n_data_roots; i++) {
        char real[PATH_MAX];
        struct stat st;
        const char *r = o->data_roots[i];
        int dup = 0;
        if (!realpath(r, real) || stat(real, &st) != 0) {
            snprintf(err, errlen, "--data-root %s: %s (give an existing folder)", r,
                     strerror(errno));
            return HONE_EINVAL;
        }
        if (!S_ISDIR(st.st_mode)) {
            snprintf(err, errlen,
                     "--data-root %s: not a folder (give the folder that holds your "
                     "datasets)",
                     r);
            return HONE_EINVAL;
        }
        for (const char *p = real; *p; p++)
            if ((unsigned char)*p < 0x20) {
                snprintf(err, errlen, "--data-root %s: a control character in its path", r);
                return HONE_EINVAL;
            }
        for (int j = 0; j < *n; j++)
            dup |= strcmp((*roots)[j], real) == 0;
        if (dup)
            continue;
        *roots = hone_xrealloc(*roots, sizeof(char *) * (size_t)(*n + 1));
        (*roots)[(*n)++] = hone_xstrdup(real);
        added = 1;
    }
    if (!added)
        return HONE_OK;
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        return HONE_EIO;
    }
    fprintf(f, "# the data roots `hone local --data-root DIR` added (one folder a line; kept "
               "across restarts: delete a line to drop one)\n");
    for (int j = 0; j < *n; j++)
        fprintf(f, "%s\n", (*roots)[j]);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        return HONE_EIO;
    }
    return HONE_OK;
}

/* controller.yaml, generated from the choices kept in the data dir (data_roots) on every start,
 * unless the user took it over (no marker line): then it is left as it is, and --data-root, which
 * could not reach it, is refused with the fix. */
static int stack_write_config(const char *path, const cli_stack_opts *o, const char *data_dir,
                              char *const *roots, int n, char *err, size_t errlen)
{
    char tmp[PATH_MAX + 64];
    FILE *f = fopen(path, "r");
    if (f) {
        /* ours: our marker, an older release's, or an empty file (never a user's edit) */
        char first[256] = "";
        int got = fgets(first, sizeof(first), f) != NULL;
        int ours = !got || strncmp(first, STACK_CFG_MARK, strlen(STACK_CFG_MARK)) == 0 ||
                   strncmp(first, STACK_CFG_MARK_OLD, strlen(STACK_CFG_MARK_OLD)) == 0;
        fclose(f);
        if (!ours && o->n_data_roots > 0) {
            snprintf(err, errlen,
                     "%s is yours (its first line is not `hone local`'s), so --data-root cannot "
                     "be added to it: add the folder under data_roots there, or put the line "
                     "back",
                     path);
            return HONE_EINVAL;
        }
        if (!ours)
            return HONE_OK;
    }
    /* a temp file renamed over it: a kill or a full disk mid-write leaves the old file whole */
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        return HONE_EIO;
    }
    fprintf(f, STACK_CFG_MARK
            " from its flags and the data_roots file beside it, so edits here "
            "are lost.\n"
            "# Add a data root with `hone local --data-root DIR` (kept in data_roots, one "
            "folder a line).\n"
            "# To keep your own edits instead, delete the first line: hone local then uses "
            "this file as it is.\n"
            "log_format: text\n"
            "data_roots:\n  - ");
    stack_yaml_str(f, data_dir);
    fprintf(f, "\n  - \"/usr/share/datasets\"\n");
    if (o->extra_roots && o->extra_roots[0]) {
        fprintf(f, "  - ");
        stack_yaml_str(f, o->extra_roots);
        fprintf(f, "\n");
    }
    for (int i = 0; i < n; i++) {
        fprintf(f, "  - ");
        stack_yaml_str(f, roots[i]);
        fprintf(f, "\n");
    }
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        return HONE_EIO;
    }
    return HONE_OK;
}

/* Waits for the port file, then for GET /readyz to answer 200. */
static int stack_wait_ready(cli_stack *s, const char *port_file, const char *ctl_log, char *err,
                            size_t errlen)
{
    double deadline = hone_now() + 60;
    hone_rest *rest = NULL;
    int port = 0, rc = HONE_ETIMEDOUT;

    while (hone_now() < deadline && port == 0) {
        FILE *f = fopen(port_file, "r");
        if (f) {
            if (fscanf(f, "%d", &port) != 1)
                port = 0;
            fclose(f);
        }
        if (port == 0) {
            if (!stack_alive_pid(s->ctl)) {
                snprintf(err, errlen, "hone-controller exited during start");
                stack_log_tail(ctl_log, err, errlen);
                return HONE_EIO;
            }
            usleep(50000);
        }
    }
    if (port == 0) {
        snprintf(err, errlen, "hone-controller did not start listening within 60 s");
        stack_log_tail(ctl_log, err, errlen);
        return HONE_ETIMEDOUT;
    }
    snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", port);
    hone_rest_new(s->url, NULL, &rest);
    while (hone_now() < deadline) {
        hone_rest_resp resp;
        if (hone_rest_call(rest, "GET", "/readyz", NULL, 5, &resp, NULL, 0) == 0) {
            long st = resp.status;
            hone_rest_resp_clear(&resp);
            if (st == 200) {
                rc = HONE_OK;
                break;
            }
        }
        if (!stack_alive_pid(s->ctl)) {
            snprintf(err, errlen, "hone-controller exited during start");
            stack_log_tail(ctl_log, err, errlen);
            rc = HONE_EIO;
            break;
        }
        usleep(100000);
    }
    if (rc == HONE_ETIMEDOUT)
        snprintf(err, errlen, "hone-controller at %s was not ready within 60 s", s->url);
    hone_rest_free(rest);
    return rc;
}

int cli_stack_start(const cli_stack_opts *o, cli_stack **out, char *err, size_t errlen)
{
    static const char *const ctl_rel[] = {"../controller", ".", NULL};
    static const char *const wrk_rel[] = {"../worker", ".", NULL};
    static const char *const trn_rel[] = {"../train", ".", NULL};
    char ctl_bin[PATH_MAX], wrk_bin[PATH_MAX], trn_bin[PATH_MAX], data[PATH_MAX];
    char cfg[PATH_MAX + 32], port_file[PATH_MAX + 32], log[PATH_MAX + 128], listen[64];
    cli_stack *s;
    int rc;

    *out = NULL;
    int found =
        cli_find_binary(o->bin_dir, "hone-controller", ctl_rel, ctl_bin, sizeof(ctl_bin)) == 0 &&
        cli_find_binary(o->bin_dir, "hone-worker", wrk_rel, wrk_bin, sizeof(wrk_bin)) == 0;
    if (o->trainer) /* hone local --trainer */
        snprintf(trn_bin, sizeof(trn_bin), "%s", o->trainer);
    else if (found)
        found = cli_find_binary(o->bin_dir, "hone-train", trn_rel, trn_bin, sizeof(trn_bin)) == 0;
    if (!found) {
        snprintf(err, errlen,
                 "cannot find hone-controller, hone-worker and hone-train (looked in "
                 "$HONE_BIN_DIR, the build tree beside %s, and PATH); build them first",
                 o->bin_dir ? o->bin_dir : "hone");
        return HONE_ENOENT;
    }
    if (stack_mkdirs(o->data_dir) != 0 || !realpath(o->data_dir, data)) {
        snprintf(err, errlen, "cannot create data dir %s: %s", o->data_dir, strerror(errno));
        return HONE_EIO;
    }
    if (o->gpus > 0 && o->pack > 1 &&
        strlen(data) + sizeof("/trainer-gpu00.sock") >
            sizeof(((struct sockaddr_un *)0)->sun_path)) {
        snprintf(err, errlen,
                 "the data dir %s is too long a path for the trainer servers' unix sockets; pass "
                 "a shorter --data-dir, or --pack 1",
                 data);
        return HONE_EINVAL;
    }
    s = hone_xcalloc(1, sizeof(*s));
    snprintf(s->logdir, sizeof(s->logdir), "%s/logs", data);
    snprintf(s->data, sizeof(s->data), "%s", data);
    s->servers = o->gpus > 0 && o->pack > 1 ? o->gpus : 0;
    stack_mkdirs(s->logdir);
    snprintf(cfg, sizeof(cfg), "%s/controller.yaml", data);
    snprintf(port_file, sizeof(port_file), "%s/controller.port", data);
    unlink(port_file);
    rc = stack_roots_update(o, data, &s->roots, &s->nroots, err, errlen);
    if (rc == 0)
        rc = stack_write_config(cfg, o, data, s->roots, s->nroots, err, errlen);
    if (rc != 0) {
        stack_free(s);
        return rc;
    }
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", o->port);
    snprintf(log, sizeof(log), "%s/controller.log", s->logdir);
    {
        char *argv[] = {ctl_bin,      "--config", cfg,           "--listen", listen,
                        "--data-dir", data,       "--port-file", port_file,  NULL};
        s->ctl = stack_spawn(argv, log);
    }
    if (s->ctl < 0) {
        snprintf(err, errlen, "fork failed: %s", strerror(errno));
        stack_free(s);
        return HONE_EIO;
    }
    rc = stack_wait_ready(s, port_file, log, err, errlen);
    if (rc != 0) {
        cli_stack_stop(s);
        return rc;
    }
    for (int i = 0; i < o->workers && i < STACK_MAX_WORKERS; i++) {
        char name[32], wdir[PATH_MAX + 64], threads[16], gpu[16], sock[PATH_MAX + 32];
        snprintf(name, sizeof(name), "local-%d", i + 1);
        snprintf(wdir, sizeof(wdir), "%s/workers/%s", data, name);
        snprintf(threads, sizeof(threads), "%d", o->threads);
        snprintf(gpu, sizeof(gpu), "%d", o->gpus > 0 ? i % o->gpus : 0);
        snprintf(log, sizeof(log), "%s/worker-%d.log", s->logdir, i + 1);
        char *argv[] = {wrk_bin,
                        "--controller",
                        s->url,
                        "--name",
                        name,
                        "--work-dir",
                        wdir,
                        "--device",
                        (char *)(o->device ? o->device : "auto"),
                        "--trainer",
                        trn_bin,
                        "--threads",
                        threads,
                        "--storage",
                        (char *)(o->storage ? o->storage : "shared"),
                        NULL,
                        NULL,
                        NULL,
                        NULL,
                        NULL};
        if (o->gpus > 0) { /* one GPU each: the worker sets CUDA_VISIBLE_DEVICES for its trainers */
            argv[HONE_ARRAY_LEN(argv) - 5] = "--gpu";
            argv[HONE_ARRAY_LEN(argv) - 4] = gpu;
        }
        if (o->gpus > 0 && o->pack > 1) { /* the workers of a GPU share its trainer server */
            snprintf(sock, sizeof(sock), "%s/trainer-gpu%d.sock", data, i % o->gpus);
            argv[HONE_ARRAY_LEN(argv) - 3] = "--trainer-socket";
            argv[HONE_ARRAY_LEN(argv) - 2] = sock;
        }
        s->workers[s->nworkers] = stack_spawn(argv, log);
        if (s->workers[s->nworkers] > 0)
            s->nworkers++;
    }
    *out = s;
    return HONE_OK;
}

const char *cli_stack_url(const cli_stack *s)
{
    return s->url;
}

int cli_stack_roots(const cli_stack *s, char *const **roots)
{
    *roots = s->roots;
    return s->nroots;
}

int cli_stack_alive(cli_stack *s, char *err, size_t errlen)
{
    char log[PATH_MAX + 128];

    if (!stack_alive_pid(s->ctl)) {
        snprintf(err, errlen, "hone-controller exited");
        snprintf(log, sizeof(log), "%s/controller.log", s->logdir);
        stack_log_tail(log, err, errlen);
        s->ctl = -1;
        return 0;
    }
    for (int i = 0; i < s->nworkers; i++) {
        if (s->workers[i] > 0 && !stack_alive_pid(s->workers[i])) {
            snprintf(err, errlen, "hone-worker %d exited", i + 1);
            snprintf(log, sizeof(log), "%s/worker-%d.log", s->logdir, i + 1);
            stack_log_tail(log, err, errlen);
            s->workers[i] = -1;
            return 0;
        }
    }
    return 1;
}

/* SIGTERM to each pid, then SIGKILL to whatever is left after grace seconds; reaps all. */
static void stack_stop_pids(pid_t *pids, int n, double grace)
{
    double deadline = hone_now() + grace;
    int left;

    for (int i = 0; i < n; i++)
        if (pids[i] > 0)
            kill(pids[i], SIGTERM);
    do {
        left = 0;
        for (int i = 0; i < n; i++) {
            int st;
            if (pids[i] <= 0)
                continue;
            if (waitpid(pids[i], &st, WNOHANG) != 0)
                pids[i] = -1;
            else
                left++;
        }
        if (left)
            usleep(50000);
    } while (left && hone_now() < deadline);
    for (int i = 0; i < n; i++) {
        if (pids[i] > 0) {
            kill(-pids[i], SIGKILL);
            kill(pids[i], SIGKILL);
            waitpid(pids[i], NULL, 0);
            pids[i] = -1;
        }
    }
}

/* The shared trainer servers the workers started (--pack): detached from us, they would end only
 * when idle for a minute, holding their GPU; once the workers are gone they run nothing, so each
 * one found listening (its pid from the socket's peer credentials, our own user only) is ended. */
static void stack_stop_servers(cli_stack *s)
{
    pid_t pids[STACK_MAX_WORKERS];
    int n = 0;

    for (int i = 0; i < s->servers && n < STACK_MAX_WORKERS; i++) {
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        struct ucred cred;
        socklen_t len = sizeof(cred);
        char path[PATH_MAX + 32];
        int fd;

        snprintf(path, sizeof(path), "%s/trainer-gpu%d.sock", s->data, i);
        if (strlen(path) >= sizeof(a.sun_path))
            continue;
        memcpy(a.sun_path, path, strlen(path) + 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
            getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.pid > 0 &&
            cred.uid == getuid())
            pids[n++] = cred.pid;
        if (fd >= 0)
            close(fd);
    }
    double deadline = hone_now() + 1; /* SIGTERM cancels its jobs (none now), SIGKILL ends it */
    for (int i = 0; i < n; i++)
        kill(pids[i], SIGTERM);
    for (int i = 0; i < n; i++) {
        while (kill(pids[i], 0) == 0 && hone_now() < deadline)
            usleep(50000);
        if (kill(pids[i], 0) == 0)
            kill(pids[i], SIGKILL);
    }
}

void cli_stack_stop(cli_stack *s)
{
    if (!s)
        return;
    stack_stop_pids(s->workers, s->nworkers, 20);
    stack_stop_servers(s);
    stack_stop_pids(&s->ctl, 1, 10);
    stack_free(s);
}
