/* tests/data/test_data_pack.c: the packed dataset file alone: a round trip through the writer
 * (images put out of order) and the mmap reader, then every truncation and every single-byte
 * flip of a small file refused with the file named, a missing image refused at finish, and an
 * abandoned writer leaving nothing behind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data.h"
#include "check.h"

static int write_pack(const char *path, int skip)
{
    hone_data_pack_info in = {.n = 7, .height = 3, .width = 2, .channels = 3, .classes = 3};
    in.split[0] = 4;
    in.split[1] = 2;
    in.split[2] = 1;
    const char *names[3] = {"alpha", "beta", "gamma"};
    hone_data_pack_writer *w;
    char err[256];
    if (hone_data_pack_writer_new(path, &in, names, &w, err, sizeof err) < 0)
        return -1;
    for (int k = 6; k >= 0; k--) { /* out of order, as threads would */
        uint8_t px[18];
        for (int j = 0; j < 18; j++)
            px[j] = (uint8_t)(k * 18 + j);
        if (k != skip)
            CHECK(hone_data_pack_writer_put(w, (uint64_t)k, px, k % 3, err, sizeof err) == 0);
    }
    CHECK(hone_data_pack_writer_put(w, 7, (const uint8_t *)"", 0, err, sizeof err) == HONE_EINVAL);
    int rc = hone_data_pack_writer_finish(w, err, sizeof err);
    hone_data_pack_writer_free(w);
    return rc;
}

static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    uint8_t *b = malloc(1 << 16);
    *n = fread(b, 1, 1 << 16, f);
    fclose(f);
    return b;
}

static void spit(const char *path, const uint8_t *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    fwrite(b, 1, n, f);
    fclose(f);
}

int main(void)
{
    char dir[] = "/tmp/hone-pack-XXXXXX", path[256], bad[256], err[512];
    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof path, "%s/a.pack", dir);
    snprintf(bad, sizeof bad, "%s/bad.pack", dir);
    CHECK(write_pack(path, -1) == HONE_OK);
    hone_data_pack *p;
    CHECK(hone_data_pack_open(path, 0, &p, err, sizeof err) == HONE_OK);
    if (p) {
        hone_data_pack_info in;
        hone_data_pack_get_info(p, &in);
        CHECK(in.n == 7 && in.height == 3 && in.width == 2 && in.channels == 3);
        CHECK(in.classes == 3 && in.split[0] == 4 && in.split[1] == 2 && in.split[2] == 1);
        CHECK(hone_data_pack_pixels(p)[5 * 18 + 4] == 5 * 18 + 4);
        CHECK(hone_data_pack_labels(p)[5] == 2 && hone_data_pack_labels(p)[6] == 0);
        CHECK(!strcmp(hone_data_pack_class_name(p, 2), "gamma"));
        CHECK(hone_data_pack_class_name(p, 3) == NULL);
        CHECK(((uintptr_t)hone_data_pack_labels(p) & 63) == 0);
        hone_data_pack_free(p);
    }
    size_t n;
    uint8_t *b = slurp(path, &n);
    int accepted = 0;
    for (size_t k = 0; k < n; k++) { /* every truncation */
        spit(bad, b, k);
        if (hone_data_pack_open(bad, 0, &p, err, sizeof err) != HONE_EPARSE || p ||
            !strstr(err, bad))
            accepted++;
    }
    CHECK(accepted == 0);
    for (size_t k = 0; k < n; k++) { /* every byte flipped */
        b[k] ^= 0x10;
        spit(bad, b, n);
        int rc = hone_data_pack_open(bad, 0, &p, err, sizeof err);
        if (rc >= 0 || p || !strstr(err, bad)) {
            if (!accepted++)
                fprintf(stderr, "byte %zu flipped: rc %d '%s'\n", k, rc, err);
            hone_data_pack_free(p);
        }
        b[k] ^= 0x10;
    }
    CHECK(accepted == 0);
    free(b);
    unlink(bad); /* a missing image: refused at finish, and neither file nor temp file left */
    CHECK(write_pack(bad, 3) == HONE_ESTATE);
    CHECK(access(bad, F_OK) != 0);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "ls %s | grep -q tmp", dir);
    CHECK(system(cmd) != 0);
    unlink(path);
    unlink(bad);
    rmdir(dir);
    if (failures)
        fprintf(stderr, "test_data_pack: %d failure(s)\n", failures);
    return failures != 0;
}
