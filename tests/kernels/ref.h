/* tests/kernels/ref.h: naive double-precision reference implementations of the kernels.h ops,
 * plus comparison helpers. Shared by the CPU tests (tests/kernels) and the CUDA tests (tests/gpu):
 * inputs are float arrays in host memory, outputs double arrays. Slow on purpose: obviously right.
 */
#ifndef HONE_TESTS_KERNELS_REF_H
#define HONE_TESTS_KERNELS_REF_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

/* ---- helpers */
/* Deterministic uniform floats in [lo, hi) from seed (splitmix64). */
void ref_fill_uniform(float *x, size_t n, uint64_t seed, float lo, float hi);
/* Fills with NaN so an op that forgets to write an element fails the comparison. */
void ref_poison(float *x, size_t n);
/* ||out - ref|| / max(||ref||, 1e-30); +inf when out holds a NaN or inf. */
double ref_rel_err(const float *out, const double *ref, size_t n);
double ref_rel_err_d(const double *out, const double *ref, size_t n);
/* Prints "name: rel err E (tol T)" to stderr on failure and returns 1; 0 when err <= tol. */
int ref_check(const char *name, const float *out, const double *ref, size_t n, double tol);

/* ---- dense: out[M,N] = alpha op(A) op(B) + beta C0 (C0 may be NULL when beta == 0) */
void ref_gemm(int ta, int tb, int M, int N, int K, double alpha, const float *A, int lda,
              const float *B, int ldb, double beta, const float *C0, int ldc, double *out);

/* ---- convolution (NCHW), hone_conv_desc from hone_conv_desc_init */
void ref_conv_fwd(const hone_conv_desc *d, const float *x, const float *w, const float *b,
                  double *y);
/* dx may be NULL; db may be NULL. */
void ref_conv_bwd(const hone_conv_desc *d, const float *x, const float *w, const float *dy,
                  double *dx, double *dw, double *db);

/* ---- pooling */
void ref_maxpool_fwd(int n, int c, int h, int w, int size, int stride, const float *x, double *y);
void ref_maxpool_bwd(int n, int c, int h, int w, int size, int stride, const float *x,
                     const float *dy, double *dx);
void ref_avgpool_global_fwd(int n, int c, int h, int w, const float *x, double *y);
void ref_upsample_fwd(int n, int c, int h, int w, int factor, const float *x, double *y);

/* ---- batch norm, training mode: y, batch mean, biased var */
void ref_batchnorm_fwd(int n, int c, int hw, const float *x, const float *gamma, const float *beta,
                       double eps, double *y, double *mean, double *var);
void ref_batchnorm_bwd(int n, int c, int hw, const float *x, const float *dy, const float *gamma,
                       double eps, double *dx, double *dgamma, double *dbeta);

/* ---- softmax cross-entropy against targets t = (1 - eps) * onehot + eps / classes (eps: label
 * smoothing, 0: one-hot): summed loss -sum_j t_j log p_j, correct count, dlogits = (softmax - t) /
 * n */
void ref_softmax_xent(const float *logits, const int32_t *labels, int n, int classes, double eps,
                      double *dlogits, double *loss_sum, int *correct);

/* ---- DetectNet_v2 head loss (kernels.h, hone_k_detect_loss): *loss_sum = the summed loss of the
 * n images, dpred (may be NULL) its gradient / n; cov_loss a hone_kcov_loss, gamma its focal
 * exponent */
void ref_detect_loss(const float *pred, const float *target, int n, int classes, int hw,
                     double cov_weight, double bg_weight, double bbox_weight, int cov_loss,
                     double gamma, double *dpred, double *loss_sum);

/* ---- optimisers (one step, in double, on copies) */
void ref_sgd_step(double *w, const float *grad, double *v, size_t n, double lr, double mu,
                  double wd, int nesterov);
void ref_adamw_step(double *w, const float *grad, double *m, double *v, size_t n, double lr,
                    double b1, double b2, double eps, double wd, int t);

/* ---- random ops, from the streams defined in kernels/backend.h */
void ref_dropout_fwd(const float *x, size_t n, float p, uint64_t seed, uint64_t ctr, double *y,
                     uint8_t *mask);
/* gather_images (kernels/backend.h) written out on its own: float results, exact on the CPU. a may
 * be NULL (no augmentation); ctr is the counter's value before the op. */
void ref_gather_images(const uint8_t *src, const int32_t *idx, int base, int n, int c, int h, int w,
                       const float *mean, const float *inv_std, const hone_kaugment *a,
                       uint64_t ctr, float *y);
void ref_permutation(int32_t *idx, int n, uint64_t seed, uint64_t epoch);

#endif
