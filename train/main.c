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
 * hone-train --pack-file FILE [--threads N]: the trials of FILE (one JSON array of ARGS a line)
 * in one fused step (hone_train_run_pack, train/run_pack.c); see pack_file below. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "kernels.h"
#include "serve.h"
#include "train.h"

static void usage(FILE *f)
{
    fputs(
        "usage: hone-train --spec FILE [--set key=value]... [--out DIR] [--resume CKPT|auto]\n"
        "                  [--epochs-until N] [--device cpu|cuda|auto] [--threads N]\n"
        "       hone-train --evaluate MODEL [--set data.path=...]... [--out DIR] [--device D]\n"
        "       hone-train --infer MODEL FOLDER [--out DIR] [--device D] [--threads N]\n"
        "       hone-train --export MODEL OUT.onnx [--device D]   (ONNX, opset 17)\n"
        "                  (MODEL: a --out folder with model.bin, model.json and spec.yaml)\n"
        "       hone-train --print-spec [--spec FILE] [--set key=value]...\n"
        "       hone-train --list-devices   (JSON: the GPUs this build can train on)\n"
        "       hone-train --pack-file FILE [--threads N]   (packed trials, one fused step:\n"
        "                  FILE has one trial a line, the JSON array of its ARGS, each with\n"
        "                  --out; prints {\"event\":\"trial_exit\",\"trial\":i,\"code\":N} each)\n"
        "       hone-train --serve [--serve-cache N] [--serve-alive-ms MS]\n"
        "                  (resident: one {\"run\": [ARGS]} a line on stdin)\n"
        "       hone-train --serve --listen SOCKET [--idle-exit S] [--serve-cache N]\n"
        "                  [--serve-alive-ms MS]   (packed: one job per connection, at once)\n"
        "                  [--pack-window-ms MS] [--pack-max N]   (jobs of one pack key that\n"
        "                  arrive within MS of the first train in one fused step, up to N)\n",
        f);
}

/* {"gpus": [{"index", "name", "memory_bytes", "uuid"}]}: what hone-worker registers (it links no
 * CUDA). uuid ("GPU-...", as nvidia-smi prints it) is left out when the driver does not say. */
static int list_devices(FILE *out)
{
    int n = hone_cuda_device_count();
    flockfile(out); /* one line whole under --serve */
    fprintf(out, "{\"gpus\":[");
    for (int i = 0; i < n; i++) {
        char name[256] = "";
        size_t mem = 0;
        if (hone_cuda_device_name(i, name, sizeof(name), &mem) != 0)
            snprintf(name, sizeof(name), "gpu%d", i);
        for (char *p = name; *p; p++) /* names are plain ASCII; keep the JSON valid whatever */
            if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
                *p = ' ';
        char uuid[64] = "";
        if (hone_cuda_device_uuid(i, uuid, sizeof(uuid)) != 0)
            uuid[0] = '\0';
        fprintf(out, "%s{\"index\":%d,\"name\":\"%s\",\"memory_bytes\":%zu", i ? "," : "", i, name,
                mem);
        if (uuid[0]) /* hex digits and dashes only */
            fprintf(out, ",\"uuid\":\"%s\"", uuid);
        fprintf(out, "}");
    }
    fprintf(out, "]}\n");
    int rc = fflush(out) == 0 ? 0 : 1;
    funlockfile(out);
    return rc;
}

/* --evaluate (folder NULL) or --infer. Without --out the result goes to stdout; with --out DIR,
 * evaluate also writes DIR/evaluate.json, and infer writes its labels to DIR/labels.jsonl (a temp
 * file renamed into place) and prints {"event":"inference","images":N,"labels":"labels.jsonl"}. */
static int action(const hone_train_opts *o, const char *model, const char *folder, char *err,
                  size_t errlen)
{
    char path[1200], tmp[1210];
    FILE *out = o->out ? o->out : stdout;
    if (!o->out_dir)
        return folder ? hone_train_infer(o, model, folder, out, NULL, err, errlen)
                      : hone_train_evaluate(o, model, out, err, errlen);
    if (mkdir(o->out_dir, 0755) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "--out %.400s: %s", o->out_dir, strerror(errno));
        return HONE_EIO;
    }
    snprintf(path, sizeof(path), "%s/%s", o->out_dir, folder ? "labels.jsonl" : "evaluate.json");
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, errlen, "%.400s: %s", tmp, strerror(errno));
        return HONE_EIO;
    }
    int n = 0;
    int rc = folder ? hone_train_infer(o, model, folder, f, &n, err, errlen)
                    : hone_train_evaluate(o, model, f, err, errlen);
    if (fclose(f) != 0 && rc == 0) {
        snprintf(err, errlen, "%.400s: %s", tmp, strerror(errno));
        rc = HONE_EIO;
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        snprintf(err, errlen, "%.400s: %s", path, strerror(errno));
        rc = HONE_EIO;
    }
    if (rc < 0) {
        unlink(tmp);
        return rc;
    }
    if (folder) {
        fprintf(out, "{\"event\":\"inference\",\"images\":%d,\"labels\":\"labels.jsonl\"}\n", n);
    } else { /* the one line, to stdout as well */
        char line[1 << 16];
        FILE *r = fopen(path, "r");
        while (r && fgets(line, sizeof(line), r))
            fputs(line, out);
        if (r)
            fclose(r);
    }
    return fflush(out) == 0 ? 0 : HONE_EIO;
}

static int parse_int(FILE *log, const char *flag, const char *v, int lo, int *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < lo || x > 1000000) {
        fprintf(log, "hone-train: %s: expected an integer >= %d, got '%s'\n", flag, lo, v);
        return -1;
    }
    *out = (int)x;
    return 0;
}

/* One command line's spec and options (args_parse), what train_run_argv runs. */
struct run_args {
    hone_train_spec spec;
    hone_train_opts o; /* o.spec: &spec */
    char autopath[1100], model_spec[1100];
    const char *model, *folder, *onnx;
    int print_spec;
};

/* Parses argv into *a (a->o.spec points into a: a must not move afterwards). -1: go on and run;
 * else the exit status the command ends with now (--help, --list-devices, a bad spec or usage,
 * with the reason on log). */
static int args_parse(int argc, char **argv, hone_train_cache *cache, volatile sig_atomic_t *cancel,
                      FILE *out, FILE *log, run_args *a)
{
    memset(a, 0, sizeof(*a));
    hone_train_spec *spec = &a->spec;
    hone_train_spec_defaults(spec);
    a->o = (hone_train_opts){.spec = spec,
                             .device = "auto",
                             .print_json = 1,
                             .cache = cache,
                             .cancel = cancel,
                             .out = out,
                             .log = log};
    hone_train_opts *o = &a->o;
    char err[512] = "";
    const char *spec_path = NULL;
    /* the spec file first, so --set overrides apply on top of it wherever they appear; a model's
     * own spec.yaml unless --spec is given */
    for (int i = 1; i < argc - 1; i++) {
        if (strcmp(argv[i], "--spec") == 0)
            spec_path = argv[i + 1];
        if (strcmp(argv[i], "--evaluate") == 0 || strcmp(argv[i], "--infer") == 0 ||
            strcmp(argv[i], "--export") == 0)
            a->model = argv[i + 1];
    }
    if (a->model && !spec_path) {
        snprintf(a->model_spec, sizeof(a->model_spec), "%s/spec.yaml", a->model);
        spec_path = a->model_spec;
    }
    if (spec_path && hone_train_spec_load_file(spec, spec_path, err, sizeof(err)) < 0) {
        fprintf(log, "hone-train: %s\n", err);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
            usage(out);
            return 0;
        }
        if (strcmp(f, "--print-spec") == 0) {
            a->print_spec = 1;
            continue;
        }
        if (strcmp(f, "--list-devices") == 0)
            return list_devices(out);
        if (strcmp(f, "--infer") == 0 || strcmp(f, "--export") == 0) {
            int inf = f[2] == 'i';
            if (i + 2 >= argc) {
                fprintf(log, "hone-train: %s: want MODEL %s\n", f, inf ? "FOLDER" : "OUT.onnx");
                return 2;
            }
            *(inf ? &a->folder : &a->onnx) = argv[i + 2];
            i += 2;
            continue;
        }
        if (!v) {
            fprintf(log, "hone-train: %s: missing value or unknown option\n", f);
            usage(log);
            return 2;
        }
        i++;
        if (strcmp(f, "--spec") == 0 || strcmp(f, "--evaluate") == 0)
            continue;
        if (strcmp(f, "--set") == 0) {
            if (hone_train_spec_set(spec, v, err, sizeof(err)) < 0) {
                fprintf(log, "hone-train: %s\n", err);
                return 2;
            }
        } else if (strcmp(f, "--out") == 0) {
            o->out_dir = v;
        } else if (strcmp(f, "--resume") == 0) {
            o->resume_path = v;
        } else if (strcmp(f, "--device") == 0) {
            o->device = v;
        } else if (strcmp(f, "--threads") == 0) {
            if (parse_int(log, f, v, 0, &o->threads) < 0)
                return 2;
        } else if (strcmp(f, "--epochs-until") == 0) {
            if (parse_int(log, f, v, 1, &o->epochs_until) < 0)
                return 2;
        } else {
            fprintf(log, "hone-train: unknown option %s\n", f);
            usage(log);
            return 2;
        }
    }
    if (hone_train_spec_validate(spec, err, sizeof(err)) < 0) {
        fprintf(log, "hone-train: %s\n", err);
        return 2;
    }
    if (o->device && strcmp(o->device, "cpu") && strcmp(o->device, "cuda") &&
        strcmp(o->device, "auto") && !a->print_spec) {
        fprintf(log, "hone-train: --device: '%s' is not one of cpu, cuda, auto\n", o->device);
        return 2;
    }
    /* --resume auto: continue from --out's checkpoint when there is one, else start fresh */
    if (o->resume_path && strcmp(o->resume_path, "auto") == 0) {
        struct stat st;
        o->resume_path = NULL;
        if (o->out_dir) {
            snprintf(a->autopath, sizeof(a->autopath), "%s/checkpoint.bin", o->out_dir);
            if (stat(a->autopath, &st) == 0)
                o->resume_path = a->autopath;
        }
    }
    return -1;
}

int train_args_parse(int argc, char **argv, hone_train_cache *cache, volatile sig_atomic_t *cancel,
                     FILE *out, FILE *log, run_args **a)
{
    *a = hone_xmalloc(sizeof(**a));
    return args_parse(argc, argv, cache, cancel, out, log, *a);
}

const hone_train_opts *train_args_training(const run_args *a)
{
    return a->model || a->print_spec ? NULL : &a->o;
}

void train_args_free(run_args *a)
{
    free(a);
}

int train_args_exec(run_args *a)
{
    char err[512] = "";
    hone_train_opts *o = &a->o;
    FILE *out = o->out, *log = o->log;
    if (a->print_spec)
        return hone_train_spec_write(&a->spec, out) < 0;
    if (a->model && a->onnx) { /* {"event":"export","file" (OUT.onnx's name),"bytes","opset"} */
        size_t bytes = 0;
        int rc = hone_train_export(o, a->model, a->onnx, &bytes, err, sizeof(err));
        if (rc < 0) {
            fprintf(log, "hone-train: %s\n", err[0] ? err : hone_strerror(rc));
            return 1;
        }
        const char *onnx = a->onnx, *base = strrchr(onnx, '/') ? strrchr(onnx, '/') + 1 : onnx;
        json_t *j = json_pack("{s:s, s:s, s:I, s:i}", "event", "export", "file", base, "bytes",
                              (json_int_t)bytes, "opset", 17);
        char *line = j ? json_dumps(j, JSON_COMPACT) : NULL;
        int ok = line && fprintf(out, "%s\n", line) > 0 && fflush(out) == 0;
        free(line);
        json_decref(j);
        return ok ? 0 : 1;
    }
    int rc;
    if (a->model) {
        rc = action(o, a->model, a->folder, err, sizeof(err));
    } else {
        hone_train_result res;
        rc = hone_train_run(o, &res, err, sizeof(err));
    }
    if (rc < 0) {
        fprintf(log, "hone-train: %s\n", err[0] ? err : hone_strerror(rc));
        return 1;
    }
    return 0;
}

int train_run_argv(int argc, char **argv, hone_train_cache *cache, volatile sig_atomic_t *cancel,
                   FILE *out, FILE *log)
{
    run_args *a;
    int code = train_args_parse(argc, argv, cache, cancel, out, log, &a);
    if (code < 0)
        code = train_args_exec(a);
    train_args_free(a);
    return code;
}

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
        a[n] = hone_xmalloc(sizeof(run_args));
        req[n] = NULL;
        argvs[n] = NULL;
        char *wrapped = hone_xmalloc(strlen(line) + 16);
        sprintf(wrapped, "{\"run\": %s}", line);
        int argc;
        code[n] = train_serve_parse(wrapped, stderr, &req[n], &argvs[n], &argc) < 0 ? 2 : -1;
        free(wrapped);
        if (code[n] < 0)
            code[n] = args_parse(argc, argvs[n], NULL, NULL, stdout, stderr, a[n]);
        if (code[n] < 0 && (a[n]->model || a[n]->print_spec || !a[n]->o.out_dir)) {
            fprintf(stderr, "hone-train: --pack-file: trial %d: a training run with --out\n", n);
            code[n] = 2;
        }
        if (code[n] < 0) {
            a[n]->o.print_json = 0; /* its lines are in its --out's metrics.jsonl */
            if (threads >= 0)
                a[n]->o.threads = threads;
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
        a[i]->o.on_end = pack_file_end;
        a[i]->o.user = &sl[i];
        o[m++] = &a[i]->o;
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
        free(a[i]);
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

int train_serve_parse(const char *line, FILE *log, json_t **req, char ***argv, int *argc)
{
    json_error_t je;
    json_t *j = json_loads(line, 0, &je), *args = json_object_get(j, "run");
    size_t n = json_array_size(args);
    *req = NULL;
    *argv = NULL;
    *argc = 0;
    if (!json_is_object(j) || !json_is_array(args) || json_object_size(j) != 1 || n > 4096) {
        fprintf(log, "hone-train: serve: want {\"run\": [ARGS]}, got: %.200s\n", line);
        json_decref(j);
        return HONE_EPARSE;
    }
    char **v = hone_xcalloc(n + 2, sizeof(char *));
    v[0] = "hone-train";
    for (size_t i = 0; i < n; i++) {
        const char *a = json_string_value(json_array_get(args, i));
        if (!a || strncmp(a, "--serve", 7) == 0) {
            fprintf(log, "hone-train: serve: argument %zu: want a string, not --serve\n", i);
            free(v);
            json_decref(j);
            return HONE_EPARSE;
        }
        v[i + 1] = (char *)a;
    }
    *req = j;
    *argv = v;
    *argc = (int)n + 1;
    return HONE_OK;
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

static int serve(int argc, char **argv)
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
            if (parse_int(stderr, argv[i], argv[i + 1], 0, &idle_exit) < 0)
                return 2;
            i++;
            continue;
        }
        if (strcmp(argv[i], "--pack-window-ms") == 0 && i + 1 < argc) {
            if (parse_int(stderr, argv[i], argv[i + 1], 0, &pack_window_ms) < 0)
                return 2;
            i++;
            continue;
        }
        if (strcmp(argv[i], "--pack-max") == 0 && i + 1 < argc) {
            if (parse_int(stderr, argv[i], argv[i + 1], 1, &pack_max) < 0 || pack_max > 64) {
                fprintf(stderr, "hone-train: --pack-max: 1 to 64\n");
                return 2;
            }
            i++;
            continue;
        }
        if (strcmp(argv[i], "--serve-alive-ms") == 0 && i + 1 < argc) {
            if (parse_int(stderr, argv[i], argv[i + 1], 10, &serve_alive_ms) < 0)
                return 2;
            i++;
            continue;
        }
        if (strcmp(argv[i], "--serve-cache") == 0 && i + 1 < argc) {
            if (parse_int(stderr, argv[i], argv[i + 1], 0, &ncache) < 0 || ncache > 64) {
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

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--serve") == 0)
            return serve(argc, argv);
    if (argc >= 3 && strcmp(argv[1], "--pack-file") == 0) {
        int threads = -1;
        if (argc == 5 && strcmp(argv[3], "--threads") == 0 &&
            parse_int(stderr, argv[3], argv[4], 0, &threads) < 0)
            return 2;
        if (argc != 3 && argc != 5) {
            fprintf(stderr, "hone-train: --pack-file FILE [--threads N]\n");
            return 2;
        }
        return pack_file(argv[2], threads);
    }
    return train_run_argv(argc, argv, NULL, NULL, stdout, stderr);
}
