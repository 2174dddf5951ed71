/* kernels/cpu/context.c: the CPU backend's context, memory and "graph" entry points. Device memory
 * is host memory (64-byte aligned); there is no stream, so sync is a no-op and a captured graph
 * simply calls its function again on every launch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "par.h"

/* The context owns a worker pool of k->threads threads (par.c); OpenBLAS runs inside it. */
int cpu_ctx_init(hone_kctx *k)
{
    return cpu_par_start(k);
}

void cpu_ctx_release(hone_kctx *k)
{
    cpu_par_stop(k);
}

void *cpu_alloc(hone_kctx *k, size_t bytes)
{
    (void)k;
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) {
        fprintf(stderr, "hone: out of memory allocating %zu bytes\n", bytes);
        abort();
    }
    return p;
}

void cpu_free(hone_kctx *k, void *p)
{
    (void)k;
    free(p);
}

int cpu_upload(hone_kctx *k, void *dst, const void *host_src, size_t bytes)
{
    (void)k;
    memmove(dst, host_src, bytes);
    return HONE_OK;
}

int cpu_download(hone_kctx *k, void *host_dst, const void *src, size_t bytes)
{
    (void)k;
    memmove(host_dst, src, bytes);
    return HONE_OK;
}

int cpu_copy(hone_kctx *k, void *dst, const void *src, size_t bytes)
{
    (void)k;
    memmove(dst, src, bytes);
    return HONE_OK;
}

int cpu_fill(hone_kctx *k, float *x, float v, size_t n)
{
    (void)k;
    for (size_t i = 0; i < n; i++)
        x[i] = v;
    return HONE_OK;
}

int cpu_sync(hone_kctx *k)
{
    (void)k;
    return HONE_OK;
}

/* Capture runs nothing: the CUDA backend's capture also only records, so callers must launch. */
int cpu_graph_capture(hone_kctx *k, hone_kgraph *g)
{
    (void)k;
    (void)g;
    return HONE_OK;
}

int cpu_graph_launch(hone_kctx *k, hone_kgraph *g)
{
    (void)k;
    g->fn(g->arg);
    return HONE_OK;
}

void cpu_graph_release(hone_kgraph *g)
{
    (void)g;
}

int cpu_device_count(void)
{
    return 0;
}

int cpu_device_name(int i, char *buf, size_t len, size_t *mem_bytes)
{
    (void)i;
    (void)buf;
    (void)len;
    (void)mem_bytes;
    return HONE_ENOTSUP;
}

int cpu_device_uuid(int i, char *buf, size_t len)
{
    (void)i;
    (void)buf;
    (void)len;
    return HONE_ENOTSUP;
}
