/* detect_coco_tool.c: hone_det_coco over a text file, for test_train_coco_ref.py to compare with
 * pycocotools. Reads stdin: "classes N" first, then per image a line "image" followed by its
 * "g CLS X1 Y1 X2 Y2 CROWD" (ground truth; CLS -1: a DontCare region) and "p CLS SCORE X1 Y1 X2
 * Y2" (prediction) lines. Writes "coco AP AP50 AP75 AP_SMALL AP_MEDIUM AP_LARGE" and "ap CLS AP"
 * per class (%.17g, -1 where undefined). Exit 1 on malformed input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detect.h"
#include "hone.h"

int main(void)
{
    char line[512];
    int n_classes = 0, rc = 1;
    int n_gt = 0, n_pred = 0, cap = 4096, open = 0;
    hone_det_gt *gts = hone_xmalloc((size_t)cap * sizeof *gts);
    hone_det_cand *preds = hone_xmalloc((size_t)cap * sizeof *preds);
    hone_det_coco *m = NULL;
    double *ap = NULL;
    while (fgets(line, sizeof line, stdin)) {
        hone_det_gt g = {{0, 0, 0, 0}, 0, 0};
        hone_det_cand p = {{0, 0, 0, 0}, 0, 0};
        int crowd = 0;
        if (sscanf(line, "classes %d", &n_classes) == 1) {
            m = hone_det_coco_new(n_classes);
            if (!m)
                goto fail;
        } else if (strncmp(line, "image", 5) == 0 && m) {
            if (open && hone_det_coco_add_image(m, gts, n_gt, preds, n_pred) != 0)
                goto fail;
            open = 1;
            n_gt = n_pred = 0;
        } else if (sscanf(line, "g %d %f %f %f %f %d", &g.cls, &g.box.x1, &g.box.y1, &g.box.x2,
                          &g.box.y2, &crowd) == 6 &&
                   open && n_gt < cap) {
            g.flags = crowd ? HONE_DET_GT_CROWD : 0;
            gts[n_gt++] = g;
        } else if (sscanf(line, "p %d %f %f %f %f %f", &p.cls, &p.score, &p.box.x1, &p.box.y1,
                          &p.box.x2, &p.box.y2) == 6 &&
                   open && n_pred < cap) {
            preds[n_pred++] = p;
        } else {
            fprintf(stderr, "detect_coco_tool: bad line: %s", line);
            goto fail;
        }
    }
    if (!m || (open && hone_det_coco_add_image(m, gts, n_gt, preds, n_pred) != 0))
        goto fail;
    ap = hone_xcalloc((size_t)n_classes, sizeof *ap);
    hone_det_coco_stats s;
    if (hone_det_coco_compute(m, &s, ap) != 0)
        goto fail;
    printf("coco %.17g %.17g %.17g %.17g %.17g %.17g\n", s.ap, s.ap50, s.ap75, s.ap_small,
           s.ap_medium, s.ap_large);
    for (int c = 0; c < n_classes; c++)
        printf("ap %d %.17g\n", c, ap[c]);
    rc = 0;
fail:
    hone_det_coco_free(m);
    free(gts);
    free(preds);
    free(ap);
    return rc;
}
