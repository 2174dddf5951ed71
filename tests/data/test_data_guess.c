/* test_data_guess: data/guess.c on folders of each shape (listings only: the files are empty):
 * IDX files, class folders, splits of class folders, KITTI flat and split, COCO (one JSON beside
 * images/, and annotations/instances_*.json), and the refusals: nothing known, an image-less
 * folder, and a folder of two shapes at once (the message names both). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "guess.h"
#include "hone.h"

static char base[] = "/tmp/hone-guess-XXXXXX";
static int n_case;

/* Makes a fresh folder with the given entries (a name ending in '/' a folder, else an empty file;
 * parents made as needed) and returns its path (static). */
static const char *make(const char *const *entries)
{
    static char dir[512];
    snprintf(dir, sizeof dir, "%s/c%d", base, n_case++);
    REQUIRE(mkdir(dir, 0755) == 0);
    for (; *entries; entries++) {
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, *entries);
        for (char *s = p + strlen(dir) + 1; (s = strchr(s, '/')); s++) {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
        size_t n = strlen(p);
        if (p[n - 1] == '/')
            continue;
        FILE *f = fopen(p, "w");
        REQUIRE(f);
        fclose(f);
    }
    return dir;
}

static void want(const char *const *entries, const char *format)
{
    const char *got = NULL;
    char seen[400];
    int rc = hone_data_guess_format(make(entries), &got, seen, sizeof seen);
    if (rc != HONE_OK || !got || strcmp(got, format)) {
        fprintf(stderr, "case %d: want %s, got rc %d %s (%s)\n", n_case - 1, format, rc,
                got ? got : "-", seen);
        failures++;
    }
}

static void refused(const char *const *entries, const char *a, const char *b)
{
    const char *got = NULL;
    char seen[400];
    int rc = hone_data_guess_format(make(entries), &got, seen, sizeof seen);
    CHECK(rc == HONE_EINVAL && !got);
    if (!strstr(seen, a) || (b && !strstr(seen, b))) {
        fprintf(stderr, "case %d: want '%s' and '%s' in: %s\n", n_case - 1, a, b ? b : "", seen);
        failures++;
    }
}

int main(void)
{
    REQUIRE(mkdtemp(base));
    want((const char *const[]){"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                               "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", NULL},
         "idx");
    want((const char *const[]){"cat/1.png", "dog/2.JPG", "readme.txt", NULL}, "image_folder");
    want((const char *const[]){"train/cat/1.png", "train/dog/1.png", "val/cat/2.png",
                               "val/dog/2.jpeg", NULL},
         "image_folder");
    want((const char *const[]){"images/1.png", "labels/1.txt", NULL}, "kitti");
    want((const char *const[]){"train/images/1.png", "train/labels/1.txt", "val/images/2.png",
                               "val/labels/2.txt", NULL},
         "kitti");
    want((const char *const[]){"annotations.json", "images/1.jpg", NULL}, "coco");
    want((const char *const[]){"annotations/instances_train2017.json", "train2017/1.jpg", NULL},
         "coco");
    refused((const char *const[]){"notes.txt", "docs/a.txt", NULL}, "notes.txt", "docs/");
    refused((const char *const[]){NULL}, "seen 0 file(s)", "0 folder(s)");
    refused((const char *const[]){"train-images-idx3-ubyte", "cat/1.png", NULL}, "idx",
            "image_folder");
    const char *f = NULL;
    char seen[200];
    CHECK(hone_data_guess_format("/nonexistent/hone-guess", &f, seen, sizeof seen) == HONE_ENOENT);
    CHECK(!strcmp(hone_data_format_type("kitti"), "object_detection"));
    CHECK(!strcmp(hone_data_format_type("coco"), "object_detection"));
    CHECK(!strcmp(hone_data_format_type("idx"), "image_classification"));
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    CHECK(system(cmd) == 0);
    if (!failures)
        printf("ok\n");
    return failures != 0;
}
