/* tests/data/data_tool.c: a small driver of data/ for the Python tests (test_data_files.py),
 * which compare what data/ decodes and packs with what Pillow and the IDX files hold.
 *   data_tool decode CHANNELS OUTDIR < paths   one line per path: "i ok W H C" (pixels written
 *                                              to OUTDIR/i.raw) or "i err CODE MESSAGE"
 *   data_tool probe < paths                    "i ok FORMAT W H C" or "i err CODE MESSAGE"
 *   data_tool resize W H OUTDIR < paths        decode (native channels), resize to W x H, and
 *                                              write OUTDIR/i.raw as decode does */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"

static int cmd_decode(int channels, int rw, int rh, const char *outdir)
{
    char path[4096], err[512], out[4200];
    for (int i = 0; fgets(path, sizeof path, stdin); i++) {
        path[strcspn(path, "\n")] = 0;
        hone_data_image *img;
        int rc = hone_data_image_read_file(path, channels, NULL, &img, err, sizeof err);
        if (rc < 0) {
            printf("%d err %d %s\n", i, rc, err);
            continue;
        }
        if (rw > 0) {
            hone_data_image *r = hone_xcalloc(1, sizeof(*r));
            *r = (hone_data_image){rw, rh, img->channels, hone_xmalloc((size_t)rw * rh * 3)};
            hone_data_resize(img->pixels, img->width, img->height, img->channels, r->pixels, rw,
                             rh);
            hone_data_image_free(img);
            img = r;
        }
        snprintf(out, sizeof out, "%s/%d.raw", outdir, i);
        FILE *f = fopen(out, "wb");
        size_t n = (size_t)img->width * img->height * img->channels;
        if (!f || fwrite(img->pixels, 1, n, f) != n) {
            perror(out);
            return 1;
        }
        fclose(f);
        printf("%d ok %d %d %d\n", i, img->width, img->height, img->channels);
        hone_data_image_free(img);
    }
    return 0;
}

static int cmd_probe(void)
{
    char path[4096], err[512];
    for (int i = 0; fgets(path, sizeof path, stdin); i++) {
        path[strcspn(path, "\n")] = 0;
        hone_data_image_info in;
        int rc = hone_data_image_probe_file(path, NULL, &in, err, sizeof err);
        if (rc < 0)
            printf("%d err %d %s\n", i, rc, err);
        else
            printf("%d ok %s %d %d %d\n", i, hone_data_format_name(in.format), in.width, in.height,
                   in.channels);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "decode"))
        return cmd_decode(atoi(argv[2]), 0, 0, argv[3]);
    if (argc == 5 && !strcmp(argv[1], "resize"))
        return cmd_decode(0, atoi(argv[2]), atoi(argv[3]), argv[4]);
    if (argc == 2 && !strcmp(argv[1], "probe"))
        return cmd_probe();
    fprintf(stderr, "usage: data_tool decode CHANNELS OUTDIR | probe | resize W H OUTDIR"
                    " (paths on stdin)\n");
    return 2;
}
