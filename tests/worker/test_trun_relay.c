/* test_trun_relay: the worker's line relay against real child processes (small sh scripts that
 * print JSON lines like hone-train): epoch lines reach the hook, stop/pause end the child,
 * a child that ignores SIGTERM is killed after the grace, stderr keeps only its tail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker.h"
#include "check.h"

typedef struct relay {
    int epochs[64];
    double acc[64];
    int n;
    int answer_at; /* epoch at which to answer `answer` */
    hone_wdecision answer;
    int stop_after_epochs; /* should_stop becomes true after this many epochs (0 = never) */
    int events;
    int log_n[64];        /* lines in each epoch line's "log" */
    size_t log_bytes[64]; /* their bytes */
    char log_first[64][16], log_last[64][16];
} relay;

static hone_wdecision on_epoch(void *arg, int epoch, json_t *line)
{
    relay *r = arg;
    if (r->n < 64) {
        r->epochs[r->n] = epoch;
        r->acc[r->n] = json_number_value(json_object_get(line, "val_accuracy"));
        json_t *log = json_object_get(line, "log"), *l;
        size_t i;
        r->log_n[r->n] = json_is_array(log) ? (int)json_array_size(log) : -1;
        json_array_foreach(log, i, l)
        {
            r->log_bytes[r->n] += json_string_length(l);
            snprintf(i ? r->log_last[r->n] : r->log_first[r->n], 16, "%s", json_string_value(l));
            if (!i)
                snprintf(r->log_last[r->n], 16, "%s", json_string_value(l));
        }
        r->n++;
    }
    return epoch == r->answer_at ? r->answer : HONE_WDECISION_CONTINUE;
}

static void on_event(void *arg, json_t *line)
{
    relay *r = arg;
    (void)line;
    r->events++;
}

static int should_stop(void *arg)
{
    relay *r = arg;
    return r->stop_after_epochs > 0 && r->n >= r->stop_after_epochs;
}

static char tmpdir[256];

static const char *script(const char *name, const char *body)
{
    static char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    f = fopen(path, "w");
    if (!f)
        abort();
    fprintf(f, "#!/bin/sh\n%s", body);
    fclose(f);
    if (chmod(path, 0755) != 0)
        abort();
    return path;
}

static void run(const char *path, const hone_trun_opts *o, relay *r, hone_trun_result *res, int *rc)
{
    hone_trun_hooks h = {on_epoch, on_event, should_stop, r};
    char *argv[] = {(char *)path, "--spec", "x.yaml", NULL};
    *rc = hone_trun_run(argv, o, &h, res);
}

/* A trainer that runs to the end: every epoch line is relayed, the done line is kept, stderr
 * lands in the log tail, and a non-JSON stdout line is not mistaken for an epoch. */
static void test_done(void)
{
    const char *p = script("done.sh", "echo 'loading data' >&2\n"
                                      "echo 'not json'\n"
                                      "for e in 1 2 3; do\n"
                                      "  echo \"{\\\"epoch\\\":$e,\\\"epochs\\\":3,"
                                      "\\\"val_accuracy\\\":0.$e}\"\n"
                                      "done\n"
                                      "printf '{\"event\":\"done\",\"test_accuracy\":0.91}'\n"
                                      "echo 'bye' >&2\n");
    relay r = {0};
    hone_trun_result res;
    int rc;

    run(p, NULL, &r, &res, &rc);
    CHECK(rc == 0);
    CHECK(res.outcome == HONE_TRUN_DONE);
    CHECK(res.exit_code == 0);
    CHECK(r.n == 3 && r.epochs[0] == 1 && r.epochs[2] == 3);
    CHECK(r.acc[1] > 0.19 && r.acc[1] < 0.21);
    CHECK(res.epochs_seen == 3 && res.last_epoch == 3);
    CHECK(r.events == 1);
    CHECK(res.done && json_number_value(json_object_get(res.done, "test_accuracy")) > 0.9);
    CHECK(res.log_tail && strstr(res.log_tail, "loading data") && strstr(res.log_tail, "bye"));
    CHECK(res.log_tail && strstr(res.log_tail, "not json"));
    hone_trun_result_clear(&res);
}

static const char *slow_body = "e=1\n"
                               "while [ $e -le 50 ]; do\n"
                               "  echo \"{\\\"epoch\\\":$e,\\\"val_accuracy\\\":0.5}\"\n"
                               "  sleep 0.05\n"
                               "  e=$((e+1))\n"
                               "done\n";

/* stop at epoch 2: no further epochs are relayed, the child is terminated. */
static void test_stop(void)
{
    const char *p = script("slow.sh", slow_body);
    relay r = {.answer_at = 2, .answer = HONE_WDECISION_STOP};
    hone_trun_opts o = {.grace_s = 5};
    hone_trun_result res;
    int rc;

    run(p, &o, &r, &res, &rc);
    CHECK(rc == 0);
    CHECK(res.outcome == HONE_TRUN_STOPPED);
    CHECK(r.n == 2);
    CHECK(res.exit_code == 128 + 15);
    hone_trun_result_clear(&res);
}

static void test_pause(void)
{
    const char *p = script("slow2.sh", slow_body);
    relay r = {.answer_at = 1, .answer = HONE_WDECISION_PAUSE};
    hone_trun_result res;
    int rc;

    run(p, NULL, &r, &res, &rc);
    CHECK(rc == 0);
    CHECK(res.outcome == HONE_TRUN_PAUSED);
    CHECK(r.n == 1 && res.last_epoch == 1);
    hone_trun_result_clear(&res);
}

/* A child (and its own child) ignoring SIGTERM is killed after the grace. */
static void test_kill_after_grace(void)
{
    const char *p = script("stubborn.sh", "trap '' TERM\n"
                                          "echo '{\"epoch\":1}'\n"
                                          "sleep 30\n"
                                          "echo '{\"epoch\":2}'\n");
    relay r = {.answer_at = 1, .answer = HONE_WDECISION_STOP};
    hone_trun_opts o = {.grace_s = 0.3};
    hone_trun_result res;
    int rc;

    run(p, &o, &r, &res, &rc);
    CHECK(rc == 0);
    CHECK(res.outcome == HONE_TRUN_STOPPED);
    CHECK(res.exit_code == 128 + 9);
    CHECK(r.n == 1);
    hone_trun_result_clear(&res);
}

/* A stop answered on the last epoch lets the trainer finish and print its test accuracy. */
static void test_stop_on_last_epoch_lets_it_finish(void)
{
    const char *p = script("last.sh", "echo '{\"epoch\":1}'\n"
                                      "echo '{\"epoch\":2}'\n"
                                      "sleep 0.2\n"
                                      "echo '{\"event\":\"done\",\"test_accuracy\":0.8}'\n");
    relay r = {.answer_at = 2, .answer = HONE_WDECISION_STOP};
    hone_trun_opts o = {.last_epoch = 2};
    hone_trun_result res;
    int rc;

    run(p, &o, &r, &res, &rc);
    CHECK(rc == 0);
    CHECK(res.outcome == HONE_TRUN_STOPPED);
    CHECK(res.exit_code == 0);
    CHECK(res.done != NULL);
    hone_trun_result_clear(&res);
}

/* A failing trainer: outcome failed, exit code kept, only the last 50 stderr lines kept. */
static void test_failure_log_tail(void)
{
    const char *p = script("fail.sh", "i=1\n"
                                      "while [ $i -le 80 ]; do echo \"line-$i\" >&2; i=$((i+1)); "
                                      "done\n"
                                      "exit 3\n");
    relay r = {0};
    hone_trun_result res;
    int rc;

    run(p, NULL, &r, &res, &rc);
    CHECK(rc == 0);
    CHECK(res.outcome == HONE_TRUN_FAILED);
    CHECK(res.exit_code == 3);
    CHECK(res.log_tail && strstr(res.log_tail, "line-80\n"));
    CHECK(res.log_tail && !strstr(res.log_tail, "line-30\n"));
    CHECK(res.log_tail && strstr(res.log_tail, "line-32\n"));
    hone_trun_result_clear(&res);
}

/* Each epoch line carries the stderr lines since the previous one, once: at most the newest 50,
 * within 8 KiB (the controller refuses more). */
static void test_epoch_log(void)
{
    const char *p =
        script("log.sh", "i=1; while [ $i -le 60 ]; do echo \"a$i\" >&2; i=$((i+1)); "
                         "done\n"
                         "sleep 0.4; echo '{\"epoch\":1}'\n"
                         "i=10; while [ $i -le 39 ]; do printf 'b%02d%0387d\\n' $i 0 >&2; "
                         "i=$((i+1)); done\n"
                         "sleep 0.4; echo '{\"epoch\":2}'\n"
                         "sleep 0.2; echo '{\"epoch\":3}'\n");
    relay r = {0};
    hone_trun_result res;
    int rc;

    run(p, NULL, &r, &res, &rc);
    CHECK(rc == 0 && res.outcome == HONE_TRUN_DONE && r.n == 3);
    /* 60 lines: the newest 50 */
    CHECK(r.log_n[0] == 50 && !strcmp(r.log_first[0], "a11") && !strcmp(r.log_last[0], "a60"));
    /* 30 lines of 390 bytes: the newest 21 fit in 8192 */
    CHECK(r.log_n[1] == 21 && r.log_bytes[1] == 21 * 390);
    CHECK(!strncmp(r.log_first[1], "b19", 3) && !strncmp(r.log_last[1], "b39", 3));
    CHECK(r.log_n[2] == 0); /* nothing new */
    hone_trun_result_clear(&res);
}

static void test_should_stop_aborts(void)
{
    const char *p = script("slow3.sh", slow_body);
    relay r = {.stop_after_epochs = 3};
    hone_trun_result res;
    int rc;

    run(p, NULL, &r, &res, &rc);
    CHECK(rc == 0);
    CHECK(res.outcome == HONE_TRUN_ABORTED);
    CHECK(r.n >= 3 && r.n < 50);
    hone_trun_result_clear(&res);
}

static void test_missing_trainer(void)
{
    relay r = {0};
    hone_trun_result res;
    int rc;
    char path[512];

    snprintf(path, sizeof(path), "%s/no-such-trainer", tmpdir);
    run(path, NULL, &r, &res, &rc);
    CHECK(rc == HONE_EIO);
    CHECK(res.outcome == HONE_TRUN_FAILED);
    CHECK(res.log_tail && strstr(res.log_tail, "cannot run"));
    hone_trun_result_clear(&res);
}

int main(void)
{
    char cmd[300];

    snprintf(tmpdir, sizeof(tmpdir), "/tmp/hone-trun-XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    test_done();
    test_epoch_log();
    test_stop();
    test_pause();
    test_kill_after_grace();
    test_stop_on_last_epoch_lets_it_finish();
    test_failure_log_tail();
    test_should_stop_aborts();
    test_missing_trainer();
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        failures++;
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
