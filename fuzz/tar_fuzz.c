/* libFuzzer target for the controller's tar reader (controller/tar.c, ctl_tar_walk): arbitrary
 * bytes must be refused with a message or walked; every entry handed out must have a safe relative
 * name and data inside the input, and the limits must hold. */
#include <stdint.h>
#include <string.h>

#include "hone.h"
#include "tar.h"

typedef struct fz {
    const uint8_t *buf;
    size_t len, n;
    uint64_t total;
} fz;

static int check(const ctl_tar_entry *e, void *ud)
{
    fz *f = ud;
    const char *p = e->name;
    if (!p[0] || p[0] == '/' || strchr(p, '\\') || e->name[strlen(p) - 1] == '/')
        __builtin_trap();
    for (const char *s = p; (s = strstr(s, "..")); s++)
        if ((s == p || s[-1] == '/') && (s[2] == '/' || s[2] == '\0'))
            __builtin_trap();
    if (e->data < f->buf || e->size > f->len || e->data + e->size > f->buf + f->len)
        __builtin_trap();
    if (e->is_dir && e->size)
        __builtin_trap();
    volatile uint8_t sink = e->size ? e->data[e->size - 1] : 0;
    (void)sink;
    f->n++;
    f->total += e->size;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ctl_tar_limits lim = {.max_entries = 64, .max_file = 1 << 20, .max_total = size};
    fz f = {data, size, 0, 0};
    char msg[256];
    size_t n = 0;
    uint64_t total = 0;
    int rc = ctl_tar_walk(data, size, &lim, check, &f, &n, &total, msg, sizeof msg);
    if (rc == HONE_OK) {
        if (n > lim.max_entries || total > lim.max_total || f.total != total || f.n > n)
            __builtin_trap();
    } else if (!msg[0]) {
        __builtin_trap(); /* a refusal always says why */
    }
    return 0;
}
