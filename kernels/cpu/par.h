/* kernels/cpu/par.h: private to the CPU backend. A small per-context worker pool that runs
 * `nparts` independent parts of one op on k->threads threads (OpenBLAS itself is kept single
 * threaded), and single-threaded helpers the ops share. Results never depend on which thread ran
 * a part: each part writes its own outputs, and partial sums are combined in part order. */
#ifndef HONE_KERNELS_CPU_PAR_H
#define HONE_KERNELS_CPU_PAR_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

/* Hot loops are compiled at -O3 (GCC's -O2 cost model leaves most loops scalar) and, on x86-64,
 * cloned for AVX2+FMA with a run-time choice, so the build stays portable (no -march=native). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                             \
    !defined(__SANITIZE_ADDRESS__)
#define CPU_SIMD __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define CPU_SIMD
#endif

/* fn(arg, part, slot) for part in [0, nparts); slot in [0, cpu_par_slots(k)) names the thread
 * running it (for per-thread scratch). Parts are handed out dynamically; returns when all ran. */
typedef void (*cpu_par_fn)(void *arg, int part, int slot);
void cpu_par_run(hone_kctx *k, int nparts, cpu_par_fn fn, void *arg);
/* Number of threads (and scratch slots) the pool runs parts on. */
int cpu_par_slots(const hone_kctx *k);
int cpu_par_start(hone_kctx *k);
void cpu_par_stop(hone_kctx *k);

/* Row-major single-threaded SGEMM (OpenBLAS), for use inside a part. */
void cpu_gemm1(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
               const float *B, int ldb, float beta, float *C, int ldc);

/* Splits n items into parts of at least `grain` items (at most 4 per thread) and runs
 * fn(arg, begin, end) on each; the split depends on n, grain and the thread count only. */
typedef void (*cpu_range_fn)(void *arg, size_t begin, size_t end);
void cpu_par_range(hone_kctx *k, size_t n, size_t grain, cpu_range_fn fn, void *arg);

#endif
