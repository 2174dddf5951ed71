/* demo: `hone demo`, the README's first run. Starts a local stack, registers Fashion-MNIST from
 * the Debian package, creates a CNN experiment, runs an AutoML search with a time budget (what is
 * left of --budget-minutes, and the epoch time measured here: the controller's budget planner
 * sizes the search and its governor ends it in time) with a live progress line, and prints the
 * best finished trial's config and test accuracy and what the budget cut (one JSON line with
 * --json). It stops everything it started, also on Ctrl-C. */
#define _GNU_SOURCE /* sched_getaffinity */
#include "cli.h"
#include "search.h"
#include "spec.h"
#include "wire.h"

#include <sched.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The IDX folder: --dataset-path, then what dpkg says the package installed, then the usual. */
static int demo_find_dataset(const char *given, char *out, size_t len)
{
    static const char *const guesses[] = {"/usr/share/datasets/fashion-mnist",
                                          "/usr/share/dataset-fashion-mnist"};
    char line[PATH_MAX], probe[PATH_MAX + 64];
    FILE *p;

    if (given) {
        snprintf(probe, sizeof(probe), "%s", given);
        if (!realpath(probe, out))
            return HONE_ENOENT;
        return HONE_OK;
    }
    p = popen("dpkg -L dataset-fashion-mnist 2>/dev/null", "r");
    if (p) {
        int found = 0;
        while (fgets(line, sizeof(line), p)) {
            char *nl = strchr(line, '\n'), *slash;
            if (nl)
                *nl = '\0';
            if (!found && strstr(line, "train-images-idx3-ubyte") &&
                (slash = strrchr(line, '/')) != NULL) {
                *slash = '\0';
                snprintf(out, len, "%s", line);
                found = 1;
            }
        }
        pclose(p);
        if (found)
            return HONE_OK;
    }
    for (size_t i = 0; i < HONE_ARRAY_LEN(guesses); i++) {
        snprintf(probe, sizeof(probe), "%s/train-images-idx3-ubyte.gz", guesses[i]);
        if (access(probe, R_OK) == 0) {
            snprintf(out, len, "%s", guesses[i]);
            return HONE_OK;
        }
    }
    return HONE_ENOENT;
}

/* Seconds one training epoch over the full 55k images takes on one worker here: measured by
 * running hone-train on a 2048-image slice (a few seconds), so a laptop, a CI box and a GPU
 * host each get a search sized to them. On a GPU (gpu_share > 0 workers sharing each one) the
 * first epoch is mostly start-up, so the second of two over 16384 images is timed, and the
 * workers sharing the GPU each get 1/gpu_share of it. HONE_DEMO_EPOCH_SECONDS overrides; 0 when
 * unknown. */
static double demo_epoch_seconds(const char *bin_dir, const char *data_dir, const char *dpath,
                                 const char *network, int threads, const char *device,
                                 const char *math, int gpu_share)
{
    static const char *const rel[] = {"../train", ".", NULL};
    const char *env = getenv("HONE_DEMO_EPOCH_SECONDS");
    char trainer[PATH_MAX], spec[PATH_MAX + 32], cmd[3 * PATH_MAX + 128], line[4096];
    double ips = 0;
    FILE *f;

    if (env && atof(env) > 0)
        return atof(env);
    if (cli_find_binary(bin_dir, "hone-train", rel, trainer, sizeof(trainer)) != 0)
        return 0;
    snprintf(spec, sizeof(spec), "%s/calibrate.yaml", data_dir);
    f = fopen(spec, "w");
    if (!f)
        return 0;
    fprintf(f,
            "network: %s\ndata:\n  path: \"%s\"\n  train_limit: %d\n  val_size: 256\n"
            "  test_limit: 256\ntrain:\n  epochs: %d\n  batch_size: 128\n  optimizer: adamw\n"
            "  math: %s\nmodel:\n  batchnorm: true\n",
            network, dpath, gpu_share > 0 ? 16384 : 2048, gpu_share > 0 ? 2 : 1, math);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "'%s' --spec '%s' --threads %d --device %s 2>/dev/null", trainer,
             spec, threads, device);
    f = popen(cmd, "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f)) {
        json_t *j = json_loads(line, 0, NULL);
        if (json_is_number(json_object_get(j, "images_per_second")))
            ips = json_number_value(json_object_get(j, "images_per_second"));
        json_decref(j);
    }
    pclose(f);
    /* + validation pass, + the other workers sharing memory bandwidth (or the GPU) */
    return ips > 0 ? 55000.0 / ips * 1.15 * (gpu_share > 0 ? gpu_share : 1) : 0;
}

/* CPUs this process may run on (affinity, cgroup-pinned containers, taskset), not the host's. */
static long demo_cpus(void)
{
    cpu_set_t set;

    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    return sysconf(_SC_NPROCESSORS_ONLN);
}

typedef struct demo_state {
    cli_ctx *c;
    hone_rest *rest;
    double t0;
} demo_state;

static int demo_post(demo_state *d, const char *path, json_t *body, json_t **out)
{
    cli_ctx sub = *d->c;
    hone_rest_resp resp;
    int rc;

    sub.rest = d->rest;
    rc = cli_call(&sub, "POST", path, body, &resp);
    json_decref(body);
    if (rc != 0)
        return rc;
    *out = json_incref(resp.json);
    hone_rest_resp_clear(&resp);
    return *out ? 0 : 1;
}

static json_t *demo_get(demo_state *d, const char *path)
{
    cli_ctx sub = *d->c;
    hone_rest_resp resp;
    json_t *o;

    sub.rest = d->rest;
    if (cli_call(&sub, "GET", path, NULL, &resp) != 0)
        return NULL;
    o = json_incref(resp.json);
    hone_rest_resp_clear(&resp);
    return o;
}

/* Trials the search halted at a rung and had not promoted (status "paused"): when the budget
 * cuts the search, they were stopped early by the algorithm, though the cancel marks them
 * canceled. Counted before the cancel. */
static int demo_count_paused(demo_state *d, const char *job_id)
{
    char path[512];
    json_t *trials, *t;
    size_t i;
    int n = 0;

    snprintf(path, sizeof(path), "/api/v1/jobs?parent=%s", job_id);
    if (!(trials = demo_get(d, path)))
        return 0;
    json_array_foreach(json_object_get(trials, "jobs"), i, t)
    {
        const char *st = json_string_value(json_object_get(t, "status"));
        hone_status s;
        n += hone_status_parse(st, &s) == HONE_OK && s == HONE_STATUS_PAUSED;
    }
    json_decref(trials);
    return n;
}

/* The demo's narrowed search space (search/search.h shape, dotted spec keys). */
static json_t *demo_space(const char *network)
{
    /* Narrowed around what is known to work for small convnets on Fashion-MNIST (AdamW,
     * lr ~1e-3, cosine, batch norm), so a short search lands above 0.90; the search still decides
     * lr, batch size, weight decay, dropout and label smoothing, and early stopping cuts the poor
     * picks. */
    int cnn = strcmp(network, "cnn") == 0;
    return json_pack("{s:{s:s,s:f,s:f,s:b},s:{s:s,s:[i,i]},s:{s:s,s:f,s:f,s:b},"
                     "s:{s:s,s:f,s:f},s:{s:s,s:f,s:f}}",
                     "train.lr", "type", "float", "min", cnn ? 5e-4 : 3e-4, "max",
                     cnn ? 3e-3 : 3e-3, "log", 1, "train.batch_size", "type", "categorical",
                     "values", 128, 256, "train.weight_decay", "type", "float", "min", 1e-5, "max",
                     5e-3, "log", 1, "model.dropout", "type", "float", "min", 0.0, "max", 0.4,
                     "train.label_smoothing", "type", "float", "min", 0.0, "max", 0.15);
}

/* Prints the closing report (human or one JSON line) from the ended AutoML job; halted_extra
 * counts trials halted at a rung before a budget cut (see demo_count_paused). */
static int demo_report(demo_state *d, const char *job_id, const char *algorithm, double budget_s,
                       int halted_extra)
{
    char path[512], buf[64];
    json_t *job, *trials, *best = NULL, *out;
    const json_t *a;
    const char *best_id, *tested_id = NULL;
    double seconds, test_acc = NAN, val = NAN, tested_val = NAN;
    int n = 0, early = 0, rc = 0;
    size_t i;
    json_t *t;

    snprintf(path, sizeof(path), "/api/v1/jobs/%s", job_id);
    job = demo_get(d, path);
    snprintf(path, sizeof(path), "/api/v1/jobs?parent=%s", job_id);
    trials = demo_get(d, path);
    if (!job || !trials) {
        json_decref(job);
        json_decref(trials);
        return 1;
    }
    a = json_object_get(job, "automl");
    int full_epochs = (int)json_integer_value(cli_path_get(a, "budget_plan.full_epochs"));
    json_array_foreach(json_object_get(trials, "jobs"), i, t)
    {
        n++;
        early += json_is_true(json_object_get(t, "stopped_early"));
    }
    if (json_is_integer(json_object_get(a, "trials_stopped_early")))
        early = (int)json_integer_value(json_object_get(a, "trials_stopped_early"));
    early += halted_extra;
    best_id = json_string_value(json_object_get(a, "best_job_id"));
    if (best_id) {
        snprintf(path, sizeof(path), "/api/v1/jobs/%s", best_id);
        best = demo_get(d, path);
        test_acc = json_number_value(cli_path_get(best, "result.test_accuracy"));
        if (!json_is_number(cli_path_get(best, "result.test_accuracy")))
            test_acc = NAN;
    }
    if (json_is_number(json_object_get(a, "best_metric")))
        val = json_number_value(json_object_get(a, "best_metric"));
    if (!isnan(test_acc)) {
        tested_id = best_id;
        tested_val = val;
    } else { /* the budget cut the best trial short: the best of those that finished */
        json_array_foreach(json_object_get(trials, "jobs"), i, t)
        {
            const json_t *ta = cli_path_get(t, "result.test_accuracy"),
                         *tv = cli_path_get(t, "result.best_metric");
            if (!json_is_number(ta) || !json_is_number(tv) ||
                (tested_id && !(json_number_value(tv) > tested_val)))
                continue;
            tested_id = json_string_value(json_object_get(t, "id"));
            tested_val = json_number_value(tv);
            test_acc = json_number_value(ta);
        }
    }
    seconds = hone_now() - d->t0;
    out = json_pack("{s:s,s:s,s:o,s:o,s:i,s:i,s:f,s:O,s:s,s:i,s:f}", "job_id", job_id, "status",
                    json_string_value(json_object_get(job, "status"))
                        ? json_string_value(json_object_get(job, "status"))
                        : "?",
                    "best_test_accuracy", isnan(test_acc) ? json_null() : json_real(test_acc),
                    "best_val_accuracy", isnan(val) ? json_null() : json_real(val), "trials", n,
                    "stopped_early", early, "seconds", round(seconds * 10) / 10, "best_config",
                    json_object_get(a, "best_config") ? json_object_get(a, "best_config")
                                                      : json_null(),
                    "algorithm", algorithm, "max_epochs", full_epochs, "budget_seconds", budget_s);
    /* what the controller's budget cut (a sentence), and the job's own budget use */
    json_object_set(out, "budget_note",
                    json_is_string(json_object_get(a, "budget_note"))
                        ? json_object_get(a, "budget_note")
                        : json_null());
    /* what the run did with its hardware: epochs trained per second of wall time, and the GPU's
     * mean utilisation while the search ran (workers' NVML; null without) */
    long epochs = (long)json_integer_value(json_object_get(a, "epochs_done"));
    json_object_set_new(out, "epochs_done", json_integer(epochs));
    json_object_set_new(out, "epochs_per_second",
                        json_real(seconds > 0 ? round(epochs / seconds * 1000) / 1000 : 0));
    /* whose test accuracy best_test_accuracy is: the best trial's, or when it did not finish in
     * the budget, the best finished trial's (with its validation accuracy) */
    json_object_set_new(out, "tested_job_id", tested_id ? json_string(tested_id) : json_null());
    json_object_set_new(out, "tested_val_accuracy",
                        isnan(tested_val) ? json_null() : json_real(tested_val));
    json_object_set(out, "gpu_util_mean",
                    json_is_number(json_object_get(a, "gpu_util_mean"))
                        ? json_object_get(a, "gpu_util_mean")
                        : json_null());
    if (d->c->json) {
        char *s = json_dumps(out, JSON_COMPACT | JSON_REAL_PRECISION(6));
        printf("%s\n", s);
        free(s);
    } else {
        printf("\nbest trial: %s (trial %s)\n", best_id ? best_id : "-",
               cli_cell(json_object_get(a, "best_trial"), buf, sizeof(buf)));
        printf("  config:\n");
        if (json_is_object(json_object_get(a, "best_config")))
            cli_print_kv(json_object_get(a, "best_config"), 4);
        printf("  validation accuracy: %s\n",
               isnan(val) ? "-" : (snprintf(buf, sizeof(buf), "%.4f", val), buf));
        if (isnan(test_acc))
            printf("  TEST accuracy:       - (no trial finished)\n");
        else if (tested_id && best_id && strcmp(tested_id, best_id) != 0)
            printf("  TEST accuracy:       %.4f (the best trial did not finish in the budget; this "
                   "is the best finished trial's, %s, validation accuracy %.4f)\n",
                   test_acc, tested_id, tested_val);
        else
            printf("  TEST accuracy:       %.4f\n", test_acc);
        printf("trials: %d (%d stopped early), algorithm %s, %.0f s in all\n", n, early, algorithm,
               seconds);
        if (json_is_string(json_object_get(a, "budget_note")))
            printf("%s\n", json_string_value(json_object_get(a, "budget_note")));
        printf("epochs trained: %ld (%.2f a second)", epochs, seconds > 0 ? epochs / seconds : 0);
        if (json_is_number(json_object_get(out, "gpu_util_mean")))
            printf(", GPU busy %.0f%% on average",
                   json_number_value(json_object_get(out, "gpu_util_mean")));
        printf("\n");
        if (best_id)
            printf("its weights: hone job download %s --file best_model/model.bin (while the "
                   "stack runs; artifacts stay under the data dir)\n",
                   job_id);
    }
    if (isnan(test_acc))
        rc = 1;
    json_decref(out);
    json_decref(best);
    json_decref(job);
    json_decref(trials);
    return rc;
}

int cli_demo_run(cli_ctx *c)
{
    cli_stack_opts so;
    cli_stack *stack = NULL;
    demo_state d = {c, NULL, hone_now()};
    const char *network = cli_arg(c->a, "network") ? cli_arg(c->a, "network") : "cnn";
    const char *math = cli_arg(c->a, "math");
    char dpath[PATH_MAX], err[4096], path[512], job_id[128] = "";
    double budget_min = 12, epoch_s, budget_s;
    long ncpu = demo_cpus(), seed = 1;
    int workers, rc, halted = 0;
    FILE *progress = c->json ? stderr : stdout;
    json_t *ds = NULL, *exp = NULL, *job = NULL, *settings, *specs, *fin = NULL;
    cli_ctx sub;

    if (ncpu < 1)
        ncpu = 1;
    workers = ncpu <= 2 ? (int)ncpu : ncpu < 8 ? 2 : 4;
    rc = cli_local_stack_opts(c, &so, workers, 0);
    if (rc != 0)
        return rc;
    if (cli_arg_num(c->a, "budget-minutes", 1, 24 * 60, &budget_min, err, sizeof(err)) != 0 ||
        cli_arg_int(c->a, "seed", 0, 2147483647L, &seed, err, sizeof(err)) != 0) {
        fprintf(stderr, "usage error: %s\n", err);
        return 2;
    }
    if (strcmp(network, "cnn") != 0 && strcmp(network, "mlp") != 0) {
        fprintf(stderr, "usage error: --network must be cnn or mlp (got '%s')\n", network);
        return 2;
    }
    if (!math)
        math = strcmp(so.device, "cpu") == 0 ? "fp32" : "tf32";
    json_t *jm = json_string(math);
    rc = hone_spec_check_json("train.math", jm, err, sizeof(err)); /* spec/ knows the values */
    json_decref(jm);
    if (rc != 0) {
        fprintf(stderr, "usage error: --math: %s\n", err);
        return 2;
    }
    if (!cli_arg(c->a, "threads"))
        so.threads = (int)(ncpu / so.workers > 0 ? ncpu / so.workers : 1);
    budget_s = budget_min * 60;
    if (demo_find_dataset(cli_arg(c->a, "dataset-path"), dpath, sizeof(dpath)) != 0) {
        fprintf(stderr, "error: Fashion-MNIST not found; install it (apt-get install "
                        "dataset-fashion-mnist) or pass --dataset-path DIR\n");
        return 1;
    }
    if (mkdir(so.data_dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "error: cannot create %s: %s\n", so.data_dir, strerror(errno));
        return 1;
    }
    epoch_s = demo_epoch_seconds(c->bin_dir, so.data_dir, dpath, network, so.threads, so.device,
                                 math, so.gpus > 0 ? (so.workers + so.gpus - 1) / so.gpus : 0);
    if (!(epoch_s > 0))
        epoch_s = strcmp(network, "cnn") == 0 ? 70.0 / so.threads : 8.0 / so.threads;
    /* asynchronous by default: no worker idles at a rung, early stops are cheap */
    const char *algorithm = cli_arg(c->a, "algorithm") ? cli_arg(c->a, "algorithm") : "asha";
    hone_algo algo;
    if (hone_algo_parse(algorithm, &algo) != HONE_OK || algo == HONE_ALGO_RANDOM) {
        fprintf(stderr,
                "usage error: --algorithm must be hyperband, bayesian, asha, bohb, dehb or "
                "hyperband_es (got '%s')\n",
                algorithm);
        return 2;
    }
    so.extra_roots = dpath;
    if (!c->json)
        printf("hone demo: starting a controller and %d worker(s) (%d thread(s) each) in %s\n",
               so.workers, so.threads, so.data_dir);
    fflush(stdout);
    if (cli_stack_start(&so, &stack, err, sizeof(err)) != 0) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    if (hone_rest_new(cli_stack_url(stack), NULL, &d.rest) != 0) {
        rc = 1;
        goto fail;
    }
    hone_rest_set_abort(d.rest, c->stop);
    rc = 1;
    if (demo_post(&d, "/api/v1/datasets",
                  json_pack("{s:s,s:s,s:s,s:s,s:s}", "name", "fashion-mnist", "type",
                            "image_classification", "format", "idx", "path", dpath, "description",
                            "Fashion-MNIST from the Debian package"),
                  &ds) != 0)
        goto fail;
    /* The controller's budget planner sizes the search (the longest trial: 27 epochs, 12 for
     * Bayesian's full-length trials) to what is left of the budget once the stack runs, less a
     * few seconds for this report; its governor ends the search within it. */
    double job_budget_s = budget_s - (hone_now() - d.t0) - 5;
    if (job_budget_s < 30)
        job_budget_s = 30;
    specs = json_pack("{s:{s:s,s:s,s:i,s:s},s:{s:b}}", "train", "optimizer", "adamw", "lr_schedule",
                      "cosine", "epochs", 12, "math", math, "model", "batchnorm", 1);
    settings = json_pack(
        "{s:b,s:s,s:i,s:i,s:i,s:i,s:o,s:b,s:I,s:f,s:f}", "automl_enabled", 1, "automl_algorithm",
        algorithm, "automl_R", 27, "automl_nu", 3, "epoch_multiplier", 1, "automl_max_parallel",
        so.workers, "automl_hyperparameters", demo_space(network),
        "automl_delete_intermediate_ckpt", 1, "seed", (json_int_t)seed, "automl_budget_minutes",
        job_budget_s / 60, "automl_epoch_seconds", epoch_s);
    if (demo_post(&d, "/api/v1/experiments",
                  json_pack("{s:s,s:s,s:[s],s:s,s:o,s:o}", "name", "fashion-mnist-demo",
                            "network_arch", network, "train_datasets",
                            json_string_value(json_object_get(ds, "id")), "metric", "val_accuracy",
                            "specs", specs, "automl_settings", settings),
                  &exp) != 0)
        goto fail;
    snprintf(path, sizeof(path), "/api/v1/experiments/%s/jobs",
             json_string_value(json_object_get(exp, "id")));
    if (demo_post(
            &d, path,
            json_pack("{s:s,s:s}", "action", hone_kind_name(HONE_KIND_AUTOML), "name", "demo"),
            &job) != 0)
        goto fail;
    snprintf(job_id, sizeof(job_id), "%s", json_string_value(json_object_get(job, "id")));
    if (!c->json) {
        const json_t *bp = cli_path_get(job, "automl.budget_plan");
        printf("AutoML job %s: %s on a %s, sized to its budget of %.1f min (one epoch ~%.1f s "
               "here): R %lld, nu %lld, epoch multiplier %lld, trials of up to %lld epochs, about "
               "%lld of them; on Fashion-MNIST (%s)\n",
               job_id, algorithm, network, job_budget_s / 60, epoch_s,
               (long long)json_integer_value(json_object_get(bp, "R")),
               (long long)json_integer_value(json_object_get(bp, "eta")),
               (long long)json_integer_value(json_object_get(bp, "epoch_multiplier")),
               (long long)json_integer_value(json_object_get(bp, "full_epochs")),
               (long long)json_integer_value(json_object_get(bp, "trials")), dpath);
        printf("(controller %s; logs in %s/logs)\n", cli_stack_url(stack), so.data_dir);
    }
    fflush(stdout);
    sub = *c;
    sub.rest = d.rest;
    sub.url = cli_stack_url(stack);
    /* the controller ends the search within its budget; past it (a stalled worker), cancel */
    rc = cli_job_wait_budget(&sub, job_id, budget_s - (hone_now() - d.t0) + 30, progress, &fin);
    if (!fin && !*c->stop) {
        /* Over budget: stop the search and report the best so far. */
        hone_rest_resp resp;
        halted = demo_count_paused(&d, job_id);
        fprintf(stderr, "budget reached: canceling the search\n");
        snprintf(path, sizeof(path), "/api/v1/jobs/%s:cancel", job_id);
        if (cli_call(&sub, "POST", path, NULL, &resp) == 0)
            hone_rest_resp_clear(&resp);
    }
    if (!*c->stop)
        rc = demo_report(&d, job_id, algorithm, budget_s, halted);
fail:
    if (*c->stop && job_id[0])
        fprintf(stderr, "interrupted; stopping the local stack\n");
    json_decref(fin);
    json_decref(ds);
    json_decref(exp);
    json_decref(job);
    hone_rest_free(d.rest);
    cli_stack_stop(stack);
    return rc;
}
