/* libFuzzer target for data/'s image decoders (data/image.c, png.c, jpeg.c, resize.c): byte 0
 * picks the channels asked for (0, 1 or 3) and whether to probe only, the rest is the file.
 * Every input must decode or be refused with a message naming the file, never crash, leak (the
 * JPEG error path longjmps) or allocate past the limits; a decoded image must be the size its
 * header promised, within the limits, and survive a resize. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const int want[4] = {0, 1, 3, 0};
    int sel = data[0], channels = want[sel & 3], probe_only = sel & 4;
    /* small limits: a fuzzer input must not make a gigabyte of pixels */
    hone_data_limits lim = {2048, 1u << 20, 1u << 20};
    char err[256];
    hone_data_image_info info;
    int prc = hone_data_image_probe(data + 1, size - 1, "f.png", &lim, &info, err, sizeof err);
    if (prc == HONE_OK &&
        (info.width < 1 || info.height < 1 || (uint32_t)info.width > lim.max_side ||
         (uint64_t)info.width * (uint64_t)info.height > lim.max_pixels ||
         (info.channels != 1 && info.channels != 3)))
        __builtin_trap();
    if (prc != HONE_OK && strncmp(err, "f.png: ", 7) != 0)
        __builtin_trap();
    if (probe_only)
        return 0;
    hone_data_image *img = NULL;
    int rc =
        hone_data_image_decode(data + 1, size - 1, "f.png", channels, &lim, &img, err, sizeof err);
    if (rc != HONE_OK) {
        if (img || strncmp(err, "f.png: ", 7) != 0)
            __builtin_trap();
        return 0;
    }
    /* what the header said is what came out */
    if (prc != HONE_OK || img->width != info.width || img->height != info.height ||
        img->channels != (channels ? channels : info.channels))
        __builtin_trap();
    size_t n = (size_t)img->width * (size_t)img->height * (size_t)img->channels;
    volatile uint8_t sink = img->pixels[n - 1]; /* every pixel readable */
    (void)sink;
    uint8_t small[5 * 7 * 3];
    hone_data_resize(img->pixels, img->width, img->height, img->channels, small, 5, 7);
    hone_data_image_free(img);
    return 0;
}
