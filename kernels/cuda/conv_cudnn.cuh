/* Private to the CUDA conv: the cuDNN path (conv_cudnn.cu), built when CMake found cuDNN
 * (HONE_HAVE_CUDNN). conv.cu asks hc_dnn_conv_find for a shape: non-NULL means cuDNN runs it,
 * NULL (no cuDNN in the build, none at run time, or no algorithm for the shape) means the im2col
 * path does. Without cuDNN every function here is a stub that says so. */
#ifndef HONE_CUDA_CONV_CUDNN_CUH
#define HONE_CUDA_CONV_CUDNN_CUH

#include "common.cuh"

/* One shape's descriptors, algorithms and workspace size (opaque; kept in the context's table). */
typedef struct hc_dnn_conv hc_dnn_conv;

#ifdef HONE_HAVE_CUDNN
/* The cuDNN handle on the context's stream and the (empty) shape table: *out NULL and a message
 * on stderr when cuDNN cannot start (convolutions then use im2col). */
int hc_dnn_new(cudaStream_t stream, hc_dnn **out);
void hc_dnn_free(hc_dnn *dn);
/* "cudnn 9.19.0" */
const char *hc_dnn_name(const hc_dnn *dn);
/* The shape's entry, created on first use (host-only cuDNN calls: descriptors and heuristics, so
 * it is safe inside graph capture too); NULL when the context has no cuDNN or no algorithm fits. */
const hc_dnn_conv *hc_dnn_conv_find(hone_kctx *k, const hone_conv_desc *d);
size_t hc_dnn_conv_workspace(const hc_dnn_conv *e);
int hc_dnn_conv_fwd(hone_kctx *k, const hc_dnn_conv *e, const float *x, const float *w,
                    const float *b, float *y, void *ws);
/* acc: dx += instead of dx = (dx may be NULL: no data gradient). */
int hc_dnn_conv_bwd(hone_kctx *k, const hc_dnn_conv *e, const float *x, const float *w,
                    const float *dy, float *dx, float *dw, float *db, void *ws, int acc);
/* The bf16 NHWC entry of a shape (half.cu), as hc_dnn_conv_find: NULL without one. */
const hc_dnn_conv *hc_dnn_conv_find_h(hone_kctx *k, const hone_conv_desc *d);
int hc_dnn_conv_fwd_h(hone_kctx *k, const hc_dnn_conv *e, const hone_bf16 *x, const hone_bf16 *w,
                      hone_bf16 *y, void *ws);
/* dwh: the filter gradient, bf16 KRSC; acc: dx += (dx may be NULL). */
int hc_dnn_conv_bwd_h(hone_kctx *k, const hc_dnn_conv *e, const hone_bf16 *x, const hone_bf16 *w,
                      const hone_bf16 *dy, hone_bf16 *dx, int acc, hone_bf16 *dwh, void *ws);
#else
static inline int hc_dnn_new(cudaStream_t stream, hc_dnn **out)
{
    (void)stream;
    *out = NULL;
    return HONE_OK;
}
static inline void hc_dnn_free(hc_dnn *dn)
{
    (void)dn;
}
static inline const char *hc_dnn_name(const hc_dnn *dn)
{
    (void)dn;
    return "";
}
static inline const hc_dnn_conv *hc_dnn_conv_find(hone_kctx *k, const hone_conv_desc *d)
{
    (void)k, (void)d;
    return NULL;
}
static inline size_t hc_dnn_conv_workspace(const hc_dnn_conv *e)
{
    (void)e;
    return 0;
}
static inline int hc_dnn_conv_fwd(hone_kctx *k, const hc_dnn_conv *e, const float *x,
                                  const float *w, const float *b, float *y, void *ws)
{
    (void)k, (void)e, (void)x, (void)w, (void)b, (void)y, (void)ws;
    return HONE_ENOTSUP;
}
static inline int hc_dnn_conv_bwd(hone_kctx *k, const hc_dnn_conv *e, const float *x,
                                  const float *w, const float *dy, float *dx, float *dw, float *db,
                                  void *ws, int acc)
{
    (void)k, (void)e, (void)x, (void)w, (void)dy, (void)dx, (void)dw, (void)db, (void)ws, (void)acc;
    return HONE_ENOTSUP;
}
static inline const hc_dnn_conv *hc_dnn_conv_find_h(hone_kctx *k, const hone_conv_desc *d)
{
    (void)k, (void)d;
    return NULL;
}
static inline int hc_dnn_conv_fwd_h(hone_kctx *k, const hc_dnn_conv *e, const hone_bf16 *x,
                                    const hone_bf16 *w, hone_bf16 *y, void *ws)
{
    (void)k, (void)e, (void)x, (void)w, (void)y, (void)ws;
    return HONE_ENOTSUP;
}
static inline int hc_dnn_conv_bwd_h(hone_kctx *k, const hc_dnn_conv *e, const hone_bf16 *x,
                                    const hone_bf16 *w, const hone_bf16 *dy, hone_bf16 *dx, int acc,
                                    hone_bf16 *dwh, void *ws)
{
    (void)k, (void)e, (void)x, (void)w, (void)dy, (void)dx, (void)acc, (void)dwh, (void)ws;
    return HONE_ENOTSUP;
}
#endif

#endif
