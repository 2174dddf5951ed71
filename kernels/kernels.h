/* kernels: the tensor ops the trainer uses, with one C API over two backends: a CPU reference
 * backend (kernels/cpu/, OpenBLAS for GEMM) and a CUDA backend (kernels/cuda/, cuBLAS + our own
 * kernels); each family of ops below has one file per backend under the same name
 * (kernels/cpu/pool.c beside kernels/cuda/pool.cu). All pointers passed to ops live on the
 * context's device; all ops are enqueued on the context's stream (CUDA) and never synchronise or
 * touch host memory, so a whole training step can be captured into a CUDA Graph. No I/O, no
 * globals.
 * Layout: dense float32, row-major; images NCHW. Ints are int32 on both backends. */
#ifndef HONE_KERNELS_H
#define HONE_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "hone.h"

typedef enum { HONE_DEV_CPU = 0, HONE_DEV_CUDA = 1 } hone_device;

typedef struct hone_kctx hone_kctx;

/* Creates a context. CUDA: HONE_ENOTSUP when the build has no CUDA or no GPU is present.
 * threads: CPU worker threads (0 = all cores); ignored on CUDA. */
int hone_kctx_new(hone_device dev, int threads, hone_kctx **out);
void hone_kctx_free(hone_kctx *k);
hone_device hone_kctx_device(const hone_kctx *k);
/* 1 if this build has the CUDA backend and a GPU is visible. */
int hone_cuda_available(void);
/* Human-readable device names, e.g. "NVIDIA H100 80GB HBM3", for the worker's registration. */
int hone_cuda_device_count(void);
int hone_cuda_device_name(int i, char *buf, size_t len, size_t *mem_bytes);
/* The GPU's UUID as nvidia-smi prints it ("GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", 41 bytes with
 * its NUL): one board whatever the numbering (CUDA_VISIBLE_DEVICES, device order). */
int hone_cuda_device_uuid(int i, char *buf, size_t len);

/* Memory on the context's device. alloc aborts on exhaustion (like hone_xmalloc). The memory
 * belongs to the device, not to the context: any context on the same device may read, write and
 * free it (alloc and free never touch a context's stream). Contexts are independent: each may be
 * used by its own thread at the same time as the others (a resident trainer's packed jobs). */
void *hone_k_alloc(hone_kctx *k, size_t bytes);
void hone_k_free(hone_kctx *k, void *p);
int hone_k_upload(hone_kctx *k, void *dst, const void *host_src, size_t bytes);
int hone_k_download(hone_kctx *k, void *host_dst, const void *src, size_t bytes);
int hone_k_copy(hone_kctx *k, void *dst, const void *src, size_t bytes);
int hone_k_fill(hone_kctx *k, float *x, float v, size_t n);
/* Waits until all enqueued work is done and returns the first error seen (CUDA). */
int hone_k_sync(hone_kctx *k);

/* Graph capture of a sequence of ops (CUDA Graphs; the CPU backend runs the function directly
 * on every replay). Capture only records: nothing runs until hone_kgraph_launch. fn must enqueue
 * the same work every time and must not read device results on the host (use device counters). */
typedef struct hone_kgraph hone_kgraph;
int hone_kgraph_capture(hone_kctx *k, void (*fn)(void *arg), void *arg, hone_kgraph **out);
int hone_kgraph_launch(hone_kctx *k, hone_kgraph *g);
void hone_kgraph_free(hone_kgraph *g);

/* Math mode for GEMM/conv on CUDA: fp32, tf32 tensor cores, or bf16 operands with fp32 accum.
 * The CPU backend always computes fp32. */
typedef enum { HONE_MATH_FP32 = 0, HONE_MATH_TF32 = 1, HONE_MATH_BF16 = 2 } hone_math;
void hone_k_set_math(hone_kctx *k, hone_math m);

/* ------------------------------------------------------------------ dense */

/* C[M,N] = alpha * op(A) op(B) + beta * C, row-major; op(A) is M x K, op(B) is K x N. */
int hone_k_gemm(hone_kctx *k, int transA, int transB, int M, int N, int K, float alpha,
                const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
/* y[n, c] += b[c] for an [n, c] matrix. */
int hone_k_bias_add(hone_kctx *k, float *y, const float *b, int n, int c);
/* db[c] (+)= sum_n dy[n, c]; accumulate=0 overwrites. */
int hone_k_bias_grad(hone_kctx *k, float *db, const float *dy, int n, int c, int accumulate);

/* ------------------------------------------------------------------ packed trials (HFTA)
 * The ops below run `count` independent problems of one shape at once: the layers of `count`
 * trials packed into one fused step (train/net.c with trials > 1). Operands are trial-major: the
 * problem t reads and writes each operand at its own offset t * stride (in floats). The CPU backend
 * runs the single op once per problem, so its results are bit for bit those of `count` single
 * calls; CUDA runs one strided-batched cuBLAS GEMM (the context's math) or one kernel for all. */

/* For t < count: C_t = alpha * op(A_t) op(B_t) + beta * C_t as hone_k_gemm, with X_t = X + t *
 * strideX. */
int hone_k_gemm_batched(hone_kctx *k, int transA, int transB, int M, int N, int K, float alpha,
                        const float *A, int lda, size_t strideA, const float *B, int ldb,
                        size_t strideB, float beta, float *C, int ldc, size_t strideC, int count);
/* y [count][n][c]: y_t[n, c] += b[t * b_stride + c]. */
int hone_k_bias_add_batched(hone_kctx *k, float *y, const float *b, size_t b_stride, int n, int c,
                            int count);
/* dy [count][n][c]: db[t * db_stride + c] (+)= sum_n dy_t[n, c]; accumulate=0 overwrites. */
int hone_k_bias_grad_batched(hone_kctx *k, float *db, size_t db_stride, const float *dy, int n,
                             int c, int accumulate, int count);

/* ------------------------------------------------------------------ convolution (NCHW) */

typedef struct hone_conv_desc {
    int n, c, h, w;  /* input */
    int k, r, s;     /* output channels, kernel height, width */
    int stride, pad; /* same in both directions */
    int p, q;        /* output height, width: filled by hone_conv_desc_init */
} hone_conv_desc;

int hone_conv_desc_init(hone_conv_desc *d, int n, int c, int h, int w, int k, int r, int s,
                        int stride, int pad);
/* Scratch bytes the backend needs for forward/backward of this shape (im2col buffers etc.). */
size_t hone_k_conv_workspace(hone_kctx *k, const hone_conv_desc *d);
/* y[n,k,p,q] = conv(x, w[k,c,r,s]) + b[k] (b may be NULL). */
int hone_k_conv_fwd(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                    const float *b, float *y, void *ws);
/* dx (may be NULL: first layer), dw, db (may be NULL) from dy. dw/db are overwritten. */
int hone_k_conv_bwd(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                    const float *dy, float *dx, float *dw, float *db, void *ws);

/* hone_k_conv_bwd for a layer whose hone_k_conv_fwd with the same d, x and ws was the last op to
 * write ws, x unchanged since: backends that lower convolution to im2col reuse the columns the
 * forward left in ws instead of rebuilding them. Same results as hone_k_conv_bwd. */
int hone_k_conv_bwd_reuse(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                          const float *dy, float *dx, float *dw, float *db, void *ws);

/* hone_k_conv_bwd (reuse = 0) or hone_k_conv_bwd_reuse (reuse = 1) that ADDS the data gradient to
 * dx (dx += instead of dx =): a layer whose output feeds several others (a residual block's input)
 * gets its gradient summed in place, without a scratch buffer and an extra pass. dx non-NULL. */
int hone_k_conv_bwd_acc(hone_kctx *k, const hone_conv_desc *d, const float *x, const float *w,
                        const float *dy, float *dx, float *dw, float *db, void *ws, int reuse);

/* Which implementation runs this context's convolutions, for logs and benchmarks: "cpu",
 * "cuda im2col + cublas", or "cudnn 9.19.0" (a CUDA build with cuDNN found at build and run time;
 * a shape cuDNN has no algorithm for still takes the im2col path, with a message on stderr). */
const char *hone_k_conv_impl(hone_kctx *k);

/* Convolution of `trials` packed trials (see "packed trials" above), each over d->n images:
 * x [trials][d->n][c][h][w], y [trials][d->n][k][p][q]; trial t's filters at w + t * w_stride and
 * its bias at b + t * b_stride (b may be NULL). The scratch comes from
 * hone_k_conv_workspace_batched for the same d and trials. CUDA: one im2col over all trials'
 * images, one strided-batched GEMM, one transpose with the bias (never cuDNN, which cannot step
 * filters by a trial stride; results may differ from a cuDNN solo run in the last bits). */
size_t hone_k_conv_workspace_batched(hone_kctx *k, const hone_conv_desc *d, int trials);
int hone_k_conv_fwd_batched(hone_kctx *k, const hone_conv_desc *d, int trials, const float *x,
                            const float *w, size_t w_stride, const float *b, size_t b_stride,
                            float *y, void *ws);
/* Backward of hone_k_conv_fwd_batched: dx [trials][d->n]... (may be NULL: first layer), trial t's
 * dw at dw + t * w_stride and db (may be NULL) at db + t * b_stride, overwritten. reuse = 1: the
 * layer's hone_k_conv_fwd_batched with the same d, trials, x and ws was the last op to write ws
 * (as hone_k_conv_bwd_reuse): the im2col path reuses its columns. Same results either way. */
int hone_k_conv_bwd_batched(hone_kctx *k, const hone_conv_desc *d, int trials, const float *x,
                            const float *w, size_t w_stride, const float *dy, float *dx, float *dw,
                            float *db, size_t b_stride, void *ws, int reuse);

/* ------------------------------------------------------------------ pooling, resampling */

/* 2x2-style max pooling with window `size` and `stride`; idx records the argmax (int32) for bwd. */
int hone_k_maxpool_fwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                       const float *x, float *y, int32_t *idx);
int hone_k_maxpool_bwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                       const float *dy, const int32_t *idx, float *dx);
/* Fused max pooling and ReLU (relu(maxpool(x)) == maxpool(relu(x))): y = max(0, maxpool(x)), idx
 * the argmax of x as in hone_k_maxpool_fwd. bwd: dx = maxpool_bwd(dy * (y > 0)) with y the fused
 * forward's output. One pass each way instead of a pool and a relu pass. */
int hone_k_maxpool_relu_fwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                            const float *x, float *y, int32_t *idx);
int hone_k_maxpool_relu_bwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                            const float *y, const float *dy, const int32_t *idx, float *dx);
/* Max pooling with zero-cost padding (the ImageNet stem's 3x3 stride-2 pad-1 pool): output
 * p = (h + 2*pad - size) / stride + 1 (q likewise), pad < size; padded positions never win (as
 * -inf). idx as hone_k_maxpool_fwd (offset in the input plane). bwd overwrites dx, summing dy over
 * overlapping windows that chose the same pixel. */
int hone_k_maxpool_pad_fwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride, int pad,
                           const float *x, float *y, int32_t *idx);
int hone_k_maxpool_pad_bwd(hone_kctx *k, int n, int c, int h, int w, int size, int stride, int pad,
                           const float *dy, const int32_t *idx, float *dx);
/* Global average pooling [n,c,h,w] -> [n,c]. */
int hone_k_avgpool_global_fwd(hone_kctx *k, int n, int c, int h, int w, const float *x, float *y);
int hone_k_avgpool_global_bwd(hone_kctx *k, int n, int c, int h, int w, const float *dy, float *dx);
/* Nearest-neighbour upsampling by an integer factor (detection heads). */
int hone_k_upsample_fwd(hone_kctx *k, int n, int c, int h, int w, int factor, const float *x,
                        float *y);
int hone_k_upsample_bwd(hone_kctx *k, int n, int c, int h, int w, int factor, const float *dy,
                        float *dx);

/* ------------------------------------------------------------------ elementwise */

int hone_k_relu_fwd(hone_kctx *k, const float *x, float *y, size_t n);
/* dx = dy * (y > 0); dx may alias dy. */
int hone_k_relu_bwd(hone_kctx *k, const float *y, const float *dy, float *dx, size_t n);
int hone_k_sigmoid_fwd(hone_kctx *k, const float *x, float *y, size_t n);
int hone_k_sigmoid_bwd(hone_kctx *k, const float *y, const float *dy, float *dx, size_t n);
/* Inverted dropout with keep probability 1-p; mask (uint8) is drawn from (seed, *counter) and
 * *counter lives on the device so replays of a graph draw fresh masks (the op advances it). */
int hone_k_dropout_fwd(hone_kctx *k, const float *x, float *y, uint8_t *mask, size_t n, float p,
                       uint64_t seed, uint64_t *counter);
int hone_k_dropout_bwd(hone_kctx *k, const float *dy, const uint8_t *mask, float *dx, size_t n,
                       float p);
/* Residual join: y = max(0, a + b) (one pass instead of an add and a relu). bwd: da = dy * (y > 0)
 * and, when db is non-NULL, db = the same (the gradient of both summands); da may alias dy. */
int hone_k_add_relu_fwd(hone_kctx *k, const float *a, const float *b, float *y, size_t n);
int hone_k_add_relu_bwd(hone_kctx *k, const float *y, const float *dy, float *da, float *db,
                        size_t n);
/* y = a*x + y */
int hone_k_axpy(hone_kctx *k, float a, const float *x, float *y, size_t n);
int hone_k_scale(hone_kctx *k, float *x, float a, size_t n);

/* ------------------------------------------------------------- batch norm (NCHW, per channel) */

/* Training mode: batch statistics, updates running mean/var with momentum; saves mean and
 * inverse std for bwd. Inference (training=0): running statistics. */
int hone_k_batchnorm_fwd(hone_kctx *k, int n, int c, int hw, const float *x, const float *gamma,
                         const float *beta, float *running_mean, float *running_var, float momentum,
                         float eps, int training, float *save_mean, float *save_invstd, float *y);
int hone_k_batchnorm_bwd(hone_kctx *k, int n, int c, int hw, const float *x, const float *dy,
                         const float *gamma, const float *save_mean, const float *save_invstd,
                         float *dx, float *dgamma, float *dbeta);
/* Batch norm then ReLU, one pass each way instead of a batch norm and a relu pass (a conv, BN,
 * ReLU chain): y = max(0, batchnorm(x)), statistics, running averages and saved values as
 * hone_k_batchnorm_fwd. bwd: y is this forward's output; the gradients of the composition, i.e.
 * hone_k_batchnorm_bwd with dy replaced by dy * (y > 0). dx may alias y or dy, not x. */
int hone_k_batchnorm_relu_fwd(hone_kctx *k, int n, int c, int hw, const float *x,
                              const float *gamma, const float *beta, float *running_mean,
                              float *running_var, float momentum, float eps, int training,
                              float *save_mean, float *save_invstd, float *y);
int hone_k_batchnorm_relu_bwd(hone_kctx *k, int n, int c, int hw, const float *x, const float *y,
                              const float *dy, const float *gamma, const float *save_mean,
                              const float *save_invstd, float *dx, float *dgamma, float *dbeta);

/* ------------------------------------------------------------------ losses and metrics */

/* Softmax cross-entropy over [n, classes] logits with int32 labels, against targets smoothed by
 * `smoothing` eps in [0, 1): t = (1 - eps) * onehot + eps / classes (label smoothing; 0: the
 * plain one-hot loss, bit for bit). Writes dlogits = (softmax - t) / n (may be NULL for eval) and
 * ADDS the summed loss -sum_j t_j log p_j, i.e. (1 - eps) * CE + eps * mean_j(-log p_j), and the
 * number of correct argmax predictions to the device accumulators loss_sum[0] and correct[0] (so
 * an epoch's metrics are read back once). Labels outside [0, classes) are ignored (padding), their
 * dlogits rows 0. Evaluation passes 0: its loss stays plain cross-entropy. */
int hone_k_softmax_xent(hone_kctx *k, const float *logits, const int32_t *labels, int n,
                        int classes, float smoothing, float *dlogits, float *loss_sum,
                        float *correct);

/* The DetectNet_v2 grid head's coverage loss: TAO's sigmoid + L2, binary cross-entropy, or focal
 * loss (Lin et al. 2017). */
typedef enum { HONE_KCOV_L2 = 0, HONE_KCOV_BCE = 1, HONE_KCOV_FOCAL = 2 } hone_kcov_loss;

/* The DetectNet_v2 grid head's loss (train/detect.h has the targets). pred [n, 5 * classes, hw]
 * is the head's output: planes [0, classes) the coverage logits, then 4 box offsets a class
 * (plane classes + 4c + j). target [n, 6 * classes, hw] holds hone_det_encode's planes in the
 * same order, then the weights: cov (planes [0, classes)), bbox ([classes, 5 * classes)), weight
 * ([5 * classes, 6 * classes)). With z a coverage logit, s = sigmoid(z), t its target and
 * m = cov_weight where the cell's target is > 0 in any class's plane (an object covers it), else
 * cov_weight * bg_weight (hone_kdet_cov_mass in backend.h), image i's loss is
 *   sum over (c, cell) of m * L(z, t)
 *   + bbox_weight * sum over (c, j, cell) of weight[c, cell] * |pred box - bbox|,
 * L by cov_loss: HONE_KCOV_L2 (s - t)^2; HONE_KCOV_BCE -(t log s + (1 - t) log(1 - s)), from z
 * stably; HONE_KCOV_FOCAL (1 - p)^gamma times the BCE, p = t s + (1 - t)(1 - s) (hone_kdet_cov in
 * backend.h: one definition for both backends). The sum over the n images is ADDED to
 * loss_sum[0]; dpred (may be NULL: evaluation) gets its gradient divided by n (the batch mean),
 * sign(0) = 0 for the L1 part. A coverage target below 0 marks an ignore cell (the centre of a
 * DontCare or crowd region that no object of that class owns): it adds no coverage term and its
 * coverage gradient is 0. bg_weight < 1 keeps the many background cells from drowning the few
 * covered ones; a covered cell's other classes keep the full weight, so naming the wrong class
 * costs as much as missing the object. */
int hone_k_detect_loss(hone_kctx *k, const float *pred, const float *target, int n, int classes,
                       int hw, float cov_weight, float bg_weight, float bbox_weight, int cov_loss,
                       float gamma, float *dpred, float *loss_sum);

/* ------------------------------------------------------------------ data on the device */

/* dst[i, :] = src[idx[base + i], :] for i < n rows of `row` floats; labels likewise
 * (labels may be NULL). base is read from the device int *base_dev when non-NULL (so a captured
 * graph can walk through an epoch), else from base. Used for shuffled mini-batches. */
int hone_k_gather_rows(hone_kctx *k, const float *src, const int32_t *src_labels,
                       const int32_t *idx, const int32_t *base_dev, int base, int n, int row,
                       float *dst, int32_t *dst_labels);
/* Adds `step` to a device int (advances base_dev after each step inside a graph). */
int hone_k_counter_add(hone_kctx *k, int32_t *counter, int step);
/* Fills idx[0..n) with a permutation of 0..n-1 drawn from (seed, epoch); on the device. */
int hone_k_permutation(hone_kctx *k, int32_t *idx, int n, uint64_t seed, uint64_t epoch);
/* Augmentation drawn per image by hone_k_gather_images (kernels/backend.h defines every draw and
 * every float step, so the CPU and CUDA backends produce the same images). */
typedef struct hone_kaugment {
    int flip;         /* 1: mirror half the images left to right */
    int crop_padding; /* random crop of the image padded with this many black pixels a side */
    float jitter;     /* 0..1: contrast, brightness and (RGB) saturation factors in [1-j, 1+j] */
    int cutout;       /* side of a square at a random centre set to 0 (the mean); 0: off */
    uint64_t seed;
    /* detection (affine != 0): the image is warped by an affine map drawn per image, zoom by s
     * in [zoom_min, zoom_max] about the image centre, a shift of up to translate * side in each
     * axis and, with flip, a mirror, sampled bilinearly; pixels whose source falls outside the
     * image take the mean. crop_padding and cutout must be 0. hone_k_detect_targets moves the
     * boxes by the same map (backend.h defines both). */
    int affine;
    float translate;          /* 0..1: the largest shift, as a fraction of the image side */
    float zoom_min, zoom_max; /* 0 < zoom_min <= zoom_max */
} hone_kaugment;

/* A mini-batch from images kept as uint8 on the device. For i < n, source image r = idx[base + i]
 * (idx NULL: r = base + i) of src (rows of h*w*c bytes, HWC: the packed file's layout) is
 * augmented as aug says (NULL: not at all), normalised per channel, (pixel/255 - mean[ch]) *
 * inv_std[ch] (mean, inv_std: c floats on the device), and written to dst as n*c*h*w floats, NCHW;
 * dst_labels[i] = src_labels[r] (both NULL or neither). base is read from *base_dev when non-NULL
 * (a captured step walks the epoch). With aug, the draws come from (aug->seed, *counter) and the
 * op advances the device counter by one, so every replay of a captured step draws afresh. */
int hone_k_gather_images(hone_kctx *k, const uint8_t *src, const int32_t *src_labels,
                         const int32_t *idx, const int32_t *base_dev, int base, int n, int c, int h,
                         int w, const float *mean, const float *inv_std, const hone_kaugment *aug,
                         uint64_t *counter, float *dst, int32_t *dst_labels);

/* A detection box as the packed dataset stores it (data.h's hone_data_box, same layout): class
 * index (< 0: no class, a DontCare region) and corners in pixels, [x1, x2) x [y1, y2). */
typedef struct hone_kbox {
    int32_t cls;
    float x1, y1, x2, y2;
} hone_kbox;

/* The DetectNet_v2 grid (train/detect.h's hone_det_grid_opts, whose meaning each field has) and
 * the planes' shape: classes, grid_h x grid_w cells. */
typedef struct hone_kdet_grid {
    int stride;
    float offset, bbox_norm;
    int cov_shape; /* 0: rectangle, 1: ellipse */
    float cov_center_x, cov_center_y, cov_radius_x, cov_radius_y, min_radius;
    int normalise_by_area;
    int classes, grid_h, grid_w;
} hone_kdet_grid;

/* The grid targets of a batch, encoded on the device from its boxes: for i < n, source image
 * r = idx[base + i] (idx NULL: base + i; base read from *base_dev when non-NULL) has the boxes
 * boxes[box_start[r] .. box_start[r + 1]); dst[i] gets their 6 * classes planes of
 * grid_h * grid_w floats (coverage, box offsets, weights), exactly as train/detect.h's
 * hone_det_encode writes them for those boxes (DontCare boxes, boxes with a class >= classes
 * and empty boxes write nothing). aug (NULL: the boxes as stored) with aug->affine: each box
 * first goes through the image's affine map, drawn from (aug->seed, *counter) exactly as
 * hone_k_gather_images draws it, then is clipped to the h x w image and dropped when it keeps
 * less than 30% of its area or becomes narrower or lower than 2 pixels (backend.h). The counter
 * is read, not advanced: call this before the hone_k_gather_images of the same batch. */
int hone_k_detect_targets(hone_kctx *k, const hone_kbox *boxes, const uint32_t *box_start,
                          const int32_t *idx, const int32_t *base_dev, int base, int n, int h,
                          int w, const hone_kdet_grid *g, const hone_kaugment *aug,
                          const uint64_t *counter, float *dst);

/* ------------------------------------------------------------------ bf16 NHWC activations
 * A ResNet trained with train.math=bf16 on CUDA keeps its activations and their gradients as
 * bfloat16, channels last (NHWC: element (i, y, x, ch) of an [n, c, h, w] tensor at
 * ((i * h + y) * w + x) * c + ch), the layout and type cuDNN's tensor-core convolutions run on
 * without transposes. Statistics, parameters and their gradients stay fp32. Every op computes in
 * float and rounds each stored value to bf16 once (to nearest even, backend.h). The CPU backend
 * implements each op as the reference the CUDA one is tested against. */
typedef uint16_t hone_bf16;

/* y [n][hw][c] = x [n][c][hw] (fp32 NCHW, the gathered batch) rounded to bf16. */
int hone_k_to_nhwc_h(hone_kctx *k, int n, int c, int hw, const float *x, hone_bf16 *y);
/* Back: y [n][c][hw] (fp32 NCHW, exact) = x [n][hw][c]. */
int hone_k_from_nhwc_h(hone_kctx *k, int n, int c, int hw, const hone_bf16 *x, float *y);
/* A convolution's filters for the ops below: wh [k][r][s][c] (KRSC) = w [k][c][r][s] rounded. */
int hone_k_conv_weights_h(hone_kctx *k, const hone_conv_desc *d, const float *w, hone_bf16 *wh);
/* *bytes: the workspace of conv_fwd_h and conv_bwd_h for d. HONE_ENOTSUP where this context has
 * no bf16 convolution for the shape (CUDA without cuDNN, or no cuDNN algorithm), HONE_ERANGE where
 * CUDA's input padded to 8 channels passes 2^31 values: the caller then trains in fp32. */
int hone_k_conv_workspace_h(hone_kctx *k, const hone_conv_desc *d, size_t *bytes);
/* y = conv(x, wh), all NHWC bf16, no bias. */
int hone_k_conv_fwd_h(hone_kctx *k, const hone_conv_desc *d, const hone_bf16 *x,
                      const hone_bf16 *wh, hone_bf16 *y, void *ws);
/* From dy: dx (NULL: the first layer; acc = 1 adds to it, rounding the sum once; CUDA's
 * padded path for c % 8 != 0 rounds the gradient, then the sum) and dw, the fp32
 * filter gradient [k][c][r][s] (overwritten; computed to bf16 precision, then widened). */
int hone_k_conv_bwd_h(hone_kctx *k, const hone_conv_desc *d, const hone_bf16 *x,
                      const hone_bf16 *wh, const hone_bf16 *dy, hone_bf16 *dx, int acc, float *dw,
                      void *ws);
/* Batch norm over an NHWC tensor seen as m = n*h*w rows of c channels, optionally with a ReLU:
 * the semantics of hone_k_batchnorm_fwd / hone_k_batchnorm_relu_fwd (statistics over the rows).
 * bwd: y_relu NULL (no relu) or the fused forward's output; dx must not alias x, y_relu or dy. */
int hone_k_batchnorm_fwd_h(hone_kctx *k, int m, int c, const hone_bf16 *x, const float *gamma,
                           const float *beta, float *running_mean, float *running_var,
                           float momentum, float eps, int training, float *save_mean,
                           float *save_invstd, hone_bf16 *y, int relu);
/* A residual block's last batch norm and its join in one pass: y = max(0, bn(x) + skip), the
 * statistics as hone_k_batchnorm_fwd_h; the norm's own output is never stored (its backward reads
 * only x and its gradient, which hone_k_add_relu_bwd_h gives). */
int hone_k_batchnorm_add_relu_fwd_h(hone_kctx *k, int m, int c, const hone_bf16 *x,
                                    const float *gamma, const float *beta, float *running_mean,
                                    float *running_var, float momentum, float eps, int training,
                                    float *save_mean, float *save_invstd, const hone_bf16 *skip,
                                    hone_bf16 *y);
int hone_k_batchnorm_bwd_h(hone_kctx *k, int m, int c, const hone_bf16 *x, const hone_bf16 *y_relu,
                           const hone_bf16 *dy, const float *gamma, const float *save_mean,
                           const float *save_invstd, hone_bf16 *dx, float *dgamma, float *dbeta);
/* hone_k_add_relu_fwd / _bwd on bf16 values (bwd copies dy's bits where y > 0). */
int hone_k_add_relu_fwd_h(hone_kctx *k, const hone_bf16 *a, const hone_bf16 *b, hone_bf16 *y,
                          size_t n);
int hone_k_add_relu_bwd_h(hone_kctx *k, const hone_bf16 *y, const hone_bf16 *dy, hone_bf16 *da,
                          hone_bf16 *db, size_t n);
/* hone_k_maxpool_pad_fwd / _bwd (the ImageNet stem's 3x3/2/1 pool) on NHWC bf16: y and idx
 * [n][p][q][c], idx the argmax's offset i * w + j in its input plane, the first maximum in
 * row-major window order winning; bwd overwrites dx with each pixel's dy summed over the windows
 * that chose it. */
int hone_k_maxpool_pad_fwd_h(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                             int pad, const hone_bf16 *x, hone_bf16 *y, int32_t *idx);
int hone_k_maxpool_pad_bwd_h(hone_kctx *k, int n, int c, int h, int w, int size, int stride,
                             int pad, const hone_bf16 *dy, const int32_t *idx, hone_bf16 *dx);
/* Global average pooling of an NHWC bf16 tensor into fp32 [n][c] (the classifier's input), and
 * back: dx[i][p][ch] = dy[i][ch] / hw. */
int hone_k_avgpool_global_fwd_h(hone_kctx *k, int n, int c, int hw, const hone_bf16 *x, float *y);
int hone_k_avgpool_global_bwd_h(hone_kctx *k, int n, int c, int hw, const float *dy, hone_bf16 *dx);

/* --------------------------------------------------------------- optimisers (fused, in place) */

/* SGD with momentum (and nesterov), L2 weight decay added to the gradient:
 * g = grad + wd*w; v = mu*v + g; w -= lr * (nesterov ? g + mu*v : v).
 * lr is read from *lr_dev when non-NULL (schedules inside a captured graph), else from lr. */
int hone_k_sgd_step(hone_kctx *k, float *w, const float *grad, float *v, size_t n, float lr,
                    const float *lr_dev, float momentum, float wd, int nesterov);
/* AdamW with decoupled weight decay; t (1-based step) read from *t_dev when non-NULL. */
int hone_k_adamw_step(hone_kctx *k, float *w, const float *grad, float *m, float *v, size_t n,
                      float lr, const float *lr_dev, float beta1, float beta2, float eps, float wd,
                      int t, const int32_t *t_dev);

/* ------------------------------------------------------------------ reductions */

/* out[0] = sum of x (on the device). */
int hone_k_sum(hone_kctx *k, const float *x, size_t n, float *out);

#endif
