/* CUDA backend: 2-D convolution through cuDNN (compiled only with HONE_HAVE_CUDNN), on the same
 * NCHW fp32 tensors as the rest of the backend, and on the bf16 NHWC tensors of half.cu (the
 * tensor-core path cuDNN runs without transposes). Each shape gets its descriptors and algorithms
 * once, from cuDNN's heuristics (host-only calls: no device memory, no sync), kept in a small
 * table of the context; fwd/bwd then only enqueue cuDNN work on the context's stream with the
 * caller's workspace, so they stay capturable in a CUDA graph. Never allocates device memory. */
#ifdef HONE_HAVE_CUDNN
#include <cudnn.h>
#include <stdlib.h>
#include <string.h>

#include "conv_cudnn.cuh"

/* Algorithms per shape for two math modes: exact fp32 (CUDNN_FMA_MATH: HONE_MATH_FP32) and
 * tensor cores (CUDNN_DEFAULT_MATH: TF32 for fp32 tensors; HONE_MATH_BF16 runs this too, as the
 * tensors stay fp32). The workspace covers both, so hone_k_set_math may change after
 * hone_k_conv_workspace. */
enum { DNN_FMA = 0, DNN_TC = 1, DNN_MODES = 2 };
enum { DNN_FWD = 0, DNN_BWD_DATA = 1, DNN_BWD_FILTER = 2, DNN_PASSES = 3 };
/* Algorithms needing more scratch than 1/32 of the device's memory (at least 256 MiB) are passed
 * over. A 256 MiB cap left ResNet-18's 64-channel 3x3 at batch 512 with a 4x slower algorithm;
 * the chosen ones on an H100 need at most 1.4 GiB (the im2col path needed 4.7 GiB). */
#define DNN_WS_MIN_CAP ((size_t)256 << 20)

struct hc_dnn_conv {
    hone_conv_desc d;
    int half; /* 1: bf16 NHWC tensors and KRSC filters, tensor-core mode only */
    int ok;   /* 0: no algorithm found (or a cuDNN error): the im2col path runs this shape */
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    /* per mode and pass, set to the chosen algorithm's math type */
    cudnnConvolutionDescriptor_t conv[DNN_MODES][DNN_PASSES];
    cudnnConvolutionFwdAlgo_t fwd[DNN_MODES];
    cudnnConvolutionBwdDataAlgo_t bwd_data[DNN_MODES];
    cudnnConvolutionBwdFilterAlgo_t bwd_filter[DNN_MODES];
    size_t ws; /* the most any of the six algorithms needs */
};

struct hc_dnn {
    cudnnHandle_t h;
    hc_dnn_conv **shapes; /* linear search: a network has a few dozen shapes */
    int n, cap;
    size_t ws_cap; /* the most scratch an algorithm may ask for */
    int min_c;     /* HONE_CUDNN_MIN_C: fp32 shapes of fewer input channels take the im2col path */
    int log;       /* HONE_CUDNN_LOG=1: each shape's algorithms on stderr, once */
    char name[32];
};

#define HC_DNN(call)                                                                               \
    do {                                                                                           \
        cudnnStatus_t s_ = (call);                                                                 \
        if (s_ != CUDNN_STATUS_SUCCESS)                                                            \
            return hc_fail(__FILE__, __LINE__, #call, cudnnGetErrorString(s_));                    \
    } while (0)

/* Diagnostics for the speed of the fp32 path (bench/regress.sh, bench/NOTES-gpu.md), read once per
 * context: HONE_CUDNN=OFF runs every convolution on the im2col path as a build without cuDNN
 * does (the bf16 NHWC path, which needs cuDNN, is then off too); HONE_CUDNN_MIN_C=N sends fp32
 * shapes of fewer than N input channels there (the direct kernels for C*R*S <= 27);
 * HONE_CUDNN_LOG=1 prints each shape's chosen algorithms against cuDNN's first-ranked one. */
int hc_dnn_new(cudaStream_t stream, hc_dnn **out)
{
    *out = NULL;
    const char *off = getenv("HONE_CUDNN");
    if (off && (!strcmp(off, "OFF") || !strcmp(off, "off") || !strcmp(off, "0"))) {
        fprintf(stderr, "hone cuda: HONE_CUDNN=%s: convolutions use im2col + cuBLAS\n", off);
        return HONE_OK;
    }
    cudnnHandle_t h = NULL;
    cudnnStatus_t s = cudnnCreate(&h);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnSetStream(h, stream);
    if (s != CUDNN_STATUS_SUCCESS) {
        fprintf(stderr, "hone cuda: cuDNN unavailable (%s): convolutions use im2col + cuBLAS\n",
                cudnnGetErrorString(s));
        if (h)
            cudnnDestroy(h);
        return HONE_OK;
    }
    hc_dnn *dn = (hc_dnn *)hone_xcalloc(1, sizeof(*dn));
    dn->h = h;
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        cudaGetLastError(); /* not sticky: the minimum cap then */
        total_b = 0;
    }
    dn->ws_cap = total_b / 32 > DNN_WS_MIN_CAP ? total_b / 32 : DNN_WS_MIN_CAP;
    const char *min_c = getenv("HONE_CUDNN_MIN_C"), *log = getenv("HONE_CUDNN_LOG");
    dn->min_c = min_c ? atoi(min_c) : 0;
    dn->log = log && !strcmp(log, "1");
    size_t v = cudnnGetVersion(); /* 91900: major*10000 + minor*100 + patch (cuDNN 9) */
    snprintf(dn->name, sizeof(dn->name), "cudnn %zu.%zu.%zu", v / 10000, v / 100 % 100, v % 100);
    *out = dn;
    return HONE_OK;
}

static void conv_free(hc_dnn_conv *e)
{
    cudnnDestroyTensorDescriptor(e->x);
    cudnnDestroyTensorDescriptor(e->y);
    cudnnDestroyFilterDescriptor(e->w);
    for (int m = 0; m < DNN_MODES; m++)
        for (int p = 0; p < DNN_PASSES; p++)
            cudnnDestroyConvolutionDescriptor(e->conv[m][p]);
    free(e);
}

void hc_dnn_free(hc_dnn *dn)
{
    if (!dn)
        return;
    for (int i = 0; i < dn->n; i++)
        conv_free(dn->shapes[i]);
    free(dn->shapes);
    cudnnDestroy(dn->h);
    free(dn);
}

const char *hc_dnn_name(const hc_dnn *dn)
{
    return dn->name;
}

/* The FFT algorithms are never used: cuDNN 9's fft2d_r2c_64x64 forward wrote past the end of its
 * workspace (compute-sanitizer: 16-byte writes 0.9 MB beyond a 265 MB workspace, Xid 31 MMU
 * faults) on detectnet_v2's fp32 head at width 80 and an evaluation batch of 24, which failed
 * AutoML trials; TensorFlow's redzone checks report the same class of cuDNN bug. */
static bool is_fft(cudnnConvolutionFwdAlgo_t a)
{
    return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING;
}
static bool is_fft(cudnnConvolutionBwdDataAlgo_t a)
{
    return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT ||
           a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING;
}
static bool is_fft(cudnnConvolutionBwdFilterAlgo_t a)
{
    return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT ||
           a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING;
}

/* The first usable algorithm in cuDNN's ranking: deterministic ones first (the im2col path and
 * the CPU backend are deterministic, and training runs should repeat), within the scratch cap,
 * never an FFT one. -1: none. */
template <typename Perf> static int pick(const Perf *perf, int got, size_t cap)
{
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < got; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= cap &&
                !is_fft(perf[i].algo) && (pass == 1 || perf[i].determinism == CUDNN_DETERMINISTIC))
                return i;
    return -1;
}

/* HONE_CUDNN_LOG=1: pass's choice (rank i of got) against the first-ranked algorithm, and why
 * that one was passed over. */
template <typename Perf>
static void log_pick(const hc_dnn *dn, const hc_dnn_conv *e, int m, const char *pass,
                     const Perf *perf, int got, int i)
{
    if (!dn->log || got < 1)
        return;
    const hone_conv_desc *d = &e->d;
    const Perf *f = &perf[0];
    const char *why = i == 0                                  ? "taken"
                      : f->status != CUDNN_STATUS_SUCCESS     ? "not supported"
                      : f->memory > dn->ws_cap                ? "scratch over the cap"
                      : is_fft(f->algo)                       ? "FFT, never used"
                      : f->determinism != CUDNN_DETERMINISTIC ? "not deterministic"
                                                              : "?";
    fprintf(stderr,
            "hone cuda: cudnn %s n%d c%d %dx%d k%d r%dx%d s%d p%d %s: algo %d (rank %d of %d, "
            "%zu KiB, math %d); first ranked algo %d (%zu KiB): %s\n",
            e->half        ? "bf16"
            : m == DNN_FMA ? "fp32"
                           : "tf32",
            d->n, d->c, d->h, d->w, d->k, d->r, d->s, d->stride, d->pad, pass,
            i >= 0 ? (int)perf[i].algo : -1, i, got, i >= 0 ? perf[i].memory >> 10 : 0,
            i >= 0 ? (int)perf[i].mathType : -1, (int)f->algo, f->memory >> 10, why);
}

/* Chooses mode m's three algorithms and sets each pass's descriptor to its math type (FMA mode
 * keeps CUDNN_FMA_MATH: DEFAULT would let cuDNN use TF32). Raises e->ws. The bf16 NHWC shapes ask
 * for CUDNN_TENSOR_OP_MATH: with DEFAULT the v7 heuristics of cuDNN 9 on an H100 ranked first
 * algorithms that convert to fp32 NCHW and skip the tensor cores (a ResNet-18 epoch took 120 s
 * instead of 0.9). cuDNN's own timing (cudnnFind*) picked as fast a set, but one that changed from
 * run to run with the timing noise, so results did not repeat; the heuristics' choice does. */
static int choose(hc_dnn *dn, hc_dnn_conv *e, int m)
{
    cudnnMathType_t want = m == DNN_FMA ? CUDNN_FMA_MATH
                           : e->half    ? CUDNN_TENSOR_OP_MATH
                                        : CUDNN_DEFAULT_MATH;
    for (int p = 0; p < DNN_PASSES; p++)
        HC_DNN(cudnnSetConvolutionMathType(e->conv[m][p], want));
    int got = 0, i;
    size_t bytes = 0;

    cudnnConvolutionFwdAlgoPerf_t fp[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    HC_DNN(cudnnGetConvolutionForwardAlgorithm_v7(dn->h, e->x, e->w, e->conv[m][DNN_FWD], e->y,
                                                  CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, fp));
    i = pick(fp, got, dn->ws_cap);
    log_pick(dn, e, m, "fwd", fp, got, i);
    if (i < 0)
        return HONE_ENOTSUP;
    e->fwd[m] = fp[i].algo;
    if (m == DNN_TC)
        HC_DNN(cudnnSetConvolutionMathType(e->conv[m][DNN_FWD], fp[i].mathType));
    HC_DNN(cudnnGetConvolutionForwardWorkspaceSize(dn->h, e->x, e->w, e->conv[m][DNN_FWD], e->y,
                                                   e->fwd[m], &bytes));
    e->ws = bytes > e->ws ? bytes : e->ws;

    cudnnConvolutionBwdDataAlgoPerf_t dp[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    HC_DNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(dn->h, e->w, e->y, e->conv[m][DNN_BWD_DATA],
                                                       e->x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                       &got, dp));
    i = pick(dp, got, dn->ws_cap);
    log_pick(dn, e, m, "bwd_data", dp, got, i);
    if (i < 0)
        return HONE_ENOTSUP;
    e->bwd_data[m] = dp[i].algo;
    if (m == DNN_TC)
        HC_DNN(cudnnSetConvolutionMathType(e->conv[m][DNN_BWD_DATA], dp[i].mathType));
    HC_DNN(cudnnGetConvolutionBackwardDataWorkspaceSize(dn->h, e->w, e->y, e->conv[m][DNN_BWD_DATA],
                                                        e->x, e->bwd_data[m], &bytes));
    e->ws = bytes > e->ws ? bytes : e->ws;

    cudnnConvolutionBwdFilterAlgoPerf_t wp[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    HC_DNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        dn->h, e->x, e->y, e->conv[m][DNN_BWD_FILTER], e->w,
        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, wp));
    i = pick(wp, got, dn->ws_cap);
    log_pick(dn, e, m, "bwd_filter", wp, got, i);
    if (i < 0)
        return HONE_ENOTSUP;
    e->bwd_filter[m] = wp[i].algo;
    if (m == DNN_TC)
        HC_DNN(cudnnSetConvolutionMathType(e->conv[m][DNN_BWD_FILTER], wp[i].mathType));
    HC_DNN(cudnnGetConvolutionBackwardFilterWorkspaceSize(
        dn->h, e->x, e->y, e->conv[m][DNN_BWD_FILTER], e->w, e->bwd_filter[m], &bytes));
    e->ws = bytes > e->ws ? bytes : e->ws;
    return HONE_OK;
}

/* Fills a fresh entry: descriptors for d, then both modes' algorithms (half: the tensor-core
 * mode only; its FMA slot is never used). */
static int conv_init(hc_dnn *dn, hc_dnn_conv *e, const hone_conv_desc *d, int half)
{
    e->d = *d;
    e->half = half;
    cudnnTensorFormat_t fmt = half ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    cudnnDataType_t type = half ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
    HC_DNN(cudnnCreateTensorDescriptor(&e->x));
    HC_DNN(cudnnCreateTensorDescriptor(&e->y));
    HC_DNN(cudnnCreateFilterDescriptor(&e->w));
    HC_DNN(cudnnSetTensor4dDescriptor(e->x, fmt, type, d->n, d->c, d->h, d->w));
    HC_DNN(cudnnSetTensor4dDescriptor(e->y, fmt, type, d->n, d->k, d->p, d->q));
    HC_DNN(cudnnSetFilter4dDescriptor(e->w, type, fmt, d->k, d->c, d->r, d->s));
    for (int m = 0; m < DNN_MODES; m++)
        for (int p = 0; p < DNN_PASSES; p++) {
            HC_DNN(cudnnCreateConvolutionDescriptor(&e->conv[m][p]));
            HC_DNN(cudnnSetConvolution2dDescriptor(e->conv[m][p], d->pad, d->pad, d->stride,
                                                   d->stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                                   CUDNN_DATA_FLOAT));
        }
    int n, c, p, q;
    HC_DNN(cudnnGetConvolution2dForwardOutputDim(e->conv[0][0], e->x, e->w, &n, &c, &p, &q));
    if (n != d->n || c != d->k || p != d->p || q != d->q)
        return hc_fail(__FILE__, __LINE__, "cudnn output shape", "differs from hone_conv_desc");
    int rc;
    for (int m = half ? DNN_TC : 0; m < DNN_MODES; m++)
        if ((rc = choose(dn, e, m)) < 0)
            return rc;
    return HONE_OK;
}

static const hc_dnn_conv *conv_find(hone_kctx *k, const hone_conv_desc *d, int half)
{
    hc_dnn *dn = hc_of(k)->dnn;
    if (!dn || (!half && d->c < dn->min_c))
        return NULL;
    for (int i = 0; i < dn->n; i++) {
        hc_dnn_conv *e = dn->shapes[i];
        if (memcmp(&e->d, d, sizeof(*d)) == 0 && e->half == half)
            return e->ok ? e : NULL;
    }
    hc_dnn_conv *e = (hc_dnn_conv *)hone_xcalloc(1, sizeof(*e));
    e->ok = conv_init(dn, e, d, half) == HONE_OK;
    if (!e->ok)
        fprintf(stderr,
                "hone cuda: no cuDNN %salgorithm for conv n%d c%d %dx%d k%d r%dx%d s%d p%d: %s\n",
                half ? "bf16 " : "", d->n, d->c, d->h, d->w, d->k, d->r, d->s, d->stride, d->pad,
                half ? "fp32 training" : "im2col path");
    if (dn->n == dn->cap) {
        dn->cap = dn->cap ? 2 * dn->cap : 16;
        dn->shapes = (hc_dnn_conv **)hone_xrealloc(dn->shapes, sizeof(*dn->shapes) * dn->cap);
    }
    dn->shapes[dn->n++] = e; /* kept even when !ok, so the failure is reported once */
    return e->ok ? e : NULL;
}

const hc_dnn_conv *hc_dnn_conv_find(hone_kctx *k, const hone_conv_desc *d)
{
    return conv_find(k, d, 0);
}

const hc_dnn_conv *hc_dnn_conv_find_h(hone_kctx *k, const hone_conv_desc *d)
{
    return conv_find(k, d, 1);
}

size_t hc_dnn_conv_workspace(const hc_dnn_conv *e)
{
    return e->ws;
}

static int mode_of(hone_kctx *k)
{
    return k->math == HONE_MATH_FP32 ? DNN_FMA : DNN_TC;
}

int hc_dnn_conv_fwd(hone_kctx *k, const hc_dnn_conv *e, const float *x, const float *w,
                    const float *b, float *y, void *ws)
{
    cudnnHandle_t h = hc_of(k)->dnn->h;
    int m = mode_of(k);
    const float one = 1.f, zero = 0.f;
    HC_DNN(cudnnConvolutionForward(h, &one, e->x, x, e->w, w, e->conv[m][DNN_FWD], e->fwd[m], ws,
                                   e->ws, &zero, e->y, y));
    /* the bias (and its gradient below) are ours: cuDNN's took 30% of the reference CNN's step */
    return b ? hc_channel_add(k, e->d.n, e->d.k, e->d.p * e->d.q, b, y) : HONE_OK;
}

int hc_dnn_conv_bwd(hone_kctx *k, const hc_dnn_conv *e, const float *x, const float *w,
                    const float *dy, float *dx, float *dw, float *db, void *ws, int acc)
{
    cudnnHandle_t h = hc_of(k)->dnn->h;
    int m = mode_of(k);
    const float one = 1.f, zero = 0.f;
    int rc;
    if (db && (rc = hc_channel_sum(k, e->d.n, e->d.k, e->d.p * e->d.q, dy, db)) < 0)
        return rc;
    HC_DNN(cudnnConvolutionBackwardFilter(h, &one, e->x, x, e->y, dy, e->conv[m][DNN_BWD_FILTER],
                                          e->bwd_filter[m], ws, e->ws, &zero, e->w, dw));
    if (dx)
        HC_DNN(cudnnConvolutionBackwardData(h, &one, e->w, w, e->y, dy, e->conv[m][DNN_BWD_DATA],
                                            e->bwd_data[m], ws, e->ws, acc ? &one : &zero, e->x,
                                            dx));
    return HONE_OK;
}

/* bf16 NHWC (e->half): the tensor-core algorithms; dwh is the filter gradient in the filters'
 * own type and layout (bf16 KRSC). */
int hc_dnn_conv_fwd_h(hone_kctx *k, const hc_dnn_conv *e, const hone_bf16 *x, const hone_bf16 *w,
                      hone_bf16 *y, void *ws)
{
    const float one = 1.f, zero = 0.f;
    HC_DNN(cudnnConvolutionForward(hc_of(k)->dnn->h, &one, e->x, x, e->w, w,
                                   e->conv[DNN_TC][DNN_FWD], e->fwd[DNN_TC], ws, e->ws, &zero, e->y,
                                   y));
    return HONE_OK;
}

int hc_dnn_conv_bwd_h(hone_kctx *k, const hc_dnn_conv *e, const hone_bf16 *x, const hone_bf16 *w,
                      const hone_bf16 *dy, hone_bf16 *dx, int acc, hone_bf16 *dwh, void *ws)
{
    cudnnHandle_t h = hc_of(k)->dnn->h;
    const float one = 1.f, zero = 0.f;
    HC_DNN(cudnnConvolutionBackwardFilter(h, &one, e->x, x, e->y, dy,
                                          e->conv[DNN_TC][DNN_BWD_FILTER], e->bwd_filter[DNN_TC],
                                          ws, e->ws, &zero, e->w, dwh));
    if (dx)
        HC_DNN(cudnnConvolutionBackwardData(h, &one, e->w, w, e->y, dy,
                                            e->conv[DNN_TC][DNN_BWD_DATA], e->bwd_data[DNN_TC], ws,
                                            e->ws, acc ? &one : &zero, e->x, dx));
    return HONE_OK;
}
#endif
