/* tests/data/test_data_idx.c: the IDX reader on well-formed files (plain and gzipped) and on
 * every kind of corruption: bad magic, type, rank, truncated header, size mismatch, zero and
 * overflowing dimensions. Each must be a clean HONE_EPARSE with a reason, never a crash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "data.h"
#include "check.h"

/* An IDX3 file of n images of r x c bytes with pixel value (i + j) & 0xff. */
static size_t make_idx3(uint8_t *buf, int n, int r, int c)
{
    uint8_t hdr[16] = {0, 0, 8, 3};
    int dims[3] = {n, r, c};
    for (int i = 0; i < 3; i++) {
        hdr[4 + 4 * i] = (uint8_t)(dims[i] >> 24);
        hdr[5 + 4 * i] = (uint8_t)(dims[i] >> 16);
        hdr[6 + 4 * i] = (uint8_t)(dims[i] >> 8);
        hdr[7 + 4 * i] = (uint8_t)dims[i];
    }
    memcpy(buf, hdr, 16);
    size_t count = (size_t)n * r * c;
    for (size_t j = 0; j < count; j++)
        buf[16 + j] = (uint8_t)j;
    return 16 + count;
}

static void expect_bad(const uint8_t *buf, size_t len, const char *why)
{
    hone_data_idx *x = (hone_data_idx *)1;
    char err[200] = "";
    int rc = hone_data_idx_read_mem(buf, len, &x, err, sizeof(err));
    if (rc != HONE_EPARSE || x != NULL || !err[0]) {
        fprintf(stderr, "corrupt file (%s) accepted: rc %d err '%s'\n", why, rc, err);
        failures++;
    }
}

int main(void)
{
    uint8_t buf[16 + 3 * 4 * 5 + 8];
    size_t len = make_idx3(buf, 3, 4, 5);
    hone_data_idx *x = NULL;
    char err[200];
    CHECK(hone_data_idx_read_mem(buf, len, &x, err, sizeof(err)) == HONE_OK);
    CHECK(x && x->ndims == 3 && x->dims[0] == 3 && x->dims[1] == 4 && x->dims[2] == 5);
    CHECK(x && x->count == 60 && x->data[59] == 59);
    hone_data_idx_free(x);

    /* labels: rank 1 */
    uint8_t lab[8 + 4] = {0, 0, 8, 1, 0, 0, 0, 4, 1, 2, 3, 9};
    CHECK(hone_data_idx_read_mem(lab, sizeof(lab), &x, err, sizeof(err)) == HONE_OK);
    CHECK(x && x->count == 4 && x->data[3] == 9);
    hone_data_idx_free(x);

    uint8_t bad[sizeof(buf)];
    memcpy(bad, buf, len);
    bad[0] = 1;
    expect_bad(bad, len, "magic");
    memcpy(bad, buf, len);
    bad[2] = 0x0D; /* float elements: unsupported */
    expect_bad(bad, len, "type");
    memcpy(bad, buf, len);
    bad[3] = 0;
    expect_bad(bad, len, "rank 0");
    bad[3] = 5;
    expect_bad(bad, len, "rank 5");
    expect_bad(buf, 0, "empty");
    expect_bad(buf, 3, "short magic");
    expect_bad(buf, 10, "truncated header");
    expect_bad(buf, len - 1, "truncated data");
    memcpy(bad, buf, len);
    bad[len] = 0;
    expect_bad(bad, len + 1, "trailing byte");
    memcpy(bad, buf, len);
    bad[7] = 0; /* n = 0 */
    expect_bad(bad, len, "zero dimension");
    memcpy(bad, buf, len);
    memset(bad + 4, 0x3f, 12); /* product of dims overflows any buffer */
    expect_bad(bad, len, "huge dimensions");
    expect_bad(NULL, 0, "NULL");

    /* files: plain, gzipped, missing, truncated gzip */
    char dir[] = "/tmp/hone-idx-XXXXXX", path[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof(path), "%s/plain", dir);
    FILE *f = fopen(path, "wb");
    fwrite(buf, 1, len, f);
    fclose(f);
    CHECK(hone_data_idx_read_file(path, &x, err, sizeof(err)) == HONE_OK && x->count == 60);
    hone_data_idx_free(x);
    unlink(path);
    snprintf(path, sizeof(path), "%s/packed.gz", dir);
    gzFile gz = gzopen(path, "wb");
    gzwrite(gz, buf, (unsigned)len);
    gzclose(gz);
    CHECK(hone_data_idx_read_file(path, &x, err, sizeof(err)) == HONE_OK && x->data[10] == 10);
    hone_data_idx_free(x);
    /* the streaming check (the controller's): dims, the largest byte, the wrong rank refused */
    uint32_t dims[3] = {0};
    int maxv = -2;
    CHECK(hone_data_idx_stat_file(path, 3, dims, &maxv, err, sizeof(err)) == HONE_OK &&
          dims[0] == 3 && dims[1] == 4 && dims[2] == 5 && maxv == 59);
    CHECK(hone_data_idx_stat_file(path, 1, dims, NULL, err, sizeof(err)) == HONE_EPARSE &&
          strstr(err, "packed.gz: bad IDX magic"));
    /* cut the gzip stream in half */
    f = fopen(path, "rb");
    uint8_t z[512];
    size_t zn = fread(z, 1, sizeof(z), f);
    fclose(f);
    f = fopen(path, "wb");
    fwrite(z, 1, zn / 2, f);
    fclose(f);
    CHECK(hone_data_idx_read_file(path, &x, err, sizeof(err)) < 0 && x == NULL);
    CHECK(hone_data_idx_stat_file(path, 3, dims, NULL, err, sizeof(err)) == HONE_EPARSE &&
          strstr(err, "packed.gz: holds"));
    unlink(path);
    /* the bounds the trainer and the controller share: a header past HONE_DATA_IDX_MAX_BYTES, a
     * gzip bomb (1e9 zero bytes announced, refused by the inflate ratio long before the end) and
     * data past the header's count are refused, each naming the file */
    snprintf(path, sizeof(path), "%s/bomb.gz", dir);
    static const uint8_t big[16] = {0, 0, 8, 3, 0, 0, 0x80, 0, 0, 0, 0x80, 0, 0, 0, 0, 8};
    static const uint8_t bomb[16] = {0, 0, 8,    3,    0, 0, 0x03, 0xe8,
                                     0, 0, 0x03, 0xe8, 0, 0, 0x03, 0xe8};
    static const uint8_t small[16] = {0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
    uint8_t *zeros = calloc(1, 1 << 20);
    const uint8_t *heads[3] = {big, bomb, small};
    const char *want[3] = {"bomb.gz: 8589934592 data bytes, more than the 2147483648",
                           "bomb.gz: inflates more than 1000 times",
                           "bomb.gz: holds more data bytes than the 1"};
    for (int k = 0; k < 3; k++) {
        gz = gzopen(path, "wb9");
        gzwrite(gz, heads[k], 16);
        for (int i = 0; i < (k == 2 ? 1 : 128); i++)
            gzwrite(gz, zeros, 1 << 20);
        gzclose(gz);
        err[0] = '\0';
        CHECK(hone_data_idx_stat_file(path, 3, dims, NULL, err, sizeof(err)) == HONE_EPARSE &&
              strstr(err, want[k]));
        if (k == 1) {
            CHECK(hone_data_idx_read_file(path, &x, err, sizeof(err)) == HONE_EPARSE && !x &&
                  strstr(err, want[k]));
        }
    }
    free(zeros);
    unlink(path);
    /* a FIFO would block the reader for good: refused at once */
    snprintf(path, sizeof(path), "%s/fifo.gz", dir);
    REQUIRE(mkfifo(path, 0600) == 0);
    CHECK(hone_data_idx_stat_file(path, 3, dims, NULL, err, sizeof(err)) == HONE_EPARSE &&
          strstr(err, "fifo.gz: not a regular file"));
    CHECK(hone_data_idx_read_file(path, &x, err, sizeof(err)) == HONE_EPARSE && !x);
    unlink(path);
    snprintf(path, sizeof(path), "%s/missing", dir);
    CHECK(hone_data_idx_read_file(path, &x, err, sizeof(err)) == HONE_ENOENT);
    CHECK(strstr(err, "missing") != NULL);
    CHECK(hone_data_idx_stat_file(path, 3, dims, NULL, err, sizeof(err)) == HONE_ENOENT &&
          strstr(err, "missing"));
    rmdir(dir);
    if (failures)
        fprintf(stderr, "test_data_idx: %d failure(s)\n", failures);
    return failures != 0;
}
