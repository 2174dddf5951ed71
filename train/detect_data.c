/* train/detect_data.c: the detection side of a dataset's parts (dataset.h): each image's boxes
 * copied out of the packed file, and its DetectNet_v2 grid targets encoded once with detect.h, so
 * that a training step only gathers rows. Host memory only; never touches the pixels. */
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "detect.h"

void detect_part_boxes(const hone_data_pack *pk, const uint32_t *rows, size_t from, data_part *p)
{
    size_t total = 0, n = (size_t)p->n;
    p->box_start = hone_xmalloc(sizeof(uint32_t) * (n + 1));
    p->src_wh = hone_xmalloc(sizeof(int32_t) * 2 * (n ? n : 1));
    for (size_t i = 0; i < n; i++) {
        size_t nb;
        hone_data_pack_boxes(pk, rows ? rows[i] : from + i, &nb);
        total += nb;
        int w, h;
        hone_data_pack_source_size(pk, rows ? rows[i] : from + i, &w, &h);
        p->src_wh[2 * i] = w;
        p->src_wh[2 * i + 1] = h;
    }
    p->boxes = hone_xmalloc(sizeof(hone_data_box) * (total ? total : 1));
    total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t nb;
        const hone_data_box *b = hone_data_pack_boxes(pk, rows ? rows[i] : from + i, &nb);
        p->box_start[i] = (uint32_t)total;
        if (nb)
            memcpy(p->boxes + total, b, sizeof(hone_data_box) * nb);
        total += nb;
    }
    p->box_start[n] = (uint32_t)total;
    /* a crowd region of one class trains as a DontCare region; its class is kept for evaluation */
    p->crowd = hone_xmalloc(sizeof(int32_t) * (total ? total : 1));
    for (size_t j = 0; j < total; j++) {
        p->crowd[j] = -1;
        if (HONE_DATA_IS_CROWD(p->boxes[j].cls)) {
            p->crowd[j] = HONE_DATA_CROWD_CLASS(p->boxes[j].cls);
            p->boxes[j].cls = HONE_DATA_DONTCARE;
        }
    }
}

int detect_part_targets(const hone_train_spec *spec, int classes, int h, int w, data_part *p,
                        char *err, size_t errlen)
{
    hone_det_grid_opts o;
    hone_det_grid_defaults(&o);
    o.stride = spec->detect.stride;
    o.bbox_norm = (float)spec->detect.bbox_norm;
    int gh = h / o.stride, gw = w / o.stride;
    size_t plane = (size_t)classes * gh * gw, row = 6 * plane;
    p->targets = hone_xmalloc(sizeof(float) * row * (size_t)(p->n ? p->n : 1));
    hone_det_gt *gts = NULL;
    size_t cap = 0;
    for (int i = 0; i < p->n; i++) {
        uint32_t b0 = p->box_start[i], nb = p->box_start[i + 1] - b0;
        if (nb > cap) {
            cap = nb;
            gts = hone_xrealloc(gts, sizeof(hone_det_gt) * cap);
        }
        for (uint32_t j = 0; j < nb; j++) {
            const hone_data_box *b = &p->boxes[b0 + j];
            gts[j].box = (hone_det_box){b->x1, b->y1, b->x2, b->y2};
            gts[j].cls = b->cls == HONE_DATA_DONTCARE ? HONE_DET_DONTCARE : b->cls;
            gts[j].flags = 0;
        }
        float *t = p->targets + row * (size_t)i;
        int rc = hone_det_encode(&o, classes, gh, gw, gts, (int)nb, t, t + plane, t + 5 * plane);
        if (rc != HONE_OK) {
            snprintf(err, errlen,
                     "data: image %d of a part: a box's class is outside the %d "
                     "classes",
                     i, classes);
            free(gts);
            return rc;
        }
    }
    free(gts);
    return HONE_OK;
}

void detect_part_free(data_part *p)
{
    free(p->boxes);
    free(p->box_start);
    free(p->targets);
    free(p->crowd);
    free(p->src_wh);
    p->crowd = NULL;
    p->src_wh = NULL;
    p->boxes = NULL;
    p->box_start = NULL;
    p->targets = NULL;
}
