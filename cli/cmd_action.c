/* cmd_action: `hone job evaluate PARENT [--dataset ID]`, `hone job infer PARENT FOLDER` and `hone
 * job export PARENT [--out FILE]`: an evaluate, inference or export job (TAO's actions) on the
 * model of a train or AutoML job, waited for and printed: evaluate as its accuracy, per-class table
 * and confusion matrix (a detector's: mAP and per-class AP), inference as a table of labels
 * (downloaded from the job's labels.jsonl; a detector's box counts, and with --labels DIR its
 * boxes as KITTI label files),
 * export as the ONNX file's size (downloaded from the job's model.onnx to --out when given).
 * --json prints the job (inference: with its labels); --no-wait prints the new job and returns. */
#include "cli.h"
#include "wire.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Creates the job; *id_out is its id. 0, or 1 after printing the error. */
static int action_create(cli_ctx *c, hone_kind kind, const char *parent, json_t *extra,
                         char *id_out, size_t idlen)
{
    hone_rest_resp resp;
    char path[1024], *e = hone_rest_escape(parent);
    snprintf(path, sizeof(path), "/api/v1/jobs/%s", e);
    free(e);
    if (cli_call(c, "GET", path, NULL, &resp) != 0)
        return 1;
    const char *exp = json_string_value(json_object_get(resp.json, "experiment_id"));
    if (!exp) {
        fprintf(stderr, "error: job %s belongs to no experiment (field: parent_job_id)\n", parent);
        hone_rest_resp_clear(&resp);
        return 1;
    }
    e = hone_rest_escape(exp);
    snprintf(path, sizeof(path), "/api/v1/experiments/%s/jobs", e);
    free(e);
    hone_rest_resp_clear(&resp);
    json_t *body = json_pack("{s:s,s:s}", "action", hone_kind_name(kind), "parent_job_id", parent);
    json_object_update(body, extra);
    int rc = cli_call(c, "POST", path, body, &resp);
    json_decref(body);
    if (rc != 0)
        return 1;
    snprintf(id_out, idlen, "%s", json_string_value(json_object_get(resp.json, "id")));
    hone_rest_resp_clear(&resp);
    return 0;
}

static char *fmt(const char *f, double v)
{
    char buf[64];
    snprintf(buf, sizeof(buf), f, v);
    return hone_xstrdup(buf);
}

static void free_rows(char ***rows, int n, int ncols)
{
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < ncols; j++)
            free(rows[i][j]);
        free(rows[i]);
    }
    free(rows);
}

/* A detector's evaluation: the test part's mAP at IoU 0.5 and each class's AP and boxes. */
static void print_detection_evaluation(const json_t *job, const json_t *r)
{
    const json_t *names = json_object_get(r, "classes"), *ap = json_object_get(r, "ap"),
                 *gt = json_object_get(r, "gt_boxes"), *map = json_object_get(r, "map");
    int k = (int)json_array_size(names);
    printf("job %s: evaluate of %s\n", json_string_value(json_object_get(job, "id")),
           json_string_value(json_object_get(job, "parent_job_id")));
    printf("images:   %lld\n", (long long)json_integer_value(json_object_get(r, "images")));
    if (json_is_number(map))
        printf("mAP@0.5:  %.4f\n", json_number_value(map));
    else
        printf("mAP@0.5:  -\n");
    printf("loss:     %.4f\n\n", json_number_value(json_object_get(r, "loss")));
    static const char *const h[] = {"CLASS", "BOXES", "AP"};
    char ***rows = hone_xcalloc((size_t)k + 1, sizeof(char **));
    for (int i = 0; i < k; i++) {
        const json_t *a = json_array_get(ap, (size_t)i);
        rows[i] = hone_xcalloc(3, sizeof(char *));
        rows[i][0] = hone_xstrdup(json_string_value(json_array_get(names, (size_t)i)));
        rows[i][1] = fmt("%.0f", (double)json_integer_value(json_array_get(gt, (size_t)i)));
        rows[i][2] = json_is_number(a) ? fmt("%.4f", json_number_value(a)) : NULL;
    }
    cli_print_table(h, 3, rows, k);
    free_rows(rows, k, 3);
}

static void print_evaluation(const json_t *job)
{
    const json_t *r = json_object_get(job, "result");
    if (json_object_get(r, "map")) {
        print_detection_evaluation(job, r);
        return;
    }
    const json_t *names = json_object_get(r, "classes"),
                 *per = json_object_get(r, "per_class_accuracy");
    const json_t *cm = json_object_get(r, "confusion_matrix");
    int k = (int)json_array_size(names);
    printf("job %s: evaluate of %s\n", json_string_value(json_object_get(job, "id")),
           json_string_value(json_object_get(job, "parent_job_id")));
    printf("images:   %lld\naccuracy: %.4f\nloss:     %.4f\n\n",
           (long long)json_integer_value(json_object_get(r, "images")),
           json_number_value(json_object_get(r, "accuracy")),
           json_number_value(json_object_get(r, "loss")));
    static const char *const h[] = {"CLASS", "IMAGES", "ACCURACY"};
    char ***rows = hone_xcalloc((size_t)k + 1, sizeof(char **));
    for (int i = 0; i < k; i++) {
        const json_t *row = json_array_get(cm, (size_t)i), *v;
        size_t j;
        long n = 0;
        json_array_foreach(row, j, v) n += (long)json_integer_value(v);
        const json_t *a = json_array_get(per, (size_t)i);
        rows[i] = hone_xcalloc(3, sizeof(char *));
        rows[i][0] = hone_xstrdup(json_string_value(json_array_get(names, (size_t)i)));
        rows[i][1] = fmt("%.0f", (double)n);
        rows[i][2] = json_is_number(a) ? fmt("%.4f", json_number_value(a)) : NULL;
    }
    cli_print_table(h, 3, rows, k);
    free_rows(rows, k, 3);
    /* the confusion matrix: a row per true class, a column per predicted class (by index) */
    printf("\nconfusion matrix (rows: true class, columns: predicted class index)\n");
    const char **hh = hone_xcalloc((size_t)k + 1, sizeof(char *));
    char **cols = hone_xcalloc((size_t)k + 1, sizeof(char *));
    hh[0] = "TRUE";
    for (int j = 0; j < k; j++) {
        cols[j] = fmt("%.0f", (double)j);
        hh[j + 1] = cols[j];
    }
    rows = hone_xcalloc((size_t)k + 1, sizeof(char **));
    for (int i = 0; i < k; i++) {
        rows[i] = hone_xcalloc((size_t)k + 1, sizeof(char *));
        rows[i][0] = fmt("%.0f", (double)i);
        for (int j = 0; j < k; j++)
            rows[i][j + 1] = fmt("%.0f", (double)json_integer_value(json_array_get(
                                             json_array_get(cm, (size_t)i), (size_t)j)));
    }
    cli_print_table(hh, k + 1, rows, k);
    free_rows(rows, k, k + 1);
    for (int j = 0; j < k; j++)
        free(cols[j]);
    free(cols);
    free(hh);
}

/* The job's labels.jsonl as an array of objects (NULL after printing why). */
static json_t *fetch_labels(cli_ctx *c, const char *id)
{
    char path[1024], err[1024], *line = NULL, *e = hone_rest_escape(id);
    size_t cap = 0;
    hone_rest_resp r;
    snprintf(path, sizeof(path), "/api/v1/jobs/%s/artifacts/labels.jsonl", e);
    free(e);
    FILE *f = tmpfile();
    if (!f) {
        fprintf(stderr, "error: no temp file for the labels\n");
        return NULL;
    }
    json_t *arr = NULL;
    if (hone_rest_download(c->rest, path, f, 600, &r, err, sizeof(err)) != 0 || r.status != 200) {
        if (r.status)
            cli_error_text(&r, err, sizeof(err));
        fprintf(stderr, "error: downloading the labels of job %s: %s\n", id, err);
    } else {
        arr = json_array();
        rewind(f);
        /* a detector's line holds every box of its image: lines have no length bound */
        while (getline(&line, &cap, f) > 0) {
            json_t *j = json_loads(line, 0, NULL);
            if (json_is_object(j))
                json_array_append(arr, j);
            json_decref(j);
        }
    }
    free(line);
    hone_rest_resp_clear(&r);
    fclose(f);
    return arr;
}

/* The export job's model.onnx into the file out. 0, or 1 after printing why. */
static int fetch_onnx(cli_ctx *c, const char *id, const char *out)
{
    char path[1024], err[1024], tmp[PATH_MAX + 8], *e = hone_rest_escape(id);
    hone_rest_resp r;
    snprintf(path, sizeof(path), "/api/v1/jobs/%s/artifacts/model.onnx", e);
    free(e);
    snprintf(tmp, sizeof(tmp), "%s.part", out);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        fprintf(stderr, "error: %s: cannot write it\n", tmp);
        return 1;
    }
    int rc = 0;
    if (hone_rest_download(c->rest, path, f, 600, &r, err, sizeof(err)) != 0 || r.status != 200) {
        if (r.status)
            cli_error_text(&r, err, sizeof(err));
        fprintf(stderr, "error: downloading model.onnx of job %s: %s\n", id, err);
        rc = 1;
    }
    hone_rest_resp_clear(&r);
    if (fclose(f) != 0 && rc == 0) {
        fprintf(stderr, "error: %s: writing it failed\n", tmp);
        rc = 1;
    }
    if (rc == 0 && rename(tmp, out) != 0) {
        fprintf(stderr, "error: %s: cannot rename %s to it\n", out, tmp);
        rc = 1;
    }
    if (rc != 0)
        remove(tmp);
    return rc;
}

/* mkdir -p of path's parent folders (path itself is a file). 0, or -1. */
static int make_parents(char *path)
{
    for (char *p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
        *p = '\0';
        int rc = mkdir(path, 0755);
        *p = '/';
        if (rc != 0 && errno != EEXIST)
            return -1;
    }
    return 0;
}

/* A detector's inference as KITTI label files, TAO's labels/ folder: dir/<image path less its
 * extension>.txt, each image's `kitti` lines (an empty file: no box). Image paths are the job's
 * (relative to its folder); one that would leave dir is refused. 0, or 1 after printing why. */
static int write_kitti_labels(const json_t *labels, const char *dir)
{
    const json_t *l;
    size_t i;
    int n = 0;
    json_array_foreach(labels, i, l)
    {
        const char *file = json_string_value(json_object_get(l, "file"));
        const char *kitti = json_string_value(json_object_get(l, "kitti"));
        if (!file || !kitti) {
            fprintf(stderr, "error: --labels: the model is not a detector (no KITTI lines)\n");
            return 1;
        }
        int bad = !file[0] || file[0] == '/';
        for (const char *p = file; !bad && (p = strstr(p, "..")); p += 2)
            bad = (p == file || p[-1] == '/') && (p[2] == '/' || p[2] == '\0');
        if (bad) {
            fprintf(stderr, "error: --labels: image path %s leaves the folder\n", file);
            return 1;
        }
        const char *slash = strrchr(file, '/'), *dot = strrchr(file, '.');
        size_t stem = dot && (!slash || dot > slash + 1) ? (size_t)(dot - file) : strlen(file);
        char path[PATH_MAX];
        if ((size_t)snprintf(path, sizeof(path), "%s/%.*s.txt", dir, (int)stem, file) >=
            sizeof(path)) {
            fprintf(stderr, "error: --labels: %s/%s: path too long\n", dir, file);
            return 1;
        }
        FILE *f = NULL;
        if (make_parents(path) != 0 || !(f = fopen(path, "w")) || fputs(kitti, f) < 0 ||
            fclose(f) != 0) {
            fprintf(stderr, "error: --labels: %s: %s\n", path, strerror(errno));
            return 1;
        }
        n++;
    }
    fprintf(stderr, "wrote %d KITTI label file(s) under %s\n", n, dir);
    return 0;
}

/* A detector's labels as a table: each image's box count and its best box. */
static void print_detections(const json_t *labels)
{
    static const char *const h[] = {"FILE", "BOXES", "BEST", "SCORE"};
    int n = (int)json_array_size(labels);
    char ***rows = hone_xcalloc((size_t)n + 1, sizeof(char **));
    for (int i = 0; i < n; i++) {
        const json_t *l = json_array_get(labels, (size_t)i), *b, *best = NULL;
        const json_t *boxes = json_object_get(l, "boxes");
        size_t j;
        json_array_foreach(boxes, j, b)
        {
            double sc = json_number_value(json_object_get(b, "score"));
            if (!best || sc > json_number_value(json_object_get(best, "score")))
                best = b;
        }
        rows[i] = hone_xcalloc(4, sizeof(char *));
        const char *file = json_string_value(json_object_get(l, "file"));
        const char *cls = json_string_value(json_object_get(best, "class"));
        rows[i][0] = hone_xstrdup(file ? file : "");
        rows[i][1] = fmt("%.0f", (double)json_array_size(boxes));
        rows[i][2] = best ? hone_xstrdup(cls ? cls : "") : NULL;
        rows[i][3] = best ? fmt("%.4f", json_number_value(json_object_get(best, "score"))) : NULL;
    }
    cli_print_table(h, 4, rows, n);
    free_rows(rows, n, 4);
}

static int action_run(cli_ctx *c, hone_kind kind, json_t *extra)
{
    char id[128], err[256];
    double timeout = 0;
    json_t *fin = NULL;
    int rc;

    if (cli_arg_num(c->a, "timeout", 0, 1e9, &timeout, err, sizeof(err)) != 0) {
        fprintf(stderr, "usage error: %s\n", err);
        json_decref(extra);
        return 2;
    }
    rc = action_create(c, kind, c->a->pos[0], extra, id, sizeof(id));
    json_decref(extra);
    if (rc != 0)
        return 1;
    if (cli_flag(c->a, "no-wait")) {
        if (c->json) {
            json_t *o = json_pack("{s:s}", "id", id);
            cli_print_json(o);
            json_decref(o);
        } else {
            printf("%s\n", id);
        }
        return 0;
    }
    rc = cli_job_wait(c, id, timeout, c->json ? NULL : stderr, &fin);
    if (rc != 0 || !fin) {
        if (c->json && fin)
            cli_print_json(fin);
        json_decref(fin);
        return 1;
    }
    if (kind == HONE_KIND_EVALUATE) {
        if (c->json)
            cli_print_json(fin);
        else
            print_evaluation(fin);
    } else if (kind == HONE_KIND_EXPORT) {
        const char *out = cli_arg(c->a, "out");
        const json_t *r = json_object_get(fin, "result");
        if (out)
            rc = fetch_onnx(c, id, out);
        if (c->json)
            cli_print_json(fin);
        else if (rc == 0)
            printf("job %s: %s as ONNX (opset %lld), %lld bytes%s%s\n", id,
                   json_string_value(json_object_get(fin, "parent_job_id")),
                   (long long)json_integer_value(json_object_get(r, "opset")),
                   (long long)json_integer_value(json_object_get(r, "bytes")),
                   out ? " written to " : ": artifact model.onnx", out ? out : "");
    } else {
        json_t *labels = fetch_labels(c, id);
        const char *dir = cli_arg(c->a, "labels");
        int detect = json_is_array(json_object_get(json_array_get(labels, 0), "boxes"));
        if (!labels) {
            rc = 1;
        } else if (dir && write_kitti_labels(labels, dir) != 0) {
            rc = 1;
        } else if (c->json) {
            json_object_set(fin, "labels", labels);
            cli_print_json(fin);
        } else if (detect) {
            print_detections(labels);
        } else {
            static const char *const h[] = {"FILE", "CLASS", "SCORE"};
            static const char *const k[] = {"file", "class", "score"};
            cli_print_list(labels, h, k, 3);
        }
        json_decref(labels);
    }
    json_decref(fin);
    return rc;
}

static int job_evaluate(cli_ctx *c)
{
    const char *ds = cli_arg(c->a, "dataset");
    json_t *extra = json_object();
    if (ds)
        json_object_set_new(extra, "dataset_id", json_string(ds));
    return action_run(c, HONE_KIND_EVALUATE, extra);
}

static int job_infer(cli_ctx *c)
{
    char abs[PATH_MAX];
    const char *folder = c->a->pos[1];
    /* the controller and its workers take an absolute path (they share this disk) */
    if (!realpath(folder, abs)) {
        fprintf(stderr, "error: %s: no such folder\n", folder);
        return 1;
    }
    return action_run(c, HONE_KIND_INFERENCE, json_pack("{s:s}", "folder", abs));
}

static int job_export(cli_ctx *c)
{
    return action_run(c, HONE_KIND_EXPORT, json_object());
}

static const cli_opt evaluate_opts[] = {
    {"dataset", CLI_VALUE, "ID  evaluate on this dataset instead of the model's own test part", 0},
    {"timeout", CLI_VALUE, "SECONDS  give up waiting after this long (exit 1)", 0},
    {"no-wait", CLI_FLAG, "print the new job's id and return", 0},
};
static const cli_opt export_opts[] = {
    {"out", CLI_VALUE, "FILE  download the ONNX file here (else it stays the job's artifact)", 0},
    {"timeout", CLI_VALUE, "SECONDS  give up waiting after this long (exit 1)", 0},
    {"no-wait", CLI_FLAG, "print the new job's id and return", 0},
};
static const cli_opt infer_opts[] = {
    {"labels", CLI_VALUE,
     "DIR  a detector's boxes as KITTI label files, DIR/<image path less extension>.txt", 0},
    {"timeout", CLI_VALUE, "SECONDS  give up waiting after this long (exit 1)", 0},
    {"no-wait", CLI_FLAG, "print the new job's id and return", 0},
};

const cli_command cli_action_commands[] = {
    {"job", "evaluate", job_evaluate, evaluate_opts, (int)HONE_ARRAY_LEN(evaluate_opts), 1, 1,
     "PARENT [--dataset ID]",
     "evaluate a train job's model (an AutoML job's best) on its test part or a dataset", 0},
    {"job", "infer", job_infer, infer_opts, (int)HONE_ARRAY_LEN(infer_opts), 2, 2,
     "PARENT FOLDER [--labels DIR]",
     "label a folder of images with a train job's model (an AutoML job's best)", 0},
    {"job", "export", job_export, export_opts, (int)HONE_ARRAY_LEN(export_opts), 1, 1,
     "PARENT [--out FILE]",
     "export a train job's model (an AutoML job's best) as ONNX (opset 17), a job's artifact", 0},
};
const int cli_naction_commands = (int)HONE_ARRAY_LEN(cli_action_commands);
