/* tests/train/train_files.h: files for the trainer tests that compare two runs' outputs: a whole
 * file read into memory, and an output folder removed with whatever the trainer wrote in it
 * (checkpoint, model, spec, metrics, model.json ...), so no test leaves folders in /tmp. */
#ifndef HONE_TESTS_TRAIN_FILES_H
#define HONE_TESTS_TRAIN_FILES_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The file's bytes in *out (caller frees) and their count, or -1. */
static inline long read_file(const char *path, unsigned char **out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = malloc(n > 0 ? (size_t)n : 1);
    if (fread(*out, 1, (size_t)n, f) != (size_t)n)
        n = -1;
    fclose(f);
    return n;
}

/* Removes dir and the files in it (the trainer writes no subfolders). */
static inline void rm_out(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[1024];
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.' && snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) < (int)sizeof(p))
            unlink(p);
    if (d)
        closedir(d);
    rmdir(dir);
}

#endif
