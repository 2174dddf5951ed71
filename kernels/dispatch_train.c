/* kernels/dispatch_train.c: the hone_k_* losses, data on the device, optimisers and reductions:
 * arguments checked, then the backend's op (dispatch.h). */
#include "dispatch.h"

/* ------------------------------------------------------------------ losses */

int hone_k_softmax_xent(hone_kctx *k, const float *logits, const int32_t *labels, int n,
                        int classes, float smoothing, float *dlogits, float *loss_sum,
                        float *correct)
{
    CHECK(n > 0 && classes > 0 && logits && labels && loss_sum && correct);
    CHECK(smoothing >= 0.0f && smoothing < 1.0f); /* NaN fails too */
    return k->ops->softmax_xent(k, logits, labels, n, classes, smoothing, dlogits, loss_sum,
                                correct);
}

int hone_k_detect_loss(hone_kctx *k, const float *pred, const float *target, int n, int classes,
                       int hw, float cov_weight, float bg_weight, float bbox_weight, int cov_loss,
                       float gamma, float *dpred, float *loss_sum)
{
    CHECK(n > 0 && classes > 0 && hw > 0 && pred && target && loss_sum);
    CHECK(cov_loss >= HONE_KCOV_L2 && cov_loss <= HONE_KCOV_FOCAL && gamma >= 0.0f);
    CHECK((size_t)n * 6 * classes * hw <= (size_t)INT32_MAX);
    return k->ops->detect_loss(k, pred, target, n, classes, hw, cov_weight, bg_weight, bbox_weight,
                               cov_loss, gamma, dpred, loss_sum);
}

int hone_k_detect_targets(hone_kctx *k, const hone_kbox *boxes, const uint32_t *box_start,
                          const int32_t *idx, const int32_t *base_dev, int base, int n, int h,
                          int w, const hone_kdet_grid *g, const hone_kaugment *aug,
                          const uint64_t *counter, float *dst)
{
    CHECK(n >= 0 && base >= 0 && h > 0 && w > 0 && boxes && box_start && g && dst);
    CHECK(g->classes > 0 && g->grid_h > 0 && g->grid_w > 0 && g->stride > 0);
    CHECK(g->bbox_norm > 0.0f && g->cov_radius_x > 0.0f && g->cov_radius_y > 0.0f);
    CHECK(g->min_radius >= 0.0f && (g->cov_shape == 0 || g->cov_shape == 1));
    CHECK((size_t)n * 6 * g->classes * g->grid_h * g->grid_w <= (size_t)INT32_MAX);
    if (aug && aug->affine) {
        CHECK(counter && aug->crop_padding == 0 && aug->cutout == 0);
        CHECK(aug->translate >= 0.0f && aug->translate <= 1.0f);
        CHECK(aug->zoom_min > 0.0f && aug->zoom_min <= aug->zoom_max && aug->zoom_max <= 16.0f);
    } else {
        aug = NULL;
    }
    if (n == 0)
        return HONE_OK;
    return k->ops->detect_targets(k, boxes, box_start, idx, base_dev, base, n, h, w, g, aug,
                                  counter, dst);
}

/* ------------------------------------------------------------------ data on the device */

int hone_k_gather_rows(hone_kctx *k, const float *src, const int32_t *src_labels,
                       const int32_t *idx, const int32_t *base_dev, int base, int n, int row,
                       float *dst, int32_t *dst_labels)
{
    CHECK(n >= 0 && row > 0 && src && idx && dst && base >= 0);
    CHECK(!src_labels == !dst_labels);
    if (n == 0)
        return HONE_OK;
    return k->ops->gather_rows(k, src, src_labels, idx, base_dev, base, n, row, dst, dst_labels);
}

int hone_k_counter_add(hone_kctx *k, int32_t *counter, int step)
{
    CHECK(counter);
    return k->ops->counter_add(k, counter, step);
}

int hone_k_permutation(hone_kctx *k, int32_t *idx, int n, uint64_t seed, uint64_t epoch)
{
    CHECK(n >= 0 && (idx || n == 0));
    if (n == 0)
        return HONE_OK;
    return k->ops->permutation(k, idx, n, seed, epoch);
}

int hone_k_gather_images(hone_kctx *k, const uint8_t *src, const int32_t *src_labels,
                         const int32_t *idx, const int32_t *base_dev, int base, int n, int c, int h,
                         int w, const float *mean, const float *inv_std, const hone_kaugment *aug,
                         uint64_t *counter, float *dst, int32_t *dst_labels)
{
    CHECK(n >= 0 && base >= 0 && src && dst && mean && inv_std);
    CHECK(c >= 1 && c <= 4 && h > 0 && w > 0 && (size_t)h * w <= (1u << 24));
    CHECK(!src_labels == !dst_labels);
    if (aug) {
        CHECK(counter && aug->crop_padding >= 0 && aug->crop_padding <= 65535);
        CHECK(aug->jitter >= 0.0f && aug->jitter <= 1.0f);
        CHECK(aug->cutout >= 0 && aug->cutout <= 65535);
        if (aug->affine) {
            CHECK(aug->crop_padding == 0 && aug->cutout == 0);
            CHECK(aug->translate >= 0.0f && aug->translate <= 1.0f);
            CHECK(aug->zoom_min > 0.0f && aug->zoom_min <= aug->zoom_max && aug->zoom_max <= 16.0f);
        }
    }
    return k->ops->gather_images(k, src, src_labels, idx, base_dev, base, n, c, h, w, mean, inv_std,
                                 aug, counter, dst, dst_labels);
}

/* ------------------------------------------------------------------ optimisers */

int hone_k_sgd_step(hone_kctx *k, float *w, const float *grad, float *v, size_t n, float lr,
                    const float *lr_dev, float momentum, float wd, int nesterov)
{
    if (n == 0)
        return HONE_OK;
    CHECK(w && grad && v && momentum >= 0.0f && wd >= 0.0f);
    return k->ops->sgd_step(k, w, grad, v, n, lr, lr_dev, momentum, wd, nesterov);
}

int hone_k_adamw_step(hone_kctx *k, float *w, const float *grad, float *m, float *v, size_t n,
                      float lr, const float *lr_dev, float beta1, float beta2, float eps, float wd,
                      int t, const int32_t *t_dev)
{
    if (n == 0)
        return HONE_OK;
    CHECK(w && grad && m && v && eps > 0.0f && wd >= 0.0f);
    CHECK(beta1 >= 0.0f && beta1 < 1.0f && beta2 >= 0.0f && beta2 < 1.0f);
    CHECK(t_dev || t >= 1);
    return k->ops->adamw_step(k, w, grad, m, v, n, lr, lr_dev, beta1, beta2, eps, wd, t, t_dev);
}

/* ------------------------------------------------------------------ reductions */

int hone_k_sum(hone_kctx *k, const float *x, size_t n, float *out)
{
    CHECK(out && (x || n == 0));
    return k->ops->sum(k, x, n, out);
}
