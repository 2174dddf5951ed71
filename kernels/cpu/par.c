/* kernels/cpu/par.c: the CPU backend's worker pool (threads - 1 pthreads plus the caller).
 * Workers sleep on a condition variable between ops (no spinning: CI machines are shared), claim
 * parts through one atomic ticket tagged with the job's generation so a late worker can never run
 * a part of a finished job, and the caller waits for parts done, not for workers to check in. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include <cblas.h>

#include "par.h"

typedef struct cpu_pool {
    int nthreads; /* including the caller */
    pthread_t *tid;
    pthread_mutex_t mu;
    pthread_cond_t wake, done_cv;
    uint32_t gen; /* job generation, under mu */
    int stop;
    cpu_par_fn fn; /* the current job, under mu */
    void *arg;
    int nparts;
    _Atomic uint64_t ticket; /* gen << 32 | next part */
    _Atomic int done;        /* parts finished in the current job */
} cpu_pool;

typedef struct {
    cpu_pool *p;
    int slot;
} worker_arg;

/* Claims the next part of job `gen`; -1 once the job is exhausted or replaced. */
static int claim(cpu_pool *p, uint32_t gen, int nparts)
{
    uint64_t t = atomic_load(&p->ticket);
    for (;;) {
        if ((uint32_t)(t >> 32) != gen || (int)(uint32_t)t >= nparts)
            return -1;
        if (atomic_compare_exchange_weak(&p->ticket, &t, t + 1))
            return (int)(uint32_t)t;
    }
}

static void run_parts(cpu_pool *p, uint32_t gen, cpu_par_fn fn, void *arg, int nparts, int slot)
{
    int j;
    while ((j = claim(p, gen, nparts)) >= 0) {
        fn(arg, j, slot);
        if (atomic_fetch_add(&p->done, 1) + 1 == nparts) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done_cv);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

static void *worker(void *v)
{
    worker_arg *wa = v;
    cpu_pool *p = wa->p;
    int slot = wa->slot;
    free(wa);
    uint32_t seen = 0;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (p->gen == seen && !p->stop)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->stop) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        seen = p->gen;
        cpu_par_fn fn = p->fn;
        void *arg = p->arg;
        int nparts = p->nparts;
        pthread_mutex_unlock(&p->mu);
        run_parts(p, seen, fn, arg, nparts, slot);
    }
}

int cpu_par_start(hone_kctx *k)
{
    /* OpenBLAS runs in the calling thread; parallelism is ours (no spin-waiting BLAS threads). */
    openblas_set_num_threads(1);
    k->cuda = NULL; /* the CPU backend keeps its pool in the backend-state slot */
    if (k->threads <= 1)
        return HONE_OK;
    cpu_pool *p = hone_xcalloc(1, sizeof(*p));
    p->nthreads = k->threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    p->tid = hone_xcalloc((size_t)p->nthreads, sizeof(pthread_t));
    for (int i = 1; i < p->nthreads; i++) {
        worker_arg *wa = hone_xmalloc(sizeof(*wa));
        wa->p = p;
        wa->slot = i;
        if (pthread_create(&p->tid[i], NULL, worker, wa) != 0) {
            free(wa);
            p->nthreads = i; /* run with the threads we got */
            break;
        }
    }
    k->cuda = p;
    return HONE_OK;
}

void cpu_par_stop(hone_kctx *k)
{
    cpu_pool *p = k->cuda;
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->nthreads; i++)
        pthread_join(p->tid[i], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done_cv);
    pthread_mutex_destroy(&p->mu);
    free(p->tid);
    free(p);
    k->cuda = NULL;
}

int cpu_par_slots(const hone_kctx *k)
{
    const cpu_pool *p = k->cuda;
    return p ? p->nthreads : 1;
}

void cpu_par_run(hone_kctx *k, int nparts, cpu_par_fn fn, void *arg)
{
    cpu_pool *p = k->cuda;
    if (!p || nparts <= 1) {
        for (int j = 0; j < nparts; j++)
            fn(arg, j, 0);
        return;
    }
    pthread_mutex_lock(&p->mu);
    uint32_t gen = ++p->gen;
    p->fn = fn;
    p->arg = arg;
    p->nparts = nparts;
    atomic_store(&p->done, 0);
    atomic_store(&p->ticket, (uint64_t)gen << 32);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    run_parts(p, gen, fn, arg, nparts, 0);
    if (atomic_load(&p->done) < nparts) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->done) < nparts)
            pthread_cond_wait(&p->done_cv, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
}

typedef struct {
    cpu_range_fn fn;
    void *arg;
    size_t n, nparts;
} range_job;

static void range_part(void *v, int part, int slot)
{
    (void)slot;
    range_job *r = v;
    size_t b = r->n * (size_t)part / r->nparts, e = r->n * (size_t)(part + 1) / r->nparts;
    if (e > b)
        r->fn(r->arg, b, e);
}

void cpu_par_range(hone_kctx *k, size_t n, size_t grain, cpu_range_fn fn, void *arg)
{
    if (n == 0)
        return;
    size_t parts = grain ? n / grain : n;
    size_t cap = 4 * (size_t)cpu_par_slots(k);
    if (parts > cap)
        parts = cap;
    if (parts <= 1) {
        fn(arg, 0, n);
        return;
    }
    range_job r = {fn, arg, n, parts};
    cpu_par_run(k, (int)parts, range_part, &r);
}

void cpu_gemm1(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
               const float *B, int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0)
        return;
    if (K == 0) {
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++)
                C[(size_t)i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[(size_t)i * ldc + j];
        return;
    }
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                transB ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
