/* tests/train/detect_train_test.c: detectnet_v2 trained on the CPU (hone_trainer_*, the captured
 * step) on gen_detect.py's tiny set (300 images of 128 px, width 16), with the spec's default
 * box-aware augmentation (flip, shift, zoom: the targets encoded each step from the moved boxes):
 * the test part's mAP at IoU 0.5 of the trained network is clearly above the untrained one's
 * (measured on this set: 0.0000 untrained, 0.0146 after 12 epochs with augmentation, 0.034
 * without; since stop 14's opaque items and loss, 0.0573 with augmentation; asserted: trained >=
 * 0.012 and >= 10x untrained + 0.005), the loss falls, the network's
 * parameters are spec/'s estimate, the JSON lines of hone_train_run name val_map and test_map,
 * --evaluate gives the run's test mAP with per-class AP and its COCO metrics (test_coco_ap ...),
 * --infer writes each image's boxes (JSON and KITTI lines), and --export writes the model. argv:
 * python3 gen_detect.py. Exits 77 when the generator has no Fashion-MNIST or photographs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "check.h"
#include "detect_train.h"
#include "train.h"
#include "train_files.h"

static char root[] = "/tmp/hone-dettrain-XXXXXX";

static void spec_for(hone_train_spec *s, int epochs)
{
    char err[256], set[64];
    hone_train_spec_defaults(s);
    static const char *const sets[] = {"network=detectnet_v2",     "data.format=kitti",
                                       "model.width=16",           "train.batch_size=16",
                                       "train.optimizer=adamw",    "train.lr=0.008",
                                       "train.weight_decay=0.0001"};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        REQUIRE(hone_train_spec_set(s, sets[i], err, sizeof err) == HONE_OK);
    snprintf(set, sizeof set, "train.epochs=%d", epochs);
    REQUIRE(hone_train_spec_set(s, set, err, sizeof err) == HONE_OK);
    snprintf(s->data.path, sizeof s->data.path, "%s/set", root);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: detect_train_test PYTHON GEN_DETECT_PY\n");
        return 2;
    }
    REQUIRE(mkdtemp(root) != NULL);
    char cmd[2048], err[512], out[600];
    snprintf(cmd, sizeof cmd, "%s %s --tiny %s/set >/dev/null", argv[1], argv[2], root);
    int st = system(cmd);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "skipped: gen_detect.py could not write the set\n");
        snprintf(cmd, sizeof cmd, "rm -rf %s", root);
        (void)!system(cmd);
        return 77;
    }
    const int epochs = 12;
    hone_train_spec s;
    spec_for(&s, epochs);
    CHECK(detect_train_spatial(&s)); /* the defaults move the boxes */
    hone_train_opts o = {.spec = &s, .device = "cpu", .threads = 2};
    hone_trainer *t;
    REQUIRE(hone_trainer_new(&o, &t, err, sizeof err) == HONE_OK);
    float *params;
    size_t np;
    REQUIRE(hone_trainer_params(t, &params, &np) == HONE_OK);
    free(params);
    hone_spec_data facts = {-1, -1, 3, 0, 0, 10};
    hone_spec_cost cost;
    hone_spec_estimate(&s, &facts, &cost);
    CHECK(cost.params == np);
    double loss0, map0, loss1, map1;
    REQUIRE(hone_trainer_test(t, &loss0, &map0) == HONE_OK);
    hone_train_epoch e, first = {0};
    for (int i = 0; i < epochs; i++) {
        REQUIRE(hone_trainer_epoch(t, i, 0, &e) == HONE_OK);
        if (i == 0)
            first = e;
        CHECK(isfinite(e.train_loss) && isfinite(e.val_loss) && e.val_accuracy >= 0 &&
              e.val_accuracy <= 1);
    }
    REQUIRE(hone_trainer_test(t, &loss1, &map1) == HONE_OK);
    fprintf(stderr,
            "detectnet_v2: test mAP untrained %.4f, trained %.4f (loss %.2f -> %.2f; train loss "
            "%.2f -> %.2f)\n",
            map0, map1, loss0, loss1, first.train_loss, e.train_loss);
    CHECK(map1 >= 0.012 && map1 >= 10 * map0 + 0.005);
    CHECK(loss1 < loss0 && e.train_loss < first.train_loss);
    hone_trainer_free(t);

    /* hone_train_run's lines (one epoch), and the actions' refusal of the model */
    spec_for(&s, 1);
    snprintf(out, sizeof out, "%s/out", root);
    o.out_dir = out;
    hone_train_result res;
    REQUIRE(hone_train_run(&o, &res, err, sizeof err) == HONE_OK);
    unsigned char *m = NULL;
    char path[700];
    snprintf(path, sizeof path, "%s/metrics.jsonl", out);
    long n = read_file(path, &m);
    REQUIRE(n > 0);
    m = realloc(m, (size_t)n + 1);
    m[n] = 0;
    CHECK(strstr((char *)m, "\"val_map\":") && strstr((char *)m, "\"test_map\":") &&
          strstr((char *)m, "\"best_val_map\":") && !strstr((char *)m, "accuracy"));
    const char *tm = strstr((char *)m, "\"test_map\":");
    double test_map = tm ? strtod(tm + 11, NULL) : -1;
    const char *tc = strstr((char *)m, "\"test_coco_ap\":");
    double test_coco = tc ? strtod(tc + 15, NULL) : -1;
    CHECK(tc && strstr((char *)m, "\"test_coco_ap50\":") &&
          strstr((char *)m, "\"test_coco_ap_small\":"));
    free(m);
    /* --evaluate: the same mAP as the run's last line, with per-class AP averaging to it */
    o.out_dir = NULL;
    char *ev = NULL;
    size_t evn = 0;
    FILE *f = open_memstream(&ev, &evn);
    REQUIRE(hone_train_evaluate(&o, out, f, err, sizeof err) == HONE_OK);
    fclose(f);
    json_t *j = json_loads(ev, 0, NULL);
    json_t *ap = json_object_get(j, "ap");
    double map = json_number_value(json_object_get(j, "map")), sum = 0;
    int counted = 0;
    for (size_t i = 0; i < json_array_size(ap); i++)
        if (json_is_number(json_array_get(ap, i)))
            sum += json_number_value(json_array_get(ap, i)), counted++;
    CHECK(json_integer_value(json_object_get(j, "images")) == 30 && json_array_size(ap) >= 2 &&
          json_array_size(ap) == json_array_size(json_object_get(j, "classes")));
    CHECK(counted > 0 && fabs(sum / counted - map) < 1e-9 && fabs(map - test_map) < 1e-5);
    /* COCO's figures of the same boxes: AP@[.5:.95] at most AP50, the run's own to its 6 digits */
    double cap = json_number_value(json_object_get(j, "coco_ap"));
    double cap50 = json_number_value(json_object_get(j, "coco_ap50"));
    CHECK(json_is_number(json_object_get(j, "coco_ap")) &&
          json_is_number(json_object_get(j, "coco_ap75")) && json_object_get(j, "coco_ap_small") &&
          json_object_get(j, "coco_ap_medium") && json_object_get(j, "coco_ap_large"));
    CHECK(0 <= cap && cap <= cap50 && cap50 <= 1 && fabs(cap - test_coco) <= 1e-5 * (1 + cap));
    if (fabs(map - test_map) >= 1e-5)
        fprintf(stderr, "evaluate map %g, the run's test_map %g\n", map, test_map);
    free(ev);
    /* --infer: a JSON line an image with its boxes, in its pixels, and the same as KITTI lines */
    char folder[700];
    snprintf(folder, sizeof folder, "%s/set/val/images", root);
    f = open_memstream(&ev, &evn);
    int images = 0;
    REQUIRE(hone_train_infer(&o, out, folder, f, &images, err, sizeof err) == HONE_OK);
    fclose(f);
    CHECK(images == 30);
    int lines = 0, boxes = 0;
    for (char *ln = strtok(ev, "\n"); ln; ln = strtok(NULL, "\n"), lines++) {
        json_t *r = json_loads(ln, 0, NULL), *bx = json_object_get(r, "boxes");
        const char *kt = json_string_value(json_object_get(r, "kitti"));
        CHECK(json_is_string(json_object_get(r, "file")) && json_is_array(bx) && kt);
        int kl = 0;
        for (const char *q = kt; q && *q; q++)
            kl += *q == '\n';
        CHECK(kl == (int)json_array_size(bx));
        for (size_t b = 0; b < json_array_size(bx); b++, boxes++) {
            json_t *x = json_array_get(bx, b);
            double x1 = json_number_value(json_object_get(x, "x1"));
            double x2 = json_number_value(json_object_get(x, "x2"));
            double y1 = json_number_value(json_object_get(x, "y1"));
            double y2 = json_number_value(json_object_get(x, "y2"));
            CHECK(0 <= x1 && x1 < x2 && x2 <= 128 && 0 <= y1 && y1 < y2 && y2 <= 128);
            CHECK(json_integer_value(json_object_get(x, "class_index")) <
                  (json_int_t)json_array_size(ap));
        }
        json_decref(r);
    }
    free(ev);
    CHECK(lines == 30 && boxes > 0);
    /* export: the detector's coverage and bbox outputs (train_export runs them in onnxruntime) */
    snprintf(path, sizeof path, "%s/model.onnx", root);
    size_t bytes = 0;
    CHECK(hone_train_export(&o, out, path, &bytes, err, sizeof err) == HONE_OK && bytes > 1000);
    unlink(path);
    json_decref(j);
    rm_out(out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    CHECK(system(cmd) == 0);
    if (failures)
        fprintf(stderr, "detect_train_test: %d failure(s)\n", failures);
    return failures != 0;
}
