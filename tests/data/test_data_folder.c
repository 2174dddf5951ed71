/* tests/data/test_data_folder.c: image-folder checks on folders built here: both layouts, the
 * class map sorted by name, counts per class and split, skipped files, and each refusal naming
 * its file: no classes, an empty class, mismatched splits, an undecodable or unsupported image,
 * a folder inside a class, a symlink escaping the root or dangling; an image replaced by a link
 * out of the root after the walk (not read through it when packed); then packing one and reading
 * the packed file back (order, labels, pixels, class map). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spng.h>

#include "data.h"
#include "check.h"

static char base[64];

/* A w x h grey PNG whose every pixel is v. */
static void write_png(const char *rel, int w, int h, uint8_t v)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", base, rel);
    uint8_t *px = malloc((size_t)w * h);
    memset(px, v, (size_t)w * h);
    spng_ctx *ctx = spng_ctx_new(SPNG_CTX_ENCODER);
    struct spng_ihdr ih = {(uint32_t)w, (uint32_t)h, 8, SPNG_COLOR_TYPE_GRAYSCALE, 0, 0, 0};
    int e;
    spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1);
    spng_set_ihdr(ctx, &ih);
    spng_encode_image(ctx, px, (size_t)w * h, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
    size_t len;
    void *buf = spng_get_png_buffer(ctx, &len, &e);
    FILE *f = fopen(path, "wb");
    fwrite(buf, 1, len, f);
    fclose(f);
    free(buf);
    free(px);
    spng_ctx_free(ctx);
}

static void write_text(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", base, rel);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void mk(const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", base, rel);
    mkdir(path, 0755);
}

static void rm_rf(const char *rel)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/%s'", base, rel);
    if (system(cmd) != 0)
        failures++;
}

/* Opens base/rel and expects a refusal with code whose message contains want (and the path). */
static void expect_refused(const char *rel, int code, const char *want)
{
    char root[512], err[1024] = "";
    snprintf(root, sizeof root, "%s/%s", base, rel);
    hone_data_folder *f = (hone_data_folder *)1;
    int rc = hone_data_folder_open(root, NULL, &f, err, sizeof err);
    if (rc != code || f != NULL || !strstr(err, want) || !strstr(err, base)) {
        fprintf(stderr, "%s: want %d '%s', got %d '%s'\n", rel, code, want, rc, err);
        failures++;
        if (rc == HONE_OK)
            hone_data_folder_free(f);
    }
}

static void test_flat(void)
{
    mk("flat");
    mk("flat/dog");
    mk("flat/cat");
    mk("flat/ant");
    write_png("flat/dog/b.png", 4, 3, 10);
    write_png("flat/dog/a.PNG", 5, 3, 20);
    write_png("flat/cat/x.png", 6, 2, 30);
    write_png("flat/ant/1.png", 4, 4, 40);
    write_text("flat/ant/notes.txt", "skipped");
    write_text("flat/README", "skipped too");
    write_text("flat/.hidden", "ignored");
    char root[512], err[512];
    snprintf(root, sizeof root, "%s/flat", base);
    hone_data_folder *f;
    CHECK(hone_data_folder_open(root, NULL, &f, err, sizeof err) == HONE_OK);
    if (!f) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    hone_data_folder_stats st;
    hone_data_folder_get_stats(f, &st);
    CHECK(st.split_layout == 0 && st.classes == 3 && st.images == 4 && st.png == 4);
    CHECK(st.split_images[HONE_DATA_TRAIN] == 4 && st.skipped == 2 && st.grey == 4);
    CHECK(st.min_width == 4 && st.max_width == 6 && st.min_height == 2 && st.max_height == 4);
    CHECK(!strcmp(hone_data_folder_class_name(f, 0), "ant"));
    CHECK(!strcmp(hone_data_folder_class_name(f, 2), "dog"));
    CHECK(hone_data_folder_class_images(f, HONE_DATA_TRAIN, 2) == 2);
    int split, cls;
    const char *p = hone_data_folder_image(f, 3, &split, &cls);
    CHECK(p && strstr(p, "dog/b.png") && cls == 2 && split == HONE_DATA_TRAIN);
    p = hone_data_folder_image(f, 2, NULL, &cls);
    CHECK(p && strstr(p, "dog/a.PNG")); /* by name: a.PNG before b.png */

    /* packed at 2x2: order, labels, pixels (flat images stay flat) and the class map */
    char out[512];
    snprintf(out, sizeof out, "%s/flat.pack", base);
    hone_data_pack_opts o = {.width = 2, .height = 2, .threads = 2};
    CHECK(hone_data_folder_pack(f, out, &o, err, sizeof err) == HONE_OK);
    hone_data_pack *pk;
    CHECK(hone_data_pack_open(out, 0, &pk, err, sizeof err) == HONE_OK);
    if (pk) {
        hone_data_pack_info in;
        hone_data_pack_get_info(pk, &in);
        CHECK(in.n == 4 && in.height == 2 && in.width == 2 && in.channels == 1);
        CHECK(in.classes == 3 && in.split[0] == 4);
        const int32_t *lab = hone_data_pack_labels(pk);
        const uint8_t *px = hone_data_pack_pixels(pk);
        CHECK(lab[0] == 0 && lab[1] == 1 && lab[2] == 2 && lab[3] == 2);
        CHECK(px[0] == 40 && px[4] == 30 && px[8] == 20 && px[12] == 10 && px[15] == 10);
        CHECK(!strcmp(hone_data_pack_class_name(pk, 1), "cat"));
        hone_data_pack_free(pk);
    }
    hone_data_folder_free(f);

    /* an image whose header reads but whose pixels are cut off passes the check, then stops
     * the packing with its name, and no file is left behind */
    char cut[512];
    snprintf(cut, sizeof cut, "%s/flat/cat/x.png", base);
    CHECK(truncate(cut, 45) == 0);
    CHECK(hone_data_folder_open(root, NULL, &f, err, sizeof err) == HONE_OK);
    unlink(out);
    CHECK(hone_data_folder_pack(f, out, &o, err, sizeof err) == HONE_EPARSE);
    CHECK(strstr(err, "flat/cat/x.png: png: truncated") != NULL);
    CHECK(access(out, F_OK) != 0);
    char ls[600];
    snprintf(ls, sizeof ls, "ls %s | grep -q tmp", base);
    CHECK(system(ls) != 0); /* no temp file either */
    hone_data_folder_free(f);
    hone_data_folder_opts full = {.decode = 1};
    CHECK(hone_data_folder_open(root, &full, &f, err, sizeof err) == HONE_EPARSE);
    CHECK(strstr(err, "flat/cat/x.png: png: truncated") != NULL);
    write_text("flat/cat/y.png", "not a png");
    CHECK(hone_data_folder_open(root, NULL, &f, err, sizeof err) == HONE_EPARSE);
    CHECK(strstr(err, "flat/cat/y.png: not a PNG or JPEG file") != NULL);
}

static void test_splits(void)
{
    mk("sp");
    mk("sp/train");
    mk("sp/val");
    mk("sp/train/a");
    mk("sp/train/b");
    mk("sp/val/a");
    mk("sp/val/b");
    write_png("sp/train/a/1.png", 3, 3, 1);
    write_png("sp/train/a/2.png", 3, 3, 2);
    write_png("sp/train/b/1.png", 3, 3, 3);
    write_png("sp/val/a/1.png", 3, 3, 4);
    write_png("sp/val/b/1.png", 3, 3, 5);
    write_text("sp/LICENSE", "skipped");
    char root[512], err[512];
    snprintf(root, sizeof root, "%s/sp", base);
    hone_data_folder *f;
    CHECK(hone_data_folder_open(root, NULL, &f, err, sizeof err) == HONE_OK);
    if (f) {
        hone_data_folder_stats st;
        hone_data_folder_get_stats(f, &st);
        CHECK(st.split_layout == 1 && st.classes == 2 && st.images == 5 && st.skipped == 1);
        CHECK(st.split_images[0] == 3 && st.split_images[1] == 2 && st.split_images[2] == 0);
        CHECK(hone_data_folder_class_images(f, HONE_DATA_VAL, 1) == 1);
        hone_data_folder_opts o = {.decode = 1};
        hone_data_folder_free(f);
        CHECK(hone_data_folder_open(root, &o, &f, err, sizeof err) == HONE_OK);
        hone_data_folder_free(f);
    }
    mk("sp/val/c");
    write_png("sp/val/c/1.png", 3, 3, 5);
    expect_refused("sp", HONE_EPARSE, "sp/val/c: class not in train/");
    rm_rf("sp/val/c");
    rm_rf("sp/val/b");
    expect_refused("sp", HONE_EPARSE, "class b of train/ is missing");
    mk("sp/val/b");
    expect_refused("sp", HONE_EPARSE, "sp/val/b: class folder holds no images");
    write_png("sp/val/b/1.png", 3, 3, 5);
    mk("sp/extra");
    expect_refused("sp", HONE_EPARSE, "sp/extra: unexpected folder beside train/");
    rm_rf("sp/extra");
}

static void test_refusals(void)
{
    mk("none");
    write_text("none/readme.txt", "x");
    expect_refused("none", HONE_EPARSE, "none: no class folders");
    expect_refused("missing", HONE_ENOENT, "missing");
    mk("bad");
    mk("bad/a");
    write_png("bad/a/1.png", 2, 2, 0);
    mk("bad/a/sub");
    expect_refused("bad", HONE_EPARSE, "bad/a/sub: a folder inside a class folder");
    rm_rf("bad/a/sub");
    write_text("bad/a/2.bmp", "BM");
    expect_refused("bad", HONE_ENOTSUP, "bad/a/2.bmp: image format unsupported");
    rm_rf("bad/a/2.bmp");
    char link[512];
    snprintf(link, sizeof link, "%s/bad/a/escape.png", base);
    CHECK(symlink("/etc/hostname", link) == 0);
    expect_refused("bad", HONE_EPARSE, "bad/a/escape.png: symlink resolves outside");
    unlink(link);
    CHECK(symlink("nowhere.png", link) == 0);
    expect_refused("bad", HONE_EPARSE, "bad/a/escape.png: symlink to nothing");
    unlink(link);
    CHECK(symlink("1.png", link) == 0); /* inside the root: fine */
    char root[512], err[512];
    snprintf(root, sizeof root, "%s/bad", base);
    hone_data_folder *f;
    CHECK(hone_data_folder_open(root, NULL, &f, err, sizeof err) == HONE_OK);
    hone_data_folder_free(f);
    /* walked while 2.png was an image; then replaced by a link out: packing does not read it */
    write_png("bad/a/2.png", 2, 2, 0);
    CHECK(hone_data_folder_open(root, NULL, &f, err, sizeof err) == HONE_OK);
    char img2[512], pk[512];
    snprintf(img2, sizeof img2, "%s/bad/a/2.png", base);
    snprintf(pk, sizeof pk, "%s/swapped.hpk", base);
    unlink(img2);
    CHECK(symlink("/etc/hostname", img2) == 0);
    hone_data_pack_opts po = {.width = 2, .height = 2, .channels = 1, .threads = 1};
    err[0] = 0;
    CHECK(hone_data_folder_pack(f, pk, &po, err, sizeof err) < 0);
    CHECK(strstr(err, "bad/a/2.png: a symbolic link out of the dataset's folder") != NULL);
    CHECK(access(pk, F_OK) != 0);
    hone_data_folder_free(f);
    unlink(img2);
    mk("bad/b\x01");
    write_png("bad/b\x01/1.png", 2, 2, 0);
    expect_refused("bad", HONE_EPARSE, "bad/b\\x01: class name is not printable UTF-8");
}

int main(void)
{
    snprintf(base, sizeof base, "/tmp/hone-folder-XXXXXX");
    if (!mkdtemp(base))
        return 1;
    test_flat();
    test_splits();
    test_refusals();
    rm_rf("");
    if (failures)
        fprintf(stderr, "test_data_folder: %d failure(s)\n", failures);
    return failures != 0;
}
