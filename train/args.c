/* train/args.c: one hone-train command line: the usage text, the parser (the spec file, --set
 * overrides, --out, --resume, --device, --evaluate / --infer / --export and the rest) into a
 * run_args, and the run it names (hone_train_run, hone_train_evaluate, hone_train_infer,
 * hone_train_export, --print-spec, --list-devices); also a --serve request line as such a command
 * line. main.c, serve_stdin.c, serve_listen.c and serve_pack.c call it; it calls none of them. */
#include <errno.h>
#include <signal.h>
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
 * file renamed into place) and prints {"event":"inference","images":N,"labels":"labels.jsonl"};
 * a detector's inference also writes DIR/coco_results.json (hone_train_infer_coco) and names it
 * ("coco_results": "coco_results.json"). */
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
    /* a detector's boxes also as COCO results, beside the labels */
    char cpath[1200], ctmp[1210];
    FILE *cf = NULL;
    snprintf(cpath, sizeof(cpath), "%s/coco_results.json", o->out_dir);
    snprintf(ctmp, sizeof(ctmp), "%s.tmp", cpath);
    if (folder && !strcmp(o->spec->network, "detectnet_v2") && !(cf = fopen(ctmp, "w"))) {
        snprintf(err, errlen, "%.400s: %s", ctmp, strerror(errno));
        fclose(f);
        unlink(tmp);
        return HONE_EIO;
    }
    int n = 0;
    int rc = folder ? hone_train_infer_coco(o, model, folder, f, cf, &n, err, errlen)
                    : hone_train_evaluate(o, model, f, err, errlen);
    if (fclose(f) != 0 && rc == 0) {
        snprintf(err, errlen, "%.400s: %s", tmp, strerror(errno));
        rc = HONE_EIO;
    }
    if (cf && fclose(cf) != 0 && rc == 0) {
        snprintf(err, errlen, "%.400s: %s", ctmp, strerror(errno));
        rc = HONE_EIO;
    }
    if (rc == 0 && cf && rename(ctmp, cpath) != 0) {
        snprintf(err, errlen, "%.400s: %s", cpath, strerror(errno));
        rc = HONE_EIO;
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        snprintf(err, errlen, "%.400s: %s", path, strerror(errno));
        rc = HONE_EIO;
    }
    if (rc < 0) {
        unlink(tmp);
        if (cf)
            unlink(ctmp);
        return rc;
    }
    if (folder) {
        fprintf(out, "{\"event\":\"inference\",\"images\":%d,\"labels\":\"labels.jsonl\"%s}\n", n,
                cf ? ",\"coco_results\":\"coco_results.json\"" : "");
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

int train_parse_int(FILE *log, const char *flag, const char *v, int lo, int *out)
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
            if (train_parse_int(log, f, v, 0, &o->threads) < 0)
                return 2;
        } else if (strcmp(f, "--epochs-until") == 0) {
            if (train_parse_int(log, f, v, 1, &o->epochs_until) < 0)
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

hone_train_opts *train_args_training(run_args *a)
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
