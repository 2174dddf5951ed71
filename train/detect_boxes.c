/* detect_boxes.c: IoU and the DetectNet_v2 grid targets: ground-truth boxes encoded as per-cell
 * coverage, box offsets and loss weights, and predicted planes decoded back into candidate boxes.
 * Layouts and conventions are documented in detect.h; nothing here allocates. */
#include "detect.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hone.h"

double hone_det_iou(const hone_det_box *a, const hone_det_box *b, int inclusive)
{
    double one = inclusive ? 1.0 : 0.0;
    double iw = fmin(a->x2, b->x2) - fmax(a->x1, b->x1) + one;
    double ih = fmin(a->y2, b->y2) - fmax(a->y1, b->y1) + one;
    if (iw <= 0 || ih <= 0)
        return 0.0;
    double aw = (double)a->x2 - a->x1 + one, ah = (double)a->y2 - a->y1 + one;
    double bw = (double)b->x2 - b->x1 + one, bh = (double)b->y2 - b->y1 + one;
    if (aw <= 0 || ah <= 0 || bw <= 0 || bh <= 0)
        return 0.0;
    double inter = iw * ih;
    return inter / (aw * ah + bw * bh - inter);
}

void hone_det_grid_defaults(hone_det_grid_opts *o)
{
    o->stride = 16;
    o->offset = 0.5f;
    o->bbox_norm = 35.0f;
    o->cov_shape = HONE_DET_COV_RECT;
    o->cov_center_x = 0.5f;
    o->cov_center_y = 0.5f;
    o->cov_radius_x = 1.0f;
    o->cov_radius_y = 1.0f;
    o->min_radius = 1.0f;
    o->normalise_by_area = 1;
}

static int grid_opts_ok(const hone_det_grid_opts *o, int n_classes, int grid_h, int grid_w)
{
    return o && o->stride > 0 && o->bbox_norm > 0 && isfinite(o->offset) &&
           (o->cov_shape == HONE_DET_COV_RECT || o->cov_shape == HONE_DET_COV_ELLIPSE) &&
           o->cov_radius_x > 0 && o->cov_radius_y > 0 && o->min_radius >= 0 && n_classes > 0 &&
           grid_h > 0 && grid_w > 0 && (long)n_classes * grid_h * grid_w <= (1L << 28);
}

/* Whether cell centre (px, py) lies in the coverage region centred at (cx, cy), half-axes rx, ry.
 */
static int in_region(int shape, double px, double py, double cx, double cy, double rx, double ry)
{
    double dx = (px - cx) / rx, dy = (py - cy) / ry;
    if (shape == HONE_DET_COV_ELLIPSE)
        return dx * dx + dy * dy <= 1.0;
    return fabs(dx) <= 1.0 && fabs(dy) <= 1.0;
}

static int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Larger boxes first, so that the smaller ones are drawn over them (ties: input order). */
typedef struct gt_order {
    double area;
    int index;
} gt_order;
static int by_area_desc(const void *pa, const void *pb)
{
    const gt_order *a = pa, *b = pb;
    if (a->area != b->area)
        return a->area > b->area ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* Marks the cells one box covers in owner (its plane at plane_off) with id; returns their count. */
static int cover_cells(const hone_det_grid_opts *o, int grid_h, int grid_w, const hone_det_box *b,
                       float *owner, int plane_off, float id)
{
    double w = (double)b->x2 - b->x1, h = (double)b->y2 - b->y1;
    double cx = b->x1 + o->cov_center_x * w, cy = b->y1 + o->cov_center_y * h;
    double rx = fmax(o->cov_radius_x * w / 2, o->min_radius);
    double ry = fmax(o->cov_radius_y * h / 2, o->min_radius);
    double half = o->stride / 2.0;
    int gx0 = clampi((int)floor((cx - rx - half) / o->stride), 0, grid_w - 1);
    int gx1 = clampi((int)ceil((cx + rx - half) / o->stride), 0, grid_w - 1);
    int gy0 = clampi((int)floor((cy - ry - half) / o->stride), 0, grid_h - 1);
    int gy1 = clampi((int)ceil((cy + ry - half) / o->stride), 0, grid_h - 1);
    int count = 0;
    for (int gy = gy0; gy <= gy1; gy++)
        for (int gx = gx0; gx <= gx1; gx++) {
            double px = (double)gx * o->stride + half, py = (double)gy * o->stride + half;
            if (in_region(o->cov_shape, px, py, cx, cy, rx, ry)) {
                owner[plane_off + gy * grid_w + gx] = id;
                count++;
            }
        }
    /* the cell holding the region's centre, when it lies on the grid, is always the box's */
    int gx = (int)floor(cx / o->stride), gy = (int)floor(cy / o->stride);
    if (gx >= 0 && gx < grid_w && gy >= 0 && gy < grid_h) {
        float *c = &owner[plane_off + gy * grid_w + gx];
        if (*c != id) {
            *c = id;
            count++;
        }
    }
    return count;
}

int hone_det_encode(const hone_det_grid_opts *o, int n_classes, int grid_h, int grid_w,
                    const hone_det_gt *gts, int n, float *cov, float *bbox, float *weight)
{
    gt_order *order = NULL;
    int *cells = NULL;
    if (!grid_opts_ok(o, n_classes, grid_h, grid_w) || n < 0 || (n > 0 && !gts) || !cov || !bbox ||
        !weight)
        return HONE_EINVAL;
    for (int i = 0; i < n; i++) {
        const hone_det_gt *g = &gts[i];
        if (g->cls >= n_classes || g->cls < HONE_DET_DONTCARE || !isfinite(g->box.x1) ||
            !isfinite(g->box.y1) || !isfinite(g->box.x2) || !isfinite(g->box.y2))
            return HONE_EINVAL;
    }
    size_t plane = (size_t)grid_h * grid_w, all = plane * n_classes;
    /* cov first holds the owner of each cell (gt index + 1, 0 = none); converted at the end */
    memset(cov, 0, all * sizeof *cov);
    memset(bbox, 0, 4 * all * sizeof *bbox);
    memset(weight, 0, all * sizeof *weight);
    if (n == 0)
        return 0;
    order = hone_xmalloc((size_t)n * sizeof *order);
    cells = hone_xcalloc((size_t)n, sizeof *cells);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (gts[i].cls >= 0 && !(gts[i].flags & HONE_DET_GT_IGNORE) &&
            gts[i].box.x2 > gts[i].box.x1 && gts[i].box.y2 > gts[i].box.y1)
            order[m++] = (gt_order){((double)gts[i].box.x2 - gts[i].box.x1) *
                                        ((double)gts[i].box.y2 - gts[i].box.y1),
                                    i};
    qsort(order, (size_t)m, sizeof *order, by_area_desc);
    for (int k = 0; k < m; k++) {
        const hone_det_gt *g = &gts[order[k].index];
        cover_cells(o, grid_h, grid_w, &g->box, cov, (int)(g->cls * plane),
                    (float)(order[k].index + 1));
    }
    /* count the cells each box kept (a larger box loses those a smaller one drew over) */
    for (size_t i = 0; i < all; i++)
        if (cov[i] > 0)
            cells[(int)cov[i] - 1]++;
    for (int c = 0; c < n_classes; c++)
        for (int gy = 0; gy < grid_h; gy++)
            for (int gx = 0; gx < grid_w; gx++) {
                size_t at = c * plane + (size_t)gy * grid_w + gx;
                if (cov[at] <= 0)
                    continue;
                int id = (int)cov[at] - 1;
                const hone_det_box *b = &gts[id].box;
                float px = (float)gx * o->stride + o->offset;
                float py = (float)gy * o->stride + o->offset;
                float *t = bbox + 4 * c * plane + (size_t)gy * grid_w + gx;
                t[0] = (px - b->x1) / o->bbox_norm;
                t[plane] = (py - b->y1) / o->bbox_norm;
                t[2 * plane] = (b->x2 - px) / o->bbox_norm;
                t[3 * plane] = (b->y2 - py) / o->bbox_norm;
                cov[at] = 1.0f;
                weight[at] = o->normalise_by_area ? 1.0f / (float)cells[id] : 1.0f;
            }
    /* DontCare regions: the cells whose centres they hold, where no object is, are ignored */
    for (int i = 0; i < n; i++) {
        const hone_det_box *b = &gts[i].box;
        if (gts[i].cls != HONE_DET_DONTCARE || (gts[i].flags & HONE_DET_GT_IGNORE))
            continue;
        for (int gy = 0; gy < grid_h; gy++)
            for (int gx = 0; gx < grid_w; gx++) {
                double px = (double)gx * o->stride + o->stride / 2.0;
                double py = (double)gy * o->stride + o->stride / 2.0;
                if (!(px >= (double)b->x1 && px < (double)b->x2 && py >= (double)b->y1 &&
                      py < (double)b->y2))
                    continue;
                for (int c = 0; c < n_classes; c++) {
                    size_t at = c * plane + (size_t)gy * grid_w + gx;
                    if (cov[at] <= 0)
                        cov[at] = -1.0f;
                }
            }
    }
    free(order);
    free(cells);
    return 0;
}

int hone_det_decode(const hone_det_grid_opts *o, int n_classes, int grid_h, int grid_w,
                    const float *cov, const float *bbox, float cov_threshold, hone_det_cand *out,
                    int cap, int *n_out)
{
    if (!grid_opts_ok(o, n_classes, grid_h, grid_w) || !cov || !bbox || !n_out || cap < 0 ||
        (cap > 0 && !out))
        return HONE_EINVAL;
    *n_out = 0;
    size_t plane = (size_t)grid_h * grid_w;
    int k = 0;
    for (int c = 0; c < n_classes; c++)
        for (int gy = 0; gy < grid_h; gy++)
            for (int gx = 0; gx < grid_w; gx++) {
                size_t at = c * plane + (size_t)gy * grid_w + gx;
                float s = cov[at];
                if (!(s >= cov_threshold))
                    continue;
                const float *t = bbox + 4 * c * plane + (size_t)gy * grid_w + gx;
                float px = (float)gx * o->stride + o->offset;
                float py = (float)gy * o->stride + o->offset;
                hone_det_box b = {px - t[0] * o->bbox_norm, py - t[plane] * o->bbox_norm,
                                  px + t[2 * plane] * o->bbox_norm,
                                  py + t[3 * plane] * o->bbox_norm};
                if (!(b.x2 > b.x1) || !(b.y2 > b.y1))
                    continue; /* also drops NaN */
                if (k == cap)
                    return HONE_ERANGE;
                out[k].box = b;
                out[k].cls = c;
                out[k].score = s;
                *n_out = ++k;
            }
    return 0;
}
