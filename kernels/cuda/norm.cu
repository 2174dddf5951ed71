/* CUDA backend: batch normalisation over (n, hw) per channel, training and inference, and its
 * backward, each optionally fused with a following ReLU (backend.h). Training splits each channel's
 * m = n*hw values into S chunks, one block each (a channel per block left most of the chip idle on
 * wide, short layers); each block writes its chunk's partial statistics to the context's bn_part
 * area, a per-channel fold combines them in chunk order (deterministic: no atomics), and an
 * elementwise pass applies the result. Inference is a plain elementwise affine map. */
#include "common.cuh"

#define BN_THREADS 256
/* Chunks per channel: at most this many, at least ~BN_CHUNK_MIN values each, and about
 * BN_BLOCKS_PER_SM blocks per SM over all channels. */
#define BN_MAX_CHUNKS 64
#define BN_CHUNK_MIN 2048
#define BN_BLOCKS_PER_SM 8

/* Value j (< m) of channel ch: image j / hw, pixel j % hw. */
__device__ static inline size_t bn_at(int j, int hw, int c, int ch)
{
    int img = j / hw;
    return ((size_t)img * c + ch) * hw + (j - img * hw);
}

/* The chunk split of a channel's m values: S chunks of len values (the last may be shorter). */
struct bn_split {
    int S, len;
};

static int bn_split_of(hone_kctx *k, int c, int m, bn_split *sp)
{
    hone_cuda *cu = hc_of(k);
    long want = ((long)cu->sms * BN_BLOCKS_PER_SM + c - 1) / c;
    long by_size = (m + BN_CHUNK_MIN - 1) / BN_CHUNK_MIN;
    long S = want < by_size ? want : by_size;
    if (S > BN_MAX_CHUNKS)
        S = BN_MAX_CHUNKS;
    if (S * c * 2 > (long)cu->bn_part_floats) /* two floats per chunk */
        S = (long)cu->bn_part_floats / (2L * c);
    if (S < 1)
        return HONE_ERANGE; /* more channels than the partial area holds (over 500k) */
    sp->len = (int)((m + S - 1) / S);
    sp->S = (m + sp->len - 1) / sp->len; /* no empty chunk */
    return HONE_OK;
}

/* grid (C, S): part[(s*C + ch)*2 + {0,1}] = this chunk's mean and sum of squared deviations
 * from it (two passes over the chunk, the second from cache: as exact as the one-pass-per-
 * channel version). */
__global__ static void k_bn_stats(int c, int hw, int m, int len, const float *__restrict__ x,
                                  float *__restrict__ part)
{
    int ch = blockIdx.x, s = blockIdx.y;
    int j0 = s * len, j1 = min(m, j0 + len);
    float sum = 0.f;
    for (int j = j0 + threadIdx.x; j < j1; j += blockDim.x)
        sum += x[bn_at(j, hw, c, ch)];
    float mean = hc_block_sum(sum) / (float)(j1 - j0);
    float s2 = 0.f;
    for (int j = j0 + threadIdx.x; j < j1; j += blockDim.x) {
        float d = x[bn_at(j, hw, c, ch)] - mean;
        s2 += d * d;
    }
    s2 = hc_block_sum(s2);
    if (threadIdx.x == 0) {
        float *p = part + ((size_t)s * gridDim.x + ch) * 2;
        p[0] = mean;
        p[1] = s2;
    }
}

/* The folds: one warp per channel. Lane l combines chunks l, l + 32, ... in order, then the lanes
 * combine in a fixed tree (lane l takes lane l + 16, then l + 8, ...): the same order on every run
 * (deterministic), and 32 independent loads in flight where one thread per channel waited on each
 * chunk in turn (that serial fold took 24 us a layer at 128 chunks). */
#define FOLD_THREADS 128
#define FOLD_BATCH 8 /* chunks a lane loads before it combines them */

/* Chan et al.'s pairwise update: (n, mean, m2) absorbs a part of nb values, mean mb, squared
 * deviations m2b. */
__device__ static inline void chan_add(float *n, float *mean, float *m2, float nb, float mb,
                                       float m2b)
{
    float tot = *n + nb;
    if (tot <= 0.f)
        return;
    float d = mb - *mean;
    *mean += d * (nb / tot);
    *m2 += m2b + d * d * (*n * nb / tot);
    *n = tot;
}

/* Warp tree sum of v (lane 0 gets the total). */
__device__ static inline float warp_fold_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

/* A warp per channel: combines the chunks (count, mean and squared deviations), then the saved and
 * running statistics. */
__global__ static void k_bn_stats_fold(int c, int m, int S, int len, const float *__restrict__ part,
                                       float *rmean, float *rvar, float momentum, float eps,
                                       float *save_mean, float *save_invstd)
{
    int ch = blockIdx.x * (FOLD_THREADS / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (ch >= c) /* the whole warp */
        return;
    float n = 0.f, mean = 0.f, m2 = 0.f;
    for (int s0 = lane; s0 < S; s0 += 32 * FOLD_BATCH) {
        float pm[FOLD_BATCH], pq[FOLD_BATCH]; /* loads first: L2 latency overlaps, not adds up */
#pragma unroll
        for (int u = 0; u < FOLD_BATCH; u++) {
            int s = s0 + 32 * u;
            const float *q = part + ((size_t)s * c + ch) * 2;
            pm[u] = s < S ? q[0] : 0.f;
            pq[u] = s < S ? q[1] : 0.f;
        }
#pragma unroll
        for (int u = 0; u < FOLD_BATCH; u++) {
            int s = s0 + 32 * u;
            if (s < S)
                chan_add(&n, &mean, &m2, (float)(min(m, (s + 1) * len) - s * len), pm[u], pq[u]);
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        float nb = __shfl_down_sync(0xffffffffu, n, o), mb = __shfl_down_sync(0xffffffffu, mean, o),
              m2b = __shfl_down_sync(0xffffffffu, m2, o);
        chan_add(&n, &mean, &m2, nb, mb, m2b);
    }
    if (lane)
        return;
    float var = m2 / (float)m;
    float unbiased = m > 1 ? m2 / (float)(m - 1) : var;
    save_mean[ch] = mean;
    save_invstd[ch] = rsqrtf(var + eps);
    rmean[ch] = (1.f - momentum) * rmean[ch] + momentum * mean;
    rvar[ch] = (1.f - momentum) * rvar[ch] + momentum * unbiased;
}

/* y = (x - mean) * invstd * gamma + beta (then max(0, y) with relu), elementwise over [n, c, hw].
 */
__global__ static void k_bn_apply(int total, int c, int hw, const float *__restrict__ x,
                                  const float *__restrict__ gamma, const float *__restrict__ beta,
                                  const float *__restrict__ mean, const float *__restrict__ invstd,
                                  float *__restrict__ y, int relu)
{
    HC_FOR32(i, total)
    {
        int ch = (i / hw) % c;
        float a = gamma[ch] * invstd[ch];
        float v = x[i] * a + (beta[ch] - mean[ch] * a);
        y[i] = relu ? fmaxf(v, 0.f) : v;
    }
}

__global__ static void k_bn_infer(int total, int c, int hw, const float *__restrict__ x,
                                  const float *__restrict__ gamma, const float *__restrict__ beta,
                                  const float *__restrict__ rmean, const float *__restrict__ rvar,
                                  float eps, float *__restrict__ y, int relu)
{
    HC_FOR32(i, total)
    {
        int ch = (i / hw) % c;
        float a = gamma[ch] * rsqrtf(rvar[ch] + eps);
        float v = x[i] * a + (beta[ch] - rmean[ch] * a);
        y[i] = relu ? fmaxf(v, 0.f) : v;
    }
}

static int bn_total(int n, int c, int hw, int *total)
{
    size_t t = (size_t)n * c * hw;
    if (t >= (1u << 31))
        return HONE_ERANGE;
    *total = (int)t;
    return HONE_OK;
}

extern "C" int cuda_batchnorm_fwd(hone_kctx *k, int n, int c, int hw, const float *x,
                                  const float *gamma, const float *beta, float *running_mean,
                                  float *running_var, float momentum, float eps, int training,
                                  float *save_mean, float *save_invstd, float *y, int relu)
{
    int total, rc;
    if ((rc = bn_total(n, c, hw, &total)) < 0 || total == 0)
        return rc;
    unsigned blocks = hc_blocks(k, (size_t)total);
    if (!training) {
        k_bn_infer<<<blocks, HC_THREADS, 0, hc_stream(k)>>>(
            total, c, hw, x, gamma, beta, running_mean, running_var, eps, y, relu);
        HC_LAUNCHED();
        return HONE_OK;
    }
    bn_split sp;
    if ((rc = bn_split_of(k, c, n * hw, &sp)) < 0)
        return rc;
    float *part = hc_of(k)->bn_part;
    k_bn_stats<<<dim3(c, sp.S), BN_THREADS, 0, hc_stream(k)>>>(c, hw, n * hw, sp.len, x, part);
    HC_LAUNCHED();
    k_bn_stats_fold<<<(c + 3) / 4, FOLD_THREADS, 0, hc_stream(k)>>>(
        c, n * hw, sp.S, sp.len, part, running_mean, running_var, momentum, eps, save_mean,
        save_invstd);
    HC_LAUNCHED();
    k_bn_apply<<<blocks, HC_THREADS, 0, hc_stream(k)>>>(total, c, hw, x, gamma, beta, save_mean,
                                                        save_invstd, y, relu);
    HC_LAUNCHED();
    return HONE_OK;
}

/* The gradient reaching the batch norm: dy, or with a fused relu (y its output) dy * (y > 0). */
__device__ static inline float bn_grad(const float *__restrict__ dy,
                                       const float *__restrict__ y_relu, size_t at)
{
    return !y_relu || y_relu[at] > 0.f ? dy[at] : 0.f;
}

/* grid (C, S): part[(s*C + ch)*2 + {0,1}] = this chunk's sum of dy and of dy * xhat. */
__global__ static void k_bn_bwd_reduce(int c, int hw, int m, int len, const float *__restrict__ x,
                                       const float *__restrict__ y_relu,
                                       const float *__restrict__ dy,
                                       const float *__restrict__ save_mean,
                                       const float *__restrict__ save_invstd,
                                       float *__restrict__ part)
{
    int ch = blockIdx.x, s = blockIdx.y;
    int j0 = s * len, j1 = min(m, j0 + len);
    float mean = save_mean[ch], invstd = save_invstd[ch];
    float sdy = 0.f, sdyx = 0.f;
    for (int j = j0 + threadIdx.x; j < j1; j += blockDim.x) {
        size_t at = bn_at(j, hw, c, ch);
        float g = bn_grad(dy, y_relu, at);
        sdy += g;
        sdyx += g * (x[at] - mean) * invstd;
    }
    sdy = hc_block_sum(sdy);
    sdyx = hc_block_sum(sdyx);
    if (threadIdx.x == 0) {
        float *p = part + ((size_t)s * gridDim.x + ch) * 2;
        p[0] = sdy;
        p[1] = sdyx;
    }
}

/* A warp per channel: dbeta = sum dy, dgamma = sum dy * xhat over the chunks. */
__global__ static void k_bn_bwd_fold(int c, int S, const float *__restrict__ part,
                                     float *__restrict__ dgamma, float *__restrict__ dbeta)
{
    int ch = blockIdx.x * (FOLD_THREADS / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (ch >= c)
        return;
    float sdy = 0.f, sdyx = 0.f;
#pragma unroll 8
    for (int s = lane; s < S; s += 32) {
        const float *q = part + ((size_t)s * c + ch) * 2;
        sdy += q[0];
        sdyx += q[1];
    }
    sdy = warp_fold_sum(sdy);
    sdyx = warp_fold_sum(sdyx);
    if (lane == 0) {
        dgamma[ch] = sdyx;
        dbeta[ch] = sdy;
    }
}

/* dx = gamma * invstd / m * (m * dy - dbeta - xhat * dgamma), elementwise. */
__global__ static void k_bn_bwd_apply(int total, int c, int hw, float m,
                                      const float *__restrict__ x, const float *__restrict__ y_relu,
                                      const float *__restrict__ dy, const float *__restrict__ gamma,
                                      const float *__restrict__ save_mean,
                                      const float *__restrict__ save_invstd,
                                      const float *__restrict__ dgamma,
                                      const float *__restrict__ dbeta, float *__restrict__ dx)
{
    HC_FOR32(i, total)
    {
        int ch = (i / hw) % c;
        float invstd = save_invstd[ch];
        float xhat = (x[i] - save_mean[ch]) * invstd;
        dx[i] =
            gamma[ch] * invstd / m * (m * bn_grad(dy, y_relu, i) - dbeta[ch] - xhat * dgamma[ch]);
    }
}

extern "C" int cuda_batchnorm_bwd(hone_kctx *k, int n, int c, int hw, const float *x,
                                  const float *y_relu, const float *dy, const float *gamma,
                                  const float *save_mean, const float *save_invstd, float *dx,
                                  float *dgamma, float *dbeta)
{
    int total, rc;
    bn_split sp;
    if ((rc = bn_total(n, c, hw, &total)) < 0 || total == 0)
        return rc;
    if ((rc = bn_split_of(k, c, n * hw, &sp)) < 0)
        return rc;
    float *part = hc_of(k)->bn_part;
    k_bn_bwd_reduce<<<dim3(c, sp.S), BN_THREADS, 0, hc_stream(k)>>>(
        c, hw, n * hw, sp.len, x, y_relu, dy, save_mean, save_invstd, part);
    HC_LAUNCHED();
    k_bn_bwd_fold<<<(c + 3) / 4, FOLD_THREADS, 0, hc_stream(k)>>>(c, sp.S, part, dgamma, dbeta);
    HC_LAUNCHED();
    k_bn_bwd_apply<<<hc_blocks(k, (size_t)total), HC_THREADS, 0, hc_stream(k)>>>(
        total, c, hw, (float)(n * hw), x, y_relu, dy, gamma, save_mean, save_invstd, dgamma, dbeta,
        dx);
    HC_LAUNCHED();
    return HONE_OK;
}

/* The folds above for half.cu's NHWC batch norm, whose own kernels write the same per-chunk
 * partials, chunk-major ([S][c][2] floats), into the context's bn_part area (S chunks of len
 * values a channel). */
int hc_bn_fold_stats(hone_kctx *k, int c, int m, int S, int len, float *running_mean,
                     float *running_var, float momentum, float eps, float *save_mean,
                     float *save_invstd)
{
    k_bn_stats_fold<<<(c + 3) / 4, FOLD_THREADS, 0, hc_stream(k)>>>(
        c, m, S, len, hc_of(k)->bn_part, running_mean, running_var, momentum, eps, save_mean,
        save_invstd);
    HC_LAUNCHED();
    return HONE_OK;
}

int hc_bn_fold_grads(hone_kctx *k, int c, int S, float *dgamma, float *dbeta)
{
    k_bn_bwd_fold<<<(c + 3) / 4, FOLD_THREADS, 0, hc_stream(k)>>>(c, S, hc_of(k)->bn_part, dgamma,
                                                                  dbeta);
    HC_LAUNCHED();
    return HONE_OK;
}

/* ------------------------------------------------------------------ per-channel bias
 * A convolution's bias over [n, c, hw] (conv_cudnn.cu): the gradient is the channel sum of dy,
 * the chunked reduction above without the second statistic; cuDNN's own pair
 * (cudnnConvolutionBackwardBias, cudnnAddTensor) took 30% of the reference CNN's step on an
 * H100 (stop 12: 106 us of 427). */

/* grid (C, S): part[s * C + ch] = this chunk's sum of x. */
__global__ static void k_chan_sum(int c, int hw, int m, int len, const float *__restrict__ x,
                                  float *__restrict__ part)
{
    int ch = blockIdx.x, s = blockIdx.y;
    int j0 = s * len, j1 = min(m, j0 + len);
    float sum = 0.f;
    for (int j = j0 + threadIdx.x; j < j1; j += blockDim.x)
        sum += x[bn_at(j, hw, c, ch)];
    sum = hc_block_sum(sum);
    if (threadIdx.x == 0)
        part[(size_t)s * gridDim.x + ch] = sum;
}

/* A warp per channel: out[ch] = the chunks' sums (the folds' order). */
__global__ static void k_chan_sum_fold(int c, int S, const float *__restrict__ part,
                                       float *__restrict__ out)
{
    int ch = blockIdx.x * (FOLD_THREADS / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (ch >= c)
        return;
    float sum = 0.f;
    for (int s = lane; s < S; s += 32)
        sum += part[(size_t)s * c + ch];
    sum = warp_fold_sum(sum);
    if (lane == 0)
        out[ch] = sum;
}

/* y[n, ch, :] += b[ch]. */
__global__ static void k_chan_add(int total, int c, int hw, const float *__restrict__ b,
                                  float *__restrict__ y)
{
    HC_FOR32(i, total)
    y[i] += b[(i / hw) % c];
}

int hc_channel_sum(hone_kctx *k, int n, int c, int hw, const float *x, float *out)
{
    int total, rc;
    bn_split sp;
    if ((rc = bn_total(n, c, hw, &total)) < 0 || total == 0)
        return rc;
    if ((rc = bn_split_of(k, c, n * hw, &sp)) < 0)
        return rc;
    float *part = hc_of(k)->bn_part;
    k_chan_sum<<<dim3(c, sp.S), BN_THREADS, 0, hc_stream(k)>>>(c, hw, n * hw, sp.len, x, part);
    HC_LAUNCHED();
    k_chan_sum_fold<<<(c + 3) / 4, FOLD_THREADS, 0, hc_stream(k)>>>(c, sp.S, part, out);
    HC_LAUNCHED();
    return HONE_OK;
}

int hc_channel_add(hone_kctx *k, int n, int c, int hw, const float *b, float *y)
{
    int total, rc;
    if ((rc = bn_total(n, c, hw, &total)) < 0 || total == 0)
        return rc;
    k_chan_add<<<hc_blocks(k, (size_t)total), HC_THREADS, 0, hc_stream(k)>>>(total, c, hw, b, y);
    HC_LAUNCHED();
    return HONE_OK;
}
