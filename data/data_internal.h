/* data/data_internal.h (private): what data/'s files share and the header does not promise: the
 * per-format decoders behind hone_data_image_*, and small helpers. Never included outside data/. */
#ifndef HONE_DATA_INTERNAL_H
#define HONE_DATA_INTERNAL_H

#include <stdarg.h>

#include "data.h"

/* Formats a one-line reason into err (NULL or 0 bytes: nothing) and returns code. */
int data__fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The per-format decoders: no name in `why` (hone_data_image_* prefix it). info may be NULL in
 * decode; out is NULL for a probe. want: 0 (native), 1 or 3 channels. The limits are checked
 * from the header before pixel memory is allocated. */
int data__png_decode(const uint8_t *buf, size_t len, const hone_data_limits *lim, int want,
                     hone_data_image_info *info, hone_data_image **out, char *why, size_t n);
int data__jpeg_decode(const uint8_t *buf, size_t len, const hone_data_limits *lim, int want,
                      hone_data_image_info *info, hone_data_image **out, char *why, size_t n);

/* Checks width x height against the limits (HONE_ELIMIT with why). */
int data__check_limits(const hone_data_limits *lim, uint64_t w, uint64_t h, char *why, size_t n);
/* A new image of w x h x c, pixels uninitialised. */
hone_data_image *data__image_new(int w, int h, int c);
/* Counts a KITTI check problem and keeps its message while there is room (kitti.c). */
void data__kitti_problem(hone_data_kitti_problems *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Converts img in place to `want` channels (0: keep). RGB to grey is Pillow's L24 luma. */
void data__image_convert(hone_data_image *img, int want);

#endif
