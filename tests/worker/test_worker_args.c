/* test_worker_args: hone-worker's command line (defaults, values, errors that name the fix), the
 * trainer argv built from a lease (--spec its flat spec file, no --set, epochs-until, resume, out),
 * and the epoch lines a resumed job replays from the trainer's metrics.jsonl. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker.h"
#include "check.h"

static int parse(hone_worker_opts *o, char *err, size_t n, int argc, char **argv)
{
    return hone_worker_args_parse(argc, argv, o, err, n);
}

static void test_defaults_and_values(void)
{
    hone_worker_opts o;
    char err[1024];
    char *a[] = {
        "hone-worker", "--controller", "http://127.0.0.1:9", "--name=w1", "--threads", "2",
        "--device",    "cpu",          "--work-dir",         "/tmp/x",    "--grace",   "0.5"};
    CHECK(parse(&o, err, sizeof(err), 12, a) == 0);
    CHECK(strcmp(o.controller, "http://127.0.0.1:9") == 0);
    CHECK(strcmp(o.name, "w1") == 0);
    CHECK(o.threads == 2);
    CHECK(strcmp(o.device, "cpu") == 0);
    CHECK(strcmp(o.work_dir, "/tmp/x") == 0);
    CHECK(o.grace_s > 0.49 && o.grace_s < 0.51);
    CHECK(o.lease_wait_s == 20);
    CHECK(strcmp(o.storage, "shared") == 0 && o.cache_dir == NULL);
    CHECK(o.resident == -1); /* the worker resolves it: on with --device cuda */
}

/* --resident / --no-resident, the last one wins; --help names them. */
static void test_resident(void)
{
    hone_worker_opts o;
    char err[1024];
    char *a1[] = {"hone-worker", "--controller", "http://x", "--resident"};
    char *a2[] = {"hone-worker", "--controller", "http://x", "--resident", "--no-resident"};
    char *a3[] = {"hone-worker", "--help"};

    CHECK(parse(&o, err, sizeof(err), 4, a1) == 0 && o.resident == 1);
    CHECK(parse(&o, err, sizeof(err), 5, a2) == 0 && o.resident == 0);
    CHECK(parse(&o, err, sizeof(err), 2, a3) == 1 && strstr(err, "--resident"));
}

/* --trainer-socket PATH (HONE_TRAINER_SOCKET the default; none unless given, even with --gpu);
 * refused beside --no-resident; --help names it. */
static void test_trainer_socket(void)
{
    hone_worker_opts o;
    char err[4096];
    char *a1[] = {"hone-worker", "--controller", "http://x", "--trainer-socket", "/tmp/t.sock"};
    char *a2[] = {"hone-worker", "--controller", "http://x", "--gpu", "1"};
    char *a3[] = {"hone-worker", "--controller", "http://x", "--trainer-socket=/tmp/t.sock",
                  "--no-resident"};
    char *a4[] = {"hone-worker", "--help"};

    unsetenv("HONE_TRAINER_SOCKET");
    CHECK(parse(&o, err, sizeof(err), 5, a1) == 0 && o.trainer_socket &&
          strcmp(o.trainer_socket, "/tmp/t.sock") == 0);
    CHECK(parse(&o, err, sizeof(err), 5, a2) == 0 && o.trainer_socket == NULL);
    CHECK(parse(&o, err, sizeof(err), 5, a3) == HONE_EINVAL && strstr(err, "--trainer-socket"));
    CHECK(parse(&o, err, sizeof(err), 2, a4) == 1 && strstr(err, "--trainer-socket") &&
          strstr(err, "HONE_TRAINER_SOCKET"));
    setenv("HONE_TRAINER_SOCKET", "/tmp/env.sock", 1);
    CHECK(parse(&o, err, sizeof(err), 5, a2) == 0 && o.trainer_socket &&
          strcmp(o.trainer_socket, "/tmp/env.sock") == 0);
    CHECK(parse(&o, err, sizeof(err), 5, a1) == 0 && strcmp(o.trainer_socket, "/tmp/t.sock") == 0);
    setenv("HONE_TRAINER_SOCKET", "", 1);
    CHECK(parse(&o, err, sizeof(err), 5, a2) == 0 && o.trainer_socket == NULL);
    unsetenv("HONE_TRAINER_SOCKET");
}

/* --gpu INDEX pins the worker (and implies --device cuda); HONE_GPU is the default; bad values and
 * --device cpu are refused, naming the option. */
static void test_gpu(void)
{
    hone_worker_opts o;
    char err[1024];
    char *a1[] = {"hone-worker", "--controller", "http://x", "--gpu", "1"};
    char *a2[] = {"hone-worker", "--controller", "http://x"};
    char *a3[] = {"hone-worker", "--controller", "http://x", "--gpu", "x"};
    char *a4[] = {"hone-worker", "--controller", "http://x", "--gpu=0", "--device", "cpu"};

    unsetenv("HONE_GPU");
    CHECK(parse(&o, err, sizeof(err), 5, a1) == 0 && o.pin_gpu && o.gpu == 1 &&
          strcmp(o.device, "cuda") == 0);
    CHECK(parse(&o, err, sizeof(err), 3, a2) == 0 && !o.pin_gpu && strcmp(o.device, "auto") == 0);
    CHECK(parse(&o, err, sizeof(err), 5, a3) == HONE_EINVAL && strstr(err, "--gpu"));
    CHECK(parse(&o, err, sizeof(err), 6, a4) == HONE_EINVAL && strstr(err, "--gpu") &&
          strstr(err, "cpu"));
    setenv("HONE_GPU", "3", 1);
    CHECK(parse(&o, err, sizeof(err), 3, a2) == 0 && o.pin_gpu && o.gpu == 3);
    CHECK(parse(&o, err, sizeof(err), 5, a1) == 0 && o.gpu == 1); /* the flag wins */
    setenv("HONE_GPU", "-1", 1);
    CHECK(parse(&o, err, sizeof(err), 3, a2) == HONE_EINVAL && strstr(err, "HONE_GPU"));
    unsetenv("HONE_GPU");
}

/* --storage and --cache-dir; HONE_STORAGE is the default, the flag wins over it. */
static void test_storage(void)
{
    hone_worker_opts o;
    char err[1024];
    char *a1[] = {"hone-worker", "--controller", "http://x", "--storage",
                  "http",        "--cache-dir",  "/tmp/c"};
    char *a2[] = {"hone-worker", "--controller", "http://x", "--storage=s3"};
    char *a3[] = {"hone-worker", "--controller", "http://x"};
    char *a4[] = {"hone-worker", "--controller", "http://x", "--storage", "shared"};
    char *a5[] = {"hone-worker", "--help"};

    unsetenv("HONE_STORAGE");
    CHECK(parse(&o, err, sizeof(err), 7, a1) == 0 && strcmp(o.storage, "http") == 0 &&
          strcmp(o.cache_dir, "/tmp/c") == 0);
    CHECK(parse(&o, err, sizeof(err), 4, a2) == HONE_EINVAL && strstr(err, "shared or http"));
    setenv("HONE_STORAGE", "http", 1);
    CHECK(parse(&o, err, sizeof(err), 3, a3) == 0 && strcmp(o.storage, "http") == 0);
    CHECK(parse(&o, err, sizeof(err), 5, a4) == 0 && strcmp(o.storage, "shared") == 0);
    setenv("HONE_STORAGE", "ftp", 1);
    CHECK(parse(&o, err, sizeof(err), 3, a3) == HONE_EINVAL && strstr(err, "HONE_STORAGE"));
    unsetenv("HONE_STORAGE");
    CHECK(parse(&o, err, sizeof(err), 2, a5) == 1 && strstr(err, "--storage") &&
          strstr(err, "--cache-dir"));
}

static void test_errors(void)
{
    hone_worker_opts o;
    char err[1024];
    char *a1[] = {"hone-worker", "--controller", "http://x", "--threads", "many"};
    char *a2[] = {"hone-worker", "--controller", "http://x", "--device", "tpu"};
    char *a3[] = {"hone-worker", "--controller", "http://x", "--bogus", "1"};
    char *a4[] = {"hone-worker", "--controller"};
    char *a5[] = {"hone-worker", "--controller", "ftp://x"};
    char *a6[] = {"hone-worker", "--help"};

    unsetenv("HONE_URL");
    CHECK(parse(&o, err, sizeof(err), 5, a1) == HONE_EINVAL && strstr(err, "--threads"));
    CHECK(parse(&o, err, sizeof(err), 5, a2) == HONE_EINVAL && strstr(err, "cpu, cuda or auto"));
    CHECK(parse(&o, err, sizeof(err), 5, a3) == HONE_EINVAL && strstr(err, "--bogus"));
    CHECK(parse(&o, err, sizeof(err), 2, a4) == HONE_EINVAL && strstr(err, "needs a value"));
    CHECK(parse(&o, err, sizeof(err), 3, a5) == HONE_EINVAL && strstr(err, "http://"));
    CHECK(parse(&o, err, sizeof(err), 2, a6) == 1 && strstr(err, "usage"));
    CHECK(parse(&o, err, sizeof(err), 1, a6) == HONE_EINVAL && strstr(err, "--controller"));
    setenv("HONE_URL", "http://127.0.0.1:1234", 1);
    CHECK(parse(&o, err, sizeof(err), 1, a6) == 0 &&
          strcmp(o.controller, "http://127.0.0.1:1234") == 0);
    unsetenv("HONE_URL");
}

static int argv_has(char **argv, const char *a, const char *b)
{
    for (char **p = argv; *p; p++)
        if (strcmp(p[0], a) == 0 && (!b || (p[1] && strcmp(p[1], b) == 0)))
            return 1;
    return 0;
}

static void test_trainer_argv(void)
{
    hone_worker_opts o = {.device = "cpu", .threads = 1};
    json_error_t je;
    json_t *job = json_loads("{\"id\":\"job-1\",\"overrides\":{\"train.lr\":0.01,"
                             "\"train.batch_size\":64,\"train.optimizer\":\"adamw\","
                             "\"model.bn\":true},\"epochs_until\":9,\"resume\":true,"
                             "\"checkpoint\":null}",
                             0, &je);
    char **argv = hone_worker_trainer_argv(&o, "/bin/hone-train", job, "/w/s.json", "/w/out");

    CHECK(strcmp(argv[0], "/bin/hone-train") == 0);
    CHECK(argv_has(argv, "--spec", "/w/s.json"));
    /* the trial's values are in the spec file (the lease's flat spec): none comes as --set, and
     * a lease's overrides are not read */
    CHECK(!argv_has(argv, "--set", NULL));
    CHECK(argv_has(argv, "--epochs-until", "9"));
    CHECK(argv_has(argv, "--resume", "auto"));
    CHECK(argv_has(argv, "--out", "/w/out"));
    CHECK(argv_has(argv, "--device", "cpu"));
    CHECK(argv_has(argv, "--threads", "1"));
    hone_worker_argv_free(argv);
    json_object_set_new(job, "checkpoint", json_string("/elsewhere/job-1"));
    argv = hone_worker_trainer_argv(&o, "t", job, "s", "/w/out");
    CHECK(argv_has(argv, "--resume", "/elsewhere/job-1/checkpoint.bin"));
    hone_worker_argv_free(argv);
    json_object_set_new(job, "checkpoint", json_string("/w/out"));
    argv = hone_worker_trainer_argv(&o, "t", job, "s", "/w/out");
    CHECK(argv_has(argv, "--resume", "auto"));
    hone_worker_argv_free(argv);
    json_object_set_new(job, "checkpoint", json_string("/c/ck.bin"));
    argv = hone_worker_trainer_argv(&o, "t", job, "s", "/w/out");
    CHECK(argv_has(argv, "--resume", "/c/ck.bin"));
    hone_worker_argv_free(argv);
    json_object_set_new(job, "resume", json_false());
    argv = hone_worker_trainer_argv(&o, "t", job, "s", "o");
    CHECK(!argv_has(argv, "--resume", NULL));
    hone_worker_argv_free(argv);
    /* fine-tuning: the parent's model folder the runner resolved, as model.pretrained (hone-train
     * skips it when it resumes from a checkpoint) */
    json_object_set_new(job, "pretrained_dir", json_string("/w/parents/job-1"));
    argv = hone_worker_trainer_argv(&o, "t", job, "s", "o");
    CHECK(argv_has(argv, "--set", "model.pretrained=/w/parents/job-1"));
    hone_worker_argv_free(argv);
    json_decref(job);
}

/* An evaluate, an inference and an export lease: --evaluate / --infer on the model, the data
 * overrides, --out, device and threads; --export into out_dir/model.onnx; a lease without what it
 * needs gives no argv. */
static void test_action_argv(void)
{
    hone_worker_opts o = {.device = "cuda", .threads = 2};
    json_t *job =
        json_pack("{s:s,s:s,s:s,s:[s,s],s:s}", "id", "job-2", "action", "evaluate", "model_dir",
                  "/a/job-1", "sets", "data.path=/d", "data.packed=", "out_dir", "/a/job-2");
    char **argv = hone_worker_action_argv(&o, "/bin/hone-train", job);
    REQUIRE(argv);
    CHECK(strcmp(argv[0], "/bin/hone-train") == 0);
    CHECK(argv_has(argv, "--evaluate", "/a/job-1"));
    CHECK(argv_has(argv, "--set", "data.path=/d"));
    CHECK(argv_has(argv, "--set", "data.packed="));
    CHECK(argv_has(argv, "--out", "/a/job-2"));
    CHECK(argv_has(argv, "--device", "cuda"));
    CHECK(argv_has(argv, "--threads", "2"));
    CHECK(!argv_has(argv, "--infer", NULL) && !argv_has(argv, "--spec", NULL));
    hone_worker_argv_free(argv);
    json_object_set_new(job, "action", json_string("inference"));
    CHECK(hone_worker_action_argv(&o, "t", job) == NULL); /* no folder */
    json_object_set_new(job, "folder", json_string("/imgs"));
    argv = hone_worker_action_argv(&o, "t", job);
    REQUIRE(argv);
    CHECK(argv_has(argv, "--infer", "/a/job-1"));
    CHECK(strcmp(argv[2], "/a/job-1") == 0 && strcmp(argv[3], "/imgs") == 0);
    hone_worker_argv_free(argv);
    /* export: the ONNX file in the job's folder, no data overrides, no --out */
    json_object_set_new(job, "action", json_string("export"));
    argv = hone_worker_action_argv(&o, "t", job);
    REQUIRE(argv);
    CHECK(strcmp(argv[1], "--export") == 0 && strcmp(argv[2], "/a/job-1") == 0 &&
          strcmp(argv[3], "/a/job-2/model.onnx") == 0);
    CHECK(argv_has(argv, "--device", "cuda") && argv_has(argv, "--threads", "2"));
    CHECK(!argv_has(argv, "--set", NULL) && !argv_has(argv, "--out", NULL));
    hone_worker_argv_free(argv);
    json_object_del(job, "model_dir");
    CHECK(hone_worker_action_argv(&o, "t", job) == NULL);
    json_decref(job);
}

/* The epochs of the array's lines, "1,2,3". */
static void epochs_of(const json_t *a, char *buf, size_t len)
{
    size_t i, used = 0;
    json_t *v;
    buf[0] = '\0';
    json_array_foreach(a, i, v)
    {
        used += (size_t)snprintf(buf + used, len - used, "%s%lld", i ? "," : "",
                                 (long long)json_integer_value(json_object_get(v, "epoch")));
    }
}

static void write_metrics(const char *dir, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void check_replay(const char *dir, int after, int upto, const char *want)
{
    char got[256];
    json_t *a = hone_worker_unreported_epochs(dir, after, upto);
    epochs_of(a, got, sizeof(got));
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "replay after %d upto %d: got [%s], want [%s]\n", after, upto, got, want);
        failures++;
    }
    json_decref(a);
}

static void test_unreported_epochs(void)
{
    char dir[] = "/tmp/hone-wreplay-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    check_replay(dir, 2, 0, ""); /* no metrics.jsonl: nothing to replay */
    /* a first run (epochs 1-3, paused), a resumed one (4-5) and a line cut short by a kill */
    write_metrics(dir, "{\"epoch\":1,\"val_accuracy\":0.5}\n"
                       "{\"epoch\":2,\"val_accuracy\":0.6}\n"
                       "{\"epoch\":3,\"val_accuracy\":0.7}\n"
                       "{\"event\":\"paused\",\"epochs_trained\":3}\n"
                       "{\"epoch\":4,\"val_accuracy\":0.75}\n"
                       "not json\n"
                       "{\"epoch\":5,\"val_accuracy\":0.8}\n"
                       "{\"epoch\":6,\"val_acc");
    check_replay(dir, 2, 0, "3,4,5");
    check_replay(dir, 0, 0, "1,2,3,4,5");
    check_replay(dir, 2, 4, "3,4"); /* not past the lease's epochs_until */
    check_replay(dir, 5, 0, "");
    check_replay(dir, 9, 0, "");
    /* a repeated epoch: the later line wins; a missing epoch ends the list */
    write_metrics(dir, "{\"epoch\":3,\"val_accuracy\":0.1}\n"
                       "{\"epoch\":4,\"val_accuracy\":0.2}\n"
                       "{\"epoch\":3,\"val_accuracy\":0.3}\n"
                       "{\"epoch\":6,\"val_accuracy\":0.4}\n"
                       "{\"epoch\":\"7\"}\n[8]\n{\"epoch\":-1}\n");
    check_replay(dir, 2, 0, "3,4");
    json_t *a = hone_worker_unreported_epochs(dir, 2, 0);
    CHECK(json_array_size(a) == 2 &&
          json_real_value(json_object_get(json_array_get(a, 0), "val_accuracy")) == 0.3);
    json_decref(a);
    check_replay(dir, 1, 0, ""); /* epoch 2 is missing: nothing can be replayed */
    check_replay(dir, 5, 0, "6");
    char path[512];
    snprintf(path, sizeof(path), "%s/metrics.jsonl", dir);
    unlink(path);
    rmdir(dir);
}

/* --token-file FILE: its first line is the token (HONE_TOKEN and no --token beside it); a file
 * others may read is flagged (a warning); a missing or empty file, or both options, are refused
 * naming --token-file; --help prefers it to --token. */
static void test_token_file(void)
{
    hone_worker_opts o;
    char err[4096], path[] = "/tmp/hone-worker-tok-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, "enrol-secret-1\nignored\n", 23) == 23);
    close(fd);
    chmod(path, 0600);
    char *a1[] = {"hone-worker", "--controller", "http://x", "--token-file", path};
    char *a2[] = {"hone-worker", "--controller", "http://x", "--token-file", path, "--token", "t"};
    char *a3[] = {"hone-worker", "--controller", "http://x", "--token-file", "/nonexistent/t"};
    char *a4[] = {"hone-worker", "--help"};
    setenv("HONE_TOKEN", "from-env", 1);
    CHECK(parse(&o, err, sizeof(err), 5, a1) == 0 && o.token &&
          strcmp(o.token, "enrol-secret-1") == 0 && !o.token_file_loose);
    CHECK(parse(&o, err, sizeof(err), 3, a1) == 0 && strcmp(o.token, "from-env") == 0);
    unsetenv("HONE_TOKEN");
    chmod(path, 0644);
    CHECK(parse(&o, err, sizeof(err), 5, a1) == 0 && o.token_file_loose &&
          strcmp(o.token, "enrol-secret-1") == 0);
    CHECK(parse(&o, err, sizeof(err), 7, a2) == HONE_EINVAL && strstr(err, "--token-file"));
    CHECK(parse(&o, err, sizeof(err), 5, a3) == HONE_EINVAL && strstr(err, "--token-file"));
    fd = open(path, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0 && write(fd, "\n", 1) == 1);
    close(fd);
    CHECK(parse(&o, err, sizeof(err), 5, a1) == HONE_EINVAL && strstr(err, "no token"));
    CHECK(parse(&o, err, sizeof(err), 2, a4) == 1 && strstr(err, "--token-file") &&
          strstr(err, "prefer it"));
    unlink(path);
}

int main(void)
{
    test_token_file();
    test_defaults_and_values();
    test_errors();
    test_storage();
    test_gpu();
    test_resident();
    test_trainer_socket();
    test_trainer_argv();
    test_action_argv();
    test_unreported_epochs();
    CHECK(hone_wdecision_parse("stop") == HONE_WDECISION_STOP);
    CHECK(hone_wdecision_parse("pause") == HONE_WDECISION_PAUSE);
    CHECK(hone_wdecision_parse("continue") == HONE_WDECISION_CONTINUE);
    CHECK(hone_wdecision_parse(NULL) == HONE_WDECISION_CONTINUE);
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
