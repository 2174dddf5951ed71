/* spec/schema_main.c: hone-spec-schema, which writes the JSON Schema of the spec key table
 * (schemas/spec.schema.json) or checks that a committed copy is still what the table says.
 * Exit 0 ok, 1 out of date (or a write failed), 2 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h"
#include "hone.h"

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0, r;
    do {
        if (n + 4096 + 1 > cap) {
            cap = cap ? 2 * cap : 65536;
            buf = hone_xrealloc(buf, cap);
        }
        r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
    } while (r > 0);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) /* the version of every Hone program, one string */
        if (!strcmp(argv[i], "--version"))
            return printf("hone-spec-schema %s\n", hone_version()) < 0;
    char *text = hone_spec_json_schema_text();
    int rc = 0;
    if (argc == 3 && !strcmp(argv[1], "--check")) {
        char *have = read_all(argv[2]);
        if (!have || strcmp(have, text) != 0) {
            fprintf(stderr,
                    "hone-spec-schema: %s is not what spec/spec.c says; regenerate it with "
                    "`cmake --build <build dir> --target spec_schema`\n",
                    argv[2]);
            rc = 1;
        }
        free(have);
    } else if (argc == 3 && !strcmp(argv[1], "-o")) {
        FILE *f = fopen(argv[2], "wb");
        if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
            perror(argv[2]);
            rc = 1;
        }
    } else if (argc == 1) {
        fputs(text, stdout);
    } else {
        fputs("usage: hone-spec-schema [-o FILE | --check FILE]\n", stderr);
        rc = 2;
    }
    free(text);
    return rc;
}
