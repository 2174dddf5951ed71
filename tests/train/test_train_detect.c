/* test_train_detect.c: the detection box code (train/detect.h) on hand-made cases: IoU in both
 * conventions, the DetectNet_v2 grid targets (coverage regions, offsets, weights, the smaller box
 * winning an overlap), the round trip encode -> perfect predictions -> decode -> cluster giving
 * back the boxes within a pixel, NMS, DBSCAN (noise, weights, confidence modes), and AP / mAP
 * (perfect = 1, none = 0, duplicates false positives, a known curve, difficult and DontCare). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "detect.h"
#include "hone.h"

static int near(double a, double b, double tol)
{
    return fabs(a - b) <= tol;
}

static hone_det_box B(float x1, float y1, float x2, float y2)
{
    return (hone_det_box){x1, y1, x2, y2};
}

static void test_iou(void)
{
    hone_det_box a = B(0, 0, 10, 10), b = B(5, 0, 15, 10), c = B(20, 20, 30, 30);
    CHECK(near(hone_det_iou(&a, &a, 0), 1.0, 1e-12));
    CHECK(near(hone_det_iou(&a, &b, 0), 50.0 / 150.0, 1e-12));
    CHECK(hone_det_iou(&a, &c, 0) == 0.0);
    /* VOC inclusive: [0,10] is 11 pixels wide, the overlap [5,10] 6 */
    CHECK(near(hone_det_iou(&a, &b, 1), 66.0 / (121.0 + 121.0 - 66.0), 1e-12));
    hone_det_box touch = B(10, 0, 20, 10);
    CHECK(hone_det_iou(&a, &touch, 0) == 0.0);
    CHECK(near(hone_det_iou(&a, &touch, 1), 11.0 / (121.0 + 121.0 - 11.0), 1e-12));
    hone_det_box empty = B(3, 3, 3, 8);
    CHECK(hone_det_iou(&a, &empty, 0) == 0.0);
}

enum { GH = 8, GW = 10, NC = 2 };
static float cov[NC * GH * GW], bbox[4 * NC * GH * GW], weight[NC * GH * GW];

static void test_encode(void)
{
    hone_det_grid_opts o;
    hone_det_grid_defaults(&o);
    /* class 1 box covering cell centres x 24, 40 (cells 1, 2) and y 8, 24 (cells 0, 1) */
    hone_det_gt g = {B(20, 4, 44, 30), 1, 0};
    REQUIRE(hone_det_encode(&o, NC, GH, GW, &g, 1, cov, bbox, weight) == 0);
    int on = 0;
    for (int i = 0; i < NC * GH * GW; i++)
        on += cov[i] > 0;
    CHECK(on == 4);
    size_t plane = GH * GW, at = plane + 1 * GW + 2; /* class 1, cell (1, 2): anchor (32.5, 16.5) */
    CHECK(cov[at] == 1.0f);
    CHECK(near(weight[at], 0.25, 1e-7));
    CHECK(cov[0 * plane + 1 * GW + 2] == 0.0f); /* class 0 untouched */
    CHECK(cov[plane + 1 * GW + 3] == 0.0f);     /* centre 56 outside */
    const float *t = bbox + 4 * plane + 1 * GW + 2;
    CHECK(near(t[0], (32.5 - 20) / 35.0, 1e-6));
    CHECK(near(t[plane], (16.5 - 4) / 35.0, 1e-6));
    CHECK(near(t[2 * plane], (44 - 32.5) / 35.0, 1e-6));
    CHECK(near(t[3 * plane], (30 - 16.5) / 35.0, 1e-6));
    /* central half only: the box's centre (32, 17) with half-axes 6 x 6.5 holds no cell centre,
     * yet the cell holding the centre is covered */
    o.cov_radius_x = o.cov_radius_y = 0.5f;
    REQUIRE(hone_det_encode(&o, NC, GH, GW, &g, 1, cov, bbox, weight) == 0);
    on = 0;
    for (int i = 0; i < NC * GH * GW; i++)
        on += cov[i] > 0;
    CHECK(on == 1);
    CHECK(cov[plane + 1 * GW + 2] == 1.0f && weight[plane + 1 * GW + 2] == 1.0f);
    /* ellipse vs rectangle: a 64x64 box at (0,0) covers 16 cell centres as a rectangle, 12 as
     * the inscribed ellipse (the 4 corner cells fall outside) */
    hone_det_grid_defaults(&o);
    hone_det_gt sq = {B(0, 0, 64, 64), 0, 0};
    REQUIRE(hone_det_encode(&o, NC, GH, GW, &sq, 1, cov, bbox, weight) == 0);
    on = 0;
    for (int i = 0; i < NC * GH * GW; i++)
        on += cov[i] > 0;
    CHECK(on == 16);
    o.cov_shape = HONE_DET_COV_ELLIPSE;
    REQUIRE(hone_det_encode(&o, NC, GH, GW, &sq, 1, cov, bbox, weight) == 0);
    on = 0;
    for (int i = 0; i < NC * GH * GW; i++)
        on += cov[i] > 0;
    CHECK(on == 12);
    CHECK(cov[0] == 0.0f && cov[1 * GW + 1] == 1.0f);
    /* overlap: the smaller box keeps its cells, the larger the rest; the weights follow */
    hone_det_grid_defaults(&o);
    hone_det_gt two[2] = {{B(20, 20, 38, 38), 0, 0}, {B(0, 0, 64, 64), 0, 0}};
    REQUIRE(hone_det_encode(&o, NC, GH, GW, two, 2, cov, bbox, weight) == 0);
    at = 1 * GW + 1; /* centre (24, 24): the small box's; anchor (16.5, 16.5) */
    CHECK(near(bbox[at], (16.5 - 20) / 35.0, 1e-6));
    CHECK(near(weight[at], 1.0, 1e-7));
    CHECK(near(bbox[0], 0.5 / 35.0, 1e-6)); /* cell (0,0): the large one's */
    CHECK(near(weight[0], 1.0 / 15, 1e-7));
    /* an ignored box writes nothing; a DontCare region (KITTI's DontCare, COCO's iscrowd) makes
     * the cells whose centres it holds ignore cells (-1) in every class, but those an object owns;
     * a bad class is refused */
    hone_det_gt dc[3] = {{B(0, 0, 64, 64), 1, HONE_DET_GT_IGNORE},
                         {B(0, 0, 64, 64), HONE_DET_DONTCARE, 0},
                         {B(20, 20, 38, 38), 0, 0}};
    REQUIRE(hone_det_encode(&o, NC, GH, GW, dc, 1, cov, bbox, weight) == 0);
    on = 0;
    for (int i = 0; i < NC * GH * GW; i++)
        on += cov[i] != 0 || weight[i] != 0;
    CHECK(on == 0);
    REQUIRE(hone_det_encode(&o, NC, GH, GW, dc, 3, cov, bbox, weight) == 0);
    int ign = 0, pos = 0;
    for (int i = 0; i < NC * GH * GW; i++) {
        int gy = i % (GH * GW) / GW, gx = i % GW, in = gx < 4 && gy < 4; /* centres < 64 */
        ign += cov[i] == -1.0f;
        pos += cov[i] == 1.0f;
        CHECK(in ? cov[i] != 0 : cov[i] == 0);
        CHECK(cov[i] == 1.0f || weight[i] == 0);
    }
    CHECK(pos == 1 && ign == 2 * 16 - 1 && cov[1 * GW + 1] == 1.0f); /* (24, 24): the object's */
    hone_det_gt bad = {B(0, 0, 10, 10), NC, 0};
    CHECK(hone_det_encode(&o, NC, GH, GW, &bad, 1, cov, bbox, weight) == HONE_EINVAL);
    o.stride = 0;
    CHECK(hone_det_encode(&o, NC, GH, GW, &sq, 1, cov, bbox, weight) == HONE_EINVAL);
}

/* Encode, decode the targets as if predicted perfectly, cluster: the same boxes come back. */
static void test_round_trip(void)
{
    hone_det_grid_opts o;
    hone_det_grid_defaults(&o);
    hone_det_gt gts[5] = {
        {B(3.5f, 7.25f, 60.0f, 50.5f), 0, 0},    {B(70.0f, 10.0f, 150.0f, 90.0f), 0, 0},
        {B(90.0f, 60.0f, 118.0f, 120.0f), 1, 0}, {B(12.0f, 70.0f, 40.0f, 126.0f), 1, 0},
        {B(20.0f, 60.0f, 46.0f, 110.0f), 1, 0}, /* overlaps the one above, IoU 0.39 */
    };
    for (int shape = 0; shape < 2; shape++) {
        o.cov_shape = shape;
        o.cov_radius_x = o.cov_radius_y = shape ? 1.0f : 0.6f;
        REQUIRE(hone_det_encode(&o, NC, GH, GW, gts, 5, cov, bbox, weight) == 0);
        hone_det_cand cands[NC * GH * GW], boxes[NC * GH * GW];
        int n = 0, k = 0;
        REQUIRE(hone_det_decode(&o, NC, GH, GW, cov, bbox, 0.5f, cands, NC * GH * GW, &n) == 0);
        CHECK(n > 5);
        hone_det_cluster_opts co;
        hone_det_cluster_defaults(&co);
        co.eps = 0.2f; /* IoU 0.8 neighbours: the overlapping pair stays apart */
        REQUIRE(hone_det_cluster(&co, cands, n, boxes, &k) == 0);
        CHECK(k == 5);
        for (int g = 0; g < 5; g++) {
            int found = 0;
            for (int i = 0; i < k; i++)
                if (boxes[i].cls == gts[g].cls && fabsf(boxes[i].box.x1 - gts[g].box.x1) < 1 &&
                    fabsf(boxes[i].box.y1 - gts[g].box.y1) < 1 &&
                    fabsf(boxes[i].box.x2 - gts[g].box.x2) < 1 &&
                    fabsf(boxes[i].box.y2 - gts[g].box.y2) < 1)
                    found++;
            CHECK(found == 1);
        }
        /* the cap is honoured */
        CHECK(hone_det_decode(&o, NC, GH, GW, cov, bbox, 0.5f, cands, 2, &n) == HONE_ERANGE);
    }
}

/* Random round trips: boxes of 2 classes, at least 2 cells wide and high (so each contains its own
 * centre cell's centre and keeps that cell), disjoint within a class, random coverage shapes. */
static void test_round_trip_random(void)
{
    srand(12);
    int trials = 0, boxes_total = 0;
    for (int t = 0; t < 300; t++) {
        hone_det_grid_opts o;
        hone_det_grid_defaults(&o);
        o.cov_shape = rand() % 2;
        o.cov_radius_x = 0.3f + 0.7f * (float)(rand() % 1000) / 1000.0f;
        o.cov_radius_y = 0.3f + 0.7f * (float)(rand() % 1000) / 1000.0f;
        hone_det_gt gts[6];
        int n = 0;
        for (int tries = 0; tries < 40 && n < 1 + t % 6; tries++) {
            float w = 32 + rand() % 60, h = 32 + rand() % 60;
            float x = (float)(rand() % (int)(GW * 16 - w)) + 0.25f * (rand() % 4);
            float y = (float)(rand() % (int)(GH * 16 - h)) + 0.25f * (rand() % 4);
            hone_det_gt g = {B(x, y, x + w, y + h), rand() % NC, 0};
            int ok = 1;
            for (int i = 0; i < n && ok; i++)
                ok = gts[i].cls != g.cls || hone_det_iou(&gts[i].box, &g.box, 0) == 0.0;
            if (ok)
                gts[n++] = g;
        }
        REQUIRE(hone_det_encode(&o, NC, GH, GW, gts, n, cov, bbox, weight) == 0);
        /* each box's weights sum to 1 (normalised by its cell count) */
        double wsum = 0;
        for (int i = 0; i < NC * GH * GW; i++)
            wsum += weight[i];
        CHECK(near(wsum, n, 1e-4));
        hone_det_cand cands[NC * GH * GW], out[NC * GH * GW];
        int nc = 0, k = 0;
        REQUIRE(hone_det_decode(&o, NC, GH, GW, cov, bbox, 0.5f, cands, NC * GH * GW, &nc) == 0);
        hone_det_cluster_opts co;
        hone_det_cluster_defaults(&co);
        REQUIRE(hone_det_cluster(&co, cands, nc, out, &k) == 0);
        CHECK(k == n);
        for (int g = 0; g < n; g++) {
            int found = 0;
            for (int i = 0; i < k; i++)
                found += out[i].cls == gts[g].cls && fabsf(out[i].box.x1 - gts[g].box.x1) < 1 &&
                         fabsf(out[i].box.y1 - gts[g].box.y1) < 1 &&
                         fabsf(out[i].box.x2 - gts[g].box.x2) < 1 &&
                         fabsf(out[i].box.y2 - gts[g].box.y2) < 1;
            CHECK(found == 1);
        }
        trials++;
        boxes_total += n;
    }
    CHECK(trials == 300 && boxes_total > 600);
}

static void test_nms(void)
{
    hone_det_cand in[5] = {
        {B(0, 0, 10, 10), 0, 0.6f},   {B(1, 0, 11, 10), 0, 0.9f}, /* IoU 0.82 with the first */
        {B(1, 0, 11, 10), 1, 0.5f},                               /* other class: kept */
        {B(5, 0, 15, 10), 0, 0.7f},                               /* IoU 0.43 with the best */
        {B(50, 50, 60, 60), 0, 0.1f},
    };
    hone_det_cand out[5];
    int k = 0;
    REQUIRE(hone_det_nms(in, 5, 0.5f, out, &k) == 0);
    CHECK(k == 4);
    CHECK(out[0].score == 0.9f && out[1].score == 0.7f && out[2].score == 0.5f &&
          out[3].score == 0.1f);
    REQUIRE(hone_det_nms(in, 5, 0.4f, out, &k) == 0);
    CHECK(k == 3); /* 0.43 > 0.4: the third goes too */
    REQUIRE(hone_det_nms(in, 0, 0.5f, out, &k) == 0 && k == 0);
}

static void test_cluster(void)
{
    hone_det_cluster_opts o;
    hone_det_cluster_defaults(&o);
    hone_det_cand in[6] = {
        {B(0, 0, 10, 10), 0, 0.5f},       {B(0, 0, 10, 12), 0, 1.0f}, /* IoU 0.83 */
        {B(100, 0, 110, 10), 0, 0.02f},                               /* alone, weak: noise */
        {B(0, 0, 10, 10), 1, 0.3f},                                   /* its own class */
        {B(200, 200, 220, 220), 0, 0.3f}, {B(200, 200, 220, 221), 0, 0.3f}};
    hone_det_cand out[6];
    int k = 0;
    REQUIRE(hone_det_cluster(&o, in, 6, out, &k) == 0);
    CHECK(k == 3);
    CHECK(out[0].cls == 0 && near(out[0].score, 1.5, 1e-6));
    CHECK(near(out[0].box.y2, (0.5 * 10 + 1.0 * 12) / 1.5, 1e-5));
    CHECK(near(out[1].score, 0.6, 1e-6) && near(out[1].box.y2, 220.5, 1e-5));
    CHECK(out[2].cls == 1 && near(out[2].score, 0.3, 1e-6));
    o.conf_mode = HONE_DET_CONF_MAX;
    o.conf_threshold = 0.5f;
    REQUIRE(hone_det_cluster(&o, in, 6, out, &k) == 0);
    CHECK(k == 1 && near(out[0].score, 1.0, 1e-6));
    /* min_samples 1.2: the pair at the origin (1.5) is a cluster, the other pair (0.6) noise */
    hone_det_cluster_defaults(&o);
    o.min_samples = 1.2f;
    REQUIRE(hone_det_cluster(&o, in, 6, out, &k) == 0);
    CHECK(k == 1);
    /* eps 0.1: the origin pair (distance 0.17) splits, each alone a cluster; the other pair
     * (distance 0.05) stays one */
    hone_det_cluster_defaults(&o);
    o.eps = 0.1f;
    REQUIRE(hone_det_cluster(&o, in, 6, out, &k) == 0);
    CHECK(k == 4);
    /* min_height drops the 10-pixel boxes */
    hone_det_cluster_defaults(&o);
    o.min_height = 15;
    REQUIRE(hone_det_cluster(&o, in, 6, out, &k) == 0);
    CHECK(k == 1 && out[0].box.y1 == 200);
    in[0].score = -1;
    CHECK(hone_det_cluster(&o, in, 6, out, &k) == HONE_EINVAL);
}

static double map_of(int n_classes, const hone_det_gt *g, int ng, const hone_det_cand *p, int np,
                     double *ap)
{
    hone_det_map *m = hone_det_map_new(n_classes, 0.5f, 0);
    REQUIRE(m);
    REQUIRE(hone_det_map_add_image(m, g, ng, p, np) == 0);
    double v = -2;
    REQUIRE(hone_det_map_compute(m, ap, NULL, &v) == 0);
    hone_det_map_free(m);
    return v;
}

static void test_map(void)
{
    hone_det_gt g[3] = {
        {B(0, 0, 10, 10), 0, 0}, {B(20, 20, 40, 40), 0, 0}, {B(50, 50, 70, 80), 1, 0}};
    hone_det_cand perfect[3] = {{g[0].box, 0, 0.9f}, {g[1].box, 0, 0.8f}, {g[2].box, 1, 0.7f}};
    double ap[3];
    CHECK(near(map_of(3, g, 3, perfect, 3, ap), 1.0, 1e-12));
    CHECK(ap[0] == 1.0 && ap[1] == 1.0 && ap[2] == -1); /* class 2 has no ground truth */
    CHECK(map_of(3, g, 3, NULL, 0, ap) == 0.0);
    /* duplicates: the second detection of a box is a false positive. Class 0 with scores
     * 0.9 (TP), 0.85 (dup, FP), 0.8 (TP): precision 1, 1/2, 2/3 -> AP = (1 + 2/3) / 2 */
    hone_det_cand dup[4] = {
        {g[0].box, 0, 0.9f}, {g[0].box, 0, 0.85f}, {g[1].box, 0, 0.8f}, {g[2].box, 1, 0.7f}};
    CHECK(near(map_of(2, g, 3, dup, 4, ap), ((1 + 2.0 / 3) / 2 + 1) / 2, 1e-12));
    CHECK(near(ap[0], (1 + 2.0 / 3) / 2, 1e-12));
    /* the same duplicate scored below the second TP does not lower the AP */
    dup[1].score = 0.1f;
    CHECK(near(map_of(2, g, 3, dup, 4, ap), 1.0, 1e-12));
    /* a miss (IoU < 0.5) and a wrong class are false positives; the monotone precision: scores
     * FP 0.9, TP 0.8, TP 0.7 -> precisions 1/2, 2/3 -> AP = (2/3 + 2/3) / 2 */
    hone_det_cand miss[3] = {{B(0, 0, 10, 30), 0, 0.9f}, {g[0].box, 0, 0.8f}, {g[1].box, 0, 0.7f}};
    map_of(2, g, 2, miss, 3, ap);
    CHECK(near(ap[0], 2.0 / 3, 1e-12));
    /* difficult: not counted, and a detection on it is neither TP nor FP */
    hone_det_gt gd[2] = {g[0], g[1]};
    gd[1].flags = HONE_DET_GT_IGNORE;
    hone_det_cand pd[2] = {{g[1].box, 0, 0.95f}, {g[0].box, 0, 0.5f}};
    CHECK(near(map_of(1, gd, 2, pd, 2, ap), 1.0, 1e-12));
    /* DontCare: an unmatched detection inside the region is dropped; outside it is an FP */
    hone_det_gt gc[2] = {g[0], {B(100, 100, 200, 200), HONE_DET_DONTCARE, 0}};
    hone_det_cand pc[2] = {{B(110, 110, 130, 130), 0, 0.95f}, {g[0].box, 0, 0.5f}};
    CHECK(near(map_of(1, gc, 2, pc, 2, ap), 1.0, 1e-12));
    pc[0].box = B(180, 180, 230, 230); /* 400 of 2500 inside: 0.16 */
    CHECK(near(map_of(1, gc, 2, pc, 2, ap), 0.5, 1e-12));
    /* across images: a detection only matches its own image's boxes */
    hone_det_map *m = hone_det_map_new(1, 0.5f, 0);
    REQUIRE(m);
    hone_det_cand p0 = {g[1].box, 0, 0.9f};
    REQUIRE(hone_det_map_add_image(m, &g[0], 1, &p0, 1) == 0); /* g[1] is not in image 0: FP */
    REQUIRE(hone_det_map_add_image(m, &g[1], 1, NULL, 0) == 0);
    int ngt = 0;
    double v = -2;
    REQUIRE(hone_det_map_compute(m, ap, &ngt, &v) == 0);
    CHECK(ngt == 2 && v == 0.0);
    hone_det_cand badc = {g[0].box, 1, 0.5f};
    CHECK(hone_det_map_add_image(m, NULL, 0, &badc, 1) == HONE_EINVAL);
    hone_det_map_free(m);
    CHECK(hone_det_map_new(0, 0.5f, 0) == NULL && hone_det_map_new(1, 0.0f, 0) == NULL);
}

int main(void)
{
    test_iou();
    test_encode();
    test_round_trip();
    test_round_trip_random();
    test_nms();
    test_cluster();
    test_map();
    if (failures)
        fprintf(stderr, "%d failures\n", failures);
    return failures ? 1 : 0;
}
