/* test_trun_socket: hone_trun_run_socket against a real shared `hone-train --serve --listen` on a
 * Fashion-MNIST subset (CPU): the first job starts the server (exactly one, and a second client
 * finds it); two clients' jobs run at once on it; a pause, a stop and an abort end their job with
 * the cancel line (exit 143) and leave the server and the connection for the next job, which
 * trains to the numbers of the first; kill -9 of the server mid-job fails the job and the next one,
 * resumed from the checkpoint, starts a new server and ends with the epochs of the uninterrupted
 * run; a server that stops answering (SIGSTOP) is killed once silent for silence_s; a stop not
 * carried out within the grace closes the connection and leaves the server alone.
 * Usage: test_trun_socket HONE-TRAIN (skips, 77, without Fashion-MNIST or while hone-train refuses
 * --listen). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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
    double grace_s;   /* hone_trun_opts.grace_s (0: 20) */
    int server_pid;
    hone_trun_sock *c;
} relay;

static hone_wdecision on_epoch(void *arg, int epoch, json_t *line)
{
    relay *r = arg;
    if (epoch > 0 && epoch < 64)
        r->loss[epoch] = json_number_value(json_object_get(line, "train_loss"));
    r->n++;
    r->last = epoch;
    r->server_pid = hone_trun_sock_pid(r->c);
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

/* One job of `epochs` epochs into tmpdir/out on c; extra: "--resume" or NULL. */
static int job(hone_trun_sock *c, const char *out, int epochs, relay *r, hone_trun_result *res,
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
                    "1",
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
    hone_trun_opts o = {.grace_s = r->grace_s > 0 ? r->grace_s : 20, .silence_s = r->silence_s};
    r->c = c;
    return hone_trun_run_socket(c, argv, &o, &h, res);
}

typedef struct side_job {
    hone_trun_sock *c;
    relay r;
    hone_trun_result res;
    int rc;
} side_job;

static void *side_main(void *arg)
{
    side_job *s = arg;
    s->rc = job(s->c, "side", 4, &s->r, &s->res, NULL);
    return NULL;
}

/* Whether process pid is dead within tries x 50 ms (gone, or a zombie: it is not our child). */
static int gone(int pid, int tries)
{
    for (int i = 0; i < tries; i++) {
        char path[64], buf[512];
        snprintf(path, sizeof(path), "/proc/%d/stat", pid);
        FILE *f = fopen(path, "r");
        if (!f)
            return 1;
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        char *p = strrchr(buf, ')');
        if (p && p[1] == ' ' && p[2] == 'Z')
            return 1;
        usleep(50000);
    }
    return 0;
}

/* 0 when `train --serve --listen` runs (it idles out at once), 77 when refused. */
static int listen_supported(void)
{
    char sock[400], cmd[1200];
    snprintf(sock, sizeof(sock), "%s/probe.sock", tmpdir);
    snprintf(cmd, sizeof(cmd),
             "out=$(timeout 20 '%s' --serve --listen '%s' --idle-exit 1 </dev/null 2>&1) && "
             "exit 1; echo \"$out\" | grep -q listen",
             train_bin, sock);
    int st = system(cmd);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 77 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_trun_socket HONE-TRAIN\n");
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
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/hone-trun-socket-XXXXXX");
    REQUIRE(mkdtemp(tmpdir) != NULL);
    if (listen_supported() == 77) {
        printf("skip: %s refuses --serve --listen\n", train_bin);
        return 77;
    }
    char sock[400], log[400];
    snprintf(sock, sizeof(sock), "%s/trainer.sock", tmpdir);
    snprintf(log, sizeof(log), "%s/server.log", tmpdir);
    hone_trun_sock *c = hone_trun_sock_new(sock, log), *c2 = hone_trun_sock_new(sock, log);
    hone_trun_result res;
    relay full = {0};

    /* 1. a job to the end starts the server; a second client's job beside a first client's job
     * finds it (no second server) */
    CHECK(hone_trun_sock_pid(c) == -1);
    CHECK(job(c, "full", 4, &full, &res, NULL) == 0);
    CHECK(res.outcome == HONE_TRUN_DONE && res.exit_code == 0 && res.done);
    if (res.outcome != HONE_TRUN_DONE)
        fprintf(stderr, "full: %s\n", res.log_tail);
    CHECK(full.n == 4 && full.loss[4] > 0);
    CHECK(hone_trun_sock_started(c) == 1);
    int pid = hone_trun_sock_pid(c);
    REQUIRE(pid > 0);
    hone_trun_result_clear(&res);
    side_job side = {.c = c2};
    pthread_t th;
    relay both = {0};
    REQUIRE(pthread_create(&th, NULL, side_main, &side) == 0);
    CHECK(job(c, "both", 4, &both, &res, NULL) == 0);
    pthread_join(th, NULL);
    CHECK(res.outcome == HONE_TRUN_DONE && side.rc == 0 && side.res.outcome == HONE_TRUN_DONE);
    CHECK(hone_trun_sock_started(c2) == 0 && hone_trun_sock_pid(c2) == pid);
    for (int e = 1; e <= 4; e++)
        CHECK(both.loss[e] == full.loss[e] && side.r.loss[e] == full.loss[e]);
    hone_trun_result_clear(&res);
    hone_trun_result_clear(&side.res);

    /* 2. pause, stop and abort end the job and not the server */
    hone_wdecision answers[] = {HONE_WDECISION_PAUSE, HONE_WDECISION_STOP, HONE_WDECISION_CONTINUE};
    hone_trun_outcome want[] = {HONE_TRUN_PAUSED, HONE_TRUN_STOPPED, HONE_TRUN_ABORTED};
    for (int i = 0; i < 3; i++) {
        relay r = {.answer_at = 1, .answer = answers[i], .abort_at = i == 2 ? 1 : 0};
        char out[32];
        snprintf(out, sizeof(out), "ctl%d", i);
        CHECK(job(c, out, 40, &r, &res, NULL) == 0);
        CHECK(res.outcome == want[i]);
        CHECK(res.exit_code == 128 + SIGTERM);
        CHECK(r.n >= 1 && r.n < 40);
        CHECK(hone_trun_sock_pid(c) == pid);
        if (res.outcome != want[i] || res.exit_code != 128 + SIGTERM)
            fprintf(stderr, "job %d: outcome %s exit %d\n%s\n", i,
                    hone_trun_outcome_name(res.outcome), res.exit_code, res.log_tail);
        hone_trun_result_clear(&res);
    }

    /* 3. the same server, the same job again: the same numbers as the first time */
    relay again = {0};
    CHECK(job(c, "again", 4, &again, &res, NULL) == 0);
    CHECK(res.outcome == HONE_TRUN_DONE && again.n == 4);
    for (int e = 1; e <= 4; e++)
        CHECK(again.loss[e] == full.loss[e]);
    CHECK(hone_trun_sock_pid(c) == pid && hone_trun_sock_started(c) == 1);
    hone_trun_result_clear(&res);

    /* 4. kill -9 of the server mid-job, then the job resumed on a new server */
    relay killed = {.kill_at = 2};
    CHECK(job(c, "killed", 4, &killed, &res, NULL) == 0);
    CHECK(res.outcome == HONE_TRUN_FAILED);
    CHECK(res.log_tail && strstr(res.log_tail, "closed the connection mid-job"));
    CHECK(hone_trun_sock_pid(c) == -1);
    hone_trun_result_clear(&res);
    relay resumed = {0};
    CHECK(job(c, "killed", 4, &resumed, &res, "--resume") == 0);
    CHECK(res.outcome == HONE_TRUN_DONE && res.exit_code == 0);
    CHECK(hone_trun_sock_started(c) == 2);
    CHECK(hone_trun_sock_pid(c) > 0 && hone_trun_sock_pid(c) != pid);
    CHECK(resumed.n >= 1 && resumed.n <= 2 && resumed.last == 4);
    for (int e = 3; e <= 4; e++) /* the epochs it ran (it resumed from the last checkpoint) */
        CHECK(resumed.loss[e] == 0 || resumed.loss[e] == full.loss[e]);
    CHECK(resumed.loss[4] == full.loss[4]);
    if (res.outcome != HONE_TRUN_DONE)
        fprintf(stderr, "resumed: %s\n", res.log_tail);
    hone_trun_result_clear(&res);

    /* 5. a server that stops answering mid-job is killed after silence_s; the next job gets a
     * new one */
    int before = hone_trun_sock_pid(c);
    relay frozen = {.freeze_at = 1, .silence_s = 5};
    double t0 = hone_now();
    CHECK(job(c, "frozen", 40, &frozen, &res, NULL) == 0);
    CHECK(res.outcome == HONE_TRUN_FAILED && res.exit_code == 128 + SIGKILL);
    CHECK(hone_now() - t0 < 60);
    CHECK(res.log_tail && strstr(res.log_tail, "wrote nothing for 5 s"));
    CHECK(hone_trun_sock_pid(c) == -1);
    hone_trun_result_clear(&res);
    CHECK(gone(before, 100));
    relay after = {.silence_s = 5};
    CHECK(job(c, "after", 2, &after, &res, NULL) == 0);
    CHECK(res.outcome == HONE_TRUN_DONE && after.n == 2);
    CHECK(hone_trun_sock_pid(c) > 0 && hone_trun_sock_pid(c) != before);
    hone_trun_result_clear(&res);

    /* 6. a stop the server does not carry out within the grace (it is stopped, SIGSTOP): the
     * connection is closed and the job ends as stopped, the server left alone; once it runs
     * again the next job finds it */
    int live = hone_trun_sock_pid(c), starts = hone_trun_sock_started(c);
    relay held = {.freeze_at = 1, .answer_at = 1, .answer = HONE_WDECISION_STOP, .grace_s = 2};
    CHECK(job(c, "held", 40, &held, &res, NULL) == 0);
    CHECK(res.outcome == HONE_TRUN_STOPPED && res.exit_code == 128 + SIGTERM);
    CHECK(res.log_tail && strstr(res.log_tail, "did not end the job within 2 s"));
    CHECK(hone_trun_sock_pid(c) == -1);
    hone_trun_result_clear(&res);
    CHECK(live > 0 && kill(live, SIGCONT) == 0 && !gone(live, 1));
    relay back = {0};
    CHECK(job(c, "back", 2, &back, &res, NULL) == 0);
    CHECK(res.outcome == HONE_TRUN_DONE && back.n == 2);
    CHECK(hone_trun_sock_pid(c) == live && hone_trun_sock_started(c) == starts);
    hone_trun_result_clear(&res);

    int last = hone_trun_sock_pid(c);
    hone_trun_sock_free(c);
    hone_trun_sock_free(c2);
    if (last > 0)
        kill(last, SIGKILL); /* it would end by itself after --idle-exit 60 */
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "%s %s", getenv("HONE_KEEP") ? "true" : "rm -rf", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
