/* kernels/cpu/detect.c: the DetectNet_v2 grid head's loss for the CPU backend (kernels.h has its
 * definition): sigmoid + L2, BCE or focal loss on coverage, coverage-weighted L1 on box offsets.
 * The loss is summed in double on the calling thread in a fixed order; the gradient is written
 * element by element. And the grid targets of a batch from its (augmented) boxes, one image a
 * worker, in backend.h's three steps. */
#include <math.h>
#include <string.h>

#include "par.h"

int cpu_detect_loss(hone_kctx *k, const float *pred, const float *target, int n, int classes,
                    int hw, float cov_weight, float bg_weight, float bbox_weight, int cov_loss,
                    float gamma, float *dpred, float *loss_sum)
{
    (void)k;
    double loss = 0.0;
    float inv_n = 1.0f / (float)n;
    size_t plane = (size_t)hw, kc = (size_t)classes;
    for (size_t i = 0; i < (size_t)n; i++) {
        const float *p = pred + i * 5 * kc * plane, *t = target + i * 6 * kc * plane;
        float *dp = dpred ? dpred + i * 5 * kc * plane : NULL;
        for (size_t c = 0; c < kc; c++)
            for (size_t q = 0; q < plane; q++) {
                float z = p[c * plane + q], tc = t[c * plane + q],
                      m = hone_kdet_cov_mass(t, classes, hw, (int)q, cov_weight, bg_weight);
                if (tc < 0.0f) { /* an ignore cell: no coverage term */
                    if (dp)
                        dp[c * plane + q] = 0.0f;
                } else if (cov_loss == HONE_KCOV_L2) {
                    float s = 1.0f / (1.0f + expf(-z)), d = s - tc;
                    loss += (double)m * (double)d * (double)d;
                    if (dp)
                        dp[c * plane + q] = m * 2.0f * d * s * (1.0f - s) * inv_n;
                } else {
                    float dz, l = hone_kdet_cov(cov_loss, gamma, z, tc, &dz);
                    loss += (double)m * (double)l;
                    if (dp)
                        dp[c * plane + q] = m * dz * inv_n;
                }
                float w = t[(5 * kc + c) * plane + q];
                for (size_t j = 0; j < 4; j++) {
                    size_t o = (kc + 4 * c + j) * plane + q;
                    float e = p[o] - t[o];
                    loss += (double)bbox_weight * (double)w * fabs((double)e);
                    if (dp)
                        dp[o] = e > 0.0f   ? bbox_weight * w * inv_n
                                : e < 0.0f ? -bbox_weight * w * inv_n
                                           : 0.0f;
                }
            }
    }
    loss_sum[0] += (float)loss;
    return HONE_OK;
}

typedef struct {
    const hone_kbox *boxes;
    const uint32_t *box_start;
    const int32_t *idx;
    int b, h, w;
    const hone_kdet_grid *g;
    const hone_kaugment *aug;
    uint64_t c0;
    float *dst;
} targets_job;

static void targets_image(void *arg, int i, int slot)
{
    (void)slot;
    const targets_job *j = arg;
    const hone_kdet_grid *g = j->g;
    int32_t r = j->idx ? j->idx[j->b + i] : j->b + i;
    const hone_kbox *bx = j->boxes + j->box_start[r];
    int nb = (int)(j->box_start[r + 1] - j->box_start[r]);
    size_t plane = (size_t)g->grid_h * g->grid_w, kc = (size_t)g->classes;
    float *cov = j->dst + (size_t)i * 6 * kc * plane, *bbox = cov + kc * plane,
          *weight = cov + 5 * kc * plane;
    hone_aug_draw d = {0}, *dp = NULL;
    if (j->aug) {
        hone_aug_draw_image(j->aug, j->h, j->w, j->c0, i, &d);
        dp = &d;
    }
    memset(cov, 0, sizeof(float) * 6 * kc * plane);
    for (int c = 0; c < g->classes; c++) /* (1) owners */
        for (int gy = 0; gy < g->grid_h; gy++)
            for (int gx = 0; gx < g->grid_w; gx++)
                cov[c * plane + (size_t)gy * g->grid_w + gx] =
                    (float)hone_kdet_owner(g, bx, nb, dp, j->h, j->w, c, gx, gy);
    for (int q = 0; q < nb; q++) { /* (2) weights */
        float o[4] = {0, 0, 0, 0};
        if (hone_kdet_box(&bx[q], dp, j->h, j->w, g->classes, o))
            hone_kdet_weights(g, o, q, cov + bx[q].cls * plane, weight + bx[q].cls * plane);
    }
    for (int c = 0; c < g->classes; c++) /* (3) offsets */
        for (int gy = 0; gy < g->grid_h; gy++)
            for (int gx = 0; gx < g->grid_w; gx++) {
                float *cv = &cov[c * plane + (size_t)gy * g->grid_w + gx];
                if (*cv <= 0.0f) {
                    if (hone_kdet_ignored(g, bx, nb, dp, j->h, j->w, gx, gy))
                        *cv = -1.0f;
                    continue;
                }
                float o[4] = {0, 0, 0, 0};
                hone_kdet_box(&bx[(int)*cv - 1], dp, j->h, j->w, g->classes, o);
                hone_kdet_offsets(g, o, gx, gy, bbox + 4 * c * plane, plane);
                *cv = 1.0f;
            }
}

int cpu_detect_targets(hone_kctx *k, const hone_kbox *boxes, const uint32_t *box_start,
                       const int32_t *idx, const int32_t *base_dev, int base, int n, int h, int w,
                       const hone_kdet_grid *g, const hone_kaugment *aug, const uint64_t *counter,
                       float *dst)
{
    targets_job j = {boxes, box_start,          idx, base_dev ? base_dev[0] : base, h, w, g,
                     aug,   aug ? *counter : 0, dst};
    cpu_par_run(k, n, targets_image, &j);
    return HONE_OK;
}
