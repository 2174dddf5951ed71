/* data/pack_main.c: hone-pack, an image folder or (--kitti, --coco) a detection set to a packed
 * dataset file (and --verify, which checks one and prints what it holds). A shell over data/: the
 * checks, the packing and the messages are the library's; this file parses arguments and prints.
 * With --json (the convert job: hone-worker relays it) stdout is one JSON object a line:
 * {"event":"progress",...} per progress callback, then {"event":"done",...} or
 * {"event":"error",...}; stderr keeps the text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "data.h"
#include "hone.h"

static void usage(FILE *f)
{
    fprintf(f, /* the help */
            "usage: hone-pack FOLDER OUT --size WxH [--grey | --rgb] [--threads N] [--quiet]\n"
            "                 [--json] [--kitti [--classes a,b,...] [--class NAME]... | --coco]\n"
            "       hone-pack --verify FILE\n"
            "FOLDER is <root>/<class>/<image> or <root>/train|val|test/<class>/<image>\n"
            "(PNG and JPEG). Every image is decoded, resized to WxH (area when shrinking,\n"
            "bilinear when growing) and written to OUT, a packed dataset file (data/data.h).\n"
            "Channels: 1 when every image is grey, else 3, unless --grey or --rgb.\n"
            "--threads: 0 (the default) uses every core.\n"
            "--kitti: FOLDER is a KITTI set (images/ and labels/, or train|val|test/ of\n"
            "them); its boxes are packed too, scaled with the plain resize (no letterbox),\n"
            "and each image's own size beside them (COCO's small/medium/large are in it).\n"
            "--classes: its class map, comma-separated (default: the classes found);\n"
            "--class NAME: one more name of it (names holding commas; hone-worker's way).\n"
            "--coco: FOLDER is a COCO set (annotations.json with images/, or\n"
            "annotations/instances_train*.json with train*/); its classes are its\n"
            "categories by id, iscrowd boxes packed as ignore regions of their category\n"
            "(data/data.h).\n"
            "--json: JSON lines on stdout (progress, then done or error), for hone-worker.\n");
}

typedef struct progress {
    double t0;
    int quiet, json;
} progress;

/* A JSON string of s on f: control bytes \u-escaped, UTF-8 passed through as it is. */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void on_progress(uint64_t done, uint64_t total, void *user)
{
    progress *p = user;
    if (p->json) {
        double dt = hone_now() - p->t0;
        printf("{\"event\":\"progress\",\"images_done\":%llu,\"images_total\":%llu,"
               "\"images_per_second\":%.1f,\"seconds\":%.3f}\n",
               (unsigned long long)done, (unsigned long long)total,
               dt > 0 ? (double)done / dt : 0.0, dt);
        fflush(stdout);
        return;
    }
    if (p->quiet)
        return;
    double dt = hone_now() - p->t0;
    fprintf(stderr, "\rhone-pack: %llu/%llu images (%.0f%%), %.0f images/s   ",
            (unsigned long long)done, (unsigned long long)total,
            total ? 100.0 * (double)done / (double)total : 100.0, dt > 0 ? (double)done / dt : 0);
    if (done == total)
        fputc('\n', stderr);
}

static int verify(const char *path)
{
    char err[512];
    hone_data_pack *p;
    double t0 = hone_now();
    if (hone_data_pack_open(path, 0, &p, err, sizeof err) < 0) {
        fprintf(stderr, "hone-pack: %s\n", err);
        return 1;
    }
    hone_data_pack_info in;
    hone_data_pack_get_info(p, &in);
    printf("%s: ok (checksums verified in %.2f s): %llu images %dx%dx%d (HxWxC), %d classes; "
           "train %llu, val %llu, test %llu\nclasses:",
           path, hone_now() - t0, (unsigned long long)in.n, in.height, in.width, in.channels,
           in.classes, (unsigned long long)in.split[0], (unsigned long long)in.split[1],
           (unsigned long long)in.split[2]);
    for (int i = 0; i < in.classes; i++)
        printf(" %s", hone_data_pack_class_name(p, i));
    printf("\n");
    if (in.has_boxes)
        printf("boxes: %llu\n", (unsigned long long)in.boxes);
    hone_data_pack_free(p);
    return 0;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) /* the version of every Hone program, one string */
        if (!strcmp(argv[i], "--version"))
            return printf("hone-pack %s\n", hone_version()) < 0;
    const char *pos[2] = {NULL, NULL};
    int npos = 0, w = 0, h = 0, channels = 0, threads = 0, quiet = 0, json = 0, kitti = 0, coco = 0;
    const char *classes = NULL;
    const char *one[1024]; /* --class names, after those of --classes */
    int none = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--verify") && i + 1 < argc && argc == 3)
            return verify(argv[i + 1]);
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--size") && i + 1 < argc) {
            char *end;
            w = (int)strtol(argv[++i], &end, 10);
            if (*end != 'x' || (h = (int)strtol(end + 1, &end, 10), *end) || w < 1 || h < 1 ||
                w > 65535 || h > 65535) {
                fprintf(stderr, "hone-pack: --size wants WxH, e.g. 32x32, not '%s'\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--grey") || !strcmp(a, "--gray")) {
            channels = 1;
        } else if (!strcmp(a, "--rgb")) {
            channels = 3;
        } else if (!strcmp(a, "--threads") && i + 1 < argc) {
            threads = atoi(argv[++i]);
        } else if (!strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--kitti")) {
            kitti = 1;
        } else if (!strcmp(a, "--coco")) {
            coco = 1;
        } else if (!strcmp(a, "--classes") && i + 1 < argc) {
            classes = argv[++i];
        } else if (!strcmp(a, "--class") && i + 1 < argc) {
            if (none == (int)(sizeof one / sizeof one[0])) {
                fprintf(stderr, "hone-pack: more than %d --class names\n", none);
                return 2;
            }
            one[none++] = argv[++i];
        } else if (a[0] != '-' && npos < 2) {
            pos[npos++] = a;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (npos != 2 || w == 0 || (coco && (kitti || classes || none))) {
        usage(stderr);
        return 2;
    }
    char err[1024];
    double t0 = hone_now();
    hone_data_folder *f = NULL;
    hone_data_kitti *k = NULL;
    char *cl = classes ? strdup(classes) : NULL;
    const char *names[1024];
    int nnames = 0;
    for (char *tok = cl ? strtok(cl, ",") : NULL; tok && nnames < 1024; tok = strtok(NULL, ","))
        names[nnames++] = tok;
    for (int i = 0; i < none && nnames < 1024; i++)
        names[nnames++] = one[i];
    hone_data_kitti_opts ko = {.classes = cl || none ? names : NULL, .nclasses = nnames};
    int orc = coco    ? hone_data_coco_open(pos[0], NULL, &k, err, sizeof err)
              : kitti ? hone_data_kitti_open(pos[0], &ko, &k, err, sizeof err)
                      : hone_data_folder_open(pos[0], NULL, &f, err, sizeof err);
    free(cl);
    if (orc < 0) {
        fprintf(stderr, "hone-pack: %s\n", err);
        if (json) {
            printf("{\"event\":\"error\",\"error\":");
            json_str(stdout, err);
            printf("}\n");
        }
        return 1;
    }
    hone_data_folder_stats st = {0};
    if (k) { /* the fields this tool prints */
        hone_data_kitti_stats ks;
        hone_data_kitti_get_stats(k, &ks);
        st.images = ks.images;
        memcpy(st.split_images, ks.split_images, sizeof st.split_images);
        st.classes = ks.classes;
        st.png = ks.png;
        st.jpeg = ks.jpeg;
        st.colour = ks.colour;
        st.skipped = ks.skipped;
    } else {
        hone_data_folder_get_stats(f, &st);
    }
    if (!quiet)
        fprintf(stderr,
                "hone-pack: %s: %zu images (train %zu, val %zu, test %zu), %d classes, %zu PNG, "
                "%zu JPEG, %zu skipped; checked in %.2f s\n",
                pos[0], st.images, st.split_images[0], st.split_images[1], st.split_images[2],
                st.classes, st.png, st.jpeg, st.skipped, hone_now() - t0);
    progress pr = {hone_now(), quiet || json, json};
    hone_data_pack_opts o = {.width = w,
                             .height = h,
                             .channels = channels,
                             .threads = threads,
                             .progress = on_progress,
                             .user = &pr};
    int rc = k ? hone_data_kitti_pack(k, pos[1], &o, err, sizeof err)
               : hone_data_folder_pack(f, pos[1], &o, err, sizeof err);
    hone_data_kitti_free(k);
    double dt = hone_now() - pr.t0;
    if (rc < 0) {
        fprintf(stderr, "\nhone-pack: %s\n", err);
        if (json) {
            printf("{\"event\":\"error\",\"error\":");
            json_str(stdout, err);
            printf("}\n");
        }
        hone_data_folder_free(f);
        return 1;
    }
    int nt = threads > 0 ? threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    int oc = channels ? channels : st.colour ? 3 : 1;
    if (json) {
        printf("{\"event\":\"done\",\"path\":");
        json_str(stdout, pos[1]);
        printf(",\"images\":%zu,\"height\":%d,\"width\":%d,\"channels\":%d,\"classes\":%d,"
               "\"seconds\":%.3f,\"images_per_second\":%.1f,\"threads\":%d}\n",
               st.images, h, w, oc, st.classes, dt, dt > 0 ? (double)st.images / dt : 0.0, nt);
        hone_data_folder_free(f);
        return 0;
    }
    printf("hone-pack: wrote %s: %zu images %dx%dx%d, %d classes in %.2f s (%.0f images/s on %d "
           "threads)\n",
           pos[1], st.images, h, w, oc, st.classes, dt, dt > 0 ? (double)st.images / dt : 0, nt);
    hone_data_folder_free(f);
    return 0;
}
