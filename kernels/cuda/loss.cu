/* CUDA backend: softmax cross-entropy (with label smoothing, as kernels/cpu/loss.c) with
 * device-side loss/accuracy accumulators (one block, each warp a fixed set of rows, warps summed
 * in order: the sums are the same on every run, so trials packed on one GPU report their solo
 * run's losses bit for bit), and the whole-array sum (one block, fixed order: deterministic).
 * Metrics stay on the device so an epoch reads them back once. */
#include "common.cuh"

#define XENT_WARPS 32 /* warps of the one block; warp w takes rows w, w + 32, ... */

__global__ static void k_softmax_xent(const float *z, const int32_t *labels, int n, int classes,
                                      float eps, float *dz, float *loss_sum, float *correct)
{
    int lane = threadIdx.x & 31;
    /* the smoothed targets (kernels.h), in float as the CUDA and CPU backends both compute them:
     * eps 0 gives exactly 0 and 1, the one-hot loss's */
    float off = eps / (float)classes, on = (1.f - eps) + off;
    float loss = 0.f, right = 0.f; /* lane 0's: its warp's rows, in order */
    for (int row = threadIdx.x >> 5; row < n; row += XENT_WARPS) {
        const float *zr = z + (size_t)row * classes;
        float *dr = dz ? dz + (size_t)row * classes : NULL;
        int y = labels[row];
        if (y < 0 || y >= classes) {
            if (dr)
                for (int j = lane; j < classes; j += 32)
                    dr[j] = 0.f;
        } else {
            /* max with the first index on ties, as the CPU's strict > scan */
            float mx = -INFINITY;
            int arg = classes;
            for (int j = lane; j < classes; j += 32)
                if (arg == classes || zr[j] > mx) {
                    mx = zr[j];
                    arg = j;
                }
            for (int o = 16; o > 0; o >>= 1) {
                float om = __shfl_xor_sync(0xffffffffu, mx, o);
                int oa = __shfl_xor_sync(0xffffffffu, arg, o);
                if (om > mx || (om == mx && oa < arg)) {
                    mx = om;
                    arg = oa;
                }
            }
            float s = 0.f;
            for (int j = lane; j < classes; j += 32)
                s += expf(zr[j] - mx);
            for (int o = 16; o > 0; o >>= 1)
                s += __shfl_xor_sync(0xffffffffu, s, o);
            float zs = 0.f; /* sum_j (z_j - mx): the smoothing term's; eps is the same in every
                               thread, so every lane takes this branch or none */
            if (eps > 0.f) {
                for (int j = lane; j < classes; j += 32)
                    zs += zr[j] - mx;
                for (int o = 16; o > 0; o >>= 1)
                    zs += __shfl_xor_sync(0xffffffffu, zs, o);
            }
            if (lane == 0) {
                float row = logf(s) - (zr[y] - mx);
                if (eps > 0.f) /* eps 0 adds nothing */
                    row = (1.f - eps) * row + eps * (logf(s) - zs / (float)classes);
                loss += row;
                right += arg == y ? 1.f : 0.f;
            }
            if (dr) {
                float inv_n = 1.f / (float)n, inv_s = 1.f / s;
                for (int j = lane; j < classes; j += 32)
                    dr[j] = (expf(zr[j] - mx) * inv_s - (j == y ? on : off)) * inv_n;
            }
        }
    }
    __shared__ float part[2][XENT_WARPS];
    if (lane == 0) {
        part[0][threadIdx.x >> 5] = loss;
        part[1][threadIdx.x >> 5] = right;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        float l = 0.f, r = 0.f;
        for (int i = 0; i < XENT_WARPS; i++) {
            l += part[0][i];
            r += part[1][i];
        }
        *loss_sum += l; /* one block: no other writer */
        *correct += r;
    }
}

extern "C" int cuda_softmax_xent(hone_kctx *k, const float *logits, const int32_t *labels, int n,
                                 int classes, float smoothing, float *dlogits, float *loss_sum,
                                 float *correct)
{
    if (n == 0)
        return HONE_OK;
    k_softmax_xent<<<1, XENT_WARPS * 32, 0, hc_stream(k)>>>(logits, labels, n, classes, smoothing,
                                                            dlogits, loss_sum, correct);
    HC_LAUNCHED();
    return HONE_OK;
}

__global__ static void k_sum(const float *x, size_t n, float *out)
{
    double s = 0.0;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x)
        s += x[i];
    float f = hc_block_sum((float)s);
    if (threadIdx.x == 0)
        *out = f;
}

extern "C" int cuda_sum(hone_kctx *k, const float *x, size_t n, float *out)
{
    k_sum<<<1, 1024, 0, hc_stream(k)>>>(x, n, out);
    HC_LAUNCHED();
    return HONE_OK;
}
