/* secret.c: a secret (an API key, a worker's token) read from the first line of a file or of
 * stdin, so that it need not stand on a command line; the one reader the CLI's --key-file and
 * hone-worker's --token-file share. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "hone.h"

int hone_secret_read(const char *path, char *out, size_t len, unsigned *mode)
{
    struct stat st;
    FILE *f = path ? fopen(path, "r") : stdin;
    *mode = 0;
    if (!f)
        return HONE_EIO; /* errno says why */
    if (path && fstat(fileno(f), &st) == 0)
        *mode = (unsigned)(st.st_mode & 0777);
    int ok = len > 1 && fgets(out, (int)len, f) != NULL;
    if (path)
        fclose(f);
    size_t n = ok ? strcspn(out, "\r\n") : 0;
    if (!ok || n == 0 || n == len - 1) /* none, empty, or as long as out holds: maybe cut */
        return HONE_EINVAL;
    out[n] = '\0';
    return HONE_OK;
}
