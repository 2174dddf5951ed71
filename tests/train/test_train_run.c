/* tests/train/test_train_run.c: short real training runs on a Fashion-MNIST subset: an MLP learns
 * far above chance, a small CNN trains, and a run paused after epoch 1 and resumed from its
 * checkpoint reproduces the uninterrupted run exactly (metrics and final weights). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train.h"
#include "check.h"
#include "train_files.h"

#define FASHION "/usr/share/datasets/fashion-mnist"

typedef struct {
    hone_train_epoch e[8];
    int n;
} history;

static int record(const hone_train_epoch *e, void *user)
{
    history *h = user;
    if (h->n < 8)
        h->e[h->n++] = *e;
    return 0;
}

static void subset_spec(hone_train_spec *s, const char *network, int train, int epochs)
{
    char err[256];
    hone_train_spec_defaults(s);
    snprintf(s->data.path, sizeof(s->data.path), "%s",
             getenv("HONE_FASHION_MNIST") ? getenv("HONE_FASHION_MNIST") : FASHION);
    snprintf(s->network, sizeof(s->network), "%s", network);
    s->data.train_limit = train;
    s->data.val_size = 1000;
    s->data.test_limit = 2000;
    s->train.epochs = epochs;
    s->train.batch_size = 64;
    (void)err;
}

static int run(const hone_train_spec *s, const char *out, const char *resume, int until, history *h,
               hone_train_result *res)
{
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

int main(void)
{
    const char *dir = getenv("HONE_FASHION_MNIST") ? getenv("HONE_FASHION_MNIST") : FASHION;
    char probe[512];
    snprintf(probe, sizeof(probe), "%s/train-images-idx3-ubyte.gz", dir);
    if (access(probe, R_OK) != 0) {
        snprintf(probe, sizeof(probe), "%s/train-images-idx3-ubyte", dir);
        if (access(probe, R_OK) != 0) {
            fprintf(stderr,
                    "test_train_run: Fashion-MNIST not found in %s: install the Debian package "
                    "dataset-fashion-mnist (or set HONE_FASHION_MNIST)\n",
                    dir);
            return 1;
        }
    }
    hone_train_spec s;
    hone_train_result r;
    history h = {0};

    /* 1. an MLP on 2000 images learns far above chance (10%) */
    subset_spec(&s, "mlp", 2000, 2);
    s.model.hidden = 128;
    s.train.lr = 0.1;
    CHECK(run(&s, NULL, NULL, 0, &h, &r) == HONE_OK);
    CHECK(r.finished && r.epochs_trained == 2 && h.n == 2);
    fprintf(stderr, "mlp: test accuracy %.4f, val %.4f\n", r.test_accuracy, r.best_val_accuracy);
    CHECK(r.test_accuracy > 0.65);
    CHECK(h.n == 2 && h.e[1].train_loss < h.e[0].train_loss);

    /* 2. a small CNN with batch norm trains */
    memset(&h, 0, sizeof(h));
    subset_spec(&s, "cnn", 512, 2);
    s.model.batchnorm = 1;
    s.model.hidden = 32;
    CHECK(run(&s, NULL, NULL, 0, &h, &r) == HONE_OK);
    fprintf(stderr, "cnn: test accuracy %.4f\n", r.test_accuracy);
    CHECK(r.finished && isfinite(r.test_loss) && r.test_accuracy > 0.4);

    /* 3. pause after epoch 1 + resume == uninterrupted, with every stateful feature on */
    subset_spec(&s, "mlp", 1024, 3);
    s.model.hidden = 64;
    s.model.depth = 2;
    s.model.batchnorm = 1;
    s.model.dropout = 0.2;
    s.augment.flip = 1;
    s.augment.crop_padding = 2;
    snprintf(s.train.optimizer, sizeof(s.train.optimizer), "adamw");
    s.train.lr = 0.003;
    s.train.warmup_epochs = 1;
    char a[] = "/tmp/hone-train-a-XXXXXX", b[] = "/tmp/hone-train-b-XXXXXX";
    CHECK(mkdtemp(a) && mkdtemp(b));
    history ha = {0}, hb = {0};
    hone_train_result ra, rb;
    CHECK(run(&s, a, NULL, 0, &ha, &ra) == HONE_OK);
    CHECK(run(&s, b, NULL, 1, &hb, &rb) == HONE_OK);
    CHECK(!rb.finished && rb.epochs_trained == 1 && hb.n == 1);
    char ck[512];
    snprintf(ck, sizeof(ck), "%s/checkpoint.bin", b);
    CHECK(run(&s, b, ck, 0, &hb, &rb) == HONE_OK);
    CHECK(rb.finished && rb.epochs_trained == 3 && hb.n == 3 && ha.n == 3);
    for (int i = 0; i < 3 && i < hb.n; i++) {
        CHECK(ha.e[i].train_loss == hb.e[i].train_loss);
        CHECK(ha.e[i].val_accuracy == hb.e[i].val_accuracy);
        CHECK(ha.e[i].lr == hb.e[i].lr);
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

    /* 4. a checkpoint from another architecture is refused; a corrupt one too */
    hone_train_spec other = s;
    other.model.hidden = 32;
    CHECK(run(&other, NULL, ck, 0, &h, &r) == HONE_EINVAL);
    FILE *f = fopen(ck, "r+b");
    fseek(f, 100, SEEK_SET);
    fputc(0x5a, f);
    fclose(f);
    CHECK(run(&s, NULL, ck, 0, &h, &r) == HONE_EPARSE);
    rm_out(a);
    rm_out(b);

    /* 5. a missing dataset is a clear error */
    snprintf(s.data.path, sizeof(s.data.path), "/nonexistent");
    hone_train_opts o = {.spec = &s, .device = "cpu"};
    char err[512] = "";
    CHECK(hone_train_run(&o, &r, err, sizeof(err)) == HONE_ENOENT);
    CHECK(strstr(err, "/nonexistent/train-images-idx3-ubyte") != NULL);

    if (failures)
        fprintf(stderr, "test_train_run: %d failure(s)\n", failures);
    return failures != 0;
}
