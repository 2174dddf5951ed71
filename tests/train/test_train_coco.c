/* test_train_coco.c: COCO's detection metrics (hone_det_coco, train/detect_coco.c) on hand-made
 * cases worked out on paper: a perfect set (every figure 1), a small case whose AP over the ten
 * IoU thresholds and the three sizes is known (710/1010, 51/101, an empty size range -1), crowd
 * and DontCare regions swallowing detections, the 100-detections cap, and refusals.
 * test_train_coco_ref.py checks the same code against pycocotools on random sets. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "detect.h"
#include "hone.h"

static int near(double a, double b)
{
    return fabs(a - b) <= 1e-12;
}

static hone_det_box B(float x1, float y1, float x2, float y2)
{
    return (hone_det_box){x1, y1, x2, y2};
}

/* two images, two classes, a small, a medium and a large box, each found exactly */
static void test_perfect(void)
{
    hone_det_coco *c = hone_det_coco_new(2);
    hone_det_gt g1[] = {{B(0, 0, 10, 10), 0, 0}, {B(20, 20, 70, 70), 1, 0}};
    hone_det_cand p1[] = {{B(20, 20, 70, 70), 1, 0.7f}, {B(0, 0, 10, 10), 0, 0.9f}};
    hone_det_gt g2[] = {{B(5, 5, 125, 125), 0, 0}};
    hone_det_cand p2[] = {{B(5, 5, 125, 125), 0, 0.3f}};
    REQUIRE(hone_det_coco_add_image(c, g1, 2, p1, 2) == 0);
    REQUIRE(hone_det_coco_add_image(c, g2, 1, p2, 1) == 0);
    hone_det_coco_stats s;
    double ap[2];
    REQUIRE(hone_det_coco_compute(c, &s, ap) == 0);
    CHECK(near(s.ap, 1) && near(s.ap50, 1) && near(s.ap75, 1));
    CHECK(near(s.ap_small, 1) && near(s.ap_medium, 1) && near(s.ap_large, 1));
    CHECK(near(ap[0], 1) && near(ap[1], 1));
    hone_det_coco_free(c);
}

/* One class, one image: A (100x100, large) found exactly at 0.9, B (10x10, small) found at 0.8
 * by a box shifted 2 px (IoU 8/12 = 0.667: a match at IoU .50 .. .65, a miss from .70 on).
 * .50-.65: both true positives, AP 1. .70-.95: precision 1 up to recall 0.5 (51 of the 101 recall
 * points), then nothing: 51/101. AP = (4 + 6 * 51/101) / 10 = 710/1010. Small: only B counts;
 * the detection of A matches an ignored box (neither), the shifted one is B's match up to .65,
 * then a false positive of a small area: 4/10. Medium: no box: -1. Large: only A counts and the
 * shifted box is ignored (unmatched, outside the range): 1. */
static void test_known(void)
{
    hone_det_coco *c = hone_det_coco_new(1);
    hone_det_gt g[] = {{B(0, 0, 100, 100), 0, 0}, {B(200, 0, 210, 10), 0, 0}};
    hone_det_cand p[] = {{B(0, 0, 100, 100), 0, 0.9f}, {B(202, 0, 212, 10), 0, 0.8f}};
    REQUIRE(hone_det_coco_add_image(c, g, 2, p, 2) == 0);
    hone_det_coco_stats s;
    REQUIRE(hone_det_coco_compute(c, &s, NULL) == 0);
    CHECK(near(s.ap, 710.0 / 1010.0));
    CHECK(near(s.ap50, 1) && near(s.ap75, 51.0 / 101.0));
    CHECK(near(s.ap_small, 0.4));
    CHECK(s.ap_medium == -1);
    CHECK(near(s.ap_large, 1));
    hone_det_coco_free(c);
}

/* Detections inside a crowd region (intersection over the detection's own area 1) are neither
 * true nor false positives, however many; a DontCare region (no class) is a crowd region of every
 * class. Without the crowd flag the same detections are false positives ranked first. */
static void test_crowd(void)
{
    hone_det_cand p[] = {{B(0, 0, 100, 100), 0, 0.5f},
                         {B(220, 20, 240, 40), 0, 0.95f},
                         {B(250, 50, 270, 70), 0, 0.85f},
                         {B(230, 60, 260, 90), 1, 0.9f}};
    hone_det_gt g[] = {{B(0, 0, 100, 100), 0, 0},
                       {B(200, 0, 300, 100), 0, HONE_DET_GT_CROWD},
                       {B(0, 0, 100, 100), 1, 0}};
    hone_det_coco_stats s;
    double ap[2];
    hone_det_coco *c = hone_det_coco_new(2);
    REQUIRE(hone_det_coco_add_image(c, g, 3, p, 3) == 0);
    REQUIRE(hone_det_coco_compute(c, &s, ap) == 0);
    CHECK(near(ap[0], 1) && near(s.ap, 0.5)); /* class 1's box is not found */
    hone_det_coco_free(c);
    /* the crowd flag off: a box more to find, and two false positives above the true one:
     * precision 1/3 up to recall 0.5 (51 of the 101 points) */
    g[1].flags = 0;
    c = hone_det_coco_new(2);
    REQUIRE(hone_det_coco_add_image(c, g, 3, p, 3) == 0);
    REQUIRE(hone_det_coco_compute(c, &s, ap) == 0);
    CHECK(near(ap[0], 51.0 / 303.0));
    hone_det_coco_free(c);
    /* DontCare: class 0's two and class 1's one inside it are ignored; class 1 has a box in each
     * image and is found in the second only (recall 0.5 at precision 1: 51/101) */
    g[1].cls = HONE_DET_DONTCARE;
    hone_det_cand p1[] = {{B(0, 0, 100, 100), 1, 0.5f}, {B(230, 60, 260, 90), 1, 0.9f}};
    c = hone_det_coco_new(2);
    REQUIRE(hone_det_coco_add_image(c, g, 3, p, 3) == 0);
    REQUIRE(hone_det_coco_add_image(c, g + 1, 2, p1, 2) == 0);
    REQUIRE(hone_det_coco_compute(c, &s, ap) == 0);
    CHECK(near(ap[0], 1) && near(ap[1], 51.0 / 101.0));
    hone_det_coco_free(c);
}

/* At most 100 detections an image and class, the best scored: the true positive ranked 101st is
 * never seen (AP 0); ranked 100th it gives precision 1/100 at recall 1 (AP 0.01). */
static void test_max_dets(void)
{
    for (int fps = 99; fps <= 100; fps++) {
        hone_det_cand *p = hone_xcalloc((size_t)fps + 1, sizeof *p);
        for (int i = 0; i < fps; i++)
            p[i] = (hone_det_cand){B(300 + i, 0, 310 + i, 10), 0, 0.9f - 0.001f * i};
        p[fps] = (hone_det_cand){B(0, 0, 50, 50), 0, 0.1f};
        hone_det_gt g = {B(0, 0, 50, 50), 0, 0};
        hone_det_coco *c = hone_det_coco_new(1);
        REQUIRE(hone_det_coco_add_image(c, &g, 1, p, fps + 1) == 0);
        hone_det_coco_stats s;
        REQUIRE(hone_det_coco_compute(c, &s, NULL) == 0);
        CHECK(near(s.ap, fps == 99 ? 0.01 : 0.0));
        hone_det_coco_free(c);
        free(p);
    }
}

static void test_refusals(void)
{
    CHECK(hone_det_coco_new(0) == NULL);
    hone_det_coco *c = hone_det_coco_new(2);
    hone_det_gt g = {B(0, 0, 10, 10), 2, 0};
    hone_det_cand p = {B(0, 0, 10, 10), 0, NAN};
    CHECK(hone_det_coco_add_image(c, &g, 1, NULL, 0) == HONE_EINVAL);
    CHECK(hone_det_coco_add_image(c, NULL, 0, &p, 1) == HONE_EINVAL);
    hone_det_coco_stats s;
    REQUIRE(hone_det_coco_compute(c, &s, NULL) == 0); /* nothing added: nothing defined */
    CHECK(s.ap == -1 && s.ap50 == -1 && s.ap75 == -1 && s.ap_small == -1 && s.ap_large == -1);
    hone_det_coco_free(c);
}

int main(void)
{
    test_perfect();
    test_known();
    test_crowd();
    test_max_dets();
    test_refusals();
    if (failures)
        fprintf(stderr, "%d failures\n", failures);
    return failures ? 1 : 0;
}
