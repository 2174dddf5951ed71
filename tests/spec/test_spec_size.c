/* tests/spec/test_spec_size.c: the defaults sized to the data (spec/spec_size.c): Fashion-MNIST
 * keeps today's defaults (5000 validation images, batch 128, the learning rate, 10 epochs, the
 * AutoML ranges of the table) for every network; small sets get a split that leaves training
 * images, a batch that gives enough steps an epoch and a run long enough; a key the user set is
 * never changed, and the sizes after it follow it; unknown data changes nothing. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "spec.h"

static hone_spec sized(const char *net, long long train, long long val_images, uint64_t given,
                       const hone_spec *start)
{
    hone_spec s;
    if (start)
        s = *start;
    else
        hone_spec_defaults(&s, net);
    hone_spec_data d = {train, -1, 0, 0, 0, 0};
    hone_spec_size(&s, &d, val_images, given);
    return s;
}

static void fashion_mnist_unchanged(void)
{
    for (int n = 0; hone_spec_networks[n]; n++) {
        const char *net = hone_spec_networks[n];
        hone_spec def, s = sized(net, 60000, 0, 0, NULL);
        hone_spec_defaults(&def, net);
        CHECK(def.data.val_size == 5000 && s.data.val_size == 5000);
        CHECK(s.train.batch_size == def.train.batch_size);
        CHECK(s.train.epochs == def.train.epochs && s.train.step_epochs == def.train.step_epochs);
        CHECK(s.train.warmup_epochs == def.train.warmup_epochs);
        CHECK(memcmp(&s.train, &def.train, sizeof s.train) == 0);
        /* the AutoML spaces too */
        for (int all = 0; all < 2; all++) {
            json_t *a = hone_spec_space(net, all), *b = hone_spec_space_sized(net, all, 55000, 1.0);
            CHECK(json_equal(a, b));
            json_decref(a);
            json_decref(b);
        }
    }
    /* a larger set than Fashion-MNIST: the cap */
    CHECK(sized("cnn", 1000000, 0, 0, NULL).data.val_size == 5000);
}

static void small_sets(void)
{
    /* a 120-image folder without test/: hone-train carves a tenth for test, 108 stay */
    hone_spec s = sized("cnn", 108, 0, 0, NULL);
    CHECK(s.data.val_size == 21); /* 10% is 10; the floor of 50 is held to a fifth */
    CHECK(s.train.batch_size == 8);
    CHECK(fabs(s.train.lr - 0.0125) < 1e-12); /* cnn's 0.05 at 128, by sqrt(8 / 128) */
    /* 87 images at batch 8: 10 steps an epoch; raised to 500 steps, at most 50 epochs */
    CHECK(s.train.epochs == 50 && s.train.step_epochs == 50);
    CHECK(s.train.warmup_epochs == 0);
    /* a 300-image folder: 270 in train/ */
    s = sized("resnet18", 270, 0, 0, NULL);
    CHECK(s.data.val_size == 50 && s.train.batch_size == 8);
    /* the 600-image KITTI set without val/: 540 after the test carve */
    s = sized("detectnet_v2", 540, 0, 0, NULL);
    CHECK(s.data.val_size == 54);
    CHECK(s.train.batch_size == 8 && 486 / 8 >= HONE_SPEC_EPOCH_STEPS);
    CHECK(s.train.epochs == 10); /* 60 steps x 10 epochs: enough */
    CHECK(fabs(s.train.lr - 0.005) < 1e-12);
    /* 5000 images: 4500 left, batch 64 gives 70 steps */
    s = sized("mlp", 5000, 0, 0, NULL);
    CHECK(s.data.val_size == 500 && s.train.batch_size == 64 && s.train.epochs == 10);
    /* every size leaves training images, and its batch gives at least 50 steps an epoch or is
     * the smallest; the run at least 500 steps or 50 epochs */
    for (long long n = 1; n < 70000; n += n < 1000 ? 1 : 97) {
        s = sized("cnn", n, 0, 0, NULL);
        long long ntrain = n - s.data.val_size;
        CHECK(ntrain >= 1);
        CHECK(s.train.batch_size >= 1 && s.train.batch_size <= 128);
        CHECK(s.train.batch_size <= ntrain);
        CHECK(ntrain / s.train.batch_size >= HONE_SPEC_EPOCH_STEPS ||
              s.train.batch_size <= HONE_SPEC_MIN_BATCH);
        long long steps = ntrain / s.train.batch_size;
        CHECK(steps * s.train.epochs >= HONE_SPEC_RUN_STEPS || s.train.epochs == 50);
        char field[64], err[256];
        hone_spec_data d = {n, 10, 1, 28, 28, 10};
        CHECK(hone_spec_check(&s, &d, field, sizeof field, err, sizeof err) == HONE_OK);
    }
    /* a dataset with no training image: refused, naming data.val_size */
    s = sized("cnn", 0, 0, 0, NULL);
    hone_spec_data none = {0, 10, 1, 28, 28, 10};
    char field[64], err[256];
    CHECK(hone_spec_check(&s, &none, field, sizeof field, err, sizeof err) == HONE_EINVAL);
    CHECK(!strcmp(field, "data.val_size"));
}

static void given_kept(void)
{
    hone_spec start;
    hone_spec_defaults(&start, "cnn");
    start.data.val_size = 30;
    start.train.batch_size = 64;
    start.train.epochs = 3;
    uint64_t all = hone_spec_key_bit("data.val_size") | hone_spec_key_bit("train.batch_size") |
                   hone_spec_key_bit("train.epochs");
    CHECK(all && hone_spec_key_bit("no.such") == 0);
    hone_spec s = sized("cnn", 108, 0, all, &start);
    CHECK(s.data.val_size == 30 && s.train.batch_size == 64 && s.train.epochs == 3);
    /* a set val_size sizes the batch from what it leaves: 1000 - 600 = 400 -> 8 */
    start.data.val_size = 600;
    s = sized("cnn", 1000, 0, hone_spec_key_bit("data.val_size"), &start);
    CHECK(s.data.val_size == 600 && s.train.batch_size == 8);
    /* a set batch: the epochs follow it (2000 - 200 = 1800 at 512: 3 steps -> 50 epochs); the
     * learning rate is the user's to pair with their batch */
    hone_spec_defaults(&start, "cnn");
    start.train.batch_size = 512;
    s = sized("cnn", 2000, 0, hone_spec_key_bit("train.batch_size"), &start);
    CHECK(s.train.batch_size == 512 && s.train.epochs == 50 && s.train.lr == 0.05);
    start.train.batch_size = 8;
    s = sized("cnn", 2000, 0, hone_spec_key_bit("train.batch_size"), &start);
    CHECK(s.train.batch_size == 8 && s.train.lr == 0.05);
    /* a set lr stays; a set min_lr bounds the sized lr from below */
    hone_spec_defaults(&start, "cnn");
    start.train.lr = 0.2;
    s = sized("cnn", 108, 0, hone_spec_key_bit("train.lr"), &start);
    CHECK(s.train.lr == 0.2 && s.train.batch_size == 8);
    hone_spec_defaults(&start, "cnn");
    start.train.min_lr = 0.04;
    s = sized("cnn", 108, 0, hone_spec_key_bit("train.min_lr"), &start);
    CHECK(s.train.lr == 0.04);
    /* a min_lr above the default is left for hone_spec_check to refuse against that default */
    start.train.min_lr = 0.2;
    s = sized("cnn", 108, 0, hone_spec_key_bit("train.min_lr"), &start);
    CHECK(s.train.lr == 0.05);
    /* set epochs with a set warm-up: neither moves */
    hone_spec_defaults(&start, "cnn");
    start.train.warmup_epochs = 2;
    s = sized("cnn", 108, 0, hone_spec_key_bit("train.warmup_epochs"), &start);
    CHECK(s.train.warmup_epochs == 2 && s.train.epochs == 50);
    /* unset warm-up keeps its fraction */
    start.train.warmup_epochs = 1;
    s = sized("cnn", 108, 0, 0, &start);
    CHECK(s.train.warmup_epochs == 5);
}

static void val_folder_and_unknown(void)
{
    /* a folder with val/ (60 images): the split is that folder, the batch sized on the rest */
    hone_spec s = sized("detectnet_v2", 540 + 60, 60, 0, NULL);
    CHECK(s.data.val_size == 60 && s.train.batch_size == 8);
    /* unknown counts: the defaults as they are */
    hone_spec def, u = sized("cnn", -1, 0, 0, NULL);
    hone_spec_defaults(&def, "cnn");
    CHECK(memcmp(&u, &def, sizeof u) == 0);
}

static void batch_ranges(void)
{
    int lo, hi;
    /* the table's ranges for unknown or large data */
    CHECK(hone_spec_batch_range("cnn", -1, &lo, &hi) && lo == 64 && hi == 512);
    CHECK(hone_spec_batch_range("detectnet_v2", 100000, &lo, &hi) && lo == 16 && hi == 128);
    /* the 600-image KITTI set: 486 training images, ~25 to ~100 steps an epoch */
    CHECK(hone_spec_batch_range("detectnet_v2", 486, &lo, &hi) && lo == 4 && hi == 16);
    CHECK(hone_spec_batch_range("cnn", 87, &lo, &hi) && lo == 4 && hi == 8);
    /* the sized default lies in the range, so a trial can start from the spec */
    for (long long n = 2; n < 100000; n = n * 3 / 2 + 1) {
        for (int k = 0; hone_spec_networks[k]; k++) {
            int b = hone_spec_sized_batch(hone_spec_networks[k], n);
            if (hone_spec_batch_range(hone_spec_networks[k], n, &lo, &hi)) {
                CHECK(lo < hi && lo >= 1);
                CHECK(b >= lo && b <= hi);
            }
        }
    }
    /* the sized space of a tiny set has no batch to sweep; of a small one, the sized range */
    json_t *sp = hone_spec_space_sized("cnn", 0, 1, 1.0);
    CHECK(json_object_get(sp, "train.batch_size") == NULL);
    CHECK(json_object_get(sp, "train.lr") != NULL);
    json_decref(sp);
    sp =
        hone_spec_space_sized("detectnet_v2", 0, 486, hone_spec_sized_lr_factor("detectnet_v2", 8));
    json_t *b = json_object_get(sp, "train.batch_size");
    CHECK(json_integer_value(json_object_get(b, "min")) == 4);
    CHECK(json_integer_value(json_object_get(b, "max")) == 16);
    /* the swept learning rates follow the sized batch (8 of 128: a quarter) */
    json_t *lr = json_object_get(sp, "train.lr");
    CHECK(fabs(json_real_value(json_object_get(lr, "min")) - 2e-3 / 4) < 1e-12);
    CHECK(fabs(json_real_value(json_object_get(lr, "max")) - 0.05 / 4) < 1e-12);
    json_decref(sp);
    /* a batch the user set leaves the rates as they are */
    sp = hone_spec_space_sized("detectnet_v2", 0, 486, 1.0);
    lr = json_object_get(sp, "train.lr");
    CHECK(fabs(json_real_value(json_object_get(lr, "max")) - 0.05) < 1e-12);
    json_decref(sp);
}

int main(void)
{
    fashion_mnist_unchanged();
    small_sets();
    given_kept();
    val_folder_and_unknown();
    batch_ranges();
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    return failures != 0;
}
