/* Error strings, aborting allocators and the monotonic clock shared by every module. Never returns
 * NULL memory. */
#include "hone.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *hone_strerror(int code)
{
    switch (code) {
    case HONE_OK:
        return "ok";
    case HONE_EINVAL:
        return "invalid argument";
    case HONE_ENOENT:
        return "not found";
    case HONE_EEXIST:
        return "already exists";
    case HONE_ERANGE:
        return "out of range";
    case HONE_EIO:
        return "input/output error";
    case HONE_EPARSE:
        return "parse error";
    case HONE_ESTATE:
        return "not allowed in the current state";
    case HONE_ENOTSUP:
        return "not supported";
    case HONE_ECUDA:
        return "CUDA error";
    case HONE_ESQL:
        return "database error";
    case HONE_ELIMIT:
        return "limit exceeded";
    case HONE_ETIMEDOUT:
        return "timed out";
    case HONE_ENUMERIC:
        return "numerical failure";
    case HONE_EPERM:
        return "not permitted";
    default:
        return "unknown error";
    }
}

static void *oom(size_t n)
{
    fprintf(stderr, "hone: out of memory allocating %zu bytes\n", n);
    abort();
}

double hone_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void *hone_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    return p ? p : oom(n);
}

void *hone_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    return p ? p : oom(count * size);
}

void *hone_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    return q ? q : oom(n);
}

char *hone_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = hone_xmalloc(n);
    memcpy(p, s, n);
    return p;
}

const char *hone_version(void)
{
    return HONE_VERSION;
}
