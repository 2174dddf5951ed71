/* data/jpeg.c: JPEG decoding with libjpeg-turbo's libjpeg API. libjpeg reports errors by calling
 * error_exit, which must not return: ours longjmps back to the one setjmp in data__jpeg_decode,
 * the only frame of ours between it and libjpeg, and every allocation made after the setjmp hangs
 * off the heap-allocated `jdec`, so the jump frees all of it. Warnings about corrupt data are
 * errors too. Never allocates pixels before the header's size passed the limits. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

#include "data_internal.h"

/* libjpeg-turbo's own bound for progressive files (tjDecompress's scan limit): each scan is a
 * pass over the whole coefficient buffer, so thousands of tiny scans are a decoding-time bomb */
#define JPEG_MAX_SCANS 500

typedef struct jdec {
    struct jpeg_decompress_struct ci;
    struct jpeg_error_mgr em;
    struct jpeg_progress_mgr progress;
    jmp_buf jb;
    char msg[JMSG_LENGTH_MAX];
    int code;             /* HONE_E* the jump reports */
    hone_data_image *img; /* owned until handed out */
} jdec;

static void jdec_error_exit(j_common_ptr c)
{
    jdec *d = (jdec *)c->client_data;
    c->err->format_message(c, d->msg);
    d->code = HONE_EPARSE;
    longjmp(d->jb, 1);
}

/* level -1 is a warning: corrupt data that libjpeg would paper over with grey. A few warnings
 * are about metadata only and harmless; the rest stop the decode. Levels >= 0 are traces. */
static void jdec_emit_message(j_common_ptr c, int level)
{
    if (level != -1)
        return;
    int code = c->err->msg_code;
    if (code == JWRN_JFIF_MAJOR || code == JWRN_ADOBE_XFORM || code == JWRN_BOGUS_ICC ||
        code == JWRN_EXTRANEOUS_DATA)
        return;
    jdec_error_exit(c);
}

static void jdec_progress(j_common_ptr c)
{
    jdec *d = (jdec *)c->client_data;
    if (c->is_decompressor && d->ci.input_scan_number > JPEG_MAX_SCANS) {
        snprintf(d->msg, sizeof d->msg, "more than %d progressive scans", JPEG_MAX_SCANS);
        d->code = HONE_ELIMIT;
        longjmp(d->jb, 1);
    }
}

int data__jpeg_decode(const uint8_t *buf, size_t len, const hone_data_limits *lim, int want,
                      hone_data_image_info *info, hone_data_image **out, char *why, size_t n)
{
    jdec *d = hone_xcalloc(1, sizeof(*d));
    int rc;
    d->ci.err = jpeg_std_error(&d->em);
    d->em.error_exit = jdec_error_exit;
    d->em.emit_message = jdec_emit_message;
    if (setjmp(d->jb)) {
        rc = data__fail(why, n, d->code, "%s", d->msg);
        goto fail;
    }
    d->ci.client_data = d; /* kept by jpeg_create_decompress; the callbacks find d through it */
    jpeg_create_decompress(&d->ci);
    d->progress.progress_monitor = jdec_progress;
    d->ci.progress = &d->progress;
    jpeg_mem_src(&d->ci, buf, (unsigned long)len);
    jpeg_read_header(&d->ci, TRUE);
    J_COLOR_SPACE cs = d->ci.jpeg_color_space;
    int comps = d->ci.num_components;
    if (cs == JCS_CMYK || cs == JCS_YCCK) {
        rc = data__fail(why, n, HONE_ENOTSUP, "%s JPEG unsupported (convert it to RGB)",
                        cs == JCS_CMYK ? "CMYK" : "YCCK");
        goto fail;
    }
    if (!((comps == 1 && cs == JCS_GRAYSCALE) ||
          (comps == 3 && (cs == JCS_YCbCr || cs == JCS_RGB)))) {
        rc = data__fail(why, n, HONE_ENOTSUP, "%d-component JPEG (colour space %d) unsupported",
                        comps, (int)cs);
        goto fail;
    }
    if ((rc = data__check_limits(lim, d->ci.image_width, d->ci.image_height, why, n)) < 0)
        goto fail;
    if (info) {
        info->format = HONE_DATA_FORMAT_JPEG;
        info->width = (int)d->ci.image_width;
        info->height = (int)d->ci.image_height;
        info->channels = comps;
        info->bit_depth = d->ci.data_precision;
        info->progressive = d->ci.progressive_mode != 0;
    }
    if (!out) {
        rc = HONE_OK;
        goto fail;
    }
    d->ci.out_color_space = comps == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_start_decompress(&d->ci);
    int w = (int)d->ci.output_width, h = (int)d->ci.output_height;
    int c = d->ci.output_components;
    if (c != comps || w != (int)d->ci.image_width || h != (int)d->ci.image_height) {
        rc = data__fail(why, n, HONE_EPARSE, "libjpeg gives %dx%dx%d for a %ux%ux%d image", w, h, c,
                        d->ci.image_width, d->ci.image_height, comps);
        goto fail;
    }
    d->img = data__image_new(w, h, c);
    while (d->ci.output_scanline < d->ci.output_height) {
        JSAMPROW row = d->img->pixels + (size_t)d->ci.output_scanline * (size_t)w * (size_t)c;
        jpeg_read_scanlines(&d->ci, &row, 1);
    }
    jpeg_finish_decompress(&d->ci);
    data__image_convert(d->img, want);
    *out = d->img;
    d->img = NULL;
    rc = HONE_OK;
fail:
    jpeg_destroy_decompress(&d->ci);
    hone_data_image_free(d->img);
    free(d);
    return rc;
}
