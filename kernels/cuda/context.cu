/* CUDA backend: context (device, stream, cuBLAS handle and workspace, the cuDNN handle when built
 * with it), device memory, copies, synchronisation, CUDA Graph capture/replay and device queries.
 * Copies from or to host memory synchronise (the host buffer is the caller's); everything else
 * only enqueues on the stream. */
#include <stdlib.h>
#include <string.h>

#include "common.cuh"
#include "conv_cudnn.cuh"

#define HC_BLAS_WS_BYTES ((size_t)32 << 20)
#define HC_BN_PART_FLOATS ((size_t)1 << 20)

int hc_fail(const char *file, int line, const char *what, const char *msg)
{
    fprintf(stderr, "hone cuda: %s:%d: %s: %s\n", file, line, what, msg);
    return HONE_ECUDA;
}

extern "C" int cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky "no device" error */
        return 0;
    }
    return n;
}

extern "C" int cuda_device_name(int i, char *buf, size_t len, size_t *mem_bytes)
{
    if (i >= cuda_device_count())
        return HONE_ENOTSUP;
    cudaDeviceProp p;
    HC_CHECK(cudaGetDeviceProperties(&p, i));
    snprintf(buf, len, "%s", p.name);
    if (mem_bytes)
        *mem_bytes = p.totalGlobalMem;
    return HONE_OK;
}

/* As nvidia-smi writes it: "GPU-" and the 16 bytes as 8-4-4-4-12 lower-case hex digits. */
extern "C" int cuda_device_uuid(int i, char *buf, size_t len)
{
    if (i >= cuda_device_count())
        return HONE_ENOTSUP;
    cudaDeviceProp p;
    HC_CHECK(cudaGetDeviceProperties(&p, i));
    const unsigned char *b = (const unsigned char *)p.uuid.bytes;
    int n = snprintf(buf, len,
                     "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                     b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
                     b[12], b[13], b[14], b[15]);
    return n > 0 && (size_t)n < len ? HONE_OK : HONE_EINVAL;
}

extern "C" int cuda_ctx_init(hone_kctx *k)
{
    if (cuda_device_count() <= 0)
        return HONE_ENOTSUP;
    hone_cuda *c = (hone_cuda *)hone_xcalloc(1, sizeof(*c));
    k->cuda = c;
    int rc = HONE_ECUDA;
    cudaError_t e;
    cublasStatus_t s;
    if ((e = cudaGetDevice(&c->device)) != cudaSuccess ||
        (e = cudaDeviceGetAttribute(&c->sms, cudaDevAttrMultiProcessorCount, c->device)) !=
            cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking)) != cudaSuccess ||
        (e = cudaMalloc(&c->blas_ws, HC_BLAS_WS_BYTES)) != cudaSuccess ||
        (e = cudaMalloc(&c->bn_part, HC_BN_PART_FLOATS * sizeof(float))) != cudaSuccess) {
        hc_fail(__FILE__, __LINE__, "context", cudaGetErrorString(e));
        goto fail;
    }
    c->blas_ws_bytes = HC_BLAS_WS_BYTES;
    c->bn_part_floats = HC_BN_PART_FLOATS;
    if ((s = cublasCreate(&c->blas)) != CUBLAS_STATUS_SUCCESS ||
        (s = cublasSetStream(c->blas, c->stream)) != CUBLAS_STATUS_SUCCESS ||
        (s = cublasSetWorkspace(c->blas, c->blas_ws, c->blas_ws_bytes)) != CUBLAS_STATUS_SUCCESS ||
        (s = cublasSetPointerMode(c->blas, CUBLAS_POINTER_MODE_HOST)) != CUBLAS_STATUS_SUCCESS) {
        hc_fail(__FILE__, __LINE__, "cublas", cublasGetStatusString(s));
        goto fail;
    }
    if (hc_dnn_new(c->stream, &c->dnn) < 0)
        goto fail;
    return HONE_OK;
fail:
    cuda_ctx_release(k);
    return rc;
}

extern "C" void cuda_ctx_release(hone_kctx *k)
{
    hone_cuda *c = hc_of(k);
    if (!c)
        return;
    if (c->stream)
        cudaStreamSynchronize(c->stream);
    hc_dnn_free(c->dnn);
    if (c->blas)
        cublasDestroy(c->blas);
    cudaFree(c->blas_ws);
    cudaFree(c->scratch);
    cudaFree(c->bn_part);
    if (c->stream)
        cudaStreamDestroy(c->stream);
    free(c);
    k->cuda = NULL;
}

extern "C" void *cuda_alloc(hone_kctx *k, size_t bytes)
{
    (void)k;
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        fprintf(stderr, "hone cuda: cudaMalloc(%zu bytes): %s\n", bytes, cudaGetErrorString(e));
        abort();
    }
    return p;
}

extern "C" void cuda_free(hone_kctx *k, void *p)
{
    (void)k;
    cudaError_t e = cudaFree(p);
    if (e != cudaSuccess)
        fprintf(stderr, "hone cuda: cudaFree: %s\n", cudaGetErrorString(e));
}

/* Synchronises, so the caller's buffer is free on return. A per-step upload (hone-train's learning
 * rate) therefore stalls the pipeline of graph launches once per step; see bench/NOTES-gpu.md. */
extern "C" int cuda_upload(hone_kctx *k, void *dst, const void *host_src, size_t bytes)
{
    HC_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, hc_stream(k)));
    HC_CHECK(cudaStreamSynchronize(hc_stream(k)));
    return HONE_OK;
}

extern "C" int cuda_download(hone_kctx *k, void *host_dst, const void *src, size_t bytes)
{
    HC_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, hc_stream(k)));
    HC_CHECK(cudaStreamSynchronize(hc_stream(k)));
    return HONE_OK;
}

extern "C" int cuda_copy(hone_kctx *k, void *dst, const void *src, size_t bytes)
{
    HC_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, hc_stream(k)));
    return HONE_OK;
}

__global__ static void k_fill(float *x, float v, size_t n)
{
    HC_FOR(i, n) x[i] = v;
}

extern "C" int cuda_fill(hone_kctx *k, float *x, float v, size_t n)
{
    if (n == 0)
        return HONE_OK;
    k_fill<<<hc_blocks(k, n), HC_THREADS, 0, hc_stream(k)>>>(x, v, n);
    HC_LAUNCHED();
    return HONE_OK;
}

extern "C" int cuda_sync(hone_kctx *k)
{
    HC_CHECK(cudaStreamSynchronize(hc_stream(k)));
    HC_CHECK(cudaGetLastError());
    return HONE_OK;
}

/* Captures fn's work on the context stream into one executable graph. Thread-local capture mode:
 * fn must not allocate or copy from host memory (those calls fail and the capture is reported
 * broken). */
extern "C" int cuda_graph_capture(hone_kctx *k, hone_kgraph *g)
{
    cudaStream_t st = hc_stream(k);
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    HC_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    g->fn(g->arg);
    cudaError_t e = cudaStreamEndCapture(st, &graph);
    if (e != cudaSuccess) {
        if (graph)
            cudaGraphDestroy(graph);
        return hc_fail(__FILE__, __LINE__, "cudaStreamEndCapture", cudaGetErrorString(e));
    }
    e = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    if (e != cudaSuccess)
        return hc_fail(__FILE__, __LINE__, "cudaGraphInstantiate", cudaGetErrorString(e));
    e = cudaGraphUpload(exec, st);
    if (e != cudaSuccess) {
        cudaGraphExecDestroy(exec);
        return hc_fail(__FILE__, __LINE__, "cudaGraphUpload", cudaGetErrorString(e));
    }
    g->cuda = (void *)exec;
    return HONE_OK;
}

extern "C" int cuda_graph_launch(hone_kctx *k, hone_kgraph *g)
{
    HC_CHECK(cudaGraphLaunch((cudaGraphExec_t)g->cuda, hc_stream(k)));
    return HONE_OK;
}

extern "C" void cuda_graph_release(hone_kgraph *g)
{
    if (g->cuda)
        cudaGraphExecDestroy((cudaGraphExec_t)g->cuda);
    g->cuda = NULL;
}
