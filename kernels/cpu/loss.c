/* kernels/cpu/loss.c: softmax cross-entropy (with label smoothing) adding its loss and correct
 * count to device-side accumulators, and the whole-array sum, for the CPU backend. Both
 * accumulate in double on the calling thread, in a fixed order. */
#include <math.h>

#include "par.h"

int cpu_softmax_xent(hone_kctx *k, const float *logits, const int32_t *labels, int n, int classes,
                     float smoothing, float *dlogits, float *loss_sum, float *correct)
{
    (void)k;
    double loss = 0.0;
    int right = 0;
    /* the smoothed targets (kernels.h), in float as the CUDA and CPU backends both compute them:
     * eps 0 gives exactly 0 and 1, the one-hot loss's */
    float off = smoothing / (float)classes, on = (1.0f - smoothing) + off;
    for (int i = 0; i < n; i++) {
        const float *z = logits + (size_t)i * classes;
        float *dz = dlogits ? dlogits + (size_t)i * classes : NULL;
        int y = labels[i];
        if (y < 0 || y >= classes) {
            if (dz)
                for (int j = 0; j < classes; j++)
                    dz[j] = 0.0f;
            continue;
        }
        int arg = 0;
        float mx = z[0];
        for (int j = 1; j < classes; j++)
            if (z[j] > mx) {
                mx = z[j];
                arg = j;
            }
        double s = 0.0;
        for (int j = 0; j < classes; j++)
            s += exp((double)(z[j] - mx));
        double row = log(s) - (double)(z[y] - mx);
        if (smoothing > 0.0f) { /* + eps * (mean_j -log p_j - CE); eps 0 adds nothing */
            double zs = 0.0;
            for (int j = 0; j < classes; j++)
                zs += (double)(z[j] - mx);
            row = (1.0 - smoothing) * row + smoothing * (log(s) - zs / classes);
        }
        loss += row;
        right += arg == y;
        if (dz) {
            float inv_n = 1.0f / (float)n;
            for (int j = 0; j < classes; j++) {
                float pj = (float)(exp((double)(z[j] - mx)) / s);
                dz[j] = (pj - (j == y ? on : off)) * inv_n;
            }
        }
    }
    loss_sum[0] += (float)loss;
    correct[0] += (float)right;
    return HONE_OK;
}

int cpu_sum(hone_kctx *k, const float *x, size_t n, float *out)
{
    (void)k;
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    out[0] = (float)s;
    return HONE_OK;
}
