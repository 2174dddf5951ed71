/* train/detect_train.c: detectnet_v2 inside the trainer (detect_train.h): the grid targets of the
 * three parts uploaded once, a batch's targets gathered with the same shuffled rows as its images
 * or, with spatial augmentation, encoded on the device from the training part's boxes moved as
 * its images are (hone_k_detect_targets), the head's loss (hone_k_detect_loss), and evaluation:
 * the head's output decoded into boxes, clustered (DBSCAN or NMS, detect.h) and scored by mAP at
 * IoU 0.5 against the part's boxes. Never touches the pixels' path or the optimiser. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "detect_train.h"

/* the packed file's boxes go to the device as they are: hone_kbox is hone_data_box's layout */
_Static_assert(sizeof(hone_kbox) == sizeof(hone_data_box) &&
                   offsetof(hone_kbox, cls) == offsetof(hone_data_box, cls) &&
                   offsetof(hone_kbox, x1) == offsetof(hone_data_box, x1) &&
                   offsetof(hone_kbox, y2) == offsetof(hone_data_box, y2),
               "hone_kbox and hone_data_box differ");

/* The coverage logits' initial bias: sigmoid(-4) = 0.018, so an untrained head predicts almost no
 * coverage instead of 0.5 everywhere (the prior of focal-loss detectors, Lin et al. 2017). */
#define DETECT_COV_PRIOR (-2.0f)

struct detect_train {
    hone_kctx *k;
    const hone_train_spec *spec; /* borrowed */
    const dataset *d;            /* borrowed */
    hone_net *net;               /* borrowed */
    int classes, gh, gw, batch;
    int cov_loss; /* hone_kcov_loss of loss.cov_loss */
    size_t row;   /* target floats an image: 6 * classes * gh * gw */
    float *tg[3]; /* device: train, val, test targets */
    /* spatial augmentation (detect_train_spatial): the training part's boxes and their per-image
     * starts on the device, and the grid as hone_k_detect_targets takes it; else NULL */
    hone_kbox *boxes;
    uint32_t *box_start;
    hone_kdet_grid kgrid;
    float *tb;   /* device: the batch's targets */
    float *acc;  /* device: the evaluation's loss sum */
    float *host; /* host: a batch of head outputs */
    float *cov;  /* host: one image's coverage after the sigmoid */
    hone_det_cand *cand, *kept;
    hone_det_gt *gts;
    size_t gts_cap;
    hone_det_grid_opts grid;
};

int detect_train_new(hone_kctx *k, const hone_train_spec *s, const dataset *d, hone_net *net,
                     int batch, detect_train **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!d->detect || d->grid_h < 1 || d->grid_w < 1) {
        snprintf(err, errlen, "data.format: detectnet_v2 trains on a kitti or coco dataset");
        return HONE_EINVAL;
    }
    const layer *head = &net->layers[net->nlayers - 1];
    if (head->kind != L_CONV || head->oc != 5 * d->classes || head->oh != d->grid_h ||
        head->ow != d->grid_w) {
        snprintf(err, errlen, "network: the head's output is not %d x %d x %d", 5 * d->classes,
                 d->grid_h, d->grid_w);
        return HONE_EINVAL;
    }
    detect_train *dt = hone_xcalloc(1, sizeof(*dt));
    dt->k = k;
    dt->spec = s;
    dt->d = d;
    dt->net = net;
    dt->classes = d->classes;
    dt->gh = d->grid_h;
    dt->gw = d->grid_w;
    dt->batch = batch;
    dt->row = (size_t)6 * d->classes * d->grid_h * d->grid_w;
    const data_part *parts[3] = {&d->train, &d->val, &d->test};
    for (int i = 0; i < 3; i++) {
        size_t bytes = sizeof(float) * dt->row * (size_t)parts[i]->n;
        dt->tg[i] = hone_k_alloc(k, bytes ? bytes : 4);
        if (bytes)
            hone_k_upload(k, dt->tg[i], parts[i]->targets, bytes);
    }
    if (detect_train_spatial(s)) {
        const data_part *p = &d->train;
        size_t nb = p->box_start ? p->box_start[p->n] : 0;
        dt->boxes = hone_k_alloc(k, sizeof(hone_kbox) * (nb ? nb : 1));
        if (nb)
            hone_k_upload(k, dt->boxes, p->boxes, sizeof(hone_kbox) * nb);
        dt->box_start = hone_k_alloc(k, sizeof(uint32_t) * ((size_t)p->n + 1));
        if (p->box_start)
            hone_k_upload(k, dt->box_start, p->box_start, sizeof(uint32_t) * ((size_t)p->n + 1));
        else
            hone_k_fill(k, (float *)dt->box_start, 0.0f, (size_t)p->n + 1); /* no boxes at all */
    }
    dt->tb = hone_k_alloc(k, sizeof(float) * dt->row * (size_t)batch);
    dt->acc = hone_k_alloc(k, sizeof(float));
    size_t cells = (size_t)d->classes * d->grid_h * d->grid_w;
    dt->host = hone_xmalloc(sizeof(float) * 5 * cells * (size_t)batch);
    dt->cov = hone_xmalloc(sizeof(float) * cells);
    dt->cand = hone_xmalloc(sizeof(hone_det_cand) * cells);
    dt->kept = hone_xmalloc(sizeof(hone_det_cand) * cells);
    hone_det_grid_defaults(&dt->grid);
    dt->grid.stride = s->detect.stride;
    dt->cov_loss = !strcmp(s->loss.cov_loss, "focal") ? HONE_KCOV_FOCAL
                   : !strcmp(s->loss.cov_loss, "bce") ? HONE_KCOV_BCE
                                                      : HONE_KCOV_L2;
    dt->grid.bbox_norm = (float)s->detect.bbox_norm;
    const hone_det_grid_opts *o = &dt->grid;
    dt->kgrid = (hone_kdet_grid){.stride = o->stride,
                                 .offset = o->offset,
                                 .bbox_norm = o->bbox_norm,
                                 .cov_shape = o->cov_shape == HONE_DET_COV_ELLIPSE,
                                 .cov_center_x = o->cov_center_x,
                                 .cov_center_y = o->cov_center_y,
                                 .cov_radius_x = o->cov_radius_x,
                                 .cov_radius_y = o->cov_radius_y,
                                 .min_radius = o->min_radius,
                                 .normalise_by_area = o->normalise_by_area,
                                 .classes = d->classes,
                                 .grid_h = d->grid_h,
                                 .grid_w = d->grid_w};
    float *prior = hone_xmalloc(sizeof(float) * (size_t)d->classes);
    for (int c = 0; c < d->classes; c++)
        prior[c] = DETECT_COV_PRIOR;
    hone_k_upload(k, net->params + head->b_off, prior, sizeof(float) * (size_t)d->classes);
    free(prior);
    *out = dt;
    return hone_k_sync(k);
}

void detect_train_free(detect_train *dt)
{
    if (!dt)
        return;
    for (int i = 0; i < 3; i++)
        hone_k_free(dt->k, dt->tg[i]);
    hone_k_free(dt->k, dt->boxes);
    hone_k_free(dt->k, dt->box_start);
    hone_k_free(dt->k, dt->tb);
    hone_k_free(dt->k, dt->acc);
    free(dt->host);
    free(dt->cov);
    free(dt->cand);
    free(dt->kept);
    free(dt->gts);
    free(dt);
}

int detect_train_spatial(const hone_train_spec *s)
{
    return s->augment.flip || s->augment.translate > 0 || s->augment.zoom_min != 1 ||
           s->augment.zoom_max != 1;
}

void detect_train_targets(detect_train *dt, const int32_t *perm, const int32_t *base_dev, int n,
                          const hone_kaugment *aug, const uint64_t *counter)
{
    if (dt->boxes)
        hone_k_detect_targets(dt->k, dt->boxes, dt->box_start, perm, base_dev, 0, n, dt->d->h,
                              dt->d->w, &dt->kgrid, aug, counter, dt->tb);
    else
        hone_k_gather_rows(dt->k, dt->tg[0], NULL, perm, base_dev, 0, n, (int)dt->row, dt->tb,
                           NULL);
}

void detect_train_step(detect_train *dt, const float *pred, int n, float *dpred, float *loss_sum)
{
    const hone_train_spec *s = dt->spec;
    hone_k_detect_loss(dt->k, pred, dt->tb, n, dt->classes, dt->gh * dt->gw,
                       (float)s->loss.cov_weight, (float)s->loss.cov_background_weight,
                       (float)s->loss.bbox_weight, dt->cov_loss, (float)s->loss.focal_gamma, dpred,
                       loss_sum);
}

int detect_train_boxes(const detect_train *dt, const float *pred, hone_det_cand *out, int cap,
                       int *n)
{
    const hone_train_spec *s = dt->spec;
    size_t cells = (size_t)dt->classes * dt->gh * dt->gw;
    for (size_t i = 0; i < cells; i++)
        dt->cov[i] = 1.0f / (1.0f + expf(-pred[i]));
    int nc = 0;
    int rc = hone_det_decode(&dt->grid, dt->classes, dt->gh, dt->gw, dt->cov, pred + cells,
                             (float)s->detect.cov_threshold, dt->cand, (int)cells, &nc);
    if (rc < 0)
        return rc;
    if (nc > cap)
        nc = cap;
    if (!strcmp(s->detect.cluster, "nms"))
        return hone_det_nms(dt->cand, nc, (float)s->detect.nms_iou, out, n);
    hone_det_cluster_opts co;
    hone_det_cluster_defaults(&co);
    co.eps = (float)s->detect.eps;
    co.conf_mode = strcmp(s->detect.confidence, "max_cov") ? HONE_DET_CONF_SUM : HONE_DET_CONF_MAX;
    co.min_samples = (float)s->detect.min_samples;
    return hone_det_cluster(&co, dt->cand, nc, out, n);
}

/* Image img's ground truth (gts, packed pixels) and detections added to the COCO metrics in the
 * image's own pixels, where COCO's small/medium/large cut-offs are (IoU is the same at any scale of
 * an axis; areas are not): both scaled by the image's size over the packed w x h. A COCO crowd
 * region keeps its class (a crowd region of that class only, as pycocotools); KITTI's DontCare
 * stays a region of every class. Detections are clamped to the image first, as --infer writes
 * them in coco_results.json, so these figures are pycocotools' on that file. gts and preds are
 * changed in place. */
static int coco_add(hone_det_coco *cm, const data_part *p, int img, int w, int h, hone_det_gt *gts,
                    int ng, hone_det_cand *preds, int np)
{
    double sx = p->src_wh ? (double)p->src_wh[2 * img] / w : 1.0;
    double sy = p->src_wh ? (double)p->src_wh[2 * img + 1] / h : 1.0;
    for (int q = 0; q < ng; q++) {
        hone_det_box *b = &gts[q].box;
        *b = (hone_det_box){(float)(b->x1 * sx), (float)(b->y1 * sy), (float)(b->x2 * sx),
                            (float)(b->y2 * sy)};
        int32_t crowd = p->crowd ? p->crowd[p->box_start[img] + (uint32_t)q] : -1;
        if (crowd >= 0)
            gts[q] = (hone_det_gt){*b, crowd, HONE_DET_GT_CROWD};
    }
    int kept = 0; /* clamped to the image, as --infer writes them; one wholly outside dropped */
    for (int q = 0; q < np; q++) {
        hone_det_box *b = &preds[q].box;
        double x1 = fmin(fmax(b->x1, 0), w) * sx, y1 = fmin(fmax(b->y1, 0), h) * sy;
        double x2 = fmin(fmax(b->x2, 0), w) * sx, y2 = fmin(fmax(b->y2, 0), h) * sy;
        if (!(x2 > x1 && y2 > y1))
            continue;
        preds[kept] = preds[q];
        preds[kept++].box = (hone_det_box){(float)x1, (float)y1, (float)x2, (float)y2};
    }
    return hone_det_coco_add_image(cm, gts, ng, preds, kept);
}

int detect_train_evaluate(detect_train *dt, const data_part *p, const uint8_t *x_dev,
                          const float *norm, float *xb, double *loss, double *map, double *ap,
                          int *n_gt, hone_det_coco_stats *coco)
{
    if (coco)
        *coco = (hone_det_coco_stats){-1, -1, -1, -1, -1, -1};
    if (p->n == 0) {
        *loss = *map = NAN;
        return HONE_OK;
    }
    hone_kctx *k = dt->k;
    const dataset *d = dt->d;
    const hone_train_spec *s = dt->spec;
    const float *tg = p == &d->train ? dt->tg[0] : p == &d->val ? dt->tg[1] : dt->tg[2];
    size_t cells = (size_t)dt->classes * dt->gh * dt->gw, out_row = 5 * cells;
    hone_det_map *m = hone_det_map_new(dt->classes, 0.5f, 0);
    hone_det_coco *cm = coco ? hone_det_coco_new(dt->classes) : NULL;
    int rc = hone_k_fill(k, dt->acc, 0.0f, 1);
    for (int i = 0; i < p->n && rc == 0; i += dt->batch) {
        int b = p->n - i < dt->batch ? p->n - i : dt->batch;
        rc = hone_k_gather_images(k, x_dev, NULL, NULL, NULL, i, b, d->c, d->h, d->w, norm,
                                  norm + d->c, NULL, NULL, xb, NULL);
        const float *pred = net_forward(dt->net, xb, b, 0);
        if (rc == 0)
            rc =
                hone_k_detect_loss(k, pred, tg + dt->row * (size_t)i, b, dt->classes,
                                   dt->gh * dt->gw, (float)s->loss.cov_weight,
                                   (float)s->loss.cov_background_weight, (float)s->loss.bbox_weight,
                                   dt->cov_loss, (float)s->loss.focal_gamma, NULL, dt->acc);
        if (rc == 0)
            rc = hone_k_sync(k);
        if (rc == 0)
            rc = hone_k_download(k, dt->host, pred, sizeof(float) * out_row * (size_t)b);
        for (int j = 0; j < b && rc == 0; j++) {
            int img = i + j, nk = 0;
            rc = detect_train_boxes(dt, dt->host + out_row * (size_t)j, dt->kept, (int)cells, &nk);
            uint32_t b0 = p->box_start[img], nb = p->box_start[img + 1] - b0;
            if (nb > dt->gts_cap) {
                dt->gts_cap = nb;
                dt->gts = hone_xrealloc(dt->gts, sizeof(hone_det_gt) * nb);
            }
            for (uint32_t q = 0; q < nb; q++) {
                const hone_data_box *x = &p->boxes[b0 + q];
                dt->gts[q] =
                    (hone_det_gt){{x->x1, x->y1, x->x2, x->y2},
                                  x->cls == HONE_DATA_DONTCARE ? HONE_DET_DONTCARE : x->cls,
                                  0};
            }
            if (rc == 0)
                rc = hone_det_map_add_image(m, dt->gts, (int)nb, dt->kept, nk);
            if (rc == 0 && cm)
                rc = coco_add(cm, p, img, d->w, d->h, dt->gts, (int)nb, dt->kept, nk);
        }
    }
    float sum = 0;
    if (rc == 0)
        rc = hone_k_download(k, &sum, dt->acc, sizeof(float));
    *loss = sum / p->n;
    if (rc == 0)
        rc = hone_det_map_compute(m, ap, n_gt, map);
    if (rc == 0 && cm)
        rc = hone_det_coco_compute(cm, coco, NULL);
    hone_det_map_free(m);
    hone_det_coco_free(cm);
    return rc;
}

int detect_train_predict(detect_train *dt, const uint8_t *x_dev, int n, const float *norm,
                         float *xb, hone_det_cand **boxes, int *counts)
{
    const dataset *d = dt->d;
    size_t cells = (size_t)dt->classes * dt->gh * dt->gw, out_row = 5 * cells;
    int rc = HONE_OK;
    for (int i = 0; i < n; i++)
        boxes[i] = NULL, counts[i] = 0;
    for (int i = 0; i < n && rc == 0; i += dt->batch) {
        int b = n - i < dt->batch ? n - i : dt->batch;
        rc = hone_k_gather_images(dt->k, x_dev, NULL, NULL, NULL, i, b, d->c, d->h, d->w, norm,
                                  norm + d->c, NULL, NULL, xb, NULL);
        const float *pred = net_forward(dt->net, xb, b, 0);
        if (rc == 0)
            rc = hone_k_sync(dt->k);
        if (rc == 0)
            rc = hone_k_download(dt->k, dt->host, pred, sizeof(float) * out_row * (size_t)b);
        for (int j = 0; j < b && rc == 0; j++) {
            boxes[i + j] = hone_xmalloc(sizeof(hone_det_cand) * cells);
            rc = detect_train_boxes(dt, dt->host + out_row * (size_t)j, boxes[i + j], (int)cells,
                                    &counts[i + j]);
        }
    }
    return rc;
}
