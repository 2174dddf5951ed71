/* detect.h: object detection boxes for a DetectNet_v2-style grid head: IoU, the grid targets
 * (coverage, box regression, loss weights) encoded from ground truth and decoded back into
 * candidate boxes, greedy NMS, DBSCAN clustering of candidates as TAO's DetectNet_v2 postprocessing
 * does, and per-class AP / mAP at an IoU threshold (PASCAL VOC / KITTI all-point interpolation).
 * Pure code: no I/O, no allocation visible to the caller except the opaque hone_det_map.
 *
 * Coordinates are pixels, real-valued, x to the right and y down, a box is [x1, x2) x [y1, y2):
 * its width is x2 - x1 (KITTI labels are real numbers; the KITTI devkit and TAO's evaluation do not
 * add 1). The VOC devkit's pixel-inclusive convention (width x2 - x1 + 1) is available in the IoU
 * and the mAP through `inclusive`, for integer VOC annotations. */
#ifndef HONE_TRAIN_DETECT_H
#define HONE_TRAIN_DETECT_H

typedef struct hone_det_box {
    float x1, y1, x2, y2;
} hone_det_box;

/* A candidate or predicted box: class index and confidence. */
typedef struct hone_det_cand {
    hone_det_box box;
    int cls;
    float score;
} hone_det_cand;

/* A ground-truth box. cls >= 0 is an object class; HONE_DET_DONTCARE marks a KITTI DontCare
 * region (no class). HONE_DET_GT_IGNORE in flags: VOC "difficult" (neither counted nor penalised).
 */
#define HONE_DET_DONTCARE (-1)
#define HONE_DET_GT_IGNORE 1
typedef struct hone_det_gt {
    hone_det_box box;
    int cls;
    int flags;
} hone_det_gt;

/* IoU of a and b; 0 when either is empty. inclusive != 0: VOC pixel-inclusive areas (+1). */
double hone_det_iou(const hone_det_box *a, const hone_det_box *b, int inclusive);

/* ---- grid targets (detect_boxes.c) ----
 * The feature map has grid_h x grid_w cells of stride pixels; cell (gy, gx) spans
 * [gx * stride, (gx + 1) * stride) and its box offsets are measured from its anchor
 * (cx, cy) = (gx * stride + offset, gy * stride + offset) (offset 0.5 as DeepStream's DetectNet_v2
 * parser, which decodes x1 = cx - o0 * norm, x2 = cx + o2 * norm). For each class c the targets are
 * planes of
 * grid_h * grid_w floats:
 *   cov[c]           1 where an object of class c covers the cell, else 0;
 *   bbox[c * 4 + k]  k = 0..3: (cx - x1, cy - y1, x2 - cx, y2 - cy) / bbox_norm of the covering
 *                    object (0 where no object covers the cell), as DetectNet_v2 and DeepStream's
 *                    parser define them;
 *   weight[c]        the weight of the cell's 4 box losses: the coverage target times
 *                    1 / (cells the object covers) when normalise_by_area, else the coverage.
 * An object covers the cells whose geometric centres (gx * stride + stride / 2, ...) fall in its
 * coverage region: a rectangle or an ellipse
 * centred at (x1 + cov_center_x * w, y1 + cov_center_y * h) with half-axes
 * max(cov_radius_x * w / 2, min_radius) and max(cov_radius_y * h / 2, min_radius) (TAO's
 * coverage_foreground with cov_center/cov_radius/bbox_min_radius); the cell holding that centre is
 * always covered, so no object is lost. Where objects of one class overlap, the smaller one wins
 * (it is drawn last), so a small object in front of a large one keeps its cells. Ignored boxes
 * (HONE_DET_GT_IGNORE) write no targets; a DontCare region (KITTI's DontCare, COCO's iscrowd)
 * writes cov = -1 in every class plane at the cells whose centres lie in [x1, x2) x [y1, y2) and
 * that no object of that class owns: ignore cells, which the loss gives no coverage term (neither
 * positive nor negative). */
enum { HONE_DET_COV_RECT = 0, HONE_DET_COV_ELLIPSE = 1 };
typedef struct hone_det_grid_opts {
    int stride;         /* pixels per cell (16) */
    float offset;       /* cell centre within the cell (0.5) */
    float bbox_norm;    /* box offsets are divided by it (35) */
    int cov_shape;      /* HONE_DET_COV_RECT or HONE_DET_COV_ELLIPSE */
    float cov_center_x; /* 0.5 */
    float cov_center_y; /* 0.5 */
    float cov_radius_x; /* fraction of the half width (1.0: the whole box; 0.5: the central half) */
    float cov_radius_y;
    float min_radius;      /* pixels (1.0) */
    int normalise_by_area; /* weights 1 / covered cells (1) */
} hone_det_grid_opts;

void hone_det_grid_defaults(hone_det_grid_opts *o);

/* Writes the targets of n ground-truth boxes: cov and weight hold n_classes * grid_h * grid_w
 * floats, bbox 4 times as many. HONE_EINVAL for bad options, sizes, or a class out of range. */
int hone_det_encode(const hone_det_grid_opts *o, int n_classes, int grid_h, int grid_w,
                    const hone_det_gt *gts, int n, float *cov, float *bbox, float *weight);

/* Candidate boxes from predicted planes (the layout above): one per cell and class whose coverage
 * is >= cov_threshold, with that coverage as its score; boxes with x2 <= x1 or y2 <= y1 are
 * skipped. Writes at most cap candidates to out and their count to *n_out; HONE_ERANGE when more
 * than cap would be written (cap = n_classes * grid_h * grid_w always suffices). */
int hone_det_decode(const hone_det_grid_opts *o, int n_classes, int grid_h, int grid_w,
                    const float *cov, const float *bbox, float cov_threshold, hone_det_cand *out,
                    int cap, int *n_out);

/* ---- NMS and clustering (detect_nms.c) ---- */

/* Greedy NMS per class: by descending score (ties: input order), a box is kept unless a kept box
 * of its class has IoU > iou_threshold with it. Writes the kept boxes (at most n) to out, by
 * descending score, and their count to *n_out. in and out must not overlap. */
int hone_det_nms(const hone_det_cand *in, int n, float iou_threshold, hone_det_cand *out,
                 int *n_out);

/* DBSCAN over one class's candidates at a time, distance 1 - IoU, each candidate weighted by its
 * score (as TAO passes the coverage as sklearn's sample_weight): a candidate is a core point when
 * the scores of the candidates within eps of it (itself included) sum to >= min_samples. Each
 * cluster becomes one box: the score-weighted mean of its members' boxes, with confidence the sum
 * (TAO's aggregate_cov) or the max of their scores; noise is dropped, and so are clusters whose
 * confidence is below conf_threshold or whose box is lower than min_height pixels. Output is by
 * descending confidence. */
enum { HONE_DET_CONF_SUM = 0, HONE_DET_CONF_MAX = 1 };
typedef struct hone_det_cluster_opts {
    float eps;            /* 1 - IoU within which candidates are neighbours (0.3) */
    float min_samples;    /* summed score a core point needs (0.05) */
    int conf_mode;        /* HONE_DET_CONF_SUM or HONE_DET_CONF_MAX */
    float conf_threshold; /* clusters below it are dropped (0.1) */
    float min_height;     /* pixels (0: keep all) */
} hone_det_cluster_opts;

void hone_det_cluster_defaults(hone_det_cluster_opts *o);
int hone_det_cluster(const hone_det_cluster_opts *o, const hone_det_cand *in, int n,
                     hone_det_cand *out, int *n_out);

/* ---- AP and mAP (detect_map.c) ----
 * Per class: detections of all images by descending score (ties: the order they were added); each
 * is matched to the ground truth of its image and class with the highest IoU (first on ties); IoU
 * >= iou_threshold and that box not yet matched: a true positive, else a false positive (so a
 * duplicate is a false positive). A detection whose best match is an ignored ("difficult") box is
 * neither (VOC). An unmatched detection lying in a DontCare region (intersection over its own area
 * >= iou_threshold, as the KITTI devkit) is neither. Ignored boxes are not counted in the recall.
 * AP: the area under the precision-recall curve, precision made monotone from the right, summed
 * at every recall change (all-point interpolation, VOC 2010+ / KITTI). mAP: the mean AP over the
 * classes with at least one counted ground-truth box. */
typedef struct hone_det_map hone_det_map;

hone_det_map *hone_det_map_new(int n_classes, float iou_threshold, int inclusive);
void hone_det_map_free(hone_det_map *m);
/* Adds one image's ground truth and predictions (copied). HONE_EINVAL for a class out of range. */
int hone_det_map_add_image(hone_det_map *m, const hone_det_gt *gts, int n_gt,
                           const hone_det_cand *preds, int n_pred);
/* ap[n_classes] (may be NULL): each class's AP, -1 for a class without counted ground truth;
 * n_gt[n_classes] (may be NULL): the counted ground-truth boxes; *map: the mean (0 when no class
 * has ground truth). */
int hone_det_map_compute(const hone_det_map *m, double *ap, int *n_gt, double *map);

/* ---- COCO metrics (detect_coco.c) ----
 * COCO's detection evaluation (pycocotools' COCOeval, iouType "bbox"), on the same boxes as the
 * mAP above: AP averaged over IoU thresholds .50:.05:.95 and 101 recall points (0:.01:1), at most
 * 100 detections an image and class (the best scored), and that AP at IoU .50 and .75 and over
 * the ground truth of each size (area by the box, w * h: small < 32^2, medium 32^2..96^2, large >
 * 96^2, bounds inclusive as COCOeval's). Crowd regions: a ground-truth box with HONE_DET_GT_CROWD
 * (COCO's iscrowd) or HONE_DET_GT_IGNORE, and a DontCare region (a crowd region of every class),
 * are matched by intersection over the detection's area, may take any number of detections, and a
 * detection they take is neither a true nor a false positive; they are not counted in the recall.
 * As COCOeval: a detection prefers an unmatched counted box over a crowd region, the last of equal
 * IoUs, and a detection that matches nothing is ignored when its own area is outside the size
 * range. A class without counted ground truth (in the size range) is left out of the mean; -1
 * where no class has any. Images are numbered in the order they are added (COCO image ids in
 * increasing order), which settles ties of score between images as COCOeval does. */
#define HONE_DET_GT_CROWD 2
#define HONE_DET_COCO_MAX_DETS 100

typedef struct hone_det_coco_stats {
    double ap;        /* AP@[.50:.95] */
    double ap50;      /* AP at IoU .50 */
    double ap75;      /* AP at IoU .75 */
    double ap_small;  /* AP@[.50:.95] of ground truth with area < 32^2 */
    double ap_medium; /* 32^2 .. 96^2 */
    double ap_large;  /* > 96^2 */
} hone_det_coco_stats;

typedef struct hone_det_coco hone_det_coco;

hone_det_coco *hone_det_coco_new(int n_classes);
void hone_det_coco_free(hone_det_coco *c);
/* Adds one image's ground truth and predictions (copied). HONE_EINVAL for a class out of range or
 * a NaN score. */
int hone_det_coco_add_image(hone_det_coco *c, const hone_det_gt *gts, int n_gt,
                            const hone_det_cand *preds, int n_pred);
/* *out: the six figures; ap[n_classes] (may be NULL): each class's AP@[.50:.95], -1 without
 * counted ground truth. */
int hone_det_coco_compute(const hone_det_coco *c, hone_det_coco_stats *out, double *ap);

#endif
