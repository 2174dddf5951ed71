/* tests/train/test_train_limits.c: spec/'s size estimate follows the networks train/net.c builds
 * (the same parameter count for mlp, cnn and resnet18/34 at several widths and input sizes, with
 * and without batch norm and dropout), and
 * hone_train_run refuses, naming the key, what the controller refuses at create time: a model
 * above the parameter limit, a batch above the memory limit, a validation split that leaves no
 * training images, warmup longer than the run; all before it allocates the network. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net.h"
#include "check.h"

static char dir[] = "/tmp/hone-train-limits-XXXXXX";

static void write_idx(const char *name, int n, int image)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    unsigned char h[16] = {0, 0, 8, image ? 3 : 1};
    h[6] = (unsigned char)(n >> 8), h[7] = (unsigned char)n;
    h[11] = h[15] = 8;
    fwrite(h, 1, image ? 16 : 8, f);
    for (int i = 0; i < n * (image ? 64 : 1); i++)
        fputc(image ? (i * 13) % 256 : i % 10, f);
    fclose(f);
}

static void same_params(hone_kctx *k, const char *network, const char *const *sets, int c, int h,
                        int w, int classes)
{
    hone_train_spec s;
    char err[256];
    hone_train_spec_defaults(&s);
    CHECK(hone_train_spec_set(&s, network, err, sizeof err) == HONE_OK);
    for (int i = 0; sets[i]; i++)
        CHECK(hone_train_spec_set(&s, sets[i], err, sizeof err) == HONE_OK);
    hone_net *net = NULL;
    CHECK(net_new(k, &s, 2, c, h, w, classes, &net) == HONE_OK);
    hone_spec_data d = {-1, -1, c, h, w, classes};
    hone_spec_cost cost;
    hone_spec_estimate(&s, &d, &cost);
    if (!net || cost.params != net->nparams) {
        fprintf(stderr, "%s %s...: estimate %llu parameters, net.c built %zu\n", network,
                sets[0] ? sets[0] : "", (unsigned long long)cost.params,
                net ? net->nparams : (size_t)0);
        failures++;
    }
    net_free(net);
}

/* rc_want HONE_OK: it trains. */
static void expect_refused(const char *const *sets, int rc_want, const char *key)
{
    hone_train_spec s;
    hone_train_result r;
    char err[512] = "";
    hone_train_spec_defaults(&s);
    snprintf(s.data.path, sizeof s.data.path, "%s", dir);
    for (int i = 0; sets[i]; i++)
        CHECK(hone_train_spec_set(&s, sets[i], err, sizeof err) == HONE_OK);
    hone_train_opts o = {.spec = &s, .device = "cpu", .threads = 1};
    int rc = hone_train_run(&o, &r, err, sizeof err);
    if (rc != rc_want || (rc && (strncmp(err, key, strlen(key)) || err[strlen(key)] != ':'))) {
        fprintf(stderr, "%s...: rc %d '%s' (want %d naming %s)\n", sets[0], rc, err, rc_want, key);
        failures++;
    }
}

int main(void)
{
    hone_kctx *k = NULL;
    CHECK(hone_kctx_new(HONE_DEV_CPU, 1, &k) == HONE_OK);
    const char *none[] = {NULL};
    const char *deep[] = {"model.hidden=96", "model.depth=3", "model.batchnorm=true",
                          "model.dropout=0.3", NULL};
    const char *wide[] = {"model.hidden=40", "model.batchnorm=on", NULL};
    same_params(k, "network=mlp", none, 1, 28, 28, 10);
    same_params(k, "network=mlp", deep, 1, 8, 8, 7);
    same_params(k, "network=cnn", none, 1, 28, 28, 10);
    same_params(k, "network=cnn", wide, 1, 28, 28, 10);
    same_params(k, "network=cnn", deep + 2, 3, 9, 13, 4); /* odd sizes: pooling rounds down */
    /* resnets: small-image stem up to 64 px, ImageNet stem above; odd sides round up at each
     * stride 2; dropout adds no parameters */
    const char *const sizes[] = {"model.width=8", "model.width=16", "model.width=64", NULL};
    const int sides[] = {16, 32, 96, 65, 8, 28};
    for (int i = 0; sizes[i]; i++)
        for (size_t j = 0; j < sizeof sides / sizeof sides[0]; j++) {
            const char *one[] = {sizes[i], "model.dropout=0.2", NULL};
            if (sides[j] > 64 && i == 2)
                continue; /* 64 wide at 96 px: slow to build on the CPU, the walk is the same */
            same_params(k, "network=resnet18", one, j % 2 ? 1 : 3, sides[j], sides[j], 10);
            same_params(k, "network=resnet34", one, 3, sides[j], sides[j], 100);
        }
    hone_kctx_free(k);

    CHECK(mkdtemp(dir) != NULL);
    write_idx("train-images-idx3-ubyte", 300, 1);
    write_idx("train-labels-idx1-ubyte", 300, 0);
    write_idx("t10k-images-idx3-ubyte", 50, 1);
    write_idx("t10k-labels-idx1-ubyte", 50, 0);
    const char *val[] = {"data.val_size=300", NULL};
    expect_refused(val, HONE_ERANGE, "data.val_size");
    const char *big[] = {"data.val_size=50", "model.hidden=65536", "model.depth=64", NULL};
    expect_refused(big, HONE_ERANGE, "model.hidden");
    /* a batch of 65536 would need ~54 GiB, but there are only 250 images: the batch is 250 */
    const char *batch[] = {"data.val_size=50", "network=cnn", "train.batch_size=65536",
                           "train.epochs=1", NULL};
    expect_refused(batch, HONE_OK, "");
    const char *warm[] = {"data.val_size=50", "train.warmup_epochs=3", "train.epochs=2", NULL};
    expect_refused(warm, HONE_EPARSE, "train.warmup_epochs");
    const char *depth[] = {"data.val_size=50", "network=cnn", "model.depth=2", NULL};
    expect_refused(depth, HONE_EPARSE, "model.depth");
    static const char *const files[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                        "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
    for (size_t i = 0; i < 4; i++) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
    if (failures)
        fprintf(stderr, "test_train_limits: %d failure(s)\n", failures);
    return failures != 0;
}
