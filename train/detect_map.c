/* detect_map.c: per-class average precision and mAP of detections over a set of images, at one
 * IoU threshold, with PASCAL VOC / KITTI all-point interpolation (matching rules in detect.h).
 * Images are added one at a time (a validation pass), then the AP is computed over all of them. */
#include "detect.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hone.h"

typedef struct map_pred {
    hone_det_cand c;
    int image;
} map_pred;

struct hone_det_map {
    int n_classes;
    float iou_threshold;
    int inclusive;
    hone_det_gt *gts; /* all images' ground truth, image by image */
    int n_gts, cap_gts;
    int *img_gt; /* image i's ground truth: gts[img_gt[i] .. img_gt[i + 1]) */
    int n_images, cap_images;
    map_pred *preds;
    int n_preds, cap_preds;
};

hone_det_map *hone_det_map_new(int n_classes, float iou_threshold, int inclusive)
{
    if (n_classes <= 0 || !(iou_threshold > 0 && iou_threshold <= 1))
        return NULL;
    hone_det_map *m = hone_xcalloc(1, sizeof *m);
    m->n_classes = n_classes;
    m->iou_threshold = iou_threshold;
    m->inclusive = inclusive;
    m->cap_images = 16;
    m->img_gt = hone_xcalloc((size_t)m->cap_images + 1, sizeof *m->img_gt);
    return m;
}

void hone_det_map_free(hone_det_map *m)
{
    if (!m)
        return;
    free(m->gts);
    free(m->img_gt);
    free(m->preds);
    free(m);
}

static int grow(int need, int cap)
{
    while (cap < need)
        cap = cap < 16 ? 16 : cap * 2;
    return cap;
}

int hone_det_map_add_image(hone_det_map *m, const hone_det_gt *gts, int n_gt,
                           const hone_det_cand *preds, int n_pred)
{
    if (!m || n_gt < 0 || n_pred < 0 || (n_gt > 0 && !gts) || (n_pred > 0 && !preds) ||
        n_gt > INT_MAX / 4 - m->n_gts || n_pred > INT_MAX / 4 - m->n_preds ||
        m->n_images >= INT_MAX / 4)
        return HONE_EINVAL;
    for (int i = 0; i < n_gt; i++)
        if (gts[i].cls < HONE_DET_DONTCARE || gts[i].cls >= m->n_classes)
            return HONE_EINVAL;
    for (int i = 0; i < n_pred; i++)
        if (preds[i].cls < 0 || preds[i].cls >= m->n_classes || isnan(preds[i].score))
            return HONE_EINVAL;
    if (m->n_gts + n_gt > m->cap_gts) {
        m->cap_gts = grow(m->n_gts + n_gt, m->cap_gts);
        m->gts = hone_xrealloc(m->gts, (size_t)m->cap_gts * sizeof *m->gts);
    }
    if (m->n_preds + n_pred > m->cap_preds) {
        m->cap_preds = grow(m->n_preds + n_pred, m->cap_preds);
        m->preds = hone_xrealloc(m->preds, (size_t)m->cap_preds * sizeof *m->preds);
    }
    if (m->n_images + 1 > m->cap_images) {
        m->cap_images = grow(m->n_images + 1, m->cap_images);
        m->img_gt = hone_xrealloc(m->img_gt, ((size_t)m->cap_images + 1) * sizeof *m->img_gt);
    }
    if (n_gt > 0)
        memcpy(m->gts + m->n_gts, gts, (size_t)n_gt * sizeof *gts);
    m->n_gts += n_gt;
    for (int i = 0; i < n_pred; i++)
        m->preds[m->n_preds + i] = (map_pred){preds[i], m->n_images};
    m->n_preds += n_pred;
    m->n_images++;
    m->img_gt[m->n_images] = m->n_gts;
    return 0;
}

typedef struct pred_order {
    float score;
    int index;
} pred_order;

static int by_score_desc(const void *pa, const void *pb)
{
    const pred_order *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* Intersection of a detection with a DontCare region over the detection's own area. */
static double overlap_of_det(const hone_det_box *d, const hone_det_box *r, int inclusive)
{
    double one = inclusive ? 1.0 : 0.0;
    double iw = fmin(d->x2, r->x2) - fmax(d->x1, r->x1) + one;
    double ih = fmin(d->y2, r->y2) - fmax(d->y1, r->y1) + one;
    double area = ((double)d->x2 - d->x1 + one) * ((double)d->y2 - d->y1 + one);
    if (iw <= 0 || ih <= 0 || area <= 0)
        return 0.0;
    return iw * ih / area;
}

/* One detection against its image's ground truth of its class: 1 true positive, 0 false
 * positive, -1 neither (an ignored box, or a DontCare region). matched: per ground-truth box. */
static int judge(const hone_det_map *m, const map_pred *p, unsigned char *matched)
{
    int lo = m->img_gt[p->image], hi = m->img_gt[p->image + 1];
    double best = 0;
    int at = -1;
    for (int g = lo; g < hi; g++) {
        if (m->gts[g].cls != p->c.cls)
            continue;
        double iou = hone_det_iou(&p->c.box, &m->gts[g].box, m->inclusive);
        if (iou > best) {
            best = iou;
            at = g;
        }
    }
    if (at >= 0 && best >= m->iou_threshold) {
        if (m->gts[at].flags & HONE_DET_GT_IGNORE)
            return -1;
        if (matched[at])
            return 0; /* a duplicate */
        matched[at] = 1;
        return 1;
    }
    for (int g = lo; g < hi; g++)
        if (m->gts[g].cls == HONE_DET_DONTCARE &&
            overlap_of_det(&p->c.box, &m->gts[g].box, m->inclusive) >= m->iou_threshold)
            return -1;
    return 0;
}

int hone_det_map_compute(const hone_det_map *m, double *ap, int *n_gt, double *map)
{
    if (!m || !map)
        return HONE_EINVAL;
    unsigned char *matched = hone_xcalloc((size_t)(m->n_gts > 0 ? m->n_gts : 1), 1);
    pred_order *ord = hone_xmalloc((size_t)(m->n_preds > 0 ? m->n_preds : 1) * sizeof *ord);
    /* precision at each true positive, in score order; made monotone from the right below */
    double *prec = hone_xmalloc((size_t)(m->n_preds > 0 ? m->n_preds : 1) * sizeof *prec);
    double sum = 0;
    int counted = 0;
    for (int c = 0; c < m->n_classes; c++) {
        int npos = 0;
        for (int g = 0; g < m->n_gts; g++)
            if (m->gts[g].cls == c && !(m->gts[g].flags & HONE_DET_GT_IGNORE))
                npos++;
        if (n_gt)
            n_gt[c] = npos;
        if (npos == 0) {
            if (ap)
                ap[c] = -1;
            continue;
        }
        int k = 0;
        for (int i = 0; i < m->n_preds; i++)
            if (m->preds[i].c.cls == c)
                ord[k++] = (pred_order){m->preds[i].c.score, i};
        qsort(ord, (size_t)k, sizeof *ord, by_score_desc);
        int tp = 0, fp = 0, n_tp = 0;
        for (int i = 0; i < k; i++) {
            int j = judge(m, &m->preds[ord[i].index], matched);
            if (j < 0)
                continue;
            if (j == 0) {
                fp++;
                continue;
            }
            tp++;
            prec[n_tp++] = (double)tp / (tp + fp);
        }
        /* all-point interpolation: each true positive raises the recall by 1 / npos, at the best
         * precision reached at that recall or beyond (VOC's mpre made monotone from the right) */
        double area = 0, best = 0;
        for (int i = n_tp - 1; i >= 0; i--) {
            best = prec[i] > best ? prec[i] : best;
            area += best;
        }
        double a = area / npos;
        if (ap)
            ap[c] = a;
        sum += a;
        counted++;
    }
    *map = counted ? sum / counted : 0.0;
    free(matched);
    free(ord);
    free(prec);
    return 0;
}
