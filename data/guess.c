/* A dataset folder's format from its shape (guess.h): one listing of the folder, and of a few of
 * its subfolders, matched against each format's layout; the format's own check (idx.c, folder.c,
 * kitti_folder.c, coco) then reads the files. Never opens a file; bounded listings. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guess.h"
#include "hone.h"

#define LOOK_MAX 4096 /* entries looked at in one folder */
#define LOOK_BUDGET                                                                                \
    20000 /* entries looked at in all, below and in the folder: a guess stays cheap */

typedef struct shape {
    int files, dirs, idx, json, images;
    int has_images, has_labels, has_annotations, has_annotations_json, has_instances;
    int splits;      /* train/ val/ test/ */
    int split_kitti; /* of them, holding images/ and labels/ */
    int split_class; /* of them, holding class folders of images */
    int class_dirs;  /* subfolders (not a layout name) that hold images */
    char first_file[64], first_dir[64];
} shape;

static int is_image(const char *n)
{
    const char *dot = strrchr(n, '.');
    return dot &&
           (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg"));
}

static int is_idx(const char *n)
{
    return strstr(n, "-idx1-ubyte") || strstr(n, "-idx3-ubyte");
}

/* 1 when fd's entry name is a folder (links followed, as the checks do). */
static int sub_is_dir(int fd, const char *name)
{
    struct stat st;
    return fstatat(fd, name, &st, 0) == 0 && S_ISDIR(st.st_mode);
}

/* Lists the folder name under fd: counts its images (files; without want_sub, up to the first)
 * and, when want_sub, the subfolders
 * that hold images directly (class folders) into *classes; sets *kitti when it holds images/ and
 * labels/. */
static int look(int fd, const char *name, int want_sub, int *images, int *classes, int *kitti,
                int *budget)
{
    int dfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return HONE_EIO;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return HONE_EIO;
    }
    struct dirent *e;
    int seen = 0, im = 0, lb = 0;
    *images = 0;
    if (classes)
        *classes = 0;
    while (*budget > 0 && (e = readdir(d)) && seen++ < LOOK_MAX) {
        --*budget;
        if (e->d_name[0] == '.')
            continue;
        if (!sub_is_dir(dfd, e->d_name)) {
            *images += is_image(e->d_name);
            if (!want_sub && *images)
                break; /* a folder of images: all a class folder's look needs to know */
            continue;
        }
        im |= !strcmp(e->d_name, "images");
        lb |= !strcmp(e->d_name, "labels");
        int n = 0;
        if (want_sub && classes && *classes < 8 &&
            !look(dfd, e->d_name, 0, &n, NULL, NULL, budget) && n)
            ++*classes;
    }
    closedir(d);
    if (kitti)
        *kitti = im && lb;
    return HONE_OK;
}

static int split_name(const char *n)
{
    return !strcmp(n, "train") || !strcmp(n, "val") || !strcmp(n, "test");
}

const char *hone_data_format_type(const char *format)
{
    return format && (!strcmp(format, "kitti") || !strcmp(format, "coco")) ? "object_detection"
                                                                           : "image_classification";
}

int hone_data_guess_format(const char *dir, const char **format, char *seen, size_t seenlen)
{
    shape s;
    memset(&s, 0, sizeof s);
    *format = NULL;
    seen[0] = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        snprintf(seen, seenlen, "%s: %s", dir, strerror(err));
        return err == ENOENT ? HONE_ENOENT : HONE_EIO;
    }
    struct dirent *e;
    int n = 0, budget = LOOK_BUDGET;
    while (budget > 0 && (e = readdir(d)) && n++ < LOOK_MAX) {
        const char *nm = e->d_name;
        budget--;
        if (nm[0] == '.')
            continue;
        if (!sub_is_dir(fd, nm)) {
            s.files++;
            if (!s.first_file[0])
                snprintf(s.first_file, sizeof s.first_file, "%.60s", nm);
            s.idx += is_idx(nm) != 0;
            s.images += is_image(nm);
            if (strlen(nm) > 5 && !strcasecmp(nm + strlen(nm) - 5, ".json"))
                s.json++;
            s.has_annotations_json |= !strcmp(nm, "annotations.json");
            continue;
        }
        s.dirs++;
        if (!s.first_dir[0])
            snprintf(s.first_dir, sizeof s.first_dir, "%.60s", nm);
        int imgs = 0, cls = 0, kit = 0;
        if (!strcmp(nm, "images")) {
            s.has_images = 1;
        } else if (!strcmp(nm, "labels")) {
            s.has_labels = 1;
        } else if (!strcmp(nm, "annotations")) {
            s.has_annotations = 1;
            /* instances_*.json inside: COCO's own layout */
            int afd = openat(fd, nm, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            DIR *ad = afd >= 0 ? fdopendir(afd) : NULL;
            struct dirent *ae;
            int k = 0;
            while (ad && budget-- > 0 && (ae = readdir(ad)) && k++ < LOOK_MAX)
                s.has_instances |= !strncmp(ae->d_name, "instances_", 10) &&
                                   strlen(ae->d_name) > 15 &&
                                   !strcmp(ae->d_name + strlen(ae->d_name) - 5, ".json");
            if (ad)
                closedir(ad);
            else if (afd >= 0)
                close(afd);
        } else if (split_name(nm)) {
            s.splits++;
            if (!look(fd, nm, 1, &imgs, &cls, &kit, &budget)) {
                s.split_kitti += kit;
                s.split_class += cls > 0;
            }
        } else if (!look(fd, nm, 0, &imgs, NULL, NULL, &budget) && imgs) {
            s.class_dirs++;
        }
    }
    closedir(d);

    /* each format's rule; more than one fitting is ambiguous */
    const char *fits[5];
    int nf = 0;
    if (s.idx)
        fits[nf++] = "idx";
    if ((s.has_images && s.has_labels) || (s.split_kitti && s.split_kitti == s.splits))
        fits[nf++] = "kitti";
    /* COCO (helper C's format): one annotations JSON beside images/, or annotations/ holding
     * instances_*.json (COCO's own download layout) */
    if ((s.has_images && !s.has_labels && (s.has_annotations_json || s.json == 1)) ||
        s.has_instances)
        fits[nf++] = "coco";
    /* (COCO's image folders, train2017/ ..., beside annotations/ are not classes) */
    if ((s.class_dirs >= 1 && !s.has_images && !s.has_labels && !s.splits && !s.has_instances) ||
        (s.split_class && s.split_class == s.splits && !s.split_kitti))
        fits[nf++] = "image_folder";
    if (nf == 1) {
        *format = fits[0];
        return HONE_OK;
    }
    int o = 0;
    if (nf > 1) {
        o = snprintf(seen, seenlen, "the folder fits several formats (");
        for (int i = 0; i < nf && o >= 0 && (size_t)o < seenlen; i++)
            o += snprintf(seen + o, seenlen - (size_t)o, "%s%s", i ? ", " : "", fits[i]);
        if (o >= 0 && (size_t)o < seenlen)
            o += snprintf(seen + o, seenlen - (size_t)o, "): ");
    }
    if (o < 0 || (size_t)o >= seenlen)
        return HONE_EINVAL;
    char fpart[96] = "", dpart[96] = "";
    if (s.files)
        snprintf(fpart, sizeof fpart, " (%s%s)", s.first_file, s.files > 1 ? ", ..." : "");
    if (s.dirs)
        snprintf(dpart, sizeof dpart, " (%s/%s)", s.first_dir, s.dirs > 1 ? ", ..." : "");
    snprintf(seen + o, seenlen - (size_t)o,
             "seen %d file(s)%s and %d folder(s)%s; a dataset is IDX files "
             "(train-images-idx3-ubyte ...), class folders of images (<class>/<image>, or "
             "train/ and val/ of that form), images/ + labels/ (KITTI) or annotations.json + "
             "images/ (COCO)",
             s.files, fpart, s.dirs, dpart);
    return HONE_EINVAL;
}
