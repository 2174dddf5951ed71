/* detect_nms.c: from candidate boxes to detections: greedy per-class NMS, and DBSCAN clustering
 * (distance 1 - IoU, score-weighted core points) as TAO's DetectNet_v2 postprocessing does.
 * Both are O(n^2) in one class's candidates, which a grid head bounds by its cell count. */
#include "detect.h"

#include <math.h>
#include <stdlib.h>

#include "hone.h"

typedef struct cand_order {
    float score;
    int index;
} cand_order;

/* Descending score, ties by input order (a stable order: results do not depend on qsort). */
static int by_score_desc(const void *pa, const void *pb)
{
    const cand_order *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

static cand_order *sorted_order(const hone_det_cand *in, int n)
{
    cand_order *ord = hone_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *ord);
    for (int i = 0; i < n; i++)
        ord[i] = (cand_order){isnan(in[i].score) ? -INFINITY : in[i].score, i};
    qsort(ord, (size_t)n, sizeof *ord, by_score_desc);
    return ord;
}

int hone_det_nms(const hone_det_cand *in, int n, float iou_threshold, hone_det_cand *out,
                 int *n_out)
{
    if (n < 0 || (n > 0 && (!in || !out)) || !n_out)
        return HONE_EINVAL;
    cand_order *ord = sorted_order(in, n);
    int k = 0;
    for (int i = 0; i < n; i++) {
        const hone_det_cand *c = &in[ord[i].index];
        int keep = 1;
        for (int j = 0; j < k && keep; j++)
            if (out[j].cls == c->cls && hone_det_iou(&out[j].box, &c->box, 0) > iou_threshold)
                keep = 0;
        if (keep)
            out[k++] = *c;
    }
    free(ord);
    *n_out = k;
    return 0;
}

void hone_det_cluster_defaults(hone_det_cluster_opts *o)
{
    o->eps = 0.3f;
    o->min_samples = 0.05f;
    o->conf_mode = HONE_DET_CONF_SUM;
    o->conf_threshold = 0.1f;
    o->min_height = 0.0f;
}

/* The neighbours of p among the m candidates idx[] (itself included) into nb; returns their count
 * and their summed score in *weight. */
static int neighbours(const hone_det_cand *in, const int *idx, int m, int p, float eps, int *nb,
                      double *weight)
{
    int k = 0;
    *weight = 0;
    for (int q = 0; q < m; q++)
        if (q == p || 1.0 - hone_det_iou(&in[idx[p]].box, &in[idx[q]].box, 0) <= eps) {
            nb[k++] = q;
            *weight += in[idx[q]].score;
        }
    return k;
}

/* DBSCAN over the m candidates idx[] of one class; appends one box per kept cluster to out. */
static void cluster_class(const hone_det_cluster_opts *o, const hone_det_cand *in, const int *idx,
                          int m, hone_det_cand *out, int *k)
{
    enum { UNSEEN = -2, NOISE = -1 };
    int *label = hone_xmalloc((size_t)m * sizeof *label);
    int *queue = hone_xmalloc((size_t)m * sizeof *queue);
    int *nb = hone_xmalloc((size_t)m * sizeof *nb);
    for (int i = 0; i < m; i++)
        label[i] = UNSEEN;
    int n_clusters = 0;
    for (int p = 0; p < m; p++) {
        if (label[p] != UNSEEN)
            continue;
        double w;
        int cnt = neighbours(in, idx, m, p, o->eps, nb, &w);
        if (w < o->min_samples) {
            label[p] = NOISE; /* may become a border point of a later cluster */
            continue;
        }
        int id = n_clusters++, head = 0, tail = 0;
        label[p] = id;
        for (int j = 0; j < cnt; j++)
            if (label[nb[j]] == UNSEEN || label[nb[j]] == NOISE) {
                if (label[nb[j]] == UNSEEN)
                    queue[tail++] = nb[j];
                label[nb[j]] = id;
            }
        while (head < tail) {
            int q = queue[head++];
            cnt = neighbours(in, idx, m, q, o->eps, nb, &w);
            if (w < o->min_samples)
                continue; /* a border point: its neighbours are not pulled in */
            for (int j = 0; j < cnt; j++)
                if (label[nb[j]] == UNSEEN || label[nb[j]] == NOISE) {
                    if (label[nb[j]] == UNSEEN)
                        queue[tail++] = nb[j];
                    label[nb[j]] = id;
                }
        }
    }
    for (int id = 0; id < n_clusters; id++) {
        double sw = 0, mx = 0, x1 = 0, y1 = 0, x2 = 0, y2 = 0;
        for (int i = 0; i < m; i++) {
            if (label[i] != id)
                continue;
            const hone_det_cand *c = &in[idx[i]];
            double s = c->score;
            sw += s;
            mx = s > mx ? s : mx;
            x1 += s * c->box.x1;
            y1 += s * c->box.y1;
            x2 += s * c->box.x2;
            y2 += s * c->box.y2;
        }
        if (!(sw > 0))
            continue;
        double conf = o->conf_mode == HONE_DET_CONF_MAX ? mx : sw;
        hone_det_box b = {(float)(x1 / sw), (float)(y1 / sw), (float)(x2 / sw), (float)(y2 / sw)};
        if (conf < o->conf_threshold || b.y2 - b.y1 < o->min_height)
            continue;
        out[*k] = (hone_det_cand){b, in[idx[0]].cls, (float)conf};
        (*k)++;
    }
    free(label);
    free(queue);
    free(nb);
}

int hone_det_cluster(const hone_det_cluster_opts *o, const hone_det_cand *in, int n,
                     hone_det_cand *out, int *n_out)
{
    if (!o || n < 0 || (n > 0 && (!in || !out)) || !n_out || !(o->eps >= 0) ||
        !(o->min_samples >= 0) ||
        (o->conf_mode != HONE_DET_CONF_SUM && o->conf_mode != HONE_DET_CONF_MAX))
        return HONE_EINVAL;
    *n_out = 0;
    for (int i = 0; i < n; i++)
        if (!(in[i].score >= 0) || !isfinite(in[i].score))
            return HONE_EINVAL; /* scores are weights: negative or NaN ones mean nothing */
    int *idx = hone_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *idx);
    hone_det_cand *tmp = hone_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *tmp);
    int k = 0;
    /* classes in order of first appearance: each gathered once */
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = in[j].cls == in[i].cls;
        if (seen)
            continue;
        int m = 0;
        for (int j = i; j < n; j++)
            if (in[j].cls == in[i].cls)
                idx[m++] = j;
        cluster_class(o, in, idx, m, tmp, &k);
    }
    /* by descending confidence */
    cand_order *ord = sorted_order(tmp, k);
    for (int i = 0; i < k; i++)
        out[i] = tmp[ord[i].index];
    free(ord);
    free(idx);
    free(tmp);
    *n_out = k;
    return 0;
}
