/* libFuzzer target for the controller's zip reader (controller/zip.c, ctl_zip_walk then
 * ctl_zip_read of every entry): arbitrary bytes must be refused with a message or walked; every
 * entry handed out has a safe relative name, compressed bytes inside the input, a size within the
 * limits, and a read gives exactly its declared size or a refusal that says why. */
#include <stdint.h>
#include <string.h>

#include "hone.h"
#include "zip.h"

typedef struct fz {
    const uint8_t *buf;
    size_t len, n;
    uint64_t total;
} fz;

static int count(const uint8_t *p, size_t n, void *ud)
{
    volatile uint8_t sink = n ? p[n - 1] : 0;
    (void)sink;
    *(uint64_t *)ud += n;
    return 0;
}

static int check(const ctl_zip_entry *e, void *ud)
{
    fz *f = ud;
    const char *p = e->name;
    if (!p[0] || p[0] == '/' || strchr(p, '\\') || p[strlen(p) - 1] == '/')
        __builtin_trap();
    for (const char *s = p; (s = strstr(s, "..")); s++)
        if ((s == p || s[-1] == '/') && (s[2] == '/' || s[2] == '\0'))
            __builtin_trap();
    if (e->cdata < f->buf || e->csize > f->len || e->cdata + e->csize > f->buf + f->len)
        __builtin_trap();
    if (e->is_dir && e->size)
        __builtin_trap();
    if (e->size > 1000ull * e->csize + (1u << 20))
        __builtin_trap(); /* the bomb bound */
    uint64_t got = 0;
    char msg[256] = "";
    int rc = ctl_zip_read(e, count, &got, msg, sizeof msg);
    if (rc == HONE_OK ? got != e->size : !msg[0])
        __builtin_trap(); /* exactly its size, or a refusal that says why */
    if (got > e->size)
        __builtin_trap();
    f->n++;
    f->total += e->size;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ctl_tar_limits lim = {.max_entries = 64, .max_file = 8 << 20, .max_total = 16 << 20};
    fz f = {data, size, 0, 0};
    char msg[256];
    size_t n = 0;
    uint64_t total = 0;
    int rc = ctl_zip_walk(data, size, &lim, check, &f, &n, &total, msg, sizeof msg);
    if (rc == HONE_OK) {
        if (n > lim.max_entries || total > lim.max_total || f.total > total || f.n > n)
            __builtin_trap();
    } else if (!msg[0]) {
        __builtin_trap(); /* a refusal always says why */
    }
    return 0;
}
