/* train/detect_train.h (private): what the trainer (loop.c) adds for detectnet_v2: the parts' grid
 * targets on the device, the batch's targets gathered beside its images and the head's loss in the
 * training step, and the evaluation of a part (loss, and mAP at IoU 0.5 of the decoded, clustered
 * boxes against the part's ground truth). loop.c calls these where a classifier would use
 * softmax_xent; nothing here touches checkpoints or reporting. */
#ifndef HONE_TRAIN_DETECT_TRAIN_H
#define HONE_TRAIN_DETECT_TRAIN_H

#include "dataset.h"
#include "detect.h"
#include "net.h"

typedef struct detect_train detect_train;

/* For a kitti dataset d (d->detect) and its network (borrowed; its coverage biases are set to a
 * low prior here, so the untrained head predicts little coverage). batch: the trainer's. */
int detect_train_new(hone_kctx *k, const hone_train_spec *s, const dataset *d, hone_net *net,
                     int batch, detect_train **out, char *err, size_t errlen);
void detect_train_free(detect_train *dt);

/* Whether the spec moves boxes (augment.flip, translate, zoom_min / zoom_max not 1): then the
 * trainer's augmentation is affine (hone_kaugment.affine) and the training targets are encoded
 * each step from the moved boxes instead of gathered from those encoded at load time. */
int detect_train_spatial(const hone_train_spec *s);

/* In the training step (captured), before the batch's images are gathered: the targets of the
 * batch's rows (perm, from base_dev, as its images will be): gathered from the part's encoded
 * targets, or, with spatial augmentation, encoded from its boxes moved by aug's draw of
 * (seed, *counter), the one the images' gather then makes (it reads the counter, never advances
 * it). */
void detect_train_targets(detect_train *dt, const int32_t *perm, const int32_t *base_dev, int n,
                          const hone_kaugment *aug, const uint64_t *counter);

/* In the training step: adds the loss of pred [n, 5 * classes, grid] against the targets of
 * detect_train_targets to loss_sum[0], writing its gradient to dpred. */
void detect_train_step(detect_train *dt, const float *pred, int n, float *dpred, float *loss_sum);

/* Part p of d (its pixels x_dev on the device) in inference mode: *loss the mean loss an image,
 * *map the mAP at IoU 0.5 of its boxes, decoded (detect.cov_threshold) and clustered
 * (detect.cluster: dbscan with detect.eps and detect.min_samples, or NMS at detect.nms_iou).
 * NaN for both when p is empty. xb: the trainer's batch buffer, norm its normalisation.
 * ap[classes], n_gt[classes] (may be NULL): hone_det_map_compute's per-class AP and counts.
 * coco (may be NULL): the same boxes' COCO metrics (hone_det_coco_compute), DontCare regions as
 * crowd regions, areas in the part's (the model's input) pixels; all -1 when p is empty. */
int detect_train_evaluate(detect_train *dt, const data_part *p, const uint8_t *x_dev,
                          const float *norm, float *xb, double *loss, double *map, double *ap,
                          int *n_gt, hone_det_coco_stats *coco);

/* The boxes of n images (x_dev: uint8 HWC on the device), inference mode: boxes[i] (malloc'd, the
 * caller frees) holds counts[i] of them, as detect_train_boxes gives. */
int detect_train_predict(detect_train *dt, const uint8_t *x_dev, int n, const float *norm,
                         float *xb, hone_det_cand **boxes, int *counts);

/* The boxes of one image's head output (host, [5 * classes, grid]): decoded and clustered as
 * above into out (cap: classes * grid cells), their count in *n. */
int detect_train_boxes(const detect_train *dt, const float *pred, hone_det_cand *out, int cap,
                       int *n);

#endif
