/* train/main.c: the hone-train command: parses arguments, loads the spec with its overrides and
 * calls hone_train_run, or with --evaluate / --infer / --export hone_train_evaluate /
 * hone_train_infer / hone_train_export on a trained model (its spec.yaml is the spec unless --spec
 * names one). Exit 0 on success (also when paused by --epochs-until), 2 for a bad spec or usage, 1
 * for any other failure. Metrics go to stdout as JSON lines, logs to stderr.
 *
 * hone-train --serve [--serve-cache N]: the resident trainer. It reads one request a line on
 * stdin, {"run": ["--spec", "FILE", "--set", "k=v", ...]} (the arguments of one hone-train run,
 * without the program name), runs it in this process exactly as `hone-train ARGS` would (the same
 * stdout lines and files), then writes {"event":"exit","code":N} with the exit status that run
 * would have had, and waits for the next request; it ends at the end of stdin. Between jobs it
 * keeps the kernel context and the last N datasets (default 2) on the device (hone_train_cache).
 * SIGTERM or SIGINT ends the job running at the time, not the server: training stops before its
 * next step, nothing more is written (the job's last checkpoint stands) and its exit line says
 * code 143, as for a hone-train killed by SIGTERM; a signal while no job runs is ignored. A
 * request that is not such a line gets code 2; a job that fails (code 1) drops the cache, and on
 * a GPU (whose context may be broken for the process's life) ends the server: its exit line then
 * says "restart": true.
 * Two more stdout lines are the server's own, for whoever drives it (hone-worker --resident):
 * {"event":"accepted"} as soon as a request is read, and {"event":"alive"} every
 * --serve-alive-ms (default 2000) while a job runs, so that a server that stops answering can be
 * told from a long epoch.
 *
 * hone-train --serve --listen PATH [--idle-exit S]: the same requests over the connections of a
 * unix socket, each connection served by its own thread, so that the jobs of several connections
 * train at the same time in this one process (packed trials; serve_listen.c says how).
 *
 * args.c parses and runs one command line, serve_stdin.c serves.
 *
 * hone-train --pack-file FILE [--threads N]: the trials of FILE (one JSON array of ARGS a line)
 * in one fused step (hone_train_run_pack, train/run_pack.c); see pack_file below. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "serve.h"
#include "train.h"
#include "hone.h"

/* A --pack-file trial's end: its reason on stderr, its trial_exit line on stdout at once. */
typedef struct {
    int trial, *code;
} pack_file_slot;

static void pack_file_exit(int trial, int code)
{
    flockfile(stdout);
    printf("{\"event\":\"trial_exit\",\"trial\":%d,\"code\":%d}\n", trial, code);
    fflush(stdout);
    funlockfile(stdout);
}

static void pack_file_end(int rc, const char *err, void *user)
{
    pack_file_slot *sl = user;
    if (rc < 0)
        fprintf(stderr, "hone-train: trial %d: %s\n", sl->trial,
                err && err[0] ? err : hone_strerror(rc));
    *sl->code = rc < 0 ? 1 : 0; /* as hone-train exits after a failed run */
    pack_file_exit(sl->trial, *sl->code);
}

/* hone-train --pack-file FILE [--threads N]: the trials of FILE, one a line (the JSON array of a
 * trial's hone-train arguments, as a --serve {"run": ARGS} request; each needs --out), trained
 * together by hone_train_run_pack. Their epoch lines go to their --out metrics.jsonl only; stdout
 * gets {"event":"trial_exit","trial":i,"code":rc} as each trial ends (a bad line at once; rc: what
 * `hone-train ARGS` would exit with). Exit 0 when every trial's code is 0, else 1 (2: the file
 * cannot be read). */
static int pack_file(const char *path, int threads)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "hone-train: --pack-file %s: %s\n", path, strerror(errno));
        return 2;
    }
    run_args **a = NULL;
    json_t **req = NULL;
    char ***argvs = NULL, *line = NULL;
    int n = 0, *code = NULL, all_ok = 1;
    size_t cap = 0;
    while (getline(&line, &cap, f) >= 0) {
        if (strspn(line, " \t\r\n") == strlen(line))
            continue;
        a = hone_xrealloc(a, sizeof(*a) * (size_t)(n + 1));
        req = hone_xrealloc(req, sizeof(*req) * (size_t)(n + 1));
        argvs = hone_xrealloc(argvs, sizeof(*argvs) * (size_t)(n + 1));
        code = hone_xrealloc(code, sizeof(*code) * (size_t)(n + 1));
        a[n] = NULL;
        req[n] = NULL;
        argvs[n] = NULL;
        char *wrapped = hone_xmalloc(strlen(line) + 16);
        sprintf(wrapped, "{\"run\": %s}", line);
        int argc;
        code[n] = train_serve_parse(wrapped, stderr, &req[n], &argvs[n], &argc) < 0 ? 2 : -1;
        free(wrapped);
        if (code[n] < 0)
            code[n] = train_args_parse(argc, argvs[n], NULL, NULL, stdout, stderr, &a[n]);
        hone_train_opts *t = code[n] < 0 ? train_args_training(a[n]) : NULL;
        if (code[n] < 0 && (!t || !t->out_dir)) {
            fprintf(stderr, "hone-train: --pack-file: trial %d: a training run with --out\n", n);
            code[n] = 2;
        }
        if (code[n] < 0) {
            t->print_json = 0; /* its lines are in its --out's metrics.jsonl */
            if (threads >= 0)
                t->threads = threads;
        }
        n++;
    }
    free(line);
    fclose(f);
    const hone_train_opts **o = hone_xcalloc((size_t)n + 1, sizeof(*o));
    pack_file_slot *sl = hone_xcalloc((size_t)n + 1, sizeof(*sl));
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (code[i] >= 0) {
            pack_file_exit(i, code[i]);
            continue;
        }
        sl[i] = (pack_file_slot){i, &code[i]};
        hone_train_opts *t = train_args_training(a[i]);
        t->on_end = pack_file_end;
        t->user = &sl[i];
        o[m++] = t;
    }
    if (m > 0) {
        hone_train_result *res = hone_xcalloc((size_t)m, sizeof(*res));
        int *rc = hone_xcalloc((size_t)m, sizeof(int));
        char(*err)[256] = hone_xcalloc((size_t)m, sizeof(*err));
        hone_train_run_pack(o, m, res, rc, err); /* the codes come through pack_file_end */
        free(res);
        free(rc);
        free(err);
    }
    for (int i = 0; i < n; i++) {
        all_ok &= code[i] == 0;
        train_args_free(a[i]);
        free(argvs[i]);
        json_decref(req[i]);
    }
    free(o);
    free(sl);
    free(a);
    free(req);
    free(argvs);
    free(code);
    return all_ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) /* the version of every Hone program, one string */
        if (!strcmp(argv[i], "--version"))
            return printf("hone-train %s\n", hone_version()) < 0;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--serve") == 0)
            return train_serve(argc, argv);
    if (argc >= 3 && strcmp(argv[1], "--pack-file") == 0) {
        int threads = -1;
        if (argc == 5 && strcmp(argv[3], "--threads") == 0 &&
            train_parse_int(stderr, argv[3], argv[4], 0, &threads) < 0)
            return 2;
        if (argc != 3 && argc != 5) {
            fprintf(stderr, "hone-train: --pack-file FILE [--threads N]\n");
            return 2;
        }
        return pack_file(argv[2], threads);
    }
    return train_run_argv(argc, argv, NULL, NULL, stdout, stderr);
}
