/* libFuzzer target for the hone-train spec loader (train/spec_load.c): YAML documents and dotted
 * "key=value" overrides. A spec that loads and validates must write out as YAML that loads back
 * and writes out the same again (the worker and controller depend on that round trip). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train.h"

static char *spec_text(const hone_train_spec *s, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    if (hone_train_spec_write(s, f) != HONE_OK)
        __builtin_trap();
    fclose(f);
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hone_train_spec s, s2;
    char err[512];
    hone_train_spec_defaults(&s);
    if (size > 0 && data[0] == '=') { /* override mode: one assignment per line */
        char *text = malloc(size);
        memcpy(text, data + 1, size - 1);
        text[size - 1] = '\0';
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
            hone_train_spec_set(&s, line, err, sizeof err);
        free(text);
    } else if (hone_train_spec_load_string(&s, (const char *)data, size, err, sizeof err) !=
               HONE_OK) {
        return 0;
    }
    if (hone_train_spec_validate(&s, err, sizeof err) != HONE_OK)
        return 0;
    size_t n1, n2;
    char *t1 = spec_text(&s, &n1);
    hone_train_spec_defaults(&s2);
    if (hone_train_spec_load_string(&s2, t1, n1, err, sizeof err) != HONE_OK) {
        fprintf(stderr, "written spec does not load back: %s\n%s\n", err, t1);
        __builtin_trap();
    }
    char *t2 = spec_text(&s2, &n2);
    if (n1 != n2 || memcmp(t1, t2, n1) != 0) {
        fprintf(stderr, "spec round trip differs:\n%s\n---\n%s\n", t1, t2);
        __builtin_trap();
    }
    free(t1);
    free(t2);
    return 0;
}
