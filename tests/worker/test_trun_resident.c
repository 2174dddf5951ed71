/* test_trun_resident: hone_trun_run_resident against a real `hone-train --serve` on a Fashion-MNIST
 * subset (CPU): one server runs job after job; a pause, a stop and an abort end their job (SIGTERM)
 * and leave the same server ready for the next, which trains to the numbers of a job run on a
 * fresh server; kill -9 of the server mid-job fails that job (exit 137) and the next job, resumed
 * from the checkpoint on a new server, ends with the epochs of an uninterrupted run; a server that
 * stops answering (SIGSTOP) is killed once it has said nothing for silence_s and replaced.
 * Usage: test_trun_resident HONE-TRAIN (skips, 77, without Fashion-MNIST). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "worker.h"

typedef struct relay {
    double loss[64]; /* train_loss of epoch e at [e] */
    int n, last;
    int answer_at; /* epoch at which to answer `answer` */
    hone_wdecision answer;
    int abort_at;     /* should_stop once this epoch is seen (0 = never) */
    int kill_at;      /* kill -9 the server at this epoch (0 = never) */
    int freeze_at;    /* SIGSTOP the server at this epoch (0 = never) */
    double silence_s; /* hone_trun_opts.silence_s */
    int server_pid;
} relay;

static hone_wdecision on_epoch(void *arg, int epoch, json_t *line)
{
    relay *r = arg;
    if (epoch > 0 && epoch < 64)
        r->loss[epoch] = json_number_value(json_object_get(line, "train_loss"));
    r->n++;
    r->last = epoch;
    if (r->kill_at && epoch == r->kill_at)
        kill(r->server_pid, SIGKILL);
    if (r->freeze_at && epoch == r->freeze_at)
        kill(r->server_pid, SIGSTOP);
    return epoch == r->answer_at ? r->answer : HONE_WDECISION_CONTINUE;
}

static int should_stop(void *arg)
{
    relay *r = arg;
    return r->abort_at > 0 && r->last >= r->abort_at;
}

static const char *train_bin, *fashion;
static char tmpdir[256];

/* One job of `epochs` epochs into tmpdir/out on *srv; extra: more arguments (NULL-ended). */
static int job(hone_trun_server **srv, const char *out, int epochs, relay *r, hone_trun_result *res,
               const char *extra)
{
    char data[600], ep[64], dir[600];
    snprintf(data, sizeof(data), "data.path=%s", fashion);
    snprintf(ep, sizeof(ep), "train.epochs=%d", epochs);
    snprintf(dir, sizeof(dir), "%s/%s", tmpdir, out);
    char *argv[] = {(char *)train_bin,
                    "--device",
                    "cpu",
                    "--threads",
                    "2",
                    "--set",
                    data,
                    "--set",
                    ep,
                    "--set",
                    "data.train_limit=2048",
                    "--set",
                    "data.val_size=500",
                    "--set",
                    "data.test_limit=500",
                    "--set",
                    "model.hidden=32",
                    "--set",
                    "train.batch_size=32",
                    "--out",
                    dir,
                    (char *)extra,
                    extra ? "auto" : NULL,
                    NULL};
    hone_trun_hooks h = {on_epoch, NULL, should_stop, r};
    hone_trun_opts o = {.grace_s = 20, .silence_s = r->silence_s};
    r->server_pid = hone_trun_server_pid(*srv);
    return hone_trun_run_resident(srv, argv, &o, &h, res);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_trun_resident HONE-TRAIN\n");
        return 2;
    }
    train_bin = argv[1];
    fashion = getenv("HONE_FASHION_MNIST") ? getenv("HONE_FASHION_MNIST")
                                           : "/usr/share/datasets/fashion-mnist";
    char probe[700];
    snprintf(probe, sizeof(probe), "%s/train-images-idx3-ubyte.gz", fashion);
    if (access(probe, R_OK) != 0) {
        printf("skip: no Fashion-MNIST at %s\n", fashion);
        return 77;
    }
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/hone-trun-resident-XXXXXX");
    REQUIRE(mkdtemp(tmpdir) != NULL);
    hone_trun_server *srv = NULL;
    hone_trun_result res;
    relay full = {0};

    /* 1. a job to the end starts the server */
    CHECK(job(&srv, "full", 4, &full, &res, NULL) == 0);
    CHECK(res.outcome == HONE_TRUN_DONE && res.exit_code == 0 && res.done);
    CHECK(full.n == 4 && full.loss[4] > 0);
    REQUIRE(srv != NULL);
    int pid = hone_trun_server_pid(srv);
    hone_trun_result_clear(&res);

    /* 2. pause, stop and abort end the job and not the server */
    hone_wdecision answers[] = {HONE_WDECISION_PAUSE, HONE_WDECISION_STOP, HONE_WDECISION_CONTINUE};
    hone_trun_outcome want[] = {HONE_TRUN_PAUSED, HONE_TRUN_STOPPED, HONE_TRUN_ABORTED};
    for (int i = 0; i < 3; i++) {
        relay r = {.answer_at = 1, .answer = answers[i], .abort_at = i == 2 ? 1 : 0};
        char out[32];
        snprintf(out, sizeof(out), "ctl%d", i);
        CHECK(job(&srv, out, 40, &r, &res, NULL) == 0);
        CHECK(res.outcome == want[i]);
        CHECK(res.exit_code == 128 + SIGTERM);
        CHECK(r.n >= 1 && r.n < 40);
        CHECK(srv && hone_trun_server_pid(srv) == pid);
        if (res.outcome != want[i] || res.exit_code != 128 + SIGTERM)
            fprintf(stderr, "job %d: outcome %s exit %d\n%s\n", i,
                    hone_trun_outcome_name(res.outcome), res.exit_code, res.log_tail);
        hone_trun_result_clear(&res);
    }

    /* 3. the same server, the same job again: the same numbers as the first time */
    relay again = {0};
    CHECK(job(&srv, "again", 4, &again, &res, NULL) == 0);
    CHECK(res.outcome == HONE_TRUN_DONE && again.n == 4);
    for (int e = 1; e <= 4; e++)
        CHECK(again.loss[e] == full.loss[e]);
    CHECK(srv && hone_trun_server_pid(srv) == pid);
    hone_trun_result_clear(&res);

    /* 4. kill -9 of the server mid-job, then the job resumed on a new server */
    relay killed = {.kill_at = 2};
    CHECK(job(&srv, "killed", 4, &killed, &res, NULL) == 0);
    CHECK(res.outcome == HONE_TRUN_FAILED && res.exit_code == 128 + SIGKILL);
    CHECK(srv == NULL);
    hone_trun_result_clear(&res);
    relay resumed = {0};
    CHECK(job(&srv, "killed", 4, &resumed, &res, "--resume") == 0);
    CHECK(res.outcome == HONE_TRUN_DONE && res.exit_code == 0);
    CHECK(srv && hone_trun_server_pid(srv) != pid);
    CHECK(resumed.n >= 1 && resumed.n <= 2 && resumed.last == 4);
    for (int e = 3; e <= 4; e++)
        CHECK(resumed.loss[e] == full.loss[e]);
    if (res.outcome != HONE_TRUN_DONE)
        fprintf(stderr, "resumed: %s\n", res.log_tail);
    hone_trun_result_clear(&res);

    /* 5. a server that stops answering mid-job is killed after silence_s, the next job gets a
     * new one */
    int before = hone_trun_server_pid(srv);
    relay frozen = {.freeze_at = 1, .silence_s = 5};
    double t0 = hone_now();
    CHECK(job(&srv, "frozen", 40, &frozen, &res, NULL) == 0);
    CHECK(res.outcome == HONE_TRUN_FAILED && res.exit_code == 128 + SIGKILL);
    CHECK(hone_now() - t0 < 60);
    CHECK(res.log_tail && strstr(res.log_tail, "wrote nothing for 5 s"));
    CHECK(srv == NULL);
    hone_trun_result_clear(&res);
    relay after = {.silence_s = 5};
    CHECK(job(&srv, "after", 2, &after, &res, NULL) == 0);
    CHECK(res.outcome == HONE_TRUN_DONE && after.n == 2);
    CHECK(srv && hone_trun_server_pid(srv) != before);
    hone_trun_result_clear(&res);
    hone_trun_server_free(srv);

    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
