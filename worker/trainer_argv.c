/* trainer_argv: the hone-train command line for a lease: --spec the file holding its resolved
 * flat spec (the trial's values in it), --epochs-until, --resume from the checkpoint, --set
 * model.pretrained= the parent's model of a fine-tuning job (its runner's pretrained_dir),
 * --out, --device and --threads; for an evaluate, inference or export lease, --evaluate / --infer /
 * --export on its model. Pure: builds strings, runs nothing. */
#include "trainer_argv.h"

#include "hone.h"
#include "wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void job_argv_push(char ***argv, size_t *n, size_t *cap, char *s)
{
    if (*n + 2 > *cap) {
        *cap = *cap ? *cap * 2 : 32;
        *argv = hone_xrealloc(*argv, *cap * sizeof(char *));
    }
    (*argv)[(*n)++] = s;
    (*argv)[*n] = NULL;
}

char **hone_worker_trainer_argv(const hone_worker_opts *o, const char *trainer, const json_t *job,
                                const char *spec_path, const char *out_dir)
{
    char **argv = NULL;
    size_t n = 0, cap = 0;
    const json_t *eu = json_object_get(job, "epochs_until");
    char buf[64];

    job_argv_push(&argv, &n, &cap, hone_xstrdup(trainer));
    job_argv_push(&argv, &n, &cap, hone_xstrdup("--spec"));
    job_argv_push(&argv, &n, &cap, hone_xstrdup(spec_path));
    if (json_is_integer(eu) && json_integer_value(eu) > 0) {
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(eu));
        job_argv_push(&argv, &n, &cap, hone_xstrdup("--epochs-until"));
        job_argv_push(&argv, &n, &cap, hone_xstrdup(buf));
    }
    if (json_is_true(json_object_get(job, "resume"))) {
        /* The lease names a checkpoint file, or the folder holding it (then it is that folder's
         * checkpoint.bin); the job's own out folder, or none, is hone-train's "auto". */
        const char *ck = json_string_value(json_object_get(job, "checkpoint"));
        size_t len = ck ? strlen(ck) : 0;
        char *arg;
        if (!ck || !ck[0] || strcmp(ck, out_dir) == 0) {
            arg = hone_xstrdup("auto");
        } else if (len > 4 && strcmp(ck + len - 4, ".bin") == 0) {
            arg = hone_xstrdup(ck);
        } else {
            arg = hone_xmalloc(len + 20);
            snprintf(arg, len + 20, "%s/checkpoint.bin", ck);
        }
        job_argv_push(&argv, &n, &cap, hone_xstrdup("--resume"));
        job_argv_push(&argv, &n, &cap, arg);
    }
    /* fine-tuning: the parent's model folder, as the runner resolved it (hone-train reads it only
     * on a fresh start: a run resumed from its checkpoint takes every weight from there) */
    const char *pre = json_string_value(json_object_get(job, "pretrained_dir"));
    if (pre && pre[0]) {
        size_t len = strlen(pre) + 32;
        char *kv = hone_xmalloc(len);
        snprintf(kv, len, "model.pretrained=%s", pre);
        job_argv_push(&argv, &n, &cap, hone_xstrdup("--set"));
        job_argv_push(&argv, &n, &cap, kv);
    }
    job_argv_push(&argv, &n, &cap, hone_xstrdup("--out"));
    job_argv_push(&argv, &n, &cap, hone_xstrdup(out_dir));
    if (o->device && o->device[0]) {
        job_argv_push(&argv, &n, &cap, hone_xstrdup("--device"));
        job_argv_push(&argv, &n, &cap, hone_xstrdup(o->device));
    }
    if (o->threads > 0) {
        snprintf(buf, sizeof(buf), "%d", o->threads);
        job_argv_push(&argv, &n, &cap, hone_xstrdup("--threads"));
        job_argv_push(&argv, &n, &cap, hone_xstrdup(buf));
    }
    return argv;
}

static void push_device(const hone_worker_opts *o, char ***argv, size_t *n, size_t *cap)
{
    char buf[64];
    if (o->device && o->device[0]) {
        job_argv_push(argv, n, cap, hone_xstrdup("--device"));
        job_argv_push(argv, n, cap, hone_xstrdup(o->device));
    }
    if (o->threads > 0) {
        snprintf(buf, sizeof(buf), "%d", o->threads);
        job_argv_push(argv, n, cap, hone_xstrdup("--threads"));
        job_argv_push(argv, n, cap, hone_xstrdup(buf));
    }
}

char **hone_worker_action_argv(const hone_worker_opts *o, const char *trainer, const json_t *job)
{
    hone_kind kind;
    const char *model = json_string_value(json_object_get(job, "model_dir"));
    const char *out = json_string_value(json_object_get(job, "out_dir"));
    const char *folder = json_string_value(json_object_get(job, "folder"));
    int known = hone_kind_parse(json_string_value(json_object_get(job, "action")), &kind) == 0 &&
                hone_kind_is_model_action(kind);
    int infer = known && kind == HONE_KIND_INFERENCE;
    int export = known && kind == HONE_KIND_EXPORT;
    char **argv = NULL;
    size_t n = 0, cap = 0, i;
    json_t *v;

    if (!known || !model || !model[0] || !out || !out[0] || (infer && (!folder || !folder[0])))
        return NULL;
    job_argv_push(&argv, &n, &cap, hone_xstrdup(trainer));
    if (export) { /* --export MODEL OUT_DIR/model.onnx: the job's artifact */
        size_t len = strlen(out) + 16;
        char *file = hone_xmalloc(len);
        snprintf(file, len, "%s/model.onnx", out);
        job_argv_push(&argv, &n, &cap, hone_xstrdup("--export"));
        job_argv_push(&argv, &n, &cap, hone_xstrdup(model));
        job_argv_push(&argv, &n, &cap, file);
        push_device(o, &argv, &n, &cap);
        return argv;
    }
    job_argv_push(&argv, &n, &cap, hone_xstrdup(infer ? "--infer" : "--evaluate"));
    job_argv_push(&argv, &n, &cap, hone_xstrdup(model));
    if (infer)
        job_argv_push(&argv, &n, &cap, hone_xstrdup(folder));
    json_array_foreach(json_object_get(job, "sets"), i, v)
    {
        if (!json_is_string(v))
            continue;
        job_argv_push(&argv, &n, &cap, hone_xstrdup("--set"));
        job_argv_push(&argv, &n, &cap, hone_xstrdup(json_string_value(v)));
    }
    job_argv_push(&argv, &n, &cap, hone_xstrdup("--out"));
    job_argv_push(&argv, &n, &cap, hone_xstrdup(out));
    push_device(o, &argv, &n, &cap);
    return argv;
}

void hone_worker_argv_free(char **argv)
{
    if (!argv)
        return;
    for (char **p = argv; *p; p++)
        free(*p);
    free(argv);
}
