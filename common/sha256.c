/* SHA-256 of a whole file, as 64 lower-case hex digits: what workers and the controller compare to
 * verify every dataset download and every upload (libcrypto's EVP digest, read 64 KiB at a time).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "hone.h"

int hone_sha256_file(const char *path, char out[65])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return HONE_EIO;
    int rc = hone_sha256_fd(fd, out);
    close(fd);
    return rc;
}

int hone_sha256_fd(int fd, char out[65])
{
    unsigned char buf[1 << 16], md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    int rc = HONE_EIO;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL))
        goto fail;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            goto fail;
        if (r == 0)
            break;
        if (!EVP_DigestUpdate(ctx, buf, (size_t)r))
            goto fail;
    }
    if (!EVP_DigestFinal_ex(ctx, md, &n) || n != 32)
        goto fail;
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    rc = HONE_OK;
fail:
    EVP_MD_CTX_free(ctx);
    return rc;
}
