/* detect_coco.c: COCO's detection metrics (AP@[.50:.95], AP50, AP75, AP by size) over a set of
 * images, computed as pycocotools' COCOeval computes them for iouType "bbox" (the rules are in
 * detect.h), so that the figures a COCO user reads elsewhere mean the same here. Pure: boxes in,
 * figures out; images are added one at a time, then everything is computed at once. */
#include "detect.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hone.h"

#define N_IOU 10
#define N_REC 101
#define N_AREA 4

typedef struct coco_pred {
    hone_det_cand c;
    int image;
} coco_pred;

struct hone_det_coco {
    int n_classes;
    hone_det_gt *gts; /* all images' ground truth, image by image */
    int n_gts, cap_gts;
    int *img_gt; /* image i's ground truth: gts[img_gt[i] .. img_gt[i + 1]) */
    coco_pred *preds;
    int *img_pred; /* image i's predictions, likewise */
    int n_preds, cap_preds;
    int n_images, cap_images;
};

/* COCOeval's area ranges: all, small, medium, large (bounds inclusive) */
static const double area_lo[N_AREA] = {0, 0, 32.0 * 32, 96.0 * 96};
static const double area_hi[N_AREA] = {1e10, 32.0 * 32, 96.0 * 96, 1e10};

hone_det_coco *hone_det_coco_new(int n_classes)
{
    if (n_classes <= 0)
        return NULL;
    hone_det_coco *c = hone_xcalloc(1, sizeof *c);
    c->n_classes = n_classes;
    c->cap_images = 16;
    c->img_gt = hone_xcalloc((size_t)c->cap_images + 1, sizeof *c->img_gt);
    c->img_pred = hone_xcalloc((size_t)c->cap_images + 1, sizeof *c->img_pred);
    return c;
}

void hone_det_coco_free(hone_det_coco *c)
{
    if (!c)
        return;
    free(c->gts);
    free(c->img_gt);
    free(c->preds);
    free(c->img_pred);
    free(c);
}

static int grow(int need, int cap)
{
    while (cap < need)
        cap = cap < 16 ? 16 : cap * 2;
    return cap;
}

int hone_det_coco_add_image(hone_det_coco *c, const hone_det_gt *gts, int n_gt,
                            const hone_det_cand *preds, int n_pred)
{
    if (!c || n_gt < 0 || n_pred < 0 || (n_gt > 0 && !gts) || (n_pred > 0 && !preds) ||
        n_gt > INT_MAX / 4 - c->n_gts || n_pred > INT_MAX / 4 - c->n_preds ||
        c->n_images >= INT_MAX / 4)
        return HONE_EINVAL;
    for (int i = 0; i < n_gt; i++)
        if (gts[i].cls < HONE_DET_DONTCARE || gts[i].cls >= c->n_classes)
            return HONE_EINVAL;
    for (int i = 0; i < n_pred; i++)
        if (preds[i].cls < 0 || preds[i].cls >= c->n_classes || isnan(preds[i].score))
            return HONE_EINVAL;
    if (c->n_gts + n_gt > c->cap_gts) {
        c->cap_gts = grow(c->n_gts + n_gt, c->cap_gts);
        c->gts = hone_xrealloc(c->gts, (size_t)c->cap_gts * sizeof *c->gts);
    }
    if (c->n_preds + n_pred > c->cap_preds) {
        c->cap_preds = grow(c->n_preds + n_pred, c->cap_preds);
        c->preds = hone_xrealloc(c->preds, (size_t)c->cap_preds * sizeof *c->preds);
    }
    if (c->n_images + 1 > c->cap_images) {
        c->cap_images = grow(c->n_images + 1, c->cap_images);
        c->img_gt = hone_xrealloc(c->img_gt, ((size_t)c->cap_images + 1) * sizeof *c->img_gt);
        c->img_pred = hone_xrealloc(c->img_pred, ((size_t)c->cap_images + 1) * sizeof *c->img_pred);
    }
    if (n_gt > 0)
        memcpy(c->gts + c->n_gts, gts, (size_t)n_gt * sizeof *gts);
    c->n_gts += n_gt;
    for (int i = 0; i < n_pred; i++)
        c->preds[c->n_preds + i] = (coco_pred){preds[i], c->n_images};
    c->n_preds += n_pred;
    c->n_images++;
    c->img_gt[c->n_images] = c->n_gts;
    c->img_pred[c->n_images] = c->n_preds;
    return 0;
}

static double box_area(const hone_det_box *b)
{
    return ((double)b->x2 - b->x1) * ((double)b->y2 - b->y1);
}

/* pycocotools' bbIou: boxes as x, y, w, h in doubles; a crowd region's union is the detection's
 * own area. */
static double coco_iou(const hone_det_box *d, const hone_det_box *g, int crowd)
{
    double dx = d->x1, dy = d->y1, dw = (double)d->x2 - d->x1, dh = (double)d->y2 - d->y1;
    double gx = g->x1, gy = g->y1, gw = (double)g->x2 - g->x1, gh = (double)g->y2 - g->y1;
    double w = fmin(dx + dw, gx + gw) - fmax(dx, gx);
    if (w <= 0)
        return 0;
    double h = fmin(dy + dh, gy + gh) - fmax(dy, gy);
    if (h <= 0)
        return 0;
    double i = w * h, u = crowd ? dw * dh : dw * dh + gw * gh - i;
    return i / u;
}

typedef struct ord {
    float score;
    int index;
} ord;

/* descending score, ties in the order given (numpy's stable mergesort on -score) */
static int by_score_desc(const void *pa, const void *pb)
{
    const ord *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* One image's ground truth of a class (crowd and DontCare regions included), for one area range:
 * counted boxes first, then the ignored ones, each in their order (COCOeval's stable sort). */
typedef struct img_gt {
    const hone_det_box *box;
    unsigned char crowd, ignore;
} img_gt;

/* The detections of all images for one class and area range, each image's best
 * HONE_DET_COCO_MAX_DETS by score in image order; per IoU threshold whether each was matched and
 * whether it is ignored. */
typedef struct evals {
    ord *det;                         /* score, and the row in matched/ignored */
    unsigned char *matched, *ignored; /* [N_IOU][cap] */
    int n, cap, npig;
    int any; /* an image with a ground-truth box or a detection of this class */
} evals;

static void evals_reserve(evals *e, int more)
{
    if (e->n + more <= e->cap)
        return;
    int cap = grow(e->n + more, e->cap);
    e->det = hone_xrealloc(e->det, (size_t)cap * sizeof *e->det);
    unsigned char *m = hone_xcalloc((size_t)N_IOU * cap, 1),
                  *g = hone_xcalloc((size_t)N_IOU * cap, 1);
    for (int t = 0; t < N_IOU && e->n > 0; t++) {
        memcpy(m + (size_t)t * cap, e->matched + (size_t)t * e->cap, (size_t)e->n);
        memcpy(g + (size_t)t * cap, e->ignored + (size_t)t * e->cap, (size_t)e->n);
    }
    free(e->matched);
    free(e->ignored);
    e->matched = m;
    e->ignored = g;
    e->cap = cap;
}

/* COCOeval.evaluateImg for image `img`, class `cls`, area range `a`, appended to e. dets: the
 * image's detections of the class, best first, at most HONE_DET_COCO_MAX_DETS. */
static void evaluate_image(const hone_det_coco *c, int img, int cls, int a, const ord *dets, int nd,
                           img_gt *g, double *ious, unsigned char *gtm, evals *e, const double *thr)
{
    int ng = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = c->img_gt[img]; i < c->img_gt[img + 1]; i++) {
            const hone_det_gt *x = &c->gts[i];
            if (x->cls != cls && x->cls != HONE_DET_DONTCARE)
                continue;
            int crowd = x->cls == HONE_DET_DONTCARE ||
                        (x->flags & (HONE_DET_GT_CROWD | HONE_DET_GT_IGNORE)) != 0;
            double ar = box_area(&x->box);
            int ignore = crowd || ar < area_lo[a] || ar > area_hi[a];
            if (ignore != pass)
                continue;
            g[ng++] = (img_gt){&x->box, (unsigned char)crowd, (unsigned char)ignore};
        }
    if (ng == 0 && nd == 0)
        return;
    e->any = 1;
    for (int j = 0; j < ng; j++)
        e->npig += !g[j].ignore;
    if (nd == 0)
        return;
    for (int d = 0; d < nd; d++)
        for (int j = 0; j < ng; j++)
            ious[(size_t)d * ng + j] =
                coco_iou(&c->preds[dets[d].index].c.box, g[j].box, g[j].crowd);
    evals_reserve(e, nd);
    for (int t = 0; t < N_IOU; t++) {
        memset(gtm, 0, (size_t)(ng > 0 ? ng : 1));
        unsigned char *dm = e->matched + (size_t)t * e->cap + e->n;
        unsigned char *di = e->ignored + (size_t)t * e->cap + e->n;
        for (int d = 0; d < nd; d++) {
            double iou = fmin(thr[t], 1 - 1e-10);
            int m = -1;
            for (int j = 0; j < ng; j++) {
                if (gtm[j] && !g[j].crowd)
                    continue;
                if (m > -1 && !g[m].ignore && g[j].ignore)
                    break;
                if (ious[(size_t)d * ng + j] < iou)
                    continue;
                iou = ious[(size_t)d * ng + j];
                m = j;
            }
            dm[d] = m >= 0;
            di[d] = m >= 0 ? g[m].ignore : 0;
            if (m >= 0)
                gtm[m] = 1;
            if (m < 0) {
                double ar = box_area(&c->preds[dets[d].index].c.box);
                di[d] = ar < area_lo[a] || ar > area_hi[a];
            }
        }
    }
    for (int d = 0; d < nd; d++)
        e->det[e->n + d] = (ord){dets[d].score, e->n + d};
    e->n += nd;
}

/* COCOeval.accumulate for one class and area range: the 101-point interpolated precision at each
 * IoU threshold, summed into *sum (N_IOU * N_REC values); 0 when it has no counted ground truth
 * (the class is then left out), else 1. */
static int accumulate(evals *e, const double *rec, double *sum, double *per_iou)
{
    if (!e->any || e->npig == 0)
        return 0;
    if (e->n == 0) /* ground truth and no detection: precision 0 at every recall */
        return 1;
    qsort(e->det, (size_t)e->n, sizeof *e->det, by_score_desc);
    double *pr = hone_xmalloc((size_t)e->n * sizeof *pr);
    double *rc = hone_xmalloc((size_t)e->n * sizeof *rc);
    for (int t = 0; t < N_IOU; t++) {
        const unsigned char *dm = e->matched + (size_t)t * e->cap;
        const unsigned char *di = e->ignored + (size_t)t * e->cap;
        double tp = 0, fp = 0;
        for (int i = 0; i < e->n; i++) {
            int row = e->det[i].index;
            if (!di[row]) {
                tp += dm[row];
                fp += !dm[row];
            }
            rc[i] = tp / e->npig;
            pr[i] = tp / (fp + tp + DBL_EPSILON);
        }
        for (int i = e->n - 1; i > 0; i--)
            if (pr[i] > pr[i - 1])
                pr[i - 1] = pr[i];
        double s = 0;
        int i = 0;
        for (int r = 0; r < N_REC; r++) {
            while (i < e->n && rc[i] < rec[r]) /* numpy's searchsorted, side left */
                i++;
            s += i < e->n ? pr[i] : 0.0;
        }
        *sum += s;
        if (per_iou)
            per_iou[t] += s / N_REC;
    }
    free(pr);
    free(rc);
    return 1;
}

int hone_det_coco_compute(const hone_det_coco *c, hone_det_coco_stats *out, double *ap)
{
    if (!c || !out)
        return HONE_EINVAL;
    /* numpy.linspace's values, which COCOeval compares with == and searchsorted */
    double thr[N_IOU], rec[N_REC];
    double step = (0.95 - 0.5) / (N_IOU - 1);
    for (int t = 0; t < N_IOU; t++)
        thr[t] = t == N_IOU - 1 ? 0.95 : t * step + 0.5;
    for (int r = 0; r < N_REC; r++)
        rec[r] = r == N_REC - 1 ? 1.0 : r * (1.0 / (N_REC - 1));
    int max_gt = 0, max_pred = 0;
    for (int i = 0; i < c->n_images; i++) {
        int ng = c->img_gt[i + 1] - c->img_gt[i], np = c->img_pred[i + 1] - c->img_pred[i];
        max_gt = ng > max_gt ? ng : max_gt;
        max_pred = np > max_pred ? np : max_pred;
    }
    int max_d = max_pred < HONE_DET_COCO_MAX_DETS ? max_pred : HONE_DET_COCO_MAX_DETS;
    img_gt *g = hone_xmalloc((size_t)(max_gt > 0 ? max_gt : 1) * sizeof *g);
    ord *dets = hone_xmalloc((size_t)(max_pred > 0 ? max_pred : 1) * sizeof *dets);
    double *ious =
        hone_xmalloc((size_t)(max_gt > 0 ? max_gt : 1) * (max_d > 0 ? max_d : 1) * sizeof *ious);
    unsigned char *gtm = hone_xmalloc((size_t)(max_gt > 0 ? max_gt : 1));
    double sum[N_AREA] = {0}, iou_sum[N_IOU] = {0};
    int counted[N_AREA] = {0};
    for (int k = 0; k < c->n_classes; k++) {
        if (ap)
            ap[k] = -1;
        for (int a = 0; a < N_AREA; a++) {
            evals e = {0};
            for (int img = 0; img < c->n_images; img++) {
                int nd = 0;
                for (int i = c->img_pred[img]; i < c->img_pred[img + 1]; i++)
                    if (c->preds[i].c.cls == k)
                        dets[nd++] = (ord){c->preds[i].c.score, i};
                if (nd > 1)
                    qsort(dets, (size_t)nd, sizeof *dets, by_score_desc);
                if (nd > HONE_DET_COCO_MAX_DETS)
                    nd = HONE_DET_COCO_MAX_DETS;
                evaluate_image(c, img, k, a, dets, nd, g, ious, gtm, &e, thr);
            }
            double s = 0;
            if (accumulate(&e, rec, &s, a == 0 ? iou_sum : NULL)) {
                sum[a] += s;
                counted[a]++;
                if (a == 0 && ap)
                    ap[k] = s / (N_IOU * N_REC);
            }
            free(e.det);
            free(e.matched);
            free(e.ignored);
        }
    }
    /* COCOeval's means are over every class, threshold and recall point with a value */
    double v[N_AREA];
    for (int a = 0; a < N_AREA; a++)
        v[a] = counted[a] ? sum[a] / ((double)counted[a] * N_IOU * N_REC) : -1;
    out->ap = v[0];
    out->ap_small = v[1];
    out->ap_medium = v[2];
    out->ap_large = v[3];
    out->ap50 = counted[0] ? iou_sum[0] / counted[0] : -1;
    out->ap75 = counted[0] ? iou_sum[5] / counted[0] : -1;
    free(g);
    free(dets);
    free(ious);
    free(gtm);
    return 0;
}
