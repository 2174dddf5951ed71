/* train/serve_stdin.c: hone-train --serve, the resident trainer on stdin (main.c says what it
 * does): its options, the loop reading one request a line, the alive lines and the signal that
 * cancels the running job; with --listen it hands over to serve_listen.c. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "serve.h"
#include "train.h"

static volatile sig_atomic_t serve_cancel;
static atomic_int serve_busy;
static int serve_alive_ms = 2000;

/* {"event":"alive"} every serve_alive_ms while a job runs (whole lines: stdout's lock). */
static void *serve_alive(void *arg)
{
    (void)arg;
    for (;;) {
        usleep((useconds_t)serve_alive_ms * 1000);
        if (!atomic_load(&serve_busy))
            continue;
        flockfile(stdout);
        fputs("{\"event\":\"alive\"}\n", stdout);
        fflush(stdout);
        funlockfile(stdout);
    }
    return NULL;
}

static void serve_signal(int sig)
{
    (void)sig;
    serve_cancel = 1;
}

/* One request line: the job's exit status (2 for a malformed request). *restart: the job failed on
 * a GPU, whose context may be broken for good: the server must end. */
static int serve_one(const char *line, hone_train_cache *cache, int *restart)
{
    json_t *j;
    char **argv;
    int argc;
    if (train_serve_parse(line, stderr, &j, &argv, &argc) < 0)
        return 2;
    int code = train_run_argv(argc, argv, cache, &serve_cancel, stdout, stderr);
    if (code != 0 && serve_cancel) {
        fprintf(stderr, "hone-train: serve: job cancelled by a signal\n");
        code = 128 + SIGTERM;
    } else if (code == 1) {
        *restart = hone_train_cache_cuda(cache);
        hone_train_cache_clear(cache); /* the device may be in an error state */
    }
    free(argv);
    json_decref(j);
    return code;
}

int train_serve(int argc, char **argv)
{
    int ncache = 2, idle_exit = -1, pack_window_ms = 0, pack_max = 8;
    const char *listen_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--serve") == 0)
            continue;
        if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc) {
            listen_path = argv[++i];
            continue;
        }
        if (strcmp(argv[i], "--idle-exit") == 0 && i + 1 < argc) {
            if (train_parse_int(stderr, argv[i], argv[i + 1], 0, &idle_exit) < 0)
                return 2;
            i++;
            continue;
        }
        if (strcmp(argv[i], "--pack-window-ms") == 0 && i + 1 < argc) {
            if (train_parse_int(stderr, argv[i], argv[i + 1], 0, &pack_window_ms) < 0)
                return 2;
            i++;
            continue;
        }
        if (strcmp(argv[i], "--pack-max") == 0 && i + 1 < argc) {
            if (train_parse_int(stderr, argv[i], argv[i + 1], 1, &pack_max) < 0 || pack_max > 64) {
                fprintf(stderr, "hone-train: --pack-max: 1 to 64\n");
                return 2;
            }
            i++;
            continue;
        }
        if (strcmp(argv[i], "--serve-alive-ms") == 0 && i + 1 < argc) {
            if (train_parse_int(stderr, argv[i], argv[i + 1], 10, &serve_alive_ms) < 0)
                return 2;
            i++;
            continue;
        }
        if (strcmp(argv[i], "--serve-cache") == 0 && i + 1 < argc) {
            if (train_parse_int(stderr, argv[i], argv[i + 1], 0, &ncache) < 0 || ncache > 64) {
                fprintf(stderr, "hone-train: --serve-cache: at most 64\n");
                return 2;
            }
            i++;
            continue;
        }
        fprintf(
            stderr,
            "hone-train: --serve takes only --serve-cache N, --serve-alive-ms MS, --listen PATH, "
            "--idle-exit S, --pack-window-ms MS and --pack-max N, not %s\n",
            argv[i]);
        return 2;
    }
    if ((idle_exit >= 0 || pack_window_ms > 0) && !listen_path) {
        fprintf(stderr, "hone-train: --idle-exit and --pack-window-ms need --listen\n");
        return 2;
    }
    if (listen_path)
        return train_serve_listen(listen_path, ncache, serve_alive_ms,
                                  idle_exit > 0 ? idle_exit : 0, pack_window_ms, pack_max);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = serve_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    hone_train_cache *cache;
    if (hone_train_cache_new(ncache, &cache) < 0)
        return 1;
    pthread_t alive;
    if (pthread_create(&alive, NULL, serve_alive, NULL) == 0)
        pthread_detach(alive);
    fprintf(stderr, "hone-train: serving (cache: %d datasets)\n", ncache);
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, stdin) >= 0) {
        if (strspn(line, " \t\r\n") == strlen(line))
            continue;
        serve_cancel = 0;
        flockfile(stdout);
        fputs("{\"event\":\"accepted\"}\n", stdout);
        fflush(stdout);
        funlockfile(stdout);
        atomic_store(&serve_busy, 1);
        int restart = 0, code = serve_one(line, cache, &restart);
        atomic_store(&serve_busy, 0);
        long hits, misses;
        hone_train_cache_stats(cache, &hits, &misses);
        fprintf(stderr, "hone-train: serve: job exit %d (dataset cache: %ld hits, %ld misses)\n",
                code, hits, misses);
        flockfile(stdout);
        printf("{\"event\":\"exit\",\"code\":%d%s}\n", code, restart ? ",\"restart\":true" : "");
        int bad = fflush(stdout) != 0;
        funlockfile(stdout);
        if (bad || restart)
            break;
    }
    free(line);
    hone_train_cache_free(cache);
    return 0;
}
