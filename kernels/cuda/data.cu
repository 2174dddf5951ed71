/* CUDA backend: data movement on the device for a host-free epoch: shuffled mini-batch gather
 * (base index read on the device so a captured step walks the epoch; float rows, or uint8 images
 * augmented and normalised in the same pass), device counters and the epoch permutation (stable
 * radix sort of backend.h's random keys). The image arithmetic is backend.h's, shared with the
 * CPU backend, so both produce the same floats. */
#include <cub/device/device_radix_sort.cuh>

#include "common.cuh"

__global__ static void k_gather_rows(const float *src, const int32_t *src_labels,
                                     const int32_t *idx, const int32_t *base_dev, int base, int n,
                                     int row, float *dst, int32_t *dst_labels)
{
    int b = base_dev ? *base_dev : base;
    for (int i = blockIdx.x; i < n; i += gridDim.x) {
        int32_t r = idx[b + i];
        const float *s = src + (size_t)r * row;
        float *d = dst + (size_t)i * row;
        if ((row & 3) == 0 && (((uintptr_t)s | (uintptr_t)d) & 15) == 0) {
            for (int j = threadIdx.x; j < row / 4; j += blockDim.x)
                ((float4 *)d)[j] = ((const float4 *)s)[j];
        } else {
            for (int j = threadIdx.x; j < row; j += blockDim.x)
                d[j] = s[j];
        }
        if (dst_labels && threadIdx.x == 0)
            dst_labels[i] = src_labels[r];
    }
}

extern "C" int cuda_gather_rows(hone_kctx *k, const float *src, const int32_t *src_labels,
                                const int32_t *idx, const int32_t *base_dev, int base, int n,
                                int row, float *dst, int32_t *dst_labels)
{
    if (n == 0)
        return HONE_OK;
    unsigned blocks = (unsigned)(n < 65535 ? n : 65535);
    k_gather_rows<<<blocks, 128, 0, hc_stream(k)>>>(src, src_labels, idx, base_dev, base, n, row,
                                                    dst, dst_labels);
    HC_LAUNCHED();
    return HONE_OK;
}

__global__ static void k_counter_add(int32_t *counter, int step)
{
    *counter += step;
}

extern "C" int cuda_counter_add(hone_kctx *k, int32_t *counter, int step)
{
    k_counter_add<<<1, 1, 0, hc_stream(k)>>>(counter, step);
    HC_LAUNCHED();
    return HONE_OK;
}

__global__ static void k_perm_keys(uint32_t *keys, int32_t *vals, int n, uint64_t seed,
                                   uint64_t epoch)
{
    HC_FOR(i, n)
    {
        keys[i] = hone_rng_u32(seed, epoch, (uint64_t)i);
        vals[i] = (int32_t)i;
    }
}

/* Scratch comes from the stream-ordered allocator, so this also works inside a graph capture. */
extern "C" int cuda_permutation(hone_kctx *k, int32_t *idx, int n, uint64_t seed, uint64_t epoch)
{
    if (n <= 0)
        return HONE_OK;
    cudaStream_t st = hc_stream(k);
    size_t temp = 0;
    HC_CHECK(cub::DeviceRadixSort::SortPairs(NULL, temp, (const uint32_t *)NULL, (uint32_t *)NULL,
                                             (const int32_t *)NULL, (int32_t *)NULL, n, 0, 32, st));
    size_t nb = ((size_t)n * 4 + 255) & ~(size_t)255;
    char *buf = NULL;
    HC_CHECK(cudaMallocAsync((void **)&buf, 3 * nb + temp, st));
    uint32_t *kin = (uint32_t *)buf, *kout = (uint32_t *)(buf + nb);
    int32_t *vin = (int32_t *)(buf + 2 * nb);
    k_perm_keys<<<hc_blocks(k, n), HC_THREADS, 0, st>>>(kin, vin, n, seed, epoch);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        e = cub::DeviceRadixSort::SortPairs(buf + 3 * nb, temp, kin, kout, vin, idx, n, 0, 32, st);
    cudaError_t f = cudaFreeAsync(buf, st);
    if (e != cudaSuccess)
        return hc_fail(__FILE__, __LINE__, "permutation", cudaGetErrorString(e));
    HC_CHECK(f);
    return HONE_OK;
}

/* One block per image (grid-stride over images): the contrast mean's integer luma sum first (a
 * block reduction, only with jitter), then each thread writes whole pixels, all channels. */
__global__ static void k_gather_images(const uint8_t *src, const int32_t *src_labels,
                                       const int32_t *idx, const int32_t *base_dev, int base, int n,
                                       int c, int h, int w, const float *mean, const float *inv_std,
                                       hone_kaugment aug, int augment, const uint64_t *counter,
                                       float *dst, int32_t *dst_labels)
{
    __shared__ unsigned long long gsum;
    int b = base_dev ? *base_dev : base;
    uint64_t c0 = augment ? *counter : 0;
    int hw = h * w, jitter = augment && aug.jitter > 0.0f;
    float mn[4], is[4];
    for (int ch = 0; ch < c; ch++) {
        mn[ch] = mean[ch];
        is[ch] = inv_std[ch];
    }
    for (int i = blockIdx.x; i < n; i += gridDim.x) {
        int32_t r = idx ? idx[b + i] : b + i;
        const uint8_t *img = src + (size_t)r * hw * c;
        float *out = dst + (size_t)i * c * hw;
        if (dst_labels && threadIdx.x == 0)
            dst_labels[i] = src_labels[r];
        hone_aug_draw d = {0};
        if (augment)
            hone_aug_draw_image(&aug, h, w, c0, i, &d);
        float m = 0.0f;
        if (jitter) {
            if (threadIdx.x == 0)
                gsum = 0;
            __syncthreads();
            unsigned long long g = 0;
            for (int p = threadIdx.x; p < hw; p += blockDim.x) {
                int o = d.affine ? p : hone_aug_source(&d, h, w, p / w, p % w);
                g += o < 0 ? 0u : hone_aug_luma(img + (size_t)o * c, c);
            }
            atomicAdd(&gsum, g);
            __syncthreads();
            m = (float)((double)gsum / (255.0 * (double)hw));
            __syncthreads(); /* gsum is reset for the next image only after all have read it */
        }
        if (d.affine) { /* detection: warped (no crop, no cutout) */
            for (int p = threadIdx.x; p < hw; p += blockDim.x) {
                float v[4];
                hone_aug_warp(img, c, h, w, &d, p / w, p % w, mn, v);
                hone_aug_finish(v, c, &d, jitter, m, 0, mn, is, out + p, (size_t)hw);
            }
            continue;
        }
        for (int p = threadIdx.x; p < hw; p += blockDim.x) {
            int y = p / w, x = p % w;
            int o = hone_aug_source(&d, h, w, y, x);
            int cut = d.cut > 0 && y >= d.y0 && y < d.y0 + d.cut && x >= d.x0 && x < d.x0 + d.cut;
            hone_aug_pixel(o < 0 ? NULL : img + (size_t)o * c, c, &d, jitter, m, cut, mn, is,
                           out + p, (size_t)hw);
        }
    }
}

__global__ static void k_counter64_inc(uint64_t *counter)
{
    *counter += 1;
}

extern "C" int cuda_gather_images(hone_kctx *k, const uint8_t *src, const int32_t *src_labels,
                                  const int32_t *idx, const int32_t *base_dev, int base, int n,
                                  int c, int h, int w, const float *mean, const float *inv_std,
                                  const hone_kaugment *aug, uint64_t *counter, float *dst,
                                  int32_t *dst_labels)
{
    cudaStream_t st = hc_stream(k);
    hone_kaugment a = {0, 0, 0.0f, 0, 0, 0, 0.0f, 1.0f, 1.0f};
    if (aug)
        a = *aug;
    if (n > 0) {
        unsigned blocks = (unsigned)(n < 65535 ? n : 65535);
        int threads = h * w >= 256 ? 256 : ((h * w + 31) / 32) * 32;
        k_gather_images<<<blocks, threads, 0, st>>>(src, src_labels, idx, base_dev, base, n, c, h,
                                                    w, mean, inv_std, a, aug != NULL, counter, dst,
                                                    dst_labels);
        HC_LAUNCHED();
    }
    if (aug) {
        k_counter64_inc<<<1, 1, 0, st>>>(counter);
        HC_LAUNCHED();
    }
    return HONE_OK;
}
