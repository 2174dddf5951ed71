/* tests/train/test_train_estimate.c: spec/'s estimate (hone_spec_estimate) against the network
 * train/net.c builds from the same description (spec/spec_layers.c), for every network (mlp, cnn,
 * resnet18/34 with both stems, detectnet_v2 on both backbones) at several widths, input sizes and
 * batch sizes on the CPU. Compared, all exact but the workspace:
 *  - trainable parameters: cost.params == net->nparams;
 *  - weights, gradients, optimiser state and norm statistics: cost.model_bytes ==
 *    4 * (nparams * (2 + optimiser copies) + nstate), nstate the builder's;
 *  - the layers' buffers: cost.layer_bytes == net->layer_bytes, the bytes net_new allocated for
 *    outputs, gradients, pool indices, dropout masks and saved norm statistics (packed trials:
 *    trials times the estimate);
 *  - the workspace: both are 0 (no convolution) or both are not, and from batch 2 on the
 *    builder's (the one-thread CPU backend's: im2col slots per thread, not per sample, so at
 *    batch 1 it can exceed it) is at most cost.ws_bytes (the CUDA backend's sizing);
 *  - act_bytes is those two plus the batch's images, labels and (detectnet_v2) targets sized from
 *    the built network's output grid.
 * Changing either side alone (what a layer allocates, or what the estimate prices) fails it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "net.h"

static int cases;

static void compare(hone_kctx *k, const char *const *sets, int c, int h, int w, int classes,
                    int trials)
{
    hone_train_spec s;
    char err[256], what[512] = "";
    hone_train_spec_defaults(&s);
    for (int i = 0; sets[i]; i++) {
        CHECK(hone_train_spec_set(&s, sets[i], err, sizeof err) == HONE_OK);
        size_t n = strlen(what);
        snprintf(what + n, sizeof what - n, "%s ", sets[i]);
    }
    int batch = s.train.batch_size;
    hone_net *net = NULL;
    const hone_train_spec *specs[4] = {&s, &s, &s, &s};
    CHECK(trials <= 4);
    CHECK(net_new_pack(k, specs, trials, batch, c, h, w, classes, &net) == HONE_OK);
    if (!net)
        return;
    hone_spec_data d = {-1, -1, c, h, w, classes};
    hone_spec_cost cost;
    hone_spec_estimate(&s, &d, &cost);
    cases++;
    uint64_t copies = 2 + (strcmp(s.train.optimizer, "adamw") == 0 ? 2 : 1);
    uint64_t model = 4 * ((uint64_t)net->nparams * copies + net->nstate);
    uint64_t T = (uint64_t)trials;
    const layer *last = &net->layers[net->nlayers - 1];
    uint64_t grid =
        strcmp(s.network, "detectnet_v2") ? 0 : 6 * (uint64_t)classes * last->oh * last->ow;
    uint64_t rest = (uint64_t)batch * ((uint64_t)c * h * w * 4 + 4 + grid * 4);
    int bad = 0;
    if (cost.batch != batch)
        bad |= 1;
    if (cost.params != net->nparams)
        bad |= 2;
    if (cost.model_bytes != model)
        bad |= 4;
    if (cost.layer_bytes * T != net->layer_bytes)
        bad |= 8;
    if ((batch > 1 && net->ws_bytes > cost.ws_bytes) ||
        (net->ws_bytes == 0) != (cost.ws_bytes == 0))
        bad |= 16;
    if (cost.act_bytes != cost.layer_bytes + cost.ws_bytes + rest)
        bad |= 32;
    if (bad) {
        fprintf(stderr,
                "%s[%d,%d,%d] x%d trials %d (mismatch %#x): estimate params %llu model %llu "
                "layers %llu ws %llu act %llu; built params %zu model %llu layers %zu ws %zu\n",
                what, c, h, w, classes, trials, bad, (unsigned long long)cost.params,
                (unsigned long long)cost.model_bytes, (unsigned long long)cost.layer_bytes,
                (unsigned long long)cost.ws_bytes, (unsigned long long)cost.act_bytes, net->nparams,
                (unsigned long long)model, net->layer_bytes, net->ws_bytes);
        failures++;
    }
    net_free(net);
}

int main(void)
{
    hone_kctx *k = NULL;
    CHECK(hone_kctx_new(HONE_DEV_CPU, 1, &k) == HONE_OK);
    static const char *const batches[] = {"train.batch_size=1", "train.batch_size=3",
                                          "train.batch_size=8"};
    for (int b = 0; b < 3; b++) {
        const char *bs = batches[b];
        /* mlp and cnn: with and without batch norm and dropout, odd sides (pooling rounds down) */
        const char *m1[] = {"network=mlp", bs, NULL};
        const char *m2[] = {"network=mlp",           "model.hidden=96",
                            "model.depth=3",         "model.batchnorm=true",
                            "model.dropout=0.3",     bs,
                            "train.optimizer=adamw", NULL};
        compare(k, m1, 1, 28, 28, 10, 1);
        compare(k, m2, 1, 8, 8, 7, 1);
        compare(k, m2, 1, 8, 8, 7, 2); /* packed trials */
        const char *c1[] = {"network=cnn", bs, NULL};
        const char *c2[] = {
            "network=cnn", "model.hidden=40", "model.batchnorm=on", "model.dropout=0.5", bs, NULL};
        compare(k, c1, 1, 28, 28, 10, 1);
        compare(k, c2, 3, 9, 13, 4, 1);
        compare(k, c2, 3, 12, 12, 4, 3);
        /* resnets: the small-image stem up to 64 px, the ImageNet stem above; odd sides */
        static const char *const widths[] = {"model.width=8", "model.width=16"};
        static const int sides[] = {8, 17, 32, 65, 96};
        for (int i = 0; i < 2; i++)
            for (size_t j = 0; j < sizeof sides / sizeof sides[0]; j++) {
                const char *r18[] = {"network=resnet18", widths[i], "model.dropout=0.2", bs, NULL};
                const char *r34[] = {"network=resnet34", widths[i], bs, NULL};
                compare(k, r18, j % 2 ? 1 : 3, sides[j], sides[j], 10, 1);
                if (b != 2 || i == 0)
                    compare(k, r34, 3, sides[j], sides[j] + 4, 100, 1);
            }
        /* detectnet_v2: backbone cut at stride 16, then the head */
        static const int dsides[] = {64, 96, 128};
        for (int i = 0; i < 2; i++)
            for (size_t j = 0; j < sizeof dsides / sizeof dsides[0]; j++) {
                const char *d18[] = {"network=detectnet_v2", widths[i], bs, NULL};
                const char *d34[] = {"network=detectnet_v2", "model.backbone=resnet34", widths[i],
                                     bs, NULL};
                compare(k, d18, 3, dsides[j], dsides[j], 3, 1);
                if (b != 2 || i == 0)
                    compare(k, d34, 3, dsides[j], dsides[j] + 32, 1, 1);
            }
    }
    hone_kctx_free(k);
    fprintf(stderr, "%d networks compared\n", cases);
    return failures ? 1 : 0;
}
