/* data/png.c: PNG decoding with libspng, which reports every error as a return code (no setjmp,
 * unlike libpng) and checks chunk CRCs and the zlib checksum. Decodes to 8-bit grey or RGB,
 * dropping alpha; never allocates pixels before the size in IHDR passed the limits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <spng.h>

#include "data_internal.h"

/* ancillary chunks (text, ICC, EXIF) are parsed by libspng; bound what it keeps of them */
#define PNG_CHUNK_LIMIT (16u << 20)
#define PNG_CACHE_LIMIT (32u << 20)

static int spng_fail(int e, char *why, size_t n)
{
    if (e == SPNG_IO_EOF || e == SPNG_EOF || e == SPNG_EIDAT_TOO_SHORT)
        return data__fail(why, n, HONE_EPARSE, "truncated (the file ends inside the image: %s)",
                          spng_strerror(e));
    if (e == SPNG_ECHUNK_CRC)
        return data__fail(why, n, HONE_EPARSE, "bad CRC (a chunk's checksum does not match)");
    return data__fail(why, n, HONE_EPARSE, "%s", spng_strerror(e));
}

/* IEND is always the same 12 bytes (no data, so one CRC); junk after it is tolerated. */
static int has_iend(const uint8_t *buf, size_t len)
{
    static const uint8_t iend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
    for (size_t i = len >= 12 ? len - 12 + 1 : 0; i-- > 0;)
        if (buf[i] == 0 && !memcmp(buf + i, iend, 12))
            return 1;
    return 0;
}

/* Reduces the decoder's output for grey + alpha (drop alpha) and 16-bit grey (host-endian
 * samples: keep the high byte) to 1 channel of 8 bits. step: samples per pixel. */
static void grey_from(const uint8_t *src, uint8_t *dst, size_t px, int depth, int step)
{
    for (size_t i = 0; i < px; i++) {
        if (depth == 16) {
            uint16_t v;
            memcpy(&v, src + 2 * i * (size_t)step, 2);
            dst[i] = (uint8_t)(v >> 8);
        } else {
            dst[i] = src[i * (size_t)step];
        }
    }
}

int data__png_decode(const uint8_t *buf, size_t len, const hone_data_limits *lim, int want,
                     hone_data_image_info *info, hone_data_image **out, char *why, size_t n)
{
    spng_ctx *ctx = spng_ctx_new(0);
    hone_data_image *img = NULL;
    uint8_t *raw = NULL;
    int rc, e;
    if (!ctx)
        return data__fail(why, n, HONE_EIO, "libspng: out of memory");
    if ((e = spng_set_crc_action(ctx, SPNG_CRC_ERROR, SPNG_CRC_ERROR)) ||
        (e = spng_set_image_limits(ctx, lim->max_side, lim->max_side)) ||
        (e = spng_set_chunk_limits(ctx, PNG_CHUNK_LIMIT, PNG_CACHE_LIMIT)) ||
        (e = spng_set_png_buffer(ctx, buf, len))) {
        rc = spng_fail(e, why, n);
        goto fail;
    }
    struct spng_ihdr ih;
    if ((e = spng_get_ihdr(ctx, &ih))) {
        if (e == SPNG_EUSER_WIDTH || e == SPNG_EUSER_HEIGHT)
            rc = data__fail(why, n, HONE_ELIMIT, "image is past the limit of %u pixels a side",
                            lim->max_side);
        else
            rc = spng_fail(e, why, n);
        goto fail;
    }
    if ((rc = data__check_limits(lim, ih.width, ih.height, why, n)) < 0)
        goto fail;
    int grey = ih.color_type == SPNG_COLOR_TYPE_GRAYSCALE ||
               ih.color_type == SPNG_COLOR_TYPE_GRAYSCALE_ALPHA;
    if (info) {
        struct spng_trns trns;
        info->format = HONE_DATA_FORMAT_PNG;
        info->width = (int)ih.width;
        info->height = (int)ih.height;
        info->channels = grey ? 1 : 3;
        info->bit_depth = ih.bit_depth;
        info->progressive = ih.interlace_method == SPNG_INTERLACE_ADAM7;
        info->palette = ih.color_type == SPNG_COLOR_TYPE_INDEXED;
        info->alpha = ih.color_type == SPNG_COLOR_TYPE_GRAYSCALE_ALPHA ||
                      ih.color_type == SPNG_COLOR_TYPE_TRUECOLOR_ALPHA ||
                      spng_get_trns(ctx, &trns) == 0;
    }
    if (!out) {
        rc = HONE_OK;
        goto fail;
    }
    /* grey: G8 for depths up to 8 (scaled to 0..255); 16-bit and grey + alpha come out as stored
     * (SPNG_FMT_PNG: host-endian 16-bit samples) and are reduced here. Colour: libspng's RGB8
     * (palette expanded, alpha dropped, 16-bit samples to their high byte). */
    int fmt, step = 0;
    if (!grey)
        fmt = SPNG_FMT_RGB8;
    else if (ih.color_type == SPNG_COLOR_TYPE_GRAYSCALE && ih.bit_depth <= 8)
        fmt = SPNG_FMT_G8;
    else {
        fmt = SPNG_FMT_PNG;
        step = ih.color_type == SPNG_COLOR_TYPE_GRAYSCALE_ALPHA ? 2 : 1;
    }
    size_t size;
    if ((e = spng_decoded_image_size(ctx, fmt, &size))) {
        rc = spng_fail(e, why, n);
        goto fail;
    }
    size_t px = (size_t)ih.width * ih.height;
    img = data__image_new((int)ih.width, (int)ih.height, grey ? 1 : 3);
    uint8_t *dst = img->pixels;
    size_t expect = step ? px * (size_t)step * (ih.bit_depth / 8u) : px * (size_t)img->channels;
    if (size != expect) {
        rc = data__fail(why, n, HONE_EPARSE, "libspng wants %zu bytes for %zu pixels", size, px);
        goto fail;
    }
    if (step)
        dst = raw = hone_xmalloc(size);
    /* then the chunks after the image up to IEND: libspng checks the last IDAT's CRC only when
     * it reads past it, so a file with a bad CRC there or cut before IEND is refused too */
    if ((e = spng_decode_image(ctx, dst, size, fmt, 0)) || (e = spng_decode_chunks(ctx))) {
        rc = spng_fail(e, why, n);
        goto fail;
    }
    if (!has_iend(buf, len)) { /* libspng accepts a file cut inside IEND's CRC */
        rc = data__fail(why, n, HONE_EPARSE, "truncated (no complete IEND chunk at the end)");
        goto fail;
    }
    if (raw)
        grey_from(raw, img->pixels, px, ih.bit_depth, step);
    data__image_convert(img, want);
    *out = img;
    img = NULL;
    rc = HONE_OK;
fail:
    free(raw);
    hone_data_image_free(img);
    spng_ctx_free(ctx);
    return rc;
}
