/* tests/train/test_train_smooth.c: train.label_smoothing in real training runs on a Fashion-MNIST
 * subset (CPU): an mlp trained with eps 0.1 learns as well as without (its training loss, the
 * smoothed one, differs from the plain run's); with the learning rate 0 (the weights never move)
 * eps changes the training loss and nothing else: validation and test loss and accuracy stay the
 * plain cross-entropy's, bit for bit; a cnn with eps paused after epoch 1 and resumed from its
 * checkpoint reproduces the uninterrupted run exactly, and its spec.yaml reads back with eps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "train.h"
#include "train_files.h"

#define FASHION "/usr/share/datasets/fashion-mnist"

typedef struct {
    hone_train_epoch e[4];
    int n;
} history;

static int record(const hone_train_epoch *e, void *user)
{
    history *h = user;
    if (h->n < 4)
        h->e[h->n++] = *e;
    return 0;
}

static void subset_spec(hone_train_spec *s, const char *network, int train, int epochs)
{
    hone_train_spec_defaults(s);
    snprintf(s->data.path, sizeof(s->data.path), "%s",
             getenv("HONE_FASHION_MNIST") ? getenv("HONE_FASHION_MNIST") : FASHION);
    snprintf(s->network, sizeof(s->network), "%s", network);
    s->data.train_limit = train;
    s->data.val_size = 1000;
    s->data.test_limit = 2000;
    s->train.epochs = epochs;
    s->train.batch_size = 64;
}

static int run(const hone_train_spec *s, const char *out, const char *resume, int until, history *h,
               hone_train_result *res)
{
    memset(h, 0, sizeof(*h));
    hone_train_opts o = {.spec = s,
                         .device = "cpu",
                         .threads = 2,
                         .out_dir = out,
                         .resume_path = resume,
                         .epochs_until = until,
                         .on_epoch = record,
                         .user = h};
    char err[512] = "";
    int rc = hone_train_run(&o, res, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "hone_train_run: %s\n", err);
    return rc;
}

/* eps 0.1 trains an mlp as well as plain cross-entropy; the reported training loss is the
 * smoothed one (above the plain run's: the smoothed targets cannot be met) */
static void trains(void)
{
    hone_train_spec s;
    history h0, h1;
    hone_train_result r0, r1;
    subset_spec(&s, "mlp", 2000, 2);
    s.model.hidden = 128;
    CHECK(run(&s, NULL, NULL, 0, &h0, &r0) == HONE_OK);
    s.train.label_smoothing = 0.1;
    CHECK(run(&s, NULL, NULL, 0, &h1, &r1) == HONE_OK);
    fprintf(stderr, "mlp: test accuracy %.4f plain, %.4f with eps 0.1; train loss %g, %g\n",
            r0.test_accuracy, r1.test_accuracy, h0.e[1].train_loss, h1.e[1].train_loss);
    CHECK(r1.finished && h1.n == 2 && r1.test_accuracy > 0.65);
    CHECK(fabs(r1.test_accuracy - r0.test_accuracy) < 0.05);
    CHECK(h1.e[1].train_loss < h1.e[0].train_loss);
    CHECK(h1.e[0].train_loss > h0.e[0].train_loss && h1.e[1].train_loss > h0.e[1].train_loss);
    CHECK(isfinite(r1.test_loss) && r1.test_loss != r0.test_loss); /* the weights differ */
}

/* lr 0: the same weights all run long, so only the training loss may see eps */
static void eval_plain(void)
{
    hone_train_spec s;
    history h0, h1;
    hone_train_result r0, r1;
    subset_spec(&s, "cnn", 512, 2);
    s.model.hidden = 32;
    s.train.lr = 0;
    CHECK(run(&s, NULL, NULL, 0, &h0, &r0) == HONE_OK);
    s.train.label_smoothing = 0.2;
    CHECK(run(&s, NULL, NULL, 0, &h1, &r1) == HONE_OK);
    CHECK(h0.n == 2 && h1.n == 2);
    for (int i = 0; i < 2 && i < h1.n; i++) {
        CHECK(h1.e[i].train_loss != h0.e[i].train_loss);
        CHECK(h1.e[i].train_accuracy == h0.e[i].train_accuracy);
        CHECK(h1.e[i].val_loss == h0.e[i].val_loss);
        CHECK(h1.e[i].val_accuracy == h0.e[i].val_accuracy);
    }
    CHECK(r1.test_loss == r0.test_loss && r1.test_accuracy == r0.test_accuracy);
}

/* pause after epoch 1 + resume == uninterrupted, with eps; spec.yaml keeps eps */
static void resumes(void)
{
    hone_train_spec s;
    subset_spec(&s, "cnn", 768, 3);
    s.model.hidden = 32;
    s.model.dropout = 0.2;
    s.augment.flip = 1;
    s.train.label_smoothing = 0.15;
    char a[] = "/tmp/hone-smooth-a-XXXXXX", b[] = "/tmp/hone-smooth-b-XXXXXX";
    CHECK(mkdtemp(a) && mkdtemp(b));
    history ha, hb, hb2;
    hone_train_result ra, rb;
    CHECK(run(&s, a, NULL, 0, &ha, &ra) == HONE_OK);
    CHECK(run(&s, b, NULL, 1, &hb, &rb) == HONE_OK);
    CHECK(!rb.finished && rb.epochs_trained == 1 && hb.n == 1);
    char ck[512], sp[512];
    snprintf(ck, sizeof(ck), "%s/checkpoint.bin", b);
    snprintf(sp, sizeof(sp), "%s/spec.yaml", b);
    hone_train_spec back;
    char err[256] = "";
    CHECK(hone_train_spec_load_file(&back, sp, err, sizeof err) == HONE_OK &&
          back.train.label_smoothing == 0.15);
    CHECK(run(&back, b, ck, 0, &hb2, &rb) == HONE_OK);
    CHECK(rb.finished && rb.epochs_trained == 3 && hb2.n == 2 && ha.n == 3);
    CHECK(ha.e[0].train_loss == hb.e[0].train_loss);
    for (int i = 0; i < 2 && i < hb2.n; i++) {
        CHECK(ha.e[i + 1].train_loss == hb2.e[i].train_loss);
        CHECK(ha.e[i + 1].val_loss == hb2.e[i].val_loss);
    }
    CHECK(ra.test_accuracy == rb.test_accuracy && ra.test_loss == rb.test_loss);
    char pa[512], pb[512];
    unsigned char *ma = NULL, *mb = NULL;
    snprintf(pa, sizeof(pa), "%s/model.bin", a);
    snprintf(pb, sizeof(pb), "%s/model.bin", b);
    long na = read_file(pa, &ma), nb = read_file(pb, &mb);
    CHECK(na > 0 && na == nb && memcmp(ma, mb, (size_t)na) == 0);
    free(ma);
    free(mb);
    rm_out(a);
    rm_out(b);
}

int main(void)
{
    const char *dir = getenv("HONE_FASHION_MNIST") ? getenv("HONE_FASHION_MNIST") : FASHION;
    char probe[512];
    snprintf(probe, sizeof(probe), "%s/train-images-idx3-ubyte.gz", dir);
    if (access(probe, R_OK) != 0) {
        fprintf(stderr, "test_train_smooth: Fashion-MNIST not found in %s\n", dir);
        return 1;
    }
    trains();
    eval_plain();
    resumes();
    fprintf(stderr, "test_train_smooth: %s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
