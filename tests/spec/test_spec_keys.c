/* tests/spec/test_spec_keys.c: spec/'s schema alone: every default passes its own checks; every
 * key accepts its bounds and refuses just past them, from text and from JSON alike; the cross-key
 * rules and size limits blame the right key; the parameter count of the defaults; network-following
 * defaults; the JSON Schema and the AutoML spaces derived from the table. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h"
#include "check.h"

static const hone_spec_data fmnist = {60000, 10000, 1, 28, 28, 10};
/* a KITTI set as far as the spec sees it: image counts and sizes unknown, 10 classes */
static const hone_spec_data kitti = {-1, -1, 3, 0, 0, 10};

/* text and JSON verdicts on one value must agree, and be `want` */
static void expect(const char *key, const char *text, json_t *j, int want)
{
    hone_spec s;
    char err[256] = "";
    hone_spec_defaults(&s, "mlp");
    int t = hone_spec_set_text(&s, key, text, 0, err, sizeof err) == HONE_OK;
    int js = hone_spec_check_json(key, j, err, sizeof err) == HONE_OK;
    if (t != want || js != want) {
        fprintf(stderr, "%s = %s: text %s, json %s, want %s (%s)\n", key, text,
                t ? "accepts" : "refuses", js ? "accepts" : "refuses", want ? "accept" : "refuse",
                err);
        failures++;
    }
    json_decref(j);
}

static void walk_bounds(void)
{
    char t[64];
    for (size_t i = 0; i < hone_spec_nkeys(); i++) {
        const hone_spec_key *k = hone_spec_key_at(i);
        switch (k->type) {
        case HONE_SPEC_INT:
            snprintf(t, sizeof t, "%lld", k->imin);
            expect(k->name, t, json_integer(k->imin), 1);
            snprintf(t, sizeof t, "%lld", k->imax);
            expect(k->name, t, json_integer(k->imax), 1);
            snprintf(t, sizeof t, "%lld", k->imin - 1);
            expect(k->name, t, json_integer(k->imin - 1), 0);
            if (k->imax < INT64_MAX) {
                snprintf(t, sizeof t, "%lld", k->imax + 1);
                expect(k->name, t, json_integer(k->imax + 1), 0);
            }
            expect(k->name, "2.5", json_real(2.5), 0);
            expect(k->name, "true", json_true(), 0);
            break;
        case HONE_SPEC_NUM:
            snprintf(t, sizeof t, "%.17g", k->min);
            expect(k->name, t, json_real(k->min), 1);
            snprintf(t, sizeof t, "%.17g", k->max);
            expect(k->name, t, json_real(k->max), 1);
            snprintf(t, sizeof t, "%.17g", nextafter(k->min, -INFINITY));
            expect(k->name, t, json_real(nextafter(k->min, -INFINITY)), 0);
            snprintf(t, sizeof t, "%.17g", nextafter(k->max, INFINITY));
            expect(k->name, t, json_real(nextafter(k->max, INFINITY)), 0);
            expect(k->name, "false", json_false(), 0);
            break;
        case HONE_SPEC_BOOL:
            expect(k->name, "true", json_true(), 1);
            expect(k->name, "false", json_false(), 1);
            expect(k->name, "1", json_integer(1), 0); /* YAML 1.1 and JSON agree: not a boolean */
            expect(k->name, "maybe", json_string("maybe"), 0);
            break;
        case HONE_SPEC_ENUM:
            for (int c = 0; k->choices[c]; c++)
                expect(k->name, k->choices[c], json_string(k->choices[c]), 1);
            expect(k->name, "nope", json_string("nope"), 0);
            expect(k->name, "1", json_integer(1), 0);
            break;
        case HONE_SPEC_STR:
            expect(k->name, "/data/x", json_string("/data/x"), 1);
            expect(k->name, "/a\x01", json_string("/a\x01"), 0);
            break;
        }
        CHECK(hone_spec_check_json(k->name, json_null(), t, sizeof t) == HONE_EINVAL);
    }
}

static void expect_rule(const char *network, const char *const *sets, const hone_spec_data *d,
                        const char *field)
{
    hone_spec s;
    char err[512] = "", f[64] = "";
    hone_spec_defaults(&s, network);
    for (int i = 0; sets[i]; i += 2)
        CHECK(hone_spec_set_text(&s, sets[i], sets[i + 1], 0, err, sizeof err) == HONE_OK);
    int rc = hone_spec_check(&s, d, f, sizeof f, err, sizeof err);
    if (field ? (rc != HONE_EINVAL || strcmp(f, field) || strncmp(err, field, strlen(field)))
              : rc != HONE_OK) {
        fprintf(stderr, "%s %s=%s...: rc %d field '%s' err '%s' (want %s)\n", network, sets[0],
                sets[1], rc, f, err, field ? field : "ok");
        failures++;
    }
}

static void rules(void)
{
    const char *s1[] = {"train.min_lr", "0.5", "train.lr", "0.1", NULL};
    expect_rule("mlp", s1, NULL, "train.min_lr");
    const char *s2[] = {"train.warmup_epochs", "10.5", "train.epochs", "10", NULL};
    expect_rule("mlp", s2, NULL, "train.warmup_epochs");
    const char *s3[] = {"train.warmup_epochs", "10", "train.epochs", "10", NULL};
    expect_rule("mlp", s3, NULL, NULL);
    const char *s4[] = {"model.depth", "3", NULL};
    expect_rule("cnn", s4, NULL, "model.depth");
    expect_rule("mlp", s4, &fmnist, NULL);
    const char *s5[] = {"model.hidden", "65536", "model.depth", "64", NULL};
    expect_rule("mlp", s5, &fmnist, "model.hidden");
    expect_rule("mlp", s5, NULL, NULL); /* size needs the data */
    const char *s6[] = {"model.hidden", "65536", NULL};
    expect_rule("mlp", s6, &fmnist, NULL); /* 52 M parameters: the widest layer trains */
    const char *s7[] = {"model.hidden", "65536", "train.batch_size", "65536", NULL};
    expect_rule("mlp", s7, &fmnist, "train.batch_size");
    hone_spec_data tiny = {100, 20, 1, 28, 28, 10};
    const char *s8[] = {"model.hidden", "65536", "train.batch_size", "65536", "data.val_size",
                        "10",           NULL};
    expect_rule("mlp", s8, &tiny, NULL); /* the batch is at most the 90 training images */
    const char *s9[] = {"data.val_size", "60000", NULL};
    expect_rule("mlp", s9, &fmnist, "data.val_size");
    const char *s10[] = {"data.val_size", "59999", NULL};
    expect_rule("cnn", s10, &fmnist, NULL);
    const char *s11[] = {"train.batch_size", "65536", NULL};
    expect_rule("cnn", s11, &fmnist, "train.batch_size");
    const char *s12[] = {"train.batch_size", "4096", "model.batchnorm", "true", NULL};
    expect_rule("cnn", s12, &fmnist, NULL);
    hone_spec_data huge = {200000000, 0, 1, 28, 28, 10};
    const char *s13[] = {NULL};
    expect_rule("mlp", s13, &huge, "data.train_limit");
    hone_spec_data unknown = HONE_SPEC_DATA_UNKNOWN;
    expect_rule("mlp", s5, &unknown, "model.hidden");
    expect_rule("cnn", s13, &unknown, NULL);
}

/* detectnet_v2: only with kitti data, which only it trains on (blamed on `network`); its input
 * side; the classifiers' crop and cutout are refused, flip allowed, and its own augmentation keys
 * (translate, zoom range) refused for classifiers and out of range; its parameters and its AutoML
 * sweep (with the augmentation strength). */
static void detection(void)
{
    const char *k0[] = {"data.format", "kitti", NULL};
    expect_rule("detectnet_v2", k0, &kitti, NULL);
    expect_rule("detectnet_v2", k0, NULL, NULL);
    const char *k1[] = {NULL};
    expect_rule("detectnet_v2", k1, &fmnist, "network"); /* idx data */
    expect_rule("mlp", k0, &kitti, "network");
    expect_rule("resnet18", k0, NULL, "network");
    const char *k2[] = {"data.format", "kitti", "model.input_size", "120", NULL};
    expect_rule("detectnet_v2", k2, &kitti, "model.input_size");
    const char *k3[] = {"data.format", "kitti", "model.input_size", "48", NULL};
    expect_rule("detectnet_v2", k3, &kitti, "model.input_size");
    const char *k4[] = {"data.format", "kitti", "model.input_size", "64", NULL};
    expect_rule("detectnet_v2", k4, &kitti, NULL);
    const char *k5[] = {"data.format", "kitti", "augment.crop_padding", "4", NULL};
    expect_rule("detectnet_v2", k5, &kitti, "augment.crop_padding");
    const char *k5b[] = {"data.format", "kitti", "augment.cutout", "8", NULL};
    expect_rule("detectnet_v2", k5b, &kitti, "augment.cutout");
    const char *k5c[] = {"data.format",
                         "kitti",
                         "augment.flip",
                         "false",
                         "augment.translate",
                         "0.5",
                         "augment.zoom_min",
                         "0.25",
                         "augment.zoom_max",
                         "4",
                         NULL};
    expect_rule("detectnet_v2", k5c, &kitti, NULL);
    const char *k5d[] = {"network", "resnet18", "augment.translate", "0.2", NULL};
    expect_rule("resnet18", k5d, NULL, "augment.translate");
    const char *k5e[] = {"network", "cnn", "augment.zoom_max", "1.5", NULL};
    expect_rule("cnn", k5e, NULL, "augment.zoom_max");
    static const char *const bad[][2] = {
        {"augment.translate", "0.6"}, {"augment.translate", "-0.1"}, {"augment.zoom_min", "0.2"},
        {"augment.zoom_min", "1.1"},  {"augment.zoom_max", "0.9"},   {"augment.zoom_max", "4.5"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hone_spec b;
        char err[256] = "";
        hone_spec_defaults(&b, "detectnet_v2");
        CHECK(hone_spec_set_text(&b, bad[i][0], bad[i][1], 0, err, sizeof err) == HONE_EPARSE);
        CHECK(strstr(err, bad[i][0]) != NULL);
    }
    const char *k6[] = {"data.format", "kitti", "model.hidden", "64", NULL};
    expect_rule("detectnet_v2", k6, &kitti, "model.hidden");
    const char *k7[] = {
        "data.format",      "kitti", "model.width", "64", "model.backbone", "resnet34",
        "train.batch_size", "4096",  NULL};
    expect_rule("detectnet_v2", k7, &kitti, "train.batch_size");
    const char *k8[] = {"network", "resnet18", "detect.eps", "0.2", NULL};
    expect_rule("resnet18", k8, NULL, "detect.eps");

    hone_spec s;
    hone_spec_cost c;
    hone_spec_defaults(&s, "detectnet_v2");
    CHECK(!strcmp(s.model.backbone, "resnet18") && s.detect.stride == 16);
    CHECK(s.detect.bbox_norm == 35 && s.detect.eps == 0.3 && s.detect.min_samples == 0.05);
    CHECK(s.loss.cov_background_weight == 0.1);
    CHECK(!strcmp(s.detect.cluster, "dbscan") && s.loss.bbox_weight == 10 &&
          s.loss.cov_weight == 1);
    CHECK(s.augment.flip && !s.augment.crop_padding && !s.augment.cutout && s.train.lr == 0.02);
    CHECK(s.augment.translate == 0.1 && s.augment.zoom_min == 0.8 && s.augment.zoom_max == 1.2);
    snprintf(s.data.format, sizeof s.data.format, "kitti");
    s.model.width = 16;
    int ic, ih, iw;
    hone_spec_input_shape(&s, &kitti, &ic, &ih, &iw);
    CHECK(ic == 3 && ih == 128 && iw == 128);
    hone_spec_estimate(&s, &kitti, &c);
    /* stem 7x7 + BN, stages of 16, 32, 64 channels (2 blocks each, projections at 2 and 3), the
     * 1x1 head of 5 x 10 channels with bias (worked out by hand) */
    CHECK(c.params == 179778);
    snprintf(s.model.backbone, sizeof s.model.backbone, "resnet34");
    hone_spec_cost c34;
    hone_spec_estimate(&s, &kitti, &c34);
    CHECK(c34.params > c.params);

    json_t *sp = hone_spec_space("detectnet_v2", 0);
    static const char *const swept[] = {
        "train.lr",        "train.weight_decay", "loss.bbox_weight",  "detect.cov_threshold",
        "detect.eps",      "model.width",        "augment.translate", "augment.zoom_min",
        "augment.zoom_max"};
    for (size_t i = 0; i < sizeof swept / sizeof swept[0]; i++)
        CHECK(json_object_get(sp, swept[i]) != NULL);
    CHECK(!json_object_get(sp, "model.hidden") && !json_object_get(sp, "augment.jitter"));
    json_decref(sp);
}

static void defaults(void)
{
    for (int n = 0; hone_spec_networks[n]; n++) {
        hone_spec s;
        char err[256] = "", f[64];
        hone_spec_defaults(&s, hone_spec_networks[n]);
        CHECK(!strcmp(s.network, hone_spec_networks[n]));
        int det = !strcmp(s.network, "detectnet_v2");
        if (det) /* the format comes from the dataset */
            snprintf(s.data.format, sizeof s.data.format, "kitti");
        CHECK(hone_spec_check(&s, det ? &kitti : &fmnist, f, sizeof f, err, sizeof err) == HONE_OK);
        for (size_t i = 0; i < hone_spec_nkeys(); i++) {
            const hone_spec_key *k = hone_spec_key_at(i);
            json_t *v = hone_spec_get_json(&s, k->name);
            CHECK(v && hone_spec_check_json(k->name, v, err, sizeof err) == HONE_OK);
            json_decref(v);
        }
    }
    hone_spec s;
    char err[256];
    hone_spec_cost c;
    hone_spec_defaults(&s, "mlp");
    CHECK(s.train.lr == 0.1 && s.model.hidden == 256 && s.data.val_size == 5000);
    hone_spec_estimate(&s, &fmnist, &c);
    CHECK(c.params == 784 * 256 + 256 + 256 * 10 + 10 && c.batch == 128);
    CHECK(hone_spec_set_text(&s, "network", "cnn", 0, err, sizeof err) == HONE_OK);
    CHECK(s.train.lr == 0.05 && s.model.hidden == 128); /* follow the network */
    hone_spec_estimate(&s, &fmnist, &c);
    CHECK(c.params == (9 * 32 + 32) + (32 * 9 * 64 + 64) + (64 * 7 * 7 * 128 + 128) + 1290);
    CHECK(hone_spec_set_text(&s, "train.lr", "0.2", 0, err, sizeof err) == HONE_OK);
    CHECK(hone_spec_set_text(&s, "network", "mlp", 0, err, sizeof err) == HONE_OK);
    CHECK(s.train.lr == 0.2 && s.model.hidden == 256); /* given: stays */
    /* quoted scalars are strings; the refused value leaves the old one */
    CHECK(hone_spec_set_text(&s, "train.epochs", "5", 1, err, sizeof err) == HONE_EPARSE);
    CHECK(strstr(err, "train.epochs: expected an integer, got the string '5'") &&
          s.train.epochs == 10);
    CHECK(hone_spec_set_text(&s, "train.optimizer", "adamw", 1, err, sizeof err) == HONE_OK);
    CHECK(hone_spec_set_text(&s, "train.seed", "9223372036854775807", 0, err, sizeof err) ==
          HONE_OK);
    CHECK(hone_spec_set_text(&s, "train.seed", "9223372036854775808", 0, err, sizeof err) ==
          HONE_EPARSE);
    CHECK(hone_spec_set_text(&s, "nope", "1", 0, err, sizeof err) == HONE_EPARSE &&
          strstr(err, "nope: unknown key"));
    json_t *fmt = json_string("kitti"); /* a dataset format; only detectnet_v2 trains on it */
    CHECK(hone_spec_check_json("data.format", fmt, err, sizeof err) == HONE_OK);
    json_decref(fmt);
    fmt = json_string("coco"); /* the other detection format (issue 30) */
    CHECK(hone_spec_check_json("data.format", fmt, err, sizeof err) == HONE_OK);
    json_decref(fmt);
    fmt = json_string("voc");
    CHECK(hone_spec_check_json("data.format", fmt, err, sizeof err) == HONE_EINVAL &&
          strstr(err, "data.format: 'voc' is not one of: idx, image_folder, kitti, coco"));
    json_decref(fmt);
    fmt = json_string("image_folder");
    CHECK(hone_spec_check_json("data.format", fmt, err, sizeof err) == HONE_OK);
    json_decref(fmt);
}

static void schema_and_spaces(void)
{
    json_t *sc = hone_spec_json_schema();
    json_t *defs = json_object_get(sc, "$defs");
    CHECK(json_object_size(defs) == hone_spec_nkeys());
    CHECK(json_number_value(json_object_get(json_object_get(defs, "train.momentum"), "maximum")) ==
          0.9999);
    CHECK(json_is_true(json_object_get(json_object_get(defs, "data.path"), "readOnly")));
    CHECK(json_object_get(
        json_object_get(json_object_get(json_object_get(sc, "properties"), "train"), "properties"),
        "lr"));
    char *t = hone_spec_json_schema_text();
    json_t *back = json_loads(t, 0, NULL);
    CHECK(back && json_equal(back, sc));
    json_decref(back);
    free(t);
    json_decref(sc);

    /* mlp: the optimizer and what goes with it (momentum given sgd, betas given adamw), label
     * smoothing; each set's whole contents are pinned by test_spec_spaces */
    static const char *const swept[] = {"train.lr",           "train.momentum",
                                        "train.weight_decay", "train.batch_size",
                                        "train.optimizer",    "train.label_smoothing"};
    json_t *d = hone_spec_space("mlp", 0), *all = hone_spec_space("cnn", 1);
    for (size_t i = 0; i < 6; i++)
        CHECK(json_object_get(d, swept[i]));
    CHECK(json_object_get(all, "augment.jitter") && json_object_get(all, "model.hidden"));
    json_t *h = json_object_get(all, "model.hidden");
    CHECK(json_integer_value(json_object_get(h, "min")) == 32 &&
          json_integer_value(json_object_get(h, "max")) == 512);
    CHECK(!json_object_get(all, "model.depth") && !hone_spec_space("resnet", 1));
    json_decref(d);
    json_decref(all);

    /* resnets: learning rate, weight decay, batch size, width, depth, augmentation, the schedule,
     * label smoothing; their own ranges; no mlp/cnn-only keys */
    static const char *const res_swept[] = {
        "train.lr", "train.weight_decay", "train.batch_size",     "model.width",
        "network",  "augment.cutout",     "train.label_smoothing"};
    d = hone_spec_space("resnet34", 0);
    for (size_t i = 0; i < 7; i++)
        CHECK(json_object_get(d, res_swept[i]));
    h = json_object_get(d, "model.width");
    CHECK(json_integer_value(json_object_get(h, "min")) == 16 &&
          json_integer_value(json_object_get(h, "max")) == 64);
    all = hone_spec_space("resnet18", 1);
    CHECK(!json_object_get(all, "model.hidden") && !json_object_get(all, "model.batchnorm"));
    json_decref(d);
    json_decref(all);
    /* augmentation is on by default for resnets only */
    hone_spec r;
    hone_spec_defaults(&r, "resnet18");
    CHECK(r.augment.flip == 1 && r.augment.crop_padding == 4 && r.model.width == 64);
    hone_spec_defaults(&r, "cnn");
    CHECK(r.augment.flip == 0 && r.augment.crop_padding == 0);
    CHECK(r.augment.translate == 0 && r.augment.zoom_min == 1 && r.augment.zoom_max == 1);
    /* detectnet_v2's zoom sweep never crosses: zoom_min's range ends where zoom_max's starts */
    d = hone_spec_space("detectnet_v2", 0);
    json_t *zmin = json_object_get(d, "augment.zoom_min"),
           *zmax = json_object_get(d, "augment.zoom_max");
    json_t *tr = json_object_get(d, "augment.translate");
    CHECK(zmin && zmax && tr &&
          json_number_value(json_object_get(zmin, "max")) <=
              json_number_value(json_object_get(zmax, "min")));
    CHECK(tr && json_number_value(json_object_get(tr, "min")) == 0 &&
          json_number_value(json_object_get(tr, "max")) <= 0.5);
    json_decref(d);
}

/* train.label_smoothing: 0 by default everywhere; [0, 0.5] from text and JSON, a refusal naming
 * the key; the classifiers' only (detectnet_v2 refuses any other value, blamed on the key); swept
 * over [0, 0.2] in every classifier's default space, its default inside it; not in
 * detectnet_v2's. */
static void label_smoothing(void)
{
    char err[256] = "", f[64] = "";
    hone_spec s;
    for (int n = 0; hone_spec_networks[n]; n++) {
        hone_spec_defaults(&s, hone_spec_networks[n]);
        CHECK(s.train.label_smoothing == 0);
    }
    hone_spec_defaults(&s, "resnet18");
    CHECK(hone_spec_set_text(&s, "train.label_smoothing", "0.1", 0, err, sizeof err) == HONE_OK);
    CHECK(s.train.label_smoothing == 0.1);
    CHECK(hone_spec_check(&s, &fmnist, f, sizeof f, err, sizeof err) == HONE_OK);
    CHECK(hone_spec_set_text(&s, "train.label_smoothing", "0.6", 0, err, sizeof err) ==
              HONE_EPARSE &&
          !strncmp(err, "train.label_smoothing: ", 23) && strstr(err, "0.5"));
    CHECK(s.train.label_smoothing == 0.1); /* the refused value left the old one */
    json_t *j = json_real(-0.05);
    CHECK(hone_spec_check_json("train.label_smoothing", j, err, sizeof err) == HONE_EINVAL &&
          !strncmp(err, "train.label_smoothing: ", 23));
    json_decref(j);
    j = json_string("0.1");
    CHECK(hone_spec_check_json("train.label_smoothing", j, err, sizeof err) == HONE_EINVAL);
    json_decref(j);
    const char *ls[] = {"train.label_smoothing", "0.1", NULL};
    expect_rule("mlp", ls, &fmnist, NULL);
    expect_rule("cnn", ls, &fmnist, NULL);
    expect_rule("resnet34", ls, &fmnist, NULL);
    const char *det[] = {"data.format", "kitti", "train.label_smoothing", "0.1", NULL};
    expect_rule("detectnet_v2", det, &kitti, "train.label_smoothing");
    const char *det0[] = {"data.format", "kitti", "train.label_smoothing", "0", NULL};
    expect_rule("detectnet_v2", det0, &kitti, NULL);
    for (int n = 0; hone_spec_networks[n]; n++) {
        const char *net = hone_spec_networks[n];
        json_t *d = hone_spec_space(net, 0), *all = hone_spec_space(net, 1);
        json_t *p = json_object_get(d, "train.label_smoothing");
        if (!strcmp(net, "detectnet_v2")) {
            CHECK(!p && !json_object_get(all, "train.label_smoothing"));
        } else {
            CHECK(p && !strcmp(json_string_value(json_object_get(p, "type")), "float"));
            CHECK(json_number_value(json_object_get(p, "min")) == 0 &&
                  json_number_value(json_object_get(p, "max")) == 0.2 &&
                  json_is_false(json_object_get(p, "log")));
        }
        json_decref(d);
        json_decref(all);
    }
    json_t *sc = hone_spec_json_schema();
    json_t *def = json_object_get(json_object_get(sc, "$defs"), "train.label_smoothing");
    CHECK(def && json_number_value(json_object_get(def, "minimum")) == 0 &&
          json_number_value(json_object_get(def, "maximum")) == 0.5);
    json_decref(sc);
}

int main(void)
{
    walk_bounds();
    rules();
    defaults();
    detection();
    schema_and_spaces();
    label_smoothing();
    if (failures)
        fprintf(stderr, "test_spec_keys: %d failure(s)\n", failures);
    return failures != 0;
}
