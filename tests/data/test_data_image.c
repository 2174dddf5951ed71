/* tests/data/test_data_image.c: the decoders on images encoded here (libspng and libjpeg as
 * encoders): round trips, every prefix of a file refused cleanly (a truncated file is an error,
 * never a crash or a leak), the limits checked before allocating, channel conversion, and
 * resizing (copy when the size is kept, exact means for whole-factor shrinking, linear growth). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <spng.h>

#include "data.h"
#include "check.h"

static uint8_t *encode_png(const uint8_t *px, int w, int h, int ctype, size_t *len)
{
    spng_ctx *ctx = spng_ctx_new(SPNG_CTX_ENCODER);
    struct spng_ihdr ih = {(uint32_t)w, (uint32_t)h, 8, (uint8_t)ctype, 0, 0, 0};
    int ch = ctype == SPNG_COLOR_TYPE_GRAYSCALE ? 1 : ctype == SPNG_COLOR_TYPE_TRUECOLOR ? 3 : 4;
    int e;
    spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1);
    spng_set_ihdr(ctx, &ih);
    e = spng_encode_image(ctx, px, (size_t)w * h * ch, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
    uint8_t *out = spng_get_png_buffer(ctx, len, &e);
    spng_ctx_free(ctx);
    return out;
}

static uint8_t *encode_jpeg(const uint8_t *px, int w, int h, int c, int progressive, size_t *len)
{
    struct jpeg_compress_struct ci;
    struct jpeg_error_mgr em;
    unsigned char *out = NULL;
    unsigned long n = 0;
    ci.err = jpeg_std_error(&em);
    jpeg_create_compress(&ci);
    jpeg_mem_dest(&ci, &out, &n);
    ci.image_width = (JDIMENSION)w;
    ci.image_height = (JDIMENSION)h;
    ci.input_components = c;
    ci.in_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&ci);
    jpeg_set_quality(&ci, 90, TRUE);
    if (progressive)
        jpeg_simple_progression(&ci);
    jpeg_start_compress(&ci, TRUE);
    for (int y = 0; y < h; y++) {
        JSAMPROW row = (JSAMPROW)(px + (size_t)y * w * c);
        jpeg_write_scanlines(&ci, &row, 1);
    }
    jpeg_finish_compress(&ci);
    jpeg_destroy_compress(&ci);
    *len = n;
    return out;
}

/* Every proper prefix must be refused with a message naming the file and no image. */
static void every_prefix_refused(const uint8_t *buf, size_t len, const char *name)
{
    int bad = 0;
    for (size_t k = 0; k < len; k++) {
        hone_data_image *img = (hone_data_image *)1;
        char err[256] = "";
        int rc = hone_data_image_decode(buf, k, name, 0, NULL, &img, err, sizeof err);
        if (rc >= 0 || img != NULL || strncmp(err, name, strlen(name)) != 0) {
            if (!bad++)
                fprintf(stderr, "%s cut to %zu bytes: rc %d, '%s'\n", name, k, rc, err);
            hone_data_image_free(rc >= 0 ? img : NULL);
        }
    }
    CHECK(bad == 0);
}

static void test_png(void)
{
    enum { W = 23, H = 17 };
    uint8_t rgb[W * H * 3], rgba[W * H * 4], grey[W * H];
    for (int i = 0; i < W * H; i++) {
        for (int k = 0; k < 3; k++)
            rgb[3 * i + k] = rgba[4 * i + k] = (uint8_t)(i * 7 + k * 60);
        rgba[4 * i + 3] = (uint8_t)i;
        grey[i] = (uint8_t)(i * 3);
    }
    size_t len;
    char err[256];
    hone_data_image *img;
    uint8_t *f = encode_png(rgba, W, H, SPNG_COLOR_TYPE_TRUECOLOR_ALPHA, &len);
    CHECK(hone_data_image_decode(f, len, "rgba.png", 0, NULL, &img, err, sizeof err) == 0);
    CHECK(img && img->width == W && img->height == H && img->channels == 3);
    CHECK(img && !memcmp(img->pixels, rgb, sizeof rgb)); /* alpha dropped, colour kept */
    hone_data_image_free(img);
    hone_data_image_info in;
    CHECK(hone_data_image_probe(f, len, "rgba.png", NULL, &in, err, sizeof err) == 0);
    CHECK(in.format == HONE_DATA_FORMAT_PNG && in.width == W && in.height == H);
    CHECK(in.channels == 3 && in.alpha == 1 && in.bit_depth == 8 && !in.palette);
    /* the limits, from the header: nothing decoded */
    hone_data_limits small = {16, 1000, 1 << 20};
    CHECK(hone_data_image_decode(f, len, "rgba.png", 0, &small, &img, err, sizeof err) ==
          HONE_ELIMIT);
    CHECK(img == NULL && strstr(err, "rgba.png: png:") == err);
    small = (hone_data_limits){64, 100, 1 << 20};
    CHECK(hone_data_image_probe(f, len, "rgba.png", &small, &in, err, sizeof err) == HONE_ELIMIT);
    CHECK(hone_data_image_decode(f, len, "x", 2, NULL, &img, err, sizeof err) == HONE_EINVAL);
    every_prefix_refused(f, len, "rgba.png");
    free(f);

    f = encode_png(grey, W, H, SPNG_COLOR_TYPE_GRAYSCALE, &len);
    CHECK(hone_data_image_decode(f, len, "g.png", 3, NULL, &img, err, sizeof err) == 0);
    CHECK(img && img->channels == 3 && img->pixels[3 * 5 + 2] == grey[5]);
    hone_data_image_free(img);
    free(f);
    /* RGB to grey: Pillow's L24 luma */
    f = encode_png(rgb, W, H, SPNG_COLOR_TYPE_TRUECOLOR, &len);
    CHECK(hone_data_image_decode(f, len, "c.png", 1, NULL, &img, err, sizeof err) == 0);
    int bad = 0;
    for (int i = 0; img && i < W * H; i++) {
        uint32_t v = 19595u * rgb[3 * i] + 38470u * rgb[3 * i + 1] + 7471u * rgb[3 * i + 2];
        bad += img->pixels[i] != (uint8_t)((v + 32768u) >> 16);
    }
    CHECK(img && img->channels == 1 && bad == 0);
    hone_data_image_free(img);
    free(f);
}

static void test_jpeg(void)
{
    enum { W = 40, H = 24 };
    uint8_t rgb[W * H * 3];
    for (int i = 0; i < W * H; i++)
        for (int k = 0; k < 3; k++)
            rgb[3 * i + k] = (uint8_t)((i % W) * 3 + (i / W) * 2 + k * 30);
    char err[256];
    for (int prog = 0; prog < 2; prog++) {
        size_t len;
        uint8_t *f = encode_jpeg(rgb, W, H, 3, prog, &len);
        hone_data_image *img;
        hone_data_image_info in;
        CHECK(hone_data_image_probe(f, len, "p.jpg", NULL, &in, err, sizeof err) == 0);
        CHECK(in.format == HONE_DATA_FORMAT_JPEG && in.progressive == prog && in.channels == 3);
        CHECK(hone_data_image_decode(f, len, "p.jpg", 0, NULL, &img, err, sizeof err) == 0);
        int worst = 0;
        for (int i = 0; img && i < W * H * 3; i++) {
            int d = abs(img->pixels[i] - rgb[i]);
            worst = d > worst ? d : worst;
        }
        CHECK(img && img->channels == 3 && worst < 24); /* lossy at quality 90 */
        hone_data_image_free(img);
        every_prefix_refused(f, len, prog ? "progressive.jpg" : "baseline.jpg");
        free(f);
    }
}

static void test_resize(void)
{
    uint8_t src[4 * 6 * 3], dst[8 * 12 * 3];
    for (int i = 0; i < (int)sizeof src; i++)
        src[i] = (uint8_t)(i * 11);
    hone_data_resize(src, 4, 6, 3, dst, 4, 6); /* kept: a copy */
    CHECK(!memcmp(src, dst, sizeof src));
    hone_data_resize(src, 4, 6, 3, dst, 2, 3); /* halved: means of 2x2 blocks, rounded */
    int bad = 0;
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 2; x++)
            for (int c = 0; c < 3; c++) {
                int s = 0;
                for (int dy = 0; dy < 2; dy++)
                    for (int dx = 0; dx < 2; dx++)
                        s += src[((2 * y + dy) * 4 + 2 * x + dx) * 3 + c];
                bad += dst[(y * 2 + x) * 3 + c] != (s + 2) / 4;
            }
    CHECK(bad == 0);
    uint8_t row[2] = {0, 200}, wide[4];
    hone_data_resize(row, 2, 1, 1, wide, 4, 1); /* centres at -0.25, 0.25, 0.75, 1.25 */
    CHECK(wide[0] == 0 && wide[1] == 50 && wide[2] == 150 && wide[3] == 200);
    uint8_t one = 77, big[9];
    hone_data_resize(&one, 1, 1, 1, big, 3, 3);
    CHECK(big[0] == 77 && big[8] == 77);
}

int main(void)
{
    char err[256];
    hone_data_image *img;
    CHECK(hone_data_image_decode(NULL, 0, NULL, 0, NULL, &img, err, sizeof err) == HONE_EPARSE);
    CHECK(img == NULL && strstr(err, "image: ") == err);
    CHECK(hone_data_image_read_file("/nonexistent/x.png", 0, NULL, &img, err, sizeof err) ==
          HONE_ENOENT);
    CHECK(strstr(err, "/nonexistent/x.png") == err);
    test_png();
    test_jpeg();
    test_resize();
    if (failures)
        fprintf(stderr, "test_data_image: %d failure(s)\n", failures);
    return failures != 0;
}
