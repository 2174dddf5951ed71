/* tests/train/test_train_pack.c: hone_train_run_pack (packed trials in one fused step) against the
 * same trials run alone through hone_train_run, on a Fashion-MNIST subset on the CPU: every
 * trial's metrics.jsonl (all but the wall-clock fields), checkpoint.bin, model.bin, model.json and
 * spec.yaml must be byte for byte its solo run's: 4 cnn trials with their own lr, momentum, seed,
 * dropout and augmentation; 3 mlp trials with batch norm and AdamW; 3 cnn trials of their own
 * train.label_smoothing; trials resumed at different epochs in one pack; a trial stopped by its
 * callback and one cancelled mid-pack while the others still equal their solo runs; incompatible
 * specs refused naming the key; hone_train_pack_key. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "train.h"
#include "train_files.h"

#define FASHION "/usr/share/datasets/fashion-mnist"
#define MAXT 4

static void subset_spec(hone_train_spec *s, const char *network, int epochs)
{
    hone_train_spec_defaults(s);
    snprintf(s->data.path, sizeof(s->data.path), "%s",
             getenv("HONE_FASHION_MNIST") ? getenv("HONE_FASHION_MNIST") : FASHION);
    snprintf(s->network, sizeof(s->network), "%s", network);
    s->data.train_limit = 384;
    s->data.val_size = 200;
    s->data.test_limit = 300;
    s->train.epochs = epochs;
    s->train.batch_size = 64;
    s->model.hidden = 32;
}

/* A line of metrics.jsonl without its wall-clock fields ("seconds", "images_per_second"). */
static void strip_clock(char *line)
{
    const char *keys[2] = {"\"seconds\":", "\"images_per_second\":"};
    for (int i = 0; i < 2; i++) {
        char *p = strstr(line, keys[i]);
        if (!p)
            continue;
        char *end = p + strlen(keys[i]);
        while (*end && *end != ',' && *end != '}')
            end++;
        if (*end == ',')
            end++;
        memmove(p, end, strlen(end) + 1);
    }
}

/* The trial's outputs in a equal its solo run's in b (what), byte for byte. */
static int same_outputs(const char *a, const char *b, const char *what)
{
    const char *files[] = {"checkpoint.bin", "model.bin", "model.json", "spec.yaml"};
    int ok = 1;
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char pa[600], pb[600];
        unsigned char *ma = NULL, *mb = NULL;
        snprintf(pa, sizeof(pa), "%s/%s", a, files[i]);
        snprintf(pb, sizeof(pb), "%s/%s", b, files[i]);
        long na = read_file(pa, &ma), nb = read_file(pb, &mb);
        if (na != nb || (na > 0 && memcmp(ma, mb, (size_t)na) != 0)) {
            fprintf(stderr, "%s: %s differs from the solo run's (%ld vs %ld bytes)\n", what,
                    files[i], na, nb);
            ok = 0;
        }
        free(ma);
        free(mb);
    }
    char pa[600], pb[600], la[1024], lb[1024];
    snprintf(pa, sizeof(pa), "%s/metrics.jsonl", a);
    snprintf(pb, sizeof(pb), "%s/metrics.jsonl", b);
    FILE *fa = fopen(pa, "r"), *fb = fopen(pb, "r");
    int lines = 0;
    while (fa && fb) {
        char *ra = fgets(la, sizeof(la), fa), *rb = fgets(lb, sizeof(lb), fb);
        if (!ra || !rb) {
            if (ra || rb) {
                fprintf(stderr, "%s: metrics.jsonl has a different number of lines\n", what);
                ok = 0;
            }
            break;
        }
        strip_clock(la);
        strip_clock(lb);
        if (strcmp(la, lb) != 0) {
            fprintf(stderr, "%s: metrics.jsonl line %d:\n  packed %s  solo   %s", what, lines + 1,
                    la, lb);
            ok = 0;
        }
        lines++;
    }
    if (!fa || !fb || lines == 0) {
        fprintf(stderr, "%s: metrics.jsonl missing or empty\n", what);
        ok = 0;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return ok;
}

/* on_end: the order in which trials left and their codes */
typedef struct {
    int order[MAXT], rc[MAXT], n;
} ends;

typedef struct {
    ends *e;                       /* on_end records into it (NULL: not) */
    int trial;                     /* ... as this trial */
    int stop_after;                /* the callback stops the trial after this epoch (0: never) */
    volatile sig_atomic_t *cancel; /* ... or sets this flag after cancel_after epochs */
    int cancel_after, epochs_seen;
} cb_state;

static int on_epoch(const hone_train_epoch *e, void *user)
{
    cb_state *c = user;
    c->epochs_seen++;
    if (c->cancel && e->epoch == c->cancel_after)
        *c->cancel = 1;
    return c->stop_after > 0 && e->epoch >= c->stop_after;
}

static void on_end(int rc, const char *err, void *user)
{
    cb_state *c = user; /* the trial's callbacks share their user */
    (void)err;
    if (c->e && c->e->n < MAXT) {
        c->e->order[c->e->n] = c->trial;
        c->e->rc[c->e->n++] = rc;
    }
}

static hone_train_opts opts_of(const hone_train_spec *s, const char *out, const char *resume)
{
    return (hone_train_opts){
        .spec = s, .device = "cpu", .threads = 2, .out_dir = out, .resume_path = resume};
}

static char dirs[2][MAXT][64];

static void make_dirs(int n)
{
    for (int i = 0; i < n; i++)
        for (int w = 0; w < 2; w++) {
            snprintf(dirs[w][i], sizeof(dirs[w][i]), "/tmp/hone-pack-%c%d-XXXXXX", "ps"[w], i);
            REQUIRE(mkdtemp(dirs[w][i]) != NULL);
        }
}

static void remove_dirs(int n)
{
    for (int i = 0; i < n; i++)
        for (int w = 0; w < 2; w++)
            rm_out(dirs[w][i]);
}

/* Trains specs s[0..n) packed (dirs[0]) and alone (dirs[1]) and compares each trial's outputs. */
static void pack_vs_solo(const hone_train_spec *s, int n, const char *what)
{
    make_dirs(n);
    hone_train_opts o[MAXT];
    const hone_train_opts *op[MAXT];
    hone_train_result res[MAXT], solo;
    int rc[MAXT];
    char err[MAXT][256];
    for (int i = 0; i < n; i++) {
        o[i] = opts_of(&s[i], dirs[0][i], NULL);
        op[i] = &o[i];
    }
    CHECK(hone_train_run_pack(op, n, res, rc, err) == HONE_OK);
    for (int i = 0; i < n; i++) {
        char e[512] = "", name[64];
        if (rc[i] != 0)
            fprintf(stderr, "%s: packed trial %d: %s\n", what, i, err[i]);
        hone_train_opts so = opts_of(&s[i], dirs[1][i], NULL);
        CHECK(hone_train_run(&so, &solo, e, sizeof(e)) == HONE_OK);
        snprintf(name, sizeof(name), "%s trial %d", what, i);
        CHECK(rc[i] == 0 && res[i].finished && solo.finished);
        CHECK(res[i].test_accuracy == solo.test_accuracy && res[i].test_loss == solo.test_loss);
        CHECK(same_outputs(dirs[0][i], dirs[1][i], name));
    }
    remove_dirs(n);
}

static void check_cnn(void)
{
    hone_train_spec s[4];
    for (int i = 0; i < 4; i++) {
        subset_spec(&s[i], "cnn", 2);
        s[i].train.lr = 0.02 + 0.01 * i;
        s[i].train.momentum = 0.8 + 0.05 * i;
        s[i].train.seed = 11 + (uint64_t)i * 7;
        s[i].model.dropout = 0.1 + 0.1 * i;
        s[i].train.weight_decay = 1e-4 * (i + 1);
    }
    s[1].augment.flip = 1;
    s[2].augment.crop_padding = 2;
    s[3].augment.cutout = 6;
    snprintf(s[3].train.lr_schedule, sizeof(s[3].train.lr_schedule), "constant");
    pack_vs_solo(s, 4, "cnn");
}

static void check_mlp(void)
{
    hone_train_spec s[3];
    for (int i = 0; i < 3; i++) {
        subset_spec(&s[i], "mlp", 2);
        s[i].model.depth = 2;
        s[i].model.batchnorm = 1;
        s[i].model.dropout = 0.0;
        snprintf(s[i].train.optimizer, sizeof(s[i].train.optimizer), "adamw");
        s[i].train.lr = 0.001 * (i + 1);
        s[i].train.seed = 5 + (uint64_t)i;
        s[i].train.warmup_epochs = i;
    }
    pack_vs_solo(s, 3, "mlp");
}

/* Label smoothing is a trial's own (not a pack key): trials of eps 0, 0.1 and 0.2 share one pack
 * key and each writes its solo run's outputs (so each trained with its own eps). */
static void check_smooth(void)
{
    hone_train_spec s[3];
    char k0[1024], k1[1024];
    for (int i = 0; i < 3; i++) {
        subset_spec(&s[i], "cnn", 2);
        s[i].train.label_smoothing = 0.1 * i;
    }
    CHECK(hone_train_pack_key(&s[0], "cpu", k0, sizeof(k0)) == HONE_OK);
    CHECK(hone_train_pack_key(&s[2], "cpu", k1, sizeof(k1)) == HONE_OK && !strcmp(k0, k1));
    pack_vs_solo(s, 3, "cnn smoothed");
}

/* Trials resumed at epochs 1 and 2 and a fresh one, packed, against uninterrupted solo runs. */
static void check_resume(void)
{
    hone_train_spec s[3];
    for (int i = 0; i < 3; i++) {
        subset_spec(&s[i], "cnn", 3);
        s[i].train.seed = 100 + (uint64_t)i;
        s[i].train.lr = 0.03 + 0.01 * i;
    }
    make_dirs(3);
    hone_train_result r;
    char e[512], ck[3][600];
    for (int i = 0; i < 2; i++) { /* paused solo runs, into the packed trials' folders */
        hone_train_opts po = opts_of(&s[i], dirs[0][i], NULL);
        po.epochs_until = i + 1;
        CHECK(hone_train_run(&po, &r, e, sizeof(e)) == HONE_OK && r.epochs_trained == i + 1);
        snprintf(ck[i], sizeof(ck[i]), "%s/checkpoint.bin", dirs[0][i]);
    }
    hone_train_opts o[3];
    const hone_train_opts *op[3];
    for (int i = 0; i < 3; i++) {
        o[i] = opts_of(&s[i], dirs[0][i], i < 2 ? ck[i] : NULL);
        op[i] = &o[i];
    }
    hone_train_result res[3];
    int rc[3];
    char err[3][256];
    CHECK(hone_train_run_pack(op, 3, res, rc, err) == HONE_OK);
    for (int i = 0; i < 3; i++) {
        char name[64];
        hone_train_opts so = opts_of(&s[i], dirs[1][i], NULL);
        CHECK(hone_train_run(&so, &r, e, sizeof(e)) == HONE_OK);
        CHECK(rc[i] == 0 && res[i].finished && res[i].epochs_trained == 3);
        CHECK(res[i].test_accuracy == r.test_accuracy && res[i].test_loss == r.test_loss);
        snprintf(name, sizeof(name), "resumed trial %d", i);
        /* paused then resumed in one folder: the same lines as the uninterrupted run but for the
         * paused line, so compare the model and checkpoint only for the resumed ones */
        if (i == 2)
            CHECK(same_outputs(dirs[0][i], dirs[1][i], name));
        else
            for (int f = 0; f < 2; f++) {
                const char *file = f ? "model.bin" : "checkpoint.bin";
                char pa[600], pb[600];
                unsigned char *ma = NULL, *mb = NULL;
                snprintf(pa, sizeof(pa), "%s/%s", dirs[0][i], file);
                snprintf(pb, sizeof(pb), "%s/%s", dirs[1][i], file);
                long na = read_file(pa, &ma), nb = read_file(pb, &mb);
                if (!(na > 0 && na == nb && memcmp(ma, mb, (size_t)na) == 0)) {
                    fprintf(stderr, "%s: %s differs\n", name, file);
                    failures++;
                }
                free(ma);
                free(mb);
            }
    }
    remove_dirs(3);
}

/* Trial 1 stops itself after epoch 1 (its callback), trial 2 is cancelled during epoch 2 (trial
 * 3's callback sets its flag after epoch 1, once trial 2's epoch 1 is reported: a flag set before
 * that would drop the epoch, as hone_train_run does); trials 0 and 3 still equal their solo runs,
 * and the two that left wrote what their solo runs write. Each trial's on_end comes once, as it
 * leaves: trial 1's and 2's before the others'. */
static void check_leave(void)
{
    hone_train_spec s[4];
    for (int i = 0; i < 4; i++) {
        subset_spec(&s[i], "cnn", 3);
        s[i].train.seed = 40 + (uint64_t)i;
        s[i].model.dropout = 0.2;
        s[i].train.lr = 0.02 * (i + 1);
    }
    make_dirs(4);
    volatile sig_atomic_t cancel2 = 0;
    cb_state cb[4] = {{0}};
    cb[3].cancel = &cancel2; /* trial 3 reports after trial 2: its epoch 1 stands */
    cb[3].cancel_after = 1;
    cb[1].stop_after = 1;
    hone_train_opts o[4];
    const hone_train_opts *op[4];
    ends ended = {{0}, {0}, 0};
    for (int i = 0; i < 4; i++) {
        o[i] = opts_of(&s[i], dirs[0][i], NULL);
        o[i].on_epoch = on_epoch;
        o[i].on_end = on_end;
        cb[i].e = &ended;
        cb[i].trial = i;
        o[i].user = &cb[i];
        op[i] = &o[i];
    }
    o[2].cancel = &cancel2;
    hone_train_result res[4], r;
    int rc[4];
    char err[4][256], e[512];
    CHECK(hone_train_run_pack(op, 4, res, rc, err) == HONE_ESTATE);
    CHECK(rc[0] == 0 && rc[1] == 0 && rc[2] == HONE_ESTATE && rc[3] == 0);
    CHECK(strcmp(err[2], "epoch 2: cancelled") == 0);
    CHECK(res[1].epochs_trained == 1 && !res[1].finished);
    CHECK(cb[2].epochs_seen == 1 && cb[0].epochs_seen == 3 && cb[3].epochs_seen == 3);
    CHECK(ended.n == 4 && ended.order[0] == 1 && ended.order[1] == 2);
    for (int j = 0; j < ended.n; j++)
        CHECK(ended.rc[j] == rc[ended.order[j]]);
    for (int i = 0; i < 4; i++) {
        char name[64];
        cb_state scb = {.stop_after = cb[i].stop_after};
        volatile sig_atomic_t solo_cancel = 0;
        hone_train_opts so = opts_of(&s[i], dirs[1][i], NULL);
        so.on_epoch = on_epoch;
        so.user = &scb;
        if (i == 2) { /* alone: cancelled before its second epoch, as the pack saw it */
            so.epochs_until = 1;
            solo_cancel = 0;
        }
        so.cancel = &solo_cancel;
        CHECK(hone_train_run(&so, &r, e, sizeof(e)) == HONE_OK);
        snprintf(name, sizeof(name), "leave trial %d", i);
        if (i != 2) {
            CHECK(same_outputs(dirs[0][i], dirs[1][i], name));
            continue;
        }
        /* the cancelled trial: its epoch-1 checkpoint and line, nothing after */
        char pa[600], pb[600];
        unsigned char *ma = NULL, *mb = NULL;
        snprintf(pa, sizeof(pa), "%s/checkpoint.bin", dirs[0][i]);
        snprintf(pb, sizeof(pb), "%s/checkpoint.bin", dirs[1][i]);
        long na = read_file(pa, &ma), nb = read_file(pb, &mb);
        CHECK(na > 0 && na == nb && memcmp(ma, mb, (size_t)na) == 0);
        free(ma);
        free(mb);
        snprintf(pa, sizeof(pa), "%s/metrics.jsonl", dirs[0][i]);
        long nl = read_file(pa, &ma);
        int lines = 0;
        for (long j = 0; j < nl; j++)
            lines += ma[j] == '\n';
        CHECK(lines == 1);
        free(ma);
    }
    remove_dirs(4);
}

static void check_refused(void)
{
    hone_train_spec s[2];
    subset_spec(&s[0], "cnn", 1);
    subset_spec(&s[1], "cnn", 1);
    s[1].train.lr = 0.5; /* a trial's own: same key */
    char k0[8192], k1[8192];
    CHECK(hone_train_pack_key(&s[0], "cpu", k0, sizeof(k0)) == HONE_OK);
    CHECK(hone_train_pack_key(&s[1], "cpu", k1, sizeof(k1)) == HONE_OK);
    CHECK(strcmp(k0, k1) == 0);
    CHECK(hone_train_pack_key(&s[1], "cuda", k1, sizeof(k1)) == HONE_OK && strcmp(k0, k1) != 0);
    CHECK(hone_train_pack_key(&s[0], "cpu", k1, 16) == HONE_ERANGE);
    s[1].model.hidden = 48;
    CHECK(hone_train_pack_key(&s[1], "cpu", k1, sizeof(k1)) == HONE_OK && strcmp(k0, k1) != 0);
    hone_train_opts o[2] = {opts_of(&s[0], NULL, NULL), opts_of(&s[1], NULL, NULL)};
    const hone_train_opts *op[2] = {&o[0], &o[1]};
    hone_train_result res[2];
    int rc[2];
    char err[2][256];
    CHECK(hone_train_run_pack(op, 2, res, rc, err) == HONE_EINVAL);
    CHECK(rc[0] == HONE_EINVAL && rc[1] == HONE_EINVAL);
    CHECK(strstr(err[0], "model.hidden") != NULL && strstr(err[1], "model.hidden") != NULL);
    s[1].model.hidden = s[0].model.hidden;
    s[1].train.batch_size = 32;
    CHECK(hone_train_run_pack(op, 2, res, rc, err) == HONE_EINVAL);
    CHECK(strstr(err[1], "train.batch_size") != NULL);
    snprintf(s[1].network, sizeof(s[1].network), "resnet18");
    CHECK(hone_train_pack_key(&s[1], "cpu", k1, sizeof(k1)) == HONE_EINVAL);
    CHECK(hone_train_run_pack(op, 2, res, rc, err) == HONE_EINVAL);
    CHECK(strstr(err[0], "cannot be packed") != NULL);
}

int main(void)
{
    const char *dir = getenv("HONE_FASHION_MNIST") ? getenv("HONE_FASHION_MNIST") : FASHION;
    char probe[512];
    snprintf(probe, sizeof(probe), "%s/train-images-idx3-ubyte.gz", dir);
    if (access(probe, R_OK) != 0) {
        fprintf(stderr, "test_train_pack: Fashion-MNIST not found in %s\n", dir);
        return 1;
    }
    check_refused();
    check_cnn();
    check_mlp();
    check_smooth();
    check_resume();
    check_leave();
    fprintf(stderr, "test_train_pack: %s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
