/* CUDA backend: data movement on the device for a host-free epoch: shuffled mini-batch gather
 * (base index read on the device so a captured step walks the epoch), device counters, the
 * epoch permutation (stable radix sort of backend.h's random keys) and flip/shift augmentation. */
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

/* One block per (image, channel) plane, staged in shared memory (planes up to 48 KB). */
__global__ static void k_augment_smem(float *x, int c, int h, int w, int flip, int shift,
                                      uint64_t seed, const uint64_t *counter)
{
    extern __shared__ float plane[];
    int j = blockIdx.x / c;
    uint32_t u = hone_rng_u32(seed, *counter, (uint64_t)j);
    int fl = flip && (u & 1u), dx = 0, dy = 0;
    if (shift > 0) {
        uint32_t span = (uint32_t)(2 * shift + 1);
        dx = (int)((u >> 1) % span) - shift;
        dy = (int)((u >> 17) % span) - shift;
    }
    if (!fl && dx == 0 && dy == 0)
        return;
    int hw = h * w;
    float *img = x + (size_t)blockIdx.x * hw;
    for (int i = threadIdx.x; i < hw; i += blockDim.x)
        plane[i] = img[i];
    __syncthreads();
    for (int i = threadIdx.x; i < hw; i += blockDim.x) {
        int yy = i / w, xx = i % w;
        int sy = yy - dy, sx = xx - dx;
        if (fl)
            sx = w - 1 - sx;
        img[i] = (sy >= 0 && sy < h && sx >= 0 && sx < w) ? plane[sy * w + sx] : 0.f;
    }
}

/* Large planes: read from a copy of the batch. */
__global__ static void k_augment_copy(const float *src, float *x, int n, int c, int h, int w,
                                      int flip, int shift, uint64_t seed, const uint64_t *counter)
{
    size_t hw = (size_t)h * w, total = (size_t)n * c * hw;
    uint64_t ctr = *counter;
    HC_FOR(i, total)
    {
        int j = (int)(i / (hw * c));
        uint32_t u = hone_rng_u32(seed, ctr, (uint64_t)j);
        int fl = flip && (u & 1u), dx = 0, dy = 0;
        if (shift > 0) {
            uint32_t span = (uint32_t)(2 * shift + 1);
            dx = (int)((u >> 1) % span) - shift;
            dy = (int)((u >> 17) % span) - shift;
        }
        int yy = (int)((i % hw) / w), xx = (int)(i % w);
        int sy = yy - dy, sx = xx - dx;
        if (fl)
            sx = w - 1 - sx;
        const float *p = src + (i - i % hw);
        x[i] = (sy >= 0 && sy < h && sx >= 0 && sx < w) ? p[(size_t)sy * w + sx] : 0.f;
    }
}

__global__ static void k_counter64_inc(uint64_t *counter)
{
    *counter += 1;
}

extern "C" int cuda_augment(hone_kctx *k, float *x, int n, int c, int h, int w, int flip, int shift,
                            uint64_t seed, uint64_t *counter)
{
    cudaStream_t st = hc_stream(k);
    size_t hw = (size_t)h * w, total = (size_t)n * c * hw;
    if (total > 0 && (flip || shift > 0)) {
        if (hw * sizeof(float) <= 48 * 1024) {
            k_augment_smem<<<n * c, HC_THREADS, hw * sizeof(float), st>>>(x, c, h, w, flip, shift,
                                                                          seed, counter);
            HC_LAUNCHED();
        } else {
            float *tmp = NULL;
            HC_CHECK(cudaMallocAsync((void **)&tmp, total * sizeof(float), st));
            cudaError_t e =
                cudaMemcpyAsync(tmp, x, total * sizeof(float), cudaMemcpyDeviceToDevice, st);
            if (e == cudaSuccess) {
                k_augment_copy<<<hc_blocks(k, total), HC_THREADS, 0, st>>>(tmp, x, n, c, h, w, flip,
                                                                           shift, seed, counter);
                e = cudaGetLastError();
            }
            cudaError_t f = cudaFreeAsync(tmp, st);
            if (e != cudaSuccess)
                return hc_fail(__FILE__, __LINE__, "augment", cudaGetErrorString(e));
            HC_CHECK(f);
        }
    }
    k_counter64_inc<<<1, 1, 0, st>>>(counter);
    HC_LAUNCHED();
    return HONE_OK;
}
