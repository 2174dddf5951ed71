/* data: the dataset formats in one place: IDX files (MNIST family), JPEG and PNG decoding and
 * resizing; image folders and the packed dataset file join it. Used by hone-train to load data, by
 * the controller to check datasets at create time, by hone-pack (and the convert job) to pack them.
 * Pure library: files and memory only; no HTTP, no SQLite, no kernels. Every function that can
 * fail returns 0 or a negative HONE_E* code and writes a one-line reason naming the file to err. */
#ifndef HONE_DATA_H
#define HONE_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "hone.h"

/* ------------------------------------------------------------------ IDX files */

/* A parsed IDX file: a plain result (fields read-only), freed with hone_data_idx_free. */
typedef struct hone_data_idx {
    int type;      /* element type code: 0x08 = uint8 (the only one accepted) */
    int ndims;     /* 1..4 */
    int dims[4];   /* each > 0 */
    size_t count;  /* product of dims */
    uint8_t *data; /* count bytes, owned */
} hone_data_idx;

/* Parses an IDX image/label file held in memory (no gzip). HONE_EPARSE on a bad magic, dims or
 * size; err (may be NULL) receives a one-line reason. Safe on arbitrary bytes (fuzzed). */
int hone_data_idx_read_mem(const uint8_t *buf, size_t len, hone_data_idx **out, char *err,
                           size_t errlen);
/* Reads a file, gzip-compressed or not. HONE_ENOENT when missing, HONE_EIO, HONE_EPARSE. */
int hone_data_idx_read_file(const char *path, hone_data_idx **out, char *err, size_t errlen);
void hone_data_idx_free(hone_data_idx *idx);

/* ------------------------------------------------------------------ images (JPEG, PNG) */

/* Decoded pixels are uint8, rows top to bottom, HWC (interleaved), 1 channel (grey) or 3 (RGB).
 *
 * - What a file decodes to by default ("native" channels): 1 for grey PNGs (with or without
 *   alpha, any bit depth) and 1-component JPEGs; 3 for RGB, RGBA and palette PNGs and YCbCr or
 *   RGB JPEGs. Asking for the other count converts: grey to RGB repeats the value; RGB to grey is
 *   ITU-R 601-2 luma in Pillow's integer form, (19595 R + 38470 G + 7471 B + 32768) >> 16, so
 *   both match Pillow's convert("RGB") / convert("L") exactly.
 * - Alpha (an alpha channel or a tRNS chunk) is dropped, not composited: the colour samples are
 *   kept as stored (Pillow's convert("RGB") does the same). Gamma, sBIT, ICC profiles and EXIF
 *   orientation are not applied (neither Image.open nor torchvision's ImageFolder applies them).
 * - 16-bit PNG samples keep their high byte (v >> 8: what Pillow keeps for 16-bit RGB(A));
 *   1, 2 and 4-bit grey are scaled to 0..255 (v * 255 / (2^depth - 1)).
 * - JPEG: libjpeg-turbo's defaults (accurate integer IDCT, fancy upsampling), which is what
 *   Pillow uses, so with the same libjpeg the pixels are identical. Progressive JPEGs decode (at
 *   most 500 scans: more is a decoding-time bomb); CMYK and YCCK JPEGs are refused
 *   (HONE_ENOTSUP). Every libjpeg warning about corrupt data (a truncated file, a bad Huffman
 *   code, a premature marker) is an error: a half-grey image must not reach training.
 * - PNG: libspng; every chunk's CRC and the zlib checksum are checked, a bad one is an error.
 *   Interlaced (Adam7) PNGs decode.
 * - Any other format (GIF, BMP, TIFF, WebP, ...) is HONE_ENOTSUP naming what it is.
 * Errors: HONE_EPARSE (corrupt, truncated, wrong magic), HONE_ENOTSUP, HONE_ELIMIT (bigger than
 * the limits, checked from the header before any pixel memory is allocated), HONE_ENOENT and
 * HONE_EIO for files. err always starts with the file's name. */

typedef enum hone_data_format {
    HONE_DATA_FORMAT_UNKNOWN = 0,
    HONE_DATA_FORMAT_PNG = 1,
    HONE_DATA_FORMAT_JPEG = 2,
} hone_data_format;

/* "png", "jpeg" or "unknown". */
const char *hone_data_format_name(hone_data_format f);

/* Decompression-bomb limits, checked from the header. The defaults (HONE_DATA_LIMITS_DEFAULT):
 * 16384 px a side, 64 Mpx in all (a 192 MiB RGB buffer), files up to 256 MiB. */
typedef struct hone_data_limits {
    uint32_t max_side;
    uint64_t max_pixels;
    uint64_t max_file_bytes;
} hone_data_limits;

#define HONE_DATA_LIMITS_DEFAULT                                                                   \
    {                                                                                              \
        16384, 64ull << 20, 256ull << 20                                                           \
    }

/* What the header of an image file says. */
typedef struct hone_data_image_info {
    hone_data_format format;
    int width, height;
    int channels;    /* native channels of the decoded image: 1 or 3 */
    int alpha;       /* 1: the file has alpha (channel or tRNS), which decoding drops */
    int bit_depth;   /* per sample in the file: 1, 2, 4, 8 or 16 */
    int progressive; /* a progressive JPEG or an interlaced PNG */
    int palette;     /* a palette PNG */
} hone_data_image_info;

/* A decoded image: a plain result (fields read-only), freed with hone_data_image_free. */
typedef struct hone_data_image {
    int width, height, channels;
    uint8_t *pixels; /* height * width * channels bytes, owned */
} hone_data_image;

/* Reads the header only (PNG: signature and IHDR; JPEG: up to the first scan) and applies the
 * limits (NULL: the defaults). name prefixes err ("image" when NULL). Safe on arbitrary bytes. */
int hone_data_image_probe(const uint8_t *buf, size_t len, const char *name,
                          const hone_data_limits *lim, hone_data_image_info *info, char *err,
                          size_t errlen);
/* Decodes the whole image with channels = 0 (native), 1 or 3. Safe on arbitrary bytes (fuzzed):
 * a refusal never leaks and leaves *out NULL. */
int hone_data_image_decode(const uint8_t *buf, size_t len, const char *name, int channels,
                           const hone_data_limits *lim, hone_data_image **out, char *err,
                           size_t errlen);
/* The same on a file (read whole, at most lim->max_file_bytes; err names the path). */
int hone_data_image_probe_file(const char *path, const hone_data_limits *lim,
                               hone_data_image_info *info, char *err, size_t errlen);
int hone_data_image_read_file(const char *path, int channels, const hone_data_limits *lim,
                              hone_data_image **out, char *err, size_t errlen);
void hone_data_image_free(hone_data_image *img);

/* Resizes src (sw x sh x c, HWC uint8) into dst (dw x dh x c), each axis on its own:
 * - shrinking an axis averages over the source area each output pixel covers (exact box /
 *   "area" filter, fractional coverage at the edges: OpenCV's INTER_AREA), so no source pixel
 *   is skipped and fine detail does not alias;
 * - enlarging an axis interpolates linearly (bilinear over both axes), edge pixels repeated;
 * - an axis of the same size is copied unchanged (a 28x28 image packed at 28x28 is bit-exact).
 * Pixel centres sit at half-integers (the "align_corners = false" convention of OpenCV, Pillow
 * and PyTorch): output pixel i covers source [i*s, (i+1)*s) with s = in/out, and its centre maps
 * to source coordinate (i + 0.5) * s - 0.5. Results are rounded to nearest. The aspect ratio is
 * not kept (the image is stretched to dw x dh). Sides must be >= 1. */
void hone_data_resize(const uint8_t *src, int sw, int sh, int c, uint8_t *dst, int dw, int dh);

#endif
