/* tests/train/detect_data_test.c: a KITTI set loaded by hone-train's dataset_load (train/dataset.c
 * + detect_data.c) for detectnet_v2, on a small set written by tests/data/gen_detect.py: the parts
 * (val/ split, a tenth of train/ as test), every image's boxes inside the image, its grid targets
 * (the cell holding a box's centre is covered for its class and its offsets decode back to the
 * box unless a smaller box of the class took the cell; weights sum to one an object at most,
 * zero without objects), the same parts and targets through data.packed as self-packed, a
 * batch's targets gathered by hone_k_gather_rows as the trainer does, and the refusals (a pack
 * without boxes, an input side that is not a multiple of detect.stride).
 * argv: python3 gen_detect.py. Exits 77 when the generator has no Fashion-MNIST or photographs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "dataset.h"
#include "detect.h"
#include "train_files.h"

static char root[] = "/tmp/hone-detdata-XXXXXX";

static void spec_for(hone_train_spec *s, const char *packed)
{
    char err[256];
    hone_train_spec_defaults(s);
    REQUIRE(hone_train_spec_set(s, "network=detectnet_v2", err, sizeof err) == HONE_OK);
    REQUIRE(hone_train_spec_set(s, "data.format=kitti", err, sizeof err) == HONE_OK);
    snprintf(s->data.path, sizeof s->data.path, "%s/set", root);
    snprintf(s->data.packed, sizeof s->data.packed, "%s", packed ? packed : "");
}

/* Every image of part p: its boxes, its targets against them. */
static void check_part(const dataset *d, const data_part *p)
{
    int gh = d->grid_h, gw = d->grid_w, K = d->classes;
    size_t plane = (size_t)K * gh * gw, hw = (size_t)gh * gw;
    hone_det_grid_opts o;
    hone_det_grid_defaults(&o);
    REQUIRE(p->n == 0 || (p->boxes && p->box_start && p->targets));
    int objects = 0, decoded = 0;
    for (int i = 0; i < p->n; i++) {
        const float *t = p->targets + 6 * plane * (size_t)i;
        double wsum = 0;
        for (size_t q = 0; q < plane; q++) {
            CHECK(t[q] == 0.0f || t[q] == 1.0f);
            CHECK(t[5 * plane + q] >= 0.0f && t[5 * plane + q] <= 1.0f);
            wsum += t[5 * plane + q];
        }
        int nobj = 0;
        for (uint32_t b = p->box_start[i]; b < p->box_start[i + 1]; b++) {
            const hone_data_box *x = &p->boxes[b];
            CHECK(x->x1 >= 0 && x->x1 < x->x2 && x->x2 <= d->w);
            CHECK(x->y1 >= 0 && x->y1 < x->y2 && x->y2 <= d->h);
            if (x->cls < 0)
                continue;
            CHECK(x->cls < K);
            nobj++;
            int gx = (int)((x->x1 + x->x2) / 2 / o.stride),
                gy = (int)((x->y1 + x->y2) / 2 / o.stride);
            size_t cell = (size_t)gy * gw + gx;
            CHECK(t[(size_t)x->cls * hw + cell] == 1.0f);
            /* decode the cell's offsets: the box, unless a smaller box of its class won it */
            const float *bb = t + plane + (size_t)x->cls * 4 * hw + cell;
            float ax = (float)gx * o.stride + o.offset, ay = (float)gy * o.stride + o.offset;
            float x1 = ax - bb[0] * o.bbox_norm, y1 = ay - bb[hw] * o.bbox_norm;
            float x2 = ax + bb[2 * hw] * o.bbox_norm, y2 = ay + bb[3 * hw] * o.bbox_norm;
            if (fabsf(x1 - x->x1) < 1e-3f && fabsf(y1 - x->y1) < 1e-3f &&
                fabsf(x2 - x->x2) < 1e-3f && fabsf(y2 - x->y2) < 1e-3f)
                decoded++;
        }
        objects += nobj;
        CHECK(wsum <= nobj + 1e-4);
        CHECK(nobj == 0 ? wsum == 0 : wsum > 0);
    }
    /* overlaps take some centre cells; most objects keep theirs */
    CHECK(objects == 0 || decoded * 10 >= objects * 7);
    if (objects && decoded * 10 < objects * 7)
        fprintf(stderr, "decoded %d of %d objects\n", decoded, objects);
}

static int same_part(const data_part *a, const data_part *b, size_t row, size_t trow)
{
    if (a->n != b->n || a->box_start[a->n] != b->box_start[b->n])
        return 0;
    return !memcmp(a->x, b->x, row * (size_t)a->n) &&
           !memcmp(a->targets, b->targets, sizeof(float) * trow * (size_t)a->n) &&
           !memcmp(a->boxes, b->boxes, sizeof(hone_data_box) * a->box_start[a->n]);
}

/* A shuffled batch's targets gathered on the device: row idx[base + i] of the part's. */
static void check_gather(const dataset *d)
{
    hone_kctx *k;
    REQUIRE(hone_kctx_new(HONE_DEV_CPU, 1, &k) == HONE_OK);
    const data_part *p = &d->train;
    int row = 6 * d->classes * d->grid_h * d->grid_w, n = 5, base = 3;
    float *src = hone_k_alloc(k, sizeof(float) * (size_t)row * p->n);
    float *dst = hone_k_alloc(k, sizeof(float) * (size_t)row * n);
    int32_t *idx = hone_k_alloc(k, sizeof(int32_t) * (size_t)p->n);
    hone_k_upload(k, src, p->targets, sizeof(float) * (size_t)row * p->n);
    REQUIRE(hone_k_permutation(k, idx, p->n, 7, 1) == HONE_OK);
    REQUIRE(hone_k_gather_rows(k, src, NULL, idx, NULL, base, n, row, dst, NULL) == HONE_OK);
    int32_t *hidx = malloc(sizeof(int32_t) * (size_t)p->n);
    float *out = malloc(sizeof(float) * (size_t)row * n);
    hone_k_sync(k);
    hone_k_download(k, hidx, idx, sizeof(int32_t) * (size_t)p->n);
    hone_k_download(k, out, dst, sizeof(float) * (size_t)row * n);
    for (int i = 0; i < n; i++)
        CHECK(!memcmp(out + (size_t)row * i, p->targets + (size_t)row * hidx[base + i],
                      sizeof(float) * (size_t)row));
    free(hidx), free(out);
    hone_k_free(k, src), hone_k_free(k, dst), hone_k_free(k, idx);
    hone_kctx_free(k);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: detect_data_test PYTHON GEN_DETECT_PY\n");
        return 2;
    }
    REQUIRE(mkdtemp(root) != NULL);
    char cmd[2048], set[600], pack[600], err[512];
    snprintf(set, sizeof set, "%s/set", root);
    snprintf(cmd, sizeof cmd, "%s %s --tiny --count 40 %s >/dev/null", argv[1], argv[2], set);
    int st = system(cmd);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "skipped: gen_detect.py could not write the set (exit %d)\n",
                WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        snprintf(cmd, sizeof cmd, "rm -rf %s", root);
        (void)!system(cmd);
        return 77;
    }

    hone_train_spec s;
    dataset d, dp;
    spec_for(&s, NULL);
    s.data.val_size = 2; /* not used: the set has val/ */
    REQUIRE(dataset_load(&s, 0, &d, err, sizeof err) == HONE_OK);
    CHECK(d.detect && d.c == 3 && d.h == 128 && d.w == 128 && d.grid_h == 8 && d.grid_w == 8);
    CHECK(d.train.n == 36 && d.val.n == 4 && d.test.n == 4); /* a tenth of train/ is the test */
    CHECK(d.classes >= 2 && d.classes <= 10 && d.names && d.names[0]);
    check_part(&d, &d.train);
    check_part(&d, &d.val);
    check_part(&d, &d.test);
    check_gather(&d);

    /* the same parts through a packed file (as the controller's convert job makes one) */
    hone_data_kitti *kt;
    REQUIRE(hone_data_kitti_open(set, NULL, &kt, err, sizeof err) == HONE_OK);
    snprintf(pack, sizeof pack, "%s/set.hpk", root);
    hone_data_pack_opts po = {.width = 128, .height = 128, .channels = 3, .threads = 1};
    REQUIRE(hone_data_kitti_pack(kt, pack, &po, err, sizeof err) == HONE_OK);
    hone_data_kitti_free(kt);
    spec_for(&s, pack);
    REQUIRE(dataset_load(&s, 0, &dp, err, sizeof err) == HONE_OK);
    size_t row = (size_t)3 * 128 * 128, trow = (size_t)6 * d.classes * 64;
    CHECK(same_part(&d.train, &dp.train, row, trow) && same_part(&d.val, &dp.val, row, trow) &&
          same_part(&d.test, &dp.test, row, trow));
    dataset_free(&dp);
    dataset_free(&d);

    /* refusals: a side that is not a multiple of the stride, a packed file of the wrong size */
    spec_for(&s, NULL);
    s.model.input_size = 136;
    CHECK(dataset_load(&s, 0, &d, err, sizeof err) < 0 && !strncmp(err, "model.input_size", 16));
    spec_for(&s, pack);
    s.model.input_size = 160;
    CHECK(dataset_load(&s, 0, &d, err, sizeof err) < 0 && !strncmp(err, "data.packed", 11));

    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    CHECK(system(cmd) == 0);
    if (failures)
        fprintf(stderr, "detect_data_test: %d failure(s)\n", failures);
    return failures != 0;
}
